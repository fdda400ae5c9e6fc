// SPDX-License-Identifier: GPL-2.0
/*
 * The wait-for graph of resources.c's report and its deadlocks (wait_graph.h;
 * docs/stacks.md, "Resources and deadlocks", step 4): parked tasks queued on locks,
 * waiting for messages or joining tasks -> the tasks those wait for; the tasks that
 * can only wait for each other; their cycles, proven or possible.
 */
#include "stacks/wait_graph.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A task that can go on by itself: running now, or woken and in a run queue. */
static bool can_progress(const struct stk_task *t)
{
	return t->root.runtime != TASK_RT_DYN && (t->root.st.running || t->root.st.scheduled);
}

bool resources__claimed(const struct resource *x)
{
	if (x->holder != RES_NONE || x->ambiguous)
		return false;
	if (x->kind == GUARD_SENDER)
		return x->counted; /* a channel whose every sender is a slot's */
	/* async-lock's RwLock counts its readers: none (a writer holds it) or more than
	 * its read slots (one is out of sight) say the slots are not all it waits for */
	if (x->family == LOCK_ASYNC_RWLOCK &&
	    (!lock_family__readers(x->family, x->word) ||
	     lock_family__readers(x->family, x->word) > x->shared_claims))
		return false;
	return x->family != LOCK_NONE && x->read && x->locked &&
	       (x->shared_claims || x->permit_claims || x->counted);
}

bool resources__proven(const struct resource *x)
{
	return x->kind != GUARD_SENDER && (x->holder != RES_NONE || x->counted);
}

/* A slot a waiter of lock x waits for: of a counted lock, only those proven held
 * (a stale write slot beside counted readers holds nothing). */
static bool slot_counts(const struct resource *x, const struct res_hold *h)
{
	return !x->counted || h->held;
}

/* The wait-for graph as wait_graph__cycles builds it. */
struct graph {
	const struct res_report *r;
	const struct stk_task *tasks;
	uint32_t nr;
	uint32_t *next, *via; /* a task's first edge out and the lock it goes through */
	uint8_t *in;	      /* still possibly deadlocked */
	uint32_t *stack, depth;
	uint8_t *done;		/* a lock whose waiters were let go */
	uint8_t *seen;		/* a lock held in part whose slots were looked at */
	uint8_t *moving;	/* ... one of whose slots' tasks can go on */
	uint32_t *first2;	/* ... its first two slots' tasks (distinct) */
	uint32_t *hold_first;	/* [nr + 1]: a task's holds (they are in task order) */
	uint32_t *joined_first; /* [nr + 2]: into joiners, by the task joined */
	uint32_t *joiners;	/* the tasks waiting for a task to finish */
};

/* Task t cannot be deadlocked: what waits on it can go on once it does. */
static void let_go(struct graph *g, uint32_t t)
{
	if (!g->in[t])
		return;
	g->in[t] = 0;
	g->next[t] = RES_NONE;
	g->stack[g->depth++] = t;
}

/* Every waiter of lock xi let go (once). */
static void let_go_waiters(struct graph *g, uint32_t xi)
{
	const struct resource *x = &g->r->res[xi];

	if (g->done[xi])
		return;
	g->done[xi] = 1;
	for (uint32_t k = 0; k < x->nr_refs[1]; k++)
		let_go(g, g->r->waits[g->r->by_res_waits[x->first_ref[1] + k]].task);
}

/*
 * Lets go of every task that depends on one let go: waiters of a lock it holds (its
 * proven holder) or has a guard slot on (a lock held in part), and tasks joining it.
 * Each task is let go once and each lock's waiters looked at once: linear.
 */
