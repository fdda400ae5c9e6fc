// SPDX-License-Identifier: GPL-2.0
/*
 * Which locals kept across an await are lock guards, and where their locks are. The
 * members of a Suspend<k> variant struct are the locals whose storage rustc keeps
 * across that await (its layout of async state machines): a member whose type is a
 * guard may hold a lock while the future is parked there. May: storage is kept for a
 * local that was moved out or dropped before the await too (a guard borrowed and then
 * dropped, or reassigned in a loop), so the analyzer only says where the guard and its
 * lock are; `stacks` checks at run time that the lock is held (docs/stacks.md).
 *
 * A guard is recognised by its crate and type name (the last path segment, generics
 * dropped): where the runtimes keep their modules changes between versions, the names
 * do not. For tokio's guards the way to the lock is found in the guard's DWARF type,
 * not assumed: members and pointers followed (Arc's included) to the first
 * `batch_semaphore::Semaphore`, the semaphore every tokio lock is built on and the
 * one a waiting task's `Acquire` points at.
 */
#include "analyze/guards.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *crate;
	const char *name;
	enum guard_lock lock;
	enum lock_family family;
} known[] = {
    {"tokio", "MutexGuard", GUARD_EXCLUSIVE, LOCK_TOKIO},
    {"tokio", "OwnedMutexGuard", GUARD_EXCLUSIVE, LOCK_TOKIO},
    {"tokio", "MappedMutexGuard", GUARD_EXCLUSIVE, LOCK_TOKIO},
    {"tokio", "RwLockReadGuard", GUARD_SHARED, LOCK_TOKIO},
    {"tokio", "RwLockWriteGuard", GUARD_EXCLUSIVE, LOCK_TOKIO},
    {"tokio", "RwLockMappedWriteGuard", GUARD_EXCLUSIVE, LOCK_TOKIO},
    {"tokio", "OwnedRwLockReadGuard", GUARD_SHARED, LOCK_TOKIO},
    {"tokio", "OwnedRwLockWriteGuard", GUARD_EXCLUSIVE, LOCK_TOKIO},
    {"tokio", "OwnedRwLockMappedWriteGuard", GUARD_EXCLUSIVE, LOCK_TOKIO},
    {"tokio", "SemaphorePermit", GUARD_PERMITS, LOCK_TOKIO},
    {"tokio", "OwnedSemaphorePermit", GUARD_PERMITS, LOCK_TOKIO},
    {"async_lock", "MutexGuard", GUARD_EXCLUSIVE, LOCK_ASYNC_LOCK},
    {"async_lock", "MutexGuardArc", GUARD_EXCLUSIVE, LOCK_ASYNC_LOCK},
    {"async_lock", "RwLockReadGuard", GUARD_OTHER, LOCK_NONE},
    {"async_lock", "RwLockWriteGuard", GUARD_OTHER, LOCK_NONE},
    {"async_lock", "RwLockUpgradableReadGuard", GUARD_OTHER, LOCK_NONE},
    {"async_lock", "RwLockReadGuardArc", GUARD_OTHER, LOCK_NONE},
    {"async_lock", "RwLockWriteGuardArc", GUARD_OTHER, LOCK_NONE},
    {"async_lock", "SemaphoreGuard", GUARD_OTHER, LOCK_NONE},
    {"async_lock", "SemaphoreGuardArc", GUARD_OTHER, LOCK_NONE},
    {"futures_util", "MutexGuard", GUARD_OTHER, LOCK_NONE},
    {"futures_util", "OwnedMutexGuard", GUARD_OTHER, LOCK_NONE},
    {"futures_util", "MappedMutexGuard", GUARD_OTHER, LOCK_NONE},
    /* a thread lock held across an await: blocks a worker thread while parked */
    {"std", "MutexGuard", GUARD_OTHER, LOCK_NONE},
    {"std", "RwLockReadGuard", GUARD_OTHER, LOCK_NONE},
    {"std", "RwLockWriteGuard", GUARD_OTHER, LOCK_NONE},
};

