// SPDX-License-Identifier: GPL-2.0
/*
 * The end-of-run summary (trace_summary.h, docs/tracing.md "Summary"): per traced
 * poll function (one per future type) counts by result, busy time, poll-duration and
 * lifetime percentiles; the futures still pending at the end; the busiest tasks; the
 * run's totals, with every loss said loudly. Poll fns whose records were dropped take
 * busy time and percentiles from the BPF side's exact counters and log2 histogram.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace_summary.h"

int trace_summary__init(struct trace_summary *s, const struct model *m)
{
	memset(s, 0, sizeof(*s));
	s->m = m;
	instance_table__init(&s->instances, TRACE_SUMMARY_MAX_INSTANCES);
	task_table__init(&s->tasks, TRACE_SUMMARY_MAX_TASKS, TRACE_SUMMARY_KEEP_TASKS);
	s->polls = calloc(m->nr_polls ? m->nr_polls : 1, sizeof(*s->polls));
	u64_map__init(&s->block_acc);
	u64_map__init(&s->pending_wakes);
	s->blocking_off = "not watched";
	s->block_threshold_ns = 1000000;
	return s->polls ? 0 : -ENOMEM;
}

void trace_summary__set_probe_costs(struct trace_summary *s, const struct probe_costs *c)
{
	s->costs = *c;
}

void trace_summary__set_probe_costs_end(struct trace_summary *s, const struct probe_costs *c)
{
	s->costs_end = *c;
}

void trace_summary__set_caps(struct trace_summary *s, uint32_t max_instances, uint32_t max_tasks)
{
	s->instances.max = max_instances;
	s->tasks.max = max_tasks;
}

int trace_summary__set_task_roots(struct trace_summary *s, const uint8_t *roots)
{
	uint32_t n = s->m->nr_polls ? s->m->nr_polls : 1;

	free(s->task_roots);
	if (!(s->task_roots = malloc(n)))
		return -ENOMEM;
	memcpy(s->task_roots, roots, s->m->nr_polls);
	task_table__set_roots(&s->tasks, s->task_roots, s->m->nr_polls);
	return 0;
}

/* p's instance and task; their news into the poll fn's counts. */
static void track_instance_and_task(struct trace_summary *s, struct poll_summary *ps,
				    const struct trace_poll *p)
{
	struct instance_update u;

	instance_table__add(&s->instances, s->m, p, &u);
	if (u.abandoned)
		ps->abandoned++;
	if (u.started_before)
		ps->started_before++;
	if ((u.lifetime && u64_vec__push(&ps->lifetimes, u.life_ns)) || u.oom)
		s->oom = true;
	if (task_table__add(&s->tasks, p))
		s->oom = true;
}

void trace_summary__add(struct trace_summary *s, const struct trace_poll *p)
{
	struct poll_summary *ps;
	uint64_t d = trace_poll__busy_ns(p);

	s->records++;
	if (!s->first_ns || p->start_ns < s->first_ns)
		s->first_ns = p->start_ns;
	if (p->end_ns > s->last_ns)
		s->last_ns = p->end_ns;
	if (p->poll >= s->m->nr_polls || (unsigned)p->result >= POLL_RESULT_COUNT) {
		s->bad_records++;
		return;
	}
	ps = &s->polls[p->poll];
	if (p->probe_ns) {
		uint64_t raw = p->end_ns > p->start_ns ? p->end_ns - p->start_ns : 0;

		s->probe_adjusted++;
		s->probe_subtracted_ns += raw - d;
		s->probe_overcorrected += p->probe_ns >= raw;
	}
	ps->polls++;
	ps->counts[p->result]++;
	if (p->result == POLL_UNKNOWN)
		ps->unknown_by[p->unknown_reason < UNKNOWN_REASON_COUNT ? p->unknown_reason : 0]++;
	ps->busy_ns += d;
	ps->block.offcpu_ns += p->offcpu_ns < d ? p->offcpu_ns : d;
	summary_block__poll_done(s, p);
	if (u64_vec__push(&ps->durations, d))
		s->oom = true;
	track_instance_and_task(s, ps, p);
}

