// SPDX-License-Identifier: GPL-2.0
/* top --prometheus: the endpoint and its pages (top_prom.h, docs/metrics.md). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/top_prom.h"
#include "export/prometheus.h"
#include "lib/exitcodes.h"
#include "lib/http_page.h"
#include "lib/log.h"
#include "lib/syscalls.h"
#include "lib/vec.h"
#include "trace/trace_cost.h"

struct top_prom {
	struct http_page *http;
	struct prom_exporter *e;
	bool warned;
	char exe[PATH_MAX]; /* the target's executable, its absolute path */
};

int top_prom__start(const char *spec, uint32_t top_n, struct top_prom **out)
{
	struct top_prom *tp = calloc(1, sizeof(*tp));
	char err[256] = "";
	int r;

	*out = NULL;
	if (!tp || !(tp->e = prom__new(top_n))) {
		free(tp);
		pr_warn("top: out of memory\n");
		return EXIT_FAILURE_INTERNAL;
	}
	r = http_page__start(spec, "/metrics", PROM_CONTENT_TYPE, &tp->http, err, sizeof(err));
	if (r) {
		pr_warn("top: --prometheus: %s%s\n", err,
			r == -EINVAL	   ? ""
			: r == -EADDRINUSE ? " (another program has that port: pick another, or 0 "
					     "for a free one)"
					   : " (is the address this machine's?)");
		prom__free(tp->e);
		free(tp);
		return r == -EINVAL ? EXIT_USAGE : EXIT_OUTPUT;
	}
	pr_warn("top: serving Prometheus metrics on %s\n", http_page__url(tp->http));
	*out = tp;
	return 0;
}

void top_prom__stop(struct top_prom *tp)
{
	if (!tp)
		return;
	http_page__stop(tp->http);
	prom__free(tp->e);
	free(tp);
}

struct sys_list {
	struct prom_sys *v;
	uint32_t n, cap;
	bool tasks, failed;
};

static void collect_sys(void *ctx, const struct block_sys_key *k, const struct block_sys_value *v)
{
	struct sys_list *l = ctx;

	if (!!(k->row & BLOCK_SYS_TASK) != l->tasks)
		return;
	if (vec__reserve((void **)&l->v, &l->cap, l->n + 1, sizeof(*l->v))) {
		l->failed = true;
		return;
	}
	l->v[l->n++] = (struct prom_sys){
	    .row = k->row & ~BLOCK_SYS_TASK, .syscall = k->syscall, .count = v->count, .ns = v->ns};
}

void top_prom__publish(struct top_prom *tp, const struct top_prom_in *in)
{
	const __u64 *c = in->counters;
	struct tracer_cost cost = {.hits_known = true, .per_hit = *in->per_hit};
	struct prom_hits hits[HIT_CLASS_COUNT];
	struct sys_list sys = {.tasks = in->tasks};
	const struct prom_lost lost[] = {
	    {"live_untracked", c[COUNTER_LIVE_FULL]},
	    {"stack_overflow", c[COUNTER_STACK_OVERFLOW]},
	    {"no_task_storage", c[COUNTER_NO_STORAGE]},
	    {"unmatched_exit", c[COUNTER_UNMATCHED_EXIT]},
	    {"wake_unknown_task", c[COUNTER_WAKE_UNKNOWN]},
	    {"blocked_not_by_syscall", c[COUNTER_BLOCK_SYS_FULL]},
	    {"bad_spec", c[COUNTER_BAD_SPEC]},
	};
	struct prom_snapshot s = {
	    .pid = in->pid,
	    .exe = tp->exe,
	    .tasks = in->tasks,
	    .nr = in->nr,
	    .stats = in->stats,
	    .name = in->name,
	    .ctx = in->ctx,
	    .wakes = in->wakes == TOP_WAKES_ALL	      ? PROM_WAKES_ALL
		     : in->wakes == TOP_WAKES_SAMPLED ? PROM_WAKES_SAMPLED
						      : PROM_WAKES_OFF,
	    .wake_sample_seconds = in->wake_seconds,
	    .syscall_name = syscall__name,
	    .hits = hits,
	    .lost = lost,
	    .nr_lost = sizeof(lost) / sizeof(lost[0]),
	    .target_cpu_ns = in->target_cpu_ns,
	    .seconds = in->seconds,
	};
	char *page = NULL;
	size_t len = 0;
	int r;

	if (!tp->exe[0] && (!in->exe || !realpath(in->exe, tp->exe)))
		snprintf(tp->exe, sizeof(tp->exe), "%s", in->exe ? in->exe : "");
	tracer_cost__set_hits(&cost, c, NULL);
	for (unsigned k = 0; k < HIT_CLASS_COUNT; k++)
		if (cost.hits[k])
			hits[s.nr_hits++] =
			    (struct prom_hits){hit_class__probe((enum hit_class)k),
					       hit_class__how((enum hit_class)k), cost.hits[k]};
	s.tracer_cpu_ns = tracer_cost__total_ns(&cost);
	tracer__read_block_sys(in->t, collect_sys, &sys);
	s.sys = sys.v;
	s.nr_sys = sys.n;
	r = sys.failed ? -ENOMEM : prom__render(tp->e, &s, &page, &len);
	free(sys.v);
	if (r) {
		if (!tp->warned)
			pr_warn("top: --prometheus: could not render the page (%s): serving the "
				"last one\n",
				strerror(-r));
		tp->warned = true;
		return;
	}
	http_page__publish(tp->http, page, len);
}
