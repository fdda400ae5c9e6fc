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

#include "trace/trace_summary.h"

struct pending_wake {
	struct trace_wake w;
	uint32_t more; /* wakes after the first, before the poll */
	bool live;
};

void trace_summary__set_wakes(struct trace_summary *s, bool watched)
{
	s->wakes_watched = watched;
}

void trace_summary__add_wake(struct trace_summary *s, const struct trace_wake *w)
{
	uint64_t i = 0;
	bool known;

	s->wakes++;
	if (!w->woken_self) {
		s->wakes_unknown++;
		return;
	}
	known = u64_map__get(&s->pending_wakes, w->woken_self, &i) && i;
	if (known && s->waits[i - 1].live) {
		s->waits[i - 1].more++; /* woken again before it ran: the first one counts */
		return;
	}
	if (!known) { /* a slot of its own, kept for the task's next wakes */
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
		if (u64_map__set(&s->pending_wakes, w->woken_self, i)) {
			s->nr_waits--;
			s->oom = true;
			return;
		}
	}
	s->waits[i - 1] = (struct pending_wake){.w = *w, .live = true};
}

static void add_waker(struct wake_summary *ws, uint32_t poll)
{
	for (uint32_t i = 0; i < ws->nr_wakers; i++)
		if (ws->wakers[i].poll == poll) {
			ws->wakers[i].count++;
			return;
		}
	if (ws->nr_wakers < SUMMARY_WAKERS) {
		ws->wakers[ws->nr_wakers].poll = poll;
		ws->wakers[ws->nr_wakers++].count = 1;
		return;
	}
	ws->wakers_other++;
}

uint64_t summary_wake__poll(struct trace_summary *s, const struct trace_poll *p,
			    struct trace_wake *w)
{
	struct pending_wake *pw;
	struct wake_summary *ws;
	uint64_t i;

	if (p->depth || !u64_map__get(&s->pending_wakes, p->self, &i) || !i ||
	    !s->waits[i - 1].live)
		return 0;
	pw = &s->waits[i - 1];
	if (pw->w.time_ns > p->start_ns)
		return 0; /* woken during this very poll (it woke itself): for the next */
	pw->live = false;
	ws = &s->polls[p->poll].wake;
	ws->wakes++;
	ws->coalesced += pw->more;
	if (pw->w.waker_task_self == p->self)
		ws->self_wakes++;
	else if (u64_vec__push(&ws->delays, p->start_ns - pw->w.time_ns))
		s->oom = true;
	add_waker(ws, pw->w.waker_poll);
	*w = pw->w;
	return ++s->wake_flows;
}

uint64_t summary_wake__unmatched(const struct trace_summary *s)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < s->nr_waits; i++)
		n += s->waits[i].live;
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
