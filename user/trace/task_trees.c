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

static int32_t find(const struct task_tree *t, int32_t future, uint64_t addr)
{
	for (uint32_t i = 0; t && i < t->nr; i++)
		if (t->nodes[i].future == future && t->nodes[i].addr == addr)
			return (int32_t)i;
	return -1;
}

/* k of Suspend<k> for a compiler future's __state; -1 otherwise */
static int32_t await_of(const struct model *m, int32_t f, uint64_t discr)
{
	if (!has_state(m, f) || discr < STATE_SUSPEND0_VALUE)
		return -1;
	return model__has_await(m, (uint32_t)f, (int32_t)(discr - STATE_SUSPEND0_VALUE))
		   ? (int32_t)(discr - STATE_SUSPEND0_VALUE)
		   : -1;
}

void task_poll__diff(const struct model *m, const struct task_tree *start,
		     const struct task_tree *end, struct task_poll *out)
{
	uint8_t fate[TASK_TREE_MAX_NODES];
	/* gone: the task's future is no longer there, or the task itself (its header's
	 * vtable no task type's any more: the runtime freed it inside the poll, which it
	 * does to a task that completed) */
	bool gone = end && ((end->flags & TASK_TREE_GONE) ||
			    ((end->flags & TASK_TREE_UNKNOWN_TYPE) && start && start->nr &&
			     !(start->flags & TASK_TREE_UNKNOWN_TYPE)));

	out->nr_events = 0;
	out->completed = gone;
	/* the start tree's futures, parents first: a parent's fate is known first */
	for (uint32_t i = 0; start && i < start->nr && i < TASK_TREE_MAX_NODES; i++) {
		const struct task_tree_node *n = &start->nodes[i];
		struct task_future_event *e = &out->events[out->nr_events++];
		int32_t at = end && !gone ? find(end, n->future, n->addr) : -1;

		*e = (struct task_future_event){
		    .future = n->future,
		    .addr = n->addr,
		    .depth = n->depth,
		    .started = has_state(m, n->future) && n->discr == 0,
		    .await_index = -1,
		    .discr = n->discr,
		};
		if (at >= 0) {
			e->fate = TASK_FUTURE_PENDING;
			e->discr = end->nodes[at].discr;
			e->await_index = await_of(m, n->future, e->discr);
		} else if (!end) {
			e->fate = TASK_FUTURE_ENDED; /* the poll's exit was never seen */
		} else if (n->parent < 0) {
			/* the task's future: gone means the task returned Ready */
			e->fate = gone ? TASK_FUTURE_READY : TASK_FUTURE_ENDED;
		} else {
			const struct task_tree_node *p = &start->nodes[n->parent];
			int32_t pat = gone ? -1 : find(end, p->future, p->addr);
			bool compiler = has_state(m, p->future);

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
	for (uint32_t i = 0; end && !gone && i < end->nr; i++) {
		const struct task_tree_node *n = &end->nodes[i];

		if (find(start, n->future, n->addr) >= 0 ||
		    out->nr_events >= 2 * TASK_TREE_MAX_NODES)
			continue;
		out->events[out->nr_events++] = (struct task_future_event){
		    .future = n->future,
		    .addr = n->addr,
		    .depth = n->depth,
		    .started = true,
		    .fate = TASK_FUTURE_PENDING,
		    .await_index = await_of(m, n->future, n->discr),
		    .discr = n->discr,
		};
	}
}

/* A thread's open start trees, by nesting level. */
struct open_trees {
	uint32_t tid;
	uint32_t depth;
	struct task_tree trees[TASK_MAX_NESTED];
};

struct task_trees {
	const struct model *m;
	struct u64_map open_by_header; /* header -> task polls open on any thread */
	struct u64_map by_tid;	       /* tid -> index in threads */
	struct open_trees *threads;
	uint32_t nr, cap;
	uint64_t unmatched;
	struct task_poll poll; /* built here, handed out */
};

struct task_trees *task_trees__new(const struct model *m)
{
	struct task_trees *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->m = m;
	u64_map__init(&t->by_tid);
	u64_map__init(&t->open_by_header);
	return t;
}

void task_trees__free(struct task_trees *t)
{
	if (!t)
		return;
	u64_map__free(&t->by_tid);
	u64_map__free(&t->open_by_header);
	free(t->threads);
	free(t);
}

/* One open poll of this task fewer: true when another is still open. */
static bool close_open(struct task_trees *t, uint64_t header)
{
	uint64_t open = 0;

	if (u64_map__get(&t->open_by_header, header, &open) && open)
		u64_map__set(&t->open_by_header, header, open - 1);
	return open > 1;
}

/*
 * A poll of this task ended on `by`'s thread while another thread's poll of it is
 * still open: that one's trees span this one's work (its end tree shows what this
 * poll did), so what it says is not its own: it is counted apart when it ends.
 */
static void overtake(struct task_trees *t, const struct open_trees *by, uint64_t header)
{
	for (uint32_t i = 0; i < t->nr; i++) {
		struct open_trees *th = &t->threads[i];

		for (uint32_t k = 0; th != by && k < th->depth && k < TASK_MAX_NESTED; k++)
			if (th->trees[k].header == header)
				th->trees[k].concurrent = true;
	}
}

static struct open_trees *thread_of(struct task_trees *t, uint32_t tid)
{
	uint64_t i;

	if (u64_map__get(&t->by_tid, tid, &i))
		return &t->threads[i];
	if (t->nr == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 8;
		struct open_trees *n = realloc(t->threads, cap * sizeof(*n));

		if (!n)
			return NULL;
		t->threads = n;
		t->cap = cap;
	}
	if (u64_map__set(&t->by_tid, tid, t->nr))
		return NULL;
	t->threads[t->nr] = (struct open_trees){.tid = tid};
	return &t->threads[t->nr++];
}

int task_trees__add(struct task_trees *t, const struct task_tree *tree,
		    void (*fn)(void *ctx, const struct task_poll *p), void *ctx)
{
	struct open_trees *th = thread_of(t, tree->tid);
	const struct task_tree *start;
	struct task_poll *p = &t->poll;

	if (!th)
		return -ENOMEM;
	if (tree->nested >= TASK_MAX_NESTED)
		return -EINVAL;
	if (tree->phase == TASK_PHASE_START) {
		uint64_t open = 0;

		/* a start over one not ended at this level: that one ended unseen */
		for (uint32_t k = tree->nested; k < th->depth && k < TASK_MAX_NESTED; k++)
			close_open(t, th->trees[k].header);
		u64_map__get(&t->open_by_header, tree->header, &open);
		th->trees[tree->nested] = *tree;
		th->trees[tree->nested].concurrent = false;
		th->depth = tree->nested + 1u;
		return u64_map__set(&t->open_by_header, tree->header, open + 1);
	}
	/* an end: the start at its level, of the same task and poll */
	start = th->depth > tree->nested ? &th->trees[tree->nested] : NULL;
	if (!start || start->header != tree->header || start->start_ns != tree->start_ns) {
		t->unmatched++;
		return 0;
	}
	th->depth = tree->nested;
	if (close_open(t, tree->header))
		overtake(t, th, tree->header);
	memset(p, 0, offsetof(struct task_poll, events));
	p->concurrent = start->concurrent;
	p->pid = tree->pid;
	p->tid = tree->tid;
	p->header = tree->header;
	p->start_ns = start->start_ns;
	p->end_ns = tree->end_ns;
	p->offcpu_ns = tree->offcpu_ns;
	p->info = start->info;
	p->nested = tree->nested;
	p->root = start->nr ? start->nodes[0].future : -1;
	p->lost = tree->phase == TASK_PHASE_LOST;
	p->finished = (start->flags & TASK_TREE_GONE) != 0;
	p->cut = (start->flags | tree->flags) & TASK_TREE_CUT;
	task_poll__diff(t->m, start, p->lost ? NULL : tree, p);
	p->start = start;
	p->end = p->lost ? NULL : tree;
	fn(ctx, p);
	return 0;
}

uint32_t task_trees__open(const struct task_trees *t)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < t->nr; i++)
		n += t->threads[i].depth;
	return n;
}

uint64_t task_trees__unmatched(const struct task_trees *t)
{
	return t->unmatched;
}
