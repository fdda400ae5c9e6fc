// SPDX-License-Identifier: GPL-2.0
/*
 * top's statistics as a Prometheus page (prometheus.h, docs/metrics.md). Written by
 * hand: the text format is a few lines per series, and Debian packages no C client
 * library for it (prometheus-client-c is not in Debian).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/prometheus.h"
#include "lib/text.h"
#include "lib/vec.h"

#define NAME_LEN   512 /* a future's name, before escaping */
#define ESC_LEN	   (2 * NAME_LEN + 1)
#define TARGET_LEN (ESC_LEN + 32)
#define LABEL_LEN  (ESC_LEN + TARGET_LEN + 16)
#define WORDS	   (sizeof(struct poll_stats) / sizeof(__u64))
/* histogram bounds: 2^10 .. 2^34 ns (1 us .. 17 s), every fourfold */
#define LE_FIRST 10
#define LE_LAST	 34
#define LE_STEP	 2
/* a row without a series takes one from a row with one it outdoes this many times */
#define PROM_SWAP_FACTOR 2

/* A row that lost its series: "other" counts it from what its series last showed. */
struct demoted {
	uint32_t row;
	struct poll_stats base;
};

struct prom_exporter {
	uint32_t top_n, nr_members, cap;
	uint8_t *member; /* per row: has a series of its own */
	char **label;	 /* per row: its future label value, escaped, unique in the run */
	/* what "other" showed of rows that then got their series of their own */
	struct poll_stats carry;
	/* every row's values at the last page */
	struct poll_stats *last;
	struct demoted *demoted;
	uint32_t nr_demoted, cap_demoted;
	bool rendered;
};

/* One source's part of the page being written. */
struct page {
	const struct prom_snapshot *s;
	char target[TARGET_LEN]; /* pid="..",exe=".." (a group: exe="..") */
	uint32_t nr_series;	 /* the members, then "other" when it counts */
	uint32_t *rows;		 /* per series: its row, or UINT32_MAX for "other" */
	char (*labels)[LABEL_LEN];
	struct poll_stats other;
	uint64_t other_live;
	struct prom_sys *sys; /* s->sys sorted by row */
	uint32_t nr_sys;
};

/* The page: every source's series of a family under the family's one HELP and TYPE. */
struct render {
	FILE *f;
	struct page *p;
	uint32_t n;
};

struct prom_exporter *prom__new(uint32_t top_n)
{
	struct prom_exporter *e = calloc(1, sizeof(*e));

	if (e)
		e->top_n = top_n < 1 ? 1 : top_n > PROM_MAX_TOP ? PROM_MAX_TOP : top_n;
	return e;
}

void prom__free(struct prom_exporter *e)
{
	if (!e)
		return;
	for (uint32_t r = 0; r < e->cap && e->label; r++)
		free(e->label[r]);
	free(e->label);
	free(e->member);
	free(e->last);
	free(e->demoted);
	free(e);
}

void prom__escape(const char *in, char *buf, size_t len)
{
	const unsigned char *u = (const unsigned char *)in;
	size_t o = 0;

	if (!len)
		return;
	while (*u) {
		size_t n = utf8__sequence_length(u, SIZE_MAX);
		const char *rep = *u == '\\'   ? "\\\\"
				  : *u == '"'  ? "\\\""
				  : *u == '\n' ? "\\n"
					       : NULL;
		const char *src = rep ? rep : n ? (const char *)u : "\xef\xbf\xbd"; /* U+FFFD */
		size_t out = rep ? 2 : n ? n : 3;

		if (o + out >= len)
			break;
		memcpy(buf + o, src, out);
		o += out;
		u += n ? n : 1;
	}
	buf[o] = '\0';
}

/* dst += a - b, word by word (a >= b: counters only grow) */
static void add_growth(struct poll_stats *dst, const struct poll_stats *a,
		       const struct poll_stats *b)
{
	__u64 *d = (__u64 *)(void *)dst;
	const __u64 *x = (const __u64 *)(const void *)a, *y = (const __u64 *)(const void *)b;

	for (size_t k = 0; k < WORDS; k++)
		d[k] += x[k] >= y[k] ? x[k] - y[k] : 0;
}

static const struct poll_stats zero_stats;

