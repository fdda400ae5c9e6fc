// SPDX-License-Identifier: GPL-2.0
/*
 * Tail calls out of poll fns, no root needed (docs/tracing.md, "Tail calls"):
 *  - the callee analysis (analyze/tail_calls.c): a callee's rets stand for the
 *    poll's exit only when rets are its only exits; and a conditional tail jump's
 *    exit carries its condition (the probe fires before the branch is decided);
 *  - the probe plan (trace/trace_plan.c): a hand-written future's poll that leaves
 *    by a followed tail jump ends at the callee's rets (one probe per ret, shared by
 *    every poll jumping there), not at the jump, where rax is not its result yet; a
 *    tail jump not followed reads no result (SPEC_EXIT_TAIL_CALL); a state
 *    machine's tail jump still reads __state.
 *
 * The snippets are written in Intel syntax, assembled with GNU as and linked at
 * 0x401000 (`ld -Ttext=0x401000`); the bytes and listings are objdump's.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/cfg.h"
#include "analyze/disasm.h"
#include "analyze/tail_calls.h"
#include "trace/trace_plan.h"
#include "testlib.h"

/* callee_ok: 0x401000, size 13: two rets behind a branch */
static const uint8_t callee_ok[] = {
    0x85, 0xff,			  /* 401000: test edi,edi */
    0x74, 0x06,			  /* 401002: je 40100a */
    0xb8, 0x01, 0x00, 0x00, 0x00, /* 401004: mov eax,0x1 */
    0xc3,			  /* 401009: ret */
    0x31, 0xc0,			  /* 40100a: xor eax,eax */
    0xc3,			  /* 40100c: ret */
};

/* callee_tail: 0x40100d, size 9: a ret, and a tail jump on */
static const uint8_t callee_tail[] = {
    0x85, 0xff,				/* 40100d: test edi,edi */
    0x0f, 0x85, 0xeb, 0x0f, 0x00, 0x00, /* 40100f: jne 402000 */
    0xc3,				/* 401015: ret */
};

/* callee_indirect: 0x401016, size 6: a vtable tail call */
static const uint8_t callee_indirect[] = {
    0x48, 0x8b, 0x47, 0x18, /* 401016: mov rax,QWORD PTR [rdi+0x18] */
    0xff, 0xe0,		    /* 40101a: jmp rax */
};

/* callee_noret: 0x40101c, size 2 */
static const uint8_t callee_noret[] = {
    0x0f, 0x0b, /* 40101c: ud2 */
};

/* cond_tail: 0x40101e, size 11: a conditional tail call, then a ret */
static const uint8_t cond_tail[] = {
    0x85, 0xff,				/* 40101e: test edi,edi */
    0x0f, 0x85, 0xda, 0x0f, 0x00, 0x00, /* 401020: jne 402000 */
    0x31, 0xc0,				/* 401026: xor eax,eax */
    0xc3,				/* 401028: ret */
};

/* tail_calls__callee_rets on one snippet: its verdict, the rets, the reason. */
static int callee_rets(const uint8_t *code, size_t size, uint64_t addr, uint64_t *rets,
		       uint32_t *nr, char *why, size_t whylen)
{
	char err[128] = "";
	struct cfg g;
	int r = cfg__build(&g, code, size, addr, NULL, NULL, err, sizeof(err));

	CHECK_EQ_I64(r, 0);
	if (r)
		return -1;
	why[0] = '\0';
	r = tail_calls__callee_rets(&g, rets, nr, why, whylen);
	cfg__free(&g);
	return r;
}

static void test_callee_rets(void)
{
	uint64_t rets[4];
	uint32_t nr = 99;
	char why[256];

	CHECK_EQ_I64(
	    callee_rets(callee_ok, sizeof(callee_ok), 0x401000, rets, &nr, why, sizeof(why)), 0);
	CHECK_EQ_U64(nr, 2);
	CHECK_EQ_U64(rets[0], 0x401009);
	CHECK_EQ_U64(rets[1], 0x40100c);

	CHECK_EQ_I64(
	    callee_rets(callee_tail, sizeof(callee_tail), 0x40100d, rets, &nr, why, sizeof(why)),
	    1);
	CHECK_EQ_U64(nr, 0);
	CHECK(strstr(why, "tail-jumps on to 0x402000 (at 0x40100f)") != NULL);

	CHECK_EQ_I64(callee_rets(callee_indirect, sizeof(callee_indirect), 0x401016, rets, &nr, why,
				 sizeof(why)),
		     1);
	CHECK_EQ_U64(nr, 0);
	CHECK(strstr(why, "indirect jump at 0x40101a") != NULL);

	CHECK_EQ_I64(
	    callee_rets(callee_noret, sizeof(callee_noret), 0x40101c, rets, &nr, why, sizeof(why)),
	    1);
	CHECK(strstr(why, "never returns") != NULL);
}

