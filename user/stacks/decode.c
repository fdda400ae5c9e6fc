// SPDX-License-Identifier: GPL-2.0
/*
 * A parked task's async stack from memory (decode.h). Everything read from the
 * target is untrusted: every address is checked by the read callback, every value
 * against the model (a __state must be one the future has), chains are cut at a
 * future met twice or past STACKS_MAX_FRAMES.
 */
#include "stacks/decode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- vtable index ---- */

struct pair {
	uint64_t addr;
	int32_t future, type;
};

static int cmp_pair(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int vtable_index__init(struct vtable_index *ix, const struct model *m, uint64_t bias)
{
	uint32_t n = 0, cap = m->nr_vtables + m->nr_task_types;
	struct pair *p = calloc(cap ? cap : 1, sizeof(*p));

	memset(ix, 0, sizeof(*ix));
	if (!p)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->nr_vtables; i++)
		if (m->vtables[i].future >= 0 && m->vtables[i].addr)
			p[n++] = (struct pair){m->vtables[i].addr + bias, m->vtables[i].future, -1};
	for (uint32_t i = 0; i < m->nr_task_types; i++) {
		const struct task_type *t = &m->task_types[i];

		if (t->future >= 0 && t->vtable && t->runtime < TASK_RT_MAX &&
		    m->runtimes[t->runtime].known)
			p[n++] = (struct pair){t->vtable + bias, t->future, (int32_t)i};
	}
	qsort(p, n, sizeof(*p), cmp_pair);
	ix->addrs = calloc(n ? n : 1, sizeof(*ix->addrs));
	ix->futures = calloc(n ? n : 1, sizeof(*ix->futures));
	ix->types = calloc(n ? n : 1, sizeof(*ix->types));
	if (!ix->addrs || !ix->futures || !ix->types) {
		free(p);
		vtable_index__free(ix);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		ix->addrs[i] = p[i].addr;
		ix->futures[i] = p[i].future;
		ix->types[i] = p[i].type;
	}
	ix->nr = n;
	free(p);
	return 0;
}

int32_t vtable_index__find(const struct vtable_index *ix, uint64_t addr)
{
	int32_t slot = vtable_index__slot(ix, addr);

	return slot >= 0 && ix->types[slot] < 0 ? ix->futures[slot] : -1;
}

int32_t vtable_index__slot(const struct vtable_index *ix, uint64_t addr)
{
	uint32_t lo = 0, hi = ix->nr;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ix->addrs[mid] < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ix->nr && ix->addrs[lo] == addr ? (int32_t)lo : -1;
}

void vtable_index__free(struct vtable_index *ix)
{
	free(ix->addrs);
	free(ix->futures);
	free(ix->types);
	memset(ix, 0, sizeof(*ix));
}

/* ---- decoding ---- */

struct reader {
	stacks_read_fn read;
	void *ctx;
};

static bool read_u64(const struct reader *r, uint64_t addr, uint64_t *v)
{
	return !r->read(r->ctx, addr, v, sizeof(*v));
}

/* The little-endian unsigned value of `size` bytes at addr. */
static bool read_uint(const struct reader *r, uint64_t addr, uint32_t size, uint64_t *v)
{
	uint8_t b[8] = {0};

	if (size == 0 || size > 8 || r->read(r->ctx, addr, b, size))
		return false;
	*v = 0;
	for (uint32_t i = size; i-- > 0;)
		*v = *v << 8 | b[i];
	return true;
}

/* The state of the future f at addr (NULL: unreadable or a value f does not have). */
static const struct future_state *state_at(const struct model *m, int32_t f, uint64_t addr,
					   const struct reader *r, uint64_t *discr,
					   bool *unreadable)
{
	const struct future *fut = &m->futures[f];

	*unreadable = false;
	if (!read_uint(r, addr + fut->state_offset, fut->state_size, discr)) {
		*unreadable = true;
		return NULL;
	}
	return future__state_of(fut, *discr);
}

