// SPDX-License-Identifier: GPL-2.0
/*
 * The continuation rule (continuation.h). The walk follows the one straight-line
 * path from the return address: the CFG says where other paths join it (a block
 * starts at every branch target, jump-table targets included), the caller says
 * whether code of other functions jumps there. Along the path a small copy
 * propagation follows the callee's rax and rdx into other registers (`mov ebp,
 * eax` keeps its low 4 bytes in rbp); any other write to a register forgets what it
 * held, and a call passed over forgets the registers the ABI lets a callee change.
 */
#include "analyze/continuation.h"

#include <capstone/capstone.h>
#include <string.h>

const char *continuation_why__describe(enum continuation_why w)
{
	switch (w) {
	case CONTINUATION_OK: return "usable";
	case CONTINUATION_NO_RETURN: return "nothing follows the call in its function";
	case CONTINUATION_JOIN:
		return "a branch from elsewhere lands between the return address and the first "
		       "emulated instruction";
	case CONTINUATION_UNKNOWN_PATHS:
		return "the caller has a jump table that could not be read: it may land there";
	case CONTINUATION_STACK:
		return "an instruction changes rsp before the first emulated instruction";
	case CONTINUATION_BRANCH:
		return "a ret, an indirect call or jump, or a branch the kernel single-steps "
		       "comes first";
	case CONTINUATION_STOP: return "a trap instruction (ud2, int3) comes first";
	case CONTINUATION_TOO_FAR:
		return "no emulated instruction within 8 instructions of the return address";
	case CONTINUATION_OPAQUE: return "an instruction whose registers are not known comes first";
	case CONTINUATION_TAIL:
		return "the caller returns at once: its own callers would have to be probed";
	case CONTINUATION_WHY_COUNT: break;
	}
	return "?";
}

struct holder {
	int8_t result; /* 0: the callee's rax, 1: its rdx, -1: neither */
	uint8_t bytes; /* how many low bytes of it the register holds */
};

static uint8_t min_u8(uint8_t a, uint8_t b)
{
	return a < b ? a : b;
}

/* A register-to-register copy (mov, movzx, movsx, movsxd): its low bytes carry over. */
static void step(struct holder h[INSN_NR_GPRS], const struct insn *in)
{
	const struct insn_op *dst = &in->ops[0], *src = &in->ops[1];
	struct holder copy = {.result = -1};
	bool is_copy = in->id == X86_INS_MOV || in->id == X86_INS_MOVZX ||
		       in->id == X86_INS_MOVSX || in->id == X86_INS_MOVSXD;

	if (is_copy && in->nr_ops == 2 && dst->type == INSN_OP_REG && src->type == INSN_OP_REG &&
	    dst->reg >= 0 && src->reg >= 0 && !dst->high_byte && !src->high_byte &&
	    h[src->reg].result >= 0) {
		copy = h[src->reg];
		copy.bytes = min_u8(copy.bytes, min_u8(src->reg_bytes, dst->reg_bytes));
	}
	for (int r = 0; r < INSN_NR_GPRS; r++)
		if (in->gpr_written & (1u << r))
			h[r] = (struct holder){.result = -1};
	if (copy.result >= 0)
		h[dst->reg] = copy;
}

/* Where result k is: its own register if that still holds all of it, else the one
 * holding the most of it. */
static void locate(const struct holder h[INSN_NR_GPRS], int k, int8_t *reg, uint8_t *bytes)
{
	int own = k == 0 ? DWARF_REG_RAX : DWARF_REG_RDX;

	*reg = -1;
	*bytes = 0;
	if (h[own].result == k && h[own].bytes == 8) {
		*reg = (int8_t)own;
		*bytes = 8;
		return;
	}
	for (int r = 0; r < INSN_NR_GPRS; r++)
		if (h[r].result == k && h[r].bytes > *bytes) {
			*reg = (int8_t)r;
			*bytes = h[r].bytes;
		}
}

/* The bytes an instruction frees from the stack when that is all it does to rsp:
 * `add rsp, N` (N > 0), `pop reg`; -1 for any other write of rsp. */
static int64_t sp_freed(const struct insn *in)
{
	const struct insn_op *a = &in->ops[0], *b = &in->ops[1];

	if (in->id == X86_INS_ADD && in->nr_ops == 2 && a->type == INSN_OP_REG &&
	    a->reg == DWARF_REG_RSP && a->reg_bytes == 8 && b->type == INSN_OP_IMM &&
	    b->value > 0 && b->value < (1 << 20))
		return b->value;
	if (in->id == X86_INS_POP && in->nr_ops == 1 && a->type == INSN_OP_REG &&
	    a->reg != DWARF_REG_RSP && a->reg >= 0 && a->reg_bytes == 8)
		return 8;
	return -1;
}

