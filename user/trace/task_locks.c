// SPDX-License-Identifier: GPL-2.0
/* The lock slots of task mode's tree table and their nodes (task_locks.h). */
#include "trace/task_locks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int add_pseudo(struct lock_table *t, struct lock_pseudo p, uint32_t *cap)
{
	if (t->nr_pseudo == *cap) {
		uint32_t n = *cap ? *cap * 2 : 16;
		struct lock_pseudo *q = realloc(t->pseudo, n * sizeof(*q));

		if (!q)
			return -ENOMEM;
		t->pseudo = q;
		*cap = n;
	}
	t->pseudo[t->nr_pseudo++] = p;
	return 0;
}

/* The lock slots of future f, into extra (at most cap): the lock it waits for, and
 * for each suspend state the guards it keeps there whose lock's state proves them
 * held (held_guard.provable), under that state. */
static int lock_slots(struct lock_table *t, uint32_t f, struct tree_slot *extra, uint32_t cap,
		      uint32_t *n, uint32_t *cap_pseudo)
{
	const struct model *m = t->m;
	const struct future *fu = &m->futures[f];
	const struct future_wait *w = fu->wait;
	int e;

	*n = 0;
	/* (a lock method that only names the lock its Acquire waits on: no slot) */
	if (w && w->kind == WAIT_LOCK && w->family != LOCK_NONE && !w->names_only &&
	    w->nr_steps <= MODEL_AWAIT_STEPS) {
		if (*n == cap) {
			t->cut++;
		} else {
			struct tree_slot *s = &extra[(*n)++];

			memset(s, 0, sizeof(*s));
			s->child = (int32_t)(m->nr_futures + t->nr_pseudo);
			s->await_index = -1;
			s->nr_steps = w->nr_steps;
			memcpy(s->steps, w->steps, w->nr_steps * sizeof(s->steps[0]));
			s->member = "(the lock it waits for)";
			if ((e = add_pseudo(t,
					    (struct lock_pseudo){.kind = LOCK_PSEUDO_WAIT,
								 .family = w->family,
								 .future = (int32_t)f,
								 .state_offset = w->state},
					    cap_pseudo)))
				return e;
		}
	}
	if (!fu->has_state || !(fu->state_size == 1 || fu->state_size == 2 || fu->state_size == 4 ||
				fu->state_size == 8))
		return 0;
	for (uint32_t k = 0; k < fu->nr_states; k++) {
		const struct future_state *st = &fu->states[k];

		for (uint32_t g = 0; g < st->nr_held; g++) {
			const struct held_guard *h = &st->held[g];
			struct tree_slot *s;

			if (h->family == LOCK_NONE || !h->provable || !h->nr_steps)
				continue;
			if (*n == cap || h->nr_steps > MODEL_AWAIT_STEPS) {
				t->cut++;
				continue;
			}
			s = &extra[(*n)++];
			memset(s, 0, sizeof(*s));
			s->child = (int32_t)(m->nr_futures + t->nr_pseudo);
			s->await_index = (int32_t)st->suspend_index;
			s->nr_conds = 1;
			s->conds[0] = (struct tree_cond){.kind = TREE_COND_IN,
							 .size = (uint8_t)fu->state_size,
							 .offset = fu->state_offset,
							 .lo = st->discr,
							 .hi = st->discr};
			s->nr_steps = h->nr_steps;
			memcpy(s->steps, h->steps, h->nr_steps * sizeof(s->steps[0]));
			s->steps[0].offset += h->offset; /* from the future, not the guard */
			s->member = h->name;
			if ((e = add_pseudo(t,
					    (struct lock_pseudo){.kind = LOCK_PSEUDO_HELD,
								 .family = h->family,
								 .future = (int32_t)f,
								 .state = k,
								 .guard = h,
								 .state_offset = h->state_offset},
					    cap_pseudo)))
				return e;
		}
	}
	return 0;
}

