// SPDX-License-Identifier: GPL-2.0
/* Several processes' statistics summed by future name (prom_sum.h, docs/metrics.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/prom_sum.h"
#include "lib/hashmap.h"
#include "lib/strpool.h"
#include "lib/vec.h"

#define WORDS (sizeof(struct poll_stats) / sizeof(__u64))

/* A sum: the rows by name, blocked time by (row, syscall), hits, lost, CPU times. */
struct totals {
	struct poll_stats *stats;
	uint32_t nr, cap;
	struct prom_sys *sys;
	uint32_t nr_sys, cap_sys;
	struct prom_hits *hits;
	uint32_t nr_hits, cap_hits;
	struct prom_lost *lost;
	uint32_t nr_lost, cap_lost;
	uint64_t tracer_cpu_ns;
	int64_t target_cpu_ns;
	double wake_sample_seconds;
};

struct prom_sum {
	char *exe;
	struct strpool pool;
	struct u64_map by_name; /* interned name -> row */
	const char **names;	/* per row */
	uint32_t nr_names, cap_names;
	struct totals gone, now; /* what the processes gone left; this round's sum */
	struct prom_snapshot snap;
	uint32_t live;
	uint64_t seen;
	bool moded;	    /* tasks and wakes set: by the first process added */
	bool tasks, failed; /* failed: this round's sum could not be made (ENOMEM) */
	enum prom_wakes wakes;
	const char *(*syscall_name)(int nr);
};

struct prom_sum *prom_sum__new(const char *exe)
{
	struct prom_sum *g = calloc(1, sizeof(*g));

	if (!g || !(g->exe = strdup(exe ? exe : ""))) {
		free(g);
		return NULL;
	}
	strpool__init(&g->pool);
	u64_map__init(&g->by_name);
	return g;
}

static void totals__free(struct totals *t)
{
	free(t->stats);
	free(t->sys);
	free(t->hits);
	free(t->lost);
}

void prom_sum__free(struct prom_sum *g)
{
	if (!g)
		return;
	totals__free(&g->gone);
	totals__free(&g->now);
	free(g->names);
	u64_map__free(&g->by_name);
	strpool__free(&g->pool);
	free(g->exe);
	free(g);
}

/* dst = src, reusing dst's arrays */
static int totals__copy(struct totals *dst, const struct totals *src)
{
	if (vec__reserve((void **)&dst->stats, &dst->cap, src->nr, sizeof(*dst->stats)) ||
	    vec__reserve((void **)&dst->sys, &dst->cap_sys, src->nr_sys, sizeof(*dst->sys)) ||
	    vec__reserve((void **)&dst->hits, &dst->cap_hits, src->nr_hits, sizeof(*dst->hits)) ||
	    vec__reserve((void **)&dst->lost, &dst->cap_lost, src->nr_lost, sizeof(*dst->lost)))
		return -ENOMEM;
	if (src->nr)
		memcpy(dst->stats, src->stats, src->nr * sizeof(*src->stats));
	if (src->nr_sys)
		memcpy(dst->sys, src->sys, src->nr_sys * sizeof(*src->sys));
	if (src->nr_hits)
		memcpy(dst->hits, src->hits, src->nr_hits * sizeof(*src->hits));
	if (src->nr_lost)
		memcpy(dst->lost, src->lost, src->nr_lost * sizeof(*src->lost));
	dst->nr = src->nr;
	dst->nr_sys = src->nr_sys;
	dst->nr_hits = src->nr_hits;
	dst->nr_lost = src->nr_lost;
	dst->tracer_cpu_ns = src->tracer_cpu_ns;
	dst->target_cpu_ns = src->target_cpu_ns;
	dst->wake_sample_seconds = src->wake_sample_seconds;
	return 0;
}

void prom_sum__begin(struct prom_sum *g)
{
	g->failed = totals__copy(&g->now, &g->gone) != 0;
	g->live = 0;
}

/* The row of a name, a new one at the end when it is new. */
static int row_of(struct prom_sum *g, const char *name, uint32_t *row)
{
	const char *in = strpool__intern(&g->pool, name);
	uint64_t v;

	if (!in)
		return -ENOMEM;
	if (u64_map__get(&g->by_name, (uint64_t)(uintptr_t)in, &v)) {
		*row = (uint32_t)v;
		return 0;
	}
	if (vec__reserve((void **)&g->names, &g->cap_names, g->nr_names + 1, sizeof(*g->names)) ||
	    u64_map__set(&g->by_name, (uint64_t)(uintptr_t)in, g->nr_names))
		return -ENOMEM;
	g->names[g->nr_names] = in;
	*row = g->nr_names++;
	return 0;
}

static int grow_rows(struct totals *t, uint32_t nr)
{
	if (nr <= t->nr)
		return 0;
	if (vec__reserve((void **)&t->stats, &t->cap, nr, sizeof(*t->stats)))
		return -ENOMEM;
	memset(t->stats + t->nr, 0, (nr - t->nr) * sizeof(*t->stats));
	t->nr = nr;
	return 0;
}

static void add_stats(struct poll_stats *dst, const struct poll_stats *in, bool gone, bool wakes)
{
	struct poll_stats src = *in;
	__u64 *d = (__u64 *)(void *)dst;
	const __u64 *x = (const __u64 *)(const void *)&src;

	if (!wakes) { /* wakes probed otherwise than the series': left out */
		src.wakes = src.window_polls = src.delay_ns = 0;
		memset(src.delay_hist, 0, sizeof(src.delay_hist));
	}
	for (size_t k = 0; k < WORDS; k++)
		d[k] += x[k];
	/* a process gone has no live instances left: what it started, it ended */
	if (gone && src.started > src.ended)
		dst->ended += src.started - src.ended;
}

