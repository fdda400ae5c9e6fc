// SPDX-License-Identifier: GPL-2.0
/* The async projection of unwound stacks (profile_project.h, docs/profile.md). */
#include "profile/profile_project.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/crate.h"
#include "lib/hashmap.h"
#include "lib/strpool.h"
#include "lib/text.h"

#define FRAME_CHUNK 1024u
#define KEY_MASK    (~0ull >> 1) /* u64_map keys must not be UINT64_MAX */

/* What one unwound frame is, decided once per uframe (they are unique per pc+level). */
struct uinfo {
	const struct pframe *fn;     /* as an ordinary function */
	const struct pframe *future; /* as a polled future, or NULL */
	bool runtime;		     /* the future is an async runtime's */
};

struct projector {
	const struct model *m;
	bool keep_samples;
	struct strpool pool;
	struct pframe **chunks;
	uint32_t nr_chunks, used_in_last;
	struct pframe **frames; /* every interned frame, for lookups by hash */
	size_t nr_frames, cap_frames;
	struct u64_map frame_index;	     /* hash (probed) -> frames[] index */
	const struct pframe **future_frames; /* by future index, lazily */
	const struct pframe **poll_frames;   /* by poll index, for polls without a future */
	struct u64_map ucache;		     /* uframe pointer -> uinfos[] index */
	struct uinfo *uinfos;
	size_t nr_uinfos, cap_uinfos;
	uint32_t *by_linkage, nr_by_linkage; /* poll indices sorted by linkage name */
	uint32_t *by_name, nr_by_name;	     /* ... by demangled name */
	struct pstack *stacks;
	size_t nr_stacks, cap_stacks;
	struct u64_map stack_index; /* hash (probed) -> stacks[] index */
	struct psample *samples;
	size_t nr_samples, cap_samples;
	const struct pframe *runtime, *not_in_poll, *unknown, *cut_short;
	const struct pframe *tmp[UNWIND_MAX_LOGICAL + 2];
	struct uinfo info[UNWIND_MAX_LOGICAL]; /* copies: uinfos[] moves when it grows */
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x100000001b3ull;
	return h ^ (h >> 29);
}

static const struct model *sort_model; /* qsort has no context argument in C11 */

static int cmp_linkage(const void *a, const void *b)
{
	return strcmp(sort_model->polls[*(const uint32_t *)a].linkage_name,
		      sort_model->polls[*(const uint32_t *)b].linkage_name);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(sort_model->polls[*(const uint32_t *)a].name,
		      sort_model->polls[*(const uint32_t *)b].name);
}

