/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Task mode's records (docs/tracing.md, "Task mode"): each task poll sends its task's
 * future tree at the poll's start and at its end (bpf/trace_task.bpf.h). This pairs
 * them per thread and reads what happened to every future from the two trees. Pure:
 * unit-tested on hand-made trees.
 *
 * What the two trees tell, per future (a node: its type and address):
 *  - polled: in either tree (the task's poll went through it, or started it);
 *  - pending at await k: in the end tree, a compiler future in Suspend<k>;
 *  - ready: it left the tree while the task lives on, and its parent stayed and
 *    moved on (a compiler future leaves an await only when what it awaits returned
 *    Ready), or its parent left too and was ready; or the task's future itself is
 *    gone (the task returned Ready) and it was on the path to the root;
 *  - ended: it left the tree and the trees cannot say how (its parent is a
 *    hand-written future, which may have dropped it: a select!'s losing branch, a
 *    timeout's inner future). Per-future tracing's drop probes tell these apart.
 * Per-future durations are not in the trees: a task poll has one duration.
 */
#ifndef ASYNCBPF_TRACE_TASK_TREES_H
#define ASYNCBPF_TRACE_TASK_TREES_H

#include <stdbool.h>
#include <stdint.h>

#include "asyncbpf.h"
#include "lib/hashmap.h"
#include "model/model.h"

/* A task_tree_record, decoded. */
struct task_tree {
	uint8_t phase; /* enum task_tree_phase */
	uint8_t flags; /* TASK_TREE_* */
	uint8_t nested;
	uint32_t pid, tid;
	uint64_t header, start_ns, end_ns, offcpu_ns;
	uint32_t info; /* model task type, UINT32_MAX unknown */
	uint16_t cut_nodes, cut_depth;
	bool concurrent; /* (a start) another thread's poll of this task ended meanwhile */
	uint32_t nr;
	struct task_tree_node nodes[TASK_TREE_MAX_NODES];
};

/* What one task poll did to one future. */
enum task_future_fate {
	TASK_FUTURE_PENDING, /* still in the tree at the end */
	TASK_FUTURE_READY,   /* left the tree, provably Ready */
	TASK_FUTURE_ENDED,   /* left the tree, Ready or dropped: not known which */
};

struct task_future_event {
	int32_t future;
	uint64_t addr;
	uint32_t depth;
	bool started;	     /* not in the start tree: its first poll was in this task poll */
	uint8_t fate;	     /* enum task_future_fate */
	int32_t await_index; /* PENDING compiler future: k of its Suspend<k>; else -1 */
	uint64_t discr;	     /* its state at the end (PENDING) or start (else) */
	bool went_back;	     /* PENDING async fn at an earlier await than at the start */
};

/* One task poll: both trees and what happened to each future. */
struct task_poll {
	uint32_t pid, tid;
	uint64_t header, start_ns, end_ns, offcpu_ns;
	uint32_t info;	    /* task type (model), UINT32_MAX unknown */
	uint8_t nested;	    /* task polls open below it on its thread */
	int32_t root;	    /* the task's root future (model), -1 unknown */
	bool completed;	    /* the task's future is gone: it returned Ready, or was
			     * dropped (cancelled) */
	bool cancelled;	    /* completed, and the runtime's cancel flag was set when the
			     * poll began, or the end says a cancel that came while it ran
			     * dropped the future (an abort), not Ready */
	bool unsure;	    /* completed with the cancel flag set, and whether Ready or
			     * cancelled could not be told (TASK_TREE_END_UNSURE) */
	bool concurrent;    /* another thread polled the same task to its end while this
			     * poll was open: its trees span that poll's work, not only its
			     * own; what they say is counted apart */
	bool finished;	    /* its future was gone already when the poll began
			     * (TASK_TREE_GONE_AT_START): a poll of a finished task (a
			     * runtime polls a task woken meanwhile, and finds it done):
			     * no events, no task */
	bool lost;	    /* its exit was never seen (an unwind): no end tree */
	bool not_read;	    /* its tree was not read (TASK_TREE_NOT_READ): no events */
	bool first;	    /* no tree of the task before it (its first poll since tracing
			     * began, or a new task at a freed task's header) */
	bool cut;	    /* a tree was cut (nodes or depth) */
	uint32_t nr_events; /* events[]: the union of both trees */
	struct task_future_event events[2 * TASK_TREE_MAX_NODES];
	const struct task_tree *start, *end; /* the trees (valid during the callback) */
};

int task_tree__decode(const void *data, size_t size, struct task_tree *out);

struct task_trees;

/* root_types (may be NULL): the plan's root futures, task types nr_task_types + k
 * (trace_plan.root_types); kept, not copied. */
struct task_trees *task_trees__new(const struct model *m, const uint32_t *root_types,
				   uint32_t nr_root_types);
/*
 * A record: a start tree is kept until its end; an end (or lost) one makes the task
 * poll, handed to fn. 0, or -ENOMEM (the record is dropped, counted).
 */
int task_trees__add(struct task_trees *t, const struct task_tree *tree,
		    void (*fn)(void *ctx, const struct task_poll *p), void *ctx);
/* Start trees still waiting for their end (task polls running when tracing stopped). */
uint32_t task_trees__open(const struct task_trees *t);
/* Ends without a start (a start lost to a full ring buffer, or before attach). */
uint64_t task_trees__unmatched(const struct task_trees *t);
void task_trees__free(struct task_trees *t);

/* What the two trees say of one task poll (task_poll.events), from its trees. Pure. */
void task_poll__diff(const struct model *m, const struct task_tree *start,
		     const struct task_tree *end, struct task_poll *out);

#endif
