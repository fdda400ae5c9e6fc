// SPDX-License-Identifier: GPL-2.0
/*
 * The runtimes' state words (task_state.h). The bits are the runtimes' own:
 * tokio 1.x src/runtime/task/state.rs (RUNNING 1, COMPLETE 2, NOTIFIED 4,
 * JOIN_INTEREST 8, JOIN_WAKER 16, CANCELLED 32, the reference count from bit 6),
 * async-task 4.x src/state.rs (SCHEDULED 1, RUNNING 2, COMPLETED 4, CLOSED 8,
 * TASK 16, AWAITER 32, REGISTERING 64, NOTIFYING 128, the count from bit 8). They have
 * been the same through both major versions; a word that does not fit them (a count
 * of zero or past 2^24: freed or reused memory) is refused.
 */
#include "stacks/task_state.h"

#include <string.h>

#include "model/model.h"

#define MAX_REFS (1ull << 24)

static bool decode_tokio(uint64_t w, struct task_state *o)
{
	uint64_t refs = w >> 6;

	if (!refs || refs >= MAX_REFS)
		return false;
	memset(o, 0, sizeof(*o));
	o->running = w & 1;
	o->complete = w & task_runtime__done_bit(TASK_RT_TOKIO);
	o->scheduled = w & 4;
	o->handle = w & 8;
	o->closed = w & task_runtime__cancel_bit(TASK_RT_TOKIO);
	o->refs = refs;
	/* the runtime's list holds one reference, the JoinHandle one while it has
	 * JOIN_INTEREST; every Waker holds one more (an AbortHandle too: then this
	 * cannot be told, and is not claimed) */
	o->no_waker = !o->running && !o->complete && !o->scheduled && !o->closed &&
		      refs == 1 + (uint64_t)o->handle;
	return true;
}

static bool decode_async_task(uint64_t w, struct task_state *o)
{
	uint64_t refs = w >> 8;

	if (refs >= MAX_REFS)
		return false;
	memset(o, 0, sizeof(*o));
	o->scheduled = w & 1;
	o->running = w & 2;
	o->complete = w & task_runtime__done_bit(TASK_RT_ASYNC_TASK);
	o->closed = w & task_runtime__cancel_bit(TASK_RT_ASYNC_TASK);
	o->handle = w & 16;
	o->refs = refs;
	return true;
}

bool task_state__decode(uint8_t runtime, uint64_t word, struct task_state *out)
{
	switch (runtime) {
	case TASK_RT_TOKIO: return decode_tokio(word, out);
	case TASK_RT_ASYNC_TASK: return decode_async_task(word, out);
	default: return false;
	}
}

const char *task_state__label(const struct task_state *s)
{
	if (s->running)
		return "running";
	if (s->complete)
		return "complete";
	if (s->closed)
		return "cancelled";
	if (s->scheduled)
		return "scheduled";
	return "parked";
}
