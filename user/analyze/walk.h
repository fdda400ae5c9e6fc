/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The analyzer's walk state and helpers (walk.c), shared by the DWARF walk
 * (analyzer.c) and the passes after it (analyzer_post.h, awaits.h). Internal to
 * analyze/: nothing outside the folder includes it.
 */
#ifndef ASYNCBPF_ANALYZE_WALK_H
#define ASYNCBPF_ANALYZE_WALK_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stdint.h>

#include "analyze/analyzer.h"
#include "lib/hashmap.h"
#include "model/model.h"
#include "lib/strpool.h"

/* Bounds: inputs are hostile (we run as root). */
#define MAX_DIE_DEPTH	256
#define MAX_STATES	4096
#define MAX_AWAIT_DEPTH 8
#define MAX_AWAIT_NODES 128
#define MAX_PATH_LEN	4096

#define FUTURE_POLL_SUFFIX " as core::future::future::Future>::poll"

/* One type reached from an __awaitee type through members and pointers. */
struct await_node {
	const char *path; /* interned (model pool) full path, or NULL for anonymous types */
	int32_t parent;	  /* index in the same tree, -1 for the root */
	uint64_t die_offset;
	uint64_t size;
	bool is_env; /* a compiler-generated future: never descended into */
	bool is_dyn; /* a `dyn Trait` type: the concrete future is unknown statically */
	/* where it is: at `offset` bytes into its parent, or (derefs > 0) at the address
	 * stored there (the parent's member is a pointer), through `derefs` pointers in
	 * all (a `&mut &mut T` member: two); the root is the awaitee */
	uint8_t derefs;
	uint64_t offset;
};

/* An await point waiting for resolution once every future of the binary is known. */
struct await_rec {
	int32_t future;
	uint32_t await_index;
	const char *file;
	uint32_t line;
	uint64_t awaitee_offset; /* DIE of the __awaitee type (CU-local until resolved) */
	const char *awaitee_name;
	struct await_node *nodes;
	uint32_t nr_nodes;
};

struct drop_rec {
	const char *type_path;
	const char *linkage_name;
	uint64_t addr, size;
};

struct pending_poll {
	uint32_t poll;
	uint64_t return_type; /* DIE offset of the return type */
	Dwarf_Die param;      /* first formal parameter (for its location at entry) */
	bool has_param;
	int8_t frame_reg; /* DW_AT_frame_base as one register (rsp, rbp), -1 otherwise */
};

struct rt_walk;	   /* analyze/runtimes.c */
struct dbg_walk;   /* analyze/debuginfo.c */
struct task_walk;  /* analyze/task_exits.c */
struct callsites;  /* analyze/callsites.h */
struct tree_walk;  /* analyze/trees.c */
struct guard_walk; /* analyze/guards.c */

struct walk {
	struct target *t;
	struct model *m;
	const struct analyzer_opts *o;
	Dwarf *dw;
	Dwarf_Die cu;

	/* per compile unit */
	struct strpool cu_pool;	   /* type paths of this CU */
	struct u64_map type_paths; /* DIE offset -> const char * (cu_pool) */
	struct pending_poll *pending;
	uint32_t nr_pending, cap_pending;
	uint32_t first_cu_await; /* awaits recorded by this CU start here */
	/* what this CU holds, for its debug info level (debuginfo.c) */
	uint32_t cu_types, cu_namespaces, cu_linkage_names, cu_subprograms;
	const char *cu_first_namespace;
	uint32_t first_cu_future; /* futures this CU added start here (trees.c) */

	/* whole binary */
	struct u64_map future_by_path; /* interned path -> future index */
	struct u64_map poll_by_addr;   /* low_pc -> poll index */
	struct u64_map poll_by_key;    /* interned linkage name -> poll index */
	struct u64_map origin_class;   /* abstract DIE offset -> poll index + 1, or 0 */
	struct u64_map drop_by_path;   /* interned type path -> drop index */
	struct u64_map filled_futures; /* future index -> 1 once states were read */
	struct u64_map foreign_paths;  /* DIE offset in another CU -> path (foreign_pool) */
	struct u64_map indexed_cus;    /* CU DIE offset -> 1 once its paths are indexed */
	struct strpool foreign_pool;
	struct await_rec *awaits;
	uint32_t nr_awaits, cap_awaits;
	struct drop_rec *drops;
	uint32_t nr_drops, cap_drops;
	struct rt_walk *rt;	     /* the runtimes' task types (runtimes.c) */
	struct dbg_walk *dbg;	     /* debug info levels (debuginfo.c) */
	uint32_t nr_unreadable_self; /* poll fns whose future neither self nor the name told */
	struct task_walk *tasks;     /* the runtimes' task-poll dispatchers (task_exits.c) */
	struct callsites *calls;     /* the call-site index (caller_exits.c) */
	struct tree_walk *trees;     /* the future trees' type trees (trees.c) */
	struct guard_walk *guards;   /* variants whose guards are read at the CU's end */
	bool walked; /* every CU walked: the last one's own table is gone, index it as any */
};

/* DWARF helpers (walk.c) */
/* DW_AT_name (following abstract origins), or NULL. */
const char *die_name(Dwarf_Die *die);
/* DW_AT_linkage_name (or DW_AT_MIPS_linkage_name), following abstract origins, or NULL. */
const char *die_linkage_name(Dwarf_Die *die);
/* Where a function or inlined copy starts (entry pc, low pc or first range); false
 * when it has no code in the binary. */
bool die_code_start(Dwarf_Die *die, Dwarf_Addr *pc);
bool starts_with(const char *s, const char *prefix);
bool die_type(Dwarf_Die *die, Dwarf_Die *type);
uint64_t die_bytesize(Dwarf_Die *die);
bool member_offset(Dwarf_Die *member, uint64_t *off);
/* A variant's DW_AT_discr_value (a 16-byte block when its value fits in 64 bits). */
bool die_discr_value(Dwarf_Die *variant, Dwarf_Word *v);

/* walk.c */
/* Full path of a type DIE: this CU's table, else (a DW_FORM_ref_addr into another
 * unit) a walk of that unit's namespaces; NULL if unnamed or not found. */
const char *walk__type_path(struct walk *w, uint64_t die_offset);
/* The function symbol that starts at this link-time address (its linkage name), or
 * NULL: names the functions whose DWARF has none (line tables only). */
const char *walk__symbol_at(struct walk *w, uint64_t addr);
int32_t walk__get_future(struct walk *w, const char *path, enum future_kind kind,
			 uint64_t die_offset, uint64_t size);
enum future_kind future_kind__from_name(const char *name, bool *is_env);

#endif
