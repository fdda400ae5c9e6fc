// SPDX-License-Identifier: GPL-2.0
/*
 * Emulated exit sites (exit_sites.h). For a `ret` R, the *tail* is the set of blocks
 * from which every path reaches R through instructions that neither store, call,
 * nor write a result register: R's own block (up to R), grown backwards through
 * predecessors that fall into it. The sites are the branches entering the tail from
 * outside: a `jmp` into it (always an exit), a `jcc` whose taken or fall-through
 * edge enters it (an exit when its condition says so). Every execution that reaches
 * R passes exactly one of them, and what the exit probe reads there (`__state` in
 * memory, rax/rdx) already holds its final value.
 */
#include "analyze/exit_sites.h"

#include <capstone/capstone.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(EXIT_KEEP_COUNT <= MODEL_EXIT_KEEP_MAX, "model.exits_kept is too small");

struct site {
	uint32_t insn;
	uint8_t cond;
	uint8_t state_src, state_reg;
	uint64_t state_value;
	uint64_t covers;
};

struct sites {
	struct site *v;
	uint32_t nr, cap;
};

static int sites_add(struct sites *s, const struct site *site)
{
	if (s->nr == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 16;
		struct site *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->nr++] = *site;
	return 0;
}

const char *exit_keep__describe(enum exit_keep k)
{
	switch (k) {
	case EXIT_KEEP_UNSAFE_TAIL:
		return "a store, call or result-register write between the last branch and the "
		       "ret";
	case EXIT_KEEP_FALLTHROUGH: return "reached by falling through from code that stores";
	case EXIT_KEEP_ENTRY: return "the entry block leads straight to it";
	case EXIT_KEEP_NOT_EMULATED: return "a branch into its tail is not emulated";
	case EXIT_KEEP_LOOP: return "its only branch site is inside a loop";
	case EXIT_KEEP_UNKNOWN: return "unresolved edges or an unknown stack pointer";
	case EXIT_KEEP_STATE: return "__state's final value cannot be told at a branch";
	case EXIT_KEEP_COUNT: break;
	}
	return "?";
}

int exit_sites__jcc_cond(const uint8_t *b, size_t len)
{
	size_t i = 0;

	/* segment overrides used as branch hints, bnd, rep: legal prefixes of a jcc */
	while (i < len && (b[i] == 0x2e || b[i] == 0x3e || b[i] == 0xf2 || b[i] == 0xf3 ||
			   b[i] == 0x26 || b[i] == 0x36 || b[i] == 0x64 || b[i] == 0x65))
		i++;
	if (i < len && b[i] >= 0x70 && b[i] <= 0x7f)
		return b[i] & 0xf;
	if (i + 1 < len && b[i] == 0x0f && b[i + 1] >= 0x80 && b[i + 1] <= 0x8f)
		return b[i + 1] & 0xf;
	return -1;
}

uint8_t exit_sites__plain_cond(const struct cfg *g, uint32_t i)
{
	const struct insn *in = cfg__insn(g, i);
	int cc = in->flow == INSN_FLOW_JCC ? exit_sites__jcc_cond(cfg__bytes(g, i), in->size) : -1;

	return cc < 0 ? EXIT_COND_ALWAYS : (uint8_t)cc;
}

struct work {
	const struct cfg *g;
	const struct flow *f;
	const struct exit_sites_opts *o;
	uint8_t *in;   /* per block: in the current tail */
	uint8_t *seen; /* scratch for on_cycle */
	uint32_t *stack, *tail;
	struct sites *out;
};

/* Instruction i stores state_size bytes to self's __state (the only store a tail may do). */
static bool is_state_store(const struct work *w, uint32_t i)
{
	const struct insn *in = cfg__insn(w->g, i);
	struct flow_state st;
	struct flow_val a;

	if (!w->o->has_state || in->id != X86_INS_MOV || in->nr_ops != 2 ||
	    in->ops[0].type != INSN_OP_MEM || in->ops[0].size != w->o->state_size)
		return false;
	flow__state_before(w->f, i, &st);
	return st.reached && flow__address(&st, &in->ops[0], &a) && a.kind == FLOW_ARG &&
	       a.arg == w->o->self_reg && a.off == (int64_t)w->o->state_offset;
}

