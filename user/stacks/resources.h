/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Resources and deadlocks (resources.c; docs/stacks.md, "Resources and deadlocks"):
 * the locks parked tasks hold (guards kept across their awaits, checked against the
 * lock's state in memory) and wait for (tokio's `Acquire`, async-lock's
 * `acquire_slow`), the wait-for
 * graph task -> lock -> holding task, and its cycles. Pure: memory through the
 * snapshot's read callback.
 */
#ifndef ASYNCBPF_STACKS_RESOURCES_H
#define ASYNCBPF_STACKS_RESOURCES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "model/model.h"
#include "stacks/decode.h"

#define RES_NONE UINT32_MAX

/* A guard a parked task keeps across an await (task first: resources_view.c finds a
 * task's holds and wait by it). */
struct res_hold {
	uint32_t task, frame; /* the snapshot's task, the frame whose local it is */
	const struct held_guard *guard;
	uint64_t addr;	   /* where the guard is */
	uint32_t resource; /* RES_NONE: its lock could not be read */
	/*
	 * held: the lock is held now (an exclusive lock without a permit left) and no
	 * other task's guard claims it. A guard's storage outlives the guard (a guard
	 * dropped before the await, or reassigned in a loop, keeps its slot): without that
	 * check a stale slot would be taken for a lock held.
	 */
	bool held;
	bool ambiguous; /* an exclusive lock two tasks' guards point at: one is stale */
};

/* A parked task waiting for a lock (its innermost future that waits for one), or for
 * another task to finish (a JoinHandle). */
struct res_wait {
	uint32_t task, frame; /* the waiting future's frame */
	uint32_t resource;    /* the lock; RES_NONE for a join */
	uint32_t joins;	      /* the task joined (the snapshot's); RES_NONE: not a join */
	uint8_t kind;	      /* enum wait_kind */
	bool queued;	      /* in the lock's wait list (tokio's Acquire says so) */
	bool given;	      /* tokio: queued and given some permits (or its counts unread) */
	bool receives;	      /* waits for a message (future_wait.receives) */
	/* a frame on the way to it awaits other futures too (join!, select!, a timeout):
	 * another branch may end the wait, which is no edge of the wait-for graph */
	bool alternatives;
};

struct resource {
	uint64_t key;	    /* its identity: tokio's batch semaphore, async-lock's Mutex */
	uint64_t lock;	    /* the lock (0: known by its semaphore only) */
	const char *type;   /* the lock's type; NULL: not known */
	uint8_t family;	    /* enum lock_family */
	uint8_t kind;	    /* enum guard_lock of its guards; GUARD_OTHER: waiters only */
	bool read;	    /* its state word was read */
	bool locked;	    /* it says the lock is held (tokio: no permit left) */
	uint64_t available; /* tokio, async-lock's Semaphore: permits available now */
	uint64_t word;	    /* its state word, as read */
	uint32_t holders, waiters;
	uint8_t wait_kind;	  /* enum wait_kind of its waiters: a lock, a channel, a Notify */
	const struct future *via; /* the future its first waiter waits in */
	uint32_t holder;	  /* the task holding it, RES_NONE: none (or ambiguous) */
	bool ambiguous;		  /* an exclusive lock two tasks' guards point at */
	/* a waiter queued on it was given some of the permits it asked for already (or
	 * its counts could not be read): "no permit left" then does not mean guards hold
	 * them all */
	bool given;
	uint32_t shared_claims; /* read guards pointing at it (held or not) */
	uint32_t permit_claims; /* Semaphore permits pointing at it (held or not) */
	uint32_t all_claims;	/* guards taking all its permits pointing at it */
	uint32_t claims;	/* guard slots pointing at it */
	/* the permits it was made with, read from the lock (tokio's RwLock `mr`, named
	 * by a waiter's lock method); 0: not known */
	uint64_t total;
	uint64_t given_permits; /* given to its queued waiters so far */
	bool given_unknown;	/* a queued waiter's counts could not be read */
	bool named;		/* a waiter's lock method was looked for its name */
	/* a channel: its count of senders (as read), the sender slots pointing at it,
	 * and (tokio) its Arc's strong count, which weak senders share */
	uint64_t senders, strong;
	uint32_t sender_slots;
	bool senders_read, strong_read, weak;
	/*
	 * Its permits add up: those available, those given to its queued waiters and
	 * those its guard slots take (a read guard one, a write guard all) make its
	 * total (async-lock's RwLock: its readers are its read slots), and no task was
	 * running (a guard a task took since it last parked is not in its slots). Then,
	 * every guard being seen, every slot pointing at it holds (a stale one would
	 * take permits twice): each read guard is proven held, even by several tasks
	 * (holder is RES_NONE then, and each waiter waits for all of them). A channel:
	 * its count of senders is its sender slots (and its Arc's strong count those
	 * and the receiver's: no weak sender), so every sender is a slot's.
	 */
	bool counted;
	/* its holds [0] and waits [1]: by_res_*[first_ref[k] .. + nr_refs[k]] */
	uint32_t first_ref[2], nr_refs[2];
};

