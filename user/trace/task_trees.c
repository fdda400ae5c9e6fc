// SPDX-License-Identifier: GPL-2.0
/*
 * Task mode's records, paired and read (task_trees.h). A thread's records arrive in
 * its own order (one ring buffer, reserved as they happen): a task poll's start tree
 * before its end, a nested task poll's (a task polled inside another's poll) between
 * them. So each thread keeps a stack of open start trees, by nesting level.
 */
#include "trace/task_trees.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/trace_event.h"

int task_tree__decode(const void *data, size_t size, struct task_tree *out)
{
	struct task_tree_record r;
	size_t n;

	if (size < TASK_TREE_RECORD_HEAD)
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	memcpy(&r, data, size < sizeof(r) ? size : sizeof(r));
	if (r.type != RECORD_TASK_TREE || r.phase > TASK_PHASE_LOST ||
	    r.nr_nodes > TASK_TREE_MAX_NODES)
		return -EINVAL;
	n = r.nr_nodes;
	if (size < TASK_TREE_RECORD_HEAD + n * sizeof(struct task_tree_node))
		return -EINVAL;
	*out = (struct task_tree){
	    .phase = r.phase,
	    .flags = r.flags,
	    .nested = r.nested,
	    .pid = r.pid,
	    .tid = r.tid,
	    .header = r.header,
	    .start_ns = r.start_ns,
	    .end_ns = r.end_ns,
	    .offcpu_ns = r.offcpu_ns,
	    .info = r.info,
	    .cut_nodes = r.cut_nodes,
	    .cut_depth = r.cut_depth,
	    .nr = (uint32_t)n,
	};
	memcpy(out->nodes, r.nodes, n * sizeof(r.nodes[0]));
	/* nodes come parents first: a parent index must point back */
	for (uint32_t i = 0; i < out->nr; i++)
		if ((i == 0) != (out->nodes[i].parent < 0) ||
		    (i && (uint32_t)out->nodes[i].parent >= i))
			return -EINVAL;
	return 0;
}

static bool has_state(const struct model *m, int32_t f)
{
	return f >= 0 && (uint32_t)f < m->nr_futures && m->futures[f].has_state;
}

/*
 * Which node of the end tree each start node is (match[i], -1 if none): the same
 * future at the same address, held by the same parent in the same slot. The slot
 * matters: two awaits of one async fn hold two instances, even at one address (an
 * awaitee is placed where the previous one was), so a future awaited at another
 * await point is another instance.
 */
static void match_nodes(const struct task_tree *start, const struct task_tree *end, int32_t *match)
{
	for (uint32_t i = 0; start && i < start->nr && i < TASK_TREE_MAX_NODES; i++) {
		const struct task_tree_node *n = &start->nodes[i];

		match[i] = -1;
		for (uint32_t j = 0; end && j < end->nr; j++) {
			const struct task_tree_node *k = &end->nodes[j];

			if (k->future != n->future || k->addr != n->addr ||
			    (n->parent < 0) != (k->parent < 0))
				continue;
			if (n->parent >= 0 &&
			    (k->slot != n->slot || match[n->parent] != (int32_t)k->parent))
				continue;
			match[i] = (int32_t)j;
			break;
		}
	}
}

