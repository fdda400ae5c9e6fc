/* SPDX-License-Identifier: GPL-2.0 */
/* Lock guards alive across an await (guards.c). Internal to analyze/. */
#ifndef ASYNCBPF_ANALYZE_GUARDS_H
#define ASYNCBPF_ANALYZE_GUARDS_H

#include <stdbool.h>

#include "analyze/walk.h"
#include "model/model.h"

/* Is this type path (`tokio::sync::mutex::MutexGuard<u64>`) a known lock guard? */
bool guards__is_guard(const char *type_path);
/*
 * The Suspend<k> variant struct of future `future`'s state `state`, at variant_at in
 * the future: its guards are read at the end of the compile unit (guards__end_cu),
 * into the state's held[]. 0 or -ENOMEM.
 */
int guards__defer(struct walk *w, int32_t future, uint32_t state, Dwarf_Die *variant_struct,
		  uint64_t variant_at);
int guards__end_cu(struct walk *w);
void guards__free(struct walk *w);
/* The futures parked tasks wait in (future.wait_kind), once every future is known
 * (waits.c). 0. */
int waits__find(struct walk *w);

struct key_kind;
/* A lock family's key (keys.h), NULL for LOCK_NONE; where the key's state word is. */
const struct key_kind *guards__key(enum lock_family family);
bool guards__state_word(Dwarf_Die *key, enum lock_family family, uint64_t *off);

#endif
