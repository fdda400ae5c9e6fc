/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tracer's BPF side (trace_loader.c, bpf/trace.bpf.c): open, size the maps and
 * load; attach every probe of a plan (trace_plan.h); activate; detach; read the
 * statistics and the frames still open. docs/tracing.md.
 */
#ifndef ASYNCBPF_TRACER_H
#define ASYNCBPF_TRACER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "asyncbpf.h"
#include "model/model.h"
#include "trace/trace_plan.h"

#define TRACE_DEFAULT_RINGBUF_SIZE (16u << 20)
/* stats_only (top): no record is written; a ring buffer is still there to wait on */
#define TRACE_STATS_RINGBUF_SIZE (64u << 10)

struct tracer;

enum attach_mode {
	ATTACH_AUTO,  /* uprobe_multi, else perf-event links (saying so) */
	ATTACH_MULTI, /* uprobe_multi only */
	ATTACH_PERF,  /* one perf-event link per probe (old kernels; forced for tests) */
};

struct tracer_opts {
	pid_t pid; /* target tgid (probes are filtered on it, in the link and in BPF) */
	enum attach_mode attach;
	/* called every ~1000 probes while attaching perf-event links (may be NULL) */
	void (*progress)(uint32_t done, uint32_t total);
	const char *path; /* the executable to probe: an open fd's /proc/self/fd/N or a file */
	const char *name; /* its name in messages (the executable's path); NULL = path */
	uint64_t ringbuf_size;
	bool verbose;	  /* libbpf's log on stderr */
	bool blocking;	  /* watch context switches inside polls (tp_btf/sched_switch) */
	bool stats_only;  /* top: the statistics maps only, no record in the ring buffer */
	bool stats_trees; /* top --locks: and task mode's trees, sent at task poll ends */
	bool wakes_apart; /* leave the wake probes out of the uprobe_multi link: the caller
			   * attaches them part of the time (wake_sampler.h) */
};

/* A tracer for o (copied; its strings must outlive the tracer). NULL: out of memory. */
struct tracer *tracer__new(const struct tracer_opts *o);
/* Open the skeleton, size maps, fill specs, load. 0 or -errno (err filled). */
int tracer__load(struct tracer *t, const struct trace_plan *plan, const struct model *m, char *err,
		 size_t errlen);
/*
 * Attach every probe of the plan: one uprobe_multi link, else (saying so) one
 * perf-event link per probe. 0 or -errno (err filled).
 */
int tracer__attach(struct tracer *t, const struct trace_plan *plan, char *err, size_t errlen);
/* Set or clear the BPF side's ready flag. */
void tracer__set_ready(struct tracer *t, bool ready);
/* Sampled wake probes attached (true) or not: polls then count as window_polls. */
void tracer__set_wake_window(struct tracer *t, bool open);
/* Clear ready and destroy every link (idempotent). */
void tracer__detach(struct tracer *t);
/*
 * After detach and the last drain: every frame still on a target thread's stack (a
 * poll running, or blocked, when tracing stopped) becomes a RESULT_OPEN record
 * ending now, innermost first, handed to sink (trace_consumer__handle's shape) and
 * counted into stats[nr_polls] (may be NULL) as the BPF side would. The stacks are
 * read from task storage with one pidfd per thread. 0 or -errno (err filled; some
 * threads may still have been reported).
 */
int tracer__dump_open(struct tracer *t, struct poll_stats *stats,
		      int (*sink)(void *, void *, size_t), void *ctx, uint32_t *emitted, char *err,
		      size_t errlen);
/*
 * Whether blocking inside polls is watched: NULL if it is, else why not (not asked,
 * no kernel BTF for tp_btf, the attach failed); for the summary and messages.
 */
const char *tracer__blocking_off(const struct tracer *t);
/*
 * A wake the BPF side could not resolve (it came before wake_types was filled: a
 * launched command's first moments): the woken task's future, read from the live
 * process now. 0, or -errno (*self 0).
 */
int tracer__resolve_woken(struct tracer *t, uint8_t runtime, uint64_t header, uint64_t vtable,
			  uint64_t *self);
/* After tracer__dump_open: threads that were off-CPU inside a poll when tracing
 * stopped (that interval never ended: not counted, said so). */
uint32_t tracer__blocked_at_stop(const struct tracer *t);
/*
 * Tell the BPF side where each task type's future lies behind its header (wake-ups)
 * and where every probe site is (on_switch: a thread stopped in a probe):
 * the vtables at their runtime address, so once the target's executable is mapped.
 * 0 (done, or nothing to do), -EAGAIN (not yet: call again), or -errno.
 */
int tracer__fill_wake_types(struct tracer *t);
/* Execs of the target since attach (on_exec; 0 when they cannot be watched). */
uint32_t tracer__exec_count(const struct tracer *t);
/* The global counters (COUNTER_*), summed over CPUs; cheap enough for a status line. */
int tracer__read_counters(const struct tracer *t, __u64 *counters);
/* File descriptor of the ring buffer map. */
int tracer__ringbuf_fd(const struct tracer *t);
/*
 * Sum the per-CPU statistics: stats[tracer__nr_polls()] (may be NULL) and
 * counters[COUNTER_COUNT]. 0 or -errno.
 */
int tracer__read_stats(const struct tracer *t, struct poll_stats *stats, __u64 *counters);
/* Entries of the statistics map: the model's poll count (at least 1). */
uint32_t tracer__nr_polls(const struct tracer *t);
/*
 * top in task mode: the statistics per task type (trace_plan's task_info indices: the
 * runtimes' task types, then the root types), stats[tracer__nr_task_stats()], and the
 * counters. 0 or -errno.
 */
int tracer__read_task_stats(const struct tracer *t, struct poll_stats *stats, __u64 *counters);
uint32_t tracer__nr_task_stats(const struct tracer *t);
/* top: the blocked time by row and syscall (bpf/asyncbpf.h, struct block_sys_key),
 * each entry to fn; 0 or -errno. */
int tracer__read_block_sys(const struct tracer *t,
			   void (*fn)(void *ctx, const struct block_sys_key *k,
				      const struct block_sys_value *v),
			   void *ctx);
uint64_t tracer__probes_attached(const struct tracer *t);
uint64_t tracer__probes_failed(const struct tracer *t);
/* The poll probe program and the spec map (bench/floor.c times the steps apart). */
int tracer__prog_fd(const struct tracer *t);
int tracer__specs_fd(const struct tracer *t);
/* How the probes are attached: "one uprobe_multi link", ..., for messages. */
const char *tracer__links(const struct tracer *t);
/* The wake probes were left out (wakes_apart, with uprobe_multi links): the caller's. */
bool tracer__wakes_apart(const struct tracer *t);
/* Detach and free (NULL is fine). */
void tracer__free(struct tracer *t);

#endif
