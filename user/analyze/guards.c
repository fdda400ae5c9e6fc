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

#include "analyze/keys.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *crate;
	const char *name;
	enum guard_lock lock;
	enum lock_family family;
	bool provable;	  /* held_guard.provable */
	bool all_permits; /* held_guard.all_permits */
} known[] = {
    {"tokio", "MutexGuard", GUARD_EXCLUSIVE, LOCK_TOKIO, true, true},
    {"tokio", "OwnedMutexGuard", GUARD_EXCLUSIVE, LOCK_TOKIO, true, true},
    {"tokio", "MappedMutexGuard", GUARD_EXCLUSIVE, LOCK_TOKIO, true, true},
    {"tokio", "RwLockReadGuard", GUARD_SHARED, LOCK_TOKIO, false, false},
    {"tokio", "RwLockWriteGuard", GUARD_EXCLUSIVE, LOCK_TOKIO, false, true},
    {"tokio", "RwLockMappedWriteGuard", GUARD_EXCLUSIVE, LOCK_TOKIO, false, true},
    {"tokio", "OwnedRwLockReadGuard", GUARD_SHARED, LOCK_TOKIO, false, false},
    {"tokio", "OwnedRwLockWriteGuard", GUARD_EXCLUSIVE, LOCK_TOKIO, false, true},
    {"tokio", "OwnedRwLockMappedWriteGuard", GUARD_EXCLUSIVE, LOCK_TOKIO, false, true},
    {"tokio", "SemaphorePermit", GUARD_PERMITS, LOCK_TOKIO, false, false},
    {"tokio", "OwnedSemaphorePermit", GUARD_PERMITS, LOCK_TOKIO, false, false},
    {"async_lock", "MutexGuard", GUARD_EXCLUSIVE, LOCK_ASYNC_LOCK, true, false},
    {"async_lock", "MutexGuardArc", GUARD_EXCLUSIVE, LOCK_ASYNC_LOCK, true, false},
    /* an upgradable read guard is a reader (it also keeps the RwLock's inner
     * Mutex, which only writers and other upgradable readers wait for) */
    {"async_lock", "RwLockReadGuard", GUARD_SHARED, LOCK_ASYNC_RWLOCK, false, false},
    {"async_lock", "RwLockWriteGuard", GUARD_EXCLUSIVE, LOCK_ASYNC_RWLOCK, true, false},
    {"async_lock", "RwLockUpgradableReadGuard", GUARD_SHARED, LOCK_ASYNC_RWLOCK, false, false},
    {"async_lock", "RwLockReadGuardArc", GUARD_SHARED, LOCK_ASYNC_RWLOCK, false, false},
    {"async_lock", "RwLockWriteGuardArc", GUARD_EXCLUSIVE, LOCK_ASYNC_RWLOCK, true, false},
    {"async_lock", "RwLockUpgradableReadGuardArc", GUARD_SHARED, LOCK_ASYNC_RWLOCK, false, false},
    {"async_lock", "SemaphoreGuard", GUARD_PERMITS, LOCK_ASYNC_SEMAPHORE, false, false},
    {"async_lock", "SemaphoreGuardArc", GUARD_PERMITS, LOCK_ASYNC_SEMAPHORE, false, false},
    {"futures_util", "MutexGuard", GUARD_EXCLUSIVE, LOCK_FUTURES, true, false},
    {"futures_util", "OwnedMutexGuard", GUARD_EXCLUSIVE, LOCK_FUTURES, true, false},
    {"futures_util", "MappedMutexGuard", GUARD_EXCLUSIVE, LOCK_FUTURES, true, false},
    /* a thread lock held across an await: blocks a worker thread while parked */
    {"std", "MutexGuard", GUARD_OTHER, LOCK_NONE, false, false},
    {"std", "RwLockReadGuard", GUARD_OTHER, LOCK_NONE, false, false},
    {"std", "RwLockWriteGuard", GUARD_OTHER, LOCK_NONE, false, false},
};

