/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tasks for the trace summary (docs/tracing.md, "Tasks"). A task is a runtime's task:
 * its root future (a tokio or async-task task type's future, the first traced future
 * a runtime's wrapper awaits, the future a block_on polls) polled at depth 0. The
 * outermost traced frame of a record whose future is no task root is a future within
 * a task whose root is not traced: counted, not made a task. A binary whose runtime
 * the analyzer does not know (a hand-written executor) has no roots to go by: there
 * the outermost traced frame is the task.
 *
 * Memory is bounded on a long run: live tasks up to a cap (polls past it counted), a
 * finished task folded into its type's row and kept only if it is among the `keep`
 * busiest. Pure; knows nothing of the summary that uses it.
 */
#ifndef ASYNCBPF_TRACE_TASKS_H
#define ASYNCBPF_TRACE_TASKS_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/hashmap.h"
#include "model/trace_event.h"
#include "trace/key_map.h"

/* A task: its root future's poll fn and address (task_poll, task_self). */
struct task_summary {
	uint64_t self;
	uint32_t poll;
	bool completed;			      /* its depth-0 future returned Ready */
	bool finished;			      /* Ready or panicked */
	bool has_own;			      /* at least one depth-0 poll arrived */
	uint64_t own_polls;		      /* depth-0 polls */
	uint64_t all_polls;		      /* every poll under it, its own included */
	uint64_t busy_ns;		      /* sum of its depth-0 polls' durations */
	uint64_t first_start_ns, last_end_ns; /* of its depth-0 polls */
	uint64_t first_seen_ns, last_seen_ns; /* of any poll under it */
};

/* The tasks of one root future (poll fn), finished and live. */
struct task_type_row {
	uint32_t poll;
	uint64_t tasks, completed, own_polls, all_polls, busy_ns, idle_ns;
	uint64_t max_busy_ns; /* the busiest one task */
};

struct task_table {
	struct key_map live; /* (task_poll, task_self) -> slot, until the task finishes */
	struct task_summary *slots;
	uint32_t nr_slots, cap_slots;
	uint32_t *free_slots;
	uint32_t nr_free, cap_free;
	uint32_t nr_live, max; /* live tasks, and their cap */
	/* the `keep` busiest finished tasks: a min-heap on busy time */
	struct task_summary *kept;
	uint32_t nr_kept, keep;
	/* finished tasks by root poll fn */
	struct u64_map type_index; /* poll -> index in types */
	struct task_type_row *types;
	uint32_t nr_types, cap_types;
	const uint8_t *roots; /* by poll fn: a depth-0 poll of it is a task's root; NULL: all */
	uint32_t nr_roots;
	uint64_t count, completed;	    /* tasks seen, and of them completed */
	uint64_t busy_ns, idle_ns;	    /* over the finished ones */
	uint64_t untracked_polls;	    /* polls of tasks past the live cap */
	uint64_t untracked_tasks;	    /* tasks past the cap that finished */
	uint64_t outside_polls, outside_ns; /* polls in tasks whose root is not traced, and
					     * the busy time of those at depth 0 */
	bool oom;
};

void task_table__init(struct task_table *t, uint32_t max_live, uint32_t keep);
void task_table__free(struct task_table *t);
/* Which poll fns are task roots (roots[nr], by model poll; kept by reference). */
void task_table__set_roots(struct task_table *t, const uint8_t *roots, uint32_t nr);
/* Count p in its task (a new one unless past the cap: then counted untracked). 0 or
 * -ENOMEM (p's task could not be stored). */
int task_table__add(struct task_table *t, const struct trace_poll *p);
/* The busiest `keep` tasks, finished or live, busiest first: a malloc'd copy (*n of
 * them), NULL on ENOMEM (or none). */
struct task_summary *task_table__list(const struct task_table *t, uint32_t *n);
/* Tasks by root future, finished and live, busiest first: malloc'd, *n rows. */
struct task_type_row *task_table__types(const struct task_table *t, uint32_t *n);
/* Tasks now live (not finished), busy and idle of every task seen (finished + live). */
uint64_t task_table__busy_ns(const struct task_table *t);
uint64_t task_table__idle_ns(const struct task_table *t);
/* Idle time: depth-0 span minus busy (0 without depth-0 polls). */
uint64_t task_summary__idle(const struct task_summary *t);

#endif
