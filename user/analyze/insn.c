// SPDX-License-Identifier: GPL-2.0
/*
 * One Capstone pass over a function into struct insn (insn.h): the only place the
 * analyzer talks to Capstone, so that the CFG, the dataflow and the entry walk
 * read the same facts. Why each rule: docs/disasm.md.
 */
#include "analyze/insn.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <capstone/capstone.h>

#include "model/model.h"

const char *insn__reg_name(uint16_t dwarf_reg)
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

/* Any width of a general-purpose register -> its DWARF number, or -1. */
static int gpr_of(unsigned int reg, uint8_t *bytes, uint8_t *high)
{
	static const struct {
		uint16_t r64, r32, r16, r8, r8h;
	} gprs[INSN_NR_GPRS] = {
	    {X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL, X86_REG_AH},
	    {X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL, X86_REG_DH},
	    {X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL, X86_REG_CH},
	    {X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL, X86_REG_BH},
	    {X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL, 0},
	    {X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL, 0},
	    {X86_REG_RBP, X86_REG_EBP, X86_REG_BP, X86_REG_BPL, 0},
	    {X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL, 0},
	    {X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B, 0},
	    {X86_REG_R9, X86_REG_R9D, X86_REG_R9W, X86_REG_R9B, 0},
	    {X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B, 0},
	    {X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B, 0},
	    {X86_REG_R12, X86_REG_R12D, X86_REG_R12W, X86_REG_R12B, 0},
	    {X86_REG_R13, X86_REG_R13D, X86_REG_R13W, X86_REG_R13B, 0},
	    {X86_REG_R14, X86_REG_R14D, X86_REG_R14W, X86_REG_R14B, 0},
	    {X86_REG_R15, X86_REG_R15D, X86_REG_R15W, X86_REG_R15B, 0},
	};
	uint8_t b = 0, h = 0;

	for (int i = 0; i < INSN_NR_GPRS; i++) {
		if (reg == gprs[i].r64)
			b = 8;
		else if (reg == gprs[i].r32)
			b = 4;
		else if (reg == gprs[i].r16)
			b = 2;
		else if (reg == gprs[i].r8)
			b = 1;
		else if (gprs[i].r8h && reg == gprs[i].r8h)
			b = 1, h = 1;
		if (b) {
			if (bytes)
				*bytes = b;
			if (high)
				*high = h;
			return i;
		}
	}
	return -1;
}

int insn__gpr64(const struct insn_op *op)
{
	return op->type == INSN_OP_REG && op->reg >= 0 && op->reg_bytes == 8 ? op->reg : -1;
}

bool insn__is_call(const struct insn *in)
{
	return in->flow == INSN_FLOW_CALL;
}

static bool in_group(const cs_insn *insn, uint8_t group)
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

bool insn__uprobe_emulates(const uint8_t *b, size_t len)
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

bool insn__uprobe_accepts(const uint8_t *b, size_t len)
{
	struct raw_insn r = raw_decode(b, len);

	if (r.bad_prefix)
		return false;
	if (r.op1 == 0x0f)
		return !memchr(refused_0f_opcodes, r.op2, sizeof(refused_0f_opcodes));
	return !memchr(refused_opcodes, r.op1, sizeof(refused_opcodes));
}

static enum insn_flow flow_of(const cs_insn *insn, uint64_t *target)
{
	const cs_x86 *x = &insn->detail->x86;
	bool direct = x->op_count == 1 && x->operands[0].type == X86_OP_IMM;

