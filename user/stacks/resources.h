/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Resources and deadlocks (resources.c; docs/stacks.md, "Resources and deadlocks"):
 * the locks parked tasks hold (guards kept across their awaits, checked against the
 * lock's state in memory) and wait for (an innermost tokio `Acquire`), the wait-for
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

/* A guard a parked task keeps across an await. */
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

/* A parked task whose innermost future waits for a lock's permits. */
struct res_wait {
	uint32_t task, frame; /* the Acquire's frame */
	uint32_t resource;
	bool queued; /* in the lock's wait list (its Acquire says so) */
};

struct resource {
	uint64_t sem;	    /* its batch semaphore: the lock's identity */
	uint64_t lock;	    /* the lock (0: known by its semaphore only) */
	const char *type;   /* the lock's type; NULL: not known (waiters only) */
	uint8_t kind;	    /* enum guard_lock of its guards; GUARD_OTHER: waiters only */
	bool read;	    /* its permits were read */
	uint64_t available; /* permits available now */
	uint32_t holders, waiters;
};

/* Edge i of a cycle: cycle_task[i] waits for cycle_res[i], which
 * cycle_task[i + 1] (the first after the last) holds. */
struct res_deadlock {
	uint32_t first, nr; /* into cycle_task / cycle_res */
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
	uint32_t self_waits; /* a task waiting for a lock its own guard's slot points at */
	uint32_t unread;     /* guards whose lock could not be read (or is not decoded) */
};

struct stk_snapshot;
struct stk_task;

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
/* One folded line per deadlock: the cycle's tasks and locks. */
void resources__folded(FILE *out, const struct stk_snapshot *s, const struct model *m);

#endif