static void propagate(struct graph *g)
{
	const struct res_report *r = g->r;

	while (g->depth) {
		uint32_t h = g->stack[--g->depth];

		for (uint32_t i = g->hold_first[h]; i < g->hold_first[h + 1]; i++) {
			uint32_t xi = r->holds[i].resource;
			const struct resource *x;

			if (xi == RES_NONE || g->done[xi])
				continue;
			x = &r->res[xi];
			if ((x->holder != h && !resources__claimed(x)) ||
			    !slot_counts(x, &r->holds[i]))
				continue; /* a stale slot on a lock another task holds */
			let_go_waiters(g, xi);
		}
		for (uint32_t k = g->joined_first[h]; k < g->joined_first[h + 1]; k++)
			let_go(g, g->joiners[k]);
	}
}

/* A lock held in part: its slots' first two tasks, and whether one can go on (once
 * per lock, not per waiter: a lock with many slots and many waiters stays linear). */
static void look_at_slots(struct graph *g, uint32_t xi)
{
	const struct resource *x = &g->r->res[xi];
	uint32_t *f = &g->first2[2 * xi];

	if (g->seen[xi])
		return;
	g->seen[xi] = 1;
	f[0] = f[1] = RES_NONE;
	for (uint32_t k = 0; k < x->nr_refs[0]; k++) {
		const struct res_hold *hh = &g->r->holds[g->r->by_res_holds[x->first_ref[0] + k]];
		uint32_t h = hh->task;

		if (!slot_counts(x, hh))
			continue;
		g->moving[xi] |= can_progress(&g->tasks[h]);
		if (f[0] == RES_NONE)
			f[0] = h;
		else if (f[1] == RES_NONE && h != f[0])
			f[1] = h;
	}
}

/*
 * The edges out of a wait: the lock's proven holder, the task joined, or (a lock held
 * in part) every task whose guard slot points at it. 0: no edge (no holder known, a
 * task that can go on, or itself: counted), else 1 with the first in *first.
 */
static int edges_out(struct graph *g, const struct res_wait *w, uint32_t *first,
		     uint32_t *self_waits)
{
	const struct res_report *r = g->r;
	const struct resource *x = w->resource != RES_NONE ? &r->res[w->resource] : NULL;
	uint32_t h;

	if (w->alternatives)
		return 0; /* another branch of a join!, select! or timeout may end it */
	if (x && x->kind == GUARD_SENDER && !w->receives)
		return 0; /* waits for room: its senders cannot give it */
	if (x && resources__claimed(x)) {
		const uint32_t *f = &g->first2[2 * w->resource];

		/* tokio's queue is FIFO: behind a waiter given permits, this one waits for
		 * that one too, which the slots do not say: no edge */
		if (x->family == LOCK_TOKIO && (x->given_permits || x->given_unknown) && !w->given)
			return 0;
		for (uint32_t i = g->hold_first[w->task]; i < g->hold_first[w->task + 1]; i++) {
			const struct res_hold *hh = &r->holds[i];

			if (hh->resource != w->resource || hh->frame >= w->frame ||
			    hh->guard->lock == GUARD_PERMITS || hh->guard->lock == GUARD_SENDER)
				continue; /* its lock method's guard being taken; permits kept
					   * while asking for more, a sender of the channel it
					   * receives on: not a self wait */
			(*self_waits)++;
			return 0;
		}
		look_at_slots(g, w->resource);
		if (g->moving[w->resource])
			return 0;
		*first = f[0] != w->task ? f[0] : f[1];
		return *first != RES_NONE;
	}
	/* a join: the task joined, unless it has finished */
	h = x								   ? x->holder
	    : w->joins != RES_NONE && !g->tasks[w->joins].root.st.complete ? w->joins
									   : RES_NONE;
	if (h == RES_NONE)
		return 0;
	if (h == w->task) {
		(*self_waits)++;
		return 0;
	}
	if (can_progress(&g->tasks[h]))
		return 0;
	*first = h;
	return 1;
}

