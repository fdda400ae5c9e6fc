// SPDX-License-Identifier: GPL-2.0
/*
 * The summary as text (docs/tracing.md, "Summary"): one row per traced poll fn,
 * busiest first; the futures still pending at the end (top groups); the busiest
 * tasks; the totals, and a WARNING line for every kind of loss.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/syscalls.h"
#include "lib/text.h"
#include "trace/trace_summary.h"

/* Names in the text tables: the future's, its generic arguments shortened to fit. */
#define TEXT_NAME_MAX 100

static void text_name(const struct model *m, uint32_t poll, char *buf, size_t len)
{
	char full[4096];

	summary__poll_label(m, poll, full, sizeof(full));
	rust__abbreviate(full, buf, len, TEXT_NAME_MAX);
}

/* Width 10 either way: "≈" is one column but three bytes. */
static void print_us(FILE *out, uint64_t ns, bool approximate)
{
	if (approximate)
		fprintf(out, " \u2248%9.1f", (double)ns / 1e3);
	else
		fprintf(out, " %10.1f", (double)ns / 1e3);
}

static void print_row(const struct trace_summary *s, const struct summary_row *r, FILE *out)
{
	const struct poll_summary *ps = &s->polls[r->poll];
	char name[256];

	text_name(s->m, r->poll, name, sizeof(name));
	fprintf(out,
		"%8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
		" %8" PRIu64 " %10.3f",
		ps->polls, ps->counts[POLL_READY], ps->counts[POLL_PENDING],
		ps->counts[POLL_PANICKED], ps->counts[POLL_TRUNCATED], ps->counts[POLL_OPEN],
		ps->counts[POLL_UNKNOWN], (double)r->busy_ns / 1e6);
	print_us(out, r->p50, r->from_histogram);
	print_us(out, r->p99, r->from_histogram);
	print_us(out, r->max, r->from_histogram);
	fprintf(out, " %8" PRIu64, ps->lifetimes.nr);
	print_us(out, r->life_p50, false);
	print_us(out, r->life_p99, false);
	fprintf(out, "  %s", name);
	if (r->dropped)
		fprintf(out,
			"  (%" PRIu64
			" records dropped: busy time from the BPF counters, \u2248 from "
			"its histogram)",
			r->dropped);
	fputc('\n', out);
}

static void print_futures(struct trace_summary *s, FILE *out)
{
	uint32_t nr;
	struct summary_row *r = trace_summary__rows(s, &nr);

	fprintf(out, "%8s %8s %8s %8s %8s %8s %8s %10s %10s %10s %10s %8s %10s %10s  %s\n", "POLLS",
		"READY", "PENDING", "PANICKED", "TRUNC", "RUNNING", "UNKNOWN", "BUSY_MS", "P50_US",
		"P99_US", "MAX_US", "LIVES", "LIFE50_US", "LIFE99_US", "FUTURE");
	for (uint32_t i = 0; r && i < nr; i++)
		print_row(s, &r[i], out);
	if (!r)
		s->oom = true;
	else if (!nr)
		fprintf(out, "(no poll completed)\n");
	free(r);
}

static void print_group(const struct trace_summary *s, const struct pending_group *g, FILE *out)
{
	char name[256];
	uint32_t line = 0;
	const char *file;

	text_name(s->m, g->poll, name, sizeof(name));
	fprintf(out, "  %8" PRIu64 " \u00d7 %s ", g->count, name);
	file = summary__await_site(s->m, g->poll, g->await_index, &line);
	if (g->result == POLL_OPEN) {
		fprintf(out, "running when tracing stopped");
		if (g->await_index >= 0)
			fprintf(out, " (resumed from %s:%u, await #%d)", file ? file : "?", line,
				g->await_index);
		fputc('\n', out);
		return;
	}
	if (g->await_index >= 0)
		fprintf(out, "pending at %s:%u (await #%d)\n", file ? file : "?", line,
			g->await_index);
	else if (file)
		fprintf(out, "pending (no await point; declared at %s:%u)\n", file, line);
	else
		fprintf(out, "pending (no await point)\n");
}

