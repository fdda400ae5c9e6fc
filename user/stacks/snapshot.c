// SPDX-License-Identifier: GPL-2.0
/* A live process read from outside (snapshot.h). */
#include "stacks/snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/hashmap.h"

#define SCAN_CHUNK (1u << 20)

int snapshot__read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	pid_t pid = *(const pid_t *)ctx;
	struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
	ssize_t n;

	if (!len)
		return 0;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* ---- the pause ---- */

static bool stopped_already(const struct pause *p, pid_t tid)
{
	for (uint32_t i = 0; i < p->nr; i++)
		if (p->tids[i] == tid)
			return true;
	return false;
}

/* Seize and interrupt one thread, and wait for it to stop. 0, -ESRCH (gone), -errno. */
static int stop_thread(struct pause *p, pid_t tid)
{
	int status;

	if (p->nr == p->cap) {
		uint32_t cap = p->cap ? p->cap * 2 : 16;
		pid_t *n = realloc(p->tids, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->tids = n;
		p->cap = cap;
	}
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL))
		return -errno;
	p->tids[p->nr++] = tid;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL))
		return errno == ESRCH ? 0 : -errno;
	while (waitpid(tid, &status, __WALL) < 0)
		if (errno != EINTR)
			return errno == ECHILD ? 0 : -errno; /* exited meanwhile */
	return 0;
}

int pause__stop(pid_t pid, struct pause *p, char *err, size_t errlen)
{
	char path[64];
	bool grew = true;

	memset(p, 0, sizeof(*p));
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	/* threads may start while we stop the others: again until no new one shows up */
	for (int round = 0; grew && round < 100; round++) {
		DIR *d = opendir(path);
		struct dirent *de;

		if (!d) {
			int e = -errno;
			snprintf(err, errlen, "cannot list the threads of pid %d (%s): %s",
				 (int)pid, path, strerror(-e));
			pause__resume(p);
			return e;
		}
		grew = false;
		while ((de = readdir(d))) {
			pid_t tid = (pid_t)atoi(de->d_name);
			int e;

			if (tid <= 0 || stopped_already(p, tid))
				continue;
			e = stop_thread(p, tid);
			if (e == -ESRCH)
				continue; /* the thread exited */
			if (e) {
				snprintf(err, errlen, "cannot stop thread %d of pid %d: %s%s",
					 (int)tid, (int)pid, strerror(-e),
					 e == -EPERM ? " (ptrace access: same user and "
						       "kernel.yama.ptrace_scope 0, or "
						       "CAP_SYS_PTRACE)"
						     : "");
				closedir(d);
				pause__resume(p);
				return e;
			}
			grew = true;
		}
		closedir(d);
	}
	return 0;
}

void pause__resume(struct pause *p)
{
	for (uint32_t i = 0; i < p->nr; i++)
		ptrace(PTRACE_DETACH, p->tids[i], NULL, NULL);
	free(p->tids);
	memset(p, 0, sizeof(*p));
}

/* ---- the image ---- */

