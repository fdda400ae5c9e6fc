/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unwinding recorded samples (bpf/asyncbpf.h records: user registers + a copy of the
 * top of the user stack) with elfutils libdwfl, the way `perf --call-graph dwarf`
 * does: CFI from .eh_frame/.debug_frame, memory reads served from the copied stack
 * (and from the mapped files), one Dwfl per target built from /proc/PID/maps and
 * kept across samples. Each frame is symbolized with its DWARF inline chain
 * (innermost first) and demangled; symbolization is cached per pc. docs/profile.md.
 */
#ifndef ASYNCBPF_UNWIND_H
#define ASYNCBPF_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "asyncbpf.h"

/* Why an unwind stopped before the thread's outermost frame (or produced nothing). */
enum unwind_reason {
	UNWIND_COMPLETE,    /* reached the outermost frame */
	UNWIND_NO_REGS,	    /* the sample has no user registers (kernel thread, bad record) */
	UNWIND_PC_OUTSIDE,  /* a pc outside every mapped module (JIT, unmapped, garbage) */
	UNWIND_NO_CFI,	    /* a module without .eh_frame/.debug_frame for that pc */
	UNWIND_STACK_SHORT, /* the caller's frame lies beyond the copied stack (--stack-size) */
	UNWIND_TOO_DEEP,    /* UNWIND_MAX_FRAMES physical frames */
	UNWIND_OTHER,	    /* anything else libdwfl refused */
	UNWIND_REASON_COUNT,
};

const char *unwind_reason__name(enum unwind_reason r);

#define UNWIND_MAX_FRAMES  256	/* physical frames */
#define UNWIND_MAX_LOGICAL 1024 /* frames after inline expansion */

/* One logical frame: a function at a pc, or one level of an inline chain. */
struct uframe {
	const char *name;    /* demangled, hash stripped; "[unknown]" if nothing is known */
	const char *linkage; /* linkage name as in DWARF/ELF (interned), NULL if none */
	const char *file;    /* source file of the pc (innermost) or of the call site */
	uint32_t line;
	bool inlined;	    /* inlined into the next (outer) frame of the same pc */
	uint64_t pc;	    /* lookup pc: return addresses minus one */
	const char *module; /* mapping's file name (interned), NULL when outside any */
};

struct unwind_result {
	const struct uframe
	    *frames[UNWIND_MAX_LOGICAL]; /* innermost first; owned by the unwinder */
	uint32_t nframes;
	uint32_t nphysical;
	enum unwind_reason reason;
};

struct unwinder;

/*
 * A Dwfl for process pid from /proc/PID/maps. Return NULL with err filled
 * (errno-style code in *errp: -ESRCH, -EACCES, -ENOMEM, -EINVAL).
 */
struct unwinder *unwinder__new(pid_t pid, int *errp, char *err, size_t errlen);
/* Re-read the mappings (a dlopen, an exec). 0 or -errno. Keeps the modules reported
 * before (a failed re-read, the target gone, takes none away); clears the per-pc
 * symbol cache. */
int unwinder__refresh(struct unwinder *u);
/*
 * Unwind one sample: rec's registers, `stack` holding rec->stack_size bytes copied
 * from regs[PROFILE_REG_SP]. Fills out (frames valid until unwinder__free). Returns
 * the number of logical frames (0 when nothing could be unwound; out->reason says why).
 */
uint32_t unwinder__unwind(struct unwinder *u, const struct profile_sample *rec,
			  const uint8_t *stack, struct unwind_result *out);
/*
 * unwinder__unwind in two steps: the walk (CFI only, cheap even the first time),
 * which says why it stopped; then the walked frames symbolized (DWARF: the first
 * sample at a pc is the costly part). In between, unwinder__rules() of the walk.
 */
enum unwind_reason unwinder__walk(struct unwinder *u, const struct profile_sample *rec,
				  const uint8_t *stack);
uint32_t unwinder__frames(struct unwinder *u, struct unwind_result *out);
/* Why the last walk stopped. */
enum unwind_reason unwinder__last_reason(const struct unwinder *u);
/* The pcs the last walk found, innermost first, as looked up (a caller's at its call
 * instruction: return address - 1); at most max. Returns how many. */
uint32_t unwinder__walked(const struct unwinder *u, uint64_t *pcs, uint32_t max);
/*
 * Symbolize pcs found elsewhere (lookup pcs, innermost first: unwinder__walked()'s,
 * or the kernel's off-CPU walk with 1 taken off each return address) into out, as
 * unwinder__unwind would have, with `reason` as why the walk stopped. Returns the
 * number of logical frames.
 */
uint32_t unwinder__symbolize(struct unwinder *u, const uint64_t *pcs, uint32_t n,
			     enum unwind_reason reason, struct unwind_result *out);

/* An unwind rule learned from a libdw unwind, for the kernel's off-CPU walker. */
struct learned_rule {
	uint64_t key; /* pc, | OFFCPU_KEY_INITIAL for the innermost frame */
	struct unwind_rule rule;
};

/*
 * The rules that reproduce the last walk (unwinder__unwind or __walk): one per physical frame, from
 * the CFI libdw used (.eh_frame, else .debug_frame), the last frame marked END (the
 * unwind reached the thread's first frame) or CUT (it stopped early). Frames whose
 * CFI needs more than CFA = rsp|rbp + N, return address at CFA - 8 and rbp saved at
 * CFA + N or unchanged end the list there: the kernel will not find a rule for them
 * and sends such stacks to user space every time. Returns the number written to out.
 */
uint32_t unwinder__rules(struct unwinder *u, struct learned_rule *out, uint32_t max);

/* Symbolization cache statistics, for -v. */
void unwinder__stats(const struct unwinder *u, uint64_t *cached_pcs, uint64_t *refreshes);
void unwinder__free(struct unwinder *u);

#endif
