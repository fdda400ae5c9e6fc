/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The async projection (docs/profile.md): an unwound stack (innermost first, inline
 * chains expanded) becomes "[runtime]" → the task's future → … → the innermost
 * polled future → the synchronous frames below it. Poll functions are recognised
 * by the analyzer's model (linkage name, else demangled name), so polls that exist
 * only inlined count too. std's forwarding polls (Pin<P>, &mut F, Box<F>, ...) are
 * transparent; runtime futures outside the outermost non-runtime future collapse
 * into "[runtime]". Samples outside any poll start with "[not in a poll]".
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
	bool intern_only; /* off-CPU switch-out: intern the stack, count nothing yet (its
			   * time arrives with the wake-up, projector__add_weight) */
};

/*
 * Add one sample whose unwind gave frames[0..n) (innermost first). n == 0 adds it
 * under "[unknown]" (counted by the caller as an unwind failure). Returns the stack
 * index, or -ENOMEM.
 */
int64_t projector__add(struct projector *p, const struct uframe *const *frames, uint32_t n,
		       const struct projected_sample *s);
/* Add weight to an existing stack (off-CPU: time blocked, known at wake-up). */
int projector__add_weight(struct projector *p, uint32_t stack, const struct projected_sample *s);

/* The stacks and samples collected so far; valid until the next add or free. Fills
 * stacks, nstacks, samples, nsamples of out; leaves the other fields alone. */
void projector__fill(const struct projector *p, struct profile_data *out);

/* "task → middle → hot_leaf"-style rendering of a stack's futures, for the summary. */
int projector__stack_text(const struct pstack *s, char *buf, size_t len);

#endif
