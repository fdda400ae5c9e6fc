/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A parked task's async stack, read from the target's memory with the analyzer's
 * model (docs/stacks.md): from the root future's `__state`, the suspend state's await
 * line, then the awaited future at `awaitee_offset` and the edge's steps, down to a
 * future the model cannot look into. Pure: memory comes through a read callback, so
 * the unit tests and the fuzzer feed it images.
 */
#ifndef ASYNCBPF_STACKS_DECODE_H
#define ASYNCBPF_STACKS_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/future_tree.h"
#include "model/model.h"

/* Copy len bytes of the target at addr into buf: 0, or -errno (unreadable). */
typedef int (*stacks_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

enum frame_state {
	FRAME_SUSPENDED,   /* parked at an await point (file, line) */
	FRAME_UNRESUMED,   /* created, never polled */
	FRAME_RETURNED,	   /* done (Ready was returned) */
	FRAME_PANICKED,	   /* a poll panicked */
	FRAME_OPAQUE,	   /* a hand-written or runtime future: what it waits on is its own */
	FRAME_BAD_STATE,   /* __state holds no value this future has: not a live future */
	FRAME_UNREADABLE,  /* its memory could not be read */
	FRAME_UNKNOWN_DYN, /* a boxed `dyn Future` whose vtable the model does not know */
	FRAME_TYPE_ONLY	   /* a task's future known by its type only (no DWARF types: no layout) */
};

#define STACKS_MAX_FRAMES 64

struct stack_frame {
	int32_t future;	     /* model index; -1 for FRAME_UNKNOWN_DYN */
	uint64_t addr;	     /* where the future is in the target */
	uint8_t state;	     /* enum frame_state */
	uint64_t discr;	     /* its raw __state (futures with one) */
	int32_t await_index; /* FRAME_SUSPENDED: k of Suspend<k>; else -1 */
	const char *file;    /* FRAME_SUSPENDED: the await's line */
	uint32_t line;
	uint32_t branches; /* awaited futures besides the one followed (join!, select!) */
};

struct task_stack {
	struct stack_frame frames[STACKS_MAX_FRAMES]; /* outermost first */
	uint32_t nr;
	bool cycle;    /* a future met again down its own chain: corrupt memory, cut */
	bool too_deep; /* more than STACKS_MAX_FRAMES: cut */
};

/*
 * Runtime addresses of the vtables a task or a boxed future points at (a sorted
 * index): `dyn Future` vtables (types[i] = -1) and the runtimes' task vtables
 * (types[i]: the model's task_types index).
 */
struct vtable_index {
	uint64_t *addrs; /* runtime addresses, ascending */
	int32_t *futures;
	int32_t *types;
	uint32_t nr;
};

/*
 * The model's vtables at their runtime address (link-time + bias): its dyn Future
 * vtables, and the task vtables of the runtimes whose layout it knows. 0 or -ENOMEM.
 */
int vtable_index__init(struct vtable_index *ix, const struct model *m, uint64_t bias);
/* The model future whose `dyn Future` vtable is at addr, or -1. */
int32_t vtable_index__find(const struct vtable_index *ix, uint64_t addr);
/* The index's entry for the vtable at addr (any kind), or -1. */
int32_t vtable_index__slot(const struct vtable_index *ix, uint64_t addr);
void vtable_index__free(struct vtable_index *ix);

/*
 * Decode the stack of the future `future` at `addr`. Never fails: what cannot be read
 * or makes no sense ends the stack with a frame that says so.
 */
void stacks__decode(const struct model *m, const struct vtable_index *ix, int32_t future,
		    uint64_t addr, stacks_read_fn read, void *ctx, struct task_stack *out);

/*
 * The whole future tree of the future at addr (model/future_tree.h): its dyn children
 * resolved through ix's `dyn Future` vtables. At most cap nodes, STACKS_TREE_DEPTH
 * levels. Returns the number of nodes.
 */
#define STACKS_TREE_DEPTH 32
uint32_t stacks__tree(const struct model *m, const struct vtable_index *ix, int32_t future,
		      uint64_t addr, stacks_read_fn read, void *ctx, struct tree_walk_node *nodes,
		      uint32_t cap, struct tree_walk_stats *st);

/* "suspended", "unresumed", ...: for people and JSON. */
const char *frame_state__name(uint8_t state);

/* The first frame worth showing: past the runtimes' own wrappers (async-executor's
 * spawn block, ...) when a frame of the program's own follows. */
uint32_t stacks__first_shown(const struct model *m, const struct task_stack *st);

#endif