static int32_t find_poll(const struct model *m, const uint32_t *idx, uint32_t n, const char *s,
			 bool linkage)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const char *k = linkage ? m->polls[idx[mid]].linkage_name : m->polls[idx[mid]].name;
		int c = strcmp(s, k);

		if (!c)
			return (int32_t)idx[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

static struct pframe *frame_new(struct projector *p)
{
	if (!p->nr_chunks || p->used_in_last == FRAME_CHUNK) {
		struct pframe **c = realloc(p->chunks, (p->nr_chunks + 1) * sizeof(*c));

		if (!c)
			return NULL;
		p->chunks = c;
		if (!(c[p->nr_chunks] = calloc(FRAME_CHUNK, sizeof(struct pframe))))
			return NULL;
		p->nr_chunks++;
		p->used_in_last = 0;
	}
	return &p->chunks[p->nr_chunks - 1][p->used_in_last++];
}

static bool same_frame(const struct pframe *a, const struct pframe *b)
{
	return a->kind == b->kind && a->origin == b->origin && a->inlined == b->inlined &&
	       a->name == b->name && a->module == b->module;
}

/* The interned frame equal to f (names already interned in p->pool), or a new one. */
static const struct pframe *intern_frame(struct projector *p, const struct pframe *f)
{
	uint64_t h = 0xcbf29ce484222325ull, v;
	struct pframe *n;

	h = mix(h, f->kind);
	h = mix(h, f->origin);
	h = mix(h, f->inlined);
	h = mix(h, (uintptr_t)f->name);
	h = mix(h, (uintptr_t)f->module);
	for (h &= KEY_MASK;; h = (h * 31 + 1) & KEY_MASK) {
		if (!u64_map__get(&p->frame_index, h, &v))
			break;
		if (same_frame(p->frames[v], f))
			return p->frames[v];
	}
	if (p->nr_frames == p->cap_frames) {
		size_t cap = p->cap_frames ? p->cap_frames * 2 : 256;
		struct pframe **fr = realloc(p->frames, cap * sizeof(*fr));

		if (!fr)
			return NULL;
		p->frames = fr;
		p->cap_frames = cap;
	}
	if (!(n = frame_new(p)))
		return NULL;
	*n = *f;
	if (u64_map__set(&p->frame_index, h, p->nr_frames))
		return NULL;
	p->frames[p->nr_frames++] = n;
	return n;
}

static const struct pframe *special(struct projector *p, const char *name, uint8_t kind)
{
	struct pframe f = {.kind = kind, .origin = PORIGIN_OTHER};

	if (kind == PFRAME_RUNTIME)
		f.origin = PORIGIN_RUNTIME;
	if (!(f.name = strpool__intern(&p->pool, name)))
		return NULL;
	return intern_frame(p, &f);
}

static uint8_t origin_of_class(enum crate_class c)
{
	switch (c) {
	case CRATE_USER: return PORIGIN_USER;
	case CRATE_RUNTIME: return PORIGIN_RUNTIME;
	case CRATE_STD: return PORIGIN_STD;
	default: return PORIGIN_OTHER;
	}
}

/* Where a function's code comes from: its Rust crate, else its library. */
static uint8_t origin_of_function(const char *name, const char *module)
{
	static const char *const system_libs[] = {"/libc.so",	 "/libc-",    "/ld-linux",
						  "[vdso",	 "/libm.so",  "/libgcc_s",
						  "/libpthread", "/libstdc++"};
	char crate[128];

	if (strstr(name, "::")) {
		rust_path__crate(name, crate, sizeof(crate));
		return origin_of_class(crate__classify(crate));
	}
	for (size_t i = 0; module && i < sizeof(system_libs) / sizeof(system_libs[0]); i++)
		if (strstr(module, system_libs[i]))
			return PORIGIN_STD;
	return PORIGIN_OTHER;
}

static const struct pframe *future_frame(struct projector *p, int32_t poll)
{
	const struct model *m = p->m;
	const struct poll_fn *pf = &m->polls[poll];
	struct pframe f = {.kind = PFRAME_FUTURE, .inlined = false};
	char name[512];

	if (pf->future >= 0 && (uint32_t)pf->future < m->nr_futures) {
		const struct future *fu = &m->futures[pf->future];

		if (p->future_frames[pf->future])
			return p->future_frames[pf->future];
		future__display_name(fu, name, sizeof(name));
		f.file = fu->file ? strpool__intern(&p->pool, fu->file) : NULL;
		f.line = fu->line;
		f.origin = origin_of_class(fu->crate_class);
		f.addr = pf->addr;
		if (!(f.name = strpool__intern(&p->pool, name)))
			return NULL;
		return p->future_frames[pf->future] = intern_frame(p, &f);
	}
	if (p->poll_frames[poll])
		return p->poll_frames[poll];
	f.file = pf->file ? strpool__intern(&p->pool, pf->file) : NULL;
	f.line = pf->line;
	f.origin = origin_of_class(pf->crate_class);
	f.addr = pf->addr;
	if (!(f.name = strpool__intern(&p->pool, pf->name)))
		return NULL;
	return p->poll_frames[poll] = intern_frame(p, &f);
}

static const struct uinfo *classify(struct projector *p, const struct uframe *u)
{
	struct uinfo info = {0};
	struct pframe f = {.kind = PFRAME_FUNCTION};
	uint64_t v;
	int32_t poll = -1;

	if (u64_map__get(&p->ucache, (uintptr_t)u, &v))
		return &p->uinfos[v];
	f.name = strpool__intern(&p->pool, u->name ? u->name : "[unknown]");
	f.file = u->file ? strpool__intern(&p->pool, u->file) : NULL;
	f.module = u->module ? strpool__intern(&p->pool, u->module) : NULL;
	f.line = u->line;
	f.inlined = u->inlined;
	f.addr = u->pc;
	if (!f.name)
		return NULL;
	f.origin = origin_of_function(f.name, f.module);
	if (!(info.fn = intern_frame(p, &f)))
		return NULL;
	if (p->m) {
		if (u->linkage)
			poll = find_poll(p->m, p->by_linkage, p->nr_by_linkage, u->linkage, true);
		if (poll < 0 && u->name)
			poll = find_poll(p->m, p->by_name, p->nr_by_name, u->name, false);
	}
	if (poll >= 0) {
		const struct poll_fn *pf = &p->m->polls[poll];
		enum crate_class c = pf->future >= 0 && (uint32_t)pf->future < p->m->nr_futures
					 ? p->m->futures[pf->future].crate_class
					 : pf->crate_class;

		/* std's forwarding impls (Pin<P>, &mut F, Box<F>, AssertUnwindSafe) are
		 * plumbing between two real futures: not a level of the async stack */
		if (c != CRATE_STD) {
			if (!(info.future = future_frame(p, poll)))
				return NULL;
			info.runtime = c == CRATE_RUNTIME;
		}
	}
	if (p->nr_uinfos == p->cap_uinfos) {
		size_t cap = p->cap_uinfos ? p->cap_uinfos * 2 : 256;
		struct uinfo *ui = realloc(p->uinfos, cap * sizeof(*ui));

		if (!ui)
			return NULL;
		p->uinfos = ui;
		p->cap_uinfos = cap;
	}
	p->uinfos[p->nr_uinfos] = info;
	if (u64_map__set(&p->ucache, (uintptr_t)u, p->nr_uinfos))
		return NULL;
	return &p->uinfos[p->nr_uinfos++];
}

struct projector *projector__new(const struct model *m, bool keep_samples)
{
	struct projector *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->m = m;
	p->keep_samples = keep_samples;
	strpool__init(&p->pool);
	u64_map__init(&p->frame_index);
	u64_map__init(&p->ucache);
	u64_map__init(&p->stack_index);
	if (m && m->nr_polls) {
		p->by_linkage = calloc(m->nr_polls, sizeof(uint32_t));
		p->by_name = calloc(m->nr_polls, sizeof(uint32_t));
		p->poll_frames = calloc(m->nr_polls, sizeof(*p->poll_frames));
		p->future_frames = calloc(m->nr_futures + 1, sizeof(*p->future_frames));
		if (!p->by_linkage || !p->by_name || !p->poll_frames || !p->future_frames) {
			projector__free(p);
			return NULL;
		}
		for (uint32_t i = 0; i < m->nr_polls; i++) {
			if (m->polls[i].linkage_name)
				p->by_linkage[p->nr_by_linkage++] = i;
			if (m->polls[i].name)
				p->by_name[p->nr_by_name++] = i;
		}
		sort_model = m;
		qsort(p->by_linkage, p->nr_by_linkage, sizeof(uint32_t), cmp_linkage);
		qsort(p->by_name, p->nr_by_name, sizeof(uint32_t), cmp_name);
		sort_model = NULL;
	}
	p->runtime = special(p, "[runtime]", PFRAME_RUNTIME);
	p->not_in_poll = special(p, "[not in a poll]", PFRAME_SPECIAL);
	p->unknown = special(p, "[unknown]", PFRAME_SPECIAL);
	p->cut_short = special(p, "[stack cut short]", PFRAME_SPECIAL);
	if (!p->runtime || !p->not_in_poll || !p->unknown || !p->cut_short) {
		projector__free(p);
		return NULL;
	}
	return p;
}

void projector__free(struct projector *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->nr_chunks; i++)
		free(p->chunks[i]);
	free(p->chunks);
	free(p->frames);
	for (size_t i = 0; i < p->nr_stacks; i++)
		free((void *)p->stacks[i].frames);
	free(p->stacks);
	free(p->samples);
	free(p->uinfos);
	free(p->by_linkage);
	free(p->by_name);
	free(p->poll_frames);
	free(p->future_frames);
	u64_map__free(&p->frame_index);
	u64_map__free(&p->ucache);
	u64_map__free(&p->stack_index);
	strpool__free(&p->pool);
	free(p);
}

