// SPDX-License-Identifier: GPL-2.0
/*
 * Tasks for the summary (trace_tasks.h; docs/tracing.md, "Tasks"). A thread's records
 * arrive innermost first, so a task's deeper polls can arrive before its own depth-0
 * poll; a task finishes when its root future returns Ready (or panics), and an address
 * reused after that is a new task. Live tasks sit in slots (reused once finished); a
 * finished task is folded into its type's row and offered to a min-heap of the
 * busiest, so a long run with millions of short tasks keeps a bounded table.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace_tasks.h"

void task_table__init(struct task_table *t, uint32_t max_live, uint32_t keep)
{
	memset(t, 0, sizeof(*t));
	key_map__init(&t->live);
	u64_map__init(&t->type_index);
	t->max = max_live;
	t->keep = keep;
}

void task_table__free(struct task_table *t)
{
	key_map__free(&t->live);
	u64_map__free(&t->type_index);
	free(t->slots);
	free(t->free_slots);
	free(t->kept);
	free(t->types);
	memset(t, 0, sizeof(*t));
}

void task_table__set_roots(struct task_table *t, const uint8_t *roots, uint32_t nr)
{
	t->roots = roots;
	t->nr_roots = nr;
}

uint64_t task_summary__idle(const struct task_summary *t)
{
	uint64_t span;

	if (!t->has_own)
		return 0;
	span = t->last_end_ns - t->first_start_ns;
	return span > t->busy_ns ? span - t->busy_ns : 0;
}

/* Busier first; among equals, the one seen first. */
static bool busier(const struct task_summary *x, const struct task_summary *y)
{
	if (x->busy_ns != y->busy_ns)
		return x->busy_ns > y->busy_ns;
	return x->first_seen_ns < y->first_seen_ns;
}

static void heap_down(struct task_summary *h, uint32_t n, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		struct task_summary tmp;

		if (l < n && busier(&h[m], &h[l]))
			m = l;
		if (r < n && busier(&h[m], &h[r]))
			m = r;
		if (m == i)
			return;
		tmp = h[i];
		h[i] = h[m];
		h[m] = tmp;
		i = m;
	}
}

static void heap_up(struct task_summary *h, uint32_t i)
{
	while (i) {
		uint32_t p = (i - 1) / 2;
		struct task_summary tmp;

		if (!busier(&h[p], &h[i]))
			return;
		tmp = h[i];
		h[i] = h[p];
		h[p] = tmp;
		i = p;
	}
}

/* Among the `keep` busiest finished tasks? (heap[0] is the least busy kept) */
static int keep_if_busy(struct task_table *t, const struct task_summary *task)
{
	if (!t->keep)
		return 0;
	if (!t->kept && !(t->kept = malloc(t->keep * sizeof(*t->kept))))
		return -ENOMEM;
	if (t->nr_kept < t->keep) {
		t->kept[t->nr_kept] = *task;
		heap_up(t->kept, t->nr_kept++);
	} else if (busier(task, &t->kept[0])) {
		t->kept[0] = *task;
		heap_down(t->kept, t->nr_kept, 0);
	}
	return 0;
}

static struct task_type_row *type_of(struct task_table *t, uint32_t poll)
{
	uint64_t i;

	if (u64_map__get(&t->type_index, poll, &i))
		return &t->types[i];
	if (t->nr_types == t->cap_types) {
		uint32_t cap = t->cap_types ? t->cap_types * 2 : 16;
		struct task_type_row *n = realloc(t->types, cap * sizeof(*n));

		if (!n)
			return NULL;
		t->types = n;
		t->cap_types = cap;
	}
	if (u64_map__set(&t->type_index, poll, t->nr_types))
		return NULL;
	memset(&t->types[t->nr_types], 0, sizeof(t->types[0]));
	t->types[t->nr_types].poll = poll;
	return &t->types[t->nr_types++];
}

