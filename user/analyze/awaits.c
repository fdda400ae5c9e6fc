// SPDX-License-Identifier: GPL-2.0
/*
 * The await graph. A Suspend<k> state holds `__awaitee`, the future awaited there.
 * Its type is often a wrapper (Pin<Box<F>>, MaybeDone<F>, Timeout<F>, a join!
 * closure's PollFn). At the end of each CU (while its type paths are known) we
 * record, per await point, the tree of types reachable from the awaitee through
 * members and pointers (breadth first, bounded: depth, node count, no revisits).
 * Once the whole binary is read and every future type is known, the trees become
 * edges.
 */
#include <dwarf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/awaits.h"
#include "analyze/crate.h"

struct tree_builder {
	struct walk *w;
	struct await_node nodes[MAX_AWAIT_NODES];
	uint32_t nr;
	bool truncated;
};

static bool seen(const struct tree_builder *b, uint64_t off)
{
	for (uint32_t i = 0; i < b->nr; i++)
		if (b->nodes[i].die_offset == off)
			return true;
	return false;
}

/* Strip qualifiers, typedefs, pointers and arrays down to a struct-like type;
 * *derefs counts the pointers and references stripped on the way (`&mut &mut T`:
 * two, each one a pointer to follow). */
static bool underlying(Dwarf_Die *die, uint8_t *derefs)
{
	*derefs = 0;
	for (int i = 0; i < 16; i++) {
		switch (dwarf_tag(die)) {
		case DW_TAG_structure_type:
		case DW_TAG_union_type: return true;
		case DW_TAG_typedef:
		case DW_TAG_const_type:
		case DW_TAG_volatile_type:
		case DW_TAG_pointer_type:
		case DW_TAG_reference_type:
		case DW_TAG_rvalue_reference_type:
		case DW_TAG_array_type: {
			Dwarf_Attribute a;
			int tag = dwarf_tag(die);
			if (tag == DW_TAG_pointer_type || tag == DW_TAG_reference_type ||
			    tag == DW_TAG_rvalue_reference_type)
				(*derefs)++;
			if (!dwarf_formref_die(dwarf_attr(die, DW_AT_type, &a), die))
				return false;
			break;
		}
		default: return false;
		}
	}
	return false;
}

/* type, found at `offset` into the parent node (the root: the awaitee itself). */
static void add_type(struct tree_builder *b, Dwarf_Die *type, int32_t parent, uint64_t offset)
{
	Dwarf_Die die = *type;
	uint8_t derefs;

	if (!underlying(&die, &derefs))
		return;
	uint64_t off = dwarf_dieoffset(&die);
	if (seen(b, off))
		return;
	if (b->nr >= MAX_AWAIT_NODES) {
		b->truncated = true;
		return;
	}
	const char *cu_path = walk__type_path(b->w, off);
	const char *name = dwarf_diename(&die);
	struct await_node *n = &b->nodes[b->nr];
	memset(n, 0, sizeof(*n));
	n->parent = parent;
	n->die_offset = off;
	n->offset = offset;
	n->derefs = derefs;
	int sz = dwarf_bytesize(&die);
	n->size = sz > 0 ? (uint64_t)sz : 0;
	n->path = cu_path ? strpool__intern(&b->w->m->strings, cu_path) : NULL;
	/* the type's own name, not its path: "(a::{async_fn_env#0}, ..)" is a tuple */
	n->is_env =
	    name && name[0] == '{' && future_kind__from_name(name, NULL) != FUTURE_HANDWRITTEN;
	n->is_dyn = name && strncmp(name, "dyn ", 4) == 0;
	b->nr++;
}

/* Members of a struct, and of the variants of a Rust enum's variant part. */
static void add_children(struct tree_builder *b, Dwarf_Die *st, int32_t parent, int depth)
{
	Dwarf_Die child;

	if (dwarf_child(st, &child) != 0)
		return;
	do {
		Dwarf_Die t;
		Dwarf_Attribute a;
		switch (dwarf_tag(&child)) {
		case DW_TAG_member: {
			uint64_t at = 0;
			/* a member without a location (a union's) is at 0 */
			member_offset(&child, &at);
			if (dwarf_formref_die(dwarf_attr(&child, DW_AT_type, &a), &t))
				add_type(b, &t, parent, at);
			break;
		}
		case DW_TAG_variant_part:
		case DW_TAG_variant:
			if (depth < 2) /* a variant part's variants: nested once in Rust */
				add_children(b, &child, parent, depth + 1);
			break;
		default: break;
		}
	} while (b->nr < MAX_AWAIT_NODES && dwarf_siblingof(&child, &child) == 0);
}

