/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The async projection (docs/profile.md): an unwound stack (innermost first, inline
 * chains expanded) becomes "[runtime]" → the task's future → … → the innermost
 * polled future → the synchronous frames below it. Poll functions are recognised
 * by the analyzer's model (linkage name, else demangled name), so polls that exist
 * only inlined count too. std's forwarding polls (Pin<P>, &mut F, Box<F>, ...) are
 * transparent; runtime futures outside the outermost non-runtime future collapse
 * into "[runtime]". Samples outside any poll start with "[not in a poll]", samples
 * whose stack copy was too short with "[stack cut short]".
 * Frames and stacks are interned; the result is a struct profile_data. Pure code.
 */
#ifndef ASYNCBPF_PROFILE_PROJECT_H
#define ASYNCBPF_PROFILE_PROJECT_H

#include <stdbool.h>
#include <stdint.h>

#include "model/model.h"
#include "model/profile_data.h"
#include "profile/unwind.h"

struct projector;

/* m may be NULL (no DWARF model): every sample is then "[not in a poll]". */
struct projector *projector__new(const struct model *m, bool keep_samples);
void projector__free(struct projector *p);

struct projected_sample {
	uint64_t time_ns;
	uint32_t pid, tid;
	uint64_t weight; /* on-CPU 1, off-CPU ns */
	bool offcpu;
	bool intern_only; /* intern the stack, count nothing (off-CPU: the kernel's sums
			   * arrive later, projector__add_aggregate) */
	/* the unwind stopped at the end of the stack copy (UNWIND_STACK_SHORT): what lies
	 * above the frames found is unknown, so the stack starts with "[stack cut short]"
	 * instead of "[runtime]" or "[not in a poll]" */
	bool cut_short;
};

/*
 * Add one sample whose unwind gave frames[0..n) (innermost first). n == 0 adds it
 * under "[unknown]" (counted by the caller as an unwind failure). Returns the stack
 * index, or -ENOMEM.
 */
int64_t projector__add(struct projector *p, const struct uframe *const *frames, uint32_t n,
		       const struct projected_sample *s);
/* Add one sample to an existing stack (kept in time order, like projector__add's). 0,
 * -EINVAL or -ENOMEM. */
int projector__add_to(struct projector *p, uint32_t stack, const struct projected_sample *s);
/* Add samples summed elsewhere (off-CPU, in the kernel) to an existing stack: they
 * are counted and weighed, not kept one by one. 0 or -EINVAL. */
int projector__add_aggregate(struct projector *p, uint32_t stack, uint64_t samples,
			     uint64_t weight);

/* The stacks and samples collected so far; valid until the next add or free. Fills
 * stacks, nstacks, samples, nsamples of out; leaves the other fields alone. */
void projector__fill(const struct projector *p, struct profile_data *out);

/* "task → middle → hot_leaf"-style rendering of a stack's futures, for the summary. */
int projector__stack_text(const struct pstack *s, char *buf, size_t len);

#endif
