// SPDX-License-Identifier: GPL-2.0
/*
 * Future trees (model.h, docs/analyzer.md "Future trees"): for every future type,
 * where inside it lie the futures it polls or holds. Two sources, both read at the
 * end of each compile unit, while its type paths are known (type_tree.h):
 * - a compiler future's Suspend<k> states: the types under the state's __awaitee;
 * - a hand-written future's own members.
 * Once the whole binary is read and every future type is known, the first futures
 * met on each path of those trees (a std forwarding future such as Pin<Box<F>> is
 * looked through), and `dyn Future` fat pointers, become the model's slots, with
 * the conditions and steps that lead there.
 */
#include "analyze/trees.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/type_tree.h"

#define TREE_MEMBER_LEN 512

/* One tree waiting for every future type to be known. */
struct tree_rec {
	int32_t future;	     /* -1: an awaitee type not (yet) a future (path) */
	const char *path;    /* then its path (model pool) */
	int32_t await_index; /* k of Suspend<k>; -1: the future's own members */
	bool truncated;	     /* the bounds cut it (somewhere: node.cut says where) */
	bool has_discr;	     /* the own-members tree of an enum: its discriminant */
	uint32_t discr_size;
	uint64_t discr_offset;
	struct type_node *nodes;
	uint32_t nr;
};

struct tree_walk {
	struct tree_rec *recs;
	uint32_t nr, cap;
	struct u64_map laid_out; /* future index -> 1 once its own members' tree is read */
	struct u64_map awaitees; /* path -> 1: awaitee types laid out before they are futures */
};

static struct tree_walk *tree_walk_of(struct walk *w)
{
	if (!w->trees && (w->trees = calloc(1, sizeof(*w->trees)))) {
		u64_map__init(&w->trees->laid_out);
		u64_map__init(&w->trees->awaitees);
	}
	return w->trees;
}

static int add_rec(struct walk *w, int32_t future, int32_t await_index,
		   const struct type_node *nodes, uint32_t nr, bool truncated,
		   struct tree_rec **out)
{
	struct tree_walk *tw = tree_walk_of(w);