static const struct poll_stats *base_of(const struct prom_exporter *e, uint32_t r)
{
	for (uint32_t k = 0; k < e->nr_demoted; k++)
		if (e->demoted[k].row == r)
			return &e->demoted[k].base;
	return &zero_stats;
}

static int by_busy(const void *a, const void *b, void *ctx)
{
	const struct prom_snapshot *s = ctx;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	uint64_t x = s->stats[i].busy_ns, y = s->stats[j].busy_ns;

	return x < y ? 1 : x > y ? -1 : (i > j) - (i < j);
}

static int by_name(const void *a, const void *b, void *ctx)
{
	char **names = ctx;

	return strcmp(names[*(const uint32_t *)a], names[*(const uint32_t *)b]);
}

/*
 * Every row's label value, once for the run (names do not change): a name two rows
 * share, or "other", gets " (row N)" on every row that has it, so that a series
 * never changes hands.
 */
static int name_rows(struct prom_exporter *e, const struct prom_snapshot *s, uint32_t from)
{
	char name[NAME_LEN], esc[ESC_LEN];
	uint32_t *order = malloc((s->nr + 1) * sizeof(*order));
	char **raw = calloc(s->nr + 1, sizeof(*raw));
	int r = -ENOMEM;

	if (!order || !raw)
		goto out;
	for (uint32_t i = 0; i < s->nr; i++) {
		name[0] = '\0';
		if (s->name)
			s->name(s->ctx, i, name, sizeof(name) - 24); /* room for " (row N)" */
		if (!(raw[i] = strdup(name)))
			goto out;
		order[i] = i;
	}
	qsort_r(order, s->nr, sizeof(*order), by_name, raw);
	for (uint32_t i = 0; i < s->nr; i++) {
		uint32_t row = order[i];
		bool dup = (i && !strcmp(raw[row], raw[order[i - 1]])) ||
			   (i + 1 < s->nr && !strcmp(raw[row], raw[order[i + 1]])) ||
			   !raw[row][0] || !strcmp(raw[row], "other");

		if (row < from)
			continue;
		snprintf(name, sizeof(name), "%s%s", raw[row], dup && raw[row][0] ? " " : "");
		if (dup)
			snprintf(name + strlen(name), sizeof(name) - strlen(name), "(row %u)", row);
		prom__escape(name, esc, sizeof(esc));
		if (!(e->label[row] = strdup(esc)))
			goto out;
	}
	r = 0;
out:
	for (uint32_t i = 0; raw && i < s->nr; i++)
		free(raw[i]);
	free(raw);
	free(order);
	return r;
}

static int grow(struct prom_exporter *e, const struct prom_snapshot *s)
{
	uint32_t from = e->cap;
	uint8_t *m;
	struct poll_stats *l;
	char **lab;

	if (s->nr <= e->cap)
		return 0;
	if (!(m = realloc(e->member, s->nr)))
		return -ENOMEM;
	memset(m + from, 0, s->nr - from);
	e->member = m;
	if (!(l = realloc(e->last, s->nr * sizeof(*l))))
		return -ENOMEM;
	memset(l + from, 0, (s->nr - from) * sizeof(*l));
	e->last = l;
	if (!(lab = realloc(e->label, s->nr * sizeof(*lab))))
		return -ENOMEM;
	memset(lab + from, 0, (s->nr - from) * sizeof(*lab));
	e->label = lab;
	e->cap = s->nr;
	return name_rows(e, s, from);
}

/* Row r gets a series of its own: what the last page showed of it under "other"
 * stays there (carried), so that "other" never goes down. */
static void promote(struct prom_exporter *e, uint32_t r)
{
	e->member[r] = 1;
	e->nr_members++;
	if (e->rendered)
		add_growth(&e->carry, &e->last[r], base_of(e, r));
}

/* Row r loses its series: "other" counts it from what its series last showed. */
static int demote(struct prom_exporter *e, uint32_t r)
{
	uint32_t k = 0;

	while (k < e->nr_demoted && e->demoted[k].row != r)
		k++;
	if (k == e->nr_demoted) {
		if (vec__reserve((void **)&e->demoted, &e->cap_demoted, k + 1, sizeof(*e->demoted)))
			return -ENOMEM;
		e->nr_demoted++;
	}
	e->demoted[k] = (struct demoted){.row = r, .base = e->last[r]};
	e->member[r] = 0;
	e->nr_members--;
	return 0;
}