	*target = direct ? (uint64_t)x->operands[0].imm : 0;
	switch (insn->id) {
	case X86_INS_RET: return INSN_FLOW_RET;
	case X86_INS_JMP: return direct ? INSN_FLOW_JMP : INSN_FLOW_JMP_INDIRECT;
	case X86_INS_LJMP: return INSN_FLOW_JMP_INDIRECT;
	case X86_INS_UD2:
	case X86_INS_INT3:
	case X86_INS_HLT:
	case X86_INS_RETF:
	case X86_INS_RETFQ:
	case X86_INS_IRET:
	case X86_INS_IRETD:
	case X86_INS_IRETQ: return INSN_FLOW_STOP;
	default: break;
	}
	if (in_group(insn, X86_GRP_CALL))
		return INSN_FLOW_CALL;
	/* Capstone 4 puts loop/loope/loopne in BRANCH_RELATIVE but not in JUMP */
	if (direct && (in_group(insn, X86_GRP_JUMP) || in_group(insn, X86_GRP_BRANCH_RELATIVE)))
		return INSN_FLOW_JCC;
	return INSN_FLOW_NONE;
}

static void convert_ops(const cs_insn *ci, struct insn *in)
{
	const cs_x86 *x = &ci->detail->x86;

	in->nr_ops = x->op_count < INSN_MAX_OPS ? x->op_count : INSN_MAX_OPS;
	for (uint8_t i = 0; i < in->nr_ops; i++) {
		const cs_x86_op *op = &x->operands[i];
		struct insn_op *o = &in->ops[i];

		memset(o, 0, sizeof(*o));
		o->size = op->size;
		o->access = op->access;
		o->reg = o->base = o->index = -1;
		switch (op->type) {
		case X86_OP_REG:
			o->type = INSN_OP_REG;
			o->reg = (int8_t)gpr_of(op->reg, &o->reg_bytes, &o->high_byte);
			break;
		case X86_OP_IMM:
			o->type = INSN_OP_IMM;
			o->value = op->imm;
			break;
		case X86_OP_MEM:
			o->type = INSN_OP_MEM;
			o->value = op->mem.disp;
			o->scale = (uint8_t)op->mem.scale;
			o->segment = op->mem.segment == X86_REG_FS || op->mem.segment == X86_REG_GS;
			if (op->mem.base == X86_REG_RIP) {
				o->base = DWARF_REG_RIP;
			} else if (op->mem.base != X86_REG_INVALID) {
				o->base = (int8_t)gpr_of(op->mem.base, NULL, NULL);
				o->other_base |= o->base < 0;
			}
			if (op->mem.index != X86_REG_INVALID) {
				o->index = (int8_t)gpr_of(op->mem.index, NULL, NULL);
				o->other_base |= o->index < 0;
			}
			break;
		default: o->type = INSN_OP_OTHER; break;
		}
	}
	if (x->op_count > INSN_MAX_OPS)
		for (uint8_t i = 0; i < INSN_MAX_OPS; i++)
			in->ops[i].type = INSN_OP_OTHER; /* nothing we model has that many */
}

static void convert_regs(csh handle, const cs_insn *ci, struct insn *in)
{
	cs_regs rd, wr;
	uint8_t nr_rd = 0, nr_wr = 0;

	in->regs_known = cs_regs_access(handle, ci, rd, &nr_rd, wr, &nr_wr) == CS_ERR_OK;
	if (!in->regs_known) {
		in->gpr_read = in->gpr_written = 0xffff;
		return;
	}
	for (uint8_t i = 0; i < nr_rd; i++) {
		int r = gpr_of(rd[i], NULL, NULL);
		if (r >= 0)
			in->gpr_read |= (uint16_t)(1u << r);
	}
	for (uint8_t i = 0; i < nr_wr; i++) {
		int r = gpr_of(wr[i], NULL, NULL);
		if (r >= 0)
			in->gpr_written |= (uint16_t)(1u << r);
	}
}