	*out = NULL;
	if (!tw)
		return -ENOMEM;
	if (tw->nr == tw->cap) {
		uint32_t cap = tw->cap ? tw->cap * 2 : 256;
		struct tree_rec *n = realloc(tw->recs, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		tw->recs = n;
		tw->cap = cap;
	}
	struct tree_rec *r = &tw->recs[tw->nr];
	memset(r, 0, sizeof(*r));
	r->future = future;
	r->await_index = await_index;
	r->truncated = truncated;
	if (nr) {
		r->nodes = malloc(nr * sizeof(*r->nodes));
		if (!r->nodes)
			return -ENOMEM;
		memcpy(r->nodes, nodes, nr * sizeof(*r->nodes));
		r->nr = nr;
	}
	tw->nr++;
	*out = r;
	return 0;
}

/* A DIE of future i's type, met in another tree (its poll gave none): kept. */
static void fill_type(struct future *f, uint64_t die, uint64_t size)
{
	if (!f->die_offset) {
		f->die_offset = die;
		f->size = f->size ? f->size : size;
	}
}

/*
 * The tree of future i's own members, from a DIE of its type; i -1: of the awaitee
 * type at `path`, which may become a future once the await graph is resolved (an
 * awaitee without poll code). 0 or -ENOMEM.
 */
static int lay_out(struct walk *w, int32_t i, const char *path, Dwarf_Die *type)
{
	static __thread struct type_node nodes[TYPE_TREE_MAX_NODES];
	struct tree_rec *r;
	uint32_t nr;
	bool cut;
	Dwarf_Die t;
	int err;

	if ((err = type_tree__build(w, type, true, NULL, nodes, &nr, &cut)) ||
	    (err = add_rec(w, i, -1, nodes, nr, cut, &r)))
		return err;
	r->path = path;
	err = i >= 0 ? u64_map__set(&w->trees->laid_out, (uint64_t)i, 1)
		     : u64_map__set(&w->trees->awaitees, (uintptr_t)path, 1);
	if (err)
		return err;
	if (i >= 0)
		fill_type(&w->m->futures[i], dwarf_dieoffset(type), die_bytesize(type));
	/* an enum's own discriminant: which variant a node of it is in */
	if (nr && nodes[0].die && dwarf_offdie(w->dw, nodes[0].die, &t))
		r->has_discr = type_tree__discr(&t, &r->discr_offset, &r->discr_size);
	return 0;
}

/*
 * The end of a unit: the trees of its await points and of the hand-written futures
 * it added; then of the hand-written futures its trees meet that have no layout yet
 * (a poll inlined without a `self` type gives none: hyper's ProtoServer in release),
 * while this unit's type paths are at hand.
 */
int trees__end_cu(struct walk *w)
{
	static __thread struct type_node nodes[TYPE_TREE_MAX_NODES];
	struct tree_walk *tw = tree_walk_of(w);
	struct tree_rec *r;
	uint32_t nr, first;
	bool cut;
	Dwarf_Die t;
	int err;

	if (!tw)
		return -ENOMEM;
	first = tw->nr;
	for (uint32_t i = w->first_cu_await; i < w->nr_awaits; i++) {
		const struct await_rec *a = &w->awaits[i];

		if (!dwarf_offdie(w->dw, a->awaitee_offset, &t))
			continue;
		if ((err = type_tree__build(w, &t, false, "__awaitee", nodes, &nr, &cut)) ||
		    (err = add_rec(w, a->future, (int32_t)a->await_index, nodes, nr, cut, &r)))
			return err;
	}
	for (uint32_t i = w->first_cu_future; i < w->m->nr_futures; i++) {
		const struct future *f = &w->m->futures[i];

		if (f->kind == FUTURE_HANDWRITTEN && f->die_offset &&
		    dwarf_offdie(w->dw, f->die_offset, &t) &&
		    (err = lay_out(w, (int32_t)i, NULL, &t)))
			return err;
	}
	w->first_cu_future = w->m->nr_futures;
	for (uint32_t k = first; k < tw->nr; k++) /* grows: what a new layout meets, too */
		for (uint32_t n = 0; n < tw->recs[k].nr; n++) {
			const struct type_node *nd = &tw->recs[k].nodes[n];
			bool awaitee = tw->recs[k].await_index >= 0 && n == 0;
			uint64_t idx;

			if (!nd->path || !nd->die || nd->is_env || nd->is_dyn ||
			    !dwarf_offdie(w->dw, nd->die, &t))
				continue;
			if (u64_map__get(&w->future_by_path, (uintptr_t)nd->path, &idx)) {
				if (w->m->futures[idx].kind == FUTURE_HANDWRITTEN &&
				    !u64_map__get(&tw->laid_out, idx, NULL) &&
				    (err = lay_out(w, (int32_t)idx, NULL, &t)))
					return err;
			} else if (awaitee &&
				   !u64_map__get(&tw->awaitees, (uintptr_t)nd->path, NULL) &&
				   (err = lay_out(w, -1, nd->path, &t))) {
				return err;
			}
		}
	return 0;
}

/* ---- resolving, once every future is known ---- */

/* Where a tree starts inside its future, and what holds for all of its slots. */
struct rec_base {
	uint64_t offset;	/* of the tree's root in the future */
	bool cond;		/* a Suspend state's __state value */
	struct tree_cond state; /* (at_step 0) */
	const char *prefix;	/* of the member path: "Suspend0", or NULL */
};

static int32_t future_of(struct walk *w, const struct type_node *n)
{
	uint64_t idx;

	return n->path && u64_map__get(&w->future_by_path, (uintptr_t)n->path, &idx) ? (int32_t)idx
										     : -1;
}

/* The awaitee types laid out before they were futures: those that are now. */
static int attach_awaitees(struct walk *w)
{
	struct tree_walk *tw = w->trees;
	Dwarf_Die t;
	uint64_t idx;

	for (uint32_t k = 0; tw && k < tw->nr; k++) {
		struct tree_rec *r = &tw->recs[k];

		if (r->future >= 0 || !r->path ||
		    !u64_map__get(&w->future_by_path, (uintptr_t)r->path, &idx) ||
		    u64_map__get(&tw->laid_out, idx, NULL))
			continue;
		r->future = (int32_t)idx;
		if (u64_map__set(&tw->laid_out, idx, 1))
			return -ENOMEM;
		if (r->nr && r->nodes[0].die && dwarf_offdie(w->dw, r->nodes[0].die, &t))
			fill_type(&w->m->futures[idx], r->nodes[0].die, die_bytesize(&t));
	}
	return 0;
}

static void append_member(char *buf, size_t len, const char *name)
{
	size_t at = strlen(buf);

	if (at + 1 < len)
		snprintf(buf + at, len - at, "%s%s", at ? "." : "", name ? name : "?");
}

/* The slot of node i (a child future, or a dyn one) of tree r. */
static int emit_slot(struct walk *w, const struct tree_rec *r, int32_t i, int32_t child,
		     const struct rec_base *base, struct future_tree *t)
{
	struct tree_stats *st = &w->m->tree_stats;
	int32_t chain[TYPE_TREE_MAX_DEPTH + 4];
	uint32_t n = 0;
	struct tree_slot s = {.child = child, .await_index = r->await_index};
	char member[TREE_MEMBER_LEN] = "";
	uint64_t acc = base->offset;

	if (t->nr_slots == MODEL_TREE_SLOTS) {
		t->nr_cut++;
		st->cut_slots++;
		return 0;
	}
	for (int32_t k = i; k >= 0 && n < sizeof(chain) / sizeof(chain[0]); k = r->nodes[k].parent)
		chain[n++] = k;
	if (base->cond)
		s.conds[s.nr_conds++] = base->state;
	if (base->prefix)
		append_member(member, sizeof(member), base->prefix);
	while (n--) {
		const struct type_node *nd = &r->nodes[chain[n]];

		if (nd->parent < 0 && r->await_index < 0)
			continue; /* the future itself */
		if (nd->cond_bad || (nd->cond && s.nr_conds == MODEL_TREE_CONDS)) {
			t->nr_cut++;
			st->cut_conds++;
			return 0;
		}
		if (nd->cond)
			s.conds[s.nr_conds++] = (struct tree_cond){.kind = nd->cond_kind,
								   .size = nd->cond_size,
								   .at_step = s.nr_steps,
								   .offset = acc + nd->cond_offset,
								   .lo = nd->cond_lo,
								   .hi = nd->cond_hi};
		append_member(member, sizeof(member), nd->member);
		if (nd->is_dyn && chain[n] == i) {
			if (nd->vtable_bad || acc + nd->vtable > UINT32_MAX ||
			    acc + nd->offset > UINT32_MAX) {
				t->nr_cut++;
				st->cut_conds++;
				return 0;
			}
			s.dyn = true;
			s.dyn_data = (uint32_t)(acc + nd->offset);
			s.dyn_vtable = (uint32_t)(acc + nd->vtable);
			acc = 0;
			break;
		}
		acc += nd->offset;
		for (uint8_t d = 0; d < nd->derefs; d++) {
			if (s.nr_steps == MODEL_AWAIT_STEPS)
				goto too_long;
			s.steps[s.nr_steps++] = (struct await_step){.offset = acc, .deref = true};
			acc = 0;
		}
	}
	if (acc) {
		if (s.nr_steps == MODEL_AWAIT_STEPS)
			goto too_long;
		s.steps[s.nr_steps++] = (struct await_step){.offset = acc};
	}
	s.member = strpool__intern(&w->m->strings, member);
	struct tree_slot *slot = model__add_tree_slot(w->m);
	if (!s.member || !slot)
		return -ENOMEM;
	*slot = s;
	t->nr_slots++;
	st->slots++;
	st->dyn_slots += s.dyn;
	return 0;
too_long:
	t->nr_cut++;
	st->cut_steps++;
	return 0;
}

/*
 * The slots of tree r: the first futures on each path from its root, but a std
 * wrapper with futures inside (Pin<Box<F>>: looked through), and every dyn Future.
 */
static int resolve_rec(struct walk *w, const struct tree_rec *r, const struct rec_base *base,
		       struct future_tree *t)
{
	int32_t fut[TYPE_TREE_MAX_NODES];
	bool below[TYPE_TREE_MAX_NODES] = {0}, done[TYPE_TREE_MAX_NODES] = {0};
	bool self = r->await_index < 0;
	int err;

