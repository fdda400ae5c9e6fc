/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The way from a value to what it points at, through its DWARF type (keys.c): the
 * lock a guard holds, the lock, channel or task a waiting future waits for. Internal
 * to analyze/ (guards.c, waits.c).
 */
#ifndef ASYNCBPF_ANALYZE_KEYS_H
#define ASYNCBPF_ANALYZE_KEYS_H

#include <stdbool.h>
#include <stdint.h>

#include "analyze/walk.h"
#include "model/model.h"

/* A key: the type a way ends at, by its path (a prefix, a suffix, or the whole). */
struct key_kind {
	const char *prefix, *suffix, *exact;
	/* the key is a member of the thing people know (tokio's semaphore inside a
	 * Mutex): name that one, not the key */
	bool named_by_holder;
};

struct key_path {
	uint8_t nr_steps;
	struct await_step steps[GUARD_STEPS];
	const char *name; /* the type the key is known by (walk's paths); NULL: unnamed */
	uint64_t back;	  /* the key's offset in that type */
	Dwarf_Die key;	  /* the key's type */
	Dwarf_Die holder; /* the type it is named by (by_holder: the key is a member) */
	bool by_holder;
	/* the struct the way's last pointer points at (an Arc's ArcInner) */
	Dwarf_Die pointee;
	bool has_pointee;
	uint32_t visits; /* members looked at: a search gives up past KEYS_BUDGET */
};

/* Members one search may look at: the types are hostile input, and a graph of types
 * that point at each other is exponential in the depth without a bound. */
#define KEYS_BUDGET 4096

/* Is the key's type this? */
bool keys__match(struct walk *w, Dwarf_Die *type, const struct key_kind *k);
/* From a member at off of type mtype (a pointer is followed), depth first through
 * members held inline and pointers, to the first key; bounded. */
bool keys__from_member(struct walk *w, uint64_t off, Dwarf_Die *mtype, const struct key_kind *k,
		       struct key_path *p);
/* From the members of struct t. */
bool keys__find(struct walk *w, Dwarf_Die *t, const struct key_kind *k, struct key_path *p);

/* The member called name of struct st: its offset and (type != NULL) its type. */
bool keys__member(Dwarf_Die *st, const char *name, uint64_t *off, Dwarf_Die *type);
/* The member `name` of any Suspend<k> variant of an async fn's env (its arguments
 * are kept at one offset in every variant that keeps them). */
bool keys__env_member(Dwarf_Die *env, const char *name, uint64_t *off, Dwarf_Die *type);

bool keys__ends_with(const char *s, const char *suffix);

#endif