/* A conditional tail jump is an exit only when taken: its exit says under which flags. */
static void test_conditional_tail_jump(void)
{
	struct exit_site *exits = NULL;
	struct entry_site entry;
	uint32_t nr = 0;
	char err[128];

	CHECK_EQ_I64(disasm__analyze_function(cond_tail, sizeof(cond_tail), 0x40101e, 5, &exits,
					      &nr, &entry, err, sizeof(err)),
		     0);
	CHECK_EQ_U64(nr, 2);
	if (nr == 2) {
		CHECK_EQ_U64(exits[0].addr, 0x401020);
		CHECK_EQ_U64(exits[0].kind, EXIT_TAIL_JMP);
		CHECK_EQ_U64(exits[0].cond, 0x5); /* jne: 0f 85 */
		CHECK_EQ_U64(exits[1].addr, 0x401028);
		CHECK_EQ_U64(exits[1].kind, EXIT_RET);
		CHECK_EQ_U64(exits[1].cond, EXIT_COND_ALWAYS);
	}
	free(exits);
}

/* ---- the plan ---- */

#define CALLEE_OK   0x5000u /* rets at 0x5010 and 0x5020 */
#define CALLEE_POLL 0x6000u /* a poll fn's own code (poll 4), ret at 0x6008 */
#define CALLEE_NOT  0x7000u /* not followed */

static struct exit_site exit_at(uint64_t off, enum exit_kind kind, uint64_t target, uint32_t cond)
{
	return (struct exit_site){.addr = off,
				  .file_offset = off,
				  .kind = kind,
				  .target = target,
				  .probeable = true,
				  .cond = (uint8_t)cond,
				  .covers = off};
}

/* A poll fn at [base, base + 0x100) with these exits, entry at its first byte. */
static void add_poll(struct model *m, int32_t future, uint64_t base, const struct exit_site *xs,
		     uint32_t nr)
{
	struct poll_fn *p = must(model__add_poll(m));

	p->future = future;
	p->addr = p->file_offset = base;
	p->size = 0x100;
	p->self_known = true;
	p->self_arg_reg = 5; /* rdi */
	p->entry = (struct entry_site){.valid = true, .addr = base, .file_offset = base};
	p->ret = (struct poll_layout){.known = true,
				      .size = 1,
				      .discr_size = 1,
				      .pending_has_value = true,
				      .pending_value = 1,
				      .ready_has_value = true,
				      .convention = RET_CONV_REGISTERS};
	p->exits = must(calloc(nr, sizeof(*xs)));
	memcpy(p->exits, xs, nr * sizeof(*xs));
	p->nr_exits = nr;
	m->futures[future].poll = (int32_t)(m->nr_polls - 1);
}

static void add_callee(struct model *m, uint64_t addr, int32_t poll, const uint64_t *rets,
		       uint32_t nr, const char *unfollowed)
{
	struct tail_callee *c = must(model__add_tail_callee(m));

	c->addr = c->file_offset = addr;
	c->size = 0x40;
	c->poll = poll;
	c->unfollowed = unfollowed;
	if (nr) {
		c->ret_offsets = must(calloc(nr, sizeof(*rets)));
		memcpy(c->ret_offsets, rets, nr * sizeof(*rets));
		c->nr_rets = nr;
	}
}

/*
 * Futures 0-7, poll i of future i (base: its first byte, its entry):
 *  0 @0x1000: jmp CALLEE_OK                  1 @0x2000: ret; jmp CALLEE_OK; jmp rax
 *  2 @0x3000: a state machine: jmp CALLEE_OK 3 @0x4000: jmp CALLEE_POLL (poll 4's code)
 *  4 @0x6000: the callee poll fn: ret        5 @0xa000: jmp CALLEE_NOT
 *  6 @0x8000: one instruction, jmp CALLEE_NOT 7 @0x9000: jne CALLEE_NOT; ret
 */
