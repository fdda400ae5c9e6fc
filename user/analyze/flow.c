// SPDX-License-Identifier: GPL-2.0
/*
 * The value dataflow of flow.h. The transfer function models the instructions
 * compilers use to move arguments and stack addresses around (mov, lea, push,
 * pop, add/sub of constants, xor of a register with itself); anything else makes
 * what it writes unknown. Stack slots are tracked by their offset from rsp at
 * entry, 8 bytes each; a store that may overlap one kills it.
 *
 * Frame addresses that leave our sight ("escape") limit what stays known across
 * calls and stores through unknown pointers. An address handed out exactly (a call
 * argument, a value stored to memory, a push) is remembered; then only a slot
 * containing that address is assumed writable by others: compiled Rust keeps
 * each local in its own stack object, and a pointer to one object gives no access
 * to another (it would be undefined behaviour). A frame address we cannot follow
 * (arithmetic with an unknown value) makes every slot writable by others.
 */
#include "analyze/flow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <capstone/capstone.h>

#define FLOW_MAX_SP_ABS (1 << 24) /* keeps offsets we report within int32_t */
#define FLOW_MAX_ROUNDS 64	  /* passes over the blocks before giving up */

bool flow__same(struct flow_val a, struct flow_val b)
{
	if (a.kind != b.kind)
		return false;
	switch (a.kind) {
	case FLOW_UNKNOWN: return true;
	case FLOW_ARG: return a.arg == b.arg && a.off == b.off;
	default: return a.off == b.off;
	}
}

static const struct flow_val unknown = {.kind = FLOW_UNKNOWN};

static bool frame_off(const struct flow_state *st, int reg, int64_t *off)
{
	if (reg == DWARF_REG_RSP) {
		if (!st->sp_known)
			return false;
		*off = st->sp;
		return true;
	}
	if (reg >= 0 && reg < INSN_NR_GPRS && st->reg[reg].kind == FLOW_FRAME) {
		*off = st->reg[reg].off;
		return true;
	}
	return false;
}

static bool is_frame(const struct flow_state *st, int reg)
{
	int64_t off;

	return reg == DWARF_REG_RSP || frame_off(st, reg, &off);
}

enum addr_class { ADDR_STACK_EXACT, ADDR_STACK_UNKNOWN, ADDR_OTHER };

static enum addr_class classify_addr(const struct flow_state *st, const struct insn_op *m,
				     int64_t *off)
{
	int64_t base_off;

	if (m->segment)
		return ADDR_OTHER; /* thread-local */
	if (m->index >= 0 && is_frame(st, m->index))
		return ADDR_STACK_UNKNOWN;
	if (m->base >= 0 && m->base < INSN_NR_GPRS && is_frame(st, m->base)) {
		if (!frame_off(st, m->base, &base_off) || m->index >= 0)
			return ADDR_STACK_UNKNOWN;
		*off = base_off + m->value;
		return ADDR_STACK_EXACT;
	}
	return ADDR_OTHER;
}

static int find_slot(const struct flow_state *st, int64_t off)
{
	for (uint8_t i = 0; i < st->nr_slots; i++)
		if (st->slot[i].off == off)
			return i;
	return -1;
}

static void remove_slot(struct flow_state *st, uint8_t i)
{
	memmove(&st->slot[i], &st->slot[i + 1],
		(size_t)(st->nr_slots - i - 1) * sizeof(st->slot[0]));
	st->nr_slots--;
}

static void kill_slots(struct flow_state *st, int64_t off, int64_t len)
{
	uint8_t i = 0;

	while (i < st->nr_slots) {
		if (st->slot[i].off < off + len && off < st->slot[i].off + 8)
			remove_slot(st, i);
		else
			i++;
	}
}