static bool active(const struct poll_stats *x)
{
	return x->records || x->blocked || x->started;
}

/*
 * The series: free ones to the busiest rows that have done anything; then, while the
 * busiest row without one has been busy more than PROM_SWAP_FACTOR times the least
 * busy row with one, they swap.
 */
static int choose(struct prom_exporter *e, const struct prom_snapshot *s)
{
	uint32_t *cand, *mem, n = 0, m = 0, i = 0;
	int r = grow(e, s);

	if (r)
		return r;
	cand = malloc((s->nr + 1) * sizeof(*cand));
	mem = malloc((s->nr + 1) * sizeof(*mem));
	if (!cand || !mem) {
		free(cand);
		free(mem);
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < s->nr; k++)
		if (e->member[k])
			mem[m++] = k;
		else if (active(&s->stats[k]))
			cand[n++] = k;
	qsort_r(cand, n, sizeof(*cand), by_busy, (void *)s);
	qsort_r(mem, m, sizeof(*mem), by_busy, (void *)s); /* busiest first: take from the end */
	for (; i < n && e->nr_members < e->top_n; i++)
		promote(e, cand[i]);
	for (; i < n && m && e->rendered; i++, m--) {
		uint32_t least = mem[m - 1];

		if (s->stats[cand[i]].busy_ns / PROM_SWAP_FACTOR <= s->stats[least].busy_ns)
			break;
		if ((r = demote(e, least)))
			break;
		promote(e, cand[i]);
	}
	free(cand);
	free(mem);
	return r;
}

static const struct poll_stats *series_stats(const struct page *p, uint32_t i)
{
	return p->rows[i] == UINT32_MAX ? &p->other : &p->s->stats[p->rows[i]];
}

static void head(struct render *R, const char *name, const char *type, const char *help)
{
	fprintf(R->f, "# HELP asyncbpf_%s %s\n# TYPE asyncbpf_%s %s\n", name, help, name, type);
}

/* The help text for what the page's sources are: task types, futures, or both. */
static const char *by_mode(const struct render *R, const char *tasks, const char *futures,
			   const char *both)
{
	bool t = false, f = false;

	for (uint32_t k = 0; k < R->n; k++)
		*(R->p[k].s->tasks ? &t : &f) = true;
	return t && f ? both : t ? tasks : futures;
}

/* Which sources a family is for. */
enum only { ALL, FUTURES_ONLY, WAKES_ON, WAKES_ALL, WAKES_SAMPLED };

static bool takes(const struct page *p, enum only o)
{
	switch (o) {
	case ALL: return true;
	case FUTURES_ONLY: return !p->s->tasks;
	case WAKES_ON: return p->s->wakes != PROM_WAKES_OFF;
	case WAKES_ALL: return p->s->wakes == PROM_WAKES_ALL;
	case WAKES_SAMPLED: return p->s->wakes == PROM_WAKES_SAMPLED;
	}
	return false;
}

static bool any_takes(const struct render *R, enum only o)
{
	for (uint32_t k = 0; k < R->n; k++)
		if (takes(&R->p[k], o))
			return true;
	return false;
}

/* One value per series: the field at offset off (a __u64 of struct poll_stats). */
static void family(struct render *R, enum only o, const char *name, const char *type,
		   const char *help, size_t off, double scale)
{
	if (!any_takes(R, o))
		return;
	head(R, name, type, help);
	for (uint32_t k = 0; k < R->n; k++) {
		const struct page *p = &R->p[k];

		for (uint32_t i = 0; takes(p, o) && i < p->nr_series; i++) {
			uint64_t v;

			memcpy(&v, (const char *)series_stats(p, i) + off, sizeof(v));
			if (scale == 1.0)
				fprintf(R->f, "asyncbpf_%s{%s} %" PRIu64 "\n", name, p->labels[i],
					v);
			else
				fprintf(R->f, "asyncbpf_%s{%s} %.9f\n", name, p->labels[i],
					(double)v * scale);
		}
	}
}