/*
 * The tree of types under an awaitee, breadth first: a type met twice is kept where it
 * is met first, the shallowest place (async-channel's `Recv { receiver: &Receiver,
 * listener }` awaits its own `listener`, not the Receiver's one behind the reference).
 */
static void build_tree(struct tree_builder *b, Dwarf_Die *awaitee)
{
	add_type(b, awaitee, -1, 0);
	for (uint32_t i = 0; i < b->nr; i++) {
		const struct await_node *n = &b->nodes[i];
		uint32_t depth = 0;
		Dwarf_Die die;

		if (n->is_env || n->is_dyn)
			continue;
		for (int32_t p = n->parent; p >= 0 && depth < MAX_AWAIT_DEPTH;
		     p = b->nodes[p].parent)
			depth++;
		if (depth + 1 >= MAX_AWAIT_DEPTH) {
			b->truncated = true;
			continue;
		}
		if (dwarf_offdie(b->w->dw, n->die_offset, &die))
			add_children(b, &die, (int32_t)i, 0);
	}
}

int awaits__build_cu_trees(struct walk *w)
{
	static __thread struct tree_builder b;

	for (uint32_t i = w->first_cu_await; i < w->nr_awaits; i++) {
		struct await_rec *a = &w->awaits[i];
		Dwarf_Die t;
		b.w = w;
		b.nr = 0;
		b.truncated = false;
		if (!dwarf_offdie(w->dw, a->awaitee_offset, &t))
			continue;
		const char *tn = walk__type_path(w, a->awaitee_offset);
		if (!tn)
			tn = dwarf_diename(&t);
		a->awaitee_name = strpool__intern(&w->m->strings, tn);
		build_tree(&b, &t);
		if (b.truncated)
			w->m->nr_limits_hit++;
		if (!b.nr)
			continue;
		a->nodes = malloc(b.nr * sizeof(*a->nodes));
		if (!a->nodes)
			return -ENOMEM;
		memcpy(a->nodes, b.nodes, b.nr * sizeof(*a->nodes));
		a->nr_nodes = b.nr;
	}
	return 0;
}

static int32_t future_of(struct walk *w, const struct await_node *n)
{
	uint64_t idx;
	if (n->path && u64_map__get(&w->future_by_path, (uintptr_t)n->path, &idx))
		return (int32_t)idx;
	return -1;
}

static bool is_std(const char *path)
{
	char crate[128];
	rust_path__crate(path, crate, sizeof(crate));
	return crate__classify(crate) == CRATE_STD;
}

/* The steps from the awaitee (node 0) to node `target` (await_edge.steps). */
static void edge_steps(const struct await_rec *a, int32_t target, struct await_edge *e)
{
	int32_t chain[MAX_AWAIT_NODES];
	uint32_t n = 0;
	uint64_t acc = 0;

	e->steps_known = false;
	e->nr_steps = 0;
	if (target < 0 || (uint32_t)target >= a->nr_nodes)
		return;
	for (int32_t i = target; i > 0 && n < MAX_AWAIT_NODES; i = a->nodes[i].parent)
		chain[n++] = i;
	while (n--) {
		const struct await_node *node = &a->nodes[chain[n]];

		acc += node->offset;
		for (uint8_t d = 0; d < node->derefs; d++) {
			if (e->nr_steps == MODEL_AWAIT_STEPS)
				return;
			e->steps[e->nr_steps++] = (struct await_step){.offset = acc, .deref = true};
			acc = 0;
		}
	}
	if (acc) {
		if (e->nr_steps == MODEL_AWAIT_STEPS)
			return;
		e->steps[e->nr_steps++] = (struct await_step){.offset = acc};
	}
	e->steps_known = true;
}

static int add_edge(struct walk *w, const struct await_rec *a, int32_t to, const char *via,
		    int32_t node)
{
	for (uint32_t i = 0; i < w->m->nr_edges; i++) { /* same await, same target: once */
		const struct await_edge *e = &w->m->edges[w->m->nr_edges - 1 - i];
		if (e->from != a->future || e->await_index != a->await_index)
			break;
		if (e->to == to)
			return 0;
	}
	struct await_edge *e = model__add_edge(w->m);
	if (!e)
		return -ENOMEM;
	e->from = a->future;
	e->to = to;
	e->await_index = a->await_index;
	e->file = a->file;
	e->line = a->line;
	e->awaitee_type = a->awaitee_name;
	e->via = via;
	edge_steps(a, node, e);
	e->dyn = to < 0 && node >= 0 && a->nodes[node].is_dyn;
	return 0;
}