/* Slots stay sorted by offset: states then compare with memcmp. */
static void set_slot(struct flow_state *st, int64_t off, struct flow_val v)
{
	uint8_t i = 0;

	if (off < -FLOW_MAX_SP_ABS * 2 || off > FLOW_MAX_SP_ABS * 2)
		return;
	kill_slots(st, off, 8);
	if (v.kind == FLOW_UNKNOWN || st->nr_slots == FLOW_MAX_SLOTS)
		return;
	while (i < st->nr_slots && st->slot[i].off < off)
		i++;
	memmove(&st->slot[i + 1], &st->slot[i], (size_t)(st->nr_slots - i) * sizeof(st->slot[0]));
	st->slot[i] = (struct flow_slot){.off = off, .v = v};
	st->nr_slots++;
}

static void escape_at(struct flow_state *st, int64_t off)
{
	for (uint8_t i = 0; i < st->nr_escaped; i++)
		if (st->escaped[i] == off)
			return;
	if (st->nr_escaped == FLOW_MAX_ESCAPED) {
		st->escaped_anywhere = true;
		return;
	}
	st->escaped[st->nr_escaped++] = off;
}

/* A register's value leaves our sight exactly (stored, pushed, passed). */
static void escape_reg(struct flow_state *st, int reg)
{
	int64_t off;

	if (frame_off(st, reg, &off))
		escape_at(st, off);
	else if (reg == DWARF_REG_RSP)
		st->escaped_anywhere = true;
}

/* Someone else may now write through the frame addresses that escaped. */
static void others_may_write(struct flow_state *st)
{
	uint8_t i = 0;

	if (st->escaped_anywhere) {
		st->nr_slots = 0;
		return;
	}
	while (i < st->nr_slots) {
		bool hit = false;

		for (uint8_t k = 0; k < st->nr_escaped && !hit; k++)
			hit = st->escaped[k] >= st->slot[i].off &&
			      st->escaped[k] < st->slot[i].off + 8;
		if (hit)
			remove_slot(st, i);
		else
			i++;
	}
}

static void store_to(struct flow_state *st, const struct insn_op *m, int64_t len)
{
	int64_t off;

	switch (classify_addr(st, m, &off)) {
	case ADDR_STACK_EXACT: kill_slots(st, off, len); break;
	case ADDR_STACK_UNKNOWN: st->nr_slots = 0; break;
	case ADDR_OTHER: others_may_write(st); break; /* only an escaped address reaches us */
	}
}

static struct flow_val reg_val(const struct flow_state *st, int reg)
{
	if (reg == DWARF_REG_RSP)
		return st->sp_known ? (struct flow_val){.kind = FLOW_FRAME, .off = st->sp}
				    : unknown;
	return reg >= 0 && reg < INSN_NR_GPRS ? st->reg[reg] : unknown;
}

static struct flow_val add_const(struct flow_val v, int64_t k)
{
	if (v.kind == FLOW_UNKNOWN)
		return v;
	v.off += k;
	if (v.kind == FLOW_FRAME && (v.off < -FLOW_MAX_SP_ABS || v.off > FLOW_MAX_SP_ABS))
		return unknown;
	return v;
}

/* The outcome of one modelled instruction, applied after the generic clobbers. */
struct effect {
	int dst; /* register given a value, -1 none */
	struct flow_val val;
	bool sp_set; /* rsp modelled: new sp in sp_val (sp_val_known) */
	bool sp_val_known;
	int64_t sp_val;
};

/* 1. a frame address read by an instruction we do not follow escapes anywhere */
static void escapes_of(struct flow_state *st, const struct insn *in)
{
	const struct insn_op *op0 = &in->ops[0], *op1 = &in->ops[1];
	bool modelled = false;

	switch (in->id) {
	case X86_INS_MOV:
		if (insn__gpr64(op0) >= 0 && insn__gpr64(op1) >= 0)
			modelled = true;
		else if (op0->type == INSN_OP_MEM && insn__gpr64(op1) >= 0) {
			escape_reg(st, insn__gpr64(op1)); /* the address is now in memory */
			modelled = true;
		}
		break;
	case X86_INS_LEA:
	case X86_INS_CMP:
	case X86_INS_TEST: modelled = true; break;
	case X86_INS_ADD:
	case X86_INS_SUB: modelled = op1->type == INSN_OP_IMM && insn__gpr64(op0) >= 0; break;
	case X86_INS_PUSH:
		if (insn__gpr64(op0) >= 0) {
			escape_reg(st, insn__gpr64(op0));
			modelled = true;
		}
		break;
	default: break;
	}
	if (in->flow == INSN_FLOW_CALL) {
		/* arguments in registers: the callee gets those addresses */
		static const int args[] = {
		    DWARF_REG_RDI, DWARF_REG_RSI, DWARF_REG_RDX, DWARF_REG_RCX, 8, 9};

		for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++)
			if (st->reg[args[i]].kind == FLOW_FRAME)
				escape_at(st, st->reg[args[i]].off);
	}
	for (uint8_t i = 0; i < in->nr_ops && !modelled; i++) {
		const struct insn_op *op = &in->ops[i];

		if (op->type == INSN_OP_REG && (op->access & CS_AC_READ || !op->access) &&
		    op->reg >= 0 && is_frame(st, op->reg))
			st->escaped_anywhere = true;
	}
}

