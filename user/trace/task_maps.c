// SPDX-License-Identifier: GPL-2.0
/* The maps of task mode (task_maps.h). */
#include "trace/task_maps.h"

#include <errno.h>
#include <string.h>

#include <bpf/bpf.h>

_Static_assert(TASK_TREE_CONDS == MODEL_TREE_CONDS, "tree conditions: BPF and model");
_Static_assert(TASK_TREE_STEPS == MODEL_AWAIT_STEPS, "tree steps: BPF and model");
_Static_assert(TASK_TREE_SLOTS >= MODEL_TREE_SLOTS, "tree slots: BPF and model");

uint32_t task_maps__nr_nodes(const struct lock_table *t)
{
	return t->m->nr_futures + t->nr_pseudo ? t->m->nr_futures + t->nr_pseudo : 1;
}

uint32_t task_maps__nr_slots(const struct lock_table *t)
{
	return t->nr_slots ? t->nr_slots : 1;
}

uint32_t task_maps__nr_dyn(const struct model *m)
{
	return m->nr_vtables ? m->nr_vtables : 1;
}

uint32_t task_maps__nr_infos(const struct model *m, uint32_t nr_roots)
{
	return m->nr_task_types + nr_roots ? m->nr_task_types + nr_roots : 1;
}

void task_maps__node(const struct lock_table *lt, uint32_t i, struct tree_node_spec *out)
{
	const struct model *m = lt->m;
	const struct future_tree *t = i < m->nr_trees ? &m->trees[i] : NULL;

	memset(out, 0, sizeof(*out));
	if (i >= m->nr_futures && i - m->nr_futures < lt->nr_pseudo) {
		/* a lock: its state word read as its discriminant, no children */
		const struct lock_pseudo *p = &lt->pseudo[i - m->nr_futures];

		if (p->state_offset > UINT32_MAX - 8)
			return;
		out->known = 1;
		out->resource = 1;
		out->has_discr = 1;
		out->discr_size = 8;
		out->discr_offset = (__u32)p->state_offset;
		out->discr_max = UINT64_MAX;
		out->size = (__u32)p->state_offset + 8;
		return;
	}
	if (!t || !t->known || t->discr_offset > UINT32_MAX || lt->count[i] > TASK_TREE_SLOTS)
		return;
	out->known = 1;
	out->has_discr = t->has_discr && (t->discr_size == 1 || t->discr_size == 2 ||
					  t->discr_size == 4 || t->discr_size == 8);
	out->discr_size = (__u8)t->discr_size;
	out->discr_offset = (__u32)t->discr_offset;
	out->discr_max = t->discr_max;
	out->first_slot = lt->first[i];
	out->nr_slots = lt->count[i];
	out->size = m->futures[i].size > UINT32_MAX ? UINT32_MAX : (__u32)m->futures[i].size;
}

void task_maps__slot(const struct lock_table *t, uint32_t i, struct tree_slot_spec *out)
{
	const struct tree_slot *s = i < t->nr_slots ? &t->slots[i] : NULL;

	memset(out, 0, sizeof(*out));
	out->child = -1;
	if (!s)
		return;
	out->child = s->child;
	out->dyn = s->dyn;
	out->dyn_data = s->dyn_data;
	out->dyn_vtable = s->dyn_vtable;
	out->nr_steps = s->nr_steps <= TASK_TREE_STEPS ? s->nr_steps : TASK_TREE_STEPS;
	for (uint32_t k = 0; k < out->nr_steps; k++) {
		/* an offset past 4 GiB cannot be in a future: the slot leads nowhere */
		if (s->steps[k].offset > UINT32_MAX) {
			out->nr_steps = 0;
			out->nr_conds = 1; /* a condition that never holds: lo > hi */
			out->conds[0] = (struct tree_cond_spec){.size = 1, .lo = 1, .hi = 0};
			return;
		}
		out->steps[k].offset = (__u32)s->steps[k].offset;
		out->steps[k].deref = s->steps[k].deref;
	}
	out->nr_conds = s->nr_conds <= TASK_TREE_CONDS ? s->nr_conds : TASK_TREE_CONDS;
	for (uint32_t k = 0; k < out->nr_conds; k++)
		out->conds[k] = (struct tree_cond_spec){
		    .kind = s->conds[k].kind,
		    .size = s->conds[k].size,
		    .at_step = s->conds[k].at_step,
		    .offset = (__u32)s->conds[k].offset,
		    .lo = s->conds[k].lo,
		    .hi = s->conds[k].hi,
		};
}

/* A task type's conditions into the BPF map's form; false when an offset is too far. */
static bool conds_out(const struct task_live_cond *in, uint32_t nr, struct task_cond *out)
{
	for (uint32_t k = 0; k < nr && k < TASK_TREE_CONDS; k++) {
		if (in[k].offset < INT32_MIN || in[k].offset > INT32_MAX)
			return false;
		out[k].offset = (__s32)in[k].offset;
		out[k].kind = in[k].kind;
		out[k].size = in[k].size;
		out[k].lo = in[k].lo;
		out[k].hi = in[k].hi;
	}
	return true;
}