int lock_table__build(struct lock_table *t, const struct model *m)
{
	uint32_t cap = m->nr_tree_slots, cap_pseudo = 0, n = m->nr_futures ? m->nr_futures : 1;
	struct tree_slot extra[MODEL_TREE_SLOTS];
	int e = 0;

	memset(t, 0, sizeof(*t));
	t->m = m;
	t->first = calloc(n, sizeof(*t->first));
	t->count = calloc(n, sizeof(*t->count));
	t->slots = malloc((cap ? cap : 1) * sizeof(*t->slots));
	if (!t->first || !t->count || !t->slots) {
		lock_table__free(t);
		return -ENOMEM;
	}
	if (m->nr_tree_slots)
		memcpy(t->slots, m->tree_slots, m->nr_tree_slots * sizeof(*t->slots));
	t->nr_slots = m->nr_tree_slots;
	for (uint32_t f = 0; f < m->nr_futures && !e; f++) {
		const struct future_tree *tr = f < m->nr_trees ? &m->trees[f] : NULL;
		uint32_t nx, room;

		if (!tr || !tr->known)
			continue;
		t->first[f] = tr->first_slot;
		t->count[f] = tr->nr_slots;
		room = tr->nr_slots < MODEL_TREE_SLOTS ? MODEL_TREE_SLOTS - tr->nr_slots : 0;
		if ((e = lock_slots(t, f, extra, room, &nx, &cap_pseudo)) || !nx)
			continue;
		/* its slots move to the end, the lock slots after them */
		if (t->nr_slots + tr->nr_slots + nx > cap) {
			uint32_t c = (t->nr_slots + tr->nr_slots + nx) * 2;
			struct tree_slot *q = realloc(t->slots, c * sizeof(*q));

			if (!q) {
				e = -ENOMEM;
				break;
			}
			t->slots = q;
			cap = c;
		}
		memmove(&t->slots[t->nr_slots], &t->slots[tr->first_slot],
			tr->nr_slots * sizeof(*t->slots));
		memcpy(&t->slots[t->nr_slots + tr->nr_slots], extra, nx * sizeof(*extra));
		t->first[f] = t->nr_slots;
		t->count[f] = tr->nr_slots + nx;
		t->nr_slots += tr->nr_slots + nx;
	}
	if (e)
		lock_table__free(t);
	return e;
}

void lock_table__free(struct lock_table *t)
{
	free(t->pseudo);
	free(t->slots);
	free(t->first);
	free(t->count);
	memset(t, 0, sizeof(*t));
}

uint32_t task_locks__strip(const struct lock_table *t, struct task_tree *tree,
			   struct lock_seen *seen, uint32_t cap)
{
	int32_t renumber[TASK_TREE_MAX_NODES];
	uint32_t kept = 0, n = 0, nf = t->m->nr_futures;

	for (uint32_t i = 0; i < TASK_TREE_MAX_NODES; i++)
		renumber[i] = -1; /* a parent past the tree (a torn record) becomes none */
	for (uint32_t i = 0; i < tree->nr && i < TASK_TREE_MAX_NODES; i++) {
		const struct task_tree_node *nd = &tree->nodes[i];

		if (nd->future < 0 || (uint32_t)nd->future < nf ||
		    (uint32_t)nd->future - nf >= t->nr_pseudo) {
			renumber[i] = (int32_t)kept;
			tree->nodes[kept++] = *nd;
			continue;
		}
		renumber[i] = -1;
		if (n < cap) {
			const struct lock_pseudo *p = &t->pseudo[nd->future - (int32_t)nf];

			seen[n++] =
			    (struct lock_seen){.kind = p->kind,
					       .family = p->family,
					       /* any flag: its word was not read as a lock's (no
						* layout, not copied): never taken for locked */
					       .unreadable = nd->flags != 0,
					       .key = nd->addr,
					       .word = nd->discr,
					       .pseudo = p};
		}
	}
	/* a lock node has no children: every other node's parent is kept */
	for (uint32_t i = 0; i < kept; i++)
		if (tree->nodes[i].parent >= 0 && tree->nodes[i].parent < TASK_TREE_MAX_NODES)
			tree->nodes[i].parent = (int8_t)renumber[tree->nodes[i].parent];
	tree->nr = kept;
	return n;
}

bool task_locks__locked(const struct lock_seen *s)
{
	return !s->unreadable && lock_family__held(s->family, s->word);
}
