/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tasks for the trace summary: a task is the outermost traced frame (task_poll,
 * task_self) of the records; its polls, busy and idle time. Pure; knows nothing of
 * the summary that uses it.
 */
#ifndef ASYNCBPF_TRACE_TASKS_H
#define ASYNCBPF_TRACE_TASKS_H

#include <stdbool.h>
#include <stdint.h>

#include "model/trace_event.h"
#include "trace/key_map.h"

/* A task: the outermost traced frame (task_poll, task_self) of the records. */
struct task_summary {
	uint64_t self;
	uint32_t poll;
	bool completed;			      /* its depth-0 future returned Ready */
	bool has_own;			      /* at least one depth-0 poll arrived */
	uint64_t own_polls;		      /* depth-0 polls */
	uint64_t all_polls;		      /* every poll under it, its own included */
	uint64_t busy_ns;		      /* sum of its depth-0 polls' durations */
	uint64_t first_start_ns, last_end_ns; /* of its depth-0 polls */
	uint64_t first_seen_ns, last_seen_ns; /* of any poll under it */
};

struct task_table {
	struct key_map live; /* (task_poll, task_self) -> index in tasks, until it completes */
	struct task_summary *tasks;
	uint32_t nr, cap, max;
	uint64_t untracked_polls; /* polls of tasks past the cap */
	uint64_t untracked_tasks; /* tasks past the cap that ended (Ready or panicked) */
};

void task_table__init(struct task_table *t, uint32_t max);
void task_table__free(struct task_table *t);
/* Count p in its task (a new one unless past the cap: then counted untracked). 0 or
 * -ENOMEM (p's task could not be stored). */
int task_table__add(struct task_table *t, const struct trace_poll *p);
/* Indexes of tasks by busy time, busiest first (caller frees); NULL on ENOMEM. */
uint32_t *task_table__by_busy(const struct task_table *t);
/* Idle time: depth-0 span minus busy (0 without depth-0 polls). */
uint64_t task_summary__idle(const struct task_summary *t);

#endif