static int64_t intern_stack(struct projector *p, const struct pframe **frames, uint32_t n,
			    bool offcpu)
{
	uint64_t h = 0xcbf29ce484222325ull, v;
	const struct pframe **copy;
	struct pstack *s;

	h = mix(h, offcpu);
	for (uint32_t i = 0; i < n; i++)
		h = mix(h, (uintptr_t)frames[i]);
	for (h &= KEY_MASK;; h = (h * 31 + 1) & KEY_MASK) {
		if (!u64_map__get(&p->stack_index, h, &v))
			break;
		s = &p->stacks[v];
		if (s->nframes == n && s->offcpu == offcpu &&
		    !memcmp(s->frames, frames, n * sizeof(*frames)))
			return (int64_t)v;
	}
	if (p->nr_stacks == p->cap_stacks) {
		size_t cap = p->cap_stacks ? p->cap_stacks * 2 : 64;
		struct pstack *st = realloc(p->stacks, cap * sizeof(*st));

		if (!st)
			return -ENOMEM;
		p->stacks = st;
		p->cap_stacks = cap;
	}
	if (!(copy = malloc((n ? n : 1) * sizeof(*copy))))
		return -ENOMEM;
	memcpy(copy, frames, n * sizeof(*copy));
	if (u64_map__set(&p->stack_index, h, p->nr_stacks)) {
		free(copy);
		return -ENOMEM;
	}
	p->stacks[p->nr_stacks] = (struct pstack){.frames = copy, .nframes = n, .offcpu = offcpu};
	return (int64_t)p->nr_stacks++;
}

