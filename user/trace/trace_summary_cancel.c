// SPDX-License-Identifier: GPL-2.0
/*
 * The summary's cancellations (docs/tracing.md, "Cancellation"): every drop of a
 * selected future, classified by its __state at the drop. Suspended at await k:
 * cancelled there. Unresumed (never polled) or Returned: not cancelled. A hand-written
 * future has no __state: cancelled when its last poll seen returned Pending. A dropped
 * instance is no longer live: "pending at the end" does not list it.
 */
#include "trace/trace_summary.h"

void trace_summary__set_cancel(struct trace_summary *s, bool watched)
{
	s->cancel_watched = watched;
}

static void add_site(struct cancel_summary *c, int32_t await_index)
{
	for (uint32_t i = 0; i < c->nr_at; i++)
		if (c->at[i].await_index == await_index) {
			c->at[i].count++;
			return;
		}
	if (c->nr_at < SUMMARY_CANCEL_SITES) {
		c->at[c->nr_at].await_index = await_index;
		c->at[c->nr_at++].count = 1;
		return;
	}
	c->at_other++;
}

/* The awaitee offset of future f's Suspend k state, FUTURE_NO_OFFSET if unknown. */
static uint64_t awaitee_offset(const struct future *f, int32_t k)
{
	for (uint32_t i = 0; i < f->nr_states; i++)
		if (f->states[i].kind == STATE_SUSPEND && (int32_t)f->states[i].suspend_index == k)
			return f->states[i].awaitee_offset;
	return FUTURE_NO_OFFSET;
}

/*
 * A future cancelled at await k drops what it awaits there with it. A hand-written
 * awaitee has no __state and usually no drop glue to probe: find it where the model
 * says it lives (inline, no pointer on the way), and if its last poll was Pending,
 * it was cancelled too (counted, no longer pending). Compiler futures have drop
 * probes of their own (where out of line): not inferred here, never counted twice.
 */
static void cascade(struct trace_summary *s, const struct trace_drop *d, uint32_t future,
		    uint64_t self, int32_t k, int depth)
{
	const struct model *m = s->m;
	uint64_t base = awaitee_offset(&m->futures[future], k);

	if (base == FUTURE_NO_OFFSET || depth > 8)
		return;
	for (uint32_t e = 0; e < m->nr_edges; e++) {
		const struct await_edge *ed = &m->edges[e];
		uint64_t at = self + base;
		uint8_t last = POLL_UNKNOWN;
		int32_t await = -1;
		bool deref = false;
		int32_t cpoll;

		if (ed->from != (int32_t)future || (int32_t)ed->await_index != k || ed->to < 0 ||
		    !ed->steps_known || m->futures[ed->to].has_state)
			continue;
		for (uint8_t i = 0; i < ed->nr_steps; i++) {
			at += ed->steps[i].offset;
			deref |= ed->steps[i].deref;
		}
		cpoll = m->futures[ed->to].poll;
		if (deref || cpoll < 0 || (uint32_t)cpoll >= m->nr_polls ||
		    !instance_table__drop(&s->instances, (uint32_t)cpoll, at, &last, &await))
			continue;
		struct cancel_summary *c = &s->polls[cpoll].cancel;

		c->drops++;
		if (last == POLL_PENDING) {
			c->cancelled++;
			add_site(c, -1);
		} else {
			c->finished++;
		}
	}
	(void)d;
}

void trace_summary__add_drop(struct trace_summary *s, const struct trace_drop *d)
{
	const struct future *f;
	struct cancel_summary *c;
	uint8_t last = POLL_UNKNOWN;
	int32_t await = -1;
	bool tracked;

	s->drops++;
	if (d->poll >= s->m->nr_polls || d->future >= s->m->nr_futures) {
		s->drops_unknown_future++;
		return;
	}
	f = &s->m->futures[d->future];
	c = &s->polls[d->poll].cancel;
	c->drops++;
	tracked = instance_table__drop(&s->instances, d->poll, d->self, &last, &await);
	if (d->has_state && f->has_state) {
		if (d->await_index >= 0) {
			c->cancelled++;
			add_site(c, d->await_index);
			cascade(s, d, d->future, d->self, d->await_index, 0);
		} else if (d->state >= STATE_SUSPEND0_VALUE) {
			c->bad_state++; /* past its last state: no value it has */
		} else if (d->state == 0) {
			c->not_started++;
		} else {
			c->finished++; /* returned or panicked */
		}
		return;
	}
	if (tracked && last == POLL_PENDING) {
		c->cancelled++;
		add_site(c, -1);
	} else if (tracked && last == POLL_READY) {
		c->finished++;
	} else {
		c->not_started++; /* never seen polled */
	}
}
