// SPDX-License-Identifier: GPL-2.0
/* Parts of analyze --json (export_json_parts.h): the statistics, a future's tree, a
 * task type. */
#include "export/export_json_parts.h"

#include <inttypes.h>
#include <string.h>

/* task_type's conditions (live_conds, finished_conds, cancelled_conds) as an array */
static void conds_json(struct json_writer *w, const char *key, const struct task_live_cond *conds,
		       uint32_t nr)
{
	jw_array(w, key);
	for (uint32_t k = 0; k < nr && k < MODEL_TREE_CONDS; k++) {
		const struct task_live_cond *c = &conds[k];

		jw_object(w, NULL);
		jw_i64(w, "offset", c->offset);
		jw_u64(w, "size", c->size);
		jw_string(w, "kind", tree_cond_kind__name(c->kind));
		jw_u64(w, "lo", c->lo);
		jw_u64(w, "hi", c->hi);
		jw_object_end(w);
	}
	jw_array_end(w);
}

static void part_future_ref(struct json_writer *w, const char *key, const struct model *m,
			    int32_t index)
{
	if (index >= 0 && (uint32_t)index < m->nr_futures)
		jw_u64(w, key, (uint64_t)index);
	else
		jw_null(w, key);
}

void json__write_stats(struct json_writer *w, const struct model *m)
{
	uint64_t roots = 0, inlined_only = 0;

	for (uint32_t i = 0; i < m->nr_futures; i++) {
		roots += m->futures[i].is_root;
		inlined_only += m->futures[i].inlined_only;
	}
	jw_object(w, "stats");
	jw_u64(w, "compile_units", m->nr_cus);
	jw_u64(w, "dies", m->nr_dies);
	jw_u64(w, "cu_errors", m->nr_cu_errors);
	jw_u64(w, "limits_hit", m->nr_limits_hit);
	jw_u64(w, "futures", m->nr_futures);
	jw_u64(w, "polls", m->nr_polls);
	jw_u64(w, "edges", m->nr_edges);
	jw_u64(w, "vtables", m->nr_vtables);
	jw_u64(w, "task_types", m->nr_task_types);
	jw_u64(w, "roots", roots);
	jw_u64(w, "inlined_only", inlined_only);
	jw_u64(w, "abi_from_code", m->nr_abi_code);
	jw_u64(w, "abi_from_dwarf", m->nr_abi_dwarf);
	jw_u64(w, "abi_from_size", m->nr_abi_size);
	jw_u64(w, "abi_unknown", m->nr_abi_unknown);
	jw_u64(w, "abi_rule_overridden", m->nr_abi_rule_overridden);
	/* why rets kept their single-stepped probe: enum exit_keep's order (exit_sites.h) */
	static const char *const kept[] = {"unsafe_tail", "fallthrough", "entry", "not_emulated",
					   "loop",	  "unknown",	 "state"};
	_Static_assert(sizeof(kept) / sizeof(kept[0]) <= MODEL_EXIT_KEEP_MAX, "exits_kept");
	/* the call-site index behind the exits in the callers (docs/disasm.md) */
	const struct callsite_stats *cs = &m->callsites;
	uint64_t known = 0, ok = 0, sites = 0, usable = 0, out_of_line = 0;
	for (uint32_t i = 0; i < m->nr_polls; i++) {
		const struct poll_fn *p = &m->polls[i];
		if (p->inlined_only || !p->addr)
			continue;
		out_of_line++;
		known += p->callers_known;
		ok += p->caller_exits_ok;
		sites += p->nr_caller_exits;
		for (uint32_t k = 0; k < p->nr_caller_exits; k++)
			usable += p->caller_exits[k].usable;
	}
	jw_object(w, "caller_exits");
	jw_bool(w, "index_built", cs->built);
	jw_u64(w, "functions", cs->functions);
	jw_u64(w, "code_bytes", cs->bytes);
	jw_u64(w, "instructions", cs->insns);
	jw_u64(w, "calls", cs->calls);
	jw_u64(w, "undecoded_runs", cs->undecoded);
	jw_u64(w, "undecoded_bytes", cs->undecoded_bytes);
	jw_u64(w, "polls", out_of_line);
	jw_u64(w, "polls_callers_known", known);
	jw_u64(w, "polls_ok", ok);
	jw_u64(w, "sites", sites);
	jw_u64(w, "sites_usable", usable);
	jw_object_end(w);
	jw_object(w, "rets_kept");
	for (size_t k = 0; k < sizeof(kept) / sizeof(kept[0]); k++)
		jw_u64(w, kept[k], m->exits_kept[k]);
	jw_object_end(w);
	const struct tree_stats *t = &m->tree_stats;
	jw_object(w, "trees");
	jw_u64(w, "futures", t->futures);
	jw_u64(w, "with_slots", t->with_slots);
	jw_u64(w, "slots", t->slots);
	jw_u64(w, "dyn_slots", t->dyn_slots);
	jw_u64(w, "no_layout", t->no_layout);
	jw_object(w, "cut");
	jw_u64(w, "slots", t->cut_slots);
	jw_u64(w, "steps", t->cut_steps);
	jw_u64(w, "conds", t->cut_conds);
	jw_u64(w, "bounds", t->cut_bounds);
	jw_u64(w, "no_offset", t->no_offset);
	jw_object_end(w);
	jw_object_end(w);
	jw_object_end(w);
}