static int add_sample(struct projector *p, uint32_t stack, const struct projected_sample *s)
{
	p->stacks[stack].samples++;
	p->stacks[stack].weight += s->weight;
	if (!p->keep_samples)
		return 0;
	if (p->nr_samples == p->cap_samples) {
		size_t cap = p->cap_samples ? p->cap_samples * 2 : 1024;
		struct psample *ns = realloc(p->samples, cap * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		p->samples = ns;
		p->cap_samples = cap;
	}
	p->samples[p->nr_samples++] = (struct psample){.time_ns = s->time_ns,
						       .pid = s->pid,
						       .tid = s->tid,
						       .stack = stack,
						       .weight = s->weight};
	return 0;
}

int projector__add_to(struct projector *p, uint32_t stack, const struct projected_sample *s)
{
	if (stack >= p->nr_stacks)
		return -EINVAL;
	return add_sample(p, stack, s);
}

int projector__add_aggregate(struct projector *p, uint32_t stack, uint64_t samples, uint64_t weight)
{
	if (stack >= p->nr_stacks)
		return -EINVAL;
	p->stacks[stack].samples += samples;
	p->stacks[stack].weight += weight;
	return 0;
}

int64_t projector__add(struct projector *p, const struct uframe *const *frames, uint32_t n,
		       const struct projected_sample *s)
{
	struct uinfo *info = p->info;
	int64_t outer = -1, inner = -1, root = -1, st;
	uint32_t k = 0;

	if (n > UNWIND_MAX_LOGICAL)
		n = UNWIND_MAX_LOGICAL;
	for (uint32_t i = 0; i < n; i++) {
		const struct uinfo *u = classify(p, frames[i]);

		if (!u)
			return -ENOMEM;
		info[i] = *u;
		if (info[i].future) {
			if (inner < 0)
				inner = i;
			outer = i;
			if (!info[i].runtime)
				root = i;
		}
	}
	if (!n) {
		p->tmp[k++] = p->unknown;
	} else if (outer < 0) {
		p->tmp[k++] = s->cut_short ? p->cut_short : p->not_in_poll;
		for (uint32_t i = n; i-- > 0;)
			p->tmp[k++] = info[i].fn;
	} else {
		/* only runtime futures (a worker loop such as tokio's BlockingTask<launch>,
		 * parked or scheduling): they are all [runtime], the functions follow */
		p->tmp[k++] = s->cut_short ? p->cut_short : p->runtime;
		for (int64_t i = root; root >= 0 && i >= inner; i--)
			if (info[i].future)
				p->tmp[k++] = info[i].future;
		for (int64_t i = inner - 1; i >= 0; i--)
			p->tmp[k++] = info[i].fn;
	}
	st = intern_stack(p, p->tmp, k, s->offcpu);
	if (st < 0)
		return st;
	if (s->intern_only)
		return st;
	if (add_sample(p, (uint32_t)st, s))
		return -ENOMEM;
	return st;
}

void projector__fill(const struct projector *p, struct profile_data *out)
{
	out->stacks = p->stacks;
	out->nstacks = p->nr_stacks;
	out->samples = p->samples;
	out->nsamples = p->nr_samples;
}

int projector__stack_text(const struct pstack *s, char *buf, size_t len)
{
	size_t at = 0;
	const char *leaf = NULL;

	if (!len)
		return -EINVAL;
	buf[0] = '\0';
	for (uint32_t i = 0; i < s->nframes; i++) {
		const struct pframe *f = s->frames[i];

		if (f->kind == PFRAME_FUNCTION) {
			leaf = f->name;
			continue;
		}
		if (f->kind == PFRAME_RUNTIME)
			continue;
		char name[160]; /* a frame of a line: its generic arguments shortened */

		rust__abbreviate(f->name, name, sizeof(name), 80);
		at += (size_t)snprintf(buf + at, at < len ? len - at : 0, "%s%s", at ? " → " : "",
				       name);
		if (at >= len)
			break;
	}
	if (leaf && at < len)
		at += (size_t)snprintf(buf + at, len - at, " (in %s)", leaf);
	return 0;
}