void task_poll__diff(const struct model *m, const struct task_tree *start,
		     const struct task_tree *end, struct task_poll *out)
{
	uint8_t fate[TASK_TREE_MAX_NODES];
	int32_t match[TASK_TREE_MAX_NODES];
	bool matched[TASK_TREE_MAX_NODES] = {false};
	/* gone: the task's future is no longer there, or the task itself (its header's
	 * vtable no task type's any more: the runtime freed it inside the poll, which it
	 * does to a task that completed) */
	bool gone = end && ((end->flags & TASK_TREE_GONE) ||
			    ((end->flags & TASK_TREE_UNKNOWN_TYPE) && start && start->nr &&
			     !(start->flags & TASK_TREE_UNKNOWN_TYPE)));

	/* a poll that began with the task cancelled dropped its future, as one a cancel
	 * reached while it ran: not Ready; nor one whose end could not say */
	bool cancelled =
	    gone && (end->flags & (TASK_TREE_CANCELLING | TASK_TREE_CANCELLED_IN_POLL));
	bool unsure = gone && !cancelled && (end->flags & TASK_TREE_END_UNSURE);

	out->nr_events = 0;
	out->completed = gone;
	out->cancelled = cancelled;
	out->unsure = unsure;
	match_nodes(start, gone ? NULL : end, match);
	/* the start tree's futures, parents first: a parent's fate is known first */
	for (uint32_t i = 0; start && i < start->nr && i < TASK_TREE_MAX_NODES; i++) {
		const struct task_tree_node *n = &start->nodes[i];
		struct task_future_event *e = &out->events[out->nr_events++];
		int32_t at = match[i];

		*e = (struct task_future_event){
		    .future = n->future,
		    .addr = n->addr,
		    .depth = n->depth,
		    .started = has_state(m, n->future) && n->discr == 0,
		    .await_index = -1,
		    .discr = n->discr,
		};
		if (at >= 0) {
			matched[at] = true;
			e->fate = TASK_FUTURE_PENDING;
			e->discr = end->nodes[at].discr;
			e->await_index = trace__await_index(m, n->future, e->discr);
			/* an async fn back at an earlier await: a loop inside it, or a new
			 * instance in the old one's place (its Ready unseen) */
			e->went_back = e->await_index >= 0 &&
				       trace__await_index(m, n->future, n->discr) > e->await_index;
		} else if (!end) {
			e->fate = TASK_FUTURE_ENDED; /* the poll's exit was never seen */
		} else if (n->parent < 0) {
			/* the task's future: gone means the task returned Ready, unless
			 * the poll dropped it (cancelled) */
			e->fate =
			    gone && !cancelled && !unsure ? TASK_FUTURE_READY : TASK_FUTURE_ENDED;
		} else {
			int32_t pat = match[n->parent];
			bool compiler = has_state(m, start->nodes[n->parent].future);

			if (pat >= 0) /* its awaiter stayed: a compiler one moved past it */
				e->fate = compiler && end->nodes[pat].discr != STATE_PANICKED_VALUE
					      ? TASK_FUTURE_READY
					      : TASK_FUTURE_ENDED;
			else /* its awaiter left too: Ready only if it left Ready past it */
				e->fate = compiler && fate[n->parent] == TASK_FUTURE_READY
					      ? TASK_FUTURE_READY
					      : TASK_FUTURE_ENDED;
		}
		fate[i] = e->fate;
	}
	/* futures only in the end tree: started in this poll, pending now */
	for (uint32_t i = 0; end && !gone && i < end->nr && i < TASK_TREE_MAX_NODES; i++) {
		const struct task_tree_node *n = &end->nodes[i];

		if (matched[i] || out->nr_events >= 2 * TASK_TREE_MAX_NODES)
			continue;
		out->events[out->nr_events++] = (struct task_future_event){
		    .future = n->future,
		    .addr = n->addr,
		    .depth = n->depth,
		    .started = start != NULL, /* without a tree before: not known */
		    .fate = TASK_FUTURE_PENDING,
		    .await_index = trace__await_index(m, n->future, n->discr),
		    .discr = n->discr,
		};
	}
}

/*
 * The tree each task's last poll ended with: the tree its next poll starts with (a
 * task's futures change only while it is polled). A finished task's entry stays as a
 * tombstone (its end time) until its header is reused, so that a poll overlapping its
 * last one (another thread's, which ended after it) is told apart.
 */
struct last_tree {
	uint64_t end_ns;
	bool completed;
	uint32_t nr;
	struct task_tree_node *nodes;
};

struct task_trees {
	const struct model *m;
	const uint32_t *root_types; /* task_info index nr_task_types + k: root future k */
	uint32_t nr_root_types;
	struct u64_map by_header; /* header -> index in last */
	struct last_tree *last;
	uint32_t nr, cap;
	uint32_t *free_list;
	uint32_t nr_free, cap_free;
	uint32_t max; /* tasks kept at once */
	uint64_t unmatched, untracked;
	struct task_tree start; /* the previous tree, as a start tree */
	struct task_poll poll;	/* built here, handed out */
};

struct task_trees *task_trees__new(const struct model *m, const uint32_t *root_types,
				   uint32_t nr_root_types)
{
	struct task_trees *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->m = m;
	t->root_types = root_types;
	t->nr_root_types = nr_root_types;
	t->max = 100000;
	u64_map__init(&t->by_header);
	return t;
}

void task_trees__free(struct task_trees *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->nr; i++)
		free(t->last[i].nodes);
	u64_map__free(&t->by_header);
	free(t->last);
	free(t->free_list);
	free(t);
}

/* The entry of this header (a new one if need be, NULL past the cap or out of memory). */
static struct last_tree *last_of(struct task_trees *t, uint64_t header, bool create)
{
	uint64_t i;