/* The cycle through task t of the wait-for graph (next, via) as a deadlock. */
static int add_cycle(struct res_report *r, const uint32_t *next, const uint32_t *via, uint32_t t)
{
	uint32_t n = 0, first = 0, c = t, *ct, *cr;
	struct res_deadlock *dl;
	bool proven = true;

	do {
		n++;
		c = next[c];
	} while (c != t);
	for (uint32_t d = 0; d < r->nr_deadlocks; d++)
		first += r->deadlocks[d].nr;
	if ((ct = realloc(r->cycle_task, (first + n) * sizeof(*ct))))
		r->cycle_task = ct;
	if ((cr = realloc(r->cycle_res, (first + n) * sizeof(*cr))))
		r->cycle_res = cr;
	if ((dl = realloc(r->deadlocks, (r->nr_deadlocks + 1) * sizeof(*dl))))
		r->deadlocks = dl;
	if (!ct || !cr || !dl)
		return -ENOMEM;
	for (uint32_t k = 0; k < n; k++, c = next[c]) {
		r->cycle_task[first + k] = c;
		r->cycle_res[first + k] = via[c];
		proven &= via[c] == RES_NONE || resources__proven(&r->res[via[c]]);
	}
	r->deadlocks[r->nr_deadlocks++] = (struct res_deadlock){first, n, proven};
	return 0;
}

/*
 * The tasks left in the graph but in no cycle: stuck behind a deadlock (every task
 * they wait for is deadlocked or stuck too). Their first edges lead to a cycle; the
 * deadlock of that cycle is theirs (g->stack reused: a task's deadlock + 1, 0 not
 * known yet).
 */
static int add_behind(struct res_report *r, struct graph *g)
{
	uint32_t *dl = g->stack, n = 0;

	memset(dl, 0, g->nr * sizeof(*dl));
	for (uint32_t d = 0; d < r->nr_deadlocks; d++)
		for (uint32_t k = 0; k < r->deadlocks[d].nr; k++)
			dl[r->cycle_task[r->deadlocks[d].first + k]] = d + 1;
	for (uint32_t t = 0; t < g->nr; t++)
		n += g->in[t] && !dl[t];
	if (!n)
		return 0;
	if (!(r->behind = calloc(n, sizeof(*r->behind))))
		return -ENOMEM;
	for (uint32_t t = 0; t < g->nr; t++) {
		uint32_t c = g->next[t], steps = 0;

		if (!g->in[t] || dl[t])
			continue; /* out of the graph, in a cycle, or done */
		/* its chain of first edges ends in a cycle, or at a task done before (its
		 * deadlock kept in dl): at most nr steps */
		while (c != RES_NONE && g->in[c] && !dl[c] && steps++ < g->nr)
			c = g->next[c];
		if (c == RES_NONE || !g->in[c] || !dl[c])
			continue; /* (never: every task left has an edge to another left) */
		dl[t] = dl[c];
		r->behind[r->nr_behind++] =
		    (struct res_behind){t, g->via[t], g->next[t], dl[c] - 1};
	}
	return 0;
}

/* Counting sort: each task's holds (in task order already: their ranges). */
static int index_holds(struct graph *g)
{
	const struct res_report *r = g->r;

	g->hold_first = calloc(g->nr + 1, sizeof(uint32_t));
	if (!g->hold_first)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->nr_holds; i++)
		g->hold_first[r->holds[i].task + 1]++;
	for (uint32_t t = 0; t < g->nr; t++)
		g->hold_first[t + 1] += g->hold_first[t];
	return 0;
}

/* Counting sort: the tasks joining each task. */
static int index_joins(struct graph *g)
{
	const struct res_report *r = g->r;
	uint32_t nj = 0;

	g->joined_first = calloc(g->nr + 2, sizeof(uint32_t));
	if (!g->joined_first)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->nr_waits; i++)
		if (g->via[r->waits[i].task] == RES_NONE && g->next[r->waits[i].task] != RES_NONE) {
			g->joined_first[g->next[r->waits[i].task] + 2]++;
			nj++;
		}
	for (uint32_t t = 0; t < g->nr; t++)
		g->joined_first[t + 2] += g->joined_first[t + 1];
	g->joiners = malloc((nj ? nj : 1) * sizeof(uint32_t));
	if (!g->joiners)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->nr_waits; i++) {
		uint32_t t = r->waits[i].task;

		if (g->via[t] == RES_NONE && g->next[t] != RES_NONE)
			g->joiners[g->joined_first[g->next[t] + 1]++] = t;
	}
	return 0;
}