/*
 * Targets of one await, in preorder:
 * - a compiler future, a non-generic hand-written future, or a generic one with no
 *   futures inside (Ready<T>, JoinHandle<T>): the target; stop.
 * - a generic hand-written future with futures inside (Timeout<F>, MaybeDone<F>):
 *   a wrapper; a target itself unless it is std's (Pin<P> forwarding is noise);
 *   continue inside.
 * - anything else: transparent, continue inside.
 */
static int resolve_one(struct walk *w, struct await_rec *a)
{
	bool below[MAX_AWAIT_NODES] = {0}, skip[MAX_AWAIT_NODES] = {0};
	int32_t fut[MAX_AWAIT_NODES];
	bool any = false, dyn = false;
	int32_t dyn_node = -1;
	int err;

	for (uint32_t i = 0; i < a->nr_nodes; i++)
		fut[i] = future_of(w, &a->nodes[i]);
	if (getenv("ASYNCBPF_DEBUG_AWAITS"))
		for (uint32_t i = 0; i < a->nr_nodes; i++)
			fprintf(stderr,
				"await %s#%u node %u parent %d fut %d env %d dyn %d off %lx %s\n",
				w->m->futures[a->future].path, a->await_index, i,
				a->nodes[i].parent, fut[i], a->nodes[i].is_env, a->nodes[i].is_dyn,
				(unsigned long)a->nodes[i].die_offset,
				a->nodes[i].path ? a->nodes[i].path : "(anon)");
	for (uint32_t i = a->nr_nodes; i-- > 1;) {
		int32_t p = a->nodes[i].parent;
		if (p >= 0 && (uint32_t)p < i && (fut[i] >= 0 || below[i]))
			below[p] = true;
	}
	for (uint32_t i = 0; i < a->nr_nodes; i++) {
		const struct await_node *n = &a->nodes[i];
		int32_t p = n->parent;
		if (p >= 0 && (uint32_t)p < i && skip[p]) {
			skip[i] = true;
			continue;
		}
		if (n->is_dyn && !dyn) {
			dyn = true;
			dyn_node = (int32_t)i;
		}
		if (fut[i] < 0)
			continue;
		const char *via = i ? a->awaitee_name : NULL;
		bool generic = n->path && strchr(n->path, '<');
		if (n->is_env || !generic || !below[i]) {
			if (generic && !n->is_env && is_std(n->path) && !below[i] &&
			    i + 1 < a->nr_nodes)
				continue; /* std forwarding future over something unresolved */
			if ((err = add_edge(w, a, fut[i], via, (int32_t)i)))
				return err;
			any = true;
			skip[i] = true;
			continue;
		}
		if (!is_std(n->path)) {
			if ((err = add_edge(w, a, fut[i], via, (int32_t)i)))
				return err;
			any = true;
		}
	}
	if (any)
		return 0;
	if (dyn || !a->nr_nodes)
		return add_edge(w, a, -1, NULL, dyn_node);
	/* The awaitee is a future whose poll fn left no trace (optimized out): keep it
	 * as a node so the graph still says what is awaited here. */
	const struct await_node *root = &a->nodes[0];
	const char *path = root->path ? root->path : a->awaitee_name;
	if (!path)
		return add_edge(w, a, -1, NULL, -1);
	bool is_env;
	enum future_kind kind = future_kind__from_name(path, &is_env);
	int32_t f = walk__get_future(w, path, kind, root->die_offset, root->size);
	if (f < 0)
		return -ENOMEM;
	return add_edge(w, a, f, NULL, 0);
}

int awaits__resolve(struct walk *w)
{
	for (uint32_t i = 0; i < w->nr_awaits; i++) {
		struct await_rec *a = &w->awaits[i];
		int err = resolve_one(w, a);
		if (err)
			return err;
		/* the state's awaitee type, for the JSON */
		struct future *f = &w->m->futures[a->future];
		for (uint32_t s = 0; s < f->nr_states; s++)
			if (f->states[s].kind == STATE_SUSPEND &&
			    f->states[s].suspend_index == a->await_index)
				f->states[s].awaitee_type = a->awaitee_name;
	}
	return 0;
}

void awaits__free(struct walk *w)
{
	for (uint32_t i = 0; i < w->nr_awaits; i++)
		free(w->awaits[i].nodes);
	free(w->awaits);
	w->awaits = NULL;
	w->nr_awaits = 0;
}
