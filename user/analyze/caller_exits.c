// SPDX-License-Identifier: GPL-2.0
/*
 * Exits in the caller (caller_exits.h). For every out-of-line poll fn: its call
 * sites from the index, then, caller by caller (one CFG each), the continuation of
 * each call, and whether the poll's result can be read there. The set of a poll fn
 * is all or nothing: one call without a usable site, or a caller the code does not
 * show, and the tracer cannot see every return there.
 */
#include "analyze/caller_exits.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/demangle.h"

static int read_target(void *ctx, uint64_t addr, size_t len, const uint8_t **bytes)
{
	return target__data(ctx, addr, len, bytes);
}

static bool entered(void *ctx, uint64_t addr)
{
	return callsites__entered_from_outside(((struct call_site_ctx *)ctx)->ix, addr);
}

/*
 * May a continuation pass over this call (continuation_cross_fn)? A call through a
 * fixed slot (`call [rip + X]`, the GOT) whose function the loaded image will hold
 * there is known, and is none of the model's poll fns nor a runtime's task poll: a
 * guard's drop, a thread-local's accessor. A call through a register or a vtable may
 * be any future's poll: never.
 */
static bool crossable(void *ctx, const struct insn *in)
{
	const struct call_site_ctx *c = ctx;
	const struct insn_op *op = &in->ops[0];
	uint64_t fn = 0;

	if (in->target || in->nr_ops != 1 || op->type != INSN_OP_MEM || op->base != DWARF_REG_RIP ||
	    op->index >= 0 || op->segment ||
	    target__pointer(c->t, in->addr + in->size + (uint64_t)op->value, &fn) || !fn)
		return false;
	for (uint32_t k = 0; k < c->m->nr_polls; k++)
		if (c->m->polls[k].addr == fn)
			return false;
	for (uint32_t k = 0; k < c->m->nr_task_types; k++)
		if (c->m->task_types[k].fn_addr == fn)
			return false;
	return true;
}

void call_site_ctx__init(struct call_site_ctx *c, struct target *t, struct model *m,
			 const struct callsites *ix)
{
	memset(c, 0, sizeof(*c));
	c->t = t;
	c->m = m;
	c->ix = ix;
	c->fn = -1;
}

void call_site_ctx__free(struct call_site_ctx *c)
{
	if (c->fn >= 0 && !c->g_why)
		cfg__free(&c->g);
	c->fn = -1;
}

const struct cfg *call_site_ctx__cfg(struct call_site_ctx *c, int32_t fn, int *err)
{
	const struct callsite_fn *f = &c->ix->fns[fn];
	const uint8_t *code;
	char why[256] = "";
	int r;

	*err = 0;
	if (c->fn == fn)
		return c->g_why ? NULL : &c->g;
	call_site_ctx__free(c);
	c->fn = fn;
	c->g_why = NULL;
	c->g_name = symbol__demangle(&c->m->strings, f->name);
	if (!c->g_name) {
		*err = -ENOMEM;
		c->fn = -1;
		return NULL;
	}
	if (!f->decoded || target__code(c->t, f->addr, f->size, &code))
		r = -EINVAL;
	else
		r = cfg__build(&c->g, code, f->size, f->addr, read_target, c->t, why, sizeof(why));
	if (r == -ENOMEM) {
		*err = r;
		c->fn = -1;
		return NULL;
	}
	if (r) {
		c->g_why = strpool__printf(&c->m->strings, "its caller %s does not decode: %s",
					   c->g_name, why[0] ? why : "bytes that are not code");
		if (!c->g_why) {
			*err = -ENOMEM;
			c->fn = -1;
		}
		return NULL;
	}
	return &c->g;
}

int call_site_ctx__exit(struct call_site_ctx *c, const struct callsite *cs, enum call_kind kind,
			struct caller_exit *out, struct continuation *cont)
{
	struct continuation local;
	const struct cfg *g;
	int64_t i;
	int err;