static void row_add(struct task_type_row *row, const struct task_summary *task)
{
	row->tasks++;
	row->completed += task->completed;
	row->own_polls += task->own_polls;
	row->all_polls += task->all_polls;
	row->busy_ns += task->busy_ns;
	row->idle_ns += task_summary__idle(task);
	if (task->busy_ns > row->max_busy_ns)
		row->max_busy_ns = task->busy_ns;
}

/* The task ended: into its type's row and, if busy enough, the kept ones; its slot
 * freed. */
static int task_finish(struct task_table *t, uint32_t slot)
{
	struct task_summary *task = &t->slots[slot];
	struct task_type_row *row = type_of(t, task->poll);

	task->finished = true;
	t->completed += task->completed;
	t->busy_ns += task->busy_ns;
	t->idle_ns += task_summary__idle(task);
	if (!row || keep_if_busy(t, task))
		return -ENOMEM;
	row_add(row, task);
	key_map__delete(&t->live, task->poll, task->self);
	if (t->nr_free == t->cap_free) {
		uint32_t cap = t->cap_free ? t->cap_free * 2 : 64;
		uint32_t *n = realloc(t->free_slots, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->free_slots = n;
		t->cap_free = cap;
	}
	t->free_slots[t->nr_free++] = slot;
	t->nr_live--;
	return 0;
}

static struct task_summary *task_new(struct task_table *t, const struct trace_poll *p, int *err)
{
	struct task_summary *task;
	uint32_t slot;

	bool reused = t->nr_free > 0;

	if (reused) {
		slot = t->free_slots[--t->nr_free];
	} else {
		if (t->nr_slots == t->cap_slots) {
			uint32_t cap = t->cap_slots ? t->cap_slots * 2 : 64;
			struct task_summary *n = realloc(t->slots, (size_t)cap * sizeof(*n));

			if (!n)
				goto oom;
			t->slots = n;
			t->cap_slots = cap;
		}
		slot = t->nr_slots++;
	}
	if (key_map__set(&t->live, p->task_poll, p->task_self, slot)) {
		if (reused)
			t->free_slots[t->nr_free++] = slot; /* back where it came from */
		else
			t->nr_slots--;
		goto oom;
	}
	task = &t->slots[slot];
	memset(task, 0, sizeof(*task));
	task->self = p->task_self;
	task->poll = p->task_poll;
	task->first_seen_ns = p->start_ns;
	t->nr_live++;
	t->count++;
	return task;
oom:
	*err = -ENOMEM;
	return NULL;
}

/* The live task p belongs to, or a new one; NULL past the cap. */
static struct task_summary *task_of(struct task_table *t, const struct trace_poll *p,
				    uint32_t *slot, int *err)
{
	struct task_summary *task;
	uint64_t idx;

	if (key_map__get(&t->live, p->task_poll, p->task_self, &idx)) {
		*slot = (uint32_t)idx;
		return &t->slots[idx];
	}
	if (t->nr_live >= t->max) {
		/* distinct untracked tasks cannot be told apart; their ends can */
		if (trace_poll__is_task_root(p) &&
		    (p->result == POLL_READY || p->result == POLL_PANICKED))
			t->untracked_tasks++;
		return NULL;
	}
	task = task_new(t, p, err);
	if (task)
		*slot = (uint32_t)(task - t->slots);
	return task;
}

int task_table__add(struct task_table *t, const struct trace_poll *p)
{
	int err = 0;
	struct task_summary *task;
	uint64_t d = trace_poll__busy_ns(p);
	uint32_t slot = 0;

	if (t->roots && (p->task_poll >= t->nr_roots || !t->roots[p->task_poll])) {
		/* a future within a task whose root future is not traced */
		t->outside_polls++;
		if (p->depth == 0)
			t->outside_ns += d; /* at its outermost traced frame */
		return 0;
	}
	if (!(task = task_of(t, p, &slot, &err))) {
		t->untracked_polls++;
		t->oom |= err != 0;
		return err;
	}
	task->all_polls++;
	if (p->start_ns < task->first_seen_ns)
		task->first_seen_ns = p->start_ns;
	if (p->end_ns > task->last_seen_ns)
		task->last_seen_ns = p->end_ns;
	if (!trace_poll__is_task_root(p))
		return 0;
	task->own_polls++;
	task->busy_ns += d;
	if (!task->has_own || p->start_ns < task->first_start_ns)
		task->first_start_ns = p->start_ns;
	if (!task->has_own || p->end_ns > task->last_end_ns)
		task->last_end_ns = p->end_ns;
	task->has_own = true;
	if (p->result == POLL_READY || p->result == POLL_PANICKED) {
		task->completed = p->result == POLL_READY;
		if ((err = task_finish(t, slot)))
			t->oom = true;
	}
	return err;
}

static int cmp_busier(const void *a, const void *b)
{
	const struct task_summary *x = a, *y = b;

	return busier(x, y) ? -1 : busier(y, x) ? 1 : 0;
}

/* Is slot i live (not on the free list)? */
static bool slot_live(const struct task_table *t, uint32_t i)
{
	uint64_t idx;

	return key_map__get(&t->live, t->slots[i].poll, t->slots[i].self, &idx) && idx == i &&
	       !t->slots[i].finished;
}

struct task_summary *task_table__list(const struct task_table *t, uint32_t *n)
{
	uint32_t cap = t->nr_kept + t->nr_live, k = 0;
	struct task_summary *v;

	*n = 0;
	if (!cap || !(v = malloc(cap * sizeof(*v))))
		return NULL;
	for (uint32_t i = 0; i < t->nr_kept; i++)
		v[k++] = t->kept[i];
	for (uint32_t i = 0; i < t->nr_slots && k < cap; i++)
		if (slot_live(t, i))
			v[k++] = t->slots[i];
	qsort(v, k, sizeof(*v), cmp_busier);
	*n = k < t->keep ? k : t->keep;
	return v;
}

static int cmp_row_busier(const void *a, const void *b)
{
	const struct task_type_row *x = a, *y = b;

	if (x->busy_ns != y->busy_ns)
		return x->busy_ns > y->busy_ns ? -1 : 1;
	return x->tasks > y->tasks ? -1 : x->tasks < y->tasks;
}

struct task_type_row *task_table__types(const struct task_table *t, uint32_t *n)
{
	struct task_type_row *v;
	struct u64_map at;
	uint32_t k = t->nr_types;
	uint64_t idx;

	*n = 0;
	if (!(v = malloc((t->nr_types + t->nr_live + 1) * sizeof(*v))))
		return NULL;
	if (t->nr_types)
		memcpy(v, t->types, t->nr_types * sizeof(*v));
	u64_map__init(&at);
	for (uint32_t i = 0; i < t->nr_types; i++)
		if (u64_map__set(&at, v[i].poll, i))
			goto oom;
	for (uint32_t i = 0; i < t->nr_slots; i++) {
		if (!slot_live(t, i))
			continue;
		if (!u64_map__get(&at, t->slots[i].poll, &idx)) {
			idx = k;
			memset(&v[k], 0, sizeof(v[k]));
			v[k].poll = t->slots[i].poll;
			if (u64_map__set(&at, v[k++].poll, idx))
				goto oom;
		}
		row_add(&v[idx], &t->slots[i]);
	}
	u64_map__free(&at);
	qsort(v, k, sizeof(*v), cmp_row_busier);
	*n = k;
	return v;
oom:
	u64_map__free(&at);
	free(v);
	return NULL;
}

uint64_t task_table__busy_ns(const struct task_table *t)
{
	uint64_t ns = t->busy_ns;

	for (uint32_t i = 0; i < t->nr_slots; i++)
		if (slot_live(t, i))
			ns += t->slots[i].busy_ns;
	return ns;
}

uint64_t task_table__idle_ns(const struct task_table *t)
{
	uint64_t ns = t->idle_ns;

	for (uint32_t i = 0; i < t->nr_slots; i++)
		if (slot_live(t, i))
			ns += task_summary__idle(&t->slots[i]);
	return ns;
}
