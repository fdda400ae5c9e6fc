/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One step of the off-CPU walker (profile.bpf.c): from a frame's sp, rbp and pc and
 * the rule user space learned for that pc, the caller's. Shared with the unit test
 * (tests/unit/test_unwind.c), which checks that walking a stack with the rules
 * unwinder__rules() gives yields the frames libdw found. The includer defines
 * UNWIND_READ(dst, addr): 0 when the 8 bytes at addr were read into *dst.
 */
#ifndef ASYNCBPF_UNWIND_STEP_H
#define ASYNCBPF_UNWIND_STEP_H

#include "asyncbpf.h"

#ifndef UNWIND_READ
#error "define UNWIND_READ(dst, addr) before including unwind_step.h"
#endif

enum unwind_step_result {
	UNWIND_STEP_CALLER, /* sp, bp, pc are the caller's now */
	UNWIND_STEP_END,    /* the outermost frame: the stack is whole */
	UNWIND_STEP_CUT,    /* the unwind that taught the rule stopped here */
	UNWIND_STEP_FAULT,  /* the return address or the saved rbp could not be read */
};

struct unwind_regs {
	__u64 sp, bp, pc;
};

static __always_inline enum unwind_step_result unwind_step(const struct unwind_rule *r,
							   struct unwind_regs *f)
{
	__u64 cfa, ra, bp;

	if (r->flags & UNWIND_RULE_END)
		return UNWIND_STEP_END;
	if (r->flags & UNWIND_RULE_CUT)
		return UNWIND_STEP_CUT;
	cfa = (r->cfa_reg == UNWIND_RULE_CFA_BP ? f->bp : f->sp) + (__u64)(__s64)r->cfa_offset;
	if (UNWIND_READ(&ra, cfa - 8))
		return UNWIND_STEP_FAULT;
	if (r->bp_rule == UNWIND_RULE_BP_AT_CFA) {
		if (UNWIND_READ(&bp, cfa + (__u64)(__s64)r->bp_offset))
			return UNWIND_STEP_FAULT;
		f->bp = bp;
	}
	f->sp = cfa;
	f->pc = ra;
	return UNWIND_STEP_CALLER;
}

#endif