int trace_summary__set_bpf_stats(struct trace_summary *s, const struct poll_stats *stats,
				 uint32_t nr)
{
	struct poll_stats *copy;

	if (nr > s->m->nr_polls)
		nr = s->m->nr_polls;
	copy = calloc(nr ? nr : 1, sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	if (nr)
		memcpy(copy, stats, nr * sizeof(*copy));
	free(s->bpf);
	s->bpf = copy;
	s->nr_bpf = nr;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void u64_vec__sort(struct u64_vec *v)
{
	if (v->nr)
		qsort(v->v, v->nr, sizeof(*v->v), cmp_u64);
}

uint64_t summary__bucket_low(unsigned i)
{
	return i ? 1ull << i : 0;
}

uint64_t summary__bucket_high(unsigned i)
{
	return i + 1 >= 64 ? UINT64_MAX : 1ull << (i + 1);
}

uint64_t summary__hist_percentile(const __u64 *hist, unsigned pct)
{
	uint64_t n = 0, rank, seen = 0;

	for (unsigned i = 0; i < TRACE_HIST_BUCKETS; i++)
		n += hist[i];
	if (!n)
		return 0;
	rank = (n * pct + 99) / 100;
	if (!rank)
		rank = 1;
	for (unsigned i = 0; i < TRACE_HIST_BUCKETS; i++) {
		seen += hist[i];
		if (seen >= rank)
			return summary__bucket_high(i);
	}
	return UINT64_MAX; /* not reached */
}

/* The highest non-empty bucket's upper bound. */
static uint64_t hist_max(const __u64 *hist)
{
	for (unsigned i = TRACE_HIST_BUCKETS; i-- > 0;)
		if (hist[i])
			return summary__bucket_high(i);
	return 0;
}

static void row_fill(struct trace_summary *s, uint32_t poll, struct summary_row *r)
{
	struct poll_summary *ps = &s->polls[poll];
	const struct poll_stats *bs = poll < s->nr_bpf ? &s->bpf[poll] : NULL;

	memset(r, 0, sizeof(*r));
	r->poll = poll;
	u64_vec__sort(&ps->durations);
	u64_vec__sort(&ps->lifetimes);
	r->busy_ns = ps->busy_ns;
	r->p50 = u64_vec__percentile(ps->durations.v, ps->durations.nr, 50);
	r->p99 = u64_vec__percentile(ps->durations.v, ps->durations.nr, 99);
	r->max = ps->durations.nr ? ps->durations.v[ps->durations.nr - 1] : 0;
	r->life_p50 = u64_vec__percentile(ps->lifetimes.v, ps->lifetimes.nr, 50);
	r->life_p99 = u64_vec__percentile(ps->lifetimes.v, ps->lifetimes.nr, 99);
	r->life_max = ps->lifetimes.nr ? ps->lifetimes.v[ps->lifetimes.nr - 1] : 0;
	if (bs && bs->dropped) {
		/* the records miss polls: the BPF side saw every one of them */
		r->dropped = bs->dropped;
		r->from_histogram = true;
		r->busy_ns = bs->busy_ns;
		r->p50 = summary__hist_percentile(bs->hist, 50);
		r->p99 = summary__hist_percentile(bs->hist, 99);
		r->max = hist_max(bs->hist);
	}
}

static int cmp_row_busy(const void *a, const void *b)
{
	const struct summary_row *x = a, *y = b;

	if (x->busy_ns != y->busy_ns)
		return x->busy_ns > y->busy_ns ? -1 : 1;
	return x->poll < y->poll ? -1 : x->poll > y->poll;
}

static bool poll_seen(const struct trace_summary *s, uint32_t poll)
{
	return s->polls[poll].polls || (poll < s->nr_bpf && s->bpf[poll].records);
}

struct summary_row *trace_summary__rows(struct trace_summary *s, uint32_t *nr)
{
	struct summary_row *r = calloc(s->m->nr_polls ? s->m->nr_polls : 1, sizeof(*r));

	*nr = 0;
	if (!r)
		return NULL;
	for (uint32_t p = 0; p < s->m->nr_polls; p++)
		if (poll_seen(s, p))
			row_fill(s, p, &r[(*nr)++]);
	qsort(r, *nr, sizeof(*r), cmp_row_busy);
	return r;
}

void summary__poll_name(const struct model *m, uint32_t poll, char *buf, size_t len)
{
	const struct poll_fn *pf = &m->polls[poll];

	if (pf->future >= 0 && (uint32_t)pf->future < m->nr_futures)
		future__display_name(&m->futures[pf->future], buf, len);
	else
		snprintf(buf, len, "%s", pf->name ? pf->name : "(unknown poll)");
}

void summary__poll_label(const struct model *m, uint32_t poll, char *buf, size_t len)
{
	size_t n;

	summary__poll_name(m, poll, buf, len);
	n = strlen(buf);
	if (m->polls[poll].nr_folded)
		snprintf(buf + n, len > n ? len - n : 0, " (+%u folded)", m->polls[poll].nr_folded);
}

void summary__folded_names(const struct model *m, uint32_t poll, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (uint32_t f = 0; f < m->nr_futures && n + 1 < len; f++) {
		char name[256];

		if (m->futures[f].folded_into != m->polls[poll].future ||
		    m->futures[f].poll != (int32_t)poll)
			continue;
		future__display_name(&m->futures[f], name, sizeof(name));
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", name);
	}
}

const char *summary__await_site(const struct model *m, uint32_t poll, int32_t await_index,
				uint32_t *line)
{
	int32_t fi = m->polls[poll].future;
	const struct future *f;

	if (fi < 0 || (uint32_t)fi >= m->nr_futures)
		return NULL;
	f = &m->futures[fi];
	if (await_index < 0) {
		*line = f->line;
		return f->file; /* no await point: where the future is declared */
	}
	for (uint32_t i = 0; i < f->nr_states; i++) {
		const struct future_state *st = &f->states[i];

		if (st->kind == STATE_SUSPEND && st->suspend_index == (uint32_t)await_index &&
		    st->file) {
			*line = st->line;
			return st->file;
		}
	}
	for (uint32_t i = 0; i < m->nr_edges; i++) {
		const struct await_edge *e = &m->edges[i];

		if (e->from == fi && e->await_index == (uint32_t)await_index && e->file) {
			*line = e->line;
			return e->file;
		}
	}
	return NULL;
}

const char *unknown_reason__text(unsigned reason)
{
	switch (reason) {
	case UNKNOWN_NO_SELF: return "where self arrives is not known";
	case UNKNOWN_NO_LAYOUT:
		return "Poll<T> cannot be decoded (layout or convention unknown, or the poll "
		       "computes no result)";
	case UNKNOWN_BAD_STATE: return "__state held no state of the future";
	case UNKNOWN_BAD_DISCR: return "the returned discriminant was neither Pending nor Ready";
	case UNKNOWN_BAD_AWAIT: return "suspended at an await point the future does not have";
	case UNKNOWN_TAIL_CALL:
		return "it returned through a tail call the tracer does not follow: the Poll<T> "
		       "is the callee's, not computed yet at the jump";
	default: return "no reason recorded";
	}
}

const char *unknown_reason__key(unsigned reason)
{
	switch (reason) {
	case UNKNOWN_NO_SELF: return "no_self";
	case UNKNOWN_NO_LAYOUT: return "no_layout";
	case UNKNOWN_BAD_STATE: return "bad_state";
	case UNKNOWN_BAD_DISCR: return "bad_discriminant";
	case UNKNOWN_BAD_AWAIT: return "bad_await";
	case UNKNOWN_TAIL_CALL: return "tail_call";
	default: return "other";
	}
}

uint64_t trace_summary__unknown(const struct trace_summary *s, uint64_t *by)
{
	uint64_t n = 0;

	for (unsigned r = 0; r < UNKNOWN_REASON_COUNT; r++)
		by[r] = 0;
	for (uint32_t i = 0; s->polls && i < s->m->nr_polls; i++)
		for (unsigned r = 0; r < UNKNOWN_REASON_COUNT; r++) {
			by[r] += s->polls[i].unknown_by[r];
			n += s->polls[i].unknown_by[r];
		}
	return n;
}

uint64_t trace_summary__running(const struct trace_summary *s)
{
	uint64_t n = 0;

	for (uint32_t p = 0; p < s->m->nr_polls; p++)
		n += s->polls[p].counts[POLL_OPEN];
	return n;
}

uint64_t trace_summary__stepped_exits(const struct trace_summary *s, uint64_t *exits)
{
	uint64_t n = 0;

	*exits = 0;
	for (uint32_t p = 0; s->bpf && p < s->nr_bpf; p++) {
		n += s->bpf[p].stepped_exits;
		*exits += s->bpf[p].records - s->bpf[p].truncated;
	}
	return n;
}

void trace_summary__free(struct trace_summary *s)
{
	summary_wake__free(s); /* first: it frees the rows' delays */
	for (uint32_t p = 0; s->polls && p < s->m->nr_polls; p++) {
		free(s->polls[p].durations.v);
		free(s->polls[p].lifetimes.v);
	}
	free(s->polls);
	s->polls = NULL;
	free(s->bpf);
	s->bpf = NULL;
	instance_table__free(&s->instances);
	task_table__free(&s->tasks);
	summary_tasks__free(s);
	free(s->task_roots);
	summary_block__free(s);
}
