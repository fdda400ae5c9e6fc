/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Locks in task mode (docs/tracing.md, "Locks"): the tree table gets extra child
 * slots that lead from a future to the lock it waits for (tokio's Acquire,
 * async-lock's acquire_slow) or to the lock a guard it keeps across an await points
 * at, each to a pseudo future past the model's (its "discriminant" is the lock's
 * state word). The BPF walk reads them with the tree at each task poll's end, the
 * consumer takes them out of the tree (task_locks__strip) and follows each lock over
 * time: waits (how many, how long), holds across awaits (the longest holders).
 * Pure: the unit test feeds it hand-made trees.
 */
#ifndef ASYNCBPF_TRACE_TASK_LOCKS_H
#define ASYNCBPF_TRACE_TASK_LOCKS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "model/model.h"
#include "trace/task_trees.h"

enum lock_pseudo_kind {
	LOCK_PSEUDO_WAIT, /* the lock a waiting future waits for */
	LOCK_PSEUDO_HELD, /* the lock a guard kept across an await points at */
};

/* One pseudo future of the table: index m->nr_futures + its index. */
struct lock_pseudo {
	uint8_t kind;	/* enum lock_pseudo_kind */
	uint8_t family; /* enum lock_family */
	int32_t future; /* the waiting future, or the one whose state keeps the guard */
	uint32_t state; /* HELD: that state's index */
	const struct held_guard *guard; /* HELD */
	uint64_t state_offset;		/* the state word in the lock's key */
};

/* The tree table with the lock slots: the model's, and per future with lock slots its
 * slots copied after the model's with those added. A function of the model only: the
 * loader and the consumer build the same one. */
struct lock_table {
	const struct model *m;
	struct lock_pseudo *pseudo;
	uint32_t nr_pseudo;
	struct tree_slot *slots;
	uint32_t nr_slots;
	uint32_t *first, *count; /* per future: its slots in `slots` */
	uint32_t cut;		 /* lock slots left out (a future's slots full, a way too long) */
};

int lock_table__build(struct lock_table *t, const struct model *m);
void lock_table__free(struct lock_table *t);

/* A lock seen in a task's tree. */
struct lock_seen {
	uint8_t kind, family;
	bool unreadable; /* its state word could not be read */
	uint64_t key;	 /* the lock's key (tokio's semaphore, async-lock's Mutex) */
	uint64_t word;	 /* its state word */
	const struct lock_pseudo *pseudo;
};

#define TASK_LOCKS_SEEN 16

/* Take the lock nodes out of tree (its other nodes' parents renumbered) into seen;
 * their count (at most cap). */
uint32_t task_locks__strip(const struct lock_table *t, struct task_tree *tree,
			   struct lock_seen *seen, uint32_t cap);

/* Is the lock held, by its state word (exclusive locks only)? */
bool task_locks__locked(const struct lock_seen *s);

struct task_locks;

struct task_locks *task_locks__new(const struct model *m);
void task_locks__free(struct task_locks *l);
/*
 * A task poll's end tree (its header, root future, start and end) with the locks
 * seen in it (task_locks__strip); completed: the task finished. 0 or -ENOMEM.
 */
int task_locks__add(struct task_locks *l, uint64_t header, int32_t root, uint64_t start_ns,
		    uint64_t end_ns, bool completed, const struct lock_seen *seen, uint32_t nr);
/* The end of the trace: waits and holds still open are counted as such. */
void task_locks__finish(struct task_locks *l, uint64_t end_ns);

/*
 * top --locks: one table of the locks waited for or held now, or in the interval since
 * the last call (dt seconds): waiting now and the longest of those waits, waits ended
 * and their average, holds ended, the holder now. At most max_rows rows (0: all).
 */
void task_locks__top(struct task_locks *l, uint64_t now_ns, double dt, FILE *out, int max_rows);
/* The locks seen, most waited first: text (nothing when none) and JSON. */
void task_locks__print(const struct task_locks *l, FILE *out);
struct cJSON;
int task_locks__json(const struct task_locks *l, struct cJSON *parent);

#endif
