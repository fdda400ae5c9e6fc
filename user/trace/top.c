// SPDX-License-Identifier: GPL-2.0
/* asyncbpf top's table (top.h). */
#include "trace/top.h"

#include <stdlib.h>
#include <string.h>

#include "lib/text.h"
#include "trace/trace_summary.h"

static const char *const key_names[TOP_KEY_COUNT] = {"busy",  "polls", "p99",	    "blocked",
						     "wakes", "delay", "cancelled", "live"};
static const char key_chars[TOP_KEY_COUNT] = {'b', 'p', '9', 'B', 'w', 'd', 'c', 'l'};

int top_key__parse(const char *name)
{
	for (int k = 0; k < TOP_KEY_COUNT; k++)
		if (!strcmp(name, key_names[k]))
			return k;
	return strcmp(name, "done") ? -1 : TOP_CANCELLED; /* task mode's name of that column */
}

const char *top_key__name(enum top_key k)
{
	return k < TOP_KEY_COUNT ? key_names[k] : "?";
}

int top_key__from_char(int c)
{
	for (int k = 0; k < TOP_KEY_COUNT; k++)
		if (key_chars[k] == c)
			return k;
	return -1;
}

static uint64_t d(uint64_t now, uint64_t before)
{
	return now > before ? now - before : 0;
}

static double key_value(const struct top_row *r, enum top_key k)
{
	switch (k) {
	case TOP_BUSY: return r->busy_pct;
	case TOP_POLLS: return r->polls_s;
	case TOP_P99: return (double)r->p99_ns;
	case TOP_BLOCKED: return r->blocked_ms_s;
	case TOP_WAKES: return r->wakes_s;
	case TOP_DELAY: return (double)r->delay_p99_ns;
	case TOP_CANCELLED: return r->ends_s;
	case TOP_LIVE: return (double)r->live;
	case TOP_KEY_COUNT: break;
	}
	return 0;
}

static enum top_key sort_key;

static int cmp_rows(const void *a, const void *b)
{
	double x = key_value(a, sort_key), y = key_value(b, sort_key);

	if (x != y)
		return x > y ? -1 : 1;
	return ((const struct top_row *)a)->poll < ((const struct top_row *)b)->poll ? -1 : 1;
}

/*
 * Wakes per second. Sampled: the probes slow the target while attached, so the wakes
 * seen over the window's time would understate the rate; the wakes per poll of the
 * same window do not, and the polls are all counted.
 */
static double wake_rate(const struct top_interval *in, uint64_t wakes, uint64_t polls,
			uint64_t window_polls)
{
	switch (in->wakes) {
	case TOP_WAKES_ALL: return (double)wakes / in->dt;
	case TOP_WAKES_SAMPLED:
		if (window_polls)
			return (double)wakes / (double)window_polls * (double)polls / in->dt;
		return wakes ? -1 : 0;
	case TOP_WAKES_OFF: break;
	}
	return -1;
}

int top__rows(const struct poll_stats *prev, const struct poll_stats *cur, uint32_t nr,
	      const struct top_interval *in, struct top_row **rows)
{
	double dt = in->dt;
	struct top_row *out = calloc(nr ? nr : 1, sizeof(*out));
	__u64 hist[TRACE_HIST_BUCKETS], delay[TRACE_HIST_BUCKETS];
	int n = 0;

	*rows = NULL;
	if (!out)
		return -1;
	if (dt <= 0)
		dt = 1e-9;
	for (uint32_t p = 0; p < nr; p++) {
		const struct poll_stats *a = &prev[p], *b = &cur[p];
		uint64_t polls = d(b->records, a->records), wakes = d(b->wakes, a->wakes);
		/* task mode: tasks ended (Ready, or cancelled); else instances cancelled */
		uint64_t ends = in->tasks ? d(b->ready, a->ready) + d(b->cancelled, a->cancelled)
					  : d(b->cancelled, a->cancelled),
			 blocked = d(b->blocked, a->blocked);
		int64_t live = (int64_t)b->started - (int64_t)b->ended;

		if (!polls && !wakes && !ends && !blocked && live <= 0)
			continue;
		bool delays = false;

		for (int i = 0; i < TRACE_HIST_BUCKETS; i++) {
			hist[i] = d(b->hist[i], a->hist[i]);
			delay[i] = d(b->delay_hist[i], a->delay_hist[i]);
			delays |= delay[i] != 0;
		}
		out[n++] = (struct top_row){
		    .poll = p,
		    .polls_s = (double)polls / dt,
		    .busy_pct = 100.0 * (double)d(b->busy_ns, a->busy_ns) / (dt * 1e9),
		    .blocked_ms_s = (double)d(b->blocked_ns, a->blocked_ns) / dt / 1e6,
		    .wakes_s = wake_rate(in, wakes, polls, d(b->window_polls, a->window_polls)),
		    .ends_s = (double)ends / dt,
		    .p50_ns = polls ? summary__hist_percentile(hist, 50) : 0,
		    .p99_ns = polls ? summary__hist_percentile(hist, 99) : 0,
		    .delay_p99_ns = summary__hist_percentile(delay, 99),
		    .delay_known = delays,
		    .live = live > 0 ? live : 0,
		};
	}
	sort_key = in->key;
	qsort(out, (size_t)n, sizeof(*out), cmp_rows);
	*rows = out;
	return n;
}

/* A rate, or "-" where it is not known (< 0). */
static void rate(FILE *out, int width, double v)
{
	if (v < 0)
		fprintf(out, " %*s", width, "-");
	else
		fprintf(out, " %*.1f", width, v);
}

void top__print(FILE *out, const struct top_names *names, const struct top_row *rows, int nr,
		int max_rows)
{
	char name[256], full[4096];

	fprintf(out, "%9s %6s %9s %9s %11s %8s %11s %9s %7s  %s\n", "POLLS/S", "BUSY%", "P50_US",
		"P99_US", "BLOCKED_MS/S", "WAKES/S", "DELAY99_US",
		names->tasks ? "DONE/S" : "CANCEL/S", "LIVE", names->tasks ? "TASK" : "FUTURE");
	for (int i = 0; i < nr && (!max_rows || i < max_rows); i++) {
		const struct top_row *r = &rows[i];

		names->name(names->ctx, r->poll, full, sizeof(full));
		rust__abbreviate(full, name, sizeof(name), 100);
		fprintf(out, "%9.1f %6.1f %9.1f %9.1f %11.2f", r->polls_s, r->busy_pct,
			(double)r->p50_ns / 1e3, (double)r->p99_ns / 1e3, r->blocked_ms_s);
		rate(out, 8, r->wakes_s);
		rate(out, 11, r->delay_known ? (double)r->delay_p99_ns / 1e3 : -1);
		fprintf(out, " %9.1f %7lld  %s\n", r->ends_s, (long long)r->live, name);
	}
	if (!nr)
		fprintf(out, "(no traced %s was active in this interval)\n",
			names->tasks ? "task" : "future");
}
