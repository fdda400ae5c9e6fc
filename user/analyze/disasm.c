// SPDX-License-Identifier: GPL-2.0
/*
 * Disassembly of poll functions with Capstone: every exit instruction (so exits
 * can be probed without uretprobes) and the cheapest safe entry probe site.
 * The rules, and why, are in docs/disasm.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <capstone/capstone.h>

#include "analyze/disasm.h"

/* Bounds: the bytes come from an ELF we parse as root, so treat them as hostile. */
#define DISASM_MAX_INSNS  1000000u
#define DISASM_MAX_SLOTS  16 /* stack slots tracked as holding `self` */
#define DISASM_MAX_SP_ABS (1 << 24)

#define NR_GPRS 16 /* DWARF 0..15: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 */

const char *disasm__reg_name(uint16_t dwarf_reg)
{
	return dwarf_reg__name(dwarf_reg);
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Any width of a general-purpose register → its DWARF number, or -1. */
static int gpr_of(unsigned int reg)
{
	switch (reg) {
	case X86_REG_RAX:
	case X86_REG_EAX:
	case X86_REG_AX:
	case X86_REG_AL:
	case X86_REG_AH: return DWARF_REG_RAX;
	case X86_REG_RDX:
	case X86_REG_EDX:
	case X86_REG_DX:
	case X86_REG_DL:
	case X86_REG_DH: return DWARF_REG_RDX;
	case X86_REG_RCX:
	case X86_REG_ECX:
	case X86_REG_CX:
	case X86_REG_CL:
	case X86_REG_CH: return DWARF_REG_RCX;
	case X86_REG_RBX:
	case X86_REG_EBX:
	case X86_REG_BX:
	case X86_REG_BL:
	case X86_REG_BH: return DWARF_REG_RBX;
	case X86_REG_RSI:
	case X86_REG_ESI:
	case X86_REG_SI:
	case X86_REG_SIL: return DWARF_REG_RSI;
	case X86_REG_RDI:
	case X86_REG_EDI:
	case X86_REG_DI:
	case X86_REG_DIL: return DWARF_REG_RDI;
	case X86_REG_RBP:
	case X86_REG_EBP:
	case X86_REG_BP:
	case X86_REG_BPL: return DWARF_REG_RBP;
	case X86_REG_RSP:
	case X86_REG_ESP:
	case X86_REG_SP:
	case X86_REG_SPL: return DWARF_REG_RSP;
	case X86_REG_R8:
	case X86_REG_R8D:
	case X86_REG_R8W:
	case X86_REG_R8B: return 8;
	case X86_REG_R9:
	case X86_REG_R9D:
	case X86_REG_R9W:
	case X86_REG_R9B: return 9;
	case X86_REG_R10:
	case X86_REG_R10D:
	case X86_REG_R10W:
	case X86_REG_R10B: return 10;
	case X86_REG_R11:
	case X86_REG_R11D:
	case X86_REG_R11W:
	case X86_REG_R11B: return 11;
	case X86_REG_R12:
	case X86_REG_R12D:
	case X86_REG_R12W:
	case X86_REG_R12B: return 12;
	case X86_REG_R13:
	case X86_REG_R13D:
	case X86_REG_R13W:
	case X86_REG_R13B: return 13;
	case X86_REG_R14:
	case X86_REG_R14D:
	case X86_REG_R14W:
	case X86_REG_R14B: return 14;
	case X86_REG_R15:
	case X86_REG_R15D:
	case X86_REG_R15W:
	case X86_REG_R15B: return 15;
	default: return -1;
	}
}

/* The DWARF number of a full 64-bit general-purpose register, or -1. */
static int gpr64_reg(unsigned int reg)
{
	switch (reg) {
	case X86_REG_RAX:
	case X86_REG_RDX:
	case X86_REG_RCX:
	case X86_REG_RBX:
	case X86_REG_RSI:
	case X86_REG_RDI:
	case X86_REG_RBP:
	case X86_REG_RSP:
	case X86_REG_R8:
	case X86_REG_R9:
	case X86_REG_R10:
	case X86_REG_R11:
	case X86_REG_R12:
	case X86_REG_R13:
	case X86_REG_R14:
	case X86_REG_R15: return gpr_of(reg);
	default: return -1;
	}
}

static int gpr64_of(const cs_x86_op *op)
{
	return op->type == X86_OP_REG ? gpr64_reg(op->reg) : -1;
}

static bool insn_in_group(const cs_insn *insn, uint8_t group)
{
	const cs_detail *d = insn->detail;

	for (uint8_t i = 0; i < d->groups_count; i++)
		if (d->groups[i] == group)
			return true;
	return false;
}

/*
 * What the kernel does with a uprobe on this instruction (x86-64 user code), read
 * off arch/x86/kernel/uprobes.c as of v6.18 (this machine):
 *  - uprobe_init_insn() refuses any instruction with an ES, CS, SS, DS or LOCK
 *    prefix, and opcodes outside its good_insns_64/good_2byte_insns tables;
 *  - branch_setup_xol_ops() emulates jmp rel8/rel32, call rel32 and jcc rel8/rel32
 *    unless they carry a 0x66 prefix, and NOPs: since 610f6e14c29d "uprobes/x86: Add
 *    support to emulate NOP instructions" (v6.16) any instruction whose bytes equal
 *    the kernel's x86_nops[len] (nop, 66 nop, the 0f 1f NOPL forms); before that only
 *    opcode 0x90. 8a5c6cbfe4a3 "x86/insn,uprobes,alternative: Unify insn_is_nop()"
 *    (queued for v6.19) widens this to any `0f 1f /0` and drops `pause`/`xchg r8,rax`;
 *  - push_setup_xol_ops() emulates push reg (0x50-0x57), alone or with exactly the
 *    REX prefix 0x41 (r8-r15), nothing longer;
 *  - everything else is single-stepped out of line (a trap more, ~20x dearer here).
 * We claim "emulated" only for what every kernel from v6.16 on emulates.
 */
static const uint8_t kernel_nops[][8] = {
    {0x90},
    {0x66, 0x90},
    {0x0f, 0x1f, 0x00},
    {0x0f, 0x1f, 0x40, 0x00},
    {0x0f, 0x1f, 0x44, 0x00, 0x00},
    {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
    {0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00},
    {0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
};

struct raw_insn {
	bool bad_prefix;  /* ES/CS/SS/DS/LOCK: the kernel refuses the probe */
	bool opsize;	  /* 0x66 */
	uint8_t op1, op2; /* first opcode byte, second when op1 == 0x0f */
};

static struct raw_insn raw_decode(const uint8_t *b, size_t len)
{
	struct raw_insn r = {0};
	size_t i = 0;

	for (; i < len; i++) {
		uint8_t p = b[i];

		if (p == 0x26 || p == 0x2e || p == 0x36 || p == 0x3e || p == 0xf0)
			r.bad_prefix = true;
		else if (p == 0x66)
			r.opsize = true;
		else if (p != 0x64 && p != 0x65 && p != 0x67 && p != 0xf2 && p != 0xf3)
			break;
	}
	if (i < len && (b[i] & 0xf0) == 0x40) /* REX */
		i++;
	if (i < len)
		r.op1 = b[i];
	if (r.op1 == 0x0f && i + 1 < len)
		r.op2 = b[i + 1];
	return r;
}

static bool uprobe_emulates(const uint8_t *b, size_t len)
{
	struct raw_insn r;

	if (len >= 1 && len <= 8 && !memcmp(b, kernel_nops[len - 1], len))
		return true;
	/* push reg: one byte, or 0x41 + one byte (r8-r15) */
	if ((len == 1 && b[0] >= 0x50 && b[0] <= 0x57) ||
	    (len == 2 && b[0] == 0x41 && b[1] >= 0x50 && b[1] <= 0x57))
		return true;
	r = raw_decode(b, len);
	if (r.bad_prefix || r.opsize)
		return false;
	if (r.op1 == 0xeb || r.op1 == 0xe9 || r.op1 == 0xe8) /* jmp rel8/rel32, call rel32 */
		return true;
	if (r.op1 >= 0x70 && r.op1 <= 0x7f) /* jcc rel8 */
		return true;
	if (r.op1 == 0x0f && r.op2 >= 0x80 && r.op2 <= 0x8f) /* jcc rel32 */
		return true;
	return false;
}

/*
 * Can a uprobe be put here at all? The kernel refuses bad prefixes and what its
 * good_insns_64/good_2byte_insns tables leave out; these are the opcodes of that
 * kind that decode in 64-bit mode (int3, int, hlt, cli/sti, in/out, ud2, syscall,
 * sysenter, system and VMX instructions, group 15).
 */
static const uint8_t refused_opcodes[] = {
    0x6c, 0x6d, 0x6e, 0x6f, 0xcc, 0xcd, 0xce, 0xe4, 0xe5, 0xe6,
    0xe7, 0xec, 0xed, 0xee, 0xef, 0xf1, 0xf4, 0xfa, 0xfb,
};
static const uint8_t refused_0f_opcodes[] = {
    0x00, 0x01, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0b, 0x30, 0x34, 0x35, 0x37, 0x78, 0x79, 0xae,
};

static bool uprobe_accepts(const uint8_t *b, size_t len)
{
	struct raw_insn r = raw_decode(b, len);

	if (r.bad_prefix)
		return false;
	if (r.op1 == 0x0f)
		return !memchr(refused_0f_opcodes, r.op2, sizeof(refused_0f_opcodes));
	return !memchr(refused_opcodes, r.op1, sizeof(refused_opcodes));
}

/* Bitmaps over the function's bytes. */
static bool bit_test(const uint8_t *map, uint64_t i)
{
	return map[i / 8] & (1u << (i % 8));
}

static void bit_set(uint8_t *map, uint64_t i)
{
	map[i / 8] |= (uint8_t)(1u << (i % 8));
}

enum branch_kind {
	BRANCH_NONE,
	BRANCH_RET,
	BRANCH_JMP_DIRECT,
	BRANCH_JMP_INDIRECT,
	BRANCH_JCC, /* conditional, direct: jcc, jrcxz, loop */
	BRANCH_CALL,
	BRANCH_STOP, /* ud2, int3, hlt, far returns: nothing falls through */
};

static enum branch_kind branch_kind(const cs_insn *insn, uint64_t *target)
{
	const cs_x86 *x = &insn->detail->x86;
	bool direct = x->op_count == 1 && x->operands[0].type == X86_OP_IMM;

	*target = direct ? (uint64_t)x->operands[0].imm : 0;
	switch (insn->id) {
	case X86_INS_RET: return BRANCH_RET;
	case X86_INS_JMP: return direct ? BRANCH_JMP_DIRECT : BRANCH_JMP_INDIRECT;
	case X86_INS_LJMP: return BRANCH_JMP_INDIRECT;
	case X86_INS_UD2:
	case X86_INS_INT3:
	case X86_INS_HLT:
	case X86_INS_RETF:
	case X86_INS_RETFQ:
	case X86_INS_IRET:
	case X86_INS_IRETD:
	case X86_INS_IRETQ: return BRANCH_STOP;
	default: break;
	}
	if (insn_in_group(insn, X86_GRP_CALL))
		return BRANCH_CALL;
	/* Capstone 4 puts loop/loope/loopne in BRANCH_RELATIVE but not in JUMP */
	if (direct &&
	    (insn_in_group(insn, X86_GRP_JUMP) || insn_in_group(insn, X86_GRP_BRANCH_RELATIVE)))
		return BRANCH_JCC;
	return BRANCH_NONE;
}

/*
 * Jump-table dispatch, found by dataflow inside one basic block. Each register
 * carries a value number; what we know about the value rides along with copies.
 *   lea    rX, [rip + table]          rX: TABLE_BASE
 *   movsxd rY, dword ptr [rX + rZ*4]  rY: TABLE_ENTRY of value(rX)
 *   add    rY, rX  (or add rX, rY)    TABLE_TARGET: entry + the base it was read from
 *   jmp    rY                         dispatch, not an exit
 * The base is a rip-relative lea in this block, or a value live on entry to the
 * block (LLVM hoists the lea out of loops); what makes it a jump table is adding
 * back the very base value the entry was loaded from.
 */
enum table_kind { TABLE_NONE, TABLE_BASE, TABLE_ENTRY, TABLE_TARGET };

struct table_value {
	uint32_t id;
	enum table_kind kind;
	uint32_t base_id; /* TABLE_ENTRY: value number of the base register */
};

struct table_state {
	struct table_value reg[NR_GPRS];
	uint32_t next_id;
	uint32_t live_in_max; /* value numbers up to this one were live on entry to the block */
};

static void table_reset(struct table_state *t)
{
	for (int r = 0; r < NR_GPRS; r++) {
		t->reg[r].id = ++t->next_id;
		t->reg[r].kind = TABLE_NONE;
		t->reg[r].base_id = 0;
	}
	t->live_in_max = t->next_id;
}

static bool is_table_target(const struct table_value *a, const struct table_value *b)
{
	return (a->kind == TABLE_ENTRY && a->base_id == b->id) ||
	       (b->kind == TABLE_ENTRY && b->base_id == a->id);
}

static void table_step(struct table_state *t, csh handle, const cs_insn *insn)
{
	const cs_x86 *x = &insn->detail->x86;
	const cs_x86_op *op0 = &x->operands[0], *op1 = &x->operands[1];
	struct table_value pre[NR_GPRS], result = {0};
	int dst = -1;
	cs_regs rd, wr;
	uint8_t nr_rd = 0, nr_wr = 0;

	memcpy(pre, t->reg, sizeof(pre));
	if (x->op_count == 2 && gpr64_of(op0) >= 0) {
		dst = gpr64_of(op0);
		if (insn->id == X86_INS_LEA && op1->mem.base == X86_REG_RIP &&
		    op1->mem.index == X86_REG_INVALID) {
			result.kind = TABLE_BASE;
		} else if (insn->id == X86_INS_MOVSXD && op1->type == X86_OP_MEM &&
			   op1->size == 4 && op1->mem.scale == 4 && gpr_of(op1->mem.base) >= 0 &&
			   op1->mem.index != X86_REG_INVALID && op1->mem.disp == 0) {
			const struct table_value *base = &pre[gpr_of(op1->mem.base)];

			if (base->kind == TABLE_BASE || base->id <= t->live_in_max) {
				result.kind = TABLE_ENTRY;
				result.base_id = base->id;
			}
		} else if (insn->id == X86_INS_ADD && gpr64_of(op1) >= 0 &&
			   is_table_target(&pre[dst], &pre[gpr64_of(op1)])) {
			result.kind = TABLE_TARGET;
		} else if (insn->id == X86_INS_LEA && op1->mem.disp == 0 && op1->mem.scale == 1 &&
			   gpr_of(op1->mem.base) >= 0 && gpr_of(op1->mem.index) >= 0 &&
			   is_table_target(&pre[gpr_of(op1->mem.base)],
					   &pre[gpr_of(op1->mem.index)])) {
			result.kind = TABLE_TARGET;
		} else if (insn->id == X86_INS_MOV && gpr64_of(op1) >= 0) {
			result = pre[gpr64_of(op1)]; /* a copy keeps its value number */
		}
	}

	/* everything written gets a fresh, unknown value */
	if (cs_regs_access(handle, insn, rd, &nr_rd, wr, &nr_wr) != CS_ERR_OK) {
		table_reset(t);
		t->live_in_max = 0; /* nothing known */
		return;
	}
	for (uint8_t i = 0; i < nr_wr; i++) {
		int r = gpr_of(wr[i]);

		if (r >= 0) {
			t->reg[r].id = ++t->next_id;
			t->reg[r].kind = TABLE_NONE;
		}
	}
	if (insn_in_group(insn, X86_GRP_CALL)) {
		/* the callee clobbers the caller-saved registers */
		static const int clobbered[] = {0, 1, 2, 4, 5, 8, 9, 10, 11};

		for (size_t i = 0; i < sizeof(clobbered) / sizeof(clobbered[0]); i++) {
			t->reg[clobbered[i]].id = ++t->next_id;
			t->reg[clobbered[i]].kind = TABLE_NONE;
		}
	}
	if (dst >= 0 && result.kind != TABLE_NONE) {
		if (!result.id)
			result.id = ++t->next_id;
		t->reg[dst] = result;
	} else if (dst >= 0 && insn->id == X86_INS_MOV && result.id) {
		t->reg[dst] = result;
	}
}

static bool is_jump_table_dispatch(const struct table_state *t, const cs_insn *insn)
{
	const cs_x86_op *op = &insn->detail->x86.operands[0];

	if (op->type == X86_OP_REG)
		return gpr_of(op->reg) >= 0 && t->reg[gpr_of(op->reg)].kind == TABLE_TARGET;
	/* non-PIC code (static relocation model): jmp qword ptr [table + rZ*8] */
	return op->type == X86_OP_MEM && op->mem.base == X86_REG_INVALID &&
	       op->mem.index != X86_REG_INVALID && op->mem.scale == 8 &&
	       op->mem.segment == X86_REG_INVALID;
}

/*
 * The entry walk: from the first instruction to the end of the entry block,
 * where rsp is (relative to entry) and where the caller's `self` still lives.
 */
struct entry_walk {
	bool active;
	bool sp_known;
	int64_t sp; /* rsp - rsp at entry */
	bool self_in[NR_GPRS];
	int64_t slot[DISASM_MAX_SLOTS]; /* 8-byte stack slots holding self, entry-relative */
	uint32_t nr_slots;
	bool derived[NR_GPRS]; /* register = rsp at entry + derived_off (rsp itself excluded) */
	int64_t derived_off[NR_GPRS];
	bool escaped; /* a stack address went somewhere we do not follow */
	bool have_fallback;
	struct entry_site fallback;
	bool chosen;
};

static bool stack_offset(const struct entry_walk *w, int reg, int64_t *off)
{
	if (reg == DWARF_REG_RSP && w->sp_known) {
		*off = w->sp;
		return true;
	}
	if (reg >= 0 && reg != DWARF_REG_RSP && w->derived[reg]) {
		*off = w->derived_off[reg];
		return true;
	}
	return false;
}

static bool is_stack_pointer(const struct entry_walk *w, int reg)
{
	int64_t off;

	return reg == DWARF_REG_RSP || stack_offset(w, reg, &off);
}

enum addr_class { ADDR_STACK_EXACT, ADDR_STACK_UNKNOWN, ADDR_OTHER };

static enum addr_class classify_addr(const struct entry_walk *w, const x86_op_mem *m, int64_t *off)
{
	int64_t base_off;

	if (m->segment == X86_REG_FS || m->segment == X86_REG_GS)
		return ADDR_OTHER; /* thread-local */
	if (is_stack_pointer(w, gpr_of(m->index)))
		return ADDR_STACK_UNKNOWN;
	if (is_stack_pointer(w, gpr_of(m->base))) {
		if (!stack_offset(w, gpr_of(m->base), &base_off) || m->index != X86_REG_INVALID)
			return ADDR_STACK_UNKNOWN;
		*off = base_off + m->disp;
		return ADDR_STACK_EXACT;
	}
	return ADDR_OTHER;
}

static int find_slot(const struct entry_walk *w, int64_t off)
{
	for (uint32_t i = 0; i < w->nr_slots; i++)
		if (w->slot[i] == off)
			return (int)i;
	return -1;
}

static void kill_slots(struct entry_walk *w, int64_t off, int64_t len)
{
	uint32_t i = 0;

	while (i < w->nr_slots) {
		if (w->slot[i] < off + len && off < w->slot[i] + 8)
			w->slot[i] = w->slot[--w->nr_slots];
		else
			i++;
	}
}

static void add_slot(struct entry_walk *w, int64_t off)
{
	if (off < -DISASM_MAX_SP_ABS * 2 || off > DISASM_MAX_SP_ABS * 2)
		return; /* keeps every offset we report within int32_t */
	if (find_slot(w, off) < 0 && w->nr_slots < DISASM_MAX_SLOTS)
		w->slot[w->nr_slots++] = off;
}

/* A store of len bytes to a memory operand. */
static void store_to(struct entry_walk *w, const x86_op_mem *m, int64_t len)
{
	int64_t off;

	switch (classify_addr(w, m, &off)) {
	case ADDR_STACK_EXACT: kill_slots(w, off, len); break;
	case ADDR_STACK_UNKNOWN: w->nr_slots = 0; break;
	case ADDR_OTHER:
		/* only a pointer into our frame can reach our slots */
		if (w->escaped)
			w->nr_slots = 0;
		break;
	}
}

static bool self_known(const struct entry_walk *w)
{
	for (int r = 0; r < NR_GPRS; r++)
		if (w->self_in[r])
			return true;
	return w->nr_slots > 0;
}

static void copy_text(char *dst, size_t cap, const char *mnemonic, const char *op_str)
{
	size_t n = 0;

	for (const char *s = mnemonic; *s && n + 1 < cap; s++)
		dst[n++] = *s;
	if (*op_str && n + 1 < cap)
		dst[n++] = ' ';
	for (const char *s = op_str; *s && n + 1 < cap; s++)
		dst[n++] = *s;
	dst[n] = '\0';
}

static void entry_snapshot(const struct entry_walk *w, const cs_insn *insn, bool emulated,
			   uint16_t self_reg, struct entry_site *e)
{
	memset(e, 0, sizeof(*e));
	e->valid = true;
	e->addr = insn->address;
	e->emulated = emulated;
	/* "mnemonic op_str", cut to fit: the text is for humans */
	copy_text(e->insn, sizeof(e->insn), insn->mnemonic, insn->op_str);
	e->sp_delta = (int32_t)w->sp;
	if (self_reg < NR_GPRS && w->self_in[self_reg]) {
		e->self_kind = SELF_LOC_REG;
		e->self_reg = self_reg;
		return;
	}
	for (int r = 0; r < NR_GPRS; r++) {
		if (w->self_in[r]) {
			e->self_kind = SELF_LOC_REG;
			e->self_reg = (uint16_t)r;
			return;
		}
	}
	if (w->nr_slots) {
		e->self_kind = SELF_LOC_STACK;
		e->self_sp_offset = (int32_t)(w->slot[0] - w->sp);
	}
}

/* May this instruction write memory operand i? Capstone 4's access flags miss some stores. */
static bool may_store(const cs_insn *insn, uint8_t i)
{
	const cs_x86_op *op = &insn->detail->x86.operands[i];

	if (op->type != X86_OP_MEM)
		return false;
	if (op->access & CS_AC_WRITE)
		return true;
	if (i != 0)
		return false;
	switch (insn->id) {
	case X86_INS_CMP:
	case X86_INS_TEST:
	case X86_INS_BT:
	case X86_INS_NOP:
	case X86_INS_PUSH:
	case X86_INS_JMP:
	case X86_INS_CALL:
	case X86_INS_LEA:
	case X86_INS_PREFETCH:
	case X86_INS_PREFETCHNTA:
	case X86_INS_PREFETCHT0:
	case X86_INS_PREFETCHT1:
	case X86_INS_PREFETCHT2:
	case X86_INS_PREFETCHW:
	case X86_INS_UCOMISS:
	case X86_INS_UCOMISD:
	case X86_INS_COMISS:
	case X86_INS_COMISD: return false;
	default: return true; /* Intel syntax: a memory destination comes first */
	}
}

/* Apply one instruction; returns false when the walk must stop after it. */
static bool entry_step(struct entry_walk *w, csh handle, const cs_insn *insn)
{
	const cs_x86 *x = &insn->detail->x86;
	const cs_x86_op *op0 = &x->operands[0], *op1 = &x->operands[1];
	bool rsp_modelled = false, reads_modelled = false;
	bool new_self = false;
	int self_dst = -1, derived_dst = -1;
	int64_t derived_val = 0, off;
	cs_regs rd, wr;
	uint8_t nr_rd = 0, nr_wr = 0;

	if (cs_regs_access(handle, insn, rd, &nr_rd, wr, &nr_wr) != CS_ERR_OK)
		return false;

	/* 1. an explicit register operand read that lets a stack address escape */
	switch (insn->id) {
	case X86_INS_MOV:
		/* a 64-bit copy is followed; a store to memory or a truncation is not */
		reads_modelled = gpr64_of(op0) >= 0 && gpr64_of(op1) >= 0;
		break;
	case X86_INS_LEA:
	case X86_INS_CMP:
	case X86_INS_TEST: reads_modelled = true; break;
	case X86_INS_ADD:
	case X86_INS_SUB: reads_modelled = op1->type == X86_OP_IMM && gpr64_of(op0) >= 0; break;
	default: break;
	}
	for (uint8_t i = 0; i < x->op_count && !reads_modelled; i++) {
		const cs_x86_op *op = &x->operands[i];

		if (op->type == X86_OP_REG && (op->access & CS_AC_READ || !op->access) &&
		    is_stack_pointer(w, gpr_of(op->reg)))
			w->escaped = true;
	}

	/* 2. stores through explicit memory operands */
	if (x->prefix[0] == X86_PREFIX_REP || x->prefix[0] == X86_PREFIX_REPNE) {
		for (uint8_t i = 0; i < x->op_count; i++)
			if (may_store(insn, i))
				w->nr_slots = 0; /* rep stos/movs: length unknown */
	} else if (insn->id != X86_INS_PUSH && insn->id != X86_INS_POP) {
		for (uint8_t i = 0; i < x->op_count; i++)
			if (may_store(insn, i))
				store_to(w, &x->operands[i].mem,
					 x->operands[i].size ? x->operands[i].size : 8);
	}

	/* 3. what the instruction means for self, the stack pointer and stack addresses */
	switch (insn->id) {
	case X86_INS_PUSH:
	case X86_INS_PUSHF:
	case X86_INS_PUSHFQ: {
		int64_t len = x->prefix[2] == X86_PREFIX_OPSIZE ? 2 : 8;
		int src = insn->id == X86_INS_PUSH ? gpr64_of(op0) : -1;

		w->sp -= len; /* pushing a stack address already set escaped above */
		kill_slots(w, w->sp, len);
		if (src >= 0 && w->self_in[src])
			add_slot(w, w->sp);
		rsp_modelled = true;
		break;
	}
	case X86_INS_POP:
	case X86_INS_POPF:
	case X86_INS_POPFQ: {
		int64_t len = x->prefix[2] == X86_PREFIX_OPSIZE ? 2 : 8;
		int dst = insn->id == X86_INS_POP ? gpr64_of(op0) : -1;

		if (dst >= 0 && dst != DWARF_REG_RSP) {
			self_dst = dst;
			new_self = find_slot(w, w->sp) >= 0;
		} else if (insn->id == X86_INS_POP && op0->type == X86_OP_MEM) {
			w->nr_slots = 0;
		}
		w->sp += len;
		rsp_modelled = dst != DWARF_REG_RSP;
		break;
	}
	case X86_INS_ADD:
	case X86_INS_SUB: {
		int dst = gpr64_of(op0);
		int64_t imm = op1->type == X86_OP_IMM ? op1->imm : 0;

		if (op1->type != X86_OP_IMM || dst < 0)
			break;
		if (insn->id == X86_INS_SUB)
			imm = -imm;
		if (dst == DWARF_REG_RSP) {
			w->sp += imm;
			rsp_modelled = true;
		} else if (stack_offset(w, dst, &off)) {
			derived_dst = dst;
			derived_val = off + imm;
		}
		break;
	}
	case X86_INS_LEA: {
		int dst = gpr64_of(op0);
		const x86_op_mem *m = &op1->mem;

		if (dst < 0 || m->index != X86_REG_INVALID) {
			if (is_stack_pointer(w, gpr_of(m->base)) ||
			    is_stack_pointer(w, gpr_of(m->index)))
				w->escaped = true; /* a stack address we do not follow */
			break;
		}
		if (stack_offset(w, gpr_of(m->base), &off)) {
			if (dst == DWARF_REG_RSP) {
				w->sp = off + m->disp;
				rsp_modelled = true;
			} else {
				derived_dst = dst;
				derived_val = off + m->disp;
			}
		} else if (m->disp == 0 && gpr64_reg(m->base) >= 0 &&
			   w->self_in[gpr64_reg(m->base)]) {
			self_dst = dst;
			new_self = true;
		}
		break;
	}
	case X86_INS_MOV: {
		int dst = gpr64_of(op0), src = gpr64_of(op1);

		if (dst >= 0 && src >= 0) {
			if (stack_offset(w, src, &off)) {
				if (dst == DWARF_REG_RSP) {
					w->sp = off;
					rsp_modelled = true;
				} else {
					derived_dst = dst;
					derived_val = off;
				}
			}
			if (dst != DWARF_REG_RSP) {
				self_dst = dst;
				new_self = w->self_in[src];
			}
		} else if (dst >= 0 && dst != DWARF_REG_RSP && op1->type == X86_OP_MEM &&
			   op1->size == 8) {
			self_dst = dst;
			new_self = classify_addr(w, &op1->mem, &off) == ADDR_STACK_EXACT &&
				   find_slot(w, off) >= 0;
		} else if (op0->type == X86_OP_MEM && src >= 0 && w->self_in[src] &&
			   classify_addr(w, &op0->mem, &off) == ADDR_STACK_EXACT) {
			add_slot(w, off); /* after store_to() killed what it overwrote */
		}
		break;
	}
	default: break;
	}

	/* 4. every register written loses self and stack-address status ... */
	for (uint8_t i = 0; i < nr_wr; i++) {
		int r = gpr_of(wr[i]);

		if (r == DWARF_REG_RSP) {
			if (!rsp_modelled)
				w->sp_known = false;
		} else if (r >= 0) {
			w->self_in[r] = false;
			w->derived[r] = false;
		}
	}
	if (insn_in_group(insn, X86_GRP_CALL))
		return false; /* caller-saved registers are gone; stop here */
	/* ... unless the instruction was one we model */
	if (self_dst >= 0)
		w->self_in[self_dst] = new_self;
	if (derived_dst >= 0) {
		w->derived[derived_dst] = true;
		w->derived_off[derived_dst] = derived_val;
	}
	if (w->sp < -DISASM_MAX_SP_ABS || w->sp > DISASM_MAX_SP_ABS)
		w->sp_known = false;
	return w->sp_known;
}

struct analysis {
	csh handle;
	cs_insn *insn;
	const uint8_t *code;
	size_t size;
	uint64_t addr;
	uint16_t self_reg;
	uint8_t *insn_start; /* bitmap: offsets where the sweep starts an instruction */
	uint8_t *leader;     /* bitmap: offsets that direct branches in the function target */
	struct exit_site *exits;
	uint32_t nr_exits, cap_exits;
	char *err;
	size_t errlen;
};

static bool in_function(const struct analysis *a, uint64_t target)
{
	return target - a->addr < a->size;
}

static int decode_error(struct analysis *a, uint64_t at, size_t left)
{
	uint8_t padded[32] = {0};
	const uint8_t *p = padded;
	size_t n = sizeof(padded);
	uint64_t pc = at;
	size_t off = (size_t)(at - a->addr);
	char bytes[3 * 8 + 1] = "";

	for (size_t i = 0; i < left && i < 8; i++)
		snprintf(bytes + 3 * i, sizeof(bytes) - 3 * i, " %02x", a->code[off + i]);
	/* a truncated last instruction decodes once the bytes after the function are there */
	memcpy(padded, a->code + off, left < 16 ? left : 16);
	if (left < 15 && cs_disasm_iter(a->handle, &p, &n, &pc, a->insn) && a->insn->size > left) {
		set_err(a->err, a->errlen,
			"decode failed at 0x%" PRIx64 ": '%s %s' (%u bytes) runs past the end of "
			"the function at 0x%" PRIx64,
			at, a->insn->mnemonic, a->insn->op_str, a->insn->size, a->addr + a->size);
		return -EINVAL;
	}
	set_err(a->err, a->errlen, "decode failed at 0x%" PRIx64 ": invalid instruction (bytes%s)",
		at, bytes);
	return -EINVAL;
}

/* Pass 1: instruction boundaries and the targets of direct branches. */
static int sweep_boundaries(struct analysis *a)
{
	const uint8_t *p = a->code;
	size_t left = a->size;
	uint64_t pc = a->addr, target;
	uint32_t count = 0;

	while (left) {
		uint64_t at = pc;
		enum branch_kind kind;

		if (!cs_disasm_iter(a->handle, &p, &left, &pc, a->insn))
			return decode_error(a, at, left);
		if (++count > DISASM_MAX_INSNS) {
			set_err(a->err, a->errlen,
				"function at 0x%" PRIx64
				" has more than %u instructions: not analysed",
				a->addr, DISASM_MAX_INSNS);
			return -E2BIG;
		}
		bit_set(a->insn_start, at - a->addr);
		kind = branch_kind(a->insn, &target);
		if ((kind == BRANCH_JMP_DIRECT || kind == BRANCH_JCC || kind == BRANCH_CALL) &&
		    a->insn->detail->x86.operands[0].type == X86_OP_IMM && in_function(a, target))
			bit_set(a->leader, target - a->addr);
	}
	for (uint64_t i = 0; i < a->size; i++) {
		if (bit_test(a->leader, i) && !bit_test(a->insn_start, i)) {
			set_err(a->err, a->errlen,
				"decode failed at 0x%" PRIx64 ": a branch targets the middle of an "
				"instruction, so the bytes are not one linear run of code",
				a->addr + i);
			return -EINVAL;
		}
	}
	return 0;
}

static int add_exit(struct analysis *a, uint64_t at, enum exit_kind kind, uint64_t target)
{
	if (a->nr_exits == a->cap_exits) {
		uint32_t cap = a->cap_exits ? a->cap_exits * 2 : 8;
		struct exit_site *n = realloc(a->exits, cap * sizeof(*n));

		if (!n) {
			set_err(a->err, a->errlen, "out of memory for exit sites");
			return -ENOMEM;
		}
		a->exits = n;
		a->cap_exits = cap;
	}
	uint64_t off = at - a->addr;
	a->exits[a->nr_exits++] = (struct exit_site){
	    .addr = at,
	    .kind = kind,
	    .target = target,
	    .probeable = uprobe_accepts(a->code + off, a->size - off),
	};
	return 0;
}

/* Pass 2: exits, jump tables, and the entry walk. */
static int sweep_analyze(struct analysis *a, struct entry_site *entry)
{
	const uint8_t *p = a->code;
	size_t left = a->size;
	uint64_t pc = a->addr, target;
	struct table_state table = {0};
	struct entry_walk walk = {.active = true, .sp_known = true};
	bool block_ended = true;
	int err;

	walk.self_in[a->self_reg] = true;
	while (left) {
		uint64_t at = pc;
		const cs_insn *insn = a->insn;
		enum branch_kind kind;
		bool is_exit = false;

		if (!cs_disasm_iter(a->handle, &p, &left, &pc, a->insn))
			return decode_error(a, at, left); /* pass 1 decoded it: cannot happen */
		if (block_ended || bit_test(a->leader, at - a->addr))
			table_reset(&table);
		if (at != a->addr && bit_test(a->leader, at - a->addr))
			walk.active = false; /* another path joins: not the entry block any more */

		kind = branch_kind(insn, &target);
		block_ended = kind == BRANCH_RET || kind == BRANCH_JMP_DIRECT ||
			      kind == BRANCH_JMP_INDIRECT || kind == BRANCH_STOP;
		err = 0;
		if (kind == BRANCH_RET) {
			err = add_exit(a, at, EXIT_RET, 0);
			is_exit = true;
		} else if ((kind == BRANCH_JMP_DIRECT || kind == BRANCH_JCC) &&
			   !in_function(a, target)) {
			err = add_exit(a, at, EXIT_TAIL_JMP, target);
			is_exit = true;
		} else if (kind == BRANCH_JMP_INDIRECT && !is_jump_table_dispatch(&table, insn)) {
			err = add_exit(a, at, EXIT_TAIL_JMP_INDIRECT, 0);
			is_exit = true;
		}
		if (err)
			return err;
		table_step(&table, a->handle, insn);

		if (!walk.active)
			continue;
		if (self_known(&walk) && uprobe_accepts(insn->bytes, insn->size)) {
			if (uprobe_emulates(insn->bytes, insn->size) && !is_exit) {
				entry_snapshot(&walk, insn, true, a->self_reg, entry);
				walk.chosen = true;
				walk.active = false;
				continue;
			}
			if (!walk.have_fallback) {
				entry_snapshot(&walk, insn, false, a->self_reg, &walk.fallback);
				walk.have_fallback = true;
			}
		}
		if (!entry_step(&walk, a->handle, insn) || kind != BRANCH_NONE)
			walk.active = false;
	}
	if (!walk.chosen && walk.have_fallback)
		*entry = walk.fallback;
	return 0;
}

int disasm__analyze_function(const uint8_t *code, size_t size, uint64_t addr, uint16_t self_reg,
			     struct exit_site **exits, uint32_t *nr_exits, struct entry_site *entry,
			     char *err, size_t errlen)
{
	struct analysis a = {
	    .code = code,
	    .size = size,
	    .addr = addr,
	    .self_reg = self_reg,
	    .err = err,
	    .errlen = errlen,
	};
	size_t map_len;
	cs_err cerr;
	int ret;

	*exits = NULL;
	*nr_exits = 0;
	memset(entry, 0, sizeof(*entry));
	if (err && errlen)
		err[0] = '\0';

#if !defined(__x86_64__)
	set_err(err, errlen,
		"disassembly supports x86-64 only: this build of asyncbpf is for another "
		"architecture");
	return -ENOTSUP;
#endif
	if (!code || !size) {
		set_err(err, errlen, "function at 0x%" PRIx64 " has no bytes to disassemble", addr);
		return -EINVAL;
	}
	if (size > (size_t)DISASM_MAX_INSNS * 16) {
		set_err(err, errlen,
			"function at 0x%" PRIx64 " is %zu bytes: more than we analyse (%u)", addr,
			size, DISASM_MAX_INSNS * 16);
		return -E2BIG;
	}
	if (addr + size < addr) {
		set_err(err, errlen, "function at 0x%" PRIx64 " wraps the address space", addr);
		return -EINVAL;
	}
	if (self_reg >= NR_GPRS || self_reg == DWARF_REG_RSP) {
		set_err(err, errlen,
			"self register %u (%s) is not a general-purpose argument register",
			self_reg, disasm__reg_name(self_reg));
		return -EINVAL;
	}
	if (!cs_support(CS_ARCH_X86)) {
		set_err(err, errlen, "libcapstone was built without x86 support");
		return -ENOTSUP;
	}
	cerr = cs_open(CS_ARCH_X86, CS_MODE_64, &a.handle);
	if (cerr != CS_ERR_OK) {
		set_err(err, errlen, "capstone: cannot open an x86-64 disassembler: %s",
			cs_strerror(cerr));
		return cerr == CS_ERR_MEM ? -ENOMEM : -ENOTSUP;
	}
	cs_option(a.handle, CS_OPT_DETAIL, CS_OPT_ON);
	map_len = size / 8 + 1;
	a.insn = cs_malloc(a.handle);
	a.insn_start = calloc(1, map_len);
	a.leader = calloc(1, map_len);
	if (!a.insn || !a.insn_start || !a.leader) {
		set_err(err, errlen, "out of memory disassembling the function at 0x%" PRIx64,
			addr);
		ret = -ENOMEM;
		goto cleanup;
	}

	ret = sweep_boundaries(&a);
	if (!ret)
		ret = sweep_analyze(&a, entry);
	if (ret)
		goto cleanup;
	*exits = a.exits;
	*nr_exits = a.nr_exits;
	a.exits = NULL;

cleanup:
	if (ret)
		memset(entry, 0, sizeof(*entry));
	free(a.exits);
	free(a.leader);
	free(a.insn_start);
	if (a.insn)
		cs_free(a.insn, 1);
	cs_close(&a.handle);
	return ret;
}