/* 2. stores through explicit memory operands */
static void stores_of(struct flow_state *st, const struct insn *in)
{
	if (in->rep) {
		for (uint8_t i = 0; i < in->nr_ops; i++)
			if (insn__may_store(in, i))
				st->nr_slots = 0; /* rep stos/movs: length unknown */
		return;
	}
	if (in->id == X86_INS_PUSH || in->id == X86_INS_POP)
		return; /* their stack effect is modelled below */
	for (uint8_t i = 0; i < in->nr_ops; i++)
		if (insn__may_store(in, i))
			store_to(st, &in->ops[i], in->ops[i].size ? in->ops[i].size : 8);
}

static void model_push_pop(struct flow_state *st, const struct insn *in, struct effect *e)
{
	const struct insn_op *op0 = &in->ops[0];
	int64_t len = in->opsize ? 2 : 8;

	if (!st->sp_known) {
		if (in->id == X86_INS_PUSH || in->id == X86_INS_PUSHF || in->id == X86_INS_PUSHFQ)
			st->nr_slots = 0; /* a store somewhere on the stack */
		e->sp_set = true;	  /* stays unknown */
		return;
	}
	if (in->id == X86_INS_PUSH || in->id == X86_INS_PUSHF || in->id == X86_INS_PUSHFQ) {
		int src = in->id == X86_INS_PUSH ? insn__gpr64(op0) : -1;
		struct flow_val v = unknown;

		if (src >= 0)
			v = reg_val(st, src);
		else if (in->id == X86_INS_PUSH && op0->type == INSN_OP_IMM && len == 8)
			v = (struct flow_val){.kind = FLOW_CONST, .off = op0->value};
		st->sp -= len;
		kill_slots(st, st->sp, len);
		if (len == 8 && v.kind != FLOW_FRAME)
			set_slot(st, st->sp, v);
		e->sp_set = e->sp_val_known = true;
		e->sp_val = st->sp;
		return;
	}
	/* pop */
	int dst = in->id == X86_INS_POP ? insn__gpr64(op0) : -1;
	int s = find_slot(st, st->sp);

	if (dst >= 0 && dst != DWARF_REG_RSP) {
		e->dst = dst;
		e->val = s >= 0 && len == 8 ? st->slot[s].v : unknown;
	} else if (in->id == X86_INS_POP && op0->type == INSN_OP_MEM) {
		st->nr_slots = 0;
	}
	e->sp_set = true;
	e->sp_val_known = dst != DWARF_REG_RSP;
	e->sp_val = st->sp + len;
}

static void model_add_sub(struct flow_state *st, const struct insn *in, struct effect *e)
{
	const struct insn_op *op0 = &in->ops[0], *op1 = &in->ops[1];
	int dst = insn__gpr64(op0);
	int64_t imm = op1->type == INSN_OP_IMM ? op1->value : 0;

	if (op1->type != INSN_OP_IMM || dst < 0)
		return;
	if (in->id == X86_INS_SUB)
		imm = -imm;
	if (dst == DWARF_REG_RSP) {
		e->sp_set = true;
		e->sp_val_known = st->sp_known;
		e->sp_val = st->sp + imm;
	} else {
		e->dst = dst;
		e->val = add_const(st->reg[dst], imm);
	}
}

