/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A runtime task's state word, read from its header (docs/stacks.md): tokio 1.x's
 * `runtime::task::state` bits and reference count, async-task 4.x's `state` module.
 * Pure: unit-tested on hand-made words.
 */
#ifndef ASYNCBPF_STACKS_TASK_STATE_H
#define ASYNCBPF_STACKS_TASK_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct task_state {
	bool running;	/* being polled right now */
	bool scheduled; /* notified: in a run queue, will be polled */
	bool complete;	/* its future is done (output kept or taken) */
	bool closed;	/* async-task: closed (cancelled or done); tokio: cancel requested */
	bool handle;	/* a JoinHandle / Task handle still exists */
	uint64_t refs;	/* the reference count */
	/*
	 * tokio: parked, not scheduled, and no reference left besides the runtime's
	 * own list and the JoinHandle: no waker exists, nothing can ever wake it
	 */
	bool no_waker;
};

/* Decode word for runtime (enum task_runtime). False: not a plausible state word
 * (stale or reused memory), out untouched. */
bool task_state__decode(uint8_t runtime, uint64_t word, struct task_state *out);
/* "parked", "scheduled", "running", "complete", "cancelled": one word for people. */
const char *task_state__label(const struct task_state *s);

#endif
