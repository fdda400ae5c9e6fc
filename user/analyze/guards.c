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
} known[] = {
    {"tokio", "MutexGuard", GUARD_EXCLUSIVE},
    {"tokio", "OwnedMutexGuard", GUARD_EXCLUSIVE},
    {"tokio", "MappedMutexGuard", GUARD_EXCLUSIVE},
    {"tokio", "RwLockReadGuard", GUARD_SHARED},
    {"tokio", "RwLockWriteGuard", GUARD_EXCLUSIVE},
    {"tokio", "RwLockMappedWriteGuard", GUARD_EXCLUSIVE},
    {"tokio", "OwnedRwLockReadGuard", GUARD_SHARED},
    {"tokio", "OwnedRwLockWriteGuard", GUARD_EXCLUSIVE},
    {"tokio", "OwnedRwLockMappedWriteGuard", GUARD_EXCLUSIVE},
    {"tokio", "SemaphorePermit", GUARD_PERMITS},
    {"tokio", "OwnedSemaphorePermit", GUARD_PERMITS},
    {"async_lock", "MutexGuard", GUARD_OTHER},
    {"async_lock", "MutexGuardArc", GUARD_OTHER},
    {"async_lock", "RwLockReadGuard", GUARD_OTHER},
    {"async_lock", "RwLockWriteGuard", GUARD_OTHER},
    {"async_lock", "RwLockUpgradableReadGuard", GUARD_OTHER},
    {"async_lock", "RwLockReadGuardArc", GUARD_OTHER},
    {"async_lock", "RwLockWriteGuardArc", GUARD_OTHER},
    {"async_lock", "SemaphoreGuard", GUARD_OTHER},
    {"async_lock", "SemaphoreGuardArc", GUARD_OTHER},
    {"futures_util", "MutexGuard", GUARD_OTHER},
    {"futures_util", "OwnedMutexGuard", GUARD_OTHER},
    {"futures_util", "MappedMutexGuard", GUARD_OTHER},
    /* a thread lock held across an await: blocks a worker thread while parked */
    {"std", "MutexGuard", GUARD_OTHER},
    {"std", "RwLockReadGuard", GUARD_OTHER},
    {"std", "RwLockWriteGuard", GUARD_OTHER},
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

static bool is_semaphore(struct walk *w, Dwarf_Die *type)
{
	return ends_with(walk__type_path(w, dwarf_dieoffset(type)), "batch_semaphore::Semaphore");
}

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
 * they hold, to the first batch semaphore: the steps there into g, the struct that
 * holds it as a member into g->resource/resource_back. Bounded depth: a guard's lock
 * is a few members and at most an Arc away.
 */
static bool find_sem(struct walk *w, Dwarf_Die *t, int depth, struct held_guard *g,
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
			if (is_semaphore(w, &pointee)) {
				g->resource = NULL; /* a pointer to the semaphore itself */
				*sem = pointee;
				return true;
			}
			if (dwarf_tag(&pointee) == DW_TAG_structure_type &&
			    find_sem(w, &pointee, depth + 1, g,
				     walk__type_path(w, dwarf_dieoffset(&pointee)), sem))
				return true;
		} else if (dwarf_tag(&mt) == DW_TAG_structure_type) {
			if (is_semaphore(w, &mt)) {
				if (n > 0 && !g->steps[n - 1].deref) {
					g->steps[n - 1].offset += off;
				} else {
					g->steps[n] = (struct await_step){off, false};
					g->nr_steps = n + 1;
				}
				g->resource = holder;
				g->resource_back = off;
				*sem = mt;
				return true;
			}
			g->steps[n] = (struct await_step){off, false};
			g->nr_steps = n + 1;
			if (find_sem(w, &mt, depth + 1, g, holder, sem))
				return true;
		}
		g->nr_steps = n;
	} while (dwarf_siblingof(&m, &m) == 0);
	return false;
}

/* Where a batch semaphore counts its available permits (`permits: AtomicUsize`, the
 * count in its value: an atomic is its integer). */
static bool permits_of(Dwarf_Die *sem, uint64_t *off)
{
	return member_named(sem, "permits", off, NULL);
}

int guards__find(struct walk *w, Dwarf_Die *variant_struct, uint64_t variant_at,
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
		if (!strcmp(known[k].crate, "tokio") && find_sem(w, &t, 0, &found, NULL, &sem) &&
		    permits_of(&sem, &found.permits_offset))
			found.sem_known = true;
		else
			found = (struct held_guard){.lock = GUARD_OTHER};
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

int guards__acquires(struct walk *w)
{
	for (uint32_t i = 0; i < w->m->nr_futures; i++) {
		struct future *f = &w->m->futures[i];
		Dwarf_Die die, ptr, sem;
		uint64_t queued;

		if (!f->crate || strcmp(f->crate, "tokio") ||
		    !ends_with(f->path, "batch_semaphore::Acquire") || !f->die_offset ||
		    !dwarf_offdie(w->dw, f->die_offset, &die))
			continue;
		if (member_named(&die, "semaphore", &f->acquire_sem, &ptr) &&
		    dwarf_tag(&ptr) == DW_TAG_pointer_type && die_type(&ptr, &sem) &&
		    is_semaphore(w, &sem) && permits_of(&sem, &f->acquire_permits) &&
		    member_named(&die, "queued", &queued, NULL)) {
			f->acquire_queued = queued;
			f->acquire = true;
		}
	}
	return 0;
}
