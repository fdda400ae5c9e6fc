// SPDX-License-Identifier: GPL-2.0
/*
 * Exits in the caller: the continuation rule (analyze/continuation.c) on
 * hand-assembled code, and the callers rule of the call-site index
 * (callsites__callers, analyze/callsites.c) on a hand-built index.
 *
 * The snippets were written in Intel syntax, assembled with GNU as and linked at
 * 0x401000 (`ld -Ttext=0x401000`); the bytes and the listing beside them are
 * objdump's output for that link, every snippet a function of its own, `g` at
 * 0x4010c3 a function that returns. The expected sites below are read off that
 * listing: the first instruction after the call the kernel emulates (jmp, jcc,
 * call rel32, push, nop), reached only by falling through from the call.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/callsites.h"
#include "analyze/continuation.h"
#include "testlib.h"

/* acc: f = 0x401000 */
static const uint8_t acc[] = {
    0xe8, 0xbe, 0x00, 0x00, 0x00, /* 401000: call 4010c3 <g> */
    0x48, 0x83, 0xf8, 0x01,	  /* 401005: cmp rax,0x1 */
    0x74, 0x05,			  /* 401009: je 401010 */
    0xb8, 0x02, 0x00, 0x00, 0x00, /* 40100b: mov eax,0x2 */
    0xc3,			  /* 401010: ret */
};

/* join: f = 0x401011; the return address 40101a is the jne's target */
static const uint8_t join[] = {
    0x85, 0xff,			  /* 401011: test edi,edi */
    0x75, 0x05,			  /* 401013: jne 40101a */
    0xe8, 0xa9, 0x00, 0x00, 0x00, /* 401015: call 4010c3 <g> */
    0x48, 0x83, 0xf8, 0x01,	  /* 40101a: cmp rax,0x1 */
    0x74, 0x01,			  /* 40101e: je 401021 */
    0x90,			  /* 401020: nop */
    0xc3,			  /* 401021: ret */
};

/* rsp_change: f = 0x401022 */
static const uint8_t rsp_change[] = {
    0x53,			  /* 401022: push rbx */
    0xe8, 0x9b, 0x00, 0x00, 0x00, /* 401023: call 4010c3 <g> */
    0x5b,			  /* 401028: pop rbx */
    0xc3,			  /* 401029: ret */
};

/* icall: f = 0x40102a; an indirect call between the call and the jne */
static const uint8_t icall[] = {
    0xe8, 0x94, 0x00, 0x00, 0x00,	/* 40102a: call 4010c3 <g> */
    0x89, 0xc3,				/* 40102f: mov ebx,eax */
    0xff, 0x15, 0x8d, 0x00, 0x00, 0x00, /* 401031: call QWORD PTR [rip+0x8d] */
    0x84, 0xdb,				/* 401037: test bl,bl */
    0x75, 0x00,				/* 401039: jne 40103b */
    0xc3,				/* 40103b: ret */
};

/* dcall: f = 0x40103c; a direct call is emulated: it is the site */
static const uint8_t dcall[] = {
    0xe8, 0x82, 0x00, 0x00, 0x00, /* 40103c: call 4010c3 <g> */
    0x48, 0x89, 0xc7,		  /* 401041: mov rdi,rax */
    0xe8, 0x7a, 0x00, 0x00, 0x00, /* 401044: call 4010c3 <g> */
    0xc3,			  /* 401049: ret */
};

/* ebp: f = 0x40104a; eax saved in ebp, then rax overwritten */
static const uint8_t ebp[] = {
    0xe8, 0x74, 0x00, 0x00, 0x00, /* 40104a: call 4010c3 <g> */
    0x89, 0xc5,			  /* 40104f: mov ebp,eax */
    0x31, 0xc0,			  /* 401051: xor eax,eax */
    0x40, 0x84, 0xed,		  /* 401053: test bpl,bpl */
    0x75, 0x00,			  /* 401056: jne 401058 */
    0xc3,			  /* 401058: ret */
};