	for (uint32_t i = 0; i < r->nr; i++)
		fut[i] = self && i == 0 ? -1 : future_of(w, &r->nodes[i]);
	for (uint32_t i = r->nr; i-- > 1;) {
		int32_t p = r->nodes[i].parent;

		if (p >= 0 && (uint32_t)p < i && (fut[i] >= 0 || r->nodes[i].is_dyn || below[i]))
			below[p] = true;
	}
	for (uint32_t i = 0; i < r->nr; i++) {
		const struct type_node *n = &r->nodes[i];
		int32_t p = n->parent;

		if (p >= 0 && ((uint32_t)p >= i || done[p])) {
			done[i] = true;
			continue;
		}
		bool wrapper =
		    fut[i] >= 0 && !n->is_env && type_tree__std_wrapper(n->path) && below[i];
		if (!n->is_dyn && (fut[i] < 0 || wrapper))
			continue;
		done[i] = true;
		if ((err = emit_slot(w, r, (int32_t)i, n->is_dyn ? -1 : fut[i], base, t)))
			return err;
	}
	if (getenv("ASYNCBPF_DEBUG_TREES"))
		for (uint32_t i = 0; i < r->nr; i++)
			fprintf(stderr,
				"tree %s#%d node %u parent %d depth %u fut %d %s%s %s+%lu%s %s\n",
				w->m->futures[r->future].path, r->await_index, i,
				r->nodes[i].parent, r->nodes[i].depth, fut[i],
				done[i] ? "in-child" : "open", r->nodes[i].cut ? " CUT" : "",
				r->nodes[i].member, (unsigned long)r->nodes[i].offset,
				r->nodes[i].derefs ? " *" : "",
				r->nodes[i].path ? r->nodes[i].path : "(anon)");
	/* a cut inside a child taken (its own tree says what it holds) loses nothing */
	for (uint32_t i = 0; i < r->nr; i++)
		if (r->nodes[i].cut && !done[i]) {
			w->m->tree_stats.cut_bounds++;
			break;
		}
	return 0;
}

/* Where the tree of a compiler future's await point starts: its Suspend state. */
static bool await_base(struct walk *w, const struct future *f, const struct tree_rec *r,
		       struct rec_base *base)
{
	for (uint32_t s = 0; s < f->nr_states; s++) {
		const struct future_state *st = &f->states[s];

		if (st->kind != STATE_SUSPEND || st->suspend_index != (uint32_t)r->await_index)
			continue;
		if (st->awaitee_offset == FUTURE_NO_OFFSET || st->discr == UINT64_MAX ||
		    !f->has_state) {
			w->m->tree_stats.no_offset++;
			return false;
		}
		*base = (struct rec_base){
		    .offset = st->awaitee_offset,
		    .cond = true,
		    .state = {.kind = TREE_COND_IN,
			      .size = (uint8_t)f->state_size,
			      .offset = f->state_offset,
			      .lo = st->discr,
			      .hi = st->discr},
		    .prefix = st->name,
		};
		return true;
	}
	return false;
}

static void future_discr(const struct future *f, const struct tree_rec *self, struct future_tree *t)
{
	bool size_ok =
	    f->state_size == 1 || f->state_size == 2 || f->state_size == 4 || f->state_size == 8;

	t->discr_max = UINT64_MAX;
	if (f->has_state && size_ok) {
		t->has_discr = true;
		t->discr_offset = f->state_offset;
		t->discr_size = f->state_size;
		t->discr_max = 0;
		for (uint32_t s = 0; s < f->nr_states; s++)
			if (f->states[s].discr == UINT64_MAX || f->states[s].discr > t->discr_max)
				t->discr_max = f->states[s].discr;
	} else if (self && self->has_discr && self->discr_size >= 1 && self->discr_size <= 8) {
		t->has_discr = true;
		t->discr_offset = self->discr_offset;
		t->discr_size = self->discr_size;
	}
}

int trees__resolve(struct walk *w)
{
	struct model *m = w->m;
	int err = attach_awaitees(w);
	struct tree_walk *tw = w->trees;
	uint32_t nr_recs = tw ? tw->nr : 0;
	int32_t *first = calloc(m->nr_futures ? m->nr_futures : 1, sizeof(*first));
	int32_t *next = calloc(nr_recs ? nr_recs : 1, sizeof(*next));
	int32_t *last = calloc(m->nr_futures ? m->nr_futures : 1, sizeof(*last));

	free(m->trees);
	m->trees = calloc(m->nr_futures ? m->nr_futures : 1, sizeof(*m->trees));
	m->nr_trees = m->trees ? m->nr_futures : 0;
	if (err || !first || !next || !last || !m->trees) {
		err = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < m->nr_futures; i++)
		first[i] = last[i] = -1;
	for (uint32_t i = 0; i < nr_recs; i++) { /* each future's trees, in the walk's order */
		int32_t f = tw->recs[i].future;

		next[i] = -1;
		if (f < 0 || (uint32_t)f >= m->nr_futures)
			continue;
		if (last[f] >= 0)
			next[last[f]] = (int32_t)i;
		else
			first[f] = (int32_t)i;
		last[f] = (int32_t)i;
	}
	for (uint32_t i = 0; i < m->nr_futures && !err; i++) {
		const struct future *f = &m->futures[i];
		struct future_tree *t = &m->trees[i];
		const struct tree_rec *self = NULL;

		t->first_slot = m->nr_tree_slots;
		for (int32_t k = first[i]; k >= 0; k = next[k])
			if (tw->recs[k].await_index < 0 && !self)
				self = &tw->recs[k];
		t->known = f->kind == FUTURE_HANDWRITTEN ? self && self->nr : f->has_state;
		future_discr(f, self, t);
		for (int32_t k = first[i]; k >= 0 && !err; k = next[k]) {
			const struct tree_rec *r = &tw->recs[k];
			struct rec_base base = {0};

			if (r->await_index >= 0
				? f->kind == FUTURE_HANDWRITTEN || !await_base(w, f, r, &base)
				: r != self)
				continue;
			err = resolve_rec(w, r, &base, t);
		}
		if (!t->known) {
			m->tree_stats.no_layout++;
			continue;
		}
		m->tree_stats.futures++;
		m->tree_stats.with_slots += t->nr_slots > 0;
	}
out:
	free(first);
	free(next);
	free(last);
	return err;
}

void trees__free(struct walk *w)
{
	if (!w->trees)
		return;
	for (uint32_t i = 0; i < w->trees->nr; i++)
		free(w->trees->recs[i].nodes);
	free(w->trees->recs);
	u64_map__free(&w->trees->laid_out);
	u64_map__free(&w->trees->awaitees);
	free(w->trees);
	w->trees = NULL;
}