static void print_pending(struct trace_summary *s, FILE *out)
{
	struct pending_report r;
	uint32_t shown;

	if (instance_table__pending(&s->instances, &r)) {
		s->oom = true;
		return;
	}
	if (!r.nr)
		fprintf(out, "\nno future pending at the end\n");
	else
		fprintf(out,
			"\nfutures still pending at the end: %" PRIu64 " pending, %" PRIu64
			" running when tracing stopped\n",
			r.pending, r.running);
	shown = r.nr < TRACE_SUMMARY_TEXT_PENDING ? r.nr : TRACE_SUMMARY_TEXT_PENDING;
	for (uint32_t i = 0; i < shown; i++)
		print_group(s, &r.groups[i], out);
	if (r.nr > shown)
		fprintf(out, "  ... and %u more (all of them in --summary-json)\n", r.nr - shown);
	if (r.truncated || r.unknown)
		fprintf(out,
			"  not listed: %" PRIu64 " whose last poll was truncated, %" PRIu64
			" whose last result is unknown\n",
			r.truncated, r.unknown);
	pending_report__free(&r);
}

static void print_task(const struct trace_summary *s, const struct task_summary *t, FILE *out)
{
	char name[256];

	if (t->poll < s->m->nr_polls)
		text_name(s->m, t->poll, name, sizeof(name));
	else
		snprintf(name, sizeof(name), "(poll %u)", t->poll);
	fprintf(out, "%8" PRIu64 " %10" PRIu64 " %10.3f %10.3f %10.3f  %-4s  %s @ 0x%" PRIx64 "\n",
		t->own_polls, t->all_polls, (double)t->busy_ns / 1e6,
		(double)task_summary__idle(t) / 1e6,
		t->has_own ? (double)(t->last_end_ns - t->first_start_ns) / 1e6 : 0.0,
		t->completed ? "yes" : "no", name, t->self);
}

static void print_tasks(struct trace_summary *s, FILE *out)
{
	const struct task_table *t = &s->tasks;
	uint32_t nr_types = 0, nr_list = 0, shown;
	struct task_type_row *types = task_table__types(t, &nr_types);
	struct task_summary *list = task_table__list(t, &nr_list);
	char name[256];

	if ((!types && t->count) || (!list && t->count)) {
		s->oom = true;
		goto out;
	}
	fprintf(out, "\ntasks: %" PRIu64 " (%" PRIu64 " completed), busy %.3f ms, idle %.3f ms%s\n",
		t->count, t->completed, (double)task_table__busy_ns(t) / 1e6,
		(double)task_table__idle_ns(t) / 1e6,
		t->roots ? ""
			 : " (no runtime task type known: a task is an outermost traced frame)");
	if (t->outside_polls)
		fprintf(out,
			"  and %" PRIu64 " polls of futures within tasks whose root future is not "
			"traced (%.3f ms busy at their outermost traced frame)\n",
			t->outside_polls, (double)t->outside_ns / 1e6);
	if (nr_types > 1) {
		fprintf(out, "%8s %9s %10s %10s %10s %10s  %s\n", "TASKS", "COMPLETED", "POLLS",
			"BUSY_MS", "IDLE_MS", "MAX_MS", "BY ROOT FUTURE");
		for (uint32_t i = 0; i < nr_types && i < TRACE_SUMMARY_TEXT_TASKS; i++) {
			const struct task_type_row *r = &types[i];

			if (r->poll < s->m->nr_polls)
				text_name(s->m, r->poll, name, sizeof(name));
			else
				snprintf(name, sizeof(name), "(poll %u)", r->poll);
			fprintf(out,
				"%8" PRIu64 " %9" PRIu64 " %10" PRIu64
				" %10.3f %10.3f %10.3f  %s\n",
				r->tasks, r->completed, r->own_polls, (double)r->busy_ns / 1e6,
				(double)r->idle_ns / 1e6, (double)r->max_busy_ns / 1e6, name);
		}
		if (nr_types > TRACE_SUMMARY_TEXT_TASKS)
			fprintf(out, "  ... and %u more root futures\n",
				nr_types - TRACE_SUMMARY_TEXT_TASKS);
	}
	shown = nr_list < TRACE_SUMMARY_TEXT_TASKS ? nr_list : TRACE_SUMMARY_TEXT_TASKS;
	if (shown) {
		fprintf(out, "the busiest %u:\n", shown);
		fprintf(out, "%8s %10s %10s %10s %10s  %-4s  %s\n", "POLLS", "ALL_POLLS", "BUSY_MS",
			"IDLE_MS", "SPAN_MS", "DONE", "TASK");
	}
	for (uint32_t i = 0; i < shown; i++)
		print_task(s, &list[i], out);
out:
	free(types);
	free(list);
}