/* ebp_keep: f = 0x401059; eax saved in ebp, rax left alone */
static const uint8_t ebp_keep[] = {
    0xe8, 0x65, 0x00, 0x00, 0x00, /* 401059: call 4010c3 <g> */
    0x89, 0xc5,			  /* 40105e: mov ebp,eax */
    0x40, 0x84, 0xed,		  /* 401060: test bpl,bpl */
    0x75, 0x00,			  /* 401063: jne 401065 */
    0xc3,			  /* 401065: ret */
};

/* test_al: f = 0x401066 */
static const uint8_t test_al[] = {
    0xe8, 0x58, 0x00, 0x00, 0x00, /* 401066: call 4010c3 <g> */
    0xa8, 0x01,			  /* 40106b: test al,0x1 */
    0x75, 0x00,			  /* 40106d: jne 40106f */
    0xc3,			  /* 40106f: ret */
};

/* stores: f = 0x401070 (the opt-level 0 shape) */
static const uint8_t stores[] = {
    0xe8, 0x4e, 0x00, 0x00, 0x00, /* 401070: call 4010c3 <g> */
    0x48, 0x89, 0x54, 0x24, 0x08, /* 401075: mov QWORD PTR [rsp+0x8],rdx */
    0x48, 0x89, 0x44, 0x24, 0x10, /* 40107a: mov QWORD PTR [rsp+0x10],rax */
    0xeb, 0x00,			  /* 40107f: jmp 401081 */
    0xc3,			  /* 401081: ret */
};

/* movzx_: f = 0x401082 */
static const uint8_t movzx_[] = {
    0xe8, 0x3c, 0x00, 0x00, 0x00, /* 401082: call 4010c3 <g> */
    0x0f, 0xb6, 0xc8,		  /* 401087: movzx ecx,al */
    0x31, 0xc0,			  /* 40108a: xor eax,eax */
    0x85, 0xc9,			  /* 40108c: test ecx,ecx */
    0x74, 0x00,			  /* 40108e: je 401090 */
    0xc3,			  /* 401090: ret */
};

/* far: f = 0x401091; the jne is the 9th instruction after the return address */
static const uint8_t far[] = {
    0xe8, 0x2d, 0x00, 0x00, 0x00, /* 401091: call 4010c3 <g> */
    0x48, 0x89, 0xc3,		  /* 401096: mov rbx,rax */
    0x48, 0x89, 0xc1,		  /* 401099: mov rcx,rax */
    0x48, 0x89, 0xc6,		  /* 40109c: mov rsi,rax */
    0x48, 0x89, 0xc7,		  /* 40109f: mov rdi,rax */
    0x49, 0x89, 0xc0,		  /* 4010a2: mov r8,rax */
    0x49, 0x89, 0xc1,		  /* 4010a5: mov r9,rax */
    0x49, 0x89, 0xc2,		  /* 4010a8: mov r10,rax */
    0x49, 0x89, 0xc3,		  /* 4010ab: mov r11,rax */
    0x75, 0x00,			  /* 4010ae: jne 4010b0 */
    0xc3,			  /* 4010b0: ret */
};

/* trap: f = 0x4010b1 */
static const uint8_t trap[] = {
    0xe8, 0x0d, 0x00, 0x00, 0x00, /* 4010b1: call 4010c3 <g> */
    0x0f, 0x0b,			  /* 4010b6: ud2 */
};

/* retfirst: f = 0x4010b8 */
static const uint8_t retfirst[] = {
    0xe8, 0x06, 0x00, 0x00, 0x00, /* 4010b8: call 4010c3 <g> */
    0xc3,			  /* 4010bd: ret */
};

/* noret: f = 0x4010be; the call is the function's last instruction */
static const uint8_t noret[] = {
    0xe8, 0x00, 0x00, 0x00, 0x00, /* 4010be: call 4010c3 <g> */
};

/*
 * table: f = 0x401000, size 24 (a second link; h = 0x401018, the table at 0x401019):
 * a jump table the test gives no reader for, so where it lands stays unknown.
 */
