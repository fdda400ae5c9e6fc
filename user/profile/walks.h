/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Walked stacks, kept until the end of a profile: the pcs a walk found (lookup pcs,
 * innermost first: unwinder__walked) and why it stopped, each distinct walk once
 * (hash-consed). The consumer walks every sample as it arrives (CFI only, cheap) and
 * symbolizes each distinct walk once after sampling (DWARF, the costly part), so that
 * while the target runs the profiler does little, and a stack to teach the kernel's
 * off-CPU walker never waits behind a symbolization. Pure code.
 */
#ifndef ASYNCBPF_WALKS_H
#define ASYNCBPF_WALKS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/hashmap.h"
#include "profile/unwind.h"

struct walk {
	uint64_t *pcs;
	uint32_t n;
	enum unwind_reason reason;
	int64_t stack; /* its projected stack, once symbolized; -1 before */
};

struct walk_table {
	struct walk *walks;
	size_t nr, cap;
	struct u64_map by_hash; /* hash of a walk (probed) -> walks[] index */
};

void walk_table__init(struct walk_table *t);
void walk_table__free(struct walk_table *t);
/* Every walk's projected stack forgotten (a new projector: profile --every). */
void walk_table__forget_stacks(struct walk_table *t);
/* The index of the walk equal to pcs[0..n) and reason, added if new; -ENOMEM. */
int64_t walk_table__add(struct walk_table *t, const uint64_t *pcs, uint32_t n,
			enum unwind_reason reason);

#endif