static void print_warnings(const struct trace_summary *s, const struct trace_run_totals *t,
			   FILE *out)
{
	const struct trace_totals *tt = &t->totals;

	if (tt->dropped)
		fprintf(
		    out,
		    "WARNING: %" PRIu64 " records DROPPED (ring buffer full): the trace has "
		    "holes; the busy times and \u2248 percentiles of the futures concerned come "
		    "from the BPF statistics, their counts by result, lifetimes, pending futures "
		    "and tasks miss the dropped polls; raise --ringbuf-size\n",
		    tt->dropped);
	if (tt->truncated)
		fprintf(out,
			"WARNING: %" PRIu64
			" polls TRUNCATED (their exit was never seen: an unwind, "
			"or an exit the kernel cannot probe): their end times are bounds\n",
			tt->truncated);
	if (tt->probes_failed)
		fprintf(out,
			"WARNING: %" PRIu64 " probes FAILED to attach: their polls are missing\n",
			tt->probes_failed);
	if (t->stack_overflow)
		fprintf(out,
			"WARNING: %" PRIu64 " polls nested deeper than %d traced frames were not "
			"traced\n",
			t->stack_overflow, TRACE_MAX_DEPTH);
	if (s->instances.untracked_polls)
		fprintf(out,
			"WARNING: %" PRIu64 " polls of future instances past the cap of %u live "
			"instances: their lifetimes and pending state are not counted\n",
			s->instances.untracked_polls, s->instances.max);
	if (s->tasks.untracked_polls)
		fprintf(out,
			"WARNING: %" PRIu64
			" polls of tasks past the cap of %u live tasks (%" PRIu64
			" such tasks ended): not in the task counts\n",
			s->tasks.untracked_polls, s->tasks.max, s->tasks.untracked_tasks);
	if (s->bad_records)
		fprintf(out, "WARNING: %" PRIu64 " malformed records ignored\n", s->bad_records);
	for (uint32_t p = 0; s->polls && p < s->m->nr_polls; p++) {
		char name[512], folded[1024];

		if (!s->m->polls[p].nr_folded || !s->polls[p].polls)
			continue;
		text_name(s->m, p, name, sizeof(name));
		summary__folded_names(s->m, p, folded, sizeof(folded));
		fprintf(
		    out,
		    "NOTE: %s: the compiler folded the identical poll code of %s into this "
		    "function; its polls cannot be told apart, its counts are theirs together\n",
		    name, folded);
	}
	uint64_t by[UNKNOWN_REASON_COUNT], unknown = trace_summary__unknown(s, by);
	if (unknown) {
		const char *sep = "";

		fprintf(out, "WARNING: %" PRIu64 " results UNKNOWN (not guessed): ", unknown);
		for (unsigned r = 0; r < UNKNOWN_REASON_COUNT; r++)
			if (by[r]) {
				fprintf(out, "%s%" PRIu64 " %s", sep, by[r],
					unknown_reason__text(r));
				sep = "; ";
			}
		fputc('\n', out);
	}
	if (s->oom)
		fprintf(out,
			"WARNING: out of memory: percentiles, lifetimes and tasks are partial\n");
}

