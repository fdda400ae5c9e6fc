// SPDX-License-Identifier: GPL-2.0
/*
 * top's side of a tracer run (docs/top.md): every interval, the statistics maps read
 * into one table of rates, and with --prometheus into the endpoint's page
 * (docs/metrics.md); keystrokes switch the sort key.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/trace_run.h"
#include "lib/sysfacts.h"
#include "trace/trace_cost.h"
#include "trace/top.h"

/* top: a keystroke changes the sort key, q quits (a terminal only). */
bool top_run__keys(struct trace_run *r)
{
	char c;

	while (!r->a->batch && isatty(STDIN_FILENO) && read(STDIN_FILENO, &c, 1) == 1) {
		int k = top_key__from_char(c);

		if (c == 'q' || c == 'Q')
			r->top_quit = true;
		else if (k >= 0)
			r->top_key = k;
	}
	return r->top_quit || (r->a->count && r->top_snapshots >= r->a->count);
}

/* top's row names: a poll fn's future, or (task mode) a task type's root future */
static void top_poll_name(void *ctx, uint32_t index, char *buf, size_t len)
{
	summary__poll_name(&((struct trace_run *)ctx)->m, index, buf, len);
}

static void top_task_name(void *ctx, uint32_t index, char *buf, size_t len)
{
	const struct trace_run *r = ctx;
	const struct model *m = &r->m;
	int64_t f = index < m->nr_task_types ? m->task_types[index].future
		    : index - m->nr_task_types < r->plan.nr_root_types
			? (int64_t)r->plan.root_types[index - m->nr_task_types]
			: -1;

	if (f >= 0 && (uint64_t)f < m->nr_futures)
		future__display_name(&m->futures[f], buf, len);
	else
		snprintf(buf, len, "(task type %u)", index);
}

/* The time the sampled wake probes were attached since the last table. */
static double top_wake_seconds(struct trace_run *r, uint64_t now)
{
	uint64_t on = r->ws ? wake_sampler__on_ns(r->ws, now) : 0, d = on - r->top_prev_wake_ns;

	r->top_prev_wake_ns = on;
	return (double)d / 1e9;
}

/* top: the table of the last interval, from the statistics maps (no records). */
void top_run__tick(void *ctx, uint64_t now, uint64_t start)
{
	struct trace_run *r = ctx;
	bool tasks = r->plan.task_mode;
	uint32_t nr = tasks ? tracer__nr_task_stats(r->t) : tracer__nr_polls(r->t);
	struct poll_stats *cur = calloc(nr, sizeof(*cur));
	struct top_row *rows = NULL;
	__u64 counters[COUNTER_COUNT];
	int n;

	if (!cur || (tasks ? tracer__read_task_stats(r->t, cur, counters)
			   : tracer__read_stats(r->t, cur, counters))) {
		free(cur);
		return;
	}
	int64_t cpu = sysfacts__process_cpu_ns((int)session__pid(r->s));
	struct tracer_cost cost = {.hits_known = true, .per_hit = r->sum.costs};
	double wake_s = top_wake_seconds(r, now);
	struct top_interval in = {.dt = (double)(now - r->top_prev_ns) / 1e9,
				  .wakes = !r->plan.nr_wakes ? TOP_WAKES_OFF
					   : r->ws	     ? TOP_WAKES_SAMPLED
							     : TOP_WAKES_ALL,
				  .tasks = tasks,
				  .key = (enum top_key)r->top_key};
	struct top_names names = {
	    .tasks = tasks, .name = tasks ? top_task_name : top_poll_name, .ctx = r};
	double share;

	if (r->prom) {
		struct top_prom_in pin = {
		    .tasks = tasks,
		    .nr = nr,
		    .stats = cur,
		    .counters = counters,
		    .name = names.name,
		    .ctx = r,
		    .t = r->t,
		    .per_hit = &r->sum.costs,
		    .wakes = in.wakes,
		    .wake_seconds = r->ws ? (double)wake_sampler__on_ns(r->ws, now) / 1e9 : 0,
		    .pid = (int)session__pid(r->s),
		    .exe = session__exe(r->s),
		    .target_cpu_ns = cpu >= 0 && r->cpu_start >= 0 && cpu >= r->cpu_start
					 ? cpu - r->cpu_start
					 : -1,
		    .seconds = (double)(now - start) / 1e9,
		};

		top_prom__publish(r->prom, &pin);
	}
	if (!r->top_prev) { /* the first read: the baseline */
		r->top_prev = cur;
		r->top_prev_ns = now;
		memcpy(r->top_prev_counters, counters, sizeof(counters));
		r->top_prev_cpu = cpu;
		return;
	}
	/* the tracer's own cost over the interval (trace_cost.h) */
	tracer_cost__set_hits(&cost, counters, r->top_prev_counters);
	cost.target_cpu_ns =
	    cpu >= 0 && r->top_prev_cpu >= 0 && cpu >= r->top_prev_cpu ? cpu - r->top_prev_cpu : -1;
	share = tracer_cost__share(&cost);
	if (r->a->quiet) /* --prometheus only */
		goto next;
	n = top__rows(r->top_prev, cur, nr, &in, &rows);
	if (!r->a->batch)
		fputs("\033[H\033[2J", stdout);
	else if (r->top_snapshots)
		fputs("\n", stdout);
	printf("asyncbpf top: pid %d, %.0f s, every %.1f s, sorted by %s%s\n",
	       (int)session__pid(r->s), (double)(now - start) / 1e9, r->a->interval,
	       top_key__name((enum top_key)r->top_key),
	       r->a->batch ? "" : " (keys: b p 9 B w d c l, q quits)");
	if (share >= 0)
		printf("the tracer's probes: ~%.1f%% of the target's CPU time in this interval%s\n",
		       share, share >= TRACER_COST_WARN_PERCENT ? " (WARNING: large)" : "");
	if (r->ws)
		printf("wakes sampled: probes attached %.2f s of these %.2f s (--wake-sample): "
		       "WAKES/S from the wakes per poll of that sample, DELAY99 of its wakes\n",
		       wake_s, in.dt);
	if (counters[COUNTER_LIVE_FULL])
		printf("LIVE is a lower bound: %u instances at once is the most tracked (%" PRIu64
		       " not tracked)\n",
		       TOP_MAX_LIVE_INSTANCES, (uint64_t)counters[COUNTER_LIVE_FULL]);
	if (n >= 0)
		top__print(stdout, &names, rows, n, r->a->batch ? 0 : 30);
	fflush(stdout);
	free(rows);
next:
	r->top_snapshots++;
	free(r->top_prev);
	r->top_prev = cur;
	r->top_prev_ns = now;
	memcpy(r->top_prev_counters, counters, sizeof(counters));
	r->top_prev_cpu = cpu;
}
