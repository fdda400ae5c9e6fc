/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The model's locks and waits (part of model.h, which includes it): what a parked
 * future waits in and for, the lock guards its states keep, and what a lock's state
 * word says (docs/stacks.md, "Resources and deadlocks").
 */
#ifndef ASYNCBPF_MODEL_LOCKS_H
#define ASYNCBPF_MODEL_LOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One step from a value towards what it leads to: from a state's __awaitee towards the
 * awaited future (await_edge.steps), from a guard to its lock (held_guard.steps). */
struct await_step {
	uint64_t offset; /* move this many bytes on */
	bool deref;	 /* then follow the pointer stored there */
};

#define GUARD_STEPS 8 /* the steps of a way to a lock or what a future waits for */

/*
 * A future a parked task waits in (analyze/waits.c): the way from the future to what
 * it waits for (a lock's key, a task's header, a channel, a Notify), what that is
 * called, and for a lock its family, its state word and tokio Acquire's `queued` flag
 * (FUTURE_NO_OFFSET: queued while parked).
 */
struct future_wait {
	uint8_t kind;	/* enum wait_kind */
	uint8_t family; /* enum lock_family (WAIT_LOCK) */
	uint8_t nr_steps;
	struct await_step steps[GUARD_STEPS];
	uint64_t queued, state;
	/* tokio's Acquire: the permits it asked for (`num_permits`, 4 bytes) and those
	 * still to be given it (its wait-list node's `state` word, 8 bytes): a queued one
	 * with fewer left than asked holds some of the lock's permits already.
	 * FUTURE_NO_OFFSET: not found */
	uint64_t asked, left;
	const char *type;
	/* a lock's method (tokio's RwLock::write, Mutex::lock, Semaphore::acquire): not
	 * the future a task waits in (the Acquire inside it is), but its `self` names
	 * the lock whose key that Acquire waits on: `type`, the key `back` bytes in */
	bool names_only;
	uint64_t back;
	/* names_only: the lock's own count of its permits (tokio's RwLock `mr`, 4
	 * bytes), `total` bytes into the lock; has_total false: it keeps none (a Mutex,
	 * a Semaphore) */
	bool has_total;
	uint64_t total;
	/* the wait of a lock method that awaits another lock's first (async-lock's
	 * RwLock::write its inner Mutex): found a few frames out of that wait, it is
	 * the one the task waits on */
	bool over_inner;
	/* waits for a message (an mpsc or async-channel receive): the channel's
	 * senders can end it (GUARD_SENDER guards) */
	bool receives;
};

/* What a guard holds (guards.c: by its type's name). */
enum guard_lock {
	GUARD_OTHER,	 /* a known guard whose lock's state is not decoded */
	GUARD_EXCLUSIVE, /* a Mutex, an RwLock's write side: one holder */
	GUARD_SHARED,	 /* an RwLock's read side */
	GUARD_PERMITS,	 /* some of a Semaphore's permits */
	GUARD_SENDER,	 /* a channel's sender (its receiver waits on what it sends) */
};

/* How a lock's state word says it is held (docs/stacks.md, "Resources and deadlocks"). */
enum lock_family {
	LOCK_NONE,
	/* tokio's locks: a batch semaphore (the key) whose `permits` word is the permits
	 * available shifted left by one; an exclusive lock is held when none is left */
	LOCK_TOKIO,
	/* async-lock's Mutex (async-std's, smol's): the Mutex is the key, bit 0 of its
	 * `state` word says locked */
	LOCK_ASYNC_LOCK,
	/* async-lock's RwLock: the RwLock is the key, its `state` word bit 0 a writer
	 * (holding it, or waiting for the readers to leave), the rest its readers */
	LOCK_ASYNC_RWLOCK,
	/* async-lock's Semaphore: the key, its `count` word the permits available */
	LOCK_ASYNC_SEMAPHORE,
	/* futures-util's Mutex (futures::lock): the Mutex is the key, bit 0 of its
	 * `state` word says locked (IS_LOCKED), bit 1 that it has waiters */
	LOCK_FUTURES,
};

