// SPDX-License-Identifier: GPL-2.0
/*
 * Tasks for the summary (docs/tracing.md, "Summary"): a task is the outermost
 * traced frame of the records, (task_poll, task_self). A thread's records arrive
 * innermost first, so a task's deeper polls can arrive before its own depth-0 poll;
 * a task ends when its depth-0 future returns Ready (or panics), and an address
 * reused after that is a new task. At most `max` tasks are kept; polls of tasks past
 * that are counted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace_tasks.h"

void task_table__init(struct task_table *t, uint32_t max)
{
	memset(t, 0, sizeof(*t));
	key_map__init(&t->live);
	t->max = max;
}

void task_table__free(struct task_table *t)
{
	key_map__free(&t->live);
	free(t->tasks);
	memset(t, 0, sizeof(*t));
}

static struct task_summary *task_new(struct task_table *t, const struct trace_poll *p, int *err)
{
	struct task_summary *task;

	if (t->nr == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 64;
		struct task_summary *n = realloc(t->tasks, (size_t)cap * sizeof(*n));

		if (!n)
			goto oom;
		t->tasks = n;
		t->cap = cap;
	}
	if (key_map__set(&t->live, p->task_poll, p->task_self, t->nr))
		goto oom;
	task = &t->tasks[t->nr++];
	memset(task, 0, sizeof(*task));
	task->self = p->task_self;
	task->poll = p->task_poll;
	task->first_seen_ns = p->start_ns;
	return task;
oom:
	*err = -ENOMEM;
	return NULL;
}

/* The live task p belongs to, or a new one; NULL past the cap. */
static struct task_summary *task_of(struct task_table *t, const struct trace_poll *p, int *err)
{
	uint64_t idx;

	if (key_map__get(&t->live, p->task_poll, p->task_self, &idx))
		return &t->tasks[idx];
	if (t->nr >= t->max) {
		/* distinct untracked tasks cannot be told apart; their ends can */
		if (p->depth == 0 && (p->result == POLL_READY || p->result == POLL_PANICKED))
			t->untracked_tasks++;
		return NULL;
	}
	return task_new(t, p, err);
}

static void task_own_poll(struct task_summary *task, const struct trace_poll *p, uint64_t d)
{
	task->own_polls++;
	task->busy_ns += d;
	if (!task->has_own || p->start_ns < task->first_start_ns)
		task->first_start_ns = p->start_ns;
	if (!task->has_own || p->end_ns > task->last_end_ns)
		task->last_end_ns = p->end_ns;
	task->has_own = true;
}

int task_table__add(struct task_table *t, const struct trace_poll *p)
{
	int err = 0;
	struct task_summary *task = task_of(t, p, &err);
	uint64_t d = trace_poll__busy_ns(p);

	if (!task) {
		t->untracked_polls++;
		return err;
	}
	task->all_polls++;
	if (p->start_ns < task->first_seen_ns)
		task->first_seen_ns = p->start_ns;
	if (p->end_ns > task->last_seen_ns)
		task->last_seen_ns = p->end_ns;
	if (p->depth != 0)
		return 0;
	task_own_poll(task, p, d);
	if (p->result == POLL_READY || p->result == POLL_PANICKED) {
		task->completed = p->result == POLL_READY;
		key_map__delete(&t->live, p->task_poll, p->task_self);
	}
	return 0;
}

uint64_t task_summary__idle(const struct task_summary *t)
{
	uint64_t span;

	if (!t->has_own)
		return 0;
	span = t->last_end_ns - t->first_start_ns;
	return span > t->busy_ns ? span - t->busy_ns : 0;
}

static int cmp_task_busy(const void *a, const void *b, void *ctx)
{
	const struct task_summary *tasks = ctx;
	const struct task_summary *x = &tasks[*(const uint32_t *)a],
				  *y = &tasks[*(const uint32_t *)b];

	if (x->busy_ns != y->busy_ns)
		return x->busy_ns > y->busy_ns ? -1 : 1;
	return x->first_seen_ns < y->first_seen_ns ? -1 : x->first_seen_ns > y->first_seen_ns;
}

uint32_t *task_table__by_busy(const struct task_table *t)
{
	uint32_t *order = malloc((t->nr ? t->nr : 1) * sizeof(*order));

	if (!order)
		return NULL;
	for (uint32_t i = 0; i < t->nr; i++)
		order[i] = i;
	qsort_r(order, t->nr, sizeof(*order), cmp_task_busy, t->tasks);
	return order;
}
