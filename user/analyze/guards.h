/* SPDX-License-Identifier: GPL-2.0 */
/* Lock guards alive across an await (guards.c). Internal to analyze/. */
#ifndef ASYNCBPF_ANALYZE_GUARDS_H
#define ASYNCBPF_ANALYZE_GUARDS_H

#include <stdbool.h>

#include "analyze/walk.h"
#include "model/model.h"

/* tokio's batch_semaphore::Acquire futures: where their semaphore and queued flag are
 * (future.acquire); after every future is known. 0. */
int guards__acquires(struct walk *w);
/* Is this type path (`tokio::sync::mutex::MutexGuard<u64>`) a known lock guard? */
bool guards__is_guard(const char *type_path);
/*
 * The known guards among the members of a Suspend<k> variant struct (the locals kept
 * across that await) into s->held; variant_at is the variant's offset in the future.
 * 0 or -ENOMEM.
 */
int guards__find(struct walk *w, Dwarf_Die *variant_struct, uint64_t variant_at,
		 struct future_state *s);

#endif