static void build_model(struct model *m)
{
	const uint32_t A = EXIT_COND_ALWAYS;

	model__init(m);
	for (int i = 0; i < 8; i++) {
		struct future *f = must(model__add_future(m));

		f->kind = i == 2 ? FUTURE_ASYNC_FN : FUTURE_HANDWRITTEN;
	}
	m->futures[2].has_state = true;
	m->futures[2].state_offset = 8;
	m->futures[2].state_size = 1;
	struct exit_site x0[] = {exit_at(0x1010, EXIT_TAIL_JMP, CALLEE_OK, A)};
	struct exit_site x1[] = {exit_at(0x2010, EXIT_RET, 0, A),
				 exit_at(0x2020, EXIT_TAIL_JMP, CALLEE_OK, A),
				 exit_at(0x2030, EXIT_TAIL_JMP_INDIRECT, 0, A)};
	struct exit_site x2[] = {exit_at(0x3010, EXIT_TAIL_JMP, CALLEE_OK, A)};
	struct exit_site x3[] = {exit_at(0x4010, EXIT_TAIL_JMP, CALLEE_POLL, A)};
	struct exit_site x4[] = {exit_at(0x6008, EXIT_RET, 0, A)};
	struct exit_site x5[] = {exit_at(0xa010, EXIT_TAIL_JMP, CALLEE_NOT, A)};
	struct exit_site x6[] = {exit_at(0x8000, EXIT_TAIL_JMP, CALLEE_NOT, A)};
	struct exit_site x7[] = {exit_at(0x9010, EXIT_TAIL_JMP, CALLEE_NOT, 0x5),
				 exit_at(0x9020, EXIT_RET, 0, A)};
	add_poll(m, 0, 0x1000, x0, 1);
	add_poll(m, 1, 0x2000, x1, 3);
	add_poll(m, 2, 0x3000, x2, 1);
	add_poll(m, 3, 0x4000, x3, 1);
	add_poll(m, 4, CALLEE_POLL, x4, 1);
	add_poll(m, 5, 0xa000, x5, 1);
	add_poll(m, 6, 0x8000, x6, 1);
	add_poll(m, 7, 0x9000, x7, 2);
	const uint64_t ok_rets[] = {0x5010, 0x5020}, poll_rets[] = {0x6008};
	add_callee(m, CALLEE_OK, -1, ok_rets, 2, NULL);
	add_callee(m, CALLEE_POLL, 4, poll_rets, 1, NULL);
	add_callee(m, CALLEE_NOT, -1, NULL, 0, "it leaves by an indirect jump");
}

/* The one spec at file offset off (NULL, counted as a failure, if not one). */
static const struct poll_spec *spec_at(const struct trace_plan *p, uint64_t off, uint8_t kind)
{
	const struct poll_spec *found = NULL;
	int n = 0;

	for (uint32_t i = 0; i < p->nr; i++)
		if (p->offsets[i] == off && (p->specs[i].kind & kind)) {
			found = &p->specs[i];
			n++;
		}
	CHECK_EQ_I64(n, 1);
	return n == 1 ? found : NULL;
}

static bool no_spec_at(const struct trace_plan *p, uint64_t off)
{
	for (uint32_t i = 0; i < p->nr; i++)
		if (p->offsets[i] == off)
			return false;
	return true;
}