bool task_maps__info(const struct model *m, uint32_t i, struct task_info *out)
{
	const struct task_type *t = &m->task_types[i];

	memset(out, 0, sizeof(*out));
	if (!t->vtable || t->future < 0 || t->future_offset == FUTURE_NO_OFFSET ||
	    t->future_offset > UINT32_MAX || t->nr_live_conds > TASK_TREE_CONDS)
		return false;
	out->root_future = (__u32)t->future;
	out->future_offset = (__u32)t->future_offset;
	out->type = i;
	out->known = 1;
	out->boxed = t->boxed;
	out->root_size = m->futures[t->future].size > UINT32_MAX
			     ? UINT32_MAX
			     : (__u32)m->futures[t->future].size;
	out->runtime = t->runtime;
	out->nr_live = t->live_cut ? 0 : t->nr_live_conds;
	if (!conds_out(t->live_conds, out->nr_live, out->live))
		return false;
	/* how the poll ended it: both, or neither */
	if (t->nr_finished_conds <= TASK_TREE_CONDS && t->nr_cancelled_conds <= TASK_TREE_CONDS &&
	    conds_out(t->finished_conds, t->nr_finished_conds, out->finished) &&
	    conds_out(t->cancelled_conds, t->nr_cancelled_conds, out->cancelled)) {
		out->nr_finished = t->nr_finished_conds;
		out->nr_cancelled = t->nr_cancelled_conds;
	}
	if (!out->nr_finished || !out->nr_cancelled)
		out->nr_finished = out->nr_cancelled = 0;
	return true;
}

void task_maps__root_info(const struct model *m, uint32_t f, uint32_t index, struct task_info *out)
{
	const struct future *fu = &m->futures[f];

	memset(out, 0, sizeof(*out));
	out->root_future = f;
	out->type = index;
	out->known = 1;
	out->runtime = TASK_RT_DYN;
	out->root_size = fu->size > UINT32_MAX ? UINT32_MAX : (__u32)fu->size;
	if (fu->has_state && fu->state_offset <= INT32_MAX &&
	    (fu->state_size == 1 || fu->state_size == 2 || fu->state_size == 4 ||
	     fu->state_size == 8)) {
		/* kind 1: gone while the value is in [lo, hi] */
		out->nr_live = 1;
		out->live[0].offset = (__s32)fu->state_offset;
		out->live[0].kind = 1;
		out->live[0].size = (__u8)fu->state_size;
		out->live[0].lo = STATE_RETURNED_VALUE;
		out->live[0].hi = STATE_PANICKED_VALUE;
	}
}

int task_maps__fill_infos(int infos_fd, const struct model *m, const uint32_t *roots, uint32_t nr)
{
	for (uint32_t i = 0; i < m->nr_task_types; i++) {
		struct task_info ti;

		if (task_maps__info(m, i, &ti) && bpf_map_update_elem(infos_fd, &i, &ti, BPF_ANY))
			return -errno;
	}
	for (uint32_t k = 0; k < nr; k++) {
		struct task_info ti;
		__u32 index = m->nr_task_types + k;

		task_maps__root_info(m, roots[k], index, &ti);
		if (bpf_map_update_elem(infos_fd, &index, &ti, BPF_ANY))
			return -errno;
	}
	return 0;
}

int task_maps__fill_table(int nodes_fd, int slots_fd, const struct lock_table *t)
{
	for (uint32_t i = 0; i < t->m->nr_futures + t->nr_pseudo; i++) {
		struct tree_node_spec n;

		task_maps__node(t, i, &n);
		if (bpf_map_update_elem(nodes_fd, &i, &n, BPF_ANY))
			return -errno;
	}
	for (uint32_t i = 0; i < t->nr_slots; i++) {
		struct tree_slot_spec s;

		task_maps__slot(t, i, &s);
		if (bpf_map_update_elem(slots_fd, &i, &s, BPF_ANY))
			return -errno;
	}
	return 0;
}

int task_maps__fill_addresses(int vtables_fd, int dyn_fd, const struct model *m, uint64_t bias)
{
	for (uint32_t i = 0; i < m->nr_task_types; i++) {
		struct task_info ti;
		__u64 key = m->task_types[i].vtable + bias;

		if (!task_maps__info(m, i, &ti))
			continue; /* its slot stays zero: not known */
		if (bpf_map_update_elem(vtables_fd, &key, &i, BPF_ANY))
			return -errno;
	}
	for (uint32_t i = 0; i < m->nr_vtables; i++) {
		const struct future_vtable *v = &m->vtables[i];
		__u64 key = v->addr + bias;
		__u32 f;

		if (!v->addr || v->future < 0)
			continue;
		f = (__u32)v->future;
		if (bpf_map_update_elem(dyn_fd, &key, &f, BPF_ANY))
			return -errno;
	}
	return 0;
}