static void model_lea(struct flow_state *st, const struct insn *in, struct effect *e)
{
	const struct insn_op *op0 = &in->ops[0], *m = &in->ops[1];
	int dst = insn__gpr64(op0);
	struct flow_val v;

	if (dst < 0 || m->index >= 0 || m->other_base || m->segment || m->base < 0 ||
	    m->base >= INSN_NR_GPRS) {
		if ((m->base >= 0 && m->base < INSN_NR_GPRS && is_frame(st, m->base)) ||
		    (m->index >= 0 && is_frame(st, m->index)))
			st->escaped_anywhere = true; /* a stack address we do not follow */
		return;
	}
	v = add_const(reg_val(st, m->base), m->value);
	if (dst == DWARF_REG_RSP) {
		e->sp_set = true;
		e->sp_val_known = v.kind == FLOW_FRAME;
		e->sp_val = v.off;
	} else {
		e->dst = dst;
		e->val = v;
	}
}

static void model_mov(struct flow_state *st, const struct insn *in, struct effect *e)
{
	const struct insn_op *op0 = &in->ops[0], *op1 = &in->ops[1];
	int dst = insn__gpr64(op0), src = insn__gpr64(op1);
	int64_t off;

	if (dst >= 0 && src >= 0) {
		struct flow_val v = reg_val(st, src);

		if (dst == DWARF_REG_RSP) {
			e->sp_set = true;
			e->sp_val_known = v.kind == FLOW_FRAME;
			e->sp_val = v.off;
		} else {
			e->dst = dst;
			e->val = v;
		}
	} else if (op0->type == INSN_OP_REG && op0->reg >= 0 && op0->reg != DWARF_REG_RSP &&
		   op1->type == INSN_OP_IMM && (op0->reg_bytes == 8 || op0->reg_bytes == 4)) {
		e->dst = op0->reg; /* a 32-bit write zero-extends */
		e->val = (struct flow_val){
		    .kind = FLOW_CONST,
		    .off = op0->reg_bytes == 4 ? (int64_t)(uint32_t)op1->value : op1->value};
	} else if (dst >= 0 && dst != DWARF_REG_RSP && op1->type == INSN_OP_MEM && op1->size == 8) {
		int s;

		e->dst = dst;
		e->val = classify_addr(st, op1, &off) == ADDR_STACK_EXACT &&
				 (s = find_slot(st, off)) >= 0
			     ? st->slot[s].v
			     : unknown;
	} else if (op0->type == INSN_OP_MEM && op0->size == 8 &&
		   classify_addr(st, op0, &off) == ADDR_STACK_EXACT) {
		/* after stores_of() killed what it overwrote */
		if (src >= 0 && reg_val(st, src).kind != FLOW_FRAME)
			set_slot(st, off, reg_val(st, src));
		else if (op1->type == INSN_OP_IMM)
			set_slot(st, off, (struct flow_val){.kind = FLOW_CONST, .off = op1->value});
	}
}