static bool may_store(const struct insn *in)
{
	if (in->rep)
		return true;
	for (unsigned k = 0; k < in->nr_ops; k++)
		if (insn__may_store(in, k))
			return true;
	return false;
}

/* A call returned: the System V ABI's caller-saved registers hold anything now
 * (rax, rdx, rcx, rsi, rdi, r8-r11); rbx, rbp, r12-r15 are as before it. */
static void clobber_caller_saved(struct holder h[INSN_NR_GPRS])
{
	static const int8_t saved[] = {3, 6, 12, 13, 14, 15}; /* DWARF: rbx rbp r12-r15 */

	for (int r = 0; r < INSN_NR_GPRS; r++) {
		bool keep = r == DWARF_REG_RSP;

		for (size_t k = 0; k < sizeof(saved); k++)
			keep |= saved[k] == r;
		if (!keep)
			h[r] = (struct holder){.result = -1};
	}
}

void continuation__find(const struct cfg *g, uint32_t call, continuation_entered_fn entered,
			void *ctx, struct continuation *c)
{
	continuation__find_across(g, call, entered, NULL, ctx, c);
}

void continuation__find_across(const struct cfg *g, uint32_t call, continuation_entered_fn entered,
			       continuation_cross_fn cross, void *ctx, struct continuation *c)
{
	struct holder h[INSN_NR_GPRS];

	memset(c, 0, sizeof(*c));
	c->reg[0] = c->reg[1] = -1;
	for (int r = 0; r < INSN_NR_GPRS; r++)
		h[r] = (struct holder){.result = -1};
	h[DWARF_REG_RAX] = (struct holder){0, 8};
	h[DWARF_REG_RDX] = (struct holder){1, 8};
	if (g->nr_unresolved_dispatch) {
		c->why = CONTINUATION_UNKNOWN_PATHS;
		return;
	}
	if (call + 1 < g->seq.nr) {
		const struct insn *ra = cfg__insn(g, call + 1);

		c->stepped_insn = call + 1;
		c->stepped_ok = ra->probeable && ra->flow != INSN_FLOW_STOP &&
				g->blocks[g->block_of[call + 1]].first != call + 1 &&
				!(entered && entered(ctx, ra->addr));
	}
	for (uint32_t d = 0; d < CONTINUATION_MAX_WALK; d++) {
		uint32_t i = call + 1 + d;
		const struct insn *in;

		if (i >= g->seq.nr) {
			c->why = CONTINUATION_NO_RETURN;
			return;
		}
		in = cfg__insn(g, i);
		/* a block starts at every branch target inside the function */
		if (g->blocks[g->block_of[i]].first == i || (entered && entered(ctx, in->addr))) {
			c->why = CONTINUATION_JOIN;
			return;
		}
		if (in->emulated && in->probeable) {
			c->why = CONTINUATION_OK;
			c->insn = i;
			c->distance = (uint8_t)d;
			locate(h, 0, &c->reg[0], &c->bytes[0]);
			locate(h, 1, &c->reg[1], &c->bytes[1]);
			return;
		}
		if (in->flow == INSN_FLOW_CALL && cross && cross(ctx, in)) {
			clobber_caller_saved(h);
			c->stores = true; /* the callee may have stored anywhere */
			c->calls++;
			continue;
		}
		if (!in->regs_known) {
			c->why = CONTINUATION_OPAQUE;
			return;
		}
		if (in->flow == INSN_FLOW_STOP) {
			c->why = CONTINUATION_STOP;
			return;
		}
		if (in->flow == INSN_FLOW_RET && !in->rep && in->nr_ops == 0) {
			c->why = CONTINUATION_TAIL; /* `ret`, not `ret N` */
			c->insn = i;
			c->distance = (uint8_t)d;
			return;
		}
		if (in->flow != INSN_FLOW_NONE) {
			c->why = CONTINUATION_BRANCH;
			return;
		}
		if (in->gpr_written & (1u << DWARF_REG_RSP)) {
			int64_t n = sp_freed(in);

			if (n < 0) {
				c->why = CONTINUATION_STACK;
				return;
			}
			c->sp_adjust += (uint32_t)n;
		}
		c->stores |= may_store(in);
		step(h, in);
	}
	c->why = CONTINUATION_TOO_FAR;
}
