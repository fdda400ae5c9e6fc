// SPDX-License-Identifier: GPL-2.0
/*
 * The summary's wake-ups (docs/tracing.md, "Wake-ups"): a wake of a task is kept
 * until the task's next depth-0 poll (its root future's self is the wake's
 * woken_self); the time between them is the task's scheduling delay. Per task type:
 * wakes, self-wakes (the task woke itself: yield_now), the delays, and who woke it
 * (the waker thread's innermost traced poll, or none: the I/O driver, a timer, a
 * thread that polls nothing traced).
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "trace/trace_summary.h"

/* A task's wakes not yet followed by its poll, oldest first (a few: more are merged). */
#define WAKE_QUEUE 4

struct pending_wake {
	struct trace_wake w[WAKE_QUEUE];
	uint32_t n;
	uint32_t merged; /* wakes past WAKE_QUEUE, merged into the newest */
};

void trace_summary__set_wakes(struct trace_summary *s, bool watched)
{
	s->wakes_watched = watched;
}

void trace_summary__add_wake(struct trace_summary *s, const struct trace_wake *w)
{
	uint64_t i = 0;
	struct pending_wake *pw;

	if (s->task_mode) { /* a task is its header: trace_summary_tasks.c links them */
		s->wakes++;
		summary_tasks__add_wake(s, w);
		return;
	}
	s->wakes++;
	/* std's Wake: the task is known by its waker's data only (its next poll's) */
	uint64_t key = w->runtime == TASK_RT_STD_WAKE ? w->header : w->woken_self;
	if (!key) {
		s->wakes_unknown++;
		return;
	}
	if (!u64_map__get(&s->pending_wakes, key, &i) || !i) {
		if (s->nr_waits == s->cap_waits) {
			uint32_t cap = s->cap_waits ? s->cap_waits * 2 : 64;
			struct pending_wake *n = realloc(s->waits, cap * sizeof(*n));

			if (!n) {
				s->oom = true;
				return;
			}
			s->waits = n;
			s->cap_waits = cap;
		}
		i = ++s->nr_waits;
		if (u64_map__set(&s->pending_wakes, key, i)) {
			s->nr_waits--;
			s->oom = true;
			return;
		}
		memset(&s->waits[i - 1], 0, sizeof(s->waits[0]));
	}
	pw = &s->waits[i - 1];
	if (pw->n == WAKE_QUEUE) { /* woken again and again before it ran: merged */
		pw->merged++;
		return;
	}
	pw->w[pw->n++] = *w;
}

/* Count a wake by poll fn `poll`, keeping the wakers most numerous first. */
static void add_waker(struct wake_summary *ws, uint32_t poll)
{
	for (uint32_t i = 0; i < ws->nr_wakers; i++)
		if (ws->wakers[i].poll == poll) {
			ws->wakers[i].count++;
			for (; i && ws->wakers[i].count > ws->wakers[i - 1].count; i--) {
				__typeof__(ws->wakers[0]) tmp = ws->wakers[i - 1];

				ws->wakers[i - 1] = ws->wakers[i];
				ws->wakers[i] = tmp;
			}
			return;
		}
	if (ws->nr_wakers < SUMMARY_WAKERS) {
		ws->wakers[ws->nr_wakers].poll = poll;
		ws->wakers[ws->nr_wakers++].count = 1;
		return;
	}
	ws->wakers_other++;
}

/* The task's wakes before this poll began: the first one leads to it, the others
 * (woken again before it ran) are coalesced; later ones wait for the next poll. */
static struct pending_wake *queue_of(struct trace_summary *s, uint64_t key, uint64_t start)
{
	uint64_t i;

	if (!key || !u64_map__get(&s->pending_wakes, key, &i) || !i)
		return NULL;
	struct pending_wake *pw = &s->waits[i - 1];
	return pw->n && pw->w[0].time_ns <= start ? pw : NULL;
}

uint64_t summary_wake__poll(struct trace_summary *s, const struct trace_poll *p,
			    struct trace_wake *w)
{
	struct pending_wake *pw;
	struct wake_summary *ws;
	uint32_t used = 0;

	if (!trace_poll__is_task_root(p))
		return 0;
	/* the task by its future (runtimes), else by its waker's data (std's Wake) */
	if (!(pw = queue_of(s, p->self, p->start_ns)) &&
	    !(pw = queue_of(s, p->waker_data, p->start_ns)))
		return 0;
	*w = pw->w[0];
	while (used < pw->n && pw->w[used].time_ns <= p->start_ns)
		used++;
	ws = &s->polls[p->poll].wake;
	ws->wakes++;
	ws->coalesced += used - 1 + (used == pw->n ? pw->merged : 0);
	if (used == pw->n)
		pw->merged = 0;
	memmove(pw->w, pw->w + used, (pw->n - used) * sizeof(pw->w[0]));
	pw->n -= used;
	if (w->waker_task_self == p->self)
		ws->self_wakes++;
	else if (u64_vec__push(&ws->delays, p->start_ns - w->time_ns))
		s->oom = true;
	add_waker(ws, w->waker_poll);
	return ++s->wake_flows;
}

uint64_t summary_wake__unmatched(const struct trace_summary *s)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < s->nr_waits; i++)
		n += s->waits[i].n;
	return n;
}

void summary_wake__free(struct trace_summary *s)
{
	for (uint32_t p = 0; s->polls && p < s->m->nr_polls; p++)
		free(s->polls[p].wake.delays.v);
	u64_map__free(&s->pending_wakes);
	free(s->waits);
	s->waits = NULL;
	s->nr_waits = s->cap_waits = 0;
}

void summary_wake__print_sample(const struct trace_summary *s, FILE *out)
{
	const struct wake_sample *w = &s->wake_sample;

	if (!s->wakes_watched || !s->wakes_sampled)
		return;
	fprintf(out,
		"wake-ups sampled: wake probes attached %.1f%% of the time (%u windows, "
		"%.1f of %.1f s; %.0f%% planned); wake counts and delays are from those "
		"windows only (--wake-sample 100 watches every wake); %.1f ms spent "
		"attaching and detaching them\n",
		w->run_ns ? 100.0 * (double)w->on_ns / (double)w->run_ns : 0.0, w->windows,
		(double)w->on_ns / 1e9, (double)w->run_ns / 1e9, 100 * w->fraction,
		(double)w->toggle_ns / 1e6);
	if (w->failures)
		fprintf(out,
			"WARNING: %u windows were skipped: attaching the wake probes failed "
			"(%s)\n",
			w->failures, strerror(-w->last_error));
}

void summary_wake__json_sample(const struct trace_summary *s, cJSON *wk)
{
	const struct wake_sample *w = &s->wake_sample;
	cJSON *o;

	if (!s->wakes_watched)
		return;
	o = cJSON_AddObjectToObject(wk, "sample");
	if (!o)
		return;
	cJSON_AddBoolToObject(o, "sampled", s->wakes_sampled);
	if (!s->wakes_sampled)
		return;
	cJSON_AddNumberToObject(o, "fraction_planned", w->fraction);
	cJSON_AddNumberToObject(o, "attached_s", (double)w->on_ns / 1e9);
	cJSON_AddNumberToObject(o, "run_s", (double)w->run_ns / 1e9);
	cJSON_AddNumberToObject(o, "windows", w->windows);
	cJSON_AddNumberToObject(o, "failed_windows", w->failures);
	cJSON_AddNumberToObject(o, "toggle_ms", (double)w->toggle_ns / 1e6);
}