static void histogram(struct render *R, enum only o, const char *name, const char *help,
		      size_t hist_off, size_t sum_off)
{
	if (!any_takes(R, o))
		return;
	head(R, name, "histogram", help);
	for (uint32_t k = 0; k < R->n; k++) {
		const struct page *p = &R->p[k];

		for (uint32_t i = 0; takes(p, o) && i < p->nr_series; i++) {
			const char *st = (const char *)series_stats(p, i);
			uint64_t h[TRACE_HIST_BUCKETS], sum, below = 0, all = 0;
			uint32_t b = 0;

			memcpy(h, st + hist_off, sizeof(h));
			memcpy(&sum, st + sum_off, sizeof(sum));
			for (uint32_t j = 0; j < TRACE_HIST_BUCKETS; j++)
				all += h[j];
			/* bucket j holds [2^j, 2^(j+1)) ns: le = 2^b - 1 ns counts buckets < b */
			for (uint32_t le = LE_FIRST; le <= LE_LAST; le += LE_STEP) {
				for (; b < le; b++)
					below += h[b];
				fprintf(R->f, "asyncbpf_%s_bucket{%s,le=\"%.12g\"} %" PRIu64 "\n",
					name, p->labels[i], (double)((1ull << le) - 1) / 1e9,
					below);
			}
			fprintf(R->f, "asyncbpf_%s_bucket{%s,le=\"+Inf\"} %" PRIu64 "\n", name,
				p->labels[i], all);
			fprintf(R->f, "asyncbpf_%s_sum{%s} %.9f\n", name, p->labels[i],
				(double)sum / 1e9);
			fprintf(R->f, "asyncbpf_%s_count{%s} %" PRIu64 "\n", name, p->labels[i],
				all);
		}
	}
}

/* The syscall's label value: a name, "syscall N" or "nr_N" (not named), "none". */
static void syscall_label(const struct prom_snapshot *s, int32_t nr, char *buf, size_t len)
{
	const char *n = nr >= 0 && s->syscall_name ? s->syscall_name(nr) : NULL;

	if (nr < 0)
		snprintf(buf, len, "none");
	else if (n)
		prom__escape(n, buf, len);
	else
		snprintf(buf, len, "nr_%d", nr);
}

static int sys_by_row(const void *a, const void *b)
{
	const struct prom_sys *x = a, *y = b;

	return x->row != y->row ? (x->row > y->row) - (x->row < y->row)
				: (x->syscall > y->syscall) - (x->syscall < y->syscall);
}

/* One page's blocked time (which 0) or count (1) by syscall of its futures with series
 * of their own (p->sys: sorted by row, then syscall: one line per syscall). */
static void by_syscall_of(struct render *R, const struct page *p, int which, const char *name)
{
	char sys[96];

	for (uint32_t i = 0; i < p->nr_series; i++) {
		uint32_t lo = 0, hi = p->nr_sys;

		if (p->rows[i] == UINT32_MAX)
			continue;
		while (lo < hi) { /* the row's first entry */
			uint32_t mid = lo + (hi - lo) / 2;

			if (p->sys[mid].row < p->rows[i])
				lo = mid + 1;
			else
				hi = mid;
		}
		for (uint32_t k = lo; k < p->nr_sys && p->sys[k].row == p->rows[i]; k++) {
			if (k > lo && p->sys[k].syscall == p->sys[k - 1].syscall)
				continue; /* one line a syscall, whatever the input */
			syscall_label(p->s, p->sys[k].syscall, sys, sizeof(sys));
			if (which)
				fprintf(R->f, "asyncbpf_%s{%s,syscall=\"%s\"} %" PRIu64 "\n", name,
					p->labels[i], sys, p->sys[k].count);
			else
				fprintf(R->f, "asyncbpf_%s{%s,syscall=\"%s\"} %.9f\n", name,
					p->labels[i], sys, (double)p->sys[k].ns / 1e9);
		}
	}
}

