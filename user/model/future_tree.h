/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The reference walk of a future tree (model.h, "Future trees"; docs/analyzer.md):
 * from a root future at an address, every future it holds, read from memory through
 * a callback, breadth first. A BPF program reading each task's tree at its polls
 * walks the same table the same way; this walk is what user space and the tests
 * check it against. Pure, bounded (nodes, depth), cycle-safe; nothing read is
 * trusted: a pointer, a discriminant or a vtable is only ever compared or followed
 * through the callback.
 */
#ifndef ASYNCBPF_MODEL_FUTURE_TREE_H
#define ASYNCBPF_MODEL_FUTURE_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

/* Copy len bytes of the target at addr into buf: 0, or -errno (unreadable). */
typedef int (*tree_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);
/* The model future whose `dyn Future` vtable is at this (run-time) address, or -1. */
typedef int32_t (*tree_vtable_fn)(void *ctx, uint64_t vtable);

struct tree_reader {
	tree_read_fn read;
	tree_vtable_fn vtable; /* NULL: every dyn child is unknown */
	void *ctx;
};

enum tree_node_flag {
	TREE_NODE_NO_LAYOUT = 1,   /* the model has no layout for its type: children unknown */
	TREE_NODE_BAD_STATE = 2,   /* a compiler future's __state above its largest: not live */
	TREE_NODE_UNREADABLE = 4,  /* its discriminant could not be read */
	TREE_NODE_UNKNOWN_DYN = 8, /* a dyn Future whose vtable the model does not know */
	TREE_NODE_DEPTH = 16,	   /* at the depth bound: its slots were not read */
};

struct tree_walk_node {
	int32_t future; /* model index; -1: an unknown dyn Future (TREE_NODE_UNKNOWN_DYN) */
	int32_t parent; /* index in the walk's nodes, -1 for the root */
	int32_t slot;	/* the model tree_slots entry it was reached through, -1 for the root */
	uint32_t depth; /* 0 for the root */
	uint64_t addr;
	uint64_t discr; /* its __state or enum discriminant, when its layout has one */
	uint8_t flags;	/* enum tree_node_flag */
};

struct tree_walk_stats {
	uint32_t cut_nodes;  /* children found but not kept: the node buffer was full */
	uint32_t cut_depth;  /* nodes at the depth bound whose slots were not read */
	uint32_t repeats;    /* a future met again at the same address (a cycle, or two slots
				reaching one future): kept once */
	uint32_t unreadable; /* slots whose condition or pointer could not be read */
};

/*
 * Where slot s of a future at addr leads: 1 with *to (the child's address) and, for a
 * dyn slot, *vtable (the fat pointer's vtable half); 0 when a condition does not hold
 * or a pointer on the way is null (no such child now); -1 when memory on the way
 * could not be read. Conditions are checked where the steps reach their at_step.
 */
int future_tree__follow(const struct tree_slot *s, uint64_t addr, const struct tree_reader *rd,
			uint64_t *to, uint64_t *vtable);

/*
 * The tree of future `root` at addr: nodes[0] is the root, then breadth first, each
 * node's children in slot order, at most cap nodes and max_depth levels below the
 * root. A node is not expanded when its layout is unknown, its __state is not live
 * or unreadable, or it is at the depth bound; a (future, address) pair is kept once.
 * Returns the number of nodes (0 when root is not a model future or cap is 0).
 */
uint32_t future_tree__walk(const struct model *m, int32_t root, uint64_t addr,
			   const struct tree_reader *rd, struct tree_walk_node *nodes, uint32_t cap,
			   uint32_t max_depth, struct tree_walk_stats *st);

#endif
