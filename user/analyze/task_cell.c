// SPDX-License-Identifier: GPL-2.0
/*
 * A tokio task's `Cell<T, S>` (task_cell.h): where its future T is live, as the enum
 * variants on the way to it from the Cell's type tree (type_tree.c), and the other
 * variants of its `Stage<T>`: `Finished(_)`, and `Finished(Err(JoinError { repr:
 * Cancelled }))`, what a poll left when a cancel reached it while it ran
 * (docs/tracing.md, "Task mode"). tokio 1.x core.rs and error.rs name these types;
 * their encodings, niche or tagged, and their offsets are the DWARF's.
 */
#include "analyze/task_cell.h"

#include <dwarf.h>
#include <errno.h>
#include <string.h>

#include "analyze/type_tree.h"

/*
 * The conditions on the way from the tree's root to node `to`, relative to the
 * address abs_t (T's): into out[], their number; -1 when one cannot be written or
 * there are more than MODEL_TREE_CONDS, or the way goes through a pointer.
 */
static int conds_to(const struct type_node *nodes, const uint64_t *abs, int32_t to, uint64_t abs_t,
		    struct task_live_cond *out)
{
	int nr = 0;

	for (int32_t i = to; i >= 0; i = nodes[i].parent) {
		const struct type_node *n = &nodes[i];
		uint64_t base = n->parent >= 0 ? abs[n->parent] : 0;

		if (n->derefs)
			return -1;
		if (!n->cond)
			continue;
		if (n->cond_bad || nr >= MODEL_TREE_CONDS)
			return -1;
		out[nr++] = (struct task_live_cond){
		    .offset = (int64_t)(base + n->cond_offset) - (int64_t)abs_t,
		    .kind = n->cond_kind,
		    .size = n->cond_size,
		    .lo = n->cond_lo,
		    .hi = n->cond_hi,
		};
	}
	return nr;
}

static bool member_is(const struct type_node *n, const char *member)
{
	return n->member && strcmp(n->member, member) == 0;
}

/*
 * Has the enum `st` two variants, one of them a member named `name`? (tokio's
 * `Repr { Cancelled, Panic(..) }`: the type tree keeps no node for the unit variant,
 * so its condition is the other's, negated.)
 */
static bool two_variants_one_named(Dwarf_Die *st, const char *name)
{
	Dwarf_Die part, v, mem;
	int variants = 0;
	bool found = false;

	if (dwarf_child(st, &part) != 0)
		return false;
	do {
		if (dwarf_tag(&part) != DW_TAG_variant_part || dwarf_child(&part, &v) != 0)
			continue;
		do {
			if (dwarf_tag(&v) != DW_TAG_variant)
				continue;
			variants++;
			if (dwarf_child(&v, &mem) == 0 && dwarf_diename(&mem) &&
			    strcmp(dwarf_diename(&mem), name) == 0)
				found = true;
		} while (dwarf_siblingof(&v, &v) == 0);
	} while (dwarf_siblingof(&part, &part) == 0);
	return variants == 2 && found;
}

/*
 * The nodes of Stage<T>'s `Finished` variant and, inside it, of
 * `Err(JoinError { repr: Repr::Panic(_) })` (tokio 1.x core.rs, error.rs): the Stage
 * is the enum whose `Running` variant holds T (node `t`; a CU's DWARF may leave these
 * types without their paths: found by shape, not by name), their encodings, niche or
 * tagged, are the DWARF's. A JoinError whose repr is not Panic is Cancelled, when the
 * DWARF says Repr has those two variants. -1 each when not in the tree.
 */