/* The probe costs measured at start, and what was taken out of durations. */
static void print_probe_cost(const struct trace_summary *s, const struct tracer_cost *tc, FILE *out)
{
	const struct probe_costs *c = &s->costs;

	if (!c->measured) {
		fprintf(out, "probe cost not measured: durations include the probes of traced "
			     "polls inside them\n");
		return;
	}
	fprintf(out,
		"probe cost per hit (measured at start): emulated %" PRIu64
		" ns, single-stepped %" PRIu64 " ns, return %" PRIu64 " ns; %.3f ms of traced "
		"children's probes taken out of %" PRIu64 " polls' durations\n",
		c->emulated_ns, c->stepped_ns, c->returned_ns, (double)s->probe_subtracted_ns / 1e6,
		s->probe_adjusted);
	if (s->probe_overcorrected)
		fprintf(out,
			"NOTE: %" PRIu64
			" polls were shorter than the estimated cost of the probes "
			"inside them: counted as 0 ns\n",
			s->probe_overcorrected);
	double drift = tracer_cost__drift(tc, &s->costs_end);
	if (drift < 0)
		return;
	fprintf(out,
		"probe cost per hit measured again after detaching: emulated %" PRIu64
		" ns, single-stepped %" PRIu64 " ns (%.0f %% apart)\n",
		s->costs_end.emulated_ns, s->costs_end.stepped_ns, drift);
	if (drift > PROBE_COST_DRIFT_WARN)
		fprintf(out,
			"WARNING: a probe hit's cost changed by %.0f %% during the trace (the "
			"machine's load or its hypervisor): the %.3f ms taken out of durations may "
			"be off by ~%.3f ms; trace again on a quieter machine for exact busy "
			"times\n",
			drift, (double)s->probe_subtracted_ns / 1e6,
			drift / 100 * (double)s->probe_subtracted_ns / 1e6);
}

/* ---- blocking inside polls ---- */

static int cmp_syscall(const void *x, const void *y)
{
	const struct syscall_time *a = x, *b = y;

	return a->ns < b->ns ? 1 : a->ns > b->ns ? -1 : 0;
}

/* "clock_nanosleep 2001.2 ms (1), read 3.0 ms (2)": the biggest first. */
static void syscalls_text(const struct block_summary *b, char *buf, size_t len)
{
	struct syscall_time v[SUMMARY_SYSCALLS];
	size_t o = 0;

	memcpy(v, b->by_syscall, sizeof(v));
	qsort(v, b->nr_syscalls, sizeof(v[0]), cmp_syscall);
	buf[0] = '\0';
	for (uint32_t i = 0; i < b->nr_syscalls && i < 3 && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s %.1f ms (%" PRIu64 ")", i ? ", " : "",
				      v[i].nr < 0 ? "not in a syscall" : syscall__name(v[i].nr),
				      (double)v[i].ns / 1e6, v[i].count);
	if (b->nr_syscalls > 3 && o < len)
		snprintf(buf + o, len - o, ", ...");
}

