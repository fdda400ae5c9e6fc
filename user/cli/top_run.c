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
#include <termios.h>
#include <unistd.h>

#include "cli/trace_run.h"
#include "lib/rb_budget.h"
#include "lib/sysfacts.h"
#include "trace/task_locks.h"
#include "trace/trace_cost.h"
#include "trace/top.h"

bool top_run__raw_keys(struct termios *saved)
{
	struct termios raw;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, saved))
		return false;
	raw = *saved; /* keystrokes one at a time, not echoed, without blocking */
	raw.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	return true;
}

void top_run__restore_keys(const struct termios *saved)
{
	tcsetattr(STDIN_FILENO, TCSANOW, saved);
}

bool top_run__read_keys(bool batch, int *key, bool *quit)
{
	char c;

	while (!batch && isatty(STDIN_FILENO) && read(STDIN_FILENO, &c, 1) == 1) {
		int k = top_key__from_char(c);

		if (c == 'q' || c == 'Q')
			*quit = true;
		else if (k >= 0)
			*key = k;
	}
	return *quit;
}

/* top: a keystroke changes the sort key, q quits (a terminal only). */
bool top_run__keys(struct trace_run *r)
{
	return top_run__read_keys(r->a->batch, &r->top_key, &r->top_quit) ||
	       (r->a->count && r->top_snapshots >= r->a->count);
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

/* The statistics maps now: *cur (malloc'd, *nr rows) and counters. 0 or -1. */
int top_run__read(struct trace_run *r, struct poll_stats **cur, uint32_t *nr, __u64 *counters)
{
	bool tasks = r->plan.task_mode;

	*nr = tasks ? tracer__nr_task_stats(r->t) : tracer__nr_polls(r->t);
	*cur = calloc(*nr ? *nr : 1, sizeof(**cur));
	if (!*cur || (tasks ? tracer__read_task_stats(r->t, *cur, counters)
			    : tracer__read_stats(r->t, *cur, counters))) {
		free(*cur);
		*cur = NULL;
		return -1;
	}
	return 0;
}

void top_run__prom_in(struct trace_run *r, const struct poll_stats *cur, uint32_t nr,
		      const __u64 *counters, int64_t cpu, uint64_t now, struct top_prom_in *pin)
{
	bool tasks = r->plan.task_mode;

	*pin = (struct top_prom_in){
	    .tasks = tasks,
	    .nr = nr,
	    .stats = cur,
	    .counters = counters,
	    .name = tasks ? top_task_name : top_poll_name,
	    .ctx = r,
	    .t = r->t,
	    .per_hit = &r->sum.costs,
	    .wakes = !r->plan.nr_wakes ? TOP_WAKES_OFF
		     : r->ws	       ? TOP_WAKES_SAMPLED
				       : TOP_WAKES_ALL,
	    .wake_seconds = r->ws ? (double)wake_sampler__on_ns(r->ws, now) / 1e9 : 0,
	    .pid = (int)session__pid(r->s),
	    .exe = session__exe(r->s),
	    .target_cpu_ns =
		cpu >= 0 && r->cpu_start >= 0 && cpu >= r->cpu_start ? cpu - r->cpu_start : -1,
	    .seconds = (double)(now - r->attached_ns) / 1e9,
	};
}

/* top --locks: the locks table, from the trees that reached the consumer. */
static void top_locks(struct trace_run *r, double dt, const __u64 *counters)
{
	uint64_t lost =
	    counters[COUNTER_TASK_DROPPED] - r->top_prev_counters[COUNTER_TASK_DROPPED] +
	    counters[COUNTER_TREE_NOT_READ] - r->top_prev_counters[COUNTER_TREE_NOT_READ];

	/* the trees sent until now, before the table (a round of them at most: the rest
	 * counts in the next interval) */
	rb_budget__consume(r->rb, &r->budget, RB_BUDGET_ROUND);
	if (lost)
		printf(
		    "\nWARNING: %" PRIu64 " task trees lost in this interval (the ring buffer "
		    "full, or a walk overlapped): the locks below may miss or misstate waits and "
		    "holds\n",
		    lost);
	/* now: after the trees just read, which may have ended after the tick began */
	task_locks__top(r->sum.locks, sysfacts__now_ns(), dt, stdout, r->a->batch ? 0 : 10);
}

/* top: the table of the last interval, from the statistics maps (no records). */
void top_run__tick(void *ctx, uint64_t now, uint64_t start)
{
	struct trace_run *r = ctx;
	bool tasks = r->plan.task_mode;
	struct poll_stats *cur;
	uint32_t nr;
	struct top_row *rows = NULL;
	__u64 counters[COUNTER_COUNT];
	int n;

	if (top_run__read(r, &cur, &nr, counters))
		return;
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
		struct top_prom_in pin;

		top_run__prom_in(r, cur, nr, counters, cpu, now, &pin);
		top_prom__publish(r->prom, &pin);
	}
	if (!r->top_prev) { /* the first read: the baseline */
		r->top_prev = cur;
		r->top_prev_nr = nr;
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
	if (!r->a->batch && !r->top_section)
		fputs("\033[H\033[2J", stdout);
	else if (r->top_snapshots || r->top_section)
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
	if (counters[COUNTER_TASK_END_UNSURE])
		printf("%" PRIu64
		       " task ends (since start) came with a cancel pending and could not "
		       "be told Ready or cancelled: not in DONE/S "
		       "(docs/top.md)\n",
		       (uint64_t)counters[COUNTER_TASK_END_UNSURE]);
	if (n >= 0)
		top__print(stdout, &names, rows, n, r->a->batch ? 0 : 30);
	if (r->a->locks)
		top_locks(r, in.dt, counters);
	fflush(stdout);
	free(rows);
next:
	r->top_snapshots++;
	free(r->top_prev);
	r->top_prev = cur;
	r->top_prev_nr = nr;
	r->top_prev_ns = now;
	memcpy(r->top_prev_counters, counters, sizeof(counters));
	r->top_prev_cpu = cpu;
}
