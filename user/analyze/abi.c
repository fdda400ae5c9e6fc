// SPDX-License-Identifier: GPL-2.0
/*
 * The calling convention of a poll function, read off its code (abi.h). Three
 * kinds of evidence, each from the value dataflow (flow.c) at every reachable
 * instruction:
 *  - at each `ret`: rax holds the incoming rdi (a hidden return pointer: the
 *    System V convention for a value returned in memory), or a constant (a value
 *    returned in registers); anything else says nothing;
 *  - for a compiler future: which incoming register its `__state` field is read or
 *    written through (`movzx eax, byte ptr [rdi + 0x110]`): that register is self;
 *  - constants written where the Poll<T> discriminant lives (rax/rdx at a `ret`,
 *    or the hidden buffer) against the variant values DWARF gives.
 */
#include "analyze/abi.h"

#include <string.h>

#include <capstone/capstone.h>

static bool is_arg(struct flow_val v, uint8_t reg, int64_t off)
{
	return v.kind == FLOW_ARG && v.arg == reg && v.off == off;
}

/* Does a constant written as the discriminant (size bytes) fit DWARF's layout? */
static bool discr_fits(const struct poll_layout *l, uint64_t v)
{
	if (l->discr_size < 8)
		v &= (1ull << (l->discr_size * 8)) - 1;
	if (l->pending_has_value && v == l->pending_value)
		return true;
	if (l->ready_has_value && v == l->ready_value)
		return true;
	/* the variant without a value is everything else */
	return l->pending_has_value != l->ready_has_value;
}

/* What rax (and the discriminant) hold at one `ret` in state st. */
static void ret_state(const struct flow_state *st, const struct poll_layout *l, uint32_t *hidden,
		      uint32_t *direct, uint32_t *unset, uint32_t *match, uint32_t *mismatch)
{
	struct flow_val rax = st->reg[DWARF_REG_RAX];

	/* rax untouched since entry: this path computes no result (its callers never
	 * read one, so the optimizer dropped it) */
	if (is_arg(rax, DWARF_REG_RAX, 0)) {
		(*unset)++;
		return;
	}
	if (is_arg(rax, DWARF_REG_RDI, 0)) {
		(*hidden)++;
		return;
	}
	if (rax.kind != FLOW_CONST)
		return;
	(*direct)++;
	if (!l->known || !l->discr_size || l->discr_offset % 8 + l->discr_size > 8 ||
	    l->discr_offset >= 16)
		return;
	struct flow_val reg = l->discr_offset < 8 ? rax : st->reg[DWARF_REG_RDX];
	if (reg.kind != FLOW_CONST)
		return;
	if (discr_fits(l, (uint64_t)reg.off >> (l->discr_offset % 8 * 8)))
		(*match)++;
	else
		(*mismatch)++;
}

static void step_to(const struct cfg *g, struct flow_state *st, uint32_t from, uint32_t to)
{
	for (uint32_t k = from; k < to && st->reached; k++)
		flow__step(st, cfg__insn(g, k));
}

/*
 * A `ret` votes once: hidden pointer, direct value, or nothing. Where paths join
 * before it (debug builds load rax from one stack slot that each path filled),
 * each predecessor's path is looked at apart: a constant on any of them is enough.
 */
static void at_ret(const struct cfg *g, const struct flow *f, uint32_t ret_insn,
		   const struct flow_state *joined, const struct poll_layout *l,
		   struct poll_abi *ev)
{
	uint32_t b = g->block_of[ret_insn];
	const struct cfg_block *blk = &g->blocks[b];
	uint32_t hidden = 0, direct = 0, unset = 0, match = 0, mismatch = 0;
	struct flow_state st;

	ev->rets++;
	ret_state(joined, l, &hidden, &direct, &unset, &match, &mismatch);
	if (!hidden && !direct && !unset && !blk->unknown_preds) {
		for (uint32_t q = 0; q < blk->nr_preds; q++) {
			uint32_t p = g->preds[blk->pred_first + q];

			st = f->in[p];
			step_to(g, &st, g->blocks[p].first, g->blocks[p].last + 1);
			step_to(g, &st, blk->first, ret_insn);
			if (st.reached)
				ret_state(&st, l, &hidden, &direct, &unset, &match, &mismatch);
		}
	}
	ev->rets_hidden += hidden > 0;
	ev->rets_direct += direct > 0;
	ev->rets_unset += unset > 0;
	ev->discr_match += match;
	ev->discr_mismatch += mismatch;
}

/* A constant stored to the hidden buffer's discriminant: [incoming rdi + offset]. */
static void at_store(const struct flow_state *st, const struct insn *in,
		     const struct poll_layout *l, uint32_t *match, uint32_t *mismatch)
{
	struct flow_val a;

	if (in->id != X86_INS_MOV || in->nr_ops != 2 || in->ops[1].type != INSN_OP_IMM ||
	    !l->known || !l->discr_size || in->ops[0].size != l->discr_size ||
	    !flow__address(st, &in->ops[0], &a) ||
	    !is_arg(a, DWARF_REG_RDI, (int64_t)l->discr_offset))
		return;
	if (discr_fits(l, (uint64_t)in->ops[1].value))
		(*match)++;
	else
		(*mismatch)++;
}

