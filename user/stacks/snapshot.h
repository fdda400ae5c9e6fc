/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A live process read from outside (docs/stacks.md): its memory through
 * process_vm_readv, its threads stopped for the read with ptrace (PTRACE_SEIZE +
 * PTRACE_INTERRUPT; the kernel restarts them if asyncbpf dies), and the scan of its
 * writable memory for the tasks: boxed `dyn Future`s whose vtable the model knows.
 * Never writes to the target.
 */
#ifndef ASYNCBPF_STACKS_SNAPSHOT_H
#define ASYNCBPF_STACKS_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "stacks/decode.h"
#include "stacks/task_state.h"

/* stacks_read_fn over process_vm_readv; ctx points at the pid_t. */
int snapshot__read(void *ctx, uint64_t addr, void *buf, size_t len);

struct pause {
	pid_t *tids; /* the threads stopped (seized) */
	uint32_t nr, cap;
};

/*
 * Stop every thread of pid (new threads included, until the list is stable). 0, or
 * -errno with err saying why (the threads stopped so far are resumed).
 */
int pause__stop(pid_t pid, struct pause *p, char *err, size_t errlen);
/* Resume (detach) every stopped thread; safe to call twice. */
void pause__resume(struct pause *p);

/*
 * The target's writable memory, copied while it is stopped, so that the stacks are
 * decoded after it runs again: the pause lasts the copy only. Regions past `budget`
 * bytes are scanned but not kept; reads there (and of anything else: read-only data)
 * go to the live process.
 */
struct mem_region {
	uint64_t start, len;
	uint8_t *data;
};

struct mem_image {
	pid_t pid;
	struct mem_region *regions; /* ascending */
	uint32_t nr, cap;
	uint64_t kept, budget;
	uint64_t not_kept; /* bytes scanned past the budget */
};

/* stacks_read_fn over an image (ctx: struct mem_image *), live reads outside it. */
int mem_image__read(void *ctx, uint64_t addr, void *buf, size_t len);
void mem_image__free(struct mem_image *img);

/* A word holding a known vtable's address: where it is and the word before it. */
struct candidate {
	int32_t slot;  /* the vtable_index entry */
	uint64_t at;   /* the word's address */
	uint64_t data; /* the word before it: a boxed dyn Future's data pointer */
	bool on_stack; /* in a thread's stack: a stale copy if it is taken for a header */
};

struct scan_stats {
	uint64_t bytes;	     /* read */
	uint32_t mappings;   /* scanned */
	uint32_t unreadable; /* mappings that could not be read (counted, skipped) */
	uint32_t candidates; /* vtable words found */
	uint32_t rejected;   /* of them, not a live future (stale memory) */
	uint32_t duplicates; /* of them, a future already found (copies of a fat pointer) */
	uint32_t bad_layout; /* runtime vtables whose task layout could not be read */
	uint32_t on_stack;   /* task headers in a thread's stack: stale copies, skipped */
};

/*
 * Copy pid's writable private mappings into img (img->pid and img->budget set by the
 * caller) and list every 8-byte word that is a known vtable's address with the word
 * before it. *cands (caller frees), *nr. 0 or -errno with err set.
 */
int snapshot__copy(pid_t pid, const struct vtable_index *ix, struct mem_image *img,
		   struct candidate **cands, uint32_t *nr, struct scan_stats *st, char *err,
		   size_t errlen);

/* One task found: its runtime's header (none for a boxed dyn Future), its future. */
struct task_root {
	uint8_t runtime;      /* enum task_runtime */
	int32_t future;	      /* model index */
	uint64_t addr;	      /* the future; 0 when it is gone (a complete or closed task) */
	uint64_t header;      /* the task header (runtimes), else 0 */
	uint64_t state;	      /* the header's state word */
	struct task_state st; /* decoded (runtimes) */
};

/*
 * The candidates that are live tasks: a boxed dyn Future whose __state is one its
 * type has (a future without __state: readable); a runtime task whose header state
 * word is plausible and, unless it is complete, whose future is live. Each once.
 * *roots (caller frees). 0 or -ENOMEM.
 */
int snapshot__roots(const struct model *m, const struct vtable_index *ix,
		    const struct candidate *cands, uint32_t nr_cands, stacks_read_fn read,
		    void *ctx, struct task_root **roots, uint32_t *nr, struct scan_stats *st);

#endif