/* Nothing the exit probe reads can change after the site: no store, no call, ... */
static bool tail_safe(const struct work *w, uint32_t i)
{
	const struct insn *in = cfg__insn(w->g, i);

	if (in->flow != INSN_FLOW_NONE || !in->regs_known || in->rep ||
	    (in->gpr_written & w->o->keep_regs))
		return false;
	switch (in->id) {
	case X86_INS_PUSH:
	case X86_INS_PUSHF:
	case X86_INS_PUSHFQ:
	case X86_INS_ENTER:
	case X86_INS_SYSCALL:
	case X86_INS_STOSB:
	case X86_INS_STOSW:
	case X86_INS_STOSD:
	case X86_INS_STOSQ:
	case X86_INS_MOVSB:
	case X86_INS_MOVSW:
	case X86_INS_MOVSQ: return false;
	default: break;
	}
	for (unsigned k = 0; k < in->nr_ops; k++)
		if (in->ops[k].type == INSN_OP_OTHER)
			return false;
	for (unsigned k = 0; k < in->nr_ops; k++)
		if (insn__may_store(in, k))
			return is_state_store(w, i);
	return true;
}

static bool block_safe(const struct work *w, uint32_t first, uint32_t end)
{
	for (uint32_t i = first; i < end; i++)
		if (!tail_safe(w, i))
			return false;
	return true;
}

/*
 * Where __state's final value is, for the path that enters the tail at block x and
 * runs to `ret` r: the last store to it on the way (a constant, or a register the
 * path has not changed since the site), else memory. false: it cannot be told.
 */
static bool state_source(const struct work *w, uint32_t x, uint32_t r, struct site *site)
{
	const struct cfg *g = w->g;
	uint16_t written = 0;

	site->state_src = EXIT_STATE_MEMORY;
	for (uint32_t steps = 0; steps <= g->nr_blocks && x != CFG_NONE; steps++) {
		const struct cfg_block *b = &g->blocks[x];

		for (uint32_t i = b->first; i <= b->last && i <= r; i++) {
			const struct insn *in = cfg__insn(g, i);

			if (i == r)
				return true;
			if (is_state_store(w, i)) {
				const struct insn_op *v = &in->ops[1];

				if (v->type == INSN_OP_IMM) {
					site->state_src = EXIT_STATE_CONST;
					site->state_value =
					    w->o->state_size >= 8
						? (uint64_t)v->value
						: (uint64_t)v->value &
						      ((1ull << (w->o->state_size * 8)) - 1);
				} else if (v->type == INSN_OP_REG && v->reg >= 0 &&
					   v->reg < INSN_NR_GPRS && !v->high_byte &&
					   !(written & (1u << v->reg))) {
					site->state_src = EXIT_STATE_REG;
					site->state_reg = (uint8_t)v->reg;
				} else {
					return false;
				}
			}
			written |= in->gpr_written;
		}
		x = b->succ[0];
	}
	return false;
}

/* Is block b on a cycle (reachable again from its own successors)? */
static bool on_cycle(const struct cfg *g, uint32_t b, uint8_t *seen, uint32_t *stack)
{
	uint32_t n = 0;

	memset(seen, 0, g->nr_blocks);
	stack[n++] = b;
	while (n) {
		const struct cfg_block *x = &g->blocks[stack[--n]];
		uint32_t next[2] = {x->succ[0], x->succ[1]};

		for (uint32_t k = 0; k < 2 + x->nr_table; k++) {
			uint32_t s = k < 2 ? next[k] : g->table_succ[x->table_first + k - 2];

			if (s == CFG_NONE || s >= g->nr_blocks)
				continue;
			if (s == b)
				return true;
			if (!seen[s]) {
				seen[s] = 1;
				stack[n++] = s;
			}
		}
	}
	return false;
}

/* Grow R's tail backwards; its blocks in w->tail[0..*nr). EXIT_KEEP_COUNT when fine. */
static enum exit_keep grow_tail(struct work *w, uint32_t r, uint32_t *nr)
{
	const struct cfg *g = w->g;
	uint32_t b = g->block_of[r], entry = g->block_of[0], n = 0, sp = 0;