static void by_syscall(struct render *R)
{
	static const char *const names[2] = {"future_blocked_seconds_total", "future_blocks_total"};

	for (int which = 0; which < 2; which++) {
		head(R, names[which], "counter",
		     which ? "Voluntary off-CPU intervals inside the future's polls, by syscall "
			     "(futures with series of their own)."
			   : "Voluntary off-CPU time inside the future's polls, by the syscall it "
			     "blocked in (none: a page fault or another wait outside a syscall; "
			     "futures with series of their own).");
		for (uint32_t k = 0; k < R->n; k++)
			by_syscall_of(R, &R->p[k], which, names[which]);
	}
}

static void futures(struct render *R)
{
	char help[512];

#define OFF(f) offsetof(struct poll_stats, f)
	snprintf(help, sizeof(help), "Completed %s.",
		 by_mode(R, "task polls of the task type whose root future this is",
			 "polls of the future (its poll fn)",
			 "polls of the future (its poll fn; in task mode, task polls of the "
			 "task type whose root future this is)"));
	family(R, ALL, "future_polls_total", "counter", help, OFF(records), 1.0);
	family(R, ALL, "future_ready_total", "counter",
	       by_mode(R,
		       "Task polls that finished the task's future: it was there when the poll "
		       "began and gone at its end, the task not cancelled (each task done by "
		       "its own Ready once).",
		       "Polls that returned Ready.",
		       "Polls that returned Ready (in task mode: task polls that finished the "
		       "task's future, the task not cancelled)."),
	       OFF(ready), 1.0);
	family(R, ALL, "future_pending_total", "counter",
	       by_mode(R, "Task polls after which the task's future was still there.",
		       "Polls that returned Pending.",
		       "Polls that returned Pending (in task mode: task polls after which the "
		       "task's future was still there)."),
	       OFF(pending), 1.0);
	family(R, FUTURES_ONLY, "future_panicked_total", "counter", "Polls that panicked.",
	       OFF(panicked), 1.0);
	family(R, ALL, "future_cancelled_total", "counter",
	       by_mode(R,
		       "Tasks cancelled: the runtime's cancel flag (tokio's abort, async-task's "
		       "cancel) was set when the task poll that dropped the future began.",
		       "Instances dropped while suspended at an await.",
		       "Instances dropped while suspended at an await (in task mode: tasks "
		       "whose future a task poll dropped, cancelled when it began)."),
	       OFF(cancelled), 1.0);
	family(R, ALL, "future_started_total", "counter",
	       "Instances whose first poll returned Pending (tasks, in task mode).", OFF(started),
	       1.0);
	head(R, "future_live", "gauge",
	     "Instances started and not finished (a lower bound when "
	     "asyncbpf_lost_events_total{reason=\"live_untracked\"} > 0).");
	for (uint32_t k = 0; k < R->n; k++) {
		const struct page *p = &R->p[k];

		for (uint32_t i = 0; i < p->nr_series; i++) {
			const struct poll_stats *x = series_stats(p, i);
			uint64_t live = p->rows[i] == UINT32_MAX ? p->other_live
					: x->started > x->ended	 ? x->started - x->ended
								 : 0;

			fprintf(R->f, "asyncbpf_future_live{%s} %" PRIu64 "\n", p->labels[i], live);
		}
	}
	family(R, ALL, "future_busy_seconds_total", "counter",
	       "Wall-clock time inside the polls (entry to exit).", OFF(busy_ns), 1e-9);
	histogram(R, ALL, "future_poll_duration_seconds", "One poll's wall-clock time.", OFF(hist),
		  OFF(busy_ns));
	histogram(R, WAKES_ON, "future_schedule_delay_seconds",
		  any_takes(R, WAKES_SAMPLED)
		      ? "A wake to the task's next poll (where wakes are sampled: over the "
			"wakes of the sample)."
		      : "A wake to the task's next poll.",
		  OFF(delay_hist), OFF(delay_ns));
	family(R, WAKES_ALL, "future_wakes_total", "counter", "Wakes of the future's task.",
	       OFF(wakes), 1.0);
	family(R, WAKES_SAMPLED, "future_sampled_wakes_total", "counter",
	       "Wakes seen while the sampled wake probes were attached.", OFF(wakes), 1.0);
	family(R, WAKES_SAMPLED, "future_sampled_polls_total", "counter",
	       "Polls completed while the sampled wake probes were attached.", OFF(window_polls),
	       1.0);
	head(R, "future_offcpu_seconds_total", "counter",
	     "Off-CPU time inside the polls: blocked (waiting in the kernel), preempted, or "
	     "inside the tracer's own probe handling (its cost, not the program's).");
	for (uint32_t k = 0; k < R->n; k++) {
		const struct page *p = &R->p[k];

		for (uint32_t i = 0; i < p->nr_series; i++) {
			const struct poll_stats *x = series_stats(p, i);

			fprintf(R->f,
				"asyncbpf_future_offcpu_seconds_total{%s,reason=\"blocked\"} "
				"%.9f\n"
				"asyncbpf_future_offcpu_seconds_total{%s,reason=\"preempted\"} "
				"%.9f\n"
				"asyncbpf_future_offcpu_seconds_total{%s,reason=\"tracer\"} %.9f\n",
				p->labels[i], (double)x->blocked_ns / 1e9, p->labels[i],
				(double)x->preempted_ns / 1e9, p->labels[i],
				(double)x->tracer_ns / 1e9);
		}
	}
	by_syscall(R);
#undef OFF
}