static void convert(csh handle, const cs_insn *ci, uint64_t fn_addr, struct insn *in)
{
	const cs_x86 *x = &ci->detail->x86;

	memset(in, 0, sizeof(*in));
	in->addr = ci->address;
	in->offset = (uint32_t)(ci->address - fn_addr);
	in->id = (uint16_t)ci->id;
	in->size = (uint8_t)ci->size;
	in->flow = (uint8_t)flow_of(ci, &in->target);
	in->rep = x->prefix[0] == X86_PREFIX_REP || x->prefix[0] == X86_PREFIX_REPNE;
	in->opsize = x->prefix[2] == X86_PREFIX_OPSIZE;
	in->emulated = insn__uprobe_emulates(ci->bytes, ci->size);
	in->probeable = insn__uprobe_accepts(ci->bytes, ci->size);
	convert_ops(ci, in);
	convert_regs(handle, ci, in);
	/* Capstone 4 has the accumulator forms of test (a8 ib, a9 id: `test al, 1`)
	 * write al/eax/rax; test, like cmp and bt, writes the flags only */
	if (in->id == X86_INS_TEST || in->id == X86_INS_CMP || in->id == X86_INS_BT) {
		in->gpr_written = 0;
		for (uint8_t i = 0; i < in->nr_ops; i++)
			in->ops[i].access &= (uint8_t)~CS_AC_WRITE;
	}
}

static int decode_error(csh handle, cs_insn *scratch, const uint8_t *code, size_t size,
			uint64_t addr, uint64_t at, char *err, size_t errlen)
{
	size_t off = (size_t)(at - addr), left = size - off;
	uint8_t padded[32] = {0};
	const uint8_t *p = padded;
	size_t n = sizeof(padded);
	uint64_t pc = at;
	char bytes[3 * 8 + 1] = "";

	for (size_t i = 0; i < left && i < 8; i++)
		snprintf(bytes + 3 * i, sizeof(bytes) - 3 * i, " %02x", code[off + i]);
	/* a truncated last instruction decodes once the bytes after the function are there */
	memcpy(padded, code + off, left < 16 ? left : 16);
	if (left < 15 && cs_disasm_iter(handle, &p, &n, &pc, scratch) && scratch->size > left) {
		set_err(err, errlen,
			"decode failed at 0x%" PRIx64 ": '%s %s' (%u bytes) runs past the end of "
			"the function at 0x%" PRIx64,
			at, scratch->mnemonic, scratch->op_str, scratch->size, addr + size);
		return -EINVAL;
	}
	set_err(err, errlen, "decode failed at 0x%" PRIx64 ": invalid instruction (bytes%s)", at,
		bytes);
	return -EINVAL;
}

static int open_capstone(csh *handle, char *err, size_t errlen)
{
	cs_err cerr;

	if (!cs_support(CS_ARCH_X86)) {
		set_err(err, errlen, "libcapstone was built without x86 support");
		return -ENOTSUP;
	}
	cerr = cs_open(CS_ARCH_X86, CS_MODE_64, handle);
	if (cerr != CS_ERR_OK) {
		set_err(err, errlen, "capstone: cannot open an x86-64 disassembler: %s",
			cs_strerror(cerr));
		return cerr == CS_ERR_MEM ? -ENOMEM : -ENOTSUP;
	}
	cs_option(*handle, CS_OPT_DETAIL, CS_OPT_ON);
	return 0;
}

int insn__decode(const uint8_t *code, size_t size, uint64_t addr, struct insn_seq *out, char *err,
		 size_t errlen)
{
	const uint8_t *p = code;
	size_t left = size;
	uint64_t pc = addr;
	uint32_t cap = 0;
	cs_insn *ci = NULL;
	csh handle = 0;
	int ret;

	out->insns = NULL;
	out->nr = 0;
	ret = open_capstone(&handle, err, errlen);
	if (ret)
		return ret;
	ci = cs_malloc(handle);
	if (!ci) {
		ret = -ENOMEM;
		set_err(err, errlen, "out of memory disassembling the function at 0x%" PRIx64,
			addr);
		goto out;
	}
	while (left) {
		uint64_t at = pc;

		if (!cs_disasm_iter(handle, &p, &left, &pc, ci)) {
			ret = decode_error(handle, ci, code, size, addr, at, err, errlen);
			goto out;
		}
		if (out->nr >= INSN_MAX_FUNCTION_INSNS) {
			set_err(err, errlen,
				"function at 0x%" PRIx64
				" has more than %u instructions: not analysed",
				addr, INSN_MAX_FUNCTION_INSNS);
			ret = -E2BIG;
			goto out;
		}
		if (out->nr == cap) {
			uint32_t ncap = cap ? cap * 2 : 64;
			struct insn *n = realloc(out->insns, (size_t)ncap * sizeof(*n));

			if (!n) {
				ret = -ENOMEM;
				set_err(err, errlen,
					"out of memory disassembling the function at 0x%" PRIx64,
					addr);
				goto out;
			}
			out->insns = n;
			cap = ncap;
		}
		convert(handle, ci, addr, &out->insns[out->nr++]);
	}
	ret = 0;
out:
	if (ret)
		insn_seq__free(out);
	if (ci)
		cs_free(ci, 1);
	cs_close(&handle);
	return ret;
}