/* The incoming register stored to the slot DWARF names as self's (debug builds). */
static void slot_store(const struct flow_state *st, const struct insn *in, struct poll_abi *ev)
{
	const struct insn_op *m = &in->ops[0];
	int src;

	if (ev->dwarf_slot_reg < 0 || in->id != X86_INS_MOV || in->nr_ops != 2 ||
	    m->type != INSN_OP_MEM || m->size != 8 || m->base != ev->dwarf_slot_reg ||
	    m->index >= 0 || m->segment || m->value != ev->dwarf_slot_off)
		return;
	src = insn__gpr64(&in->ops[1]);
	if (src < 0)
		return;
	if (is_arg(st->reg[src], DWARF_REG_RDI, 0))
		ev->slot_via[0]++;
	else if (is_arg(st->reg[src], DWARF_REG_RSI, 0))
		ev->slot_via[1]++;
}

static void state_access(const struct flow_state *st, const struct insn *in, uint64_t offset,
			 uint32_t size, struct poll_abi *ev)
{
	for (uint8_t k = 0; k < in->nr_ops; k++) {
		const struct insn_op *op = &in->ops[k];
		struct flow_val a;

		if (op->type != INSN_OP_MEM || op->size != size || !flow__address(st, op, &a))
			continue;
		if (is_arg(a, DWARF_REG_RDI, (int64_t)offset))
			ev->state_via[0]++;
		else if (is_arg(a, DWARF_REG_RSI, (int64_t)offset))
			ev->state_via[1]++;
	}
}

void abi__read(const struct cfg *g, const struct flow *f, bool has_state, uint64_t state_offset,
	       uint32_t state_size, const struct poll_layout *layout, struct poll_abi *ev)
{
	uint32_t mem_match = 0, mem_mismatch = 0;
	struct flow_state st;

	/* the code's fields only: rule_ret and dwarf_self come from DWARF */
	ev->code_ret = RET_CONV_UNKNOWN;
	ev->code_self = -1;
	ev->rets = ev->rets_hidden = ev->rets_direct = ev->rets_unset = 0;
	ev->state_via[0] = ev->state_via[1] = 0;
	ev->discr_match = ev->discr_mismatch = 0;
	ev->slot_via[0] = ev->slot_via[1] = 0;
	if (!f->converged)
		return;
	for (uint32_t k = 0; k < g->nr_rpo; k++) {
		const struct cfg_block *b = &g->blocks[g->rpo[k]];

		st = f->in[g->rpo[k]];
		for (uint32_t i = b->first; i <= b->last && st.reached; i++) {
			const struct insn *in = cfg__insn(g, i);

			if (has_state)
				state_access(&st, in, state_offset, state_size, ev);
			at_store(&st, in, layout, &mem_match, &mem_mismatch);
			slot_store(&st, in, ev);
			if (in->flow == INSN_FLOW_RET)
				at_ret(g, f, i, &st, layout, ev);
			flow__step(&st, in);
		}
	}
	if (ev->rets_hidden && !ev->rets_direct)
		ev->code_ret = RET_CONV_MEMORY;
	else if (ev->rets_direct && !ev->rets_hidden)
		ev->code_ret = RET_CONV_REGISTERS;
	if (ev->code_ret == RET_CONV_MEMORY) {
		/* the discriminant went to memory, not to rax */
		ev->discr_match = mem_match;
		ev->discr_mismatch = mem_mismatch;
	}
	uint32_t via_rdi = ev->state_via[0] + ev->slot_via[0];
	uint32_t via_rsi = ev->state_via[1] + ev->slot_via[1];

	(void)has_state;
	if (via_rdi && !via_rsi)
		ev->code_self = DWARF_REG_RDI;
	else if (via_rsi && !via_rdi)
		ev->code_self = DWARF_REG_RSI;
	/* self is in rsi exactly when rdi carries a hidden return pointer */
	if (ev->code_self >= 0 && ev->code_ret == RET_CONV_UNKNOWN)
		ev->code_ret =
		    ev->code_self == DWARF_REG_RSI ? RET_CONV_MEMORY : RET_CONV_REGISTERS;
	else if (ev->code_self < 0 && ev->code_ret != RET_CONV_UNKNOWN && !(via_rdi && via_rsi))
		ev->code_self = ev->code_ret == RET_CONV_MEMORY ? DWARF_REG_RSI : DWARF_REG_RDI;
	if (ev->code_self >= 0 &&
	    (ev->code_ret == RET_CONV_MEMORY) != (ev->code_self == DWARF_REG_RSI)) {
		ev->code_ret = RET_CONV_UNKNOWN; /* the evidence contradicts itself */
		ev->code_self = -1;
	}
}