/*
 * Channel senders kept across an await: a receiver parked on the channel waits for
 * what they send. The channel counts its senders (`count`): when that many sender
 * slots point at it, they are all its senders. tokio's WeakSender shares the
 * channel's Arc and can become a sender: its strong count must then be the senders'
 * and the receiver's (weak). oneshot, broadcast and watch senders have no way to an
 * mpsc Chan: not senders here.
 */
static const struct {
	const char *crate, *name;
	struct key_kind key;
	const char *count;
	bool weak;
} senders[] = {
    {"tokio", "Sender", {.prefix = "tokio::sync::mpsc::chan::Chan<"}, "tx_count", true},
    {"tokio", "UnboundedSender", {.prefix = "tokio::sync::mpsc::chan::Chan<"}, "tx_count", true},
    {"async_channel", "Sender", {.prefix = "async_channel::Channel<"}, "sender_count", false},
};

/* Is a type path crate::...::name<..> (its crate and last path segment)? */
static bool is_named(const char *path, const char *crate, const char *name)
{
	size_t crate_len, name_len;
	const char *gen, *last, *p;

	if (!path)
		return false;
	gen = strchr(path, '<');
	name_len = gen ? (size_t)(gen - path) : strlen(path);
	last = path;
	for (p = path; p + 1 < path + name_len; p++)
		if (p[0] == ':' && p[1] == ':')
			last = p + 2;
	if (last == path)
		return false; /* no crate */
	crate_len = (size_t)(strstr(path, "::") - path);
	name_len -= (size_t)(last - path);
	return strlen(crate) == crate_len && !strncmp(path, crate, crate_len) &&
	       strlen(name) == name_len && !strncmp(last, name, name_len);
}

static int sender_index(const char *path)
{
	for (size_t i = 0; i < sizeof(senders) / sizeof(senders[0]); i++)
		if (is_named(path, senders[i].crate, senders[i].name))
			return (int)i;
	return -1;
}

/* The known[] entry for a type path, or -1. */
static int known_index(const char *path)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (is_named(path, known[i].crate, known[i].name))
			return (int)i;
	return -1;
}

/* Could a type of this DW_AT_name (`MutexGuard<u64>`) be a known guard? */
static bool name_is(const char *name, const char *want)
{
	size_t n = strlen(want);

	return !strncmp(name, want, n) && (name[n] == '<' || !name[n]);
}

static bool maybe_guard(const char *name)
{
	for (size_t i = 0; name && i < sizeof(known) / sizeof(known[0]); i++)
		if (name_is(name, known[i].name))
			return true;
	for (size_t i = 0; name && i < sizeof(senders) / sizeof(senders[0]); i++)
		if (name_is(name, senders[i].name))
			return true;
	return false;
}

bool guards__is_guard(const char *path)
{
	return known_index(path) >= 0;
}

/* What each family's key is, and its state word: tokio's `permits: AtomicUsize`
 * (in the semaphore every tokio lock holds), async-lock's Mutex and RwLock `state`,
 * its Semaphore's `count` (an atomic is its integer). An async-lock RwLock's write
 * guard also keeps the RwLock's inner Mutex: its way is to the RwLock, found first
 * as the type searched for. */
static const struct key_kind tokio_key = {.suffix = "batch_semaphore::Semaphore",
					  .named_by_holder = true};
static const struct key_kind async_lock_key = {.prefix = "async_lock::mutex::Mutex<"};
static const struct key_kind async_rwlock_key = {.prefix = "async_lock::rwlock::RwLock<"};
static const struct key_kind async_semaphore_key = {.exact = "async_lock::semaphore::Semaphore"};
static const struct key_kind futures_key = {.prefix = "futures_util::lock::mutex::Mutex<"};