	if (!block_safe(w, g->blocks[b].first, r))
		return EXIT_KEEP_UNSAFE_TAIL;
	w->in[b] = 1;
	w->tail[n++] = b;
	w->stack[sp++] = b;
	while (sp) {
		const struct cfg_block *x = &g->blocks[w->stack[--sp]];

		if (x == &g->blocks[entry])
			return EXIT_KEEP_ENTRY;
		if (x->unknown_preds)
			return EXIT_KEEP_UNKNOWN;
		for (uint32_t k = 0; k < x->nr_preds; k++) {
			uint32_t p = g->preds[x->pred_first + k];
			const struct cfg_block *pb = &g->blocks[p];
			const struct insn *last = cfg__insn(g, pb->last);

			if (w->in[p] || last->flow == INSN_FLOW_JMP || last->flow == INSN_FLOW_JCC)
				continue; /* inside, or a branch: a site (checked below) */
			if (last->flow != INSN_FLOW_NONE)
				return last->flow == INSN_FLOW_JMP_INDIRECT ? EXIT_KEEP_NOT_EMULATED
									    : EXIT_KEEP_FALLTHROUGH;
			/* falls through into the tail: it belongs to the tail, or nothing does */
			if (!block_safe(w, pb->first, pb->last + 1))
				return EXIT_KEEP_FALLTHROUGH;
			w->in[p] = 1;
			w->tail[n++] = p;
			w->stack[sp++] = p;
		}
	}
	*nr = n;
	return EXIT_KEEP_COUNT;
}

/* The branch of block p into the tail: its condition, checked; EXIT_KEEP_COUNT when fine. */
static enum exit_keep entry_site(struct work *w, uint32_t p, uint8_t *cond)
{
	const struct cfg *g = w->g;
	const struct cfg_block *pb = &g->blocks[p];
	const struct insn *last = cfg__insn(g, pb->last);
	struct flow_state st;
	bool taken, fall;
	int cc;

	if (!last->emulated || !last->probeable)
		return EXIT_KEEP_NOT_EMULATED;
	flow__state_before(w->f, pb->last, &st);
	if (!st.reached || !st.sp_known)
		return EXIT_KEEP_UNKNOWN;
	if (last->flow == INSN_FLOW_JMP) {
		*cond = EXIT_COND_ALWAYS;
		return EXIT_KEEP_COUNT;
	}
	taken = pb->succ[1] != CFG_NONE && w->in[pb->succ[1]];
	fall = pb->succ[0] != CFG_NONE && w->in[pb->succ[0]];
	cc = exit_sites__jcc_cond(cfg__bytes(g, pb->last), last->size);
	if (cc < 0 || (!taken && !fall))
		return EXIT_KEEP_UNKNOWN;
	if (taken && fall) {
		*cond = EXIT_COND_ALWAYS;
		return EXIT_KEEP_COUNT;
	}
	if (on_cycle(g, p, w->seen, w->stack))
		return EXIT_KEEP_LOOP;
	*cond = (uint8_t)(taken ? cc : cc ^ 1);
	return EXIT_KEEP_COUNT;
}

/* Another ret's site on the same instruction that reads __state differently? */
static bool conflicts(const struct sites *s, uint32_t upto, const struct site *n)
{
	for (uint32_t i = 0; i < upto; i++)
		if (s->v[i].insn == n->insn &&
		    (s->v[i].state_src != n->state_src || s->v[i].state_reg != n->state_reg ||
		     s->v[i].state_value != n->state_value))
			return true;
	return false;
}

/* Replace `ret` r by the sites entering its tail; EXIT_KEEP_COUNT when done. */
static enum exit_keep cover_ret(struct work *w, uint32_t r)
{
	const struct cfg *g = w->g;
	uint32_t nr = 0, first = w->out->nr;
	struct flow_state st;
	enum exit_keep why;

	memset(w->in, 0, g->nr_blocks);
	flow__state_before(w->f, r, &st);
	if (!st.reached || !st.sp_known || st.sp != 0)
		return EXIT_KEEP_UNKNOWN;
	why = grow_tail(w, r, &nr);
	for (uint32_t t = 0; why == EXIT_KEEP_COUNT && t < nr; t++) {
		const struct cfg_block *x = &g->blocks[w->tail[t]];

		for (uint32_t k = 0; why == EXIT_KEEP_COUNT && k < x->nr_preds; k++) {
			uint32_t p = g->preds[x->pred_first + k];
			struct site site = {.insn = g->blocks[p].last,
					    .covers = cfg__insn(g, r)->addr};

			if (w->in[p])
				continue;
			why = entry_site(w, p, &site.cond);
			if (why != EXIT_KEEP_COUNT)
				break;
			if (!state_source(w, w->tail[t], r, &site) ||
			    conflicts(w->out, first, &site)) {
				why = EXIT_KEEP_STATE;
				break;
			}
			if (sites_add(w->out, &site))
				return EXIT_KEEP_COUNT + 1; /* -ENOMEM */
		}
	}
	if (why != EXIT_KEEP_COUNT)
		w->out->nr = first; /* all or nothing */
	return why;
}