static void globals(struct render *R)
{
	bool groups = false;

	head(R, "info", "gauge",
	     "What is traced: 1 per process (pid, exe) or followed executable (exe), mode task "
	     "or future.");
	for (uint32_t k = 0; k < R->n; k++) {
		fprintf(R->f, "asyncbpf_info{%s,mode=\"%s\"} 1\n", R->p[k].target,
			R->p[k].s->tasks ? "task" : "future");
		groups |= R->p[k].s->group;
	}
	if (groups) {
		head(R, "processes", "gauge",
		     "Processes of the followed executable being traced now (--exe).");
		for (uint32_t k = 0; k < R->n; k++)
			if (R->p[k].s->group)
				fprintf(R->f, "asyncbpf_processes{%s} %u\n", R->p[k].target,
					R->p[k].s->processes);
		head(R, "processes_seen_total", "counter",
		     "Processes of the followed executable traced since the start (--exe).");
		for (uint32_t k = 0; k < R->n; k++)
			if (R->p[k].s->group)
				fprintf(R->f, "asyncbpf_processes_seen_total{%s} %" PRIu64 "\n",
					R->p[k].target, R->p[k].s->processes_seen);
	}
	head(R, "attached_seconds", "gauge",
	     "Seconds since the probes were attached (--exe: since following began).");
	for (uint32_t k = 0; k < R->n; k++)
		fprintf(R->f, "asyncbpf_attached_seconds{%s} %.3f\n", R->p[k].target,
			R->p[k].s->seconds);
	if (any_takes(R, WAKES_SAMPLED)) {
		head(R, "wake_sample_seconds_total", "counter",
		     "Seconds the sampled wake probes were attached.");
		for (uint32_t k = 0; k < R->n; k++)
			if (takes(&R->p[k], WAKES_SAMPLED))
				fprintf(R->f, "asyncbpf_wake_sample_seconds_total{%s} %.6f\n",
					R->p[k].target, R->p[k].s->wake_sample_seconds);
	}
	head(R, "tracer_probe_hits_total", "counter",
	     "Probe hits by probe and how the kernel ran it.");
	for (uint32_t k = 0; k < R->n; k++) {
		const struct prom_snapshot *s = R->p[k].s;

		for (uint32_t j = 0; j < s->nr_hits; j++)
			fprintf(R->f,
				"asyncbpf_tracer_probe_hits_total{%s,probe=\"%s\",how=\"%s\"} "
				"%" PRIu64 "\n",
				R->p[k].target, s->hits[j].probe, s->hits[j].how, s->hits[j].hits);
	}
	head(R, "tracer_cpu_seconds_total", "counter",
	     "The probes' CPU time in the target's threads: hits times their cost measured at "
	     "start (an estimate).");
	for (uint32_t k = 0; k < R->n; k++)
		fprintf(R->f, "asyncbpf_tracer_cpu_seconds_total{%s} %.9f\n", R->p[k].target,
			(double)R->p[k].s->tracer_cpu_ns / 1e9);
	head(R, "target_cpu_seconds_total", "counter",
	     "The target's CPU time since attach (the tracer's probes included).");
	for (uint32_t k = 0; k < R->n; k++)
		if (R->p[k].s->target_cpu_ns >= 0)
			fprintf(R->f, "asyncbpf_target_cpu_seconds_total{%s} %.9f\n",
				R->p[k].target, (double)R->p[k].s->target_cpu_ns / 1e9);
	head(R, "lost_events_total", "counter", "What the tracer lost or left out, by reason.");
	for (uint32_t k = 0; k < R->n; k++) {
		const struct prom_snapshot *s = R->p[k].s;

		for (uint32_t j = 0; j < s->nr_lost; j++)
			fprintf(R->f, "asyncbpf_lost_events_total{%s,reason=\"%s\"} %" PRIu64 "\n",
				R->p[k].target, s->lost[j].reason, s->lost[j].count);
	}
}