static void print_blocking(const struct trace_summary *s, FILE *out)
{
	char name[256], calls[256];
	bool header = false;
	uint64_t warned = 0;

	if (s->blocking_off) {
		fprintf(out, "\nblocking inside polls: %s\n", s->blocking_off);
		return;
	}
	for (uint32_t p = 0; p < s->m->nr_polls; p++) {
		const struct block_summary *b = &s->polls[p].block;
		const struct poll_summary *ps = &s->polls[p];

		if (!b->blocked && !b->preempted)
			continue; /* the tracer's own off-CPU time is said with its cost */
		if (!header) {
			fprintf(out, "\noff-CPU inside polls (blamed on the innermost traced poll; "
				     "cpu = poll time less off-CPU):\n");
			fprintf(out, "  %-40s %8s %10s %10s %10s %8s  %s\n", "future", "blocked",
				"total ms", "max ms", "preempt ms", "cpu %", "by syscall");
			header = true;
		}
		text_name(s->m, p, name, sizeof(name));
		syscalls_text(b, calls, sizeof(calls));
		fprintf(out, "  %-40s %8" PRIu64 " %10.1f %10.1f %10.1f %7.1f%%  %s\n", name,
			b->blocked, (double)b->blocked_ns / 1e6, (double)b->blocked_max_ns / 1e6,
			(double)b->preempted_ns / 1e6,
			ps->busy_ns ? 100.0 *
					  (double)(ps->busy_ns - (b->offcpu_ns < ps->busy_ns
								      ? b->offcpu_ns
								      : ps->busy_ns)) /
					  (double)ps->busy_ns
				    : 0.0,
			calls);
	}
	if (!header)
		fprintf(out, "\nblocking inside polls: watched; no traced poll went off-CPU\n");
	if (s->blocked_at_stop)
		fprintf(out,
			"(%" PRIu64 " thread%s off-CPU inside a poll when tracing stopped: that "
			"interval had no end and is not counted)\n",
			s->blocked_at_stop, s->blocked_at_stop == 1 ? " was" : "s were");
	for (uint32_t p = 0; p < s->m->nr_polls; p++) {
		const struct block_summary *b = &s->polls[p].block;
		const char *file = NULL;
		uint32_t line = 0;

		if (!b->over)
			continue;
		if (!warned++)
			fputs("\n", out);
		text_name(s->m, p, name, sizeof(name));
		if (b->worst_await >= 0)
			file = summary__await_site(s->m, p, b->worst_await, &line);
		fprintf(out,
			"BLOCKING: %s blocked its thread %.1f ms in one poll (%s, thread %" PRIu64
			"), ",
			name, (double)b->worst_ns / 1e6,
			b->worst_syscall < 0 ? "not in a syscall" : syscall__name(b->worst_syscall),
			b->worst_tid);
		if (file)
			fprintf(out, "resumed at %s:%u", path__short(file), line);
		else
			fprintf(out, "in its first poll");
		fprintf(out, "; %" PRIu64 " poll%s over %.1f ms\n", b->over,
			b->over == 1 ? "" : "s", (double)s->block_threshold_ns / 1e6);
	}
}

/* ---- wake-ups ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void waker_name(const struct trace_summary *s, uint32_t poll, char *buf, size_t len)
{
	if (poll == TRACE_NO_INDEX || poll >= s->m->nr_polls)
		snprintf(buf, len, "not in a traced poll");
	else
		text_name(s->m, poll, buf, len);
}

static void print_wakes(struct trace_summary *s, FILE *out)
{
	char name[256], who[256];
	bool header = false;

	if (!s->wakes_watched) {
		fprintf(out, "\nwake-ups: not watched (--no-wakes, or no runtime wake function "
			     "known)\n");
		return;
	}
	for (uint32_t p = 0; p < s->m->nr_polls; p++) {
		struct wake_summary *w = &s->polls[p].wake;
		uint64_t n = w->delays.nr;

		if (!w->wakes)
			continue;
		if (!header) {
			fprintf(out, "\nwake-ups (a task woken, then polled; delay = wake -> poll "
				     "start):\n");
			fprintf(out, "  %-36s %7s %6s %10s %10s %10s  %s\n", "task", "wakes",
				"self", "delay p50", "p99 us", "max us", "woken by (most first)");
			header = true;
		}
		if (n)
			qsort(w->delays.v, n, sizeof(uint64_t), cmp_u64);
		text_name(s->m, p, name, sizeof(name));
		fprintf(out, "  %-36s %7" PRIu64 " %6" PRIu64 " %10.1f %10.1f %10.1f  ", name,
			w->wakes, w->self_wakes,
			(double)u64_vec__percentile(w->delays.v, n, 50) / 1e3,
			(double)u64_vec__percentile(w->delays.v, n, 99) / 1e3,
			n ? (double)w->delays.v[n - 1] / 1e3 : 0.0);
		for (uint32_t i = 0; i < w->nr_wakers && i < 3; i++) { /* most first */
			waker_name(s, w->wakers[i].poll, who, sizeof(who));
			fprintf(out, "%s%s x%" PRIu64, i ? ", " : "", who, w->wakers[i].count);
		}
		fputs("\n", out);
	}
	if (!header)
		fprintf(out,
			"\nwake-ups: watched (%" PRIu64 " wakes); none led to a traced task "
			"poll\n",
			s->wakes);
	summary_wake__print_sample(s, out);
	if (s->wakes_unknown || summary_wake__unmatched(s))
		fprintf(out,
			"wake-ups not linked: %" PRIu64
			" of a task whose type is not known, %" PRIu64
			" with no poll of the task afterwards while traced\n",
			s->wakes_unknown, summary_wake__unmatched(s));
}