	if (!cont)
		cont = &local;
	memset(out, 0, sizeof(*out));
	memset(cont, 0, sizeof(*cont));
	cont->why = CONTINUATION_OPAQUE;
	out->call_addr = cs->addr;
	out->call = (uint8_t)kind;
	out->result_reg[0] = out->result_reg[1] = -1;
	out->result = CALLER_RESULT_UNKNOWN;
	if (cs->fn < 0) {
		out->why = "the call is in code outside any function symbol";
		return 0;
	}
	g = call_site_ctx__cfg(c, cs->fn, &err);
	if (err)
		return err;
	out->caller = c->g_name;
	if (!g) {
		out->why = c->g_why;
		return 0;
	}
	i = insn_seq__find(&g->seq, cs->addr);
	if (i < 0) {
		out->why = "the call is not an instruction of its function";
		return 0;
	}
	if (cs->via_reg && (g->blocks[g->block_of[i]].first == (uint32_t)i ||
			    callsites__entered_from_outside(c->ix, cs->addr))) {
		out->why = "a branch lands on the call through a register loaded from the GOT: "
			   "the register may hold another function there";
		return 0;
	}
	continuation__find_across(g, (uint32_t)i, entered, crossable, c, cont);
	if (cont->why == CONTINUATION_TAIL && g->block_of[i] == 0) {
		/* straight from the function's entry to the call, then back: every call of
		 * the function is one of the callee's (expand_tails) */
		out->tail_fn = c->ix->fns[cs->fn].addr;
		out->tail_sp = 8 + cont->sp_adjust + 8; /* ret, the freed bytes, its ret */
	}
	if (cont->why != CONTINUATION_OK && c->stepped_ok && cont->stepped_ok) {
		*cont = (struct continuation){.why = CONTINUATION_OK,
					      .insn = cont->stepped_insn,
					      .reg = {DWARF_REG_RAX, DWARF_REG_RDX},
					      .bytes = {8, 8}};
		out->stepped = true;
		out->tail_fn = 0;
	}
	if (cont->why != CONTINUATION_OK) {
		out->why = continuation_why__describe(cont->why);
		return 0;
	}
	const struct insn *in = cfg__insn(g, cont->insn);
	if (target__file_offset(c->t, in->addr, &out->file_offset)) {
		out->why = "the site is not in an executable segment";
		return 0;
	}
	out->usable = true;
	out->addr = in->addr;
	insn__text(cfg__bytes(g, cont->insn), g->size - in->offset, in->addr, out->insn,
		   sizeof(out->insn));
	out->distance = cont->distance;
	out->calls = cont->calls;
	out->sp_delta = 8 + cont->sp_adjust;
	for (int k = 0; k < 2; k++) {
		out->result_reg[k] = cont->reg[k];
		out->result_bytes[k] = cont->bytes[k];
	}
	return 0;
}

/* Can the poll's Poll<T> be decoded at the site (hand-written futures)? */
static enum caller_result result_at(const struct poll_fn *p, const struct future *f,
				    const struct continuation *c)
{
	const struct poll_layout *l = &p->ret;
	uint64_t off = l->discr_offset, end;
	int k = 0;

	if (f && f->has_state)
		return CALLER_RESULT_NOT_NEEDED; /* __state, read through self */
	if (!l->known || l->convention == RET_CONV_UNKNOWN)
		return CALLER_RESULT_UNKNOWN;
	if (l->convention == RET_CONV_MEMORY) /* rax: the hidden pointer, memory untouched */
		return c->reg[0] >= 0 && c->bytes[0] == 8 && !c->stores ? CALLER_RESULT_READABLE
									: CALLER_RESULT_LOST;
	if (off >= 8) {
		k = 1;
		off -= 8;
	}
	end = off + l->discr_size;
	if (end > 8)
		return CALLER_RESULT_UNKNOWN;
	return c->reg[k] >= 0 && c->bytes[k] >= end ? CALLER_RESULT_READABLE : CALLER_RESULT_LOST;
}

