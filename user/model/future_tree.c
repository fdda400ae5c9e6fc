// SPDX-License-Identifier: GPL-2.0
/* The reference walk of a future tree (future_tree.h). */
#include "model/future_tree.h"

#include <string.h>

static bool read_u64(const struct tree_reader *rd, uint64_t addr, uint64_t *v)
{
	return !rd->read(rd->ctx, addr, v, sizeof(*v));
}

/* The little-endian unsigned value of `size` (1 to 8) bytes at addr. */
static bool read_uint(const struct tree_reader *rd, uint64_t addr, uint32_t size, uint64_t *v)
{
	uint8_t b[8] = {0};

	if (size == 0 || size > 8 || rd->read(rd->ctx, addr, b, size))
		return false;
	*v = 0;
	for (uint32_t i = size; i-- > 0;)
		*v = *v << 8 | b[i];
	return true;
}

/* The conditions of s read where at_step steps lead (cur): 1 hold, 0 not, -1 unreadable. */
static int conds_hold(const struct tree_slot *s, uint32_t at_step, uint64_t cur,
		      const struct tree_reader *rd)
{
	for (uint32_t k = 0; k < s->nr_conds && k < MODEL_TREE_CONDS; k++) {
		const struct tree_cond *c = &s->conds[k];
		uint64_t v;

		if (c->at_step != at_step)
			continue;
		if (!read_uint(rd, cur + c->offset, c->size, &v))
			return -1;
		bool in = v >= c->lo && v <= c->hi;
		if ((c->kind == TREE_COND_IN && !in) || (c->kind == TREE_COND_NOT_IN && in) ||
		    c->kind > TREE_COND_NOT_IN)
			return 0;
	}
	return 1;
}

int future_tree__follow(const struct tree_slot *s, uint64_t addr, const struct tree_reader *rd,
			uint64_t *to, uint64_t *vtable)
{
	uint32_t nr_steps = s->nr_steps < MODEL_AWAIT_STEPS ? s->nr_steps : MODEL_AWAIT_STEPS;
	uint64_t cur = addr, data;
	int r;

	for (uint32_t k = 0; k < s->nr_conds && k < MODEL_TREE_CONDS; k++)
		if (s->conds[k].at_step > nr_steps)
			return 0; /* a condition the steps never reach: not a slot we can read */
	for (uint32_t k = 0;; k++) {
		if ((r = conds_hold(s, k, cur, rd)) <= 0)
			return r;
		if (k == nr_steps)
			break;
		cur += s->steps[k].offset;
		if (s->steps[k].deref) {
			if (!read_u64(rd, cur, &cur))
				return -1;
			if (!cur)
				return 0;
		}
	}
	*vtable = 0;
	if (!s->dyn) {
		*to = cur;
		return 1;
	}
	if (!read_u64(rd, cur + s->dyn_data, &data) || !read_u64(rd, cur + s->dyn_vtable, vtable))
		return -1;
	if (!data)
		return 0;
	*to = data;
	return 1;
}

static bool seen(const struct tree_walk_node *nodes, uint32_t nr, int32_t future, uint64_t addr)
{
	for (uint32_t i = 0; i < nr; i++)
		if (nodes[i].future == future && nodes[i].addr == addr)
			return true;
	return false;
}

static const struct future_tree *tree_of(const struct model *m, int32_t f)
{
	return f >= 0 && (uint32_t)f < m->nr_trees && (uint32_t)f < m->nr_futures && m->trees &&
		       m->trees[f].known
		   ? &m->trees[f]
		   : NULL;
}

/* Read node n's own discriminant; false when it is not to be expanded. */
static bool node_state(const struct model *m, struct tree_walk_node *n,
		       const struct tree_reader *rd)
{
	const struct future_tree *t = tree_of(m, n->future);

	if (n->future < 0)
		return false; /* unknown dyn: flagged already */
	if (!t) {
		n->flags |= TREE_NODE_NO_LAYOUT;
		return false;
	}
	if (!t->has_discr)
		return true;
	if (!read_uint(rd, n->addr + t->discr_offset, t->discr_size, &n->discr)) {
		n->flags |= TREE_NODE_UNREADABLE;
		return false;
	}
	if (t->discr_max != UINT64_MAX && n->discr > t->discr_max) {
		n->flags |= TREE_NODE_BAD_STATE;
		return false;
	}
	return true;
}

uint32_t future_tree__walk(const struct model *m, int32_t root, uint64_t addr,
			   const struct tree_reader *rd, struct tree_walk_node *nodes, uint32_t cap,
			   uint32_t max_depth, struct tree_walk_stats *st)
{
	uint32_t nr = 0;

	memset(st, 0, sizeof(*st));
	if (!cap || root < 0 || (uint32_t)root >= m->nr_futures)
		return 0;
	nodes[nr++] =
	    (struct tree_walk_node){.future = root, .parent = -1, .slot = -1, .addr = addr};
	for (uint32_t i = 0; i < nr; i++) { /* the node buffer is the queue */
		struct tree_walk_node *n = &nodes[i];

		if (!node_state(m, n, rd))
			continue;
		const struct future_tree *t = tree_of(m, n->future);
		if (!t->nr_slots)
			continue;
		if (n->depth >= max_depth) {
			n->flags |= TREE_NODE_DEPTH;
			st->cut_depth++;
			continue;
		}
		for (uint32_t k = 0; k < t->nr_slots && k < MODEL_TREE_SLOTS; k++) {
			uint32_t idx = t->first_slot + k;
			uint64_t to, vtable;
			int32_t child;
			uint8_t flags = 0;

			if (idx >= m->nr_tree_slots)
				break;
			const struct tree_slot *s = &m->tree_slots[idx];
			int r = future_tree__follow(s, n->addr, rd, &to, &vtable);
			if (r < 0)
				st->unreadable++;
			if (r <= 0)
				continue;
			child = s->dyn ? (rd->vtable ? rd->vtable(rd->ctx, vtable) : -1) : s->child;
			if (child < 0 || (uint32_t)child >= m->nr_futures) {
				child = -1;
				flags = TREE_NODE_UNKNOWN_DYN;
			}
			if (seen(nodes, nr, child, to)) {
				st->repeats++;
				continue;
			}
			if (nr == cap) {
				st->cut_nodes++;
				continue;
			}
			nodes[nr++] = (struct tree_walk_node){.future = child,
							      .parent = (int32_t)i,
							      .slot = (int32_t)idx,
							      .depth = n->depth + 1,
							      .addr = to,
							      .flags = flags};
			n = &nodes[i];
		}
	}
	return nr;
}