void flow__step(struct flow_state *st, const struct insn *in)
{
	const struct insn_op *op0 = &in->ops[0], *op1 = &in->ops[1];
	struct effect e = {.dst = -1};

	if (!st->reached)
		return;
	escapes_of(st, in);
	stores_of(st, in);
	switch (in->id) {
	case X86_INS_PUSH:
	case X86_INS_PUSHF:
	case X86_INS_PUSHFQ:
	case X86_INS_POP:
	case X86_INS_POPF:
	case X86_INS_POPFQ: model_push_pop(st, in, &e); break;
	case X86_INS_ADD:
	case X86_INS_SUB: model_add_sub(st, in, &e); break;
	case X86_INS_LEA: model_lea(st, in, &e); break;
	case X86_INS_MOV: model_mov(st, in, &e); break;
	case X86_INS_XOR:
		if (op0->type == INSN_OP_REG && op1->type == INSN_OP_REG && op0->reg >= 0 &&
		    op0->reg == op1->reg && op0->reg != DWARF_REG_RSP &&
		    (op0->reg_bytes == 4 || op0->reg_bytes == 8)) {
			e.dst = op0->reg;
			e.val = (struct flow_val){.kind = FLOW_CONST, .off = 0};
		}
		break;
	default: break;
	}

	/* every register written loses its value ... */
	for (int r = 0; r < INSN_NR_GPRS; r++) {
		if (!(in->gpr_written & (1u << r)))
			continue;
		if (r == DWARF_REG_RSP) {
			/* a call pushes and its callee's ret pops: rsp is back */
			if (!e.sp_set && in->flow != INSN_FLOW_CALL)
				st->sp_known = false;
		} else {
			st->reg[r] = unknown;
		}
	}
	if (in->flow == INSN_FLOW_CALL) {
		/* the callee clobbers the caller-saved registers and may write what escaped */
		static const int clobbered[] = {0, 1, 2, 4, 5, 8, 9, 10, 11};

		for (size_t i = 0; i < sizeof(clobbered) / sizeof(clobbered[0]); i++)
			st->reg[clobbered[i]] = unknown;
		others_may_write(st);
	}
	/* ... unless the instruction was one we model */
	if (e.dst >= 0 && e.dst != DWARF_REG_RSP)
		st->reg[e.dst] = e.val;
	if (e.sp_set) {
		st->sp_known =
		    e.sp_val_known && e.sp_val >= -FLOW_MAX_SP_ABS && e.sp_val <= FLOW_MAX_SP_ABS;
		st->sp = st->sp_known ? e.sp_val : 0;
	}
	if (!st->sp_known)
		st->sp = 0;
}

static void entry_state(struct flow_state *st)
{
	memset(st, 0, sizeof(*st));
	st->reached = true;
	st->sp_known = true;
	for (int r = 0; r < INSN_NR_GPRS; r++)
		if (r != DWARF_REG_RSP)
			st->reg[r] = flow_arg((uint8_t)r, 0);
}

static void unknown_state(struct flow_state *st)
{
	memset(st, 0, sizeof(*st));
	st->reached = true;
	st->escaped_anywhere = true;
}

/* dst = dst meet src (what holds on both paths). */
static void meet(struct flow_state *dst, const struct flow_state *src)
{
	struct flow_state out;
	uint8_t i = 0, j = 0;

	if (!src->reached)
		return;
	if (!dst->reached) {
		*dst = *src;
		return;
	}
	memset(&out, 0, sizeof(out));
	out.reached = true;
	out.sp_known = dst->sp_known && src->sp_known && dst->sp == src->sp;
	out.sp = out.sp_known ? dst->sp : 0;
	for (int r = 0; r < INSN_NR_GPRS; r++)
		out.reg[r] = flow__same(dst->reg[r], src->reg[r]) ? dst->reg[r] : unknown;
	while (i < dst->nr_slots && j < src->nr_slots) {
		if (dst->slot[i].off < src->slot[j].off) {
			i++;
		} else if (dst->slot[i].off > src->slot[j].off) {
			j++;
		} else {
			if (flow__same(dst->slot[i].v, src->slot[j].v))
				out.slot[out.nr_slots++] = dst->slot[i];
			i++;
			j++;
		}
	}
	out.escaped_anywhere = dst->escaped_anywhere || src->escaped_anywhere;
	for (uint8_t k = 0; k < dst->nr_escaped; k++)
		escape_at(&out, dst->escaped[k]);
	for (uint8_t k = 0; k < src->nr_escaped; k++)
		escape_at(&out, src->escaped[k]);
	/* canonical: unused entries zero, escaped addresses sorted */
	for (uint8_t a = 1; a < out.nr_escaped; a++)
		for (uint8_t b = a; b > 0 && out.escaped[b - 1] > out.escaped[b]; b--) {
			int64_t t = out.escaped[b];
			out.escaped[b] = out.escaped[b - 1];
			out.escaped[b - 1] = t;
		}
	*dst = out;
}

static void block_out(const struct cfg *g, const struct flow_state *in, uint32_t b,
		      struct flow_state *out)
{
	*out = *in;
	for (uint32_t i = g->blocks[b].first; i <= g->blocks[b].last; i++)
		flow__step(out, &g->seq.insns[i]);
}