struct job {
	struct callsite call;
	uint32_t poll, site;
};

static int cmp_job(const void *a, const void *b)
{
	const struct job *x = a, *y = b;

	if (x->call.fn != y->call.fn)
		return x->call.fn < y->call.fn ? -1 : 1;
	return x->call.addr < y->call.addr ? -1 : x->call.addr > y->call.addr;
}

struct jobs {
	struct job *v;
	uint32_t nr, cap;
};

/* The call sites of poll fn i, as jobs; its callers_known and an empty exit per site. */
static int add_poll_jobs(struct walk *w, uint32_t i, struct jobs *jobs)
{
	struct poll_fn *p = &w->m->polls[i];
	struct callsite *calls = NULL;
	uint32_t nr = 0;
	char why[256];
	bool known;

	if (callsites__callers(w->calls, p->addr, &calls, &nr, &known, why, sizeof(why)))
		return -ENOMEM;
	if (nr > CALLER_EXITS_MAX_SITES) { /* a hostile binary: not worth a probe each */
		free(calls);
		p->callers_known = known;
		p->caller_exits_why =
		    strpool__printf(&w->m->strings, "more than %u calls of it: not analysed",
				    CALLER_EXITS_MAX_SITES);
		return p->caller_exits_why ? 0 : -ENOMEM;
	}
	p->callers_known = known;
	if (!known && !(p->caller_exits_why = strpool__intern(&w->m->strings, why)))
		goto nomem;
	if (nr && !(p->caller_exits = calloc(nr, sizeof(*p->caller_exits))))
		goto nomem;
	p->nr_caller_exits = nr;
	for (uint32_t k = 0; k < nr; k++) {
		if (jobs->nr == jobs->cap) {
			uint32_t cap = jobs->cap ? jobs->cap * 2 : 256;
			struct job *n = realloc(jobs->v, (size_t)cap * sizeof(*n));

			if (!n)
				goto nomem;
			jobs->v = n;
			jobs->cap = cap;
		}
		jobs->v[jobs->nr++] = (struct job){.call = calls[k], .poll = i, .site = k};
	}
	free(calls);
	return 0;
nomem:
	free(calls);
	return -ENOMEM;
}

/* Append x to the growing array *v (nr used of cap). 0 or -ENOMEM. */
static int push_exit(struct caller_exit **v, uint32_t *nr, uint32_t *cap,
		     const struct caller_exit *x)
{
	if (*nr == *cap) {
		uint32_t nc = *cap * 2 + 8;
		struct caller_exit *n = realloc(*v, (size_t)nc * sizeof(*n));

		if (!n)
			return -ENOMEM;
		*v = n;
		*cap = nc;
	}
	(*v)[(*nr)++] = *x;
	return 0;
}

/*
 * A poll fn called from a function that returns at once (`call poll; add rsp, N;
 * ret`: a `Pin<Box<F>>` poll wrapper in a debug build) returns where that function
 * returns: its exits are the continuations of every call of that function, with
 * rsp further up by what the wrapper popped. One level; the wrapper's callers all
 * known, each with a usable site; compiler futures only (their result is __state,
 * read through self: no register to follow through the wrapper). Else x stays, with
 * why it cannot be expanded.
 */