/* What a waiting future waits for (future.wait_kind). */
enum wait_kind {
	WAIT_NONE,
	WAIT_LOCK,    /* a lock's permits or its release */
	WAIT_JOIN,    /* a task to finish (its JoinHandle) */
	WAIT_CHANNEL, /* a message, or room in a channel */
	WAIT_NOTIFY,  /* a Notify's notification */
};

/*
 * A lock guard kept across an await: a member of the Suspend<k> variant (a local
 * whose storage is kept across that await) whose type is a known guard (docs/stacks.md,
 * "Resources and deadlocks"). For the lock families decoded, the way from the guard
 * to its lock's key (the lock's identity, the same one a waiting future points at)
 * and where the key's state word is.
 */
struct held_guard {
	const char *name;     /* the local's name ("g1") */
	const char *type;     /* the guard's type path */
	const char *resource; /* the lock's type ("tokio::sync::mutex::Mutex<u64>"); NULL */
	uint64_t offset;      /* the guard's offset in the future */
	uint8_t lock;	      /* enum guard_lock */
	uint8_t family;	      /* enum lock_family; LOCK_NONE: the way was not found */
	/* its lock's state proves it held: a Mutex, whose one permit no waiter takes in
	 * part (tokio's RwLock: a queued writer takes the permits left, so "none left"
	 * does not prove a writer holds it) */
	bool provable;
	/* it takes every permit of its lock (tokio's Mutex and RwLock write guards): held
	 * also when no permit is left and no waiter queued on the lock was given any of
	 * them (then guards hold them all, and only one that takes them all can: stacks,
	 * which sees the queued waiters) */
	bool all_permits;
	uint8_t nr_steps; /* from the guard to the key */
	struct await_step steps[GUARD_STEPS];
	uint64_t resource_back; /* the key's offset in the lock (resource != NULL) */
	uint64_t state_offset;	/* the state word in the key (a sender: the channel's
				 * count of senders) */
	/* a sender whose channel is in an Arc that weak senders share too (tokio's):
	 * the Arc's strong count at key + strong (modulo 2^64: before the key) */
	bool has_strong;
	uint64_t strong;
};

/* "tokio", "async-lock", "async-lock-rwlock", "async-lock-semaphore", "futures-util",
 * "none" */
const char *lock_family__name(enum lock_family f);
/*
 * What a lock's state word says (enum lock_family): tokio's batch semaphore keeps its
 * available permits shifted left by one, bit 0 saying closed
 * (tokio/src/sync/batch_semaphore.rs, PERMIT_SHIFT): locked when none is left;
 * async-lock's Mutex sets bit 0 while locked, the other bits counting starved lock
 * operations (async-lock/src/mutex.rs); its RwLock is locked with a writer (bit 0,
 * WRITER_BIT) or a reader (each adds ONE_READER, 2), its Semaphore when `count`, its
 * permits left, is 0 (async-lock/src/rwlock.rs, semaphore.rs); futures-util's Mutex
 * sets bit 0 while locked (futures-util/src/lock/mutex.rs, IS_LOCKED). Permits: tokio's and
 * async-lock's Semaphore's available (0 for the others).
 */
bool lock_family__locked(uint8_t family, uint64_t word);
/*
 * Does the word prove its one exclusive guard holds it (held_guard.provable)? A Mutex
 * locked; a tokio lock with no permit left; async-lock's RwLock with its writer bit
 * alone (a writer with readers still in waits for them to leave).
 */
bool lock_family__held(uint8_t family, uint64_t word);
/* async-lock's RwLock: its readers (0 for the others). */
uint64_t lock_family__readers(uint8_t family, uint64_t word);
uint64_t lock_family__permits(uint8_t family, uint64_t word);
/* "exclusive", "shared", "permits", "sender", "other" */
const char *guard_lock__name(enum guard_lock l);
/* "lock", "join", "channel", "notify", "none" */
const char *wait_kind__name(enum wait_kind k);
/*
 * Where n steps (struct await_step) lead from addr, each pointer on the way read with
 * read (0 on success: stacks' reader of a target's memory); *ptr_at: where the last
 * pointer followed lies (0: none). False when one cannot be read or is null.
 */
bool await_steps__follow(const struct await_step *steps, uint32_t n, uint64_t addr,
			 int (*read)(void *ctx, uint64_t addr, void *buf, size_t len), void *ctx,
			 uint64_t *to, uint64_t *ptr_at);

#endif