static void test_plan(void)
{
	struct model m;
	struct selection s;
	struct trace_plan plan;
	const struct poll_spec *x;
	char err[256];

	build_model(&m);
	CHECK_EQ_I64(selection__init(&s, &m), 0);
	for (uint32_t f = 0; f < s.nr; f++)
		s.futures[f] = true;
	CHECK_EQ_I64(trace_plan__build(&plan, &m, &s, PLAN_EXITS_RET, 0, err, sizeof(err)), 0);

	/* polls 0 and 1 end at CALLEE_OK's rets: one probe each, not at their jumps */
	CHECK(no_spec_at(&plan, 0x1010) && no_spec_at(&plan, 0x2020));
	for (uint64_t off = 0x5010; off <= 0x5020; off += 0x10)
		if ((x = spec_at(&plan, off, PROBE_EXIT))) {
			CHECK_EQ_U64(x->flags & ~SPEC_HIT_CLASS_MASK,
				     SPEC_EXIT_TAIL_CALLEE | SPEC_SINGLE_STEPPED);
			/* each hit counted as a single-stepped exit (the tracer's own cost) */
			CHECK_EQ_U64((x->flags & SPEC_HIT_CLASS_MASK) >> SPEC_HIT_CLASS_SHIFT,
				     HIT_EXIT_STEPPED);
			CHECK_EQ_U64(x->exit_cond, SPEC_COND_ALWAYS);
		}
	CHECK_EQ_U64(plan.nr_tail_callee_exits, 2);
	/* their entries say so, and carry the Poll<T> layout the callee's rets decode */
	for (uint64_t off = 0x1000; off <= 0x2000; off += 0x1000)
		if ((x = spec_at(&plan, off, PROBE_ENTRY))) {
			CHECK(x->flags & SPEC_TAIL_CALLS);
			CHECK(x->flags & SPEC_RET_KNOWN);
			CHECK_EQ_U64(x->ret_discr_size, 1);
		}
	/* poll 1's own ret reads its result; its vtable tail call cannot */
	if ((x = spec_at(&plan, 0x2010, PROBE_EXIT)))
		CHECK(!(x->flags & (SPEC_EXIT_TAIL_CALL | SPEC_EXIT_TAIL_CALLEE)));
	if ((x = spec_at(&plan, 0x2030, PROBE_EXIT)))
		CHECK(x->flags & SPEC_EXIT_TAIL_CALL);
	/* a state machine reads __state at its jump, which is final there */
	if ((x = spec_at(&plan, 0x3010, PROBE_EXIT))) {
		CHECK(x->flags & SPEC_HAS_STATE);
		CHECK(!(x->flags & SPEC_EXIT_TAIL_CALL));
	}
	if ((x = spec_at(&plan, 0x3000, PROBE_ENTRY)))
		CHECK(!(x->flags & SPEC_TAIL_CALLS));
	/* poll 3 jumps into poll 4, traced itself (its entry would end poll 3's frame) */
	if ((x = spec_at(&plan, 0x4010, PROBE_EXIT)))
		CHECK(x->flags & SPEC_EXIT_TAIL_CALL);
	if ((x = spec_at(&plan, 0x6008, PROBE_EXIT))) /* poll 4's own ret only */
		CHECK(!(x->flags & SPEC_EXIT_TAIL_CALLEE));
	/* a callee whose rets are not its only exits: the jump reads no result */
	if ((x = spec_at(&plan, 0xa010, PROBE_EXIT)))
		CHECK(x->flags & SPEC_EXIT_TAIL_CALL);
	/* a function that is one tail jump: entry and exit in one spec, no result read */
	if ((x = spec_at(&plan, 0x8000, PROBE_ENTRY))) {
		CHECK_EQ_U64(x->kind, PROBE_ENTRY | PROBE_EXIT);
		CHECK(x->flags & SPEC_EXIT_TAIL_CALL);
	}
	/* a conditional tail jump ends the poll only when taken (jne) */
	if ((x = spec_at(&plan, 0x9010, PROBE_EXIT))) {
		CHECK_EQ_U64(x->exit_cond, 0x5);
		CHECK(x->flags & SPEC_EXIT_TAIL_CALL);
	}
	if ((x = spec_at(&plan, 0x9020, PROBE_EXIT)))
		CHECK_EQ_U64(x->exit_cond, SPEC_COND_ALWAYS);
	trace_plan__free(&plan);

	/* poll 4 not traced: poll 3 ends at its ret, as any other callee's */
	s.futures[4] = false;
	CHECK_EQ_I64(trace_plan__build(&plan, &m, &s, PLAN_EXITS_RET, 0, err, sizeof(err)), 0);
	CHECK(no_spec_at(&plan, 0x4010));
	if ((x = spec_at(&plan, 0x6008, PROBE_EXIT)))
		CHECK(x->flags & SPEC_EXIT_TAIL_CALLEE);
	if ((x = spec_at(&plan, 0x4000, PROBE_ENTRY)))
		CHECK(x->flags & SPEC_TAIL_CALLS);
	CHECK_EQ_U64(plan.nr_tail_callee_exits, 3);
	trace_plan__free(&plan);

	/* uretprobes see the real return: nothing to follow */
	CHECK_EQ_I64(trace_plan__build(&plan, &m, &s, PLAN_EXITS_URETPROBE, 0, err, sizeof(err)),
		     0);
	CHECK(no_spec_at(&plan, 0x5010) && no_spec_at(&plan, 0x5020));
	CHECK_EQ_U64(plan.nr_tail_callee_exits, 0);
	trace_plan__free(&plan);
	selection__free(&s);
	model__free(&m);
}

int main(void)
{
	test_callee_rets();
	test_conditional_tail_jump();
	test_plan();
	TEST_MAIN_END();
}