const struct key_kind *guards__key(enum lock_family family)
{
	switch (family) {
	case LOCK_TOKIO: return &tokio_key;
	case LOCK_ASYNC_LOCK: return &async_lock_key;
	case LOCK_ASYNC_RWLOCK: return &async_rwlock_key;
	case LOCK_ASYNC_SEMAPHORE: return &async_semaphore_key;
	case LOCK_FUTURES: return &futures_key;
	case LOCK_NONE: break;
	}
	return NULL;
}

bool guards__state_word(Dwarf_Die *key, enum lock_family family, uint64_t *off)
{
	const char *word = family == LOCK_TOKIO		    ? "permits"
			   : family == LOCK_ASYNC_SEMAPHORE ? "count"
							    : "state";

	return keys__member(key, word, off, NULL);
}

/* A sender's way to its channel, the channel's count of senders, and (tokio) the
 * Arc's strong count: the struct the way's last pointer reaches (ArcInner). */
static bool sender(Dwarf_Die *t, int k, struct walk *w, struct held_guard *g)
{
	struct key_path p = {0};
	uint64_t back = 0, strong;

	if (!keys__find(w, t, &senders[k].key, &p) ||
	    !keys__member(&p.key, senders[k].count, &g->state_offset, NULL))
		return false;
	if (senders[k].weak) {
		const char *n = p.has_pointee ? dwarf_diename(&p.pointee) : NULL;

		if (!n || strncmp(n, "ArcInner<", 9) || !p.nr_steps ||
		    !keys__member(&p.pointee, "strong", &strong, NULL))
			return false; /* no proof without it */
		if (!p.steps[p.nr_steps - 1].deref)
			back = p.steps[p.nr_steps - 1].offset;
		g->has_strong = true;
		g->strong = strong - back; /* (modulo 2^64: DWARF's offsets are untrusted) */
	}
	g->lock = GUARD_SENDER;
	g->nr_steps = p.nr_steps;
	memcpy(g->steps, p.steps, sizeof(g->steps));
	g->resource = p.name;
	return true;
}

static bool held_at(const struct future_state *s, uint64_t offset)
{
	for (uint32_t i = 0; i < s->nr_held; i++)
		if (s->held[i].offset == offset)
			return true;
	return false;
}

static int find_guards(struct walk *w, Dwarf_Die *variant_struct, uint64_t variant_at,
		       struct future_state *s)
{
	Dwarf_Die m, t;
	uint32_t cap = s->nr_held; /* (read once per state: held[] is exactly this big) */

	if (dwarf_child(variant_struct, &m) != 0)
		return 0;
	do {
		const char *path, *name = dwarf_diename(&m);
		struct held_guard *g, found = {0};
		struct key_path p = {0};
		uint64_t off;
		int k;

		if (dwarf_tag(&m) != DW_TAG_member || !name || !strcmp(name, "__awaitee") ||
		    !die_type(&m, &t) || !member_offset(&m, &off))
			continue;
		/* the type's own name first (a full path is a walk of a unit's namespaces) */
		if (!maybe_guard(dwarf_diename(&t)))
			continue;
		path = walk__type_path(w, dwarf_dieoffset(&t));
		if ((k = known_index(path)) < 0) {
			/* a channel's sender, if its way leads to the channel */
			if ((k = sender_index(path)) < 0 || !sender(&t, k, w, &found))
				continue;
		} else {
			found.lock = known[k].lock;
		}
		if (found.lock == GUARD_SENDER) {
			/* found above */
		} else if (known[k].family != LOCK_NONE &&
			   keys__find(w, &t, guards__key(known[k].family), &p) &&
			   guards__state_word(&p.key, known[k].family, &found.state_offset)) {
			found.family = known[k].family;
			found.provable = known[k].provable;
			found.all_permits = known[k].all_permits;
			found.nr_steps = p.nr_steps;
			memcpy(found.steps, p.steps, sizeof(found.steps));
			found.resource = p.name;
			found.resource_back = p.back;
		}
		if (held_at(s, variant_at + off))
			continue; /* listed twice (an argument the variant keeps) */
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
