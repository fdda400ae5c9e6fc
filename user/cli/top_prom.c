// SPDX-License-Identifier: GPL-2.0
/* top --prometheus: the endpoint and its pages (top_prom.h, docs/metrics.md). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/top_prom.h"
#include "export/prom_sum.h"
#include "export/prometheus.h"
#include "lib/exitcodes.h"
#include "lib/http_page.h"
#include "lib/log.h"
#include "lib/syscalls.h"
#include "lib/sysfacts.h"
#include "lib/vec.h"
#include "trace/trace_cost.h"

#define NR_LOST 8

/* One source of the page: a process, or a followed executable's processes summed. */
struct top_prom_src {
	struct prom_exporter *e;
	struct prom_sum *sum; /* a group's */
	char exe[PATH_MAX];   /* the executable, its absolute path */
	uint64_t start_ns;
	/* a process's snapshot this round */
	bool added;
	struct prom_snapshot snap;
	struct prom_hits hits[HIT_CLASS_COUNT];
	struct prom_lost lost[NR_LOST];
	struct prom_sys *sys;
	uint32_t cap_sys;
};

struct top_prom {
	struct http_page *http;
	uint32_t top_n;
	struct top_prom_src **src;
	uint32_t nr_src, cap_src;
	struct top_prom_src *single; /* top_prom__publish's */
	bool warned;
};

int top_prom__start(const char *spec, uint32_t top_n, struct top_prom **out)
{
	struct top_prom *tp = calloc(1, sizeof(*tp));
	char err[256] = "";
	int r;

	*out = NULL;
	if (!tp) {
		pr_warn("top: out of memory\n");
		return EXIT_FAILURE_INTERNAL;
	}
	tp->top_n = top_n;
	r = http_page__start(spec, "/metrics", PROM_CONTENT_TYPE, &tp->http, err, sizeof(err));
	if (r) {
		pr_warn("top: --prometheus: %s%s\n", err,
			r == -EINVAL	   ? ""
			: r == -EADDRINUSE ? " (another program has that port: pick another, or 0 "
					     "for a free one)"
					   : " (is the address this machine's?)");
		free(tp);
		return r == -EINVAL ? EXIT_USAGE : EXIT_OUTPUT;
	}
	pr_warn("top: serving Prometheus metrics on %s\n", http_page__url(tp->http));
	*out = tp;
	return 0;
}

static void src_free(struct top_prom_src *src)
{
	prom__free(src->e);
	prom_sum__free(src->sum);
	free(src->sys);
	free(src);
}

void top_prom__stop(struct top_prom *tp)
{
	if (!tp)
		return;
	http_page__stop(tp->http);
	for (uint32_t k = 0; k < tp->nr_src; k++)
		src_free(tp->src[k]);
	free(tp->src);
	free(tp);
}

struct top_prom_src *top_prom__source(struct top_prom *tp, bool group, const char *exe)
{
	struct top_prom_src *src = calloc(1, sizeof(*src));

	if (!src)
		goto oom;
	/* a group's label is as the caller made it (a symlinked path kept); a process's
	 * executable made absolute */
	if (group || !exe || !strchr(exe, '/') || !realpath(exe, src->exe))
		snprintf(src->exe, sizeof(src->exe), "%s", exe ? exe : "");
	src->start_ns = sysfacts__now_ns();
	if (!(src->e = prom__new(tp->top_n)) || (group && !(src->sum = prom_sum__new(src->exe))) ||
	    vec__reserve((void **)&tp->src, &tp->cap_src, tp->nr_src + 1, sizeof(*tp->src)))
		goto oom;
	tp->src[tp->nr_src++] = src;
	return src;
oom:
	if (src)
		src_free(src);
	pr_warn("top: --prometheus: out of memory\n");
	return NULL;
}

void top_prom__drop(struct top_prom *tp, struct top_prom_src *src)
{
	for (uint32_t k = 0; src && k < tp->nr_src; k++)
		if (tp->src[k] == src) {
			tp->src[k] = tp->src[--tp->nr_src];
			src_free(src);
			return;
		}
}

struct sys_list {
	struct top_prom_src *src;
	uint32_t n;
	bool tasks, failed;
};

static void collect_sys(void *ctx, const struct block_sys_key *k, const struct block_sys_value *v)
{
	struct sys_list *l = ctx;
	struct top_prom_src *src = l->src;

	if (!!(k->row & BLOCK_SYS_TASK) != l->tasks)
		return;
	if (vec__reserve((void **)&src->sys, &src->cap_sys, l->n + 1, sizeof(*src->sys))) {
		l->failed = true;
		return;
	}
	src->sys[l->n++] = (struct prom_sys){
	    .row = k->row & ~BLOCK_SYS_TASK, .syscall = k->syscall, .count = v->count, .ns = v->ns};
}