static const uint8_t table[] = {
    0x48, 0x8d, 0x0d, 0x12, 0x00, 0x00, 0x00, /* 401000: lea rcx,[rip+0x12] # 401019 */
    0x48, 0x63, 0x04, 0x81,		      /* 401007: movsxd rax,DWORD PTR [rcx+rax*4] */
    0x48, 0x01, 0xc8,			      /* 40100b: add rax,rcx */
    0xff, 0xe0,				      /* 40100e: jmp rax */
    0xe8, 0x03, 0x00, 0x00, 0x00,	      /* 401010: call 401018 <h> */
    0x74, 0x00,				      /* 401015: je 401017 */
    0xc3,				      /* 401017: ret */
};

struct found {
	struct cfg g;
	struct continuation c;
	int built;
};

/* Build the CFG of code at addr and find the continuation of the call at call_addr. */
static void run(const uint8_t *code, size_t size, uint64_t addr, uint64_t call_addr,
		continuation_entered_fn entered, void *ctx, struct found *f)
{
	char err[256];
	int64_t i;

	memset(f, 0, sizeof(*f));
	f->built = cfg__build(&f->g, code, size, addr, NULL, NULL, err, sizeof(err));
	CHECK_EQ_I64(f->built, 0);
	if (f->built) {
		fprintf(stderr, "  cfg__build: %s\n", err);
		f->c.why = CONTINUATION_WHY_COUNT;
		return;
	}
	i = insn_seq__find(&f->g.seq, call_addr);
	CHECK(i >= 0);
	continuation__find(&f->g, (uint32_t)(i < 0 ? 0 : i), entered, ctx, &f->c);
}

static uint64_t site_addr(const struct found *f)
{
	return f->c.why == CONTINUATION_OK ? cfg__insn(&f->g, f->c.insn)->addr : 0;
}

static void done(struct found *f)
{
	if (!f->built)
		cfg__free(&f->g);
}

static void test_jcc_after_cmp(void)
{
	struct found f;

	run(acc, sizeof(acc), 0x401000, 0x401000, NULL, NULL, &f);
	CHECK_EQ_U64(f.c.why, CONTINUATION_OK);
	CHECK_EQ_U64(site_addr(&f), 0x401009); /* je, one on from the return address */
	CHECK_EQ_U64(f.c.distance, 1);
	CHECK_EQ_I64(f.c.reg[0], DWARF_REG_RAX);
	CHECK_EQ_U64(f.c.bytes[0], 8);
	CHECK_EQ_I64(f.c.reg[1], DWARF_REG_RDX);
	CHECK_EQ_U64(f.c.bytes[1], 8);
	CHECK(!f.c.stores);
	done(&f);
}

static void test_join_rejected(void)
{
	struct found f;

	run(join, sizeof(join), 0x401011, 0x401015, NULL, NULL, &f);
	CHECK_EQ_U64(f.c.why, CONTINUATION_JOIN);
	CHECK(!f.c.stepped_ok); /* the return address itself is the jne's target */
	done(&f);
}

/* Code of another function jumping into the run is a join too. */
static bool entered_at_401009(void *ctx, uint64_t addr)
{
	(void)ctx;
	return addr == 0x401009;
}

static bool entered_at_401010(void *ctx, uint64_t addr)
{
	(void)ctx;
	return addr == 0x401010;
}

static void test_entered_from_outside(void)
{
	struct found f;

	run(acc, sizeof(acc), 0x401000, 0x401000, entered_at_401009, NULL, &f);
	CHECK_EQ_U64(f.c.why, CONTINUATION_JOIN);
	done(&f);
	/* an entry after the site does not matter */
	run(acc, sizeof(acc), 0x401000, 0x401000, entered_at_401010, NULL, &f);
	CHECK_EQ_U64(f.c.why, CONTINUATION_OK);
	CHECK_EQ_U64(site_addr(&f), 0x401009);
	done(&f);
}

/* g = 0x401100: a frame torn down with `leave`: rsp from rbp, by no known amount */
static const uint8_t leave_[] = {
    0x55,			  /* 401100: push rbp */
    0x48, 0x89, 0xe5,		  /* 401101: mov rbp,rsp */
    0xe8, 0x00, 0x01, 0x00, 0x00, /* 401104: call 401209 */
    0xc9,			  /* 401109: leave */
    0xc3,			  /* 40110a: ret */
};

