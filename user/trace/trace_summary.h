/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The end-of-run summary of `asyncbpf trace` (docs/tracing.md, "Summary"): per
 * traced poll function (one per future type) counts by result, busy time, poll
 * duration and lifetime percentiles; the futures still pending at the end grouped by
 * await point; per task busy/idle; the run's totals with every loss said loudly.
 * Pure: fed hand-made trace_polls by the unit tests.
 *
 * trace_summary.c: rows, BPF histograms; trace_summary_text.c: the text summary;
 * trace_summary_json.c: --summary-json. It uses, one way: trace_instances.h (live
 * future instances) and trace_tasks.h (tasks), both over key_map.h.
 */
#ifndef ASYNCBPF_TRACE_SUMMARY_H
#define ASYNCBPF_TRACE_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "asyncbpf.h"
#include "trace/trace_cost.h"
#include "lib/hashmap.h"
#include "model/model.h"
#include "model/trace_event.h"
#include "trace/probe_cost.h"
#include "trace/trace_instances.h"
#include "trace/task_trees.h"
#include "trace/trace_tasks.h"
#include "trace/u64_vec.h"
#include "trace/wake_sampler.h"

/* Default caps: memory stays bounded on a long run; what is past them is counted. */
#define TRACE_SUMMARY_MAX_INSTANCES 1000000u /* live future instances tracked */
#define TRACE_SUMMARY_MAX_TASKS	    100000u  /* live tasks tracked at once */
#define TRACE_SUMMARY_KEEP_TASKS    100u     /* tasks listed in the JSON: the busiest */
#define TRACE_SUMMARY_TEXT_PENDING  20u	     /* pending groups in the text summary */
#define TRACE_SUMMARY_TEXT_TASKS    10u	     /* tasks in the text summary */

/* Off-CPU time by syscall (blocking), the biggest few. */
#define SUMMARY_SYSCALLS 8

struct syscall_time {
	int32_t nr; /* -1: not in a syscall (a page fault, ...) */
	uint64_t count, ns;
};

/* Off-CPU inside a poll fn's polls (trace_summary_block.c), blamed on it as the
 * innermost open traced poll. */
struct block_summary {
	uint64_t blocked, blocked_ns, blocked_max_ns; /* voluntary: it waited in the kernel */
	uint64_t preempted, preempted_ns;	      /* involuntary: runnable, another ran */
	uint64_t tracer, tracer_ns; /* inside the tracer's probe handling: not the poll's */
	struct syscall_time by_syscall[SUMMARY_SYSCALLS];
	uint32_t nr_syscalls;
	uint64_t other_count, other_ns; /* syscalls past SUMMARY_SYSCALLS */
	uint64_t offcpu_ns;		/* over its polls: off-CPU inside them, children's too */
	uint64_t over;			/* polls that blocked longer than the threshold */
	uint64_t worst_ns;		/* the most one poll blocked (voluntary) */
	int32_t worst_syscall;		/* that poll's longest block's syscall */
	int32_t worst_await;		/* the await it resumed at in that poll; -1: first */
	uint64_t worst_tid;
};

/* Drops of a future (trace_summary_cancel.c): cancelled ones by await point. */
#define SUMMARY_CANCEL_SITES 8

struct cancel_summary {
	uint64_t drops;	      /* drop_in_place::<F> seen */
	uint64_t cancelled;   /* dropped while suspended (or, hand-written: after a Pending) */
	uint64_t not_started; /* dropped Unresumed: never polled, not cancelled */
	uint64_t finished;    /* dropped Returned (or after Ready): not cancelled */
	uint64_t bad_state;   /* a __state it does not have: fate unknown */
	struct {
		int32_t await_index; /* -1: a hand-written future (no await points) */
		uint64_t count;
	} at[SUMMARY_CANCEL_SITES];
	uint32_t nr_at;
	uint64_t at_other; /* cancelled at await points past SUMMARY_CANCEL_SITES */
};

/* Wake-ups of a task type (trace_summary_wake.c), on its depth-0 poll fn's row. */
#define SUMMARY_WAKERS 8

struct wake_summary {
	uint64_t wakes;	       /* wakes followed by a poll of the task */
	uint64_t self_wakes;   /* of them, by the task itself (yield_now, ...) */
	uint64_t coalesced;    /* more wakes before that poll: one counted */
	struct u64_vec delays; /* wake -> start of the next poll (ns): scheduling delay */
	struct {
		uint32_t poll; /* the waker's innermost traced poll fn; TRACE_NO_INDEX: none */
		uint64_t count;
	} wakers[SUMMARY_WAKERS]; /* most numerous first */
	uint32_t nr_wakers;
	uint64_t wakers_other;
};