/* src->snap from one process's statistics (false: out of memory). */
static bool snapshot(struct top_prom_src *src, const struct top_prom_in *in)
{
	const __u64 *c = in->counters;
	struct tracer_cost cost = {.hits_known = true, .per_hit = *in->per_hit};
	struct sys_list sys = {.src = src, .tasks = in->tasks};
	const struct prom_lost lost[NR_LOST] = {
	    {"live_untracked", c[COUNTER_LIVE_FULL]},
	    {"stack_overflow", c[COUNTER_STACK_OVERFLOW]},
	    {"no_task_storage", c[COUNTER_NO_STORAGE]},
	    {"unmatched_exit", c[COUNTER_UNMATCHED_EXIT]},
	    {"wake_unknown_task", c[COUNTER_WAKE_UNKNOWN]},
	    {"blocked_not_by_syscall", c[COUNTER_BLOCK_SYS_FULL]},
	    {"bad_spec", c[COUNTER_BAD_SPEC]},
	    {"task_end_unsure", c[COUNTER_TASK_END_UNSURE]},
	};

	memcpy(src->lost, lost, sizeof(lost));
	src->snap = (struct prom_snapshot){
	    .pid = in->pid,
	    .exe = src->exe,
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
	    .hits = src->hits,
	    .lost = src->lost,
	    .nr_lost = NR_LOST,
	    .target_cpu_ns = in->target_cpu_ns,
	    .seconds = in->seconds,
	};
	tracer_cost__set_hits(&cost, c, NULL);
	for (unsigned k = 0; k < HIT_CLASS_COUNT; k++)
		if (cost.hits[k])
			src->hits[src->snap.nr_hits++] =
			    (struct prom_hits){hit_class__probe((enum hit_class)k),
					       hit_class__how((enum hit_class)k), cost.hits[k]};
	src->snap.tracer_cpu_ns = tracer_cost__total_ns(&cost);
	tracer__read_block_sys(in->t, collect_sys, &sys);
	src->snap.sys = src->sys;
	src->snap.nr_sys = sys.n;
	return !sys.failed;
}

static void failed(struct top_prom *tp, int r)
{
	if (!tp->warned)
		pr_warn("top: --prometheus: could not render the page (%s): serving the last one\n",
			strerror(-r));
	tp->warned = true;
}

void top_prom__begin(struct top_prom *tp)
{
	for (uint32_t k = 0; k < tp->nr_src; k++) {
		tp->src[k]->added = false;
		if (tp->src[k]->sum)
			prom_sum__begin(tp->src[k]->sum);
	}
}

int top_prom__add(struct top_prom *tp, struct top_prom_src *src, const struct top_prom_in *in,
		  bool gone)
{
	int r = 0;

	if (!src)
		return 0;
	if (!snapshot(src, in)) {
		r = -ENOMEM;
		if (src->sum) /* a sum without this process would go down: none this round */
			prom_sum__fail(src->sum);
	} else if (src->sum)
		r = prom_sum__add(src->sum, &src->snap, gone);
	if (r == -ENOMEM)
		failed(tp, r);
	src->added = !src->sum;
	return r;
}

void top_prom__end(struct top_prom *tp, uint64_t now_ns)
{
	struct prom_part *parts = calloc(tp->nr_src + 1, sizeof(*parts));
	uint32_t n = 0;
	char *page = NULL;
	size_t len = 0;
	int r = -ENOMEM;

	for (uint32_t k = 0; parts && k < tp->nr_src; k++) {
		struct top_prom_src *src = tp->src[k];
		const struct prom_snapshot *s =
		    src->sum ? prom_sum__snapshot(src->sum, (double)(now_ns - src->start_ns) / 1e9)
		    : src->added ? &src->snap
				 : NULL;

		if (src->sum && !s)
			goto out;
		if (s)
			parts[n++] = (struct prom_part){src->e, s};
	}
	if (parts && !(r = prom__render_many(parts, n, &page, &len)))
		http_page__publish(tp->http, page, len);
out:
	if (r)
		failed(tp, r);
	free(parts);
}

void top_prom__publish(struct top_prom *tp, const struct top_prom_in *in)
{
	if (!tp->single && !(tp->single = top_prom__source(tp, false, in->exe)))
		return;
	top_prom__begin(tp);
	top_prom__add(tp, tp->single, in, false);
	top_prom__end(tp, 0);
}