static int by_insn(const void *a, const void *b)
{
	const struct site *x = a, *y = b;

	return x->insn < y->insn ? -1 : x->insn > y->insn;
}

/* Sorted, one entry per instruction: a site that is an exit on both edges is always one. */
static void merge_sites(struct sites *s)
{
	uint32_t n = 0;

	if (!s->nr)
		return;
	qsort(s->v, s->nr, sizeof(*s->v), by_insn);
	for (uint32_t i = 0; i < s->nr; i++) {
		if (n && s->v[n - 1].insn == s->v[i].insn) {
			if (s->v[n - 1].cond != s->v[i].cond)
				s->v[n - 1].cond = EXIT_COND_ALWAYS;
			continue;
		}
		s->v[n++] = s->v[i];
	}
	s->nr = n;
}

static int to_exit_sites(const struct cfg *g, const struct flow *f, const struct sites *s,
			 struct exit_site **out, uint32_t *nr)
{
	*out = NULL;
	*nr = 0;
	if (!s->nr)
		return 0;
	*out = calloc(s->nr, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->nr; i++) {
		const struct insn *in = cfg__insn(g, s->v[i].insn);
		enum exit_kind kind = EXIT_BRANCH;
		struct flow_state st;

		for (uint32_t k = 0; k < g->nr_exits; k++)
			if (g->exits[k].insn == s->v[i].insn)
				kind = g->exits[k].kind == CFG_EXIT_RET ? EXIT_RET
				       : g->exits[k].kind == CFG_EXIT_TAIL_JMP
					   ? EXIT_TAIL_JMP
					   : EXIT_TAIL_JMP_INDIRECT;
		flow__state_before(f, s->v[i].insn, &st);
		(*out)[i] = (struct exit_site){
		    .addr = in->addr,
		    .kind = kind,
		    .target = kind == EXIT_TAIL_JMP ? in->target : 0,
		    .probeable = in->probeable,
		    .emulated = in->emulated,
		    /* plain exits (ret, tail jumps) run at the entry's rsp */
		    .sp_delta = kind == EXIT_BRANCH && st.sp_known ? (int32_t)st.sp : 0,
		    .cond = s->v[i].cond,
		    .covers = s->v[i].covers,
		    .state_src = s->v[i].state_src,
		    .state_reg = s->v[i].state_reg,
		    .state_value = s->v[i].state_value,
		};
	}
	*nr = s->nr;
	return 0;
}

int exit_sites__find(const struct cfg *g, const struct flow *f, const struct exit_sites_opts *o,
		     struct exit_site **out, uint32_t *nr, uint32_t *covered,
		     uint32_t kept[EXIT_KEEP_COUNT])
{
	struct sites s = {0};
	struct work w = {.g = g, .f = f, .o = o, .out = &s};
	int r = -ENOMEM;

	*out = NULL;
	*nr = 0;
	*covered = 0;
	if (!g->nr_blocks)
		return 0;
	w.in = calloc(g->nr_blocks, 1);
	w.seen = calloc(g->nr_blocks, 1);
	w.stack = calloc(g->nr_blocks, sizeof(*w.stack));
	w.tail = calloc(g->nr_blocks, sizeof(*w.tail));
	if (!w.in || !w.seen || !w.stack || !w.tail)
		goto out;
	for (uint32_t k = 0; k < g->nr_exits; k++) {
		const struct cfg_exit *x = &g->exits[k];
		enum exit_keep why = EXIT_KEEP_UNKNOWN;

		if (x->kind == CFG_EXIT_RET && f->converged)
			why = cover_ret(&w, x->insn);
		if (why == EXIT_KEEP_COUNT + 1)
			goto out;
		if (why == EXIT_KEEP_COUNT) {
			(*covered)++;
			continue;
		}
		if (x->kind == CFG_EXIT_RET && kept)
			kept[why]++;
		if (sites_add(&s, &(struct site){.insn = x->insn,
						 .cond = exit_sites__plain_cond(g, x->insn),
						 .covers = cfg__insn(g, x->insn)->addr}))
			goto out;
	}
	merge_sites(&s);
	r = to_exit_sites(g, f, &s, out, nr);
out:
	free(s.v);
	free(w.in);
	free(w.seen);
	free(w.stack);
	free(w.tail);
	return r;
}