struct poll_summary {
	struct wake_summary wake;
	struct block_summary block;
	struct cancel_summary cancel;
	uint64_t counts[POLL_RESULT_COUNT];	   /* by enum poll_result */
	uint64_t unknown_by[UNKNOWN_REASON_COUNT]; /* POLL_UNKNOWN by enum unknown_reason */
	uint64_t polls;
	uint64_t busy_ns;
	struct u64_vec durations; /* every poll's duration, for percentiles */
	struct u64_vec lifetimes; /* first poll's start -> end of the poll that returned Ready */
	uint64_t abandoned;	  /* instances found Unresumed again while pending: dropped */
	uint64_t started_before;  /* Ready instances first seen past Unresumed: no lifetime */
};

/* Task mode (trace_summary_tasks.c): a future type as the task polls' trees saw it. */
struct task_future_summary {
	uint64_t polls, started, ready, ended, pending;
	uint64_t went_back; /* seen back at an earlier await: READY may be short */
	uint64_t *parked;   /* of pending: by await index (Suspend<k>), nr_parked of them */
	uint32_t nr_parked;
};

/* A task type, by its root future: its task polls and tasks. */
struct task_root_summary {
	uint64_t polls, busy_ns, offcpu_ns, tasks, completed;
	uint64_t cancelled; /* of completed: dropped by a poll that began cancelled, or
			     * that a cancel reached while it ran */
	uint64_t unsure;    /* of completed: ended while a cancel was pending, Ready or
			     * cancelled not told (TASK_TREE_END_UNSURE) */
	struct u64_vec durations;
	uint64_t wakes, self_wakes;
	struct u64_vec delays; /* wake -> the task's next poll's start */
	/* off-CPU inside its task polls: voluntary, preempted, the tracer's */
	uint64_t blocked, blocked_ns, preempted_ns, tracer_ns;
	uint64_t over;	   /* task polls that blocked longer than the threshold */
	uint64_t worst_ns; /* the most one task poll blocked (voluntary) */
	int32_t worst_syscall;
};

struct task_mode_summary {
	uint64_t task_polls, lost, cut, unknown_task_polls, unknown_dyn;
	uint64_t not_read;	   /* task polls whose tree was not read (TASK_TREE_NOT_READ) */
	uint64_t finished_polls;   /* polls of a task whose future was gone already */
	uint64_t concurrent_polls; /* begun while another thread polled the task */
	struct task_future_summary *futures; /* by model future */
	struct task_root_summary *roots;     /* by model future (a task's root) */
	struct key_map pending;		     /* (future, addr) -> await index + 1 */
	struct key_map live_tasks;	     /* (0, header) -> root future, until completed */
	struct key_map woken;		     /* (0, header) -> first wake's time since its poll */
	struct key_map woken_by;	     /* (0, header) -> that wake's waker task header */
	struct key_map blocking;	     /* (tid, header) -> index in blocks: this poll's */
	struct task_block {
		uint64_t blocked, blocked_ns, preempted_ns, tracer_ns, longest_ns;
		int32_t longest_syscall;
	} * blocks;
	uint32_t nr_blocks, cap_blocks;
	uint64_t wakes_unlinked; /* a task woken but not polled again while traced */
	uint64_t untracked_tasks, untracked_instances;
	bool oom;
};