/* ---- cancellation ---- */

static void print_cancel(const struct trace_summary *s, FILE *out)
{
	char name[256];
	bool header = false;

	if (!s->cancel_watched) {
		fprintf(out, "\ncancellations: not watched (--no-cancel)\n");
		return;
	}
	for (uint32_t p = 0; p < s->m->nr_polls; p++) {
		const struct cancel_summary *c = &s->polls[p].cancel;

		if (!c->cancelled)
			continue;
		if (!header) {
			fprintf(out, "\ncancelled (dropped while suspended at an await):\n");
			fprintf(out, "  %-40s %9s %7s  %s\n", "future", "cancelled", "drops", "at");
			header = true;
		}
		text_name(s->m, p, name, sizeof(name));
		fprintf(out, "  %-40s %9" PRIu64 " %7" PRIu64 "  ", name, c->cancelled, c->drops);
		for (uint32_t i = 0; i < c->nr_at; i++) {
			uint32_t line = 0;
			const char *file =
			    c->at[i].await_index >= 0
				? summary__await_site(s->m, p, c->at[i].await_index, &line)
				: NULL;

			if (file)
				fprintf(out, "%s%s:%u x%" PRIu64, i ? ", " : "", path__short(file),
					line, c->at[i].count);
			else
				fprintf(out, "%s%s x%" PRIu64, i ? ", " : "",
					c->at[i].await_index < 0 ? "after a Pending" : "an await",
					c->at[i].count);
		}
		if (c->at_other)
			fprintf(out, ", others x%" PRIu64, c->at_other);
		fputs("\n", out);
	}
	if (!header)
		fprintf(out,
			"\ncancellations: watched (%" PRIu64 " drops of traced futures); none "
			"cancelled\n",
			s->drops);
}

void trace_summary__print(struct trace_summary *s, const struct trace_run_totals *t, FILE *out)
{
	const struct trace_totals *tt = &t->totals;

	if (s->task_mode) { /* its own sections: futures, tasks, wakes, off-CPU */
		summary_tasks__print(s, out);
		summary_wake__print_sample(s, out);
		summary_tasks__print_more(s, out);
		summary_tasks__print_totals(s, t, out);
		tracer_cost__print(&t->cost, out);
		print_warnings(s, t, out);
		return;
	}
	print_futures(s, out);
	print_pending(s, out);
	print_tasks(s, out);
	print_blocking(s, out);
	print_wakes(s, out);
	print_cancel(s, out);
	fprintf(out,
		"\nrecords %" PRIu64 ", dropped %" PRIu64 ", truncated %" PRIu64
		", running at stop %" PRIu64 ", probes attached %" PRIu64 ", probes failed %" PRIu64
		", unprobeable exits %" PRIu64 ", unmatched exits %" PRIu64
		", untracked polls %" PRIu64 ", duration %.3f s\n",
		tt->polls, tt->dropped, tt->truncated, trace_summary__running(s),
		tt->probes_attached, tt->probes_failed, t->unprobeable_exits, t->unmatched_exits,
		s->instances.untracked_polls + s->tasks.untracked_polls,
		(double)tt->duration_ns / 1e9);
	uint64_t exits, stepped = trace_summary__stepped_exits(s, &exits);
	if (exits)
		fprintf(out,
			"exits single-stepped %" PRIu64 " of %" PRIu64 " (%.1f%%); the rest on "
			"emulated instructions or return probes\n",
			stepped, exits, 100.0 * (double)stepped / (double)exits);
	print_probe_cost(s, &t->cost, out);
	tracer_cost__print(&t->cost, out);
	print_warnings(s, t, out);
}