static int add_sys(struct totals *t, uint32_t row, const struct prom_sys *s)
{
	for (uint32_t k = 0; k < t->nr_sys; k++)
		if (t->sys[k].row == row && t->sys[k].syscall == s->syscall) {
			t->sys[k].count += s->count;
			t->sys[k].ns += s->ns;
			return 0;
		}
	if (vec__reserve((void **)&t->sys, &t->cap_sys, t->nr_sys + 1, sizeof(*t->sys)))
		return -ENOMEM;
	t->sys[t->nr_sys++] = (struct prom_sys){row, s->syscall, s->count, s->ns};
	return 0;
}

/* hits and lost: by their names (static strings of the caller's, compared by value) */
static int add_hits(struct totals *t, const struct prom_hits *h)
{
	for (uint32_t k = 0; k < t->nr_hits; k++)
		if (!strcmp(t->hits[k].probe, h->probe) && !strcmp(t->hits[k].how, h->how)) {
			t->hits[k].hits += h->hits;
			return 0;
		}
	if (vec__reserve((void **)&t->hits, &t->cap_hits, t->nr_hits + 1, sizeof(*t->hits)))
		return -ENOMEM;
	t->hits[t->nr_hits++] = *h;
	return 0;
}

static int add_lost(struct totals *t, const struct prom_lost *l)
{
	for (uint32_t k = 0; k < t->nr_lost; k++)
		if (!strcmp(t->lost[k].reason, l->reason)) {
			t->lost[k].count += l->count;
			return 0;
		}
	if (vec__reserve((void **)&t->lost, &t->cap_lost, t->nr_lost + 1, sizeof(*t->lost)))
		return -ENOMEM;
	t->lost[t->nr_lost++] = *l;
	return 0;
}

static int add_to(struct prom_sum *g, struct totals *t, const struct prom_snapshot *s,
		  const uint32_t *rows, bool gone)
{
	bool wakes = s->wakes == g->wakes;

	if (grow_rows(t, g->nr_names))
		return -ENOMEM;
	for (uint32_t i = 0; i < s->nr; i++)
		add_stats(&t->stats[rows[i]], &s->stats[i], gone, wakes);
	for (uint32_t k = 0; k < s->nr_sys; k++)
		if (s->sys[k].row < s->nr && add_sys(t, rows[s->sys[k].row], &s->sys[k]))
			return -ENOMEM;
	for (uint32_t k = 0; k < s->nr_hits; k++)
		if (add_hits(t, &s->hits[k]))
			return -ENOMEM;
	for (uint32_t k = 0; k < s->nr_lost; k++)
		if (add_lost(t, &s->lost[k]))
			return -ENOMEM;
	t->tracer_cpu_ns += s->tracer_cpu_ns;
	if (s->target_cpu_ns > 0)
		t->target_cpu_ns += s->target_cpu_ns;
	if (wakes)
		t->wake_sample_seconds += s->wake_sample_seconds;
	return 0;
}

int prom_sum__add(struct prom_sum *g, const struct prom_snapshot *s, bool gone)
{
	char name[512];
	uint32_t *rows = malloc((s->nr + 1) * sizeof(*rows));
	int r = -ENOMEM;

	if (g->moded && s->tasks != g->tasks) {
		free(rows);
		return -EINVAL;
	}
	if (!rows || g->failed)
		goto out;
	for (uint32_t i = 0; i < s->nr; i++) {
		name[0] = '\0';
		if (s->name)
			s->name(s->ctx, i, name, sizeof(name));
		if ((r = row_of(g, name, &rows[i])))
			goto out;
	}
	if (!g->moded) {
		g->moded = true;
		g->tasks = s->tasks;
		g->wakes = s->wakes;
	}
	if (s->syscall_name)
		g->syscall_name = s->syscall_name;
	/* gone: for good, and in this round too (its values were not added yet) */
	if ((r = add_to(g, &g->now, s, rows, gone)) ||
	    (gone && (r = add_to(g, &g->gone, s, rows, true))))
		goto out;
	if (gone)
		g->seen++;
	else
		g->live++;
out:
	if (r)
		g->failed = true; /* a sum half made is not shown: the last page stands */
	free(rows);
	return r;
}

void prom_sum__fail(struct prom_sum *g)
{
	g->failed = true;
}

static void sum_name(void *ctx, uint32_t row, char *buf, size_t len)
{
	const struct prom_sum *g = ctx;

	snprintf(buf, len, "%s", row < g->nr_names ? g->names[row] : "");
}

const struct prom_snapshot *prom_sum__snapshot(struct prom_sum *g, double seconds)
{
	struct totals *t = &g->now;

	if (g->failed || grow_rows(t, g->nr_names))
		return NULL;
	g->snap = (struct prom_snapshot){
	    .exe = g->exe,
	    .group = true,
	    .processes = g->live,
	    .processes_seen = g->seen + g->live,
	    .tasks = g->tasks,
	    .nr = t->nr,
	    .stats = t->stats,
	    .name = sum_name,
	    .ctx = g,
	    .wakes = g->wakes,
	    .wake_sample_seconds = t->wake_sample_seconds,
	    .sys = t->sys,
	    .nr_sys = t->nr_sys,
	    .syscall_name = g->syscall_name,
	    .hits = t->hits,
	    .nr_hits = t->nr_hits,
	    .lost = t->lost,
	    .nr_lost = t->nr_lost,
	    .tracer_cpu_ns = t->tracer_cpu_ns,
	    .target_cpu_ns = t->target_cpu_ns,
	    .seconds = seconds,
	};
	return &g->snap;
}