/* Edge i of a cycle: cycle_task[i] waits for cycle_res[i], which
 * cycle_task[i + 1] (the first after the last) holds, or (cycle_res[i] RES_NONE)
 * for cycle_task[i + 1] to finish. */
struct res_deadlock {
	uint32_t first, nr; /* into cycle_task / cycle_res */
	/*
	 * Every edge's holder is proven by memory (res_hold.held) or is a join. Else
	 * some edge goes through a lock held in part (a Semaphore's permits, a RwLock's
	 * read side): its state says how many permits are taken, not by whom, and every
	 * guard slot pointing at it is kept by a task of the deadlock (resources__claimed):
	 * a possible deadlock, which a guard `stacks` cannot see would end.
	 */
	bool proven;
};

struct res_report {
	struct res_hold *holds;
	uint32_t nr_holds;
	struct res_wait *waits;
	uint32_t nr_waits;
	struct resource *res;
	uint32_t nr_res;
	struct res_deadlock *deadlocks;
	uint32_t nr_deadlocks;
	uint32_t *cycle_task, *cycle_res;
	/* tasks stuck behind a deadlock, not in its cycle: each waits (first edge: for
	 * behind_res, RES_NONE a join, held by or being behind_next) only for tasks
	 * deadlocked or stuck too; behind_deadlock: the deadlock its first edges lead to */
	struct res_behind {
		uint32_t task, res, next, deadlock;
	} * behind;
	uint32_t nr_behind;
	uint32_t *by_res_holds, *by_res_waits; /* indices into holds / waits, by resource */
	uint32_t self_waits; /* a task waiting for a lock its own guard's slot points at */
	uint32_t running;    /* tasks running when read: their guards may be unseen */
	uint32_t unread;     /* guards whose lock could not be read (or is not decoded) */
};

struct stk_snapshot;
struct stk_task;

/*
 * A lock held in part (Semaphore permits or a RwLock's read guards point at it; an
 * async-lock RwLock: with as many readers as read slots at most) with no permit left
 * and no holder proven, or a channel whose senders are all slots' (resource.counted):
 * a waiter depends on every task whose guard slot points at it (the wait-for graph's
 * edges are to all of them; of a counted lock, to those proven to hold it).
 */
bool resources__claimed(const struct resource *x);
/* Its holder, or each of its holders, is proven (held, or resource.counted; never a
 * channel's: a stale sender slot and one kept out of sight count alike). */
bool resources__proven(const struct resource *x);

/*
 * The resources of the snapshot's tasks (those that are not a future inside another
 * task), read through read/ctx. 0 or -ENOMEM.
 */
int resources__build(struct res_report *r, const struct model *m, const struct stk_task *tasks,
		     uint32_t nr, stacks_read_fn read, void *ctx);
void resources__free(struct res_report *r);

/* The deadlock and resource sections of the text view (nothing when there is none). */
void resources__text(FILE *out, const struct stk_snapshot *s, const struct model *m, bool color);
/* `resources`, `deadlocks` into the JSON root; per task `holds` / `waits_on`. */
struct cJSON;
void resources__json(struct cJSON *root, const struct stk_snapshot *s, const struct model *m);
void resources__task_json(struct cJSON *task, const struct stk_snapshot *s, const struct model *m,
			  uint32_t id);
/* A deadlocked task's folded line ends with what it waits for and who holds it:
 * ";[deadlock: waits for LOCK at ADDR held by task N]" ("possible deadlock" for one
 * not proven). */
void resources__folded(FILE *out, const struct stk_snapshot *s, const struct model *m,
		       uint32_t task);

#endif