struct trace_summary {
	const struct model *m;
	struct poll_summary *polls; /* indexed like m->polls */
	uint64_t records, bad_records, first_ns, last_ns;
	struct instance_table instances;
	struct task_table tasks;
	struct task_mode_summary *tm; /* task mode's, NULL until a task poll came */
	struct task_locks *locks;     /* task mode's locks over time (task_locks.h), or NULL */
	bool task_mode;		      /* records are task polls' trees (task_trees.h) */
	uint8_t *task_roots;	      /* by poll fn, NULL: every outermost frame is a task */
	struct poll_stats *bpf;	      /* per poll fn, after the run (NULL until set) */
	uint32_t nr_bpf;
	bool oom; /* something could not be stored: the numbers concerned are partial */
	struct probe_costs costs;     /* measured before tracing (costs.measured) */
	struct probe_costs costs_end; /* measured again after it, when durations were
				       * corrected (costs_end.measured) */
	uint64_t probe_subtracted_ns; /* traced children's probes taken out of durations */
	uint64_t probe_adjusted;      /* polls with traced children: their duration adjusted */
	uint64_t probe_overcorrected; /* of them, estimate >= duration: counted as 0 */
	/* blocking (trace_summary_block.c) */
	const char *blocking_off;		  /* NULL: watched; else why not */
	uint64_t block_threshold_ns;		  /* BLOCKING past this in one poll */
	uint64_t blocks;			  /* block records */
	uint64_t tracer_offcpu, tracer_offcpu_ns; /* of them, inside the tracer's probes */
	uint64_t blocked_at_stop; /* threads off-CPU inside a poll at the end: not counted */
	struct u64_map block_acc; /* tid -> index in accs: the poll blocking now */
	struct block_acc *accs;
	uint32_t nr_accs, cap_accs;
	/* wake-ups (trace_summary_wake.c) */
	bool wakes_watched;
	bool wakes_sampled;		/* the wake probes were attached part of the time: */
	struct wake_sample wake_sample; /* ...this part (wake_sampler.h) */
	uint64_t wakes, wakes_unknown;	/* wake records; of them, of a task of unknown type */
	struct u64_map pending_wakes;	/* woken_self -> index in waits + 1 (0: none) */
	struct pending_wake *waits;
	uint32_t nr_waits, cap_waits;
	uint64_t wake_flows; /* flow ids handed out */
	/* cancellation (trace_summary_cancel.c) */
	bool cancel_watched;
	uint64_t drops, drops_unknown_future; /* drop records; of them, of no traced poll fn */
};

/* Extra numbers printed with the totals (from the BPF side). */
struct trace_run_totals {
	struct trace_totals totals;
	uint64_t unprobeable_exits, unmatched_exits, stack_overflow, no_storage, bpf_records;
	uint64_t hits;
	uint64_t task_trees, task_dropped; /* task mode: trees made in BPF, lost (ring full) */
	struct tracer_cost cost;	   /* the tracer's own (trace_cost.h) */
	/* the kernel's context-switch counts of the target's threads over the run (those
	 * alive at its end), -1 unknown: what the blocking counts are bounded by */
	int64_t kernel_voluntary, kernel_involuntary;
};

int trace_summary__init(struct trace_summary *s, const struct model *m);
/* Caps (tests use small ones); call right after init. */
void trace_summary__set_caps(struct trace_summary *s, uint32_t max_instances, uint32_t max_tasks);
/* Which poll fns are task roots (roots[m->nr_polls], copied): tasks are theirs only.
 * Without it (a runtime the analyzer does not know) the outermost frame is the task.
 * 0 or -ENOMEM. */
int trace_summary__set_task_roots(struct trace_summary *s, const uint8_t *roots);
void trace_summary__add(struct trace_summary *s, const struct trace_poll *p);
/* Blocking: whether it is watched (NULL) or why not, and the BLOCKING threshold. */
void trace_summary__set_blocking(struct trace_summary *s, const char *off, uint64_t threshold_ns);
/* Task mode: one task poll and what its trees said (trace/task_trees.h). */
struct task_poll;
void trace_summary__add_task_poll(struct trace_summary *s, const struct task_poll *p);
void summary_tasks__print(struct trace_summary *s, FILE *out);
/* After the wake-up sample line: blocking, pending at the end, what was not seen. */
void summary_tasks__print_more(struct trace_summary *s, FILE *out);
/* Task mode's counts line: trees, lost trees, probes, duration. */
void summary_tasks__print_totals(const struct trace_summary *s, const struct trace_run_totals *t,
				 FILE *out);
void summary_tasks__free(struct trace_summary *s);
/* Task mode's part of --summary-json (the `task_mode` object). 0 or -ENOMEM. */
struct cJSON;
int summary_tasks__json(struct trace_summary *s, struct cJSON *root);
/* Task mode: a thread off-CPU inside a task poll (block.self is the task's header). */
void summary_tasks__add_block(struct trace_summary *s, const struct trace_block *b);
/* Task mode: a task woken (by header); its next task poll gives the delay. */
void summary_tasks__add_wake(struct trace_summary *s, const struct trace_wake *w);
struct lock_seen;
/* A task poll's end tree's locks (task_locks__add, the tracker made at the first). */
int summary_tasks__add_locks(struct trace_summary *s, uint64_t header, int32_t root,
			     uint64_t start_ns, uint64_t end_ns, bool completed,
			     const struct lock_seen *seen, uint32_t nr);
/* A thread off-CPU inside a poll (its poll's record comes later). */
void trace_summary__add_block(struct trace_summary *s, const struct trace_block *b);
/* A selected future dropped: cancelled or not, and no longer pending. */
void trace_summary__add_drop(struct trace_summary *s, const struct trace_drop *d);
/* A task woken: remembered until its next poll (the scheduling delay). */
void trace_summary__add_wake(struct trace_summary *s, const struct trace_wake *w);
void trace_summary__set_wakes(struct trace_summary *s, bool watched);
/*
 * A depth-0 poll: the wake that led to it, if one is pending (trace_summary__add
 * calls it). Returns the wake (copied into *w) and a flow id, or 0.
 */