/* h = 0x401110: `call; add rsp, 0x28; pop rbx; jmp`: popped by a known amount */
static const uint8_t popped[] = {
    0xe8, 0x00, 0x01, 0x00, 0x00, /* 401110: call 401215 */
    0x48, 0x83, 0xc4, 0x28,	  /* 401115: add rsp,0x28 */
    0x5b,			  /* 401119: pop rbx */
    0xeb, 0x00,			  /* 40111a: jmp 40111c */
    0xc3,			  /* 40111c: ret */
};

static void test_rsp_change(void)
{
	struct found f;

	/* `pop rbx; ret` after the call: the caller returns at once (its callers') */
	run(rsp_change, sizeof(rsp_change), 0x401022, 0x401023, NULL, NULL, &f);
	CHECK_EQ_U64(f.c.why, CONTINUATION_TAIL);
	CHECK_EQ_U64(f.c.sp_adjust, 8);
	CHECK_EQ_U64(f.c.distance, 1);
	done(&f);
	run(leave_, sizeof(leave_), 0x401100, 0x401104, NULL, NULL, &f);
	CHECK_EQ_U64(f.c.why, CONTINUATION_STACK);
	done(&f);
	/* freed by a known amount before an emulated jmp: rsp there is the entry's + 8 +
	 * 0x28 + 8; the pop forgot what rbx held, rax is untouched */
	run(popped, sizeof(popped), 0x401110, 0x401110, NULL, NULL, &f);
	CHECK_EQ_U64(f.c.why, CONTINUATION_OK);
	CHECK_EQ_U64(site_addr(&f), 0x40111a);
	CHECK_EQ_U64(f.c.sp_adjust, 0x30);
	CHECK_EQ_I64(f.c.reg[0], DWARF_REG_RAX);
	done(&f);
}

static void test_call_between_rejected(void)
{
	struct found f;

	run(icall, sizeof(icall), 0x40102a, 0x40102a, NULL, NULL, &f);
	CHECK_EQ_U64(f.c.why, CONTINUATION_BRANCH);
	done(&f);
	/* a direct call is emulated: the site is that call, before it runs */
	run(dcall, sizeof(dcall), 0x40103c, 0x40103c, NULL, NULL, &f);
	CHECK_EQ_U64(f.c.why, CONTINUATION_OK);
	CHECK_EQ_U64(site_addr(&f), 0x401044);
	CHECK_EQ_U64(f.c.distance, 1);
	CHECK_EQ_I64(f.c.reg[0], DWARF_REG_RAX); /* mov rdi, rax left rax alone */
	done(&f);
}

static void test_result_in_rbp(void)
{
	struct found f;

	run(ebp, sizeof(ebp), 0x40104a, 0x40104a, NULL, NULL, &f);
	CHECK_EQ_U64(f.c.why, CONTINUATION_OK);
	CHECK_EQ_U64(site_addr(&f), 0x401056);
	CHECK_EQ_U64(f.c.distance, 3);
	CHECK_EQ_I64(f.c.reg[0], DWARF_REG_RBP); /* rax was cleared: eax lives on in ebp */
	CHECK_EQ_U64(f.c.bytes[0], 4);
	CHECK_EQ_I64(f.c.reg[1], DWARF_REG_RDX);
	done(&f);
	/* while rax itself still holds all of it, rax is the answer */
	run(ebp_keep, sizeof(ebp_keep), 0x401059, 0x401059, NULL, NULL, &f);
	CHECK_EQ_U64(f.c.why, CONTINUATION_OK);
	CHECK_EQ_U64(site_addr(&f), 0x401063);
	CHECK_EQ_I64(f.c.reg[0], DWARF_REG_RAX);
	CHECK_EQ_U64(f.c.bytes[0], 8);
	done(&f);
}

/*
 * tokio's Core::poll after a task's root poll (release): the result kept in ebp over
 * the TaskIdGuard's drop, called through the GOT, then tested.
 */
