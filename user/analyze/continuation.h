/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Continuation sites (docs/disasm.md, "Exits in the caller"): after a call, the
 * first instruction the kernel emulates that only the return from that call
 * reaches, with nothing before it that jumps or moves the stack pointer but by a
 * known amount (`add rsp, N`, `pop`), and no
 * call but ones the caller allows (continuation__find_across: an indirect call to
 * a known function that polls nothing traced, e.g. a guard's drop through the GOT).
 * A probe there sees the callee's return as an emulated hit, with rsp exactly
 * rsp at the callee's entry + 8 + what was popped, and says where the callee's rax
 * and rdx are.
 */
#ifndef ASYNCBPF_ANALYZE_CONTINUATION_H
#define ASYNCBPF_ANALYZE_CONTINUATION_H

#include <stdbool.h>
#include <stdint.h>

#include "analyze/cfg.h"

/* How far after the return address the site may be: the return address itself and
 * up to 7 instructions more. */
#define CONTINUATION_MAX_WALK 8

enum continuation_why {
	CONTINUATION_OK,
	CONTINUATION_NO_RETURN,	    /* nothing follows the call in its function */
	CONTINUATION_JOIN,	    /* a branch from elsewhere lands before or on the site */
	CONTINUATION_UNKNOWN_PATHS, /* an unread jump table in the function may land there */
	CONTINUATION_STACK,	    /* an instruction before the site changes rsp */
	CONTINUATION_BRANCH,  /* a ret, indirect call or jump, or a single-stepped branch first */
	CONTINUATION_STOP,    /* ud2, int3, hlt: nothing falls through */
	CONTINUATION_TOO_FAR, /* nothing emulated within CONTINUATION_MAX_WALK instructions */
	CONTINUATION_OPAQUE,  /* an instruction whose registers are not known */
	/* the caller returns at once (only `add rsp, N` and `pop`s before its `ret`): the
	 * callee's return is seen in the caller's callers (caller_exits.c); insn is the
	 * ret, sp_adjust what was popped before it */
	CONTINUATION_TAIL,
	CONTINUATION_WHY_COUNT,
};

struct continuation {
	enum continuation_why why; /* CONTINUATION_OK: the site below is usable */
	uint32_t insn;		   /* the site: its index in the CFG */
	uint8_t distance;	   /* instructions from the return address to the site */
	/* where the callee's rax ([0]) and rdx ([1]) are at the site: the DWARF register
	 * whose low bytes[k] bytes hold them, or -1 when no register does any more */
	int8_t reg[2];
	uint8_t bytes[2];
	bool stores;   /* an instruction between the return address and the site may store */
	uint8_t calls; /* calls passed over (continuation__find_across) */
	/* bytes `add rsp, N` and `pop`s freed between the return address and the site:
	 * rsp there is rsp at the callee's entry + 8 + sp_adjust */
	uint32_t sp_adjust;
	/* the return address itself, when only the return reaches it (not a block start,
	 * nothing jumps there): a site the kernel may single-step, for callers that would
	 * rather pay that than have none (stepped_insn: its index) */
	bool stepped_ok;
	uint32_t stepped_insn;
};

/* May code outside the CFG's function jump or call to addr? NULL: nothing does. */
typedef bool (*continuation_entered_fn)(void *ctx, uint64_t addr);

/*
 * May the walk pass over the call `in` (not emulated: an indirect call)? Only when it
 * returns to the next instruction with rsp as before and keeps the callee-saved
 * registers (the ABI), and runs no traced poll: the site is then reached after it,
 * with the results that were copied to callee-saved registers still there.
 */
typedef bool (*continuation_cross_fn)(void *ctx, const struct insn *in);

/* The continuation of the call at instruction index `call` of g (no call passed). */
void continuation__find(const struct cfg *g, uint32_t call, continuation_entered_fn entered,
			void *ctx, struct continuation *c);
/* The same, passing over the calls cross allows (NULL: none). */
void continuation__find_across(const struct cfg *g, uint32_t call, continuation_entered_fn entered,
			       continuation_cross_fn cross, void *ctx, struct continuation *c);
/* "a branch from elsewhere lands between the return address and the site", ... */
const char *continuation_why__describe(enum continuation_why w);

#endif
