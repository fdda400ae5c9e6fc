// SPDX-License-Identifier: GPL-2.0
/*
 * Reading the BPF side back (tracer.h): the statistics maps and the counters, summed
 * over CPUs, and at stop the polls still open on each thread's stack.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "lib/sysfacts.h"
#include "trace/tracer.h"
#include "trace/tracer_impl.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* Linux 6.9: a pidfd for any thread, not just the leader */
#endif

static unsigned int log2_u64(uint64_t v)
{
	return v > 1 ? 63 - (unsigned int)__builtin_clzll(v) : 0;
}

/* Emit one thread's open frames, innermost first, as the BPF side's emit() would. */
static uint32_t dump_thread(const struct thread_stack *st, struct poll_stats *stats,
			    uint32_t nr_polls, int (*sink)(void *, void *, size_t), void *ctx)
{
	uint32_t depth = st->depth > TRACE_MAX_DEPTH ? TRACE_MAX_DEPTH : st->depth, n = 0;
	uint64_t now = sysfacts__now_ns();

	for (uint32_t i = depth; i > 0; i--) {
		const struct poll_frame *f = &st->frames[i - 1];
		struct poll_record r = {
		    .type = RECORD_POLL,
		    .pid = (__u32)(st->pid_tgid >> 32),
		    .tid = (__u32)st->pid_tgid,
		    .poll = f->poll,
		    .start_ns = f->start_ns,
		    .end_ns = now > f->start_ns ? now : f->start_ns,
		    .self = f->self,
		    .parent_self = i > 1 ? st->frames[i - 2].self : 0,
		    .task_self = f->task_depth < i ? st->frames[f->task_depth].self : 0,
		    .parent_poll = i > 1 ? st->frames[i - 2].poll : ~0u,
		    .task_poll = f->task_depth < i ? st->frames[f->task_depth].poll : ~0u,
		    .depth = (__u16)(i - 1),
		    .result = RESULT_OPEN,
		    .await_index = -1,
		    .state_before = f->state,
		    .state_after = f->state,
		};

		if (stats && f->poll < nr_polls) {
			struct poll_stats *ps = &stats[f->poll];

			ps->records++;
			ps->emitted++;
			ps->busy_ns += r.end_ns - r.start_ns;
			ps->hist[log2_u64(r.end_ns - r.start_ns) & (TRACE_HIST_BUCKETS - 1)]++;
		}
		sink(ctx, &r, sizeof(r));
		n++;
	}
	return n;
}

int tracer__dump_open(struct tracer *t, struct poll_stats *stats,
		      int (*sink)(void *, void *, size_t), void *ctx, uint32_t *emitted, char *err,
		      size_t errlen)
{
	pid_t pid = t->o.pid;
	int map_fd = bpf_map__fd(t->skel->maps.trace_stacks), r = 0;
	struct thread_stack *st = malloc(sizeof(*st));
	char path[64];
	struct dirent *de;
	DIR *dir;

	*emitted = 0;
	if (!st) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir) {
		free(st);
		return 0; /* the process is gone, and its threads' stacks with it */
	}
	while ((de = readdir(dir))) {
		int tid = atoi(de->d_name), fd;

		if (tid <= 0)
			continue;
		/* task storage is keyed by a pidfd: one for this thread */
		fd = (int)syscall(SYS_pidfd_open, tid, tid == pid ? 0 : PIDFD_THREAD);
		if (fd < 0) {
			if (errno == EINVAL && !r) {
				r = -EINVAL;
				snprintf(
				    err, errlen,
				    "this kernel has no pidfds for threads (PIDFD_THREAD, Linux "
				    "6.9): only the main thread's polls running at stop are "
				    "reported");
			}
			continue;
		}
		if (!bpf_map_lookup_elem(map_fd, &fd, st) && (st->pid_tgid >> 32) == (__u32)pid) {
			/* off-CPU inside a poll when tracing stopped: that interval has no end */
			t->blocked_at_stop += st->off_start != 0 && st->depth;
			*emitted += dump_thread(st, stats, t->nr_polls, sink, ctx);
		}
		close(fd);
	}
	closedir(dir);
	free(st);
	return r;
}

int tracer__read_counters(const struct tracer *t, __u64 *counters)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *values;
	__u32 zero = 0;
	int r = 0;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	values = calloc((size_t)ncpu * COUNTER_COUNT, sizeof(*values));
	if (!values)
		return -ENOMEM;
	memset(counters, 0, COUNTER_COUNT * sizeof(*counters));
	if (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.trace_counters), &zero, values))
		r = -errno;
	for (int c = 0; !r && c < ncpu; c++)
		for (int k = 0; k < COUNTER_COUNT; k++)
			counters[k] += values[(size_t)c * COUNTER_COUNT + k];
	free(values);
	return r;
}

/* stats[0..nr) from a per-CPU array of struct poll_stats, summed over CPUs. */
static int sum_stats(int map_fd, struct poll_stats *stats, uint32_t nr)
{
	int ncpu = libbpf_num_possible_cpus();
	struct poll_stats *percpu;
	int r = 0;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	if (!(percpu = calloc((size_t)ncpu, sizeof(*percpu))))
		return -ENOMEM;
	for (uint32_t p = 0; p < nr; p++) {
		memset(&stats[p], 0, sizeof(stats[p]));
		if (bpf_map_lookup_elem(map_fd, &p, percpu)) {
			r = -errno;
			break;
		}
		/* every member is a __u64 count or sum (asyncbpf.h): add them word by word */
		for (int c = 0; c < ncpu; c++) {
			__u64 *dst = (__u64 *)(void *)&stats[p];
			const __u64 *src = (const __u64 *)(const void *)&percpu[c];

			for (size_t k = 0; k < sizeof(stats[p]) / sizeof(__u64); k++)
				dst[k] += src[k];
		}
	}
	free(percpu);
	return r;
}

int tracer__read_stats(const struct tracer *t, struct poll_stats *stats, __u64 *counters)
{
	int r = stats ? sum_stats(bpf_map__fd(t->skel->maps.trace_stats), stats, t->nr_polls) : 0;

	return r ? r : tracer__read_counters(t, counters);
}

uint32_t tracer__nr_task_stats(const struct tracer *t)
{
	return t->nr_task_stats;
}

int tracer__read_task_stats(const struct tracer *t, struct poll_stats *stats, __u64 *counters)
{
	int r = sum_stats(bpf_map__fd(t->skel->maps.task_stats), stats, t->nr_task_stats);

	return r ? r : tracer__read_counters(t, counters);
}

int tracer__read_block_sys(const struct tracer *t,
			   void (*fn)(void *ctx, const struct block_sys_key *k,
				      const struct block_sys_value *v),
			   void *ctx)
{
	int fd = bpf_map__fd(t->skel->maps.block_sys);
	struct block_sys_key k, next;
	struct block_sys_value v;
	const void *prev = NULL;

	/* bounded: a key deleted under the walk restarts it at worst, and nothing deletes */
	for (unsigned n = 0; n < BLOCK_SYS_ENTRIES && !bpf_map_get_next_key(fd, prev, &next); n++) {
		k = next;
		prev = &k;
		if (!bpf_map_lookup_elem(fd, &k, &v))
			fn(ctx, &k, &v);
	}
	return 0;
}