static bool val_equal(struct flow_val a, struct flow_val b)
{
	return flow__same(a, b);
}

/* Field by field: struct padding must not make equal states differ. */
static bool state_equal(const struct flow_state *a, const struct flow_state *b)
{
	if (a->reached != b->reached || a->sp_known != b->sp_known || a->sp != b->sp ||
	    a->nr_slots != b->nr_slots || a->nr_escaped != b->nr_escaped ||
	    a->escaped_anywhere != b->escaped_anywhere)
		return false;
	for (int r = 0; r < INSN_NR_GPRS; r++)
		if (!val_equal(a->reg[r], b->reg[r]))
			return false;
	for (uint8_t i = 0; i < a->nr_slots; i++)
		if (a->slot[i].off != b->slot[i].off || !val_equal(a->slot[i].v, b->slot[i].v))
			return false;
	for (uint8_t i = 0; i < a->nr_escaped; i++)
		if (a->escaped[i] != b->escaped[i])
			return false;
	return true;
}

int flow__run(struct flow *f, const struct cfg *g)
{
	struct flow_state *out, next;
	bool changed = true, *visited;

	memset(f, 0, sizeof(*f));
	f->g = g;
	f->in = calloc(g->nr_blocks ? g->nr_blocks : 1, sizeof(*f->in));
	out = calloc(g->nr_blocks ? g->nr_blocks : 1, sizeof(*out));
	visited = calloc(g->nr_blocks ? g->nr_blocks : 1, sizeof(*visited));
	if (!f->in || !out || !visited) {
		free(out);
		free(visited);
		flow__free(f);
		return -ENOMEM;
	}
	while (changed && f->iterations < FLOW_MAX_ROUNDS) {
		changed = false;
		f->iterations++;
		for (uint32_t k = 0; k < g->nr_rpo; k++) {
			uint32_t b = g->rpo[k];
			const struct cfg_block *blk = &g->blocks[b];

			/* the block's input: its entries, from its predecessors' outputs */
			memset(&next, 0, sizeof(next));
			if (b == 0)
				entry_state(&next);
			if (blk->unknown_preds) {
				struct flow_state u;
				unknown_state(&u);
				meet(&next, &u);
			}
			for (uint32_t q = 0; q < blk->nr_preds; q++)
				meet(&next, &out[g->preds[blk->pred_first + q]]);
			if (!visited[b] || !state_equal(&next, &f->in[b])) {
				visited[b] = true;
				f->in[b] = next;
				block_out(g, &f->in[b], b, &out[b]);
				changed = true;
			}
		}
	}
	f->converged = !changed;
	free(out);
	free(visited);
	return 0;
}

void flow__free(struct flow *f)
{
	free(f->in);
	f->in = NULL;
}

void flow__state_before(const struct flow *f, uint32_t i, struct flow_state *st)
{
	const struct cfg *g = f->g;
	uint32_t b = g->block_of[i];

	*st = f->in[b];
	if (!f->converged)
		st->reached = false;
	for (uint32_t k = g->blocks[b].first; k < i && st->reached; k++)
		flow__step(st, &g->seq.insns[k]);
}

int flow__find_reg(const struct flow_state *st, struct flow_val v)
{
	for (int r = 0; r < INSN_NR_GPRS; r++)
		if (r != DWARF_REG_RSP && flow__same(st->reg[r], v))
			return r;
	return -1;
}

bool flow__find_slot(const struct flow_state *st, struct flow_val v, int64_t *slot_off)
{
	for (uint8_t i = 0; i < st->nr_slots; i++)
		if (flow__same(st->slot[i].v, v)) {
			*slot_off = st->slot[i].off;
			return true;
		}
	return false;
}

bool flow__address(const struct flow_state *st, const struct insn_op *m, struct flow_val *addr)
{
	if (m->type != INSN_OP_MEM || m->index >= 0 || m->other_base || m->segment || m->base < 0 ||
	    m->base >= INSN_NR_GPRS)
		return false;
	*addr = add_const(reg_val(st, m->base), m->value);
	return addr->kind != FLOW_UNKNOWN;
}