static void stage_ends(Dwarf_Die *cell, const struct type_node *nodes, uint32_t nr, int32_t t,
		       int32_t *finished, int32_t *panic)
{
	int32_t stage = -1;

	*finished = *panic = -1;
	for (int32_t i = t; i >= 0 && stage < 0; i = nodes[i].parent)
		if (member_is(&nodes[i], "Running") && nodes[i].cond)
			stage = nodes[i].parent;
	for (uint32_t i = 0; stage >= 0 && i < nr && i < TYPE_TREE_MAX_NODES; i++)
		if (nodes[i].parent == stage && member_is(&nodes[i], "Finished") && nodes[i].cond) {
			*finished = (int32_t)i;
			break;
		}
	if (*finished < 0)
		return;
	/* Finished.__0 (Result) .Err .__0 (JoinError) .repr .Panic */
	static const char *const way[] = {"__0", "Err", "__0", "repr", "Panic"};
	int32_t at = *finished;

	for (size_t k = 0; k < sizeof(way) / sizeof(way[0]); k++) {
		int32_t next = -1;

		for (uint32_t i = (uint32_t)at + 1; i < nr && i < TYPE_TREE_MAX_NODES; i++)
			if (nodes[i].parent == at && member_is(&nodes[i], way[k])) {
				next = (int32_t)i;
				break;
			}
		if (next < 0)
			return;
		at = next;
	}
	const struct type_node *repr = &nodes[nodes[at].parent];
	Dwarf_Die die;

	/* (a debug build's DWARF may leave the Repr without its path: the way and its
	 * variants say enough) */
	if ((!repr->path || strcmp(repr->path, "tokio::runtime::task::error::Repr") == 0) &&
	    nodes[at].cond &&
	    (nodes[at].cond_kind == TREE_COND_IN || nodes[at].cond_kind == TREE_COND_NOT_IN) &&
	    dwarf_offdie(dwarf_cu_getdwarf(cell->cu), repr->die, &die) &&
	    two_variants_one_named(&die, "Cancelled"))
		*panic = at;
}

/*
 * Where in tokio's `Cell<T, S>` the future T is live: the enum variants on the way to
 * it (`Stage<T>::Running`, niche-encoded in T's own state or tagged), as conditions
 * relative to T's address, from the Cell's type tree (type_tree.c). After T returned
 * Ready, tokio stores `Finished(output)` over it: reading T there is reading garbage.
 * The Stage's other variants: task_cell.h.
 */
int task_cell__read(struct walk *w, Dwarf_Die *cell, Dwarf_Die *t, struct task_live *out)
{
	static __thread struct type_node nodes[TYPE_TREE_MAX_NODES];
	uint64_t want = dwarf_dieoffset(t), abs[TYPE_TREE_MAX_NODES];
	uint32_t nr = 0;
	int32_t found = -1;
	bool truncated = false;
	struct task_live live = {0};
	int r = type_tree__build(w, cell, true, NULL, nodes, &nr, &truncated);

	if (r)
		return r;
	for (uint32_t i = 0; i < nr && i < TYPE_TREE_MAX_NODES; i++) {
		abs[i] = (nodes[i].parent >= 0 ? abs[nodes[i].parent] : 0) + nodes[i].offset;
		if (found < 0 && nodes[i].die == want && !nodes[i].derefs)
			found = (int32_t)i;
	}
	if (found < 0)
		return 0;
	for (int32_t i = found; i >= 0; i = nodes[i].parent) {
		const struct type_node *n = &nodes[i];
		uint64_t base = n->parent >= 0 ? abs[n->parent] : 0;

		if (n->derefs) /* T behind a pointer: not the Cell's own bytes */
			return 0;
		if (!n->cond)
			continue;
		if (n->cond_bad || live.nr >= MODEL_TREE_CONDS) {
			live.cut = true;
			continue;
		}
		live.conds[live.nr++] = (struct task_live_cond){
		    .offset = (int64_t)(base + n->cond_offset) - (int64_t)abs[found],
		    .kind = n->cond_kind,
		    .size = n->cond_size,
		    .lo = n->cond_lo,
		    .hi = n->cond_hi,
		};
	}
	int32_t fin, panic;
	int k;

	stage_ends(cell, nodes, nr, found, &fin, &panic);
	if (fin >= 0 && panic >= 0 &&
	    (k = conds_to(nodes, abs, fin, abs[found], live.finished)) > 0) {
		live.nr_finished = (uint8_t)k;
		/* Panic's conditions with its own (the last on its way) negated: Cancelled */
		if ((k = conds_to(nodes, abs, panic, abs[found], live.cancelled)) > 0) {
			live.nr_cancelled = (uint8_t)k;
			live.cancelled[0].kind = live.cancelled[0].kind == TREE_COND_IN
						     ? TREE_COND_NOT_IN
						     : TREE_COND_IN;
		} else {
			live.nr_finished = 0;
		}
	}
	*out = live;
	return 1;
}
