/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The call-site index of an executable (docs/disasm.md, "Exits in the caller"):
 * the code of every function symbol, and the runs of code between them, decoded
 * once, keeping what says who calls whom: every direct `call rel32` (its callee),
 * every `call [rip + X]` (the slot X it reads, a GOT entry), every direct jump
 * that leaves its function (a tail call, or a jump into another function), and
 * every other use of a function's address or of a GOT slot (`lea` of a function,
 * a GOT entry loaded into a register or jumped through). With the data words
 * that hold a function's address (dynamic relocations, target__words_holding),
 * it answers: the call sites of a function, and whether they are all of them.
 */
#ifndef ASYNCBPF_ANALYZE_CALLSITES_H
#define ASYNCBPF_ANALYZE_CALLSITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/target.h"
#include "lib/hashmap.h"

/* Bounds: the code comes from a hostile ELF. Past one, the index says it is
 * incomplete (callsites.truncated) and no function's callers are "known". */
#define CALLSITES_MAX_BYTES (512u << 20) /* code decoded, in all */
#define CALLSITES_MAX_FNS   (4u << 20)	 /* function symbols */
#define CALLSITES_MAX_CALLS (16u << 20)	 /* call sites kept */
#define CALLSITES_MAX_GOT   4		 /* .got, .got.plt sections */

enum callsite_kind {
	CALLSITE_DIRECT, /* call rel32: `to` is the callee */
	CALLSITE_SLOT,	 /* call [rip + X], or `mov reg, [rip + X]; call reg`: `to` is the slot X */
};

struct callsite {
	uint64_t addr; /* the call instruction */
	uint64_t to;
	int32_t fn;   /* index in callsites.fns of the function holding it; -1: code outside any */
	uint8_t size; /* of the call instruction: the return address is addr + size */
	uint8_t kind; /* enum callsite_kind */
	/* CALLSITE_SLOT as `mov reg, [rip + X]; call reg` (opt-level 0): the call must
	 * not be a branch target, or reg could hold anything */
	bool via_reg;
};

struct callsite_fn {
	uint64_t addr, size;
	const char *name; /* the symbol's name (libdwfl's: valid while the target is open) */
	bool decoded;	  /* its bytes decoded as one run of instructions */
};

/* A data word the loaded program holds a function's address in. */
struct callsite_holder {
	uint64_t word, value;
};

struct callsites {
	struct callsite_fn *fns; /* sorted by address, not overlapping */
	uint32_t nr_fns;
	struct callsite *calls; /* sorted by (to, addr) */
	uint32_t nr_calls;
	/* target -> the first direct jmp/jcc from code outside the target's own function */
	struct u64_map jumps_in;
	/* address -> the first instruction using it otherwise than by calling through it:
	 * a rip-relative operand at a function's first byte or in a GOT section (`lea`,
	 * a load, `jmp [rip + X]`), an immediate equal to a function's address (non-PIE) */
	struct u64_map refs;
	struct u64_map fn_starts; /* every function symbol's address -> 1 */
	uint64_t got[CALLSITES_MAX_GOT][2];
	uint32_t nr_got;
	struct callsite_holder *holders; /* sorted by value (callsites__find_holders) */
	uint32_t nr_holders;
	/* what was decoded, and what could not be */
	uint64_t bytes, insns;
	uint32_t nr_undecoded;	  /* runs of code (functions or gaps) that did not decode */
	uint64_t undecoded_bytes; /* from where each stopped decoding to its end */
	uint64_t first_undecoded; /* address of the first such byte */
	bool truncated;		  /* a bound above was hit */
	bool pie;
};

/*
 * Decode every function symbol (STT_FUNC with a size, in an executable section)
 * and the code between them. 0, or -ENOMEM / -ENOTSUP (no x86-64 Capstone) with a
 * reason in err. Code that does not decode is counted, not an error.
 */
int callsites__build(struct callsites *ix, struct target *t, char *err, size_t errlen);
void callsites__free(struct callsites *ix);

/* The calls whose `to` is this address: ix->calls[*first .. *first + return). */
uint32_t callsites__calls_to(const struct callsites *ix, uint64_t to, uint32_t *first);
/* The index in ix->fns of the function holding addr, or -1. */
int32_t callsites__fn_at(const struct callsites *ix, uint64_t addr);
/* May code outside addr's own function jump or call straight to addr? */
bool callsites__entered_from_outside(const struct callsites *ix, uint64_t addr);
bool callsites__in_got(const struct callsites *ix, uint64_t addr);

/* Remember the data words holding any of the keys of fns (one walk over the dynamic
 * relocations for every later callsites__callers). 0 or -ENOMEM. */
int callsites__find_holders(struct callsites *ix, struct target *t, const struct u64_map *fns);

/*
 * The call sites of the function at fn: direct calls, and calls through GOT slots
 * that hold fn and that code does nothing else with (malloc'd into *out, sorted by
 * address; the caller frees). *known: these are all of them, as far as the code and
 * data show (the index is complete, nothing jumps to fn, no code takes its address,
 * no other data word holds it); else why says what is missing. Only the words of
 * callsites__find_holders are seen. 0 or -ENOMEM.
 */
int callsites__callers(const struct callsites *ix, uint64_t fn, struct callsite **out, uint32_t *nr,
		       bool *known, char *why, size_t whylen);

#endif
