// SPDX-License-Identifier: GPL-2.0
/*
 * The end-of-run summary: per traced poll function (one per future type), counts by
 * result, busy time and poll-duration percentiles from the records; the run's totals,
 * with drops and truncated frames said loudly. Text table and JSON (docs/tracing.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tracer.h"

int trace_summary__init(struct trace_summary *s, const struct model *m)
{
	memset(s, 0, sizeof(*s));
	s->m = m;
	s->polls = calloc(m->nr_polls ? m->nr_polls : 1, sizeof(*s->polls));
	return s->polls ? 0 : -ENOMEM;
}

void trace_summary__add(struct trace_summary *s, const struct trace_poll *p)
{
	struct poll_summary *ps;
	uint64_t d = p->end_ns > p->start_ns ? p->end_ns - p->start_ns : 0;

	s->records++;
	if (!s->first_ns || p->start_ns < s->first_ns)
		s->first_ns = p->start_ns;
	if (p->end_ns > s->last_ns)
		s->last_ns = p->end_ns;
	if (p->poll >= s->m->nr_polls) {
		s->bad_records++;
		return;
	}
	ps = &s->polls[p->poll];
	ps->polls++;
	if ((unsigned)p->result < POLL_RESULT_COUNT)
		ps->counts[p->result]++;
	ps->busy_ns += d;
	if (ps->nr_durations == ps->cap_durations) {
		uint64_t cap = ps->cap_durations ? ps->cap_durations * 2 : 64;
		uint64_t *n = realloc(ps->durations, cap * sizeof(*n));

		if (!n) {
			s->oom = true;
			return;
		}
		ps->durations = n;
		ps->cap_durations = cap;
	}
	ps->durations[ps->nr_durations++] = d;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted values. */
static uint64_t percentile(const uint64_t *v, uint64_t n, unsigned pct)
{
	uint64_t rank;

	if (!n)
		return 0;
	rank = (n * pct + 99) / 100;
	return v[rank ? rank - 1 : 0];
}

struct row {
	uint32_t poll;
	uint64_t p50, p99, max;
};

static int cmp_row_busy(const void *a, const void *b, void *ctx)
{
	const struct trace_summary *s = ctx;
	uint64_t x = s->polls[((const struct row *)a)->poll].busy_ns;
	uint64_t y = s->polls[((const struct row *)b)->poll].busy_ns;

	return x > y ? -1 : x < y;
}

/* Rows of the polls that have records, busiest first; NULL on ENOMEM. */
static struct row *rows(struct trace_summary *s, uint32_t *nr)
{
	struct row *r = calloc(s->m->nr_polls ? s->m->nr_polls : 1, sizeof(*r));

	*nr = 0;
	if (!r)
		return NULL;
	for (uint32_t p = 0; p < s->m->nr_polls; p++) {
		struct poll_summary *ps = &s->polls[p];

		if (!ps->polls)
			continue;
		qsort(ps->durations, ps->nr_durations, sizeof(*ps->durations), cmp_u64);
		r[*nr].poll = p;
		r[*nr].p50 = percentile(ps->durations, ps->nr_durations, 50);
		r[*nr].p99 = percentile(ps->durations, ps->nr_durations, 99);
		r[*nr].max = ps->nr_durations ? ps->durations[ps->nr_durations - 1] : 0;
		(*nr)++;
	}
	qsort_r(r, *nr, sizeof(*r), cmp_row_busy, s);
	return r;
}

static void poll_name(const struct model *m, uint32_t poll, char *buf, size_t len)
{
	const struct poll_fn *pf = &m->polls[poll];

	if (pf->future >= 0 && (uint32_t)pf->future < m->nr_futures)
		future__display_name(&m->futures[pf->future], buf, len);
	else
		snprintf(buf, len, "%s", pf->name ? pf->name : "(unknown poll)");
}

static void print_us(FILE *out, uint64_t ns)
{
	fprintf(out, " %10.1f", (double)ns / 1e3);
}

void trace_summary__print(struct trace_summary *s, const struct trace_run_totals *t, FILE *out)
{
	const struct trace_totals *tt = &t->totals;
	uint32_t nr;
	struct row *r = rows(s, &nr);
	char name[256];

	fprintf(out, "%8s %8s %8s %8s %8s %8s %10s %10s %10s %10s  %s\n", "POLLS", "READY",
		"PENDING", "PANICKED", "TRUNC", "UNKNOWN", "BUSY_MS", "P50_US", "P99_US", "MAX_US",
		"FUTURE");
	for (uint32_t i = 0; r && i < nr; i++) {
		const struct poll_summary *ps = &s->polls[r[i].poll];

		poll_name(s->m, r[i].poll, name, sizeof(name));
		fprintf(out,
			"%8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
			" %10.3f",
			ps->polls, ps->counts[POLL_READY], ps->counts[POLL_PENDING],
			ps->counts[POLL_PANICKED], ps->counts[POLL_TRUNCATED],
			ps->counts[POLL_UNKNOWN], (double)ps->busy_ns / 1e6);
		print_us(out, r[i].p50);
		print_us(out, r[i].p99);
		print_us(out, r[i].max);
		fprintf(out, "  %s\n", name);
	}
	if (!nr)
		fprintf(out, "(no poll completed)\n");
	fprintf(out,
		"\nrecords %" PRIu64 ", dropped %" PRIu64 ", truncated %" PRIu64
		", probes attached %" PRIu64 ", unprobeable exits %" PRIu64
		", unmatched exits %" PRIu64 ", duration %.3f s\n",
		tt->polls, tt->dropped, tt->truncated, tt->probes_attached, t->unprobeable_exits,
		t->unmatched_exits, (double)tt->duration_ns / 1e9);
	if (tt->dropped)
		fprintf(out,
			"WARNING: %" PRIu64 " records DROPPED (ring buffer full): the trace has "
			"holes; raise --ringbuf-size\n",
			tt->dropped);
	if (t->stack_overflow)
		fprintf(out,
			"WARNING: %" PRIu64 " polls nested deeper than %d traced frames were not "
			"traced\n",
			t->stack_overflow, TRACE_MAX_DEPTH);
	if (s->bad_records)
		fprintf(out, "WARNING: %" PRIu64 " malformed records ignored\n", s->bad_records);
	if (s->oom)
		fprintf(out, "WARNING: out of memory: percentiles use part of the polls\n");
	free(r);
}