static const uint8_t guard_drop[] = {
    0xe8, 0x1b, 0x00, 0x00, 0x00,	/* 401100: call 401120 <poll> */
    0x89, 0xc5,				/* 401105: mov ebp,eax */
    0x48, 0x89, 0xc1,			/* 401107: mov rcx,rax */
    0x48, 0x8d, 0x7c, 0x24, 0x18,	/* 40110a: lea rdi,[rsp+0x18] */
    0xff, 0x15, 0x10, 0x00, 0x00, 0x00, /* 40110f: call QWORD PTR [rip+0x10] */
    0x40, 0x84, 0xed,			/* 401115: test bpl,bpl */
    0x75, 0x01,				/* 401118: jne 40111b */
    0xc3,				/* 40111a: ret */
    0xc3,				/* 40111b: ret */
};

static bool cross_any(void *ctx, const struct insn *in)
{
	(void)ctx;
	return in->addr == 0x40110f;
}

static bool cross_none(void *ctx, const struct insn *in)
{
	(void)ctx;
	(void)in;
	return false;
}

static void test_call_passed_over(void)
{
	struct found f;
	char err[256];
	int64_t i;

	/* without leave to pass it, the indirect call ends the walk; the return address,
	 * which only the return reaches, is left as a single-stepped site */
	run(guard_drop, sizeof(guard_drop), 0x401100, 0x401100, NULL, NULL, &f);
	CHECK_EQ_U64(f.c.why, CONTINUATION_BRANCH);
	CHECK(f.c.stepped_ok);
	CHECK_EQ_U64(f.c.stepped_insn, 1);
	done(&f);
	for (int allow = 0; allow < 2; allow++) {
		memset(&f, 0, sizeof(f));
		f.built = cfg__build(&f.g, guard_drop, sizeof(guard_drop), 0x401100, NULL, NULL,
				     err, sizeof(err));
		CHECK_EQ_I64(f.built, 0);
		if (f.built)
			return;
		i = insn_seq__find(&f.g.seq, 0x401100);
		CHECK_EQ_I64(i, 0);
		continuation__find_across(&f.g, 0, NULL, allow ? cross_any : cross_none, NULL,
					  &f.c);
		if (!allow) {
			CHECK_EQ_U64(f.c.why, CONTINUATION_BRANCH);
			done(&f);
			continue;
		}
		CHECK_EQ_U64(f.c.why, CONTINUATION_OK);
		CHECK_EQ_U64(site_addr(&f), 0x401118); /* the jne, after the call */
		CHECK_EQ_U64(f.c.distance, 5);
		CHECK_EQ_U64(f.c.calls, 1);
		CHECK(f.c.stores);
		/* ebp, callee-saved, still holds eax; the copy in rcx and rdx itself are gone */
		CHECK_EQ_I64(f.c.reg[0], DWARF_REG_RBP);
		CHECK_EQ_U64(f.c.bytes[0], 4);
		CHECK_EQ_I64(f.c.reg[1], -1);
		done(&f);
	}
}

static void test_movzx_and_test_al(void)
{
	struct found f;

	run(movzx_, sizeof(movzx_), 0x401082, 0x401082, NULL, NULL, &f);
	CHECK_EQ_U64(f.c.why, CONTINUATION_OK);
	CHECK_EQ_U64(site_addr(&f), 0x40108e);
	CHECK_EQ_I64(f.c.reg[0], DWARF_REG_RCX);
	CHECK_EQ_U64(f.c.bytes[0], 1); /* movzx ecx, al: the low byte */
	done(&f);
	run(test_al, sizeof(test_al), 0x401066, 0x401066, NULL, NULL, &f);
	CHECK_EQ_U64(f.c.why, CONTINUATION_OK);
	CHECK_EQ_U64(site_addr(&f), 0x40106d);
	CHECK_EQ_I64(f.c.reg[0], DWARF_REG_RAX); /* test al, 1 writes the flags only */
	CHECK_EQ_U64(f.c.bytes[0], 8);
	done(&f);
}