int mem_image__read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct mem_image *img = ctx;
	uint32_t lo = 0, hi = img->nr;

	while (lo < hi) { /* the last region starting at or before addr */
		uint32_t mid = lo + (hi - lo) / 2;

		if (img->regions[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo) {
		const struct mem_region *r = &img->regions[lo - 1];

		if (addr - r->start < r->len && len <= r->len - (addr - r->start)) {
			memcpy(buf, r->data + (addr - r->start), len);
			return 0;
		}
	}
	return snapshot__read(&img->pid, addr, buf, len);
}

void mem_image__free(struct mem_image *img)
{
	for (uint32_t i = 0; i < img->nr; i++)
		free(img->regions[i].data);
	free(img->regions);
	img->regions = NULL;
	img->nr = img->cap = 0;
}

static int keep_region(struct mem_image *img, uint64_t start, uint64_t len, uint8_t **data)
{
	*data = NULL;
	if (img->kept + len > img->budget) {
		img->not_kept += len;
		return 0;
	}
	if (img->nr == img->cap) {
		uint32_t cap = img->cap ? img->cap * 2 : 32;
		struct mem_region *n = realloc(img->regions, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		img->regions = n;
		img->cap = cap;
	}
	*data = malloc(len ? len : 1);
	if (!*data)
		return -ENOMEM;
	img->regions[img->nr++] = (struct mem_region){start, len, *data};
	img->kept += len;
	return 0;
}

/* ---- the scan ---- */

struct cand_list {
	struct candidate *v;
	uint32_t nr, cap;
};

static int add_candidate(struct cand_list *l, int32_t slot, uint64_t at, uint64_t data,
			 bool on_stack)
{
	if (l->nr == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 256;
		struct candidate *n = realloc(l->v, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		l->v = n;
		l->cap = cap;
	}
	l->v[l->nr++] = (struct candidate){slot, at, data, on_stack};
	return 0;
}

/* Scan (and copy) [start, end) of pid in chunks. -EFAULT: unreadable. */
static int scan_range(pid_t pid, uint64_t start, uint64_t end, bool stack,
		      const struct vtable_index *ix, uint64_t *buf, struct mem_image *img,
		      struct cand_list *l, struct scan_stats *st)
{
	uint64_t prev = 0;
	uint8_t *keep;
	int r = keep_region(img, start, end - start, &keep);

	if (r)
		return r;
	for (uint64_t at = start; at < end; at += SCAN_CHUNK) {
		size_t len = end - at < SCAN_CHUNK ? (size_t)(end - at) : SCAN_CHUNK;
		uint64_t *words = keep ? (uint64_t *)(void *)(keep + (at - start)) : buf;

		if (snapshot__read(&pid, at, words, len)) {
			if (keep) { /* drop the partial copy: reads there go live */
				img->kept -= end - start;
				free(img->regions[--img->nr].data);
			}
			return -EFAULT;
		}
		st->bytes += len;
		for (size_t i = 0; i < len / 8; i++) {
			uint64_t w = words[i];
			int32_t slot;

			if (w < ix->addrs[0] || w > ix->addrs[ix->nr - 1])
				continue;
			slot = vtable_index__slot(ix, w);
			if (slot < 0)
				continue;
			st->candidates++;
			if (add_candidate(l, slot, at + 8 * i, i ? words[i - 1] : prev, stack))
				return -ENOMEM;
		}
		prev = words[len / 8 - 1];
	}
	return 0;
}

int snapshot__copy(pid_t pid, const struct vtable_index *ix, struct mem_image *img,
		   struct candidate **cands, uint32_t *nr, struct scan_stats *st, char *err,
		   size_t errlen)
{
	char path[64], line[PATH_MAX + 128], perms[8];
	unsigned long start, end, prev_end = 0;
	bool prev_guard = false;
	struct cand_list l = {0};
	uint64_t *buf;
	int r = 0;
	FILE *maps;

	memset(st, 0, sizeof(*st));
	*cands = NULL;
	*nr = 0;
	if (!ix->nr)
		return 0; /* no vtable to look for */
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "re");
	if (!maps) {
		r = -errno;
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(-r));
		return r;
	}
	buf = malloc(SCAN_CHUNK);
	while (buf && fgets(line, sizeof(line), maps)) {
		bool guard_below, stack;

		if (sscanf(line, "%lx-%lx %7s", &start, &end, perms) < 3 || end <= start)
			continue;
		/* a thread's stack: [stack], or memory right above a no-access guard page
		 * (how glibc and Rust lay out thread and signal stacks; malloc's arenas
		 * have their reserve above, not below) */
		guard_below = prev_guard && prev_end == start;
		prev_guard = strncmp(perms, "---p", 4) == 0;
		prev_end = end;
		stack = guard_below || strstr(line, "[stack]");
		/* writable, private: heap, anonymous memory, thread stacks, .data/.bss */
		if (perms[1] != 'w' || perms[3] != 'p' || strstr(line, "[vvar") ||
		    strstr(line, "[vsyscall]"))
			continue;
		st->mappings++;
		r = scan_range(pid, start, end, stack, ix, buf, img, &l, st);
		if (r == -ENOMEM)
			break;
		if (r) {
			st->unreadable++; /* unmapped since, or not readable: counted */
			r = 0;
		}
	}
	fclose(maps);
	free(buf);
	if (!buf || r == -ENOMEM) {
		free(l.v);
		snprintf(err, errlen, "out of memory copying pid %d's memory", (int)pid);
		return -ENOMEM;
	}
	*cands = l.v;
	*nr = l.nr;
	return 0;
}

/* A candidate's data pointer: a live future of that type? */
static bool live_root(const struct model *m, int32_t future, uint64_t addr, stacks_read_fn read,
		      void *ctx)
{
	struct vtable_index none = {0};
	struct task_stack one;

	if (!addr || addr & 7 || future < 0 || (uint32_t)future >= m->nr_futures)
		return false;
	if (!m->futures[future].has_state) {
		uint8_t b;
		return !read(ctx, addr, &b, 1);
	}
	stacks__decode(m, &none, future, addr, read, ctx, &one);
	return one.nr && one.frames[0].state != FRAME_BAD_STATE &&
	       one.frames[0].state != FRAME_UNREADABLE;
}

static bool read_u64(stacks_read_fn read, void *ctx, uint64_t addr, uint64_t *v)
{
	return !read(ctx, addr, v, sizeof(*v));
}

/* async-task: where the future lies behind the header, from the vtable's layout_info
 * (the crate keeps it there for debuggers); 0 if it cannot be read. */
static uint64_t layout_offset_f(const struct model *m, uint64_t vtable, stacks_read_fn read,
				void *ctx)
{
	const struct runtime_layout *l = &m->runtimes[TASK_RT_ASYNC_TASK];
	uint64_t info, off;

	if (!read_u64(read, ctx, vtable + l->layout_info, &info) || !info || info & 7 ||
	    !read_u64(read, ctx, info + l->layout_offset_f, &off) || off < 8 || off > (1u << 20))
		return 0;
	return off;
}

/* A runtime candidate: its header, state word and future; false if not a live task. */
static bool runtime_root(const struct model *m, const struct vtable_index *ix,
			 const struct candidate *c, uint64_t *offsets, stacks_read_fn read,
			 void *ctx, struct task_root *out, struct scan_stats *st)
{
	const struct task_type *t = &m->task_types[ix->types[c->slot]];
	const struct runtime_layout *l = &m->runtimes[t->runtime];
	uint64_t off = t->future_offset;

	*out = (struct task_root){.runtime = t->runtime, .future = t->future};
	if (c->on_stack) { /* tasks live on the heap: this is a copy being built */
		st->on_stack++;
		return false;
	}
	if (c->at < l->header_vtable)
		return false;
	out->header = c->at - l->header_vtable;
	if (!read_u64(read, ctx, out->header + l->header_state, &out->state) ||
	    !task_state__decode(t->runtime, out->state, &out->st))
		return false;
	if (t->runtime == TASK_RT_ASYNC_TASK) {
		if (!offsets[c->slot])
			offsets[c->slot] = layout_offset_f(m, ix->addrs[c->slot], read, ctx);
		off = offsets[c->slot];
	}
	if (off == FUTURE_NO_OFFSET || !off) {
		if (l->assumed) /* no DWARF: the task by its type only */
			return true;
		st->bad_layout++;
		return false;
	}
	if (out->st.complete || (t->runtime == TASK_RT_ASYNC_TASK && out->st.closed))
		return true; /* its future is gone: the task is listed without a stack */
	out->addr = out->header + off;
	if (t->boxed && !read_u64(read, ctx, out->addr, &out->addr))
		return false;
	return live_root(m, t->future, out->addr, read, ctx);
}

int snapshot__roots(const struct model *m, const struct vtable_index *ix,
		    const struct candidate *cands, uint32_t nr_cands, stacks_read_fn read,
		    void *ctx, struct task_root **roots, uint32_t *nr, struct scan_stats *st)
{
	struct u64_map seen;
	struct task_root *out = calloc(nr_cands ? nr_cands : 1, sizeof(*out));
	uint64_t *offsets = calloc(ix->nr ? ix->nr : 1, sizeof(*offsets));
	uint32_t n = 0;

	*roots = NULL;
	*nr = 0;
	if (!out || !offsets) {
		free(out);
		free(offsets);
		return -ENOMEM;
	}
	u64_map__init(&seen);
	for (uint32_t i = 0; i < nr_cands; i++) {
		const struct candidate *c = &cands[i];
		struct task_root r;
		bool ok;

		if (ix->types[c->slot] >= 0) {
			ok = runtime_root(m, ix, c, offsets, read, ctx, &r, st);
		} else {
			r = (struct task_root){.runtime = TASK_RT_DYN,
					       .future = ix->futures[c->slot],
					       .addr = c->data};
			ok = live_root(m, r.future, r.addr, read, ctx);
		}
		if (!ok) {
			st->rejected++;
			continue;
		}
		uint64_t key = r.header ? r.header : r.addr;
		if (u64_map__get(&seen, key, NULL)) {
			st->duplicates++;
			continue;
		}
		if (u64_map__set(&seen, key, 1)) {
			u64_map__free(&seen);
			free(out);
			free(offsets);
			return -ENOMEM;
		}
		out[n++] = r;
	}
	u64_map__free(&seen);
	free(offsets);
	*roots = out;
	*nr = n;
	return 0;
}