/* The known[] entry for a type path, or -1. */
static int known_index(const char *path)
{
	size_t crate_len, name_len;
	const char *gen, *last, *p;

	if (!path)
		return -1;
	gen = strchr(path, '<');
	name_len = gen ? (size_t)(gen - path) : strlen(path);
	last = path;
	for (p = path; p + 1 < path + name_len; p++)
		if (p[0] == ':' && p[1] == ':')
			last = p + 2;
	if (last == path)
		return -1; /* no crate */
	crate_len = (size_t)(strstr(path, "::") - path);
	name_len -= (size_t)(last - path);
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strlen(known[i].crate) == crate_len &&
		    !strncmp(path, known[i].crate, crate_len) &&
		    strlen(known[i].name) == name_len && !strncmp(last, known[i].name, name_len))
			return (int)i;
	return -1;
}

bool guards__is_guard(const char *path)
{
	return known_index(path) >= 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = s ? strlen(s) : 0, k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* Is type the key of a lock of this family? */
static bool is_key(struct walk *w, Dwarf_Die *type, enum lock_family family)
{
	const char *path = walk__type_path(w, dwarf_dieoffset(type));

	if (family == LOCK_TOKIO)
		return ends_with(path, "batch_semaphore::Semaphore");
	return family == LOCK_ASYNC_LOCK && path && starts_with(path, "async_lock::mutex::Mutex<");
}

/* The key's state word: tokio's `permits: AtomicUsize`, async-lock's `state:
 * AtomicUsize` (an atomic is its integer). */
static bool state_word(Dwarf_Die *key, enum lock_family family, uint64_t *off);

/* The offset of the member called name in a struct type. */
static bool member_named(Dwarf_Die *st, const char *name, uint64_t *off, Dwarf_Die *type)
{
	Dwarf_Die m;

	if (dwarf_child(st, &m) != 0)
		return false;
	do {
		const char *n = dwarf_diename(&m);

		if (dwarf_tag(&m) == DW_TAG_member && n && !strcmp(n, name) &&
		    member_offset(&m, off) && (!type || die_type(&m, type)))
			return true;
	} while (dwarf_siblingof(&m, &m) == 0);
	return false;
}

#define FIND_DEPTH 6

/*
 * Depth first through the members of type t (in declaration order) and the pointers
 * they hold, to the first key of g's family: the steps there into g; the lock is the
 * struct that holds a tokio semaphore as a member (g->resource, resource_back), or
 * async-lock's Mutex itself. Bounded depth: a guard's lock is a few members and at
 * most an Arc away.
 */
static bool find_key(struct walk *w, Dwarf_Die *t, int depth, struct held_guard *g,
		     const char *holder, Dwarf_Die *sem)
{
	Dwarf_Die m, mt, pointee;

	if (depth > FIND_DEPTH || g->nr_steps >= GUARD_STEPS || dwarf_child(t, &m) != 0)
		return false;
	do {
		uint64_t off;
		uint8_t n = g->nr_steps;

		if (dwarf_tag(&m) != DW_TAG_member || !member_offset(&m, &off) ||
		    !die_type(&m, &mt))
			continue;
		if (dwarf_tag(&mt) == DW_TAG_pointer_type) {
			if (!die_type(&mt, &pointee))
				continue;
			g->steps[n] = (struct await_step){off, true};
			g->nr_steps = n + 1;
			if (is_key(w, &pointee, g->family)) {
				/* a pointer to tokio's semaphore itself: its lock unnamed */
				g->resource = g->family == LOCK_ASYNC_LOCK
						  ? walk__type_path(w, dwarf_dieoffset(&pointee))
						  : NULL;
				g->resource_back = 0;
				*sem = pointee;
				return true;
			}
			if (dwarf_tag(&pointee) == DW_TAG_structure_type &&
			    find_key(w, &pointee, depth + 1, g,
				     walk__type_path(w, dwarf_dieoffset(&pointee)), sem))
				return true;
		} else if (dwarf_tag(&mt) == DW_TAG_structure_type) {
			if (is_key(w, &mt, g->family)) {
				g->steps[n] = (struct await_step){off, false};
				g->nr_steps = n + 1;
				g->resource = g->family == LOCK_ASYNC_LOCK
						  ? walk__type_path(w, dwarf_dieoffset(&mt))
						  : holder;
				g->resource_back = g->family == LOCK_ASYNC_LOCK ? 0 : off;
				*sem = mt;
				return true;
			}
			g->steps[n] = (struct await_step){off, false};
			g->nr_steps = n + 1;
			if (find_key(w, &mt, depth + 1, g, walk__type_path(w, dwarf_dieoffset(&mt)),
				     sem))
				return true;
		}
		g->nr_steps = n;
	} while (dwarf_siblingof(&m, &m) == 0);
	return false;
}

static bool state_word(Dwarf_Die *key, enum lock_family family, uint64_t *off)
{
	return member_named(key, family == LOCK_TOKIO ? "permits" : "state", off, NULL);
}

static int find_guards(struct walk *w, Dwarf_Die *variant_struct, uint64_t variant_at,
		       struct future_state *s)
{
	Dwarf_Die m, t;
	uint32_t cap = 0;

	if (dwarf_child(variant_struct, &m) != 0)
		return 0;
	do {
		const char *path, *name = dwarf_diename(&m);
		struct held_guard *g, found = {0};
		Dwarf_Die sem;
		uint64_t off;
		int k;

		if (dwarf_tag(&m) != DW_TAG_member || !name || !strcmp(name, "__awaitee") ||
		    !die_type(&m, &t) || !member_offset(&m, &off))
			continue;
		path = walk__type_path(w, dwarf_dieoffset(&t));
		if ((k = known_index(path)) < 0)
			continue;
		found.lock = known[k].lock;
		found.family = known[k].family;
		if (found.family == LOCK_NONE || !find_key(w, &t, 0, &found, NULL, &sem) ||
		    !state_word(&sem, found.family, &found.state_offset))
			found = (struct held_guard){.lock = known[k].lock};
		if (s->nr_held == cap) {
			cap = cap ? cap * 2 : 2;
			g = realloc(s->held, cap * sizeof(*g));
			if (!g)
				return -ENOMEM;
			s->held = g;
		}
		g = &s->held[s->nr_held++];
		*g = found;
		g->name = strpool__intern(&w->m->strings, name);
		g->type = strpool__intern(&w->m->strings, path);
		g->resource =
		    found.resource ? strpool__intern(&w->m->strings, found.resource) : NULL;
		g->offset = variant_at + off;
	} while (dwarf_siblingof(&m, &m) == 0);
	return 0;
}

/* A deferred Suspend<k> variant: read once its compile unit is walked. */
struct guard_rec {
	int32_t future;
	uint32_t state;
	uint64_t variant_die; /* its struct type's DIE */
	uint64_t variant_at;
};

struct guard_walk {
	struct guard_rec *recs;
	uint32_t nr, cap;
};

int guards__defer(struct walk *w, int32_t future, uint32_t state, Dwarf_Die *variant_struct,
		  uint64_t variant_at)
{
	struct guard_walk *g = w->guards;

	if (!g && !(g = w->guards = calloc(1, sizeof(*g))))
		return -ENOMEM;
	if (g->nr == g->cap) {
		uint32_t cap = g->cap ? g->cap * 2 : 64;
		struct guard_rec *r = realloc(g->recs, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		g->recs = r;
		g->cap = cap;
	}
	g->recs[g->nr++] =
	    (struct guard_rec){future, state, dwarf_dieoffset(variant_struct), variant_at};
	return 0;
}

int guards__end_cu(struct walk *w)
{
	struct guard_walk *g = w->guards;
	int e = 0;

	for (uint32_t i = 0; g && i < g->nr && !e; i++) {
		const struct guard_rec *r = &g->recs[i];
		struct future *f = &w->m->futures[r->future];
		Dwarf_Die v;

		if (r->state < f->nr_states && dwarf_offdie(w->dw, r->variant_die, &v))
			e = find_guards(w, &v, r->variant_at, &f->states[r->state]);
	}
	if (g)
		g->nr = 0;
	return e;
}

void guards__free(struct walk *w)
{
	if (w->guards)
		free(w->guards->recs);
	free(w->guards);
	w->guards = NULL;
}

/*
 * The member `name` of any Suspend<k> variant of an async fn's env (the fn's
 * arguments are kept at one offset in every variant that keeps them): its offset in
 * the env and its type.
 */
static bool env_member(Dwarf_Die *env, const char *name, uint64_t *off, Dwarf_Die *type)
{
	Dwarf_Die part, var, m, st;

	if (dwarf_child(env, &part) != 0)
		return false;
	do {
		if (dwarf_tag(&part) != DW_TAG_variant_part || dwarf_child(&part, &var) != 0)
			continue;
		do {
			uint64_t at, in;

			if (dwarf_tag(&var) != DW_TAG_variant || dwarf_child(&var, &m) != 0)
				continue;
			do {
				const char *n;

				/* the variant's member is named by its discriminant; its
				 * type by the state ("Suspend0") */
				if (dwarf_tag(&m) == DW_TAG_member && member_offset(&m, &at) &&
				    die_type(&m, &st) && (n = dwarf_diename(&st)) &&
				    starts_with(n, "Suspend") &&
				    member_named(&st, name, &in, type)) {
					*off = at + in;
					return true;
				}
			} while (dwarf_siblingof(&m, &m) == 0);
		} while (dwarf_siblingof(&var, &var) == 0);
	} while (dwarf_siblingof(&part, &part) == 0);
	return false;
}

/* A member that points at a lock's key of the family: its offset, the key's state word. */
static bool key_pointer(struct walk *w, Dwarf_Die *ptr, enum lock_family family, uint64_t *state,
			const char **lock)
{
	Dwarf_Die key;

	if (dwarf_tag(ptr) != DW_TAG_pointer_type || !die_type(ptr, &key) ||
	    !is_key(w, &key, family) || !state_word(&key, family, state))
		return false;
	*lock = family == LOCK_ASYNC_LOCK ? walk__type_path(w, dwarf_dieoffset(&key)) : NULL;
	return true;
}

/* The offset of the first pointer inside a struct, through members held inline
 * (`JoinHandle { raw: RawTask { ptr: NonNull { pointer } } }`). */
static bool first_pointer(Dwarf_Die *t, int depth, uint64_t *off)
{
	Dwarf_Die m, mt;

	if (depth > 4 || dwarf_child(t, &m) != 0)
		return false;
	do {
		uint64_t at, in;

		if (dwarf_tag(&m) != DW_TAG_member || !member_offset(&m, &at) || !die_type(&m, &mt))
			continue;
		if (dwarf_tag(&mt) == DW_TAG_pointer_type) {
			*off = at;
			return true;
		}
		if (dwarf_tag(&mt) == DW_TAG_structure_type && first_pointer(&mt, depth + 1, &in)) {
			*off = at + in;
			return true;
		}
	} while (dwarf_siblingof(&m, &m) == 0);
	return false;
}

int guards__waits(struct walk *w)
{
	for (uint32_t i = 0; i < w->m->nr_futures; i++) {
		struct future *f = &w->m->futures[i];
		const char *lock = NULL;
		Dwarf_Die die, ptr;
		uint64_t queued;

		if (!f->crate || !f->path || !f->die_offset ||
		    !dwarf_offdie(w->dw, f->die_offset, &die))
			continue;
		if (!strcmp(f->crate, "tokio") && ends_with(f->path, "batch_semaphore::Acquire")) {
			/* tokio: Acquire { semaphore: &Semaphore, queued: bool, .. } */
			if (member_named(&die, "semaphore", &f->wait_ptr, &ptr) &&
			    key_pointer(w, &ptr, LOCK_TOKIO, &f->wait_state, &lock) &&
			    member_named(&die, "queued", &queued, NULL)) {
				f->wait_queued = queued;
				f->wait_family = LOCK_TOKIO;
			}
		} else if (!strcmp(f->crate, "async_lock") &&
			   starts_with(f->path, "async_lock::mutex::") &&
			   strstr(f->path, "::acquire_slow::{async_fn_env")) {
			/* async-lock: `async fn acquire_slow(&self)` of Mutex<T>, parked at
			 * its listener while the lock is taken */
			if (env_member(&die, "self", &f->wait_ptr, &ptr) &&
			    key_pointer(w, &ptr, LOCK_ASYNC_LOCK, &f->wait_state, &lock)) {
				f->wait_queued = FUTURE_NO_OFFSET;
				f->wait_family = LOCK_ASYNC_LOCK;
			}
		}
		if (f->wait_family && lock)
			f->wait_lock = strpool__intern(&w->m->strings, lock);
		/* a task joined: its handle points at the task's header */
		if ((!strcmp(f->crate, "tokio") &&
		     starts_with(f->path, "tokio::runtime::task::join::JoinHandle<")) ||
		    (!strcmp(f->crate, "async_task") &&
		     starts_with(f->path, "async_task::task::Task<")))
			f->wait_join = first_pointer(&die, 0, &f->wait_join_ptr);
	}
	return 0;
}