static void test_stores_then_jmp(void)
{
	struct found f;

	run(stores, sizeof(stores), 0x401070, 0x401070, NULL, NULL, &f);
	CHECK_EQ_U64(f.c.why, CONTINUATION_OK);
	CHECK_EQ_U64(site_addr(&f), 0x40107f);
	CHECK_EQ_U64(f.c.distance, 2);
	CHECK(f.c.stores);
	CHECK_EQ_I64(f.c.reg[0], DWARF_REG_RAX);
	CHECK_EQ_I64(f.c.reg[1], DWARF_REG_RDX);
	done(&f);
}

static void test_other_rejections(void)
{
	struct found f;

	run(far, sizeof(far), 0x401091, 0x401091, NULL, NULL, &f);
	CHECK_EQ_U64(f.c.why, CONTINUATION_TOO_FAR);
	done(&f);
	run(trap, sizeof(trap), 0x4010b1, 0x4010b1, NULL, NULL, &f);
	CHECK_EQ_U64(f.c.why, CONTINUATION_STOP);
	done(&f);
	/* a ret right after the call: the caller returns at once (caller_exits.c goes on
	 * in its callers) */
	run(retfirst, sizeof(retfirst), 0x4010b8, 0x4010b8, NULL, NULL, &f);
	CHECK_EQ_U64(f.c.why, CONTINUATION_TAIL);
	CHECK_EQ_U64(f.c.sp_adjust, 0);
	done(&f);
	run(noret, sizeof(noret), 0x4010be, 0x4010be, NULL, NULL, &f);
	CHECK_EQ_U64(f.c.why, CONTINUATION_NO_RETURN);
	done(&f);
	/* an unread jump table may land anywhere, the return address included */
	run(table, sizeof(table), 0x401000, 0x401010, NULL, NULL, &f);
	CHECK_EQ_U64(f.g.nr_unresolved_dispatch, 1);
	CHECK_EQ_U64(f.c.why, CONTINUATION_UNKNOWN_PATHS);
	done(&f);
	for (int w = 0; w < CONTINUATION_WHY_COUNT; w++)
		CHECK(strcmp(continuation_why__describe(w), "?") != 0);
}

/* ---- the callers rule, on a hand-built index ---- */

#define F_CALLED 0x1000u /* two direct calls, one call through its GOT slot */
#define F_TAIL	 0x1100u /* a direct call, and a tail jump to it */
#define F_LEA	 0x1200u /* a direct call, and `lea` of its address */
#define F_VTABLE 0x1300u /* held by a data word outside the GOT */
#define F_LOADED 0x1400u /* its GOT slot loaded into a register by code */
#define F_NONE	 0x1500u /* nothing calls it */
#define GOT	 0x9000u /* [0x9000, 0x9100) */
#define VTABLE	 0xa000u

static void index_init(struct callsites *ix)
{
	static struct callsite calls[] = {
	    /* sorted by (to, addr), as callsites__build leaves them */
	    {.addr = 0x2100, .to = F_CALLED, .fn = 1, .size = 5, .kind = CALLSITE_DIRECT},
	    {.addr = 0x2200, .to = F_CALLED, .fn = 2, .size = 5, .kind = CALLSITE_DIRECT},
	    {.addr = 0x2010, .to = F_TAIL, .fn = 0, .size = 5, .kind = CALLSITE_DIRECT},
	    {.addr = 0x2020, .to = F_LEA, .fn = 0, .size = 5, .kind = CALLSITE_DIRECT},
	    {.addr = 0x2030, .to = F_LOADED, .fn = 0, .size = 5, .kind = CALLSITE_DIRECT},
	    {.addr = 0x2000, .to = GOT, .fn = 0, .size = 6, .kind = CALLSITE_SLOT},
	    {.addr = 0x2040, .to = GOT + 8, .fn = 0, .size = 6, .kind = CALLSITE_SLOT},
	};
	static struct callsite_holder holders[] = {
	    /* sorted by value */
	    {.word = GOT, .value = F_CALLED},
	    {.word = VTABLE, .value = F_VTABLE},
	    {.word = GOT + 8, .value = F_LOADED},
	};

	memset(ix, 0, sizeof(*ix));
	u64_map__init(&ix->jumps_in);
	u64_map__init(&ix->refs);
	u64_map__init(&ix->fn_starts);
	ix->calls = calls;
	ix->nr_calls = sizeof(calls) / sizeof(calls[0]);
	ix->holders = holders;
	ix->nr_holders = sizeof(holders) / sizeof(holders[0]);
	ix->got[0][0] = GOT;
	ix->got[0][1] = GOT + 0x100;
	ix->nr_got = 1;
	must(u64_map__set(&ix->jumps_in, F_TAIL, 0x2500) ? NULL : ix);
	must(u64_map__set(&ix->refs, F_LEA, 0x2600) ? NULL : ix);
	must(u64_map__set(&ix->refs, GOT + 8, 0x2700) ? NULL : ix);
}

