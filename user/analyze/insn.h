/* SPDX-License-Identifier: GPL-2.0 */
/*
 * x86-64 instructions of one function, decoded once with Capstone into a compact
 * form that the analyzer's passes share (cfg.c, flow.c, disasm.c): operands with
 * registers as DWARF numbers, the general-purpose registers read and written, the
 * kind of control flow, and what the kernel does with a uprobe on the instruction.
 */
#ifndef ASYNCBPF_ANALYZE_INSN_H
#define ASYNCBPF_ANALYZE_INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* x86-64 DWARF register numbers (System V psABI, table 3.36) */
enum {
	DWARF_REG_RAX = 0,
	DWARF_REG_RDX = 1,
	DWARF_REG_RCX = 2,
	DWARF_REG_RBX = 3,
	DWARF_REG_RSI = 4,
	DWARF_REG_RDI = 5,
	DWARF_REG_RBP = 6,
	DWARF_REG_RSP = 7,
	DWARF_REG_RIP = 16, /* in a memory operand: rip-relative */
};

#define INSN_NR_GPRS 16 /* DWARF 0..15: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 */
#define INSN_MAX_OPS 4
/* Bounds: the bytes come from an ELF we parse as root, so treat them as hostile. */
#define INSN_MAX_FUNCTION_INSNS 1000000u

enum insn_op_type { INSN_OP_NONE, INSN_OP_REG, INSN_OP_IMM, INSN_OP_MEM, INSN_OP_OTHER };

struct insn_op {
	uint8_t type;	   /* enum insn_op_type */
	uint8_t size;	   /* bytes */
	uint8_t access;	   /* Capstone's CS_AC_READ/CS_AC_WRITE bits (0: not said) */
	int8_t reg;	   /* INSN_OP_REG: DWARF GPR number, -1 for any other register */
	uint8_t reg_bytes; /* INSN_OP_REG of a GPR: 1, 2, 4 or 8 (ah..dh are 1) */
	uint8_t high_byte; /* INSN_OP_REG: ah, bh, ch, dh */
	int8_t base;	   /* INSN_OP_MEM: DWARF GPR, DWARF_REG_RIP, or -1 (none/other) */
	int8_t index;	   /* INSN_OP_MEM: DWARF GPR or -1 */
	uint8_t scale;
	uint8_t segment;    /* INSN_OP_MEM: 1 for fs/gs (thread-local), 0 otherwise */
	uint8_t other_base; /* INSN_OP_MEM: a base/index register that is not a GPR */
	int64_t value;	    /* INSN_OP_IMM: the immediate; INSN_OP_MEM: the displacement */
};

enum insn_flow {
	INSN_FLOW_NONE,
	INSN_FLOW_RET,
	INSN_FLOW_JMP,		/* direct, target set */
	INSN_FLOW_JMP_INDIRECT, /* jmp reg/mem, far jmp */
	INSN_FLOW_JCC,		/* conditional direct: jcc, jrcxz, loop */
	INSN_FLOW_CALL,		/* direct (target set) or indirect */
	INSN_FLOW_STOP,		/* ud2, int3, hlt, far returns: nothing falls through */
};

struct insn {
	uint64_t addr;
	uint64_t target; /* direct jmp/jcc/call: where it goes; else 0 */
	uint32_t offset; /* from the function's start */
	uint16_t id;	 /* X86_INS_* */
	uint8_t size;
	uint8_t nr_ops;	 /* operands kept (a Capstone instruction with more is INSN_OP_OTHER) */
	uint8_t flow;	 /* enum insn_flow */
	uint8_t rep;	 /* rep/repne prefix */
	uint8_t opsize;	 /* 0x66 operand-size prefix */
	bool emulated;	 /* the kernel emulates a uprobe here (no single-step) */
	bool probeable;	 /* the kernel accepts a uprobe here */
	bool regs_known; /* gpr_read/gpr_written come from Capstone (else: assume all) */
	uint16_t gpr_read, gpr_written; /* bit r: DWARF GPR r, any width, explicit or implicit */
	struct insn_op ops[INSN_MAX_OPS];
};

struct insn_seq {
	struct insn *insns;
	uint32_t nr;
};

/*
 * Decode [addr, addr + size) as one run of instructions (docs/disasm.md, "How the
 * bytes are read"). Returns 0, or -errno with a reason in err: -EINVAL when the
 * bytes do not decode as a whole function, -E2BIG past INSN_MAX_FUNCTION_INSNS,
 * -ENOMEM, -ENOTSUP without an x86-64 Capstone.
 */
int insn__decode(const uint8_t *code, size_t size, uint64_t addr, struct insn_seq *out, char *err,
		 size_t errlen);
void insn_seq__free(struct insn_seq *s);

/*
 * One Capstone handle kept across many runs of code: the call-site index
 * (callsites.c) sweeps every function of a binary with it, without keeping the
 * decoded instructions.
 */
struct insn_decoder;

/* 0, or -ENOMEM / -ENOTSUP with a reason in err. */
int insn_decoder__new(struct insn_decoder **out, char *err, size_t errlen);
void insn_decoder__free(struct insn_decoder *d);
/*
 * Decode [addr, addr + size) in order and call cb(ctx, in) for each instruction
 * (in->offset from addr). Returns 0 when every byte decoded, -EINVAL at bytes that
 * do not decode (or an instruction running past the end; *stop is its address),
 * -E2BIG past INSN_MAX_FUNCTION_INSNS instructions (*stop where it stopped), or
 * the first non-zero value cb returned.
 */
int insn_decoder__sweep(struct insn_decoder *d, const uint8_t *code, size_t size, uint64_t addr,
			int (*cb)(void *ctx, const struct insn *in), void *ctx, uint64_t *stop);
/* Index of the instruction starting at addr, or -1. */
int64_t insn_seq__find(const struct insn_seq *s, uint64_t addr);

/* "mnemonic op_str" of the instruction at code (for people), cut to fit; "?" if it
 * does not decode. */
void insn__text(const uint8_t *code, size_t len, uint64_t addr, char *buf, size_t cap);

/* May operand i be a store to memory? (Capstone 4's access flags miss some.) */
bool insn__may_store(const struct insn *in, unsigned i);
/* The DWARF number of a full 64-bit GPR operand, or -1. */
int insn__gpr64(const struct insn_op *op);
bool insn__is_call(const struct insn *in);

/* What the kernel does with a uprobe on these bytes (x86-64, docs/disasm.md). */
bool insn__uprobe_emulates(const uint8_t *b, size_t len);
bool insn__uprobe_accepts(const uint8_t *b, size_t len);

/* Name of a DWARF x86-64 register number ("rdi"), or "?" */
const char *insn__reg_name(uint16_t dwarf_reg);

#endif