	if (u64_map__get(&t->by_header, header, &i) && i != UINT64_MAX)
		return &t->last[i];
	if (!create)
		return NULL;
	if (t->nr_free) {
		i = t->free_list[--t->nr_free];
	} else {
		if (t->nr >= t->max)
			return NULL;
		if (t->nr == t->cap) {
			uint32_t cap = t->cap ? t->cap * 2 : 64;
			struct last_tree *n = realloc(t->last, cap * sizeof(*n));

			if (!n)
				return NULL;
			t->last = n;
			t->cap = cap;
		}
		i = t->nr++;
		memset(&t->last[i], 0, sizeof(t->last[i]));
	}
	if (u64_map__set(&t->by_header, header, i))
		return NULL;
	return &t->last[i];
}

/*
 * A task's root future from its type (the record's task_info index), for a poll with
 * no tree to read it from: a task that finished in its first poll seen. -1 if none.
 */
static int32_t root_of_type(const struct task_trees *t, uint32_t info)
{
	if (info < t->m->nr_task_types)
		return t->m->task_types[info].future;
	info -= t->m->nr_task_types;
	return info < t->nr_root_types && t->root_types ? (int32_t)t->root_types[info] : -1;
}

static int keep(struct last_tree *l, const struct task_tree *tree, bool completed)
{
	struct task_tree_node *n = NULL;

	if (!completed && tree->nr) {
		n = malloc(tree->nr * sizeof(*n));
		if (!n)
			return -ENOMEM;
		memcpy(n, tree->nodes, tree->nr * sizeof(*n));
	}
	free(l->nodes);
	l->nodes = n;
	l->nr = n ? tree->nr : 0;
	l->end_ns = tree->end_ns;
	l->completed = completed;
	return 0;
}

int task_trees__add(struct task_trees *t, const struct task_tree *tree,
		    void (*fn)(void *ctx, const struct task_poll *p), void *ctx)
{
	struct last_tree *l;
	struct task_poll *p = &t->poll;
	const struct task_tree *start = NULL;
	bool lost = tree->phase == TASK_PHASE_LOST, concurrent = false;
	/* its tree not read (another walk used the per-CPU buffers): a poll, no fates */
	bool not_read = !lost && (tree->flags & TASK_TREE_NOT_READ);

	if (tree->phase == TASK_PHASE_START)
		return 0; /* (older records) the last tree is the start */
	l = last_of(t, tree->header, true);
	if (!l) {
		t->untracked++;
		return 0;
	}
	if (l->end_ns && tree->start_ns < l->end_ns) {
		/* it began before the task's last poll ended: another thread's poll of it
		 * overlapped (tokio ran it there meanwhile); its tree is not its own */
		concurrent = true;
	} else if (l->end_ns && !l->completed) {
		t->start = (struct task_tree){.phase = TASK_PHASE_START,
					      .header = tree->header,
					      .info = tree->info,
					      .nr = l->nr};
		if (l->nr) /* an empty tree keeps no node array */
			memcpy(t->start.nodes, l->nodes, l->nr * sizeof(l->nodes[0]));
		start = &t->start;
	}
	memset(p, 0, offsetof(struct task_poll, events));
	p->pid = tree->pid;
	p->tid = tree->tid;
	p->header = tree->header;
	p->start_ns = tree->start_ns;
	p->end_ns = tree->end_ns;
	p->offcpu_ns = tree->offcpu_ns;
	p->info = tree->info;
	p->nested = tree->nested;
	p->lost = lost;
	p->concurrent = concurrent;
	p->first = !start && !concurrent;
	p->cut = (tree->flags & TASK_TREE_CUT) != 0;
	p->root = tree->nr	       ? tree->nodes[0].future
		  : start && start->nr ? start->nodes[0].future
				       : root_of_type(t, tree->info);
	/* its future gone when it began: a poll of a task finished before */
	p->finished = !lost && (tree->flags & TASK_TREE_GONE_AT_START);
	p->not_read = not_read;
	if (not_read || p->finished) {
		p->nr_events = 0;
		p->completed = p->finished;
	} else {
		task_poll__diff(t->m, start, lost ? NULL : tree, p);
	}
	p->start = start;
	p->end = lost || not_read ? NULL : tree;
	fn(ctx, p);
	if (concurrent)
		return 0;
	if (p->finished) /* the task stays finished */
		return keep(l, tree, true);
	if (lost || not_read) { /* its futures' state is unknown now: start over next poll */
		keep(l, tree, false);
		l->nr = 0;
		free(l->nodes);
		l->nodes = NULL;
		l->end_ns = 0;
		return 0;
	}
	return keep(l, tree, p->completed);
}

uint32_t task_trees__open(const struct task_trees *t)
{
	(void)t;
	return 0;
}

uint64_t task_trees__unmatched(const struct task_trees *t)
{
	return t->unmatched + t->untracked;
}
