// SPDX-License-Identifier: GPL-2.0
/* top on several processes, or on every process of an executable (top_fleet.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>

#include "cli/fleet.h"
#include "cli/top_fleet.h"
#include "cli/trace_run.h"
#include "lib/exe_match.h"
#include "lib/exitcodes.h"
#include "lib/log.h"
#include "lib/sysfacts.h"
#include "trace/trace_cost.h"

/* One process traced. */
struct member {
	struct trace_args a; /* the command's, a.pid this process */
	struct trace_run r;
	struct top_prom_src *src; /* -p: its own; --exe: the executable's */
	/* gone: its statistics when it went */
	struct poll_stats *last;
	uint32_t nr_last;
	__u64 counters[COUNTER_COUNT];
	bool refused; /* its page said once that its mode differs from its executable's */
};

struct top_fleet {
	const struct trace_args *a;
	struct top_prom *prom;
	struct top_prom_src *group; /* --exe */
	long tables;
	int key;
	bool quit;
};

static int open_run(void *ctx, pid_t pid, void **run)
{
	struct top_fleet *tf = ctx;
	struct member *mb = calloc(1, sizeof(*mb));
	int status;

	if (!mb)
		return EXIT_FAILURE_INTERNAL;
	mb->a = *tf->a;
	mb->a.pid = pid;
	mb->r.a = &mb->a;
	if ((status = trace_run__open_session(&mb->r))) {
		trace_run__free(&mb->r);
		free(mb);
		return status;
	}
	*run = mb;
	return EXIT_OK;
}

static struct session *session_of(void *run)
{
	return ((struct member *)run)->r.s;
}

static void model_of(void *run, struct model **m, struct run_model **own)
{
	struct member *mb = run;

	*m = &mb->r.m;
	*own = &mb->r.model_own;
}

static int start_run(void *ctx, void *run)
{
	struct top_fleet *tf = ctx;
	struct member *mb = run;
	int status;

	if ((status = trace_run__start(&mb->r)))
		return status;
	if (tf->prom &&
	    !(mb->src =
		  tf->group ? tf->group : top_prom__source(tf->prom, false, session__exe(mb->r.s))))
		return EXIT_FAILURE_INTERNAL;
	/* the baseline of its first table */
	top_run__tick(&mb->r, sysfacts__now_ns(), mb->r.attached_ns);
	return EXIT_OK;
}

static void ring(void *run, struct ring_buffer **rb, struct rb_budget **budget)
{
	struct member *mb = run;

	*rb = mb->r.rb;
	*budget = &mb->r.budget;
}

static uint32_t execs(void *run)
{
	return tracer__exec_count(((struct member *)run)->r.t);
}

static uint64_t pulse(void *run, uint64_t now)
{
	struct member *mb = run;

	return mb->r.ws ? wake_sampler__pulse(mb->r.ws, now) : 0;
}

static void print_cost(struct member *mb)
{
	fprintf(stderr, "\npid %d (%s):", (int)mb->a.pid, session__exe(mb->r.s));
	tracer_cost__print(&mb->r.totals.cost, stderr);
}

/* A process exited (or executed another program): its last statistics kept for the
 * next page, its probes detached. */
static void let_go(void *ctx, void *run, const char *why)
{
	struct member *mb = run;

	(void)ctx;
	if (top_run__read(&mb->r, &mb->last, &mb->nr_last, mb->counters) && mb->r.top_prev) {
		/* the maps cannot be read now: what the last table read stands */
		mb->nr_last = mb->r.top_prev_nr;
		if ((mb->last = malloc(mb->nr_last * sizeof(*mb->last) + 1))) {
			memcpy(mb->last, mb->r.top_prev, mb->nr_last * sizeof(*mb->last));
			memcpy(mb->counters, mb->r.top_prev_counters, sizeof(mb->counters));
		}
	}
	pr_info("top: pid %d (%s) %s: letting go\n", (int)mb->a.pid, session__exe(mb->r.s), why);
	trace_run__stop(&mb->r);
	print_cost(mb);
}

/* A process's statistics onto the page; one whose mode is not its executable's is
 * left out (said once). */
static void add(struct top_fleet *tf, struct member *mb, const struct top_prom_in *pin, bool gone)
{
	if (top_prom__add(tf->prom, mb->src, pin, gone) != -EINVAL || mb->refused)
		return;
	mb->refused = true;
	pr_warn("top: --prometheus: pid %d is traced in %s mode, its executable's series are "
		"of the other mode (an earlier process's): its metrics are left out of the "
		"page (--tasks or --deep fixes the mode for all)\n",
		(int)mb->a.pid, pin->tasks ? "task" : "per-future");
}