/*
 * Where edge e's target is, from the awaitee at base; *vtable_at: where a dyn
 * edge's vtable pointer is. False when a pointer on the way cannot be read.
 */
static bool follow(const struct await_edge *e, uint64_t base, const struct reader *r, uint64_t *to,
		   uint64_t *vtable_at)
{
	uint64_t ptr_at;

	if (!await_steps__follow(e->steps,
				 e->nr_steps < MODEL_AWAIT_STEPS ? e->nr_steps : MODEL_AWAIT_STEPS,
				 base, r->read, r->ctx, to, &ptr_at))
		return false;
	*vtable_at = ptr_at + 8;
	return true;
}

/* A live future of the model at addr? (its __state is one it has) */
static bool looks_live(const struct model *m, int32_t f, uint64_t addr, const struct reader *r)
{
	uint64_t discr;
	bool unreadable;

	if (f < 0 || (uint32_t)f >= m->nr_futures)
		return false;
	if (!m->futures[f].has_state)
		return true; /* nothing to check it by */
	return state_at(m, f, addr, r, &discr, &unreadable) != NULL;
}

struct next {
	int32_t future; /* -2: nothing to follow */
	uint64_t addr;
	uint8_t state; /* FRAME_UNREADABLE / FRAME_UNKNOWN_DYN when it ends there */
	uint32_t branches;
};

/*
 * The future awaited at Suspend<k> of f: the one edge, or of several (a join! or a
 * wrapper with futures inside) the first whose target reads as a live future.
 */
static struct next next_of(const struct model *m, const struct vtable_index *ix, int32_t f,
			   const struct future_state *st, uint64_t addr, const struct reader *r)
{
	struct next out = {.future = -2}, first = {.future = -2};
	uint32_t candidates = 0;

	if (st->awaitee_offset == FUTURE_NO_OFFSET)
		return out;
	for (uint32_t i = 0; i < m->nr_edges; i++) {
		const struct await_edge *e = &m->edges[i];
		struct next n = {.future = e->to};
		uint64_t vt;

		if (e->from != f || e->await_index != st->suspend_index || !e->steps_known ||
		    (e->to < 0 && !e->dyn))
			continue;
		/* a wrapper whose inner futures have edges of their own: follow those */
		if (!e->nr_steps && e->to >= 0 && !m->futures[e->to].has_state && e->to != f) {
			bool inner = false;
			for (uint32_t j = 0; j < m->nr_edges && !inner; j++)
				inner = j != i && m->edges[j].from == f &&
					m->edges[j].await_index == st->suspend_index &&
					(m->edges[j].nr_steps || m->edges[j].via);
			if (inner)
				continue;
		}
		candidates++;
		if (!follow(e, addr + st->awaitee_offset, r, &n.addr, &vt)) {
			n.state = FRAME_UNREADABLE;
		} else if (e->dyn) {
			uint64_t vtable;
			n.future = read_u64(r, vt, &vtable) ? vtable_index__find(ix, vtable) : -1;
			if (n.future < 0)
				n.state = FRAME_UNKNOWN_DYN;
		}
		if (first.future == -2)
			first = n;
		if (out.future == -2 && n.future >= 0 && !n.state &&
		    looks_live(m, n.future, n.addr, r))
			out = n;
	}
	if (out.future == -2)
		out = first;
	out.branches = candidates ? candidates - 1 : 0;
	return out;
}

static bool seen_before(const struct task_stack *s, int32_t f, uint64_t addr)
{
	for (uint32_t i = 0; i < s->nr; i++)
		if (s->frames[i].addr == addr && s->frames[i].future == f)
			return true;
	return false;
}

static uint8_t end_state(enum state_kind k)
{
	return k == STATE_UNRESUMED  ? FRAME_UNRESUMED
	       : k == STATE_RETURNED ? FRAME_RETURNED
	       : k == STATE_PANICKED ? FRAME_PANICKED
				     : FRAME_BAD_STATE;
}