struct insn_decoder {
	csh handle;
	cs_insn *ci;
};

int insn_decoder__new(struct insn_decoder **out, char *err, size_t errlen)
{
	struct insn_decoder *d = calloc(1, sizeof(*d));
	int ret;

	*out = NULL;
	if (!d) {
		set_err(err, errlen, "out of memory for a disassembler");
		return -ENOMEM;
	}
	ret = open_capstone(&d->handle, err, errlen);
	if (ret) {
		free(d);
		return ret;
	}
	d->ci = cs_malloc(d->handle);
	if (!d->ci) {
		cs_close(&d->handle);
		free(d);
		set_err(err, errlen, "out of memory for a disassembler");
		return -ENOMEM;
	}
	*out = d;
	return 0;
}

void insn_decoder__free(struct insn_decoder *d)
{
	if (!d)
		return;
	cs_free(d->ci, 1);
	cs_close(&d->handle);
	free(d);
}

int insn_decoder__sweep(struct insn_decoder *d, const uint8_t *code, size_t size, uint64_t addr,
			int (*cb)(void *ctx, const struct insn *in), void *ctx, uint64_t *stop)
{
	const uint8_t *p = code;
	size_t left = size;
	uint64_t pc = addr;
	uint32_t n = 0;
	struct insn in;
	int ret;

	while (left) {
		*stop = pc;
		if (!cs_disasm_iter(d->handle, &p, &left, &pc, d->ci))
			return -EINVAL;
		if (++n > INSN_MAX_FUNCTION_INSNS)
			return -E2BIG;
		convert(d->handle, d->ci, addr, &in);
		if ((ret = cb(ctx, &in)))
			return ret;
	}
	*stop = pc;
	return 0;
}

void insn_seq__free(struct insn_seq *s)
{
	free(s->insns);
	s->insns = NULL;
	s->nr = 0;
}

int64_t insn_seq__find(const struct insn_seq *s, uint64_t addr)
{
	uint32_t lo = 0, hi = s->nr;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (s->insns[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->nr && s->insns[lo].addr == addr ? (int64_t)lo : -1;
}

void insn__text(const uint8_t *code, size_t len, uint64_t addr, char *buf, size_t cap)
{
	csh handle;
	cs_insn *ci;
	size_t n = 0;

	if (!cap)
		return;
	snprintf(buf, cap, "?");
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &handle) != CS_ERR_OK)
		return;
	if (cs_disasm(handle, code, len < 16 ? len : 16, addr, 1, &ci) == 1) {
		for (const char *s = ci->mnemonic; *s && n + 1 < cap; s++)
			buf[n++] = *s;
		if (ci->op_str[0] && n + 1 < cap)
			buf[n++] = ' ';
		for (const char *s = ci->op_str; *s && n + 1 < cap; s++)
			buf[n++] = *s;
		buf[n] = '\0';
		cs_free(ci, 1);
	}
	cs_close(&handle);
}

bool insn__may_store(const struct insn *in, unsigned i)
{
	const struct insn_op *op = &in->ops[i];

	if (i >= in->nr_ops || op->type != INSN_OP_MEM)
		return false;
	if (op->access & CS_AC_WRITE)
		return true;
	if (i != 0)
		return false;
	switch (in->id) {
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
