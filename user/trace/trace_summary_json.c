// SPDX-License-Identifier: GPL-2.0
/*
 * --summary-json (docs/tracing.md, "--summary-json"), schema
 * asyncbpf-trace-summary/2: futures (counts, percentiles, lifetimes, log2 histogram),
 * the futures still pending at the end (every group), tasks (every one kept), totals.
 * cJSON's adders are NULL-safe: a failed allocation of one field leaves that field
 * out; failures of the tables behind it and of printing are returned.
 */
#include <errno.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "lib/syscalls.h"
#include "trace/trace_summary.h"

static void add_u64(cJSON *o, const char *key, uint64_t v)
{
	cJSON_AddNumberToObject(o, key, (double)v);
}

static cJSON *add_object(cJSON *arr)
{
	cJSON *o = cJSON_CreateObject();

	if (o && !cJSON_AddItemToArray(arr, o)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static void add_hist(cJSON *o, const struct poll_stats *bs)
{
	cJSON *arr = cJSON_AddArrayToObject(o, "hist_log2_ns");

	for (unsigned i = 0; arr && bs && i < TRACE_HIST_BUCKETS; i++) {
		cJSON *pair;

		if (!bs->hist[i])
			continue;
		pair = cJSON_CreateArray();
		if (!pair || !cJSON_AddItemToArray(arr, pair)) {
			cJSON_Delete(pair);
			return;
		}
		cJSON_AddItemToArray(pair, cJSON_CreateNumber((double)summary__bucket_low(i)));
		cJSON_AddItemToArray(pair, cJSON_CreateNumber((double)bs->hist[i]));
	}
}

static void add_blocking_row(const struct trace_summary *s, uint32_t poll, cJSON *o)
{
	const struct block_summary *b = &s->polls[poll].block;
	const struct poll_summary *ps = &s->polls[poll];
	cJSON *bo = cJSON_AddObjectToObject(o, "blocking"), *arr;

	if (!bo)
		return;
	add_u64(bo, "blocked", b->blocked);
	add_u64(bo, "blocked_ns", b->blocked_ns);
	add_u64(bo, "blocked_max_ns", b->blocked_max_ns);
	add_u64(bo, "preempted", b->preempted);
	add_u64(bo, "preempted_ns", b->preempted_ns);
	add_u64(bo, "tracer", b->tracer);
	add_u64(bo, "tracer_ns", b->tracer_ns);
	add_u64(bo, "offcpu_ns", b->offcpu_ns);
	add_u64(bo, "cpu_ns", ps->busy_ns > b->offcpu_ns ? ps->busy_ns - b->offcpu_ns : 0);
	add_u64(bo, "polls_over_threshold", b->over);
	add_u64(bo, "worst_poll_ns", b->worst_ns);
	if (b->worst_ns) {
		cJSON_AddStringToObject(bo, "worst_syscall",
					b->worst_syscall < 0 ? "none"
							     : syscall__name(b->worst_syscall));
		cJSON_AddNumberToObject(bo, "worst_await_index", b->worst_await);
	}
	if ((arr = cJSON_AddArrayToObject(bo, "by_syscall")))
		for (uint32_t i = 0; i < b->nr_syscalls; i++) {
			cJSON *x = cJSON_CreateObject();

			if (!x)
				break;
			cJSON_AddStringToObject(
			    x, "syscall",
			    b->by_syscall[i].nr < 0 ? "none" : syscall__name(b->by_syscall[i].nr));
			cJSON_AddNumberToObject(x, "nr", b->by_syscall[i].nr);
			add_u64(x, "count", b->by_syscall[i].count);
			add_u64(x, "ns", b->by_syscall[i].ns);
			cJSON_AddItemToArray(arr, x);
		}
	add_u64(bo, "other_syscalls_ns", b->other_ns);
}

static void add_blocking(const struct trace_summary *s, cJSON *root)
{
	cJSON *bo = cJSON_AddObjectToObject(root, "blocking");

	if (!bo)
		return;
	cJSON_AddBoolToObject(bo, "watched", s->blocking_off == NULL);
	if (s->blocking_off)
		cJSON_AddStringToObject(bo, "off_reason", s->blocking_off);
	add_u64(bo, "threshold_ns", s->block_threshold_ns);
	add_u64(bo, "records", s->blocks);
	add_u64(bo, "blocked_at_stop", s->blocked_at_stop);
	add_u64(bo, "tracer", s->tracer_offcpu);
	add_u64(bo, "tracer_ns", s->tracer_offcpu_ns);
}

/* totals.tracer_cost: the tracer's own, by hit class (trace_cost.h) */
static void add_tracer_cost(cJSON *tot, const struct trace_run_totals *t)
{
	const struct tracer_cost *c = &t->cost;
	cJSON *o = cJSON_AddObjectToObject(tot, "tracer_cost"), *hits;
	double share = tracer_cost__share(c);

	if (!o)
		return;
	cJSON_AddBoolToObject(o, "known", c->hits_known && c->per_hit.measured);
	if ((hits = cJSON_AddArrayToObject(o, "hits")))
		for (unsigned k = 0; k < HIT_CLASS_COUNT; k++) {
			cJSON *x = add_object(hits);

			if (!x)
				break;
			cJSON_AddStringToObject(x, "probes", hit_class__probe((enum hit_class)k));
			cJSON_AddStringToObject(x, "how", hit_class__how((enum hit_class)k));
			add_u64(x, "hits", c->hits[k]);
			add_u64(x, "ns_per_hit", tracer_cost__per_hit(c, (enum hit_class)k));
			add_u64(x, "ns", tracer_cost__class_ns(c, (enum hit_class)k));
		}
	add_u64(o, "task_trees", c->trees);
	add_u64(o, "task_trees_ns", c->tree_ns);
	add_u64(o, "cpu_ns", tracer_cost__total_ns(c));
	add_u64(o, "stall_ns", tracer_cost__stall_ns(c));
	if (c->target_cpu_ns >= 0)
		add_u64(o, "target_cpu_ns", (uint64_t)c->target_cpu_ns);
	else
		cJSON_AddNullToObject(o, "target_cpu_ns");
	if (share >= 0)
		cJSON_AddNumberToObject(o, "share_percent", share);
	else
		cJSON_AddNullToObject(o, "share_percent");
	add_u64(o, "offcpu", c->offcpu);
	add_u64(o, "offcpu_ns", c->offcpu_ns);
	cJSON *ks = cJSON_AddObjectToObject(tot, "kernel_switches");
	if (ks) { /* the kernel's counts over the run, of the threads alive at its end */
		if (t->kernel_voluntary >= 0)
			add_u64(ks, "voluntary", (uint64_t)t->kernel_voluntary);
		else
			cJSON_AddNullToObject(ks, "voluntary");
		if (t->kernel_involuntary >= 0)
			add_u64(ks, "involuntary", (uint64_t)t->kernel_involuntary);
		else
			cJSON_AddNullToObject(ks, "involuntary");
	}
}

static void add_cancel_row(const struct trace_summary *s, uint32_t poll, cJSON *o)
{
	const struct cancel_summary *c = &s->polls[poll].cancel;
	cJSON *co = cJSON_AddObjectToObject(o, "cancel"), *at;

	if (!co)
		return;
	add_u64(co, "drops", c->drops);
	add_u64(co, "cancelled", c->cancelled);
	add_u64(co, "not_started", c->not_started);
	add_u64(co, "finished", c->finished);
	add_u64(co, "bad_state", c->bad_state);
	add_u64(co, "at_other", c->at_other);
	at = cJSON_AddArrayToObject(co, "at");
	for (uint32_t i = 0; at && i < c->nr_at; i++) {
		cJSON *x = cJSON_CreateObject();
		uint32_t line = 0;
		const char *file =
		    c->at[i].await_index >= 0
			? summary__await_site(s->m, poll, c->at[i].await_index, &line)
			: NULL;

		if (!x)
			break;
		cJSON_AddNumberToObject(x, "await_index", c->at[i].await_index);
		if (file) {
			cJSON_AddStringToObject(x, "file", file);
			cJSON_AddNumberToObject(x, "line", line);
		} else {
			cJSON_AddNullToObject(x, "file");
			cJSON_AddNullToObject(x, "line");
		}
		add_u64(x, "count", c->at[i].count);
		cJSON_AddItemToArray(at, x);
	}
}

static int cmp_ns(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void add_wake_row(const struct trace_summary *s, uint32_t poll, cJSON *o)
{
	const struct wake_summary *w = &s->polls[poll].wake;
	cJSON *wo = cJSON_AddObjectToObject(o, "wakes"), *arr;
	uint64_t n = w->delays.nr;
	char name[512];

	if (!wo)
		return;
	if (n)
		qsort(w->delays.v, n, sizeof(uint64_t), cmp_ns);
	add_u64(wo, "wakes", w->wakes);
	add_u64(wo, "self_wakes", w->self_wakes);
	add_u64(wo, "coalesced", w->coalesced);
	add_u64(wo, "delays", n);
	add_u64(wo, "delay_p50_ns", u64_vec__percentile(w->delays.v, n, 50));
	add_u64(wo, "delay_p99_ns", u64_vec__percentile(w->delays.v, n, 99));
	add_u64(wo, "delay_max_ns", n ? w->delays.v[n - 1] : 0);
	arr = cJSON_AddArrayToObject(wo, "wakers");
	for (uint32_t i = 0; arr && i < w->nr_wakers; i++) {
		cJSON *x = cJSON_CreateObject();

		if (!x)
			break;
		if (w->wakers[i].poll == TRACE_NO_INDEX || w->wakers[i].poll >= s->m->nr_polls) {
			cJSON_AddNullToObject(x, "poll");
			cJSON_AddStringToObject(x, "name", "not in a traced poll");
		} else {
			summary__poll_name(s->m, w->wakers[i].poll, name, sizeof(name));
			add_u64(x, "poll", w->wakers[i].poll);
			cJSON_AddStringToObject(x, "name", name);
		}
		add_u64(x, "count", w->wakers[i].count);
		cJSON_AddItemToArray(arr, x);
	}
	add_u64(wo, "wakers_other", w->wakers_other);
}

static void add_future(cJSON *arr, const struct trace_summary *s, const struct summary_row *r)
{
	const struct poll_summary *ps = &s->polls[r->poll];
	const struct poll_fn *pf = &s->m->polls[r->poll];
	const struct future *f = pf->future >= 0 ? &s->m->futures[pf->future] : NULL;
	const struct poll_stats *bs = r->poll < s->nr_bpf ? &s->bpf[r->poll] : NULL;
	cJSON *o = add_object(arr);
	char name[1024];

	if (!o)
		return;
	summary__poll_name(s->m, r->poll, name, sizeof(name));
	cJSON_AddStringToObject(o, "name", name);
	if (f && f->path)
		cJSON_AddStringToObject(o, "path", f->path);
	else
		cJSON_AddNullToObject(o, "path");
	cJSON_AddStringToObject(o, "kind", f ? future_kind__name(f->kind) : "unknown");
	add_u64(o, "poll", r->poll);
	add_u64(o, "polls", ps->polls);
	add_u64(o, "ready", ps->counts[POLL_READY]);
	add_u64(o, "pending", ps->counts[POLL_PENDING]);
	add_u64(o, "panicked", ps->counts[POLL_PANICKED]);
	add_u64(o, "truncated", ps->counts[POLL_TRUNCATED]);
	add_u64(o, "running", ps->counts[POLL_OPEN]);
	add_u64(o, "unknown", ps->counts[POLL_UNKNOWN]);
	cJSON *folded = cJSON_AddArrayToObject(o, "folded");
	for (uint32_t f = 0; folded && f < s->m->nr_futures; f++) {
		char fname[512];

		if (s->m->futures[f].folded_into < 0 || s->m->futures[f].poll != (int32_t)r->poll)
			continue;
		future__display_name(&s->m->futures[f], fname, sizeof(fname));
		cJSON_AddItemToArray(folded, cJSON_CreateString(fname));
	}
	cJSON *why = cJSON_AddObjectToObject(o, "unknown_reasons");
	for (unsigned k = 1; why && k < UNKNOWN_REASON_COUNT; k++)
		add_u64(why, unknown_reason__key(k), ps->unknown_by[k]);
	add_u64(o, "busy_ns", r->busy_ns);
	add_u64(o, "p50_ns", r->p50);
	add_u64(o, "p99_ns", r->p99);
	add_u64(o, "max_ns", r->max);
	cJSON_AddStringToObject(o, "percentiles_from", r->from_histogram ? "histogram" : "records");
	add_u64(o, "dropped", r->dropped);
	if (bs)
		add_u64(o, "bpf_records", bs->records);
	else
		cJSON_AddNullToObject(o, "bpf_records");
	add_u64(o, "lifetimes", ps->lifetimes.nr);
	add_u64(o, "lifetime_min_ns", ps->lifetimes.nr ? ps->lifetimes.v[0] : 0);
	add_u64(o, "lifetime_p50_ns", r->life_p50);
	add_u64(o, "lifetime_p99_ns", r->life_p99);
	add_u64(o, "lifetime_max_ns", r->life_max);
	add_u64(o, "abandoned", ps->abandoned);
	add_u64(o, "lifetimes_started_before", ps->started_before);
	add_hist(o, bs);
	add_blocking_row(s, r->poll, o);
	add_cancel_row(s, r->poll, o);
	add_wake_row(s, r->poll, o);
}

static void add_group(cJSON *arr, const struct trace_summary *s, const struct pending_group *g)
{
	cJSON *o = add_object(arr);
	char name[1024];
	uint32_t line = 0;
	const char *file = NULL;

	if (!o)
		return;
	summary__poll_name(s->m, g->poll, name, sizeof(name));
	cJSON_AddStringToObject(o, "name", name);
	add_u64(o, "poll", g->poll);
	cJSON_AddStringToObject(o, "state", g->result == POLL_OPEN ? "running" : "pending");
	if (g->await_index >= 0)
		cJSON_AddNumberToObject(o, "await_index", g->await_index);
	else
		cJSON_AddNullToObject(o, "await_index");
	/* running: the await it resumed from, if any (not a declaration line) */
	if (g->result == POLL_PENDING || g->await_index >= 0)
		file = summary__await_site(s->m, g->poll, g->await_index, &line);
	if (file) {
		cJSON_AddStringToObject(o, "file", file);
		add_u64(o, "line", line);
	} else {
		cJSON_AddNullToObject(o, "file");
		cJSON_AddNullToObject(o, "line");
	}
	add_u64(o, "count", g->count);
}

static int add_pending(cJSON *root, const struct trace_summary *s)
{
	struct pending_report r;
	cJSON *o = cJSON_AddObjectToObject(root, "pending_at_end"), *arr;

	if (instance_table__pending(&s->instances, &r))
		return -ENOMEM;
	add_u64(o, "pending", r.pending);
	add_u64(o, "running", r.running);
	add_u64(o, "truncated", r.truncated);
	add_u64(o, "unknown", r.unknown);
	arr = cJSON_AddArrayToObject(o, "groups");
	for (uint32_t i = 0; arr && i < r.nr; i++)
		add_group(arr, s, &r.groups[i]);
	pending_report__free(&r);
	return 0;
}

static void add_task(cJSON *arr, const struct trace_summary *s, const struct task_summary *t)
{
	cJSON *o = add_object(arr);
	char name[1024];

	if (!o)
		return;
	if (t->poll < s->m->nr_polls)
		summary__poll_name(s->m, t->poll, name, sizeof(name));
	else
		snprintf(name, sizeof(name), "(poll %u)", t->poll);
	cJSON_AddStringToObject(o, "name", name);
	add_u64(o, "poll", t->poll);
	add_u64(o, "self", t->self);
	cJSON_AddBoolToObject(o, "completed", t->completed);
	add_u64(o, "polls", t->own_polls);
	add_u64(o, "all_polls", t->all_polls);
	add_u64(o, "busy_ns", t->busy_ns);
	add_u64(o, "idle_ns", task_summary__idle(t));
	add_u64(o, "span_ns", t->has_own ? t->last_end_ns - t->first_start_ns : 0);
	add_u64(o, "first_start_ns", t->first_start_ns);
	add_u64(o, "last_end_ns", t->last_end_ns);
	add_u64(o, "first_seen_ns", t->first_seen_ns);
	add_u64(o, "last_seen_ns", t->last_seen_ns);
}

static int add_tasks(cJSON *root, const struct trace_summary *s)
{
	const struct task_table *t = &s->tasks;
	cJSON *o = cJSON_AddObjectToObject(root, "tasks"), *arr;
	uint32_t nr_types = 0, nr_list = 0;
	struct task_type_row *types = task_table__types(t, &nr_types);
	struct task_summary *list = task_table__list(t, &nr_list);
	char name[1024];

	if (t->count && (!types || !list)) {
		free(types);
		free(list);
		return -ENOMEM;
	}
	add_u64(o, "count", t->count);
	add_u64(o, "completed", t->completed);
	add_u64(o, "busy_ns", task_table__busy_ns(t));
	add_u64(o, "idle_ns", task_table__idle_ns(t));
	cJSON_AddBoolToObject(o, "by_runtime", t->roots != NULL);
	add_u64(o, "outside_polls", t->outside_polls);
	add_u64(o, "outside_ns", t->outside_ns);
	add_u64(o, "untracked_polls", t->untracked_polls);
	add_u64(o, "untracked_tasks", t->untracked_tasks);
	arr = cJSON_AddArrayToObject(o, "by_root");
	for (uint32_t i = 0; arr && i < nr_types; i++) {
		cJSON *x = add_object(arr);

		if (!x)
			break;
		if (types[i].poll < s->m->nr_polls)
			summary__poll_name(s->m, types[i].poll, name, sizeof(name));
		else
			snprintf(name, sizeof(name), "(poll %u)", types[i].poll);
		cJSON_AddStringToObject(x, "name", name);
		add_u64(x, "poll", types[i].poll);
		add_u64(x, "tasks", types[i].tasks);
		add_u64(x, "completed", types[i].completed);
		add_u64(x, "polls", types[i].own_polls);
		add_u64(x, "all_polls", types[i].all_polls);
		add_u64(x, "busy_ns", types[i].busy_ns);
		add_u64(x, "idle_ns", types[i].idle_ns);
		add_u64(x, "max_busy_ns", types[i].max_busy_ns);
	}
	add_u64(o, "listed", nr_list);
	arr = cJSON_AddArrayToObject(o, "list");
	for (uint32_t i = 0; arr && i < nr_list; i++)
		add_task(arr, s, &list[i]);
	free(types);
	free(list);
	return 0;
}

static void add_totals(cJSON *root, const struct trace_summary *s, const struct trace_run_totals *t)
{
	cJSON *tot = cJSON_AddObjectToObject(root, "totals");

	add_u64(tot, "records", t->totals.polls);
	add_u64(tot, "dropped", t->totals.dropped);
	add_u64(tot, "truncated", t->totals.truncated);
	add_u64(tot, "running_at_stop", trace_summary__running(s));
	add_u64(tot, "probes_attached", t->totals.probes_attached);
	add_u64(tot, "probes_failed", t->totals.probes_failed);
	add_u64(tot, "unprobeable_exits", t->unprobeable_exits);
	add_u64(tot, "unmatched_exits", t->unmatched_exits);
	add_u64(tot, "stack_overflow", t->stack_overflow);
	add_u64(tot, "no_storage", t->no_storage);
	add_u64(tot, "bpf_records", t->bpf_records);
	add_u64(tot, "probe_hits", t->hits);
	add_u64(tot, "task_trees", t->task_trees);
	add_u64(tot, "task_trees_dropped", t->task_dropped);
	uint64_t exits, stepped = trace_summary__stepped_exits(s, &exits);
	add_u64(tot, "exits", exits);
	add_u64(tot, "stepped_exits", stepped);
	add_u64(tot, "malformed_records", s->bad_records);
	uint64_t by[UNKNOWN_REASON_COUNT];
	add_u64(tot, "unknown_results", trace_summary__unknown(s, by));
	cJSON *why = cJSON_AddObjectToObject(tot, "unknown_reasons");
	for (unsigned k = 1; why && k < UNKNOWN_REASON_COUNT; k++)
		add_u64(why, unknown_reason__key(k), by[k]);
	add_u64(tot, "untracked_instance_polls", s->instances.untracked_polls);
	add_u64(tot, "max_live_instances", s->instances.max);
	add_u64(tot, "untracked_task_polls", s->tasks.untracked_polls);
	add_u64(tot, "max_tasks", s->tasks.max);
	add_u64(tot, "kept_tasks", s->tasks.keep);
	cJSON_AddBoolToObject(tot, "out_of_memory", s->oom);
	cJSON *pc = cJSON_AddObjectToObject(tot, "probe_cost");
	if (pc) {
		cJSON_AddBoolToObject(pc, "measured", s->costs.measured);
		add_u64(pc, "emulated_ns", s->costs.emulated_ns);
		add_u64(pc, "stepped_ns", s->costs.stepped_ns);
		add_u64(pc, "returned_ns", s->costs.returned_ns);
		add_u64(pc, "subtracted_ns", s->probe_subtracted_ns);
		add_u64(pc, "adjusted_polls", s->probe_adjusted);
		add_u64(pc, "overcorrected_polls", s->probe_overcorrected);
		double drift = tracer_cost__drift(&t->cost, &s->costs_end);
		cJSON *end = drift >= 0 ? cJSON_AddObjectToObject(pc, "at_end") : NULL;
		if (end) {
			add_u64(end, "emulated_ns", s->costs_end.emulated_ns);
			add_u64(end, "stepped_ns", s->costs_end.stepped_ns);
			add_u64(end, "returned_ns", s->costs_end.returned_ns);
			cJSON_AddNumberToObject(pc, "drift_percent", drift);
		}
	}
	add_u64(tot, "duration_ns", t->totals.duration_ns);
	add_tracer_cost(tot, t);
}

int trace_summary__write_json(struct trace_summary *s, const struct trace_run_totals *t, FILE *out)
{
	cJSON *root = cJSON_CreateObject(), *arr;
	uint32_t nr = 0;
	struct summary_row *r = trace_summary__rows(s, &nr);
	char *text = NULL;
	int ret = -ENOMEM;

	if (!root || !r)
		goto out;
	cJSON_AddStringToObject(root, "schema", "asyncbpf-trace-summary/2");
	arr = cJSON_AddArrayToObject(root, "futures");
	for (uint32_t i = 0; arr && i < nr; i++)
		add_future(arr, s, &r[i]);
	if (add_pending(root, s) || add_tasks(root, s))
		goto out;
	add_totals(root, s, t);
	if (s->task_mode && summary_tasks__json(s, root))
		goto out;
	add_blocking(s, root);
	cJSON *wk = cJSON_AddObjectToObject(root, "wakeups");
	if (wk) {
		cJSON_AddBoolToObject(wk, "watched", s->wakes_watched);
		add_u64(wk, "records", s->wakes);
		add_u64(wk, "unknown_task", s->wakes_unknown);
		add_u64(wk, "unmatched", summary_wake__unmatched(s));
		summary_wake__json_sample(s, wk);
	}
	cJSON *cancel = cJSON_AddObjectToObject(root, "cancellation");
	if (cancel) {
		cJSON_AddBoolToObject(cancel, "watched", s->cancel_watched);
		add_u64(cancel, "drops", s->drops);
		add_u64(cancel, "drops_of_untraced", s->drops_unknown_future);
	}
	text = cJSON_Print(root);
	if (!text)
		goto out;
	ret = fprintf(out, "%s\n", text) < 0 ? -EIO : 0;
out:
	cJSON_free(text);
	cJSON_Delete(root);
	free(r);
	return ret;
}
