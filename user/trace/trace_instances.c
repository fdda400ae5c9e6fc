// SPDX-License-Identifier: GPL-2.0
/*
 * Future instances for the summary (docs/tracing.md, "Summary"): an instance is its
 * poll fn and `self` while it lives (a pinned future does not move). Its lifetime runs
 * from its first poll's start to the end of the poll that returned Ready; an address
 * polled again after that is a new instance. What is still live at the end is
 * grouped by future type and await point. At most `max` instances are live at once;
 * polls of instances past that are counted, not tracked.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace_instances.h"

/* ---- instances ---- */

void instance_table__init(struct instance_table *t, uint32_t max)
{
	memset(t, 0, sizeof(*t));
	key_map__init(&t->index);
	t->max = max;
}

void instance_table__free(struct instance_table *t)
{
	key_map__free(&t->index);
	free(t->instances);
	memset(t, 0, sizeof(*t));
}

/* A new live instance, or NULL past the cap or without memory. */
static struct summary_instance *instance_new(struct instance_table *t, const struct trace_poll *p,
					     struct instance_update *u)
{
	struct summary_instance *in;

	if (t->nr >= t->max)
		return NULL;
	if (t->nr == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 256;
		struct summary_instance *n = realloc(t->instances, (size_t)cap * sizeof(*n));

		if (!n)
			goto oom;
		t->instances = n;
		t->cap = cap;
	}
	if (key_map__set(&t->index, p->poll, p->self, t->nr))
		goto oom;
	in = &t->instances[t->nr++];
	memset(in, 0, sizeof(*in));
	in->self = p->self;
	in->poll = p->poll;
	in->first_start_ns = p->start_ns;
	in->await_index = -1;
	return in;
oom:
	u->oom = true;
	return NULL;
}

/* Forget an instance: the last one takes its place. */
static void instance_end(struct instance_table *t, struct summary_instance *in)
{
	uint32_t idx = (uint32_t)(in - t->instances);
	struct summary_instance *last = &t->instances[t->nr - 1];

	key_map__delete(&t->index, in->poll, in->self);
	if (in != last) {
		*in = *last;
		key_map__set(&t->index, in->poll, in->self, idx); /* exists: cannot fail */
	}
	t->nr--;
}

bool instance_table__drop(struct instance_table *t, uint32_t poll, uint64_t self,
			  uint8_t *last_result, int32_t *await_index)
{
	uint64_t idx;

	if (!key_map__get(&t->index, poll, self, &idx) || idx >= t->nr)
		return false;
	*last_result = t->instances[idx].last_result;
	*await_index = t->instances[idx].await_index;
	instance_end(t, &t->instances[idx]);
	return true;
}

/* The discriminant of Unresumed, if the future has a __state (else false). */
static bool unresumed_discr(const struct model *m, uint32_t poll, uint64_t *discr)
{
	int32_t fi = m->polls[poll].future;
	const struct future *f;

	if (fi < 0 || (uint32_t)fi >= m->nr_futures)
		return false;
	f = &m->futures[fi];
	if (!f->has_state)
		return false;
	for (uint32_t i = 0; i < f->nr_states; i++) {
		if (f->states[i].kind == STATE_UNRESUMED) {
			*discr = f->states[i].discr;
			return true;
		}
	}
	return false;
}

/*
 * A compiler future is Unresumed only before its first poll: an existing instance
 * found Unresumed again was dropped and its memory holds a new future of the type.
 */
static bool instance_restarted(const struct model *m, const struct trace_poll *p)
{
	uint64_t discr;

	return unresumed_discr(m, p->poll, &discr) && p->state_before == discr;
}

void instance_table__add(struct instance_table *t, const struct model *m,
			 const struct trace_poll *p, struct instance_update *u)
{
	struct summary_instance *in = NULL;
	uint64_t idx, d = trace_poll__busy_ns(p);

	memset(u, 0, sizeof(*u));
	if (key_map__get(&t->index, p->poll, p->self, &idx)) {
		in = &t->instances[idx];
		if (instance_restarted(m, p)) {
			if (in->last_result == POLL_PENDING)
				u->abandoned = true; /* dropped unfinished */
			instance_end(t, in);
			in = NULL;
		}
	}
	if (!in) {
		uint64_t discr;

		in = instance_new(t, p, u);
		/* started before tracing did (-p): its first poll was not traced */
		if (in && unresumed_discr(m, p->poll, &discr) && p->state_before != discr)
			in->started_before = 1;
	}
	if (!in) {
		t->untracked_polls++;
		return;
	}
	in->polls++;
	in->busy_ns += d;
	in->last_result = (uint8_t)p->result;
	/* a running poll keeps the await point it resumed from */
	if (p->result != POLL_OPEN)
		in->await_index = p->result == POLL_PENDING ? p->await_index : -1;
	if (p->result == POLL_READY) {
		uint64_t life = p->end_ns > in->first_start_ns ? p->end_ns - in->first_start_ns : 0;

		if (in->started_before) {
			u->started_before = true;
		} else {
			u->lifetime = true;
			u->life_ns = life;
		}
		instance_end(t, in);
	} else if (p->result == POLL_PANICKED) {
		instance_end(t, in); /* never polled again */
	}
}

/* ---- pending at the end ---- */

static int cmp_group_key(const void *a, const void *b)
{
	const struct pending_group *x = a, *y = b;

	if (x->poll != y->poll)
		return x->poll < y->poll ? -1 : 1;
	if (x->result != y->result)
		return x->result < y->result ? -1 : 1;
	return x->await_index < y->await_index ? -1 : x->await_index > y->await_index;
}

static int cmp_group_count(const void *a, const void *b)
{
	const struct pending_group *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return cmp_group_key(a, b);
}

/* Merge equal keys of sorted groups; returns the new count. */
static uint32_t merge_groups(struct pending_group *g, uint32_t nr)
{
	uint32_t out = 0;

	for (uint32_t i = 0; i < nr; i++) {
		if (out && !cmp_group_key(&g[out - 1], &g[i]))
			g[out - 1].count += g[i].count;
		else
			g[out++] = g[i];
	}
	return out;
}

int instance_table__pending(const struct instance_table *t, struct pending_report *r)
{
	memset(r, 0, sizeof(*r));
	r->groups = calloc(t->nr ? t->nr : 1, sizeof(*r->groups));
	if (!r->groups)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->nr; i++) {
		const struct summary_instance *in = &t->instances[i];
		struct pending_group *g;

		if (in->last_result == POLL_TRUNCATED) {
			r->truncated++;
			continue;
		}
		if (in->last_result != POLL_PENDING && in->last_result != POLL_OPEN) {
			r->unknown++;
			continue;
		}
		g = &r->groups[r->nr++];
		g->poll = in->poll;
		g->result = in->last_result;
		g->await_index = in->await_index;
		g->count = 1;
		if (in->last_result == POLL_PENDING)
			r->pending++;
		else
			r->running++;
	}
	qsort(r->groups, r->nr, sizeof(*r->groups), cmp_group_key);
	r->nr = merge_groups(r->groups, r->nr);
	qsort(r->groups, r->nr, sizeof(*r->groups), cmp_group_count);
	return 0;
}

void pending_report__free(struct pending_report *r)
{
	free(r->groups);
	memset(r, 0, sizeof(*r));
}