static int expand_tail(struct walk *w, struct call_site_ctx *ctx, struct poll_fn *p,
		       const struct caller_exit *x, struct caller_exit **out, uint32_t *nr,
		       uint32_t *cap)
{
	const struct future *f = p->future >= 0 ? &w->m->futures[p->future] : NULL;
	struct callsite *calls = NULL;
	uint32_t n = 0;
	char why[256] = "";
	bool known = false;
	struct caller_exit one = *x;
	int r = 0;

	if (callsites__callers(w->calls, x->tail_fn, &calls, &n, &known, why, sizeof(why)))
		return -ENOMEM;
	if (!f || !f->has_state || !known || !n || n > CALLER_EXITS_MAX_SITES) {
		if (!f || !f->has_state)
			one.why = "its caller returns at once, and a hand-written future's result "
				  "is not followed into that caller's callers";
		else if (!known)
			one.why = strpool__printf(
			    &w->m->strings,
			    "its caller returns at once, to callers not all known: %s", why);
		else
			one.why =
			    "its caller returns at once, and is called nowhere the code shows";
		one.tail_fn = 0;
		r = one.why ? push_exit(out, nr, cap, &one) : -ENOMEM;
		goto out;
	}
	for (uint32_t k = 0; k < n && !r; k++) {
		struct caller_exit y;
		struct continuation c;

		r = call_site_ctx__exit(ctx, &calls[k],
					calls[k].kind == CALLSITE_SLOT ? CALL_SLOT : CALL_DIRECT,
					&y, &c);
		if (r)
			break;
		y.via = x->caller;
		y.via_addr = x->tail_fn;
		if (y.usable) {
			y.sp_delta += x->tail_sp - 8;
			y.result = CALLER_RESULT_NOT_NEEDED;
		} else if (y.tail_fn) {
			y.why =
			    "its caller returns at once, and so does that one's: two calls deep";
		}
		y.tail_fn = 0;
		r = push_exit(out, nr, cap, &y);
	}
out:
	free(calls);
	return r;
}

/* Every poll fn's exits in wrappers that return at once, replaced by their callers'. */
static int expand_tails(struct walk *w, struct call_site_ctx *ctx)
{
	struct model *m = w->m;
	struct u64_map fns;
	bool any = false;
	int r = 0;

	/* the wrappers' callers through GOT slots: the holders of their addresses too */
	u64_map__init(&fns);
	for (uint32_t i = 0; i < m->nr_polls && !r; i++) {
		const struct poll_fn *p = &m->polls[i];

		if (!p->inlined_only && p->addr)
			r = u64_map__set(&fns, p->addr, 1) ? -ENOMEM : 0;
		for (uint32_t k = 0; k < p->nr_caller_exits && !r; k++)
			if (p->caller_exits[k].tail_fn) {
				any = true;
				r = u64_map__set(&fns, p->caller_exits[k].tail_fn, 1) ? -ENOMEM : 0;
			}
	}
	if (!r && any)
		r = callsites__find_holders(w->calls, w->t, &fns);
	u64_map__free(&fns);
	for (uint32_t i = 0; i < m->nr_polls && !r && any; i++) {
		struct poll_fn *p = &m->polls[i];
		struct caller_exit *v = NULL;
		uint32_t nr = 0, cap = 0;
		bool tails = false;

		for (uint32_t k = 0; k < p->nr_caller_exits; k++)
			tails |= p->caller_exits[k].tail_fn != 0;
		if (!tails)
			continue;
		for (uint32_t k = 0; k < p->nr_caller_exits && !r; k++) {
			const struct caller_exit *x = &p->caller_exits[k];

			r = x->tail_fn ? expand_tail(w, ctx, p, x, &v, &nr, &cap)
				       : push_exit(&v, &nr, &cap, x);
		}
		if (r) {
			free(v);
			break;
		}
		free(p->caller_exits);
		p->caller_exits = v;
		p->nr_caller_exits = nr;
	}
	return r;
}

/* All or nothing: known callers, at least one, a usable site at each. */
static int conclude(struct model *m, struct poll_fn *p)
{
	p->caller_exits_ok = p->callers_known && p->nr_caller_exits > 0;
	if (p->callers_known && !p->nr_caller_exits && !p->caller_exits_why)
		p->caller_exits_why = "no call of it was found in the code";
	for (uint32_t k = 0; k < p->nr_caller_exits && p->caller_exits_ok; k++) {
		const struct caller_exit *x = &p->caller_exits[k];

		if (x->usable)
			continue;
		p->caller_exits_ok = false;
		p->caller_exits_why =
		    strpool__printf(&m->strings, "the call at 0x%" PRIx64 "%s%s: %s", x->call_addr,
				    x->caller ? " in " : "", x->caller ? x->caller : "", x->why);
		if (!p->caller_exits_why)
			return -ENOMEM;
	}
	return 0;
}

