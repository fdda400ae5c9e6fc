// SPDX-License-Identifier: GPL-2.0
/*
 * Exits in the caller in the probe plan (trace/trace_plan.c; docs/tracing.md, "Exits
 * in the caller"), no root needed: in the emulated exit mode, a poll fn whose own
 * exits would be single-stepped ends at the analyzer's caller sites (rsp the entry's
 * + 8, emulated), when every call has one and the result can be read there as at a
 * `ret`. Otherwise, and in the other modes, its own exits stay.
 */
#include <stdlib.h>
#include <string.h>

#include "trace/trace_plan.h"
#include "testlib.h"

/* Futures and polls 0-5, poll i at 0x1000 * (i + 1), one ret at base + 0x10:
 *  0 a state machine, ret single-stepped, two usable caller sites   -> callers
 *  1 hand-written, ret single-stepped, sites with rax/rdx untouched  -> callers
 *  2 hand-written, rax copied to rbx at its site                      -> own ret
 *  3 a state machine whose own exit is an emulated branch site        -> own exit
 *  4 a state machine with a caller not found (caller_exits_ok false)  -> own ret
 *  5 a state machine that may leave by a tail jump                    -> own exits
 */
static void add_poll(struct model *m, int32_t i, bool state, bool emulated_exit, bool tail)
{
	struct future *f = must(model__add_future(m));
	struct poll_fn *p = must(model__add_poll(m));
	uint64_t base = 0x1000u * (uint64_t)(i + 1);
	uint32_t nr = tail ? 2 : 1;

	f->kind = state ? FUTURE_ASYNC_FN : FUTURE_HANDWRITTEN;
	f->has_state = state;
	f->state_offset = 8;
	f->state_size = 1;
	f->poll = i;
	p->future = i;
	p->addr = p->file_offset = base;
	p->size = 0x100;
	p->self_known = true;
	p->self_arg_reg = 5;
	p->entry =
	    (struct entry_site){.valid = true, .emulated = true, .addr = base, .file_offset = base};
	p->ret = (struct poll_layout){.known = true,
				      .size = 1,
				      .discr_size = 1,
				      .pending_has_value = true,
				      .pending_value = 1,
				      .ready_has_value = true,
				      .convention = RET_CONV_REGISTERS};
	p->exits = must(calloc(nr, sizeof(*p->exits)));
	p->exits[0] = (struct exit_site){.addr = base + 0x10,
					 .file_offset = base + 0x10,
					 .kind = emulated_exit ? EXIT_BRANCH : EXIT_RET,
					 .probeable = true,
					 .emulated = emulated_exit,
					 .sp_delta = emulated_exit ? -8 : 0,
					 .cond = EXIT_COND_ALWAYS,
					 .covers = base + 0x10};
	if (tail)
		p->exits[1] = (struct exit_site){.addr = base + 0x20,
						 .file_offset = base + 0x20,
						 .kind = EXIT_TAIL_JMP,
						 .target = 0xf000,
						 .probeable = true,
						 .cond = EXIT_COND_ALWAYS,
						 .covers = base + 0x20};
	p->nr_exits = nr;
	p->callers_known = i != 4;
	p->caller_exits_ok = i != 4;
	p->caller_exits = must(calloc(2, sizeof(*p->caller_exits)));
	p->nr_caller_exits = 2;
	for (uint32_t k = 0; k < 2; k++) {
		struct caller_exit *x = &p->caller_exits[k];

		*x = (struct caller_exit){
		    .call_addr = 0x20000u + 0x1000u * (uint64_t)i + 0x100u * k,
		    .usable = i != 4,
		    /* the second through a wrapper that freed 0x28 bytes and returned */
		    .sp_delta = k ? 0x38 : 8,
		    .result = state ? CALLER_RESULT_NOT_NEEDED : CALLER_RESULT_READABLE,
		    .result_reg = {0, 1},
		    .result_bytes = {8, 8}};
		x->addr = x->file_offset = x->call_addr + 5;
		if (i == 2)
			x->result_reg[0] = 3; /* mov rbx, rax; ...: the result moved */
	}
}

static uint32_t specs_at(const struct trace_plan *p, uint64_t off, const struct poll_spec **out)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < p->nr; i++)
		if (p->offsets[i] == off) {
			*out = &p->specs[i];
			n++;
		}
	return n;
}

static void test_plan(void)
{
	struct model m;
	struct selection s;
	struct trace_plan plan;
	const struct poll_spec *x = NULL;
	char err[256];

	model__init(&m);
	for (int32_t i = 0; i < 6; i++)
		add_poll(&m, i, i != 1 && i != 2, i == 3, i == 5);
	CHECK_EQ_I64(selection__init(&s, &m), 0);
	for (uint32_t f = 0; f < s.nr; f++)
		s.futures[f] = true;
	CHECK_EQ_I64(trace_plan__build(&plan, &m, &s, PLAN_EXITS_EMULATED, 0, err, sizeof(err)), 0);
	CHECK_EQ_U64(plan.nr_polls, 6);
	CHECK_EQ_U64(plan.nr_caller_polls, 2);
	CHECK_EQ_U64(plan.nr_caller_exits, 4);
	for (int32_t i = 0; i < 6; i++) {
		uint64_t base = 0x1000u * (uint64_t)(i + 1);
		bool callers = i == 0 || i == 1;

		CHECK_EQ_U64(specs_at(&plan, base + 0x10, &x), callers ? 0 : 1);
		for (uint32_t k = 0; k < 2; k++) {
			uint64_t site = 0x20000u + 0x1000u * (uint64_t)i + 0x100u * k + 5;

			CHECK_EQ_U64(specs_at(&plan, site, &x), callers ? 1 : 0);
			if (!callers)
				continue;
			CHECK_EQ_U64(x->kind, PROBE_EXIT);
			CHECK_EQ_U64(x->poll, (uint64_t)i);
			/* the ret popped the return address; a wrapper's ret and frame more */
			CHECK_EQ_I64(x->sp_delta, k ? 0x38 : 8);
			CHECK_EQ_U64(x->exit_cond, SPEC_COND_ALWAYS);
			CHECK(!(x->flags & (SPEC_SINGLE_STEPPED | SPEC_EXIT_RETURNED)));
			CHECK_EQ_U64((x->flags & SPEC_HIT_CLASS_MASK) >> SPEC_HIT_CLASS_SHIFT,
				     HIT_EXIT_EMULATED);
			/* the result as at a ret: __state through self, or rax/rdx */
			CHECK_EQ_U64(!!(x->flags & SPEC_HAS_STATE), i == 0);
			CHECK(i == 0 || (x->flags & SPEC_RET_KNOWN));
		}
		CHECK_EQ_U64(specs_at(&plan, base, &x), 1);
		if (x)
			CHECK(x->kind & PROBE_ENTRY);
	}
	CHECK_EQ_U64(specs_at(&plan, 0x6000 + 0x20, &x), 1); /* poll 5's tail jump kept */
	trace_plan__free(&plan);

	/* --exits ret: every poll keeps its own exits */
	CHECK_EQ_I64(trace_plan__build(&plan, &m, &s, PLAN_EXITS_RET, 0, err, sizeof(err)), 0);
	CHECK_EQ_U64(plan.nr_caller_exits, 0);
	CHECK_EQ_U64(specs_at(&plan, 0x1010, &x), 1);
	CHECK_EQ_U64(specs_at(&plan, 0x21005, &x), 0);
	trace_plan__free(&plan);
	selection__free(&s);
	model__free(&m);
}

int main(void)
{
	test_plan();
	TEST_MAIN_END();
}