/* Every interval: each process's table, one page of them all. */
static void tick(void *ctx, struct fleet_member *const *m, uint32_t n, uint64_t now)
{
	struct top_fleet *tf = ctx;
	uint32_t shown = 0;

	if (tf->prom)
		top_prom__begin(tf->prom);
	for (uint32_t k = 0; k < n; k++) {
		struct member *mb = m[k]->run;
		struct top_prom_in pin;

		if (m[k]->gone) {
			if (tf->group && mb->last) {
				top_run__prom_in(&mb->r, mb->last, mb->nr_last, mb->counters,
						 mb->r.top_prev_cpu, now, &pin);
				add(tf, mb, &pin, true);
			} else if (tf->prom && !tf->group) {
				top_prom__drop(tf->prom, mb->src); /* its series leave the page */
				mb->src = NULL;
			}
			continue;
		}
		mb->r.top_key = tf->key;
		mb->r.top_section = shown > 0;
		top_run__tick(&mb->r, now, mb->r.attached_ns);
		shown++;
		if (tf->prom && mb->r.top_prev) {
			top_run__prom_in(&mb->r, mb->r.top_prev, mb->r.top_prev_nr,
					 mb->r.top_prev_counters, mb->r.top_prev_cpu, now, &pin);
			add(tf, mb, &pin, false);
		}
	}
	if (tf->prom)
		top_prom__end(tf->prom, now);
	if (!shown && tf->a->exe && !tf->a->quiet) {
		if (!tf->a->batch)
			fputs("\033[H\033[2J", stdout);
		printf("asyncbpf top: no process of %s running: waiting for one\n", tf->a->exe);
		fflush(stdout);
	}
	tf->tables++;
}

static bool should_stop(void *ctx)
{
	struct top_fleet *tf = ctx;

	return top_run__read_keys(tf->a->batch, &tf->key, &tf->quit) ||
	       (tf->a->count && tf->tables >= tf->a->count);
}

static int close_run(void *ctx, void *run)
{
	struct member *mb = run;

	(void)ctx;
	trace_run__stop(&mb->r);
	print_cost(mb);
	return EXIT_OK;
}

static void free_run(void *run)
{
	struct member *mb = run;

	trace_run__free(&mb->r);
	free(mb->last);
	free(mb);
}

int top_fleet__run(const struct trace_args *a)
{
	struct top_fleet tf = {.a = a, .key = a->sort};
	const struct fleet_ops ops = {.cmd = "top",
				      .ctx = &tf,
				      .open = open_run,
				      .session = session_of,
				      .start = start_run,
				      .model = model_of,
				      .ring = ring,
				      .execs = execs,
				      .pulse = pulse,
				      .let_go = let_go,
				      .gone_to_tick = true, /* its page reads their last values */
				      .fds_per_run = 48,    /* ~32 measured, with room */
				      .tick = tick,
				      .tick_ns = (uint64_t)(a->interval * 1e9),
				      .should_stop = should_stop,
				      .close = close_run,
				      .free = free_run};
	const struct fleet_opts o = {
	    .pids = a->pids, .nr_pids = a->nr_pids, .exe = a->exe, .duration = a->duration};
	struct termios saved;
	bool keys;
	char label[PATH_MAX + 1] = "", err[256];
	int status;

	log__alias("trace", "top");
	if (a->exe) { /* the group's label: the path made absolute (fleet.c says a bad one) */
		struct exe_match *m = calloc(1, sizeof(*m));

		if (m && !exe_match__init(m, a->exe, err, sizeof(err)))
			snprintf(label, sizeof(label), "%s", m->label);
		else
			snprintf(label, sizeof(label), "%s", a->exe);
		free(m);
	}
	if (a->prometheus && (status = top_prom__start(a->prometheus, a->prom_top, &tf.prom)))
		return status;
	if (a->exe && tf.prom && !(tf.group = top_prom__source(tf.prom, true, label))) {
		top_prom__stop(tf.prom);
		return EXIT_FAILURE_INTERNAL;
	}
	keys = !a->batch && top_run__raw_keys(&saved);
	status = fleet__run(&o, &ops);
	if (keys)
		top_run__restore_keys(&saved);
	top_prom__stop(tf.prom);
	return status;
}