void json__write_tree(struct json_writer *w, const struct model *m, uint32_t id)
{
	const struct future_tree *t = id < m->nr_trees ? &m->trees[id] : NULL;

	if (!t || !t->known) {
		jw_null(w, "tree");
		return;
	}
	jw_object(w, "tree");
	if (t->has_discr) {
		jw_object(w, "discr");
		jw_u64(w, "offset", t->discr_offset);
		jw_u64(w, "size", t->discr_size);
		if (t->discr_max != UINT64_MAX)
			jw_u64(w, "max", t->discr_max);
		else
			jw_null(w, "max");
		jw_object_end(w);
	} else {
		jw_null(w, "discr");
	}
	jw_array(w, "slots");
	for (uint32_t i = t->first_slot;
	     i < t->first_slot + t->nr_slots && i < m->nr_tree_slots && !ferror(w->out); i++) {
		const struct tree_slot *s = &m->tree_slots[i];

		jw_object(w, NULL);
		part_future_ref(w, "child", m, s->child);
		if (s->dyn) {
			jw_object(w, "dyn");
			jw_u64(w, "data", s->dyn_data);
			jw_u64(w, "vtable", s->dyn_vtable);
			jw_object_end(w);
		} else {
			jw_null(w, "dyn");
		}
		if (s->await_index >= 0)
			jw_u64(w, "await_index", (uint64_t)s->await_index);
		else
			jw_null(w, "await_index");
		jw_string(w, "member", s->member);
		jw_array(w, "conds");
		for (uint32_t k = 0; k < s->nr_conds && k < MODEL_TREE_CONDS; k++) {
			const struct tree_cond *c = &s->conds[k];

			jw_object(w, NULL);
			jw_u64(w, "at_step", c->at_step);
			jw_u64(w, "offset", c->offset);
			jw_u64(w, "size", c->size);
			jw_string(w, "kind", tree_cond_kind__name(c->kind));
			jw_u64(w, "lo", c->lo);
			jw_u64(w, "hi", c->hi);
			jw_object_end(w);
		}
		jw_array_end(w);
		json__write_steps(w, s->steps, s->nr_steps);
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_u64(w, "cut", t->nr_cut);
	jw_object_end(w);
}

void json__write_steps(struct json_writer *w, const struct await_step *steps, uint32_t nr)
{
	jw_array(w, "steps");
	for (uint32_t k = 0; k < nr && k < MODEL_AWAIT_STEPS; k++) {
		jw_object(w, NULL);
		jw_u64(w, "offset", steps[k].offset);
		jw_bool(w, "deref", steps[k].deref);
		jw_object_end(w);
	}
	jw_array_end(w);
}

void json__write_task_type(struct json_writer *w, const struct model *m, uint32_t id)
{
	const struct task_type *t = &m->task_types[id];

	jw_object(w, NULL);
	jw_string(w, "runtime", task_runtime__name(t->runtime));
	part_future_ref(w, "future", m, t->future);
	jw_string(w, "fn", t->fn);
	jw_u64(w, "fn_addr", t->fn_addr);
	if (t->vtable)
		jw_u64(w, "vtable", t->vtable);
	else
		jw_null(w, "vtable");
	if (t->future_offset != FUTURE_NO_OFFSET)
		jw_u64(w, "future_offset", t->future_offset);
	else
		jw_null(w, "future_offset");
	jw_bool(w, "boxed", t->boxed);
	/* when the future is there (tokio's Stage<T>::Running), from the future's address */
	conds_json(w, "live_conds", t->live_conds, t->nr_live_conds);
	jw_bool(w, "live_cut", t->live_cut);
	/* tokio: Stage<T>::Finished, and Finished(Err(JoinError::Cancelled)) */
	conds_json(w, "finished_conds", t->finished_conds, t->nr_finished_conds);
	conds_json(w, "cancelled_conds", t->cancelled_conds, t->nr_cancelled_conds);
	jw_object_end(w);
}