void stacks__decode(const struct model *m, const struct vtable_index *ix, int32_t future,
		    uint64_t addr, stacks_read_fn read, void *ctx, struct task_stack *out)
{
	const struct reader r = {read, ctx};
	uint8_t pending_state = 0; /* set: the next frame ends the stack with it */

	memset(out, 0, sizeof(*out));
	while (1) {
		struct stack_frame *fr;
		const struct future_state *st;
		bool unreadable;

		if (out->nr == STACKS_MAX_FRAMES) {
			out->too_deep = true;
			return;
		}
		if (future >= 0 && seen_before(out, future, addr)) {
			out->cycle = true;
			return;
		}
		fr = &out->frames[out->nr++];
		fr->future = future;
		fr->addr = addr;
		fr->await_index = -1;
		if (pending_state || future < 0 || (uint32_t)future >= m->nr_futures) {
			fr->state = pending_state ? pending_state : FRAME_UNKNOWN_DYN;
			return;
		}
		if (!m->futures[future].has_state) {
			fr->state = FRAME_OPAQUE;
			return;
		}
		st = state_at(m, future, addr, &r, &fr->discr, &unreadable);
		if (!st || st->kind != STATE_SUSPEND) {
			fr->state = unreadable ? FRAME_UNREADABLE
				    : st       ? end_state(st->kind)
					       : FRAME_BAD_STATE;
			return;
		}
		fr->state = FRAME_SUSPENDED;
		fr->await_index = (int32_t)st->suspend_index;
		fr->file = st->file;
		fr->line = st->line;
		struct next n = next_of(m, ix, future, st, addr, &r);
		fr->branches = n.branches;
		if (n.future == -2)
			return; /* the model knows nothing below this await */
		future = n.future;
		addr = n.addr;
		pending_state = n.state;
	}
}

struct tree_ctx {
	const struct vtable_index *ix;
	stacks_read_fn read;
	void *ctx;
};

static int tree_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct tree_ctx *c = ctx;

	return c->read(c->ctx, addr, buf, len);
}

static int32_t tree_vtable(void *ctx, uint64_t vtable)
{
	return vtable_index__find(((const struct tree_ctx *)ctx)->ix, vtable);
}

uint32_t stacks__tree(const struct model *m, const struct vtable_index *ix, int32_t future,
		      uint64_t addr, stacks_read_fn read, void *ctx, struct tree_walk_node *nodes,
		      uint32_t cap, struct tree_walk_stats *st)
{
	struct tree_ctx c = {ix, read, ctx};
	const struct tree_reader rd = {tree_read, tree_vtable, &c};

	return future_tree__walk(m, future, addr, &rd, nodes, cap, STACKS_TREE_DEPTH, st);
}

const char *frame_state__name(uint8_t state)
{
	switch (state) {
	case FRAME_SUSPENDED: return "suspended";
	case FRAME_UNRESUMED: return "unresumed";
	case FRAME_RETURNED: return "returned";
	case FRAME_PANICKED: return "panicked";
	case FRAME_OPAQUE: return "opaque";
	case FRAME_BAD_STATE: return "bad_state";
	case FRAME_UNREADABLE: return "unreadable";
	case FRAME_UNKNOWN_DYN: return "unknown_dyn";
	case FRAME_TYPE_ONLY: return "type_only";
	}
	return "?";
}

/* The first frame worth showing: past the runtimes' own wrappers (async-executor's
 * spawn block, ...) when a frame of the program's own follows. */
uint32_t stacks__first_shown(const struct model *m, const struct task_stack *st)
{
	for (uint32_t i = 0; i < st->nr; i++) {
		int32_t f = st->frames[i].future;

		if (f < 0 || (uint32_t)f >= m->nr_futures ||
		    (m->futures[f].crate_class != CRATE_RUNTIME &&
		     m->futures[f].crate_class != CRATE_STD))
			return i;
	}
	return 0;
}