/*
 * The wait-for graph: a parked task queued on a lock -> the parked task(s) holding
 * it, or joining a task -> that task. A task is deadlocked when every task it waits
 * on is: those that depend on a task that can go on (running or scheduled, or
 * parked on anything else) are let go from the ones that wait, until none is left
 * to let go; each of the rest has an edge to one of the rest, so following each
 * one's first edge finds the cycles among them.
 */
int wait_graph__cycles(struct res_report *r, const struct stk_task *tasks, uint32_t nr)
{
	uint32_t n1 = nr ? nr : 1, nx = r->nr_res ? r->nr_res : 1;
	struct graph g = {.r = r,
			  .tasks = tasks,
			  .nr = nr,
			  .next = malloc(n1 * sizeof(uint32_t)),
			  .via = malloc(n1 * sizeof(uint32_t)),
			  .in = calloc(n1, 1),
			  .stack = malloc(n1 * sizeof(uint32_t)),
			  .done = calloc(nx, 1),
			  .seen = calloc(nx, 1),
			  .moving = calloc(nx, 1),
			  .first2 = malloc(2 * nx * sizeof(uint32_t))};
	uint8_t *color = calloc(n1, 1);
	int e = 0;

	if (!g.next || !g.via || !g.in || !g.stack || !g.done || !g.seen || !g.moving ||
	    !g.first2 || !color || (e = index_holds(&g))) {
		e = e ? e : -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < nr; i++)
		g.next[i] = g.via[i] = RES_NONE;
	/* the waiting tasks with an edge out */
	for (uint32_t i = 0; i < r->nr_waits; i++) {
		const struct res_wait *w = &r->waits[i];
		uint32_t first;

		if (!w->queued || can_progress(&tasks[w->task]) ||
		    !edges_out(&g, w, &first, &r->self_waits))
			continue;
		g.next[w->task] = first;
		g.via[w->task] = w->resource;
		g.in[w->task] = 1;
	}
	if ((e = index_joins(&g)))
		goto out;
	/* let go of those with an edge to a task outside, and what depends on them: one
	 * edge each, or (a lock held in part) a slot's task outside */
	for (uint32_t i = 0; i < r->nr_waits; i++) {
		const struct res_wait *w = &r->waits[i];

		if (g.in[w->task] && !g.in[g.next[w->task]] &&
		    (w->resource == RES_NONE || !resources__claimed(&r->res[w->resource]))) {
			let_go(&g, w->task);
			propagate(&g);
		}
	}
	for (uint32_t xi = 0; xi < r->nr_res; xi++) {
		const struct resource *x = &r->res[xi];

		if (!g.seen[xi] || g.done[xi])
			continue;
		for (uint32_t k = 0; k < x->nr_refs[0] && !g.done[xi]; k++)
			if (slot_counts(x, &r->holds[r->by_res_holds[x->first_ref[0] + k]]) &&
			    !g.in[r->holds[r->by_res_holds[x->first_ref[0] + k]].task]) {
				let_go_waiters(&g, xi);
				propagate(&g);
			}
	}
	for (uint32_t i = 0; i < nr && !e; i++) {
		uint32_t t = i;

		while (t != RES_NONE && g.in[t] && color[t] == 0) {
			color[t] = 1;
			t = g.next[t];
		}
		if (t != RES_NONE && g.in[t] && color[t] == 1) /* a cycle through t, new */
			e = add_cycle(r, g.next, g.via, t);
		for (t = i; t != RES_NONE && g.in[t] && color[t] == 1; t = g.next[t])
			color[t] = 2;
	}
	if (!e)
		e = add_behind(r, &g);
out:
	free(g.next);
	free(g.via);
	free(g.in);
	free(g.stack);
	free(g.done);
	free(g.seen);
	free(g.moving);
	free(g.first2);
	free(g.hold_first);
	free(g.joined_first);
	free(g.joiners);
	free(color);
	return e;
}