uint64_t summary_wake__poll(struct trace_summary *s, const struct trace_poll *p,
			    struct trace_wake *w);
/* Wakes still waiting for a poll at the end (no poll followed while traced). */
uint64_t summary_wake__unmatched(const struct trace_summary *s);
/* The wake probes attached part of the time: how much (text, and JSON under wk). */
void summary_wake__print_sample(const struct trace_summary *s, FILE *out);
void summary_wake__json_sample(const struct trace_summary *s, struct cJSON *wk);
void summary_wake__free(struct trace_summary *s);
/* Whether drops are probed (--no-cancel: not). */
void trace_summary__set_cancel(struct trace_summary *s, bool watched);
/* The probe costs measured before tracing, for the text and JSON summaries. */
void trace_summary__set_probe_costs(struct trace_summary *s, const struct probe_costs *c);
/* The same measured again after detaching: how far the correction can be off. */
void trace_summary__set_probe_costs_end(struct trace_summary *s, const struct probe_costs *c);
/*
 * The BPF side's per-poll-fn statistics after the run (stats[nr], indexed like
 * m->polls; copied). Poll fns that dropped records take their busy time and
 * percentiles from them. 0 or -ENOMEM.
 */
int trace_summary__set_bpf_stats(struct trace_summary *s, const struct poll_stats *stats,
				 uint32_t nr);
void trace_summary__print(struct trace_summary *s, const struct trace_run_totals *t, FILE *out);
/* The summary as JSON (docs/tracing.md, schema asyncbpf-trace-summary/2). 0 or -errno. */
int trace_summary__write_json(struct trace_summary *s, const struct trace_run_totals *t, FILE *out);
void trace_summary__free(struct trace_summary *s);

/* ---- shared by the summary's files ---- */

/* A poll fn's numbers as printed: exact from records, or from the BPF histogram. */
struct summary_row {
	uint32_t poll;
	uint64_t busy_ns, p50, p99, max;
	bool from_histogram; /* records were dropped: percentiles are bucket bounds */
	uint64_t dropped;
	uint64_t life_p50, life_p99, life_max;
};

/* Rows of the poll fns that have records, busiest first; NULL on ENOMEM. */
struct summary_row *trace_summary__rows(struct trace_summary *s, uint32_t *nr);
/* Nearest-rank percentile over a log2 histogram: the upper bound of its bucket. */
uint64_t summary__hist_percentile(const __u64 *hist, unsigned pct);
/* [low, high) of histogram bucket i. */
uint64_t summary__bucket_low(unsigned i);
uint64_t summary__bucket_high(unsigned i);
/* The future's display name, else the poll fn's name. */
void summary__poll_name(const struct model *m, uint32_t poll, char *buf, size_t len);
/* The same, plus " (+N folded)" when other futures' polls were folded into this
 * function (their counts are in its row): for the text summary. */
void summary__poll_label(const struct model *m, uint32_t poll, char *buf, size_t len);
/* The futures folded into this poll fn, ", "-separated ("" if none). */
void summary__folded_names(const struct model *m, uint32_t poll, char *buf, size_t len);
/* file:line of await point k of the poll fn's future (states, else edges); NULL if unknown. */
const char *summary__await_site(const struct model *m, uint32_t poll, int32_t await_index,
				uint32_t *line);
/* "self not known", ...: why results were unknown, for people (and JSON keys). */
const char *unknown_reason__text(unsigned reason);
const char *unknown_reason__key(unsigned reason);
/* Unknown results of every poll fn by reason (into by[UNKNOWN_REASON_COUNT]); the total. */
uint64_t trace_summary__unknown(const struct trace_summary *s, uint64_t *by);
/* Polls still running when tracing stopped (POLL_OPEN records). */
uint64_t trace_summary__running(const struct trace_summary *s);
/*
 * Polls that ended on a single-stepped exit probe (the BPF statistics), and into
 * *exits the polls that ended on any exit probe: the exit cost by frequency.
 */
uint64_t trace_summary__stepped_exits(const struct trace_summary *s, uint64_t *exits);
/* The poll's record arrived: close its blocking accounting (trace_summary_block.c). */
void summary_block__poll_done(struct trace_summary *s, const struct trace_poll *p);
void summary_block__free(struct trace_summary *s);

#endif
