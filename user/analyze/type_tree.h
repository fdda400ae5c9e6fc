/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The type tree of a future type or of an __awaitee (type_tree.c): the types
 * reached from it through members, nested structs and unions, enum variants (with
 * the condition under which each variant is live), Box and references, breadth
 * first and bounded, for the future trees (trees.c). Internal to analyze/.
 */
#ifndef ASYNCBPF_ANALYZE_TYPE_TREE_H
#define ASYNCBPF_ANALYZE_TYPE_TREE_H

#include "analyze/walk.h"

#define TYPE_TREE_MAX_NODES 512
#define TYPE_TREE_MAX_DEPTH 16

/* One type of a tree. Offsets and conditions are relative to the parent's start. */
struct type_node {
	const char *path;   /* the type's full path (model pool); NULL if anonymous */
	const char *member; /* the member that holds it (model pool) */
	int32_t parent;	    /* index in the tree, -1 for the root */
	uint8_t depth;
	uint8_t derefs;	 /* pointers followed from the member to the type */
	bool is_env;	 /* a compiler future: never looked into */
	bool is_dyn;	 /* a `dyn Future` behind a fat pointer's data half */
	bool cond;	 /* lies in an enum variant of its parent: live under cond_* */
	bool cond_bad;	 /* lies in a variant whose condition cannot be written */
	bool vtable_bad; /* is_dyn, but its fat pointer has no vtable member */
	bool cut;	 /* the bounds kept some of what lies in it out of the tree */
	uint8_t cond_kind, cond_size;
	uint64_t die;	 /* the struct or union; 0: the future itself behind a pointer */
	uint64_t offset; /* of the member in the parent */
	uint64_t cond_offset, cond_lo, cond_hi;
	uint64_t vtable; /* is_dyn: the vtable half's offset in the parent */
};

/*
 * The tree of `type` into nodes[0 .. *nr). self: the type is the future (its members
 * count; a future that is a pointer, `&mut F`, gets node 0 for itself and node 1 for
 * F), else an __awaitee (node 0, itself a candidate child). Nodes come parents
 * first. *truncated: the bounds cut it (node.cut says where). 0 or -ENOMEM.
 */
int type_tree__build(struct walk *w, Dwarf_Die *type, bool self, const char *root_member,
		     struct type_node *nodes, uint32_t *nr, bool *truncated);
/* The discriminant of an enum type (its variant part): offset and size. */
bool type_tree__discr(Dwarf_Die *type, uint64_t *offset, uint32_t *size);
/* A std future generic over what it holds (Pin<Box<F>>): looked through, not a child. */
bool type_tree__std_wrapper(const char *path);

#endif