static void index_free(struct callsites *ix)
{
	u64_map__free(&ix->jumps_in);
	u64_map__free(&ix->refs);
	u64_map__free(&ix->fn_starts);
}

static void callers(const struct callsites *ix, uint64_t fn, uint32_t want_nr, bool want_known,
		    const char *why_has)
{
	struct callsite *out = NULL;
	uint32_t nr = 0;
	bool known = !want_known;
	char why[256] = "x";

	CHECK_EQ_I64(callsites__callers(ix, fn, &out, &nr, &known, why, sizeof(why)), 0);
	CHECK_EQ_U64(nr, want_nr);
	CHECK(known == want_known);
	if (want_known)
		CHECK_STR(why, "");
	else if (!strstr(why, why_has))
		CHECK_STR(why, why_has);
	for (uint32_t i = 1; i < nr; i++)
		CHECK(out[i - 1].addr < out[i].addr);
	free(out);
}

static void test_callers_rule(void)
{
	struct callsites ix;
	struct callsite *out = NULL;
	uint32_t nr = 0, first;
	bool known = false;
	char why[256];

	index_init(&ix);
	/* direct calls and the call through the GOT slot, by address */
	CHECK_EQ_I64(callsites__callers(&ix, F_CALLED, &out, &nr, &known, why, sizeof(why)), 0);
	CHECK(known);
	CHECK_EQ_U64(nr, 3);
	if (nr == 3) {
		CHECK_EQ_U64(out[0].addr, 0x2000);
		CHECK_EQ_U64(out[0].kind, CALLSITE_SLOT);
		CHECK_EQ_U64(out[1].addr, 0x2100);
		CHECK_EQ_U64(out[2].addr, 0x2200);
		CHECK_EQ_U64(out[2].kind, CALLSITE_DIRECT);
	}
	free(out);
	callers(&ix, F_TAIL, 1, false, "tail-called by the jump at 0x2500");
	callers(&ix, F_LEA, 1, false, "its address is taken by the code at 0x2600");
	callers(&ix, F_VTABLE, 0, false, "held by the data word at 0xa000");
	callers(&ix, F_LOADED, 1, false, "GOT slot at 0x9008 is read by the code at 0x2700");
	callers(&ix, F_NONE, 0, true, "");
	CHECK_EQ_U64(callsites__calls_to(&ix, GOT + 8, &first), 1);
	CHECK_EQ_U64(ix.calls[first].addr, 0x2040);
	/* code that did not decode may hide a call: nobody's callers are known */
	ix.undecoded_bytes = 12;
	ix.first_undecoded = 0x3000;
	callers(&ix, F_CALLED, 3, false, "12 bytes of code do not decode (the first at 0x3000)");
	callers(&ix, F_NONE, 0, false, "do not decode");
	index_free(&ix);
}

int main(void)
{
	test_jcc_after_cmp();
	test_join_rejected();
	test_entered_from_outside();
	test_rsp_change();
	test_call_between_rejected();
	test_result_in_rbp();
	test_call_passed_over();
	test_movzx_and_test_al();
	test_stores_then_jmp();
	test_other_rejections();
	test_callers_rule();
	TEST_MAIN_END();
}