int trace_summary__write_json(struct trace_summary *s, const struct trace_run_totals *t, FILE *out)
{
	cJSON *root = cJSON_CreateObject(), *arr, *o, *tot;
	uint32_t nr;
	struct row *r = rows(s, &nr);
	char name[1024], *text;
	int ret = 0;

	if (!root || !r) {
		ret = -ENOMEM;
		goto out;
	}
	cJSON_AddStringToObject(root, "schema", "asyncbpf-trace-summary/1");
	arr = cJSON_AddArrayToObject(root, "futures");
	for (uint32_t i = 0; arr && i < nr; i++) {
		const struct poll_summary *ps = &s->polls[r[i].poll];
		const struct poll_fn *pf = &s->m->polls[r[i].poll];
		const struct future *f = pf->future >= 0 ? &s->m->futures[pf->future] : NULL;

		o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			ret = -ENOMEM;
			goto out;
		}
		poll_name(s->m, r[i].poll, name, sizeof(name));
		cJSON_AddStringToObject(o, "name", name);
		if (f && f->path)
			cJSON_AddStringToObject(o, "path", f->path);
		else
			cJSON_AddNullToObject(o, "path");
		cJSON_AddStringToObject(o, "kind", f ? future_kind__name(f->kind) : "unknown");
		cJSON_AddNumberToObject(o, "poll", r[i].poll);
		cJSON_AddNumberToObject(o, "polls", (double)ps->polls);
		cJSON_AddNumberToObject(o, "ready", (double)ps->counts[POLL_READY]);
		cJSON_AddNumberToObject(o, "pending", (double)ps->counts[POLL_PENDING]);
		cJSON_AddNumberToObject(o, "panicked", (double)ps->counts[POLL_PANICKED]);
		cJSON_AddNumberToObject(o, "truncated", (double)ps->counts[POLL_TRUNCATED]);
		cJSON_AddNumberToObject(o, "unknown", (double)ps->counts[POLL_UNKNOWN]);
		cJSON_AddNumberToObject(o, "busy_ns", (double)ps->busy_ns);
		cJSON_AddNumberToObject(o, "p50_ns", (double)r[i].p50);
		cJSON_AddNumberToObject(o, "p99_ns", (double)r[i].p99);
		cJSON_AddNumberToObject(o, "max_ns", (double)r[i].max);
	}
	tot = cJSON_AddObjectToObject(root, "totals");
	if (tot) {
		cJSON_AddNumberToObject(tot, "records", (double)t->totals.polls);
		cJSON_AddNumberToObject(tot, "dropped", (double)t->totals.dropped);
		cJSON_AddNumberToObject(tot, "truncated", (double)t->totals.truncated);
		cJSON_AddNumberToObject(tot, "probes_attached", (double)t->totals.probes_attached);
		cJSON_AddNumberToObject(tot, "probes_failed", (double)t->totals.probes_failed);
		cJSON_AddNumberToObject(tot, "unprobeable_exits", (double)t->unprobeable_exits);
		cJSON_AddNumberToObject(tot, "unmatched_exits", (double)t->unmatched_exits);
		cJSON_AddNumberToObject(tot, "stack_overflow", (double)t->stack_overflow);
		cJSON_AddNumberToObject(tot, "no_storage", (double)t->no_storage);
		cJSON_AddNumberToObject(tot, "bpf_records", (double)t->bpf_records);
		cJSON_AddNumberToObject(tot, "probe_hits", (double)t->hits);
		cJSON_AddNumberToObject(tot, "malformed_records", (double)s->bad_records);
		cJSON_AddNumberToObject(tot, "duration_ns", (double)t->totals.duration_ns);
	}
	text = cJSON_Print(root);
	if (!text) {
		ret = -ENOMEM;
		goto out;
	}
	if (fprintf(out, "%s\n", text) < 0)
		ret = -EIO;
	cJSON_free(text);
out:
	cJSON_Delete(root);
	free(r);
	return ret;
}

void trace_summary__free(struct trace_summary *s)
{
	for (uint32_t p = 0; s->polls && p < s->m->nr_polls; p++)
		free(s->polls[p].durations);
	free(s->polls);
	s->polls = NULL;
}