/* One source's series: its exporter chooses them; "other" sums the rest. */
static int page_init(struct page *p, struct prom_exporter *e, const struct prom_snapshot *s)
{
	char exe[ESC_LEN];
	int r = choose(e, s);

	if (r)
		return r;
	p->s = s;
	p->other = e->carry;
	for (uint32_t k = 0; k < s->nr; k++)
		if (!e->member[k]) {
			add_growth(&p->other, &s->stats[k], base_of(e, k));
			if (s->stats[k].started > s->stats[k].ended)
				p->other_live += s->stats[k].started - s->stats[k].ended;
		}
	prom__escape(s->exe ? s->exe : "", exe, sizeof(exe));
	if (s->group)
		snprintf(p->target, sizeof(p->target), "exe=\"%s\"", exe);
	else
		snprintf(p->target, sizeof(p->target), "pid=\"%d\",exe=\"%s\"", s->pid, exe);
	p->rows = malloc((e->nr_members + 1) * sizeof(*p->rows));
	p->labels = malloc((e->nr_members + 1) * sizeof(*p->labels));
	p->sys = malloc((s->nr_sys + 1) * sizeof(*p->sys));
	if (!p->rows || !p->labels || !p->sys)
		return -ENOMEM;
	if (s->nr_sys)
		memcpy(p->sys, s->sys, s->nr_sys * sizeof(*s->sys));
	p->nr_sys = s->nr_sys;
	qsort(p->sys, p->nr_sys, sizeof(*p->sys), sys_by_row);
	for (uint32_t k = 0; k < s->nr; k++)
		if (e->member[k]) {
			snprintf(p->labels[p->nr_series], LABEL_LEN, "future=\"%s\",%s",
				 e->label[k], p->target);
			p->rows[p->nr_series++] = k;
		}
	if (active(&p->other)) {
		snprintf(p->labels[p->nr_series], LABEL_LEN, "future=\"other\",%s", p->target);
		p->rows[p->nr_series++] = UINT32_MAX;
	}
	return 0;
}

int prom__render_many(const struct prom_part *parts, uint32_t n, char **out, size_t *len)
{
	struct render R = {.p = calloc(n + 1, sizeof(*R.p)), .n = n};
	int r = -ENOMEM;

	*out = NULL;
	*len = 0;
	if (!R.p)
		return r;
	for (uint32_t k = 0; k < n; k++)
		if ((r = page_init(&R.p[k], parts[k].e, parts[k].s)))
			goto done;
	r = -ENOMEM;
	if (!(R.f = open_memstream(out, len)))
		goto done;
	futures(&R);
	globals(&R);
	r = fflush(R.f) || ferror(R.f) ? -EIO : 0;
	fclose(R.f);
	if (r) {
		free(*out);
		*out = NULL;
		*len = 0;
		goto done;
	}
	for (uint32_t k = 0; k < n; k++) {
		if (parts[k].s->nr)
			memcpy(parts[k].e->last, parts[k].s->stats,
			       parts[k].s->nr * sizeof(*parts[k].s->stats));
		parts[k].e->rendered = true;
	}
done:
	for (uint32_t k = 0; k < n; k++) {
		free(R.p[k].rows);
		free(R.p[k].labels);
		free(R.p[k].sys);
	}
	free(R.p);
	return r;
}

int prom__render(struct prom_exporter *e, const struct prom_snapshot *s, char **out, size_t *len)
{
	const struct prom_part part = {.e = e, .s = s};

	return prom__render_many(&part, 1, out, len);
}
