// SPDX-License-Identifier: GPL-2.0
/*
 * Which futures to trace (docs/selection.md): the default selection (the user's own
 * crates), glob patterns on Rust paths, and expansion along the await graph.
 *
 * Everything here is pure code over a model. Crate classification is in crate.c,
 * globs in glob.c, whitelist files in whitelist.c.
 */
#include "select/selection.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/glob.h"
#include "lib/log.h"
#include "select/selection_internal.h"

int selection__init(struct selection *s, const struct model *m)
{
	s->futures = NULL;
	s->nr = 0;
	if (!m->nr_futures)
		return 0;
	s->futures = calloc(m->nr_futures, sizeof(*s->futures));
	if (!s->futures)
		return -ENOMEM;
	s->nr = m->nr_futures;
	return 0;
}

void selection__free(struct selection *s)
{
	if (!s)
		return;
	free(s->futures);
	s->futures = NULL;
	s->nr = 0;
}

uint32_t selection__count(const struct selection *s)
{
	uint32_t n = 0;

	if (!s->futures)
		return 0;
	for (uint32_t i = 0; i < s->nr; i++)
		n += s->futures[i];
	return n;
}

/* Code exists for it: an out-of-line poll to probe, or inlined copies to report. */
static bool future_has_code(const struct model *m, const struct future *f)
{
	return (f->poll >= 0 && (uint32_t)f->poll < m->nr_polls) || f->inlined_only;
}

uint32_t selection__add_default(struct selection *s, const struct model *m, bool all_crates)
{
	uint32_t nr = sel_nr(s, m), added = 0;

	for (uint32_t i = 0; i < nr; i++) {
		const struct future *f = &m->futures[i];

		if (s->futures[i] || !future_has_code(m, f))
			continue;
		if (!all_crates && f->crate_class != CRATE_USER)
			continue;
		s->futures[i] = true;
		added++;
	}
	return added;
}

uint32_t selection__add_pattern(struct selection *s, const struct model *m, const char *pattern)
{
	uint32_t nr = sel_nr(s, m), matched = 0;
	bool *hit;
	char *name = NULL;
	size_t name_cap = 0;

	if (!pattern || !nr)
		return 0;
	hit = calloc(nr, sizeof(*hit));
	if (!hit) {
		pr_warn("selection: out of memory matching pattern '%s'\n", pattern);
		return 0;
	}
	for (uint32_t i = 0; i < m->nr_polls; i++) {
		const struct poll_fn *p = &m->polls[i];

		if (p->future < 0 || (uint32_t)p->future >= nr || hit[p->future])
			continue;
		if (glob__match(pattern, p->name) || glob__match(pattern, p->linkage_name))
			hit[p->future] = true;
	}
	for (uint32_t i = 0; i < nr; i++) {
		const struct future *f = &m->futures[i];

		if (!hit[i] && f->path) {
			/* the display name is never longer than the path */
			size_t need = strlen(f->path) + 64;
			if (need > name_cap) {
				char *n = realloc(name, need);
				if (!n) {
					pr_warn("selection: out of memory matching pattern '%s'\n",
						pattern);
					break;
				}
				name = n;
				name_cap = need;
			}
			future__display_name(f, name, name_cap);
			hit[i] = glob__match(pattern, f->path) || glob__match(pattern, name);
		}
		if (hit[i]) {
			s->futures[i] = true;
			matched++;
		}
	}
	free(name);
	free(hit);
	return matched;
}

/*
 * Compressed adjacency of the await graph, built once: for each future the
 * futures it awaits (forward) or that await it (reverse). Unresolved edges (to == -1)
 * and indices outside the model are left out.
 */
struct adjacency {
	uint32_t *start; /* nr + 1 offsets into next */
	uint32_t *next;
};

static bool edge_valid(const struct await_edge *e, uint32_t nr)
{
	return e->from >= 0 && e->to >= 0 && (uint32_t)e->from < nr && (uint32_t)e->to < nr;
}

static int adjacency__build(struct adjacency *a, const struct model *m, uint32_t nr, bool reverse)
{
	uint32_t nr_valid = 0;

	a->start = calloc((size_t)nr + 1, sizeof(*a->start));
	if (!a->start)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->nr_edges; i++) {
		const struct await_edge *e = &m->edges[i];
		if (!edge_valid(e, nr))
			continue;
		a->start[(reverse ? e->to : e->from) + 1]++;
		nr_valid++;
	}
	for (uint32_t i = 0; i < nr; i++)
		a->start[i + 1] += a->start[i];
	a->next = malloc((size_t)(nr_valid ? nr_valid : 1) * sizeof(*a->next));
	if (!a->next) {
		free(a->start);
		a->start = NULL;
		return -ENOMEM;
	}
	/* fill using start[] as cursors, then shift back */
	for (uint32_t i = 0; i < m->nr_edges; i++) {
		const struct await_edge *e = &m->edges[i];
		if (!edge_valid(e, nr))
			continue;
		uint32_t from = (uint32_t)(reverse ? e->to : e->from);
		a->next[a->start[from]++] = (uint32_t)(reverse ? e->from : e->to);
	}
	for (uint32_t i = nr; i > 0; i--)
		a->start[i] = a->start[i - 1];
	a->start[0] = 0;
	return 0;
}

static void adjacency__free(struct adjacency *a)
{
	free(a->start);
	free(a->next);
}

/* Mark in reached[] everything reachable from the seeds (breadth first). */
static void reach_from_seeds(const struct adjacency *a, const bool *seeds, bool *reached,
			     uint32_t nr, uint32_t *queue)
{
	uint32_t head = 0, tail = 0;

	for (uint32_t i = 0; i < nr; i++) {
		reached[i] = seeds[i];
		if (seeds[i])
			queue[tail++] = i;
	}
	while (head < tail) {
		uint32_t u = queue[head++];
		for (uint32_t k = a->start[u]; k < a->start[u + 1]; k++) {
			uint32_t v = a->next[k];
			if (!reached[v]) {
				reached[v] = true;
				queue[tail++] = v; /* each node enters once: tail <= nr */
			}
		}
	}
}

void selection__expand(struct selection *s, const struct model *m, enum expand_dir dir)
{
	uint32_t nr = sel_nr(s, m);
	struct adjacency adj = {0};
	bool *reached = NULL;
	uint32_t *queue = NULL;
	bool *seeds = NULL;

	if (!nr || !(dir & EXPAND_BOTH))
		return;
	reached = malloc(nr * sizeof(*reached));
	queue = malloc(nr * sizeof(*queue));
	seeds = malloc(nr * sizeof(*seeds));
	if (!reached || !queue || !seeds)
		goto nomem;
	/* both directions start from the original seeds: up ∪ down, not down-of-up */
	memcpy(seeds, s->futures, nr * sizeof(*seeds));
	for (int d = EXPAND_UP; d <= EXPAND_DOWN; d <<= 1) {
		if (!(dir & d))
			continue;
		if (adjacency__build(&adj, m, nr, d == EXPAND_UP))
			goto nomem;
		reach_from_seeds(&adj, seeds, reached, nr, queue);
		adjacency__free(&adj);
		for (uint32_t i = 0; i < nr; i++)
			s->futures[i] |= reached[i];
	}
	goto out;
nomem:
	pr_warn("selection: out of memory expanding the selection along the await graph\n");
out:
	free(seeds);
	free(queue);
	free(reached);
}
