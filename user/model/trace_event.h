/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One completed poll as the tracer's consumer hands it to the exporters (Perfetto,
 * Chrome JSON, summaries): decoded from the BPF records, with model indexes.
 * Pure data: exporters are unit-tested with hand-made events.
 */
#ifndef ASYNCBPF_TRACE_EVENT_H
#define ASYNCBPF_TRACE_EVENT_H

#include <stdbool.h>
#include <stdint.h>

#include "asyncbpf.h" /* enum offcpu_kind, STATE_SUSPEND0_VALUE */
#include "model/model.h"

enum poll_result {
	POLL_READY,	/* __state became Returned (or Poll::Ready from the return layout) */
	POLL_PENDING,	/* suspended at await_index */
	POLL_PANICKED,	/* __state became Panicked, or the frame was unwound */
	POLL_UNKNOWN,	/* no way to tell (hand-written future without a known layout) */
	POLL_TRUNCATED, /* the exit was never seen (unwind, longjmp): end time is a bound */
	POLL_OPEN,	/* still running when tracing stopped: end time is the stop time */
	POLL_RESULT_COUNT,
};

/* "ready", "pending", ...: the name every output uses for a result. */
static inline const char *poll_result__name(enum poll_result r)
{
	switch (r) {
	case POLL_READY: return "ready";
	case POLL_PENDING: return "pending";
	case POLL_PANICKED: return "panicked";
	case POLL_TRUNCATED: return "truncated";
	case POLL_OPEN: return "running";
	case POLL_UNKNOWN:
	case POLL_RESULT_COUNT: break;
	}
	return "unknown";
}

#define TRACE_NO_INDEX UINT32_MAX

/* enum record_result (bpf/asyncbpf.h) has this order: asserted in trace/trace_consumer.c. */

struct trace_poll {
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	uint32_t pid, tid;	   /* host PIDs */
	uint32_t poll;		   /* index into model.polls */
	uint32_t future;	   /* index into model.futures, TRACE_NO_INDEX if unknown */
	uint64_t self;		   /* the pinned future: identifies the instance */
	uint64_t parent_self;	   /* the awaiter's instance, 0 for the outermost frame */
	uint32_t parent_poll;	   /* the awaiter's poll index, TRACE_NO_INDEX if none */
	uint64_t task_self;	   /* outermost traced frame on the thread: the task */
	uint32_t task_poll;
	uint16_t depth;		/* 0 for the task's own poll */
	uint8_t unknown_reason; /* POLL_UNKNOWN: enum unknown_reason (bpf/asyncbpf.h) */
	/* a task poll of task mode, as one slice: no state measured; its await chain in
	 * await_stack (root first), await_stack_id naming it (a hash of the chain) */
	uint8_t task_mode;
	enum poll_result result;
	int32_t await_index;		    /* POLL_PENDING: the Suspend k it stopped at; else -1 */
	uint64_t state_before, state_after; /* raw __state values (0 when no __state) */
	/* estimated cost of the probes of the traced polls inside this one (ns): the
	 * summary subtracts it; start_ns/end_ns stay as measured (0: none, or not known) */
	uint64_t probe_ns;
	/* of end - start, its thread was off-CPU (blocked or preempted, in it or in a
	 * traced child) this long: 0 when blocking is not watched */
	uint64_t offcpu_ns;
	/* a task poll that a traced wake-up led to: the flow's id (the consumer's, for
	 * the exporters: Perfetto and Chrome draw an arrow from the wake); 0 none */
	uint64_t wake_flow;
	/* depth 0: the data of the waker it was polled with (std-wake matching), 0 */
	uint64_t waker_data;
	/* task_mode: "root (file:line) → … → innermost", valid only while it is being
	 * added (a writer that keeps it copies it under await_stack_id) */
	const char *await_stack;
	uint64_t await_stack_id;
};

/* A runtime task woken (its wake function entered). */
struct trace_wake {
	uint64_t time_ns;
	uint32_t pid, tid;
	uint8_t runtime; /* enum task_runtime */
	bool by_ref;
	uint16_t depth;
	uint64_t header;
	uint64_t vtable;     /* the header's vtable when it was woken, 0 if not read */
	uint64_t woken_self; /* the task's root future; 0: not known */
	uint64_t waker_self, waker_task_self, waker_start_ns;
	uint32_t waker_poll; /* the innermost open traced poll of the waking thread, or
				TRACE_NO_INDEX: not in a traced poll (I/O driver, timer, ...) */
};

/* A selected future dropped (drop_in_place::<F>); its fate from its __state. */
struct trace_drop {
	uint64_t time_ns;
	uint32_t pid, tid;
	uint32_t poll;	 /* its poll fn, TRACE_NO_INDEX if none */
	uint32_t future; /* model index */
	uint64_t self, state, task_self, dropper_self;
	uint32_t dropper_poll; /* the innermost open traced poll (who dropped it) */
	uint16_t depth;
	bool has_state;
	/* its __state was Suspend k: cancelled at await k (the exporters' instant); -1 */
	int32_t await_index;
};

/*
 * A target thread off-CPU inside a traced poll: blamed on the innermost open poll
 * (poll, depth, poll_start_ns identify it; its record comes later).
 */
struct trace_block {
	uint64_t start_ns, end_ns;
	uint32_t pid, tid;
	uint32_t poll;	 /* the innermost open poll's fn */
	uint32_t future; /* its future, TRACE_NO_INDEX if unknown */
	uint64_t self, task_self;
	uint64_t poll_start_ns;
	int32_t syscall; /* the syscall it blocked in; -1 none (a page fault, ...) */
	uint16_t depth;
	uint8_t kind; /* enum offcpu_kind: blocked, preempted, inside the tracer's probe */
};

/* The poll of its task's root future itself (not a future within the task). */
static inline bool trace_poll__is_task_root(const struct trace_poll *p)
{
	return p->poll == p->task_poll && p->self == p->task_self;
}

/* Its duration less the probes inside it (probe_ns): the time the poll itself and
 * its descendants ran. The raw end_ns - start_ns stays for slices, which must nest. */
static inline uint64_t trace_poll__busy_ns(const struct trace_poll *p)
{
	uint64_t d = p->end_ns > p->start_ns ? p->end_ns - p->start_ns : 0;

	return d > p->probe_ns ? d - p->probe_ns : 0;
}

/* k of Suspend<k> for future f (a model index) whose raw __state is `state`, when the
 * model has that await; -1 otherwise (no __state, not suspended, f unknown). */
static inline int32_t trace__await_index(const struct model *m, int32_t f, uint64_t state)
{
	int32_t k;

	if (f < 0 || (uint32_t)f >= m->nr_futures || !m->futures[f].has_state ||
	    state < STATE_SUSPEND0_VALUE)
		return -1;
	k = (int32_t)(state - STATE_SUSPEND0_VALUE);
	return model__has_await(m, (uint32_t)f, k) ? k : -1;
}

/* What every output's metadata reports. */
struct trace_totals {
	uint64_t polls;	    /* records received */
	uint64_t dropped;   /* ring buffer reserve failures (BPF side) */
	uint64_t truncated; /* frames discarded by stack-pointer matching */
	uint64_t probes_attached, probes_failed;
	uint64_t duration_ns;
};

#endif