static int build_index(struct walk *w)
{
	struct callsites *ix = calloc(1, sizeof(*ix));
	struct model *m = w->m;
	char err[256] = "";
	int r;

	if (!ix)
		return -ENOMEM;
	w->calls = ix;
	r = callsites__build(ix, w->t, err, sizeof(err));

	if (r == -ENOMEM)
		return r;
	if (r) {
		model__warn(m, "exits in the callers not computed: %s", err);
		callsites__free(ix);
		free(ix);
		w->calls = NULL;
		return 0;
	}
	m->callsites = (struct callsite_stats){
	    .built = true,
	    .functions = ix->nr_fns,
	    .undecoded = ix->nr_undecoded,
	    .bytes = ix->bytes,
	    .insns = ix->insns,
	    .calls = ix->nr_calls,
	    .undecoded_bytes = ix->undecoded_bytes,
	};
	if (ix->undecoded_bytes || ix->truncated)
		model__warn(m,
			    "call index: %" PRIu64 " bytes of code in %u runs do not decode%s: no "
			    "function's callers are known",
			    ix->undecoded_bytes, ix->nr_undecoded,
			    ix->truncated ? " and a bound was hit" : "");
	return 0;
}

int caller_exits__find(struct walk *w)
{
	struct model *m = w->m;
	struct jobs jobs = {0};
	struct u64_map fns;
	struct call_site_ctx ctx;
	int r;

	if (w->t->ehdr.e_machine != EM_X86_64)
		return 0;
	if ((r = build_index(w)) || !w->calls)
		return r;
	u64_map__init(&fns);
	for (uint32_t i = 0; i < m->nr_polls && !r; i++)
		if (!m->polls[i].inlined_only && m->polls[i].addr)
			r = u64_map__set(&fns, m->polls[i].addr, 1) ? -ENOMEM : 0;
	if (!r)
		r = callsites__find_holders(w->calls, w->t, &fns);
	u64_map__free(&fns);
	for (uint32_t i = 0; i < m->nr_polls && !r; i++)
		if (!m->polls[i].inlined_only && m->polls[i].addr)
			r = add_poll_jobs(w, i, &jobs);
	if (jobs.nr)
		qsort(jobs.v, jobs.nr, sizeof(*jobs.v), cmp_job);
	call_site_ctx__init(&ctx, w->t, m, w->calls);
	for (uint32_t k = 0; k < jobs.nr && !r; k++) {
		const struct job *j = &jobs.v[k];
		struct poll_fn *p = &m->polls[j->poll];
		struct caller_exit *x = &p->caller_exits[j->site];
		const struct future *f = p->future >= 0 ? &m->futures[p->future] : NULL;
		struct continuation c;

		r = call_site_ctx__exit(
		    &ctx, &j->call, j->call.kind == CALLSITE_SLOT ? CALL_SLOT : CALL_DIRECT, x, &c);
		if (!r && x->usable)
			x->result = (uint8_t)result_at(p, f, &c);
	}
	if (!r)
		r = expand_tails(w, &ctx);
	call_site_ctx__free(&ctx);
	free(jobs.v);
	for (uint32_t i = 0; i < m->nr_polls && !r; i++)
		if (!m->polls[i].inlined_only && m->polls[i].addr)
			r = conclude(m, &m->polls[i]);
		else
			m->polls[i].caller_exits_why =
			    "inlined only: no function of its own is called";
	return r;
}

void caller_exits__free(struct walk *w)
{
	if (!w->calls)
		return;
	callsites__free(w->calls);
	free(w->calls);
	w->calls = NULL;
}
