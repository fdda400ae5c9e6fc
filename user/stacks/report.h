/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What `asyncbpf stacks` shows of a snapshot (docs/stacks.md): the tasks grouped by
 * identical stacks and state, biggest group first, as text; every task as JSON
 * (asyncbpf-stacks/1); the stacks weighted by their tasks as folded lines (a flame
 * graph of where tasks wait). Pure: files are the caller's.
 */
#ifndef ASYNCBPF_STACKS_REPORT_H
#define ASYNCBPF_STACKS_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "model/model.h"
#include "stacks/decode.h"
#include "stacks/resources.h"
#include "stacks/snapshot.h"

struct stk_task {
	struct task_root root;
	struct task_stack stack;
	struct tree_walk_node *tree; /* --tree: the root future's whole tree (malloc'd), or NULL */
	uint32_t nr_tree;
	struct tree_walk_stats tree_stats;
	bool shown;	    /* matches the patterns, not a future inside another task */
	bool inner;	    /* a boxed future found inside another task: not a task */
	uint32_t deadlock;  /* 1 + the deadlock it is in (res.deadlocks), 0: none */
	uint32_t behind;    /* 1 + the deadlock it is stuck behind (res.behind), 0: none */
	uint32_t group;	    /* index into the report's groups */
	double unchanged_s; /* --watch: seconds its stack and state have not changed */
	uint64_t signature; /* hash of its stack and state (--watch compares them) */
};

struct stk_group {
	uint32_t first; /* task index */
	uint32_t count;
	uint32_t stuck; /* --watch: of them, unchanged since the previous snapshot */
	double stuck_s; /* the least time one of those has been unchanged */
};

struct stk_snapshot {
	pid_t pid;
	struct stk_task *tasks;
	uint32_t nr;
	struct stk_group *groups; /* biggest first */
	uint32_t nr_groups;
	uint32_t shown;
	uint32_t per_runtime[TASK_RT_MAX]; /* shown tasks by runtime */
	uint32_t inner;			   /* found, but a future inside another task: dropped */
	uint32_t tokio_workers;		   /* threads named tokio-runtime-worker */
	bool paused;
	uint64_t read_ns, paused_ns;
	uint64_t not_kept; /* bytes past the copy's budget, read after the pause */
	struct scan_stats scan;
	bool watching;	       /* --watch: stuck counts are meaningful */
	double interval_s;     /* --watch */
	struct res_report res; /* locks held and awaited, deadlocks (resources.h) */
};

/*
 * Mark the tasks to show (patterns: globs over frame names, none = all; a boxed dyn
 * Future that is a frame of another task, or a node of its tree, is not a task of its
 * own), then group them.
 * 0 or -ENOMEM.
 */
/* Mark the boxed futures that are frames of another task (inner). 0 or -ENOMEM. */
int stk_snapshot__find_inner(struct stk_snapshot *s);
int stk_snapshot__group(struct stk_snapshot *s, const struct model *m, char **patterns,
			int nr_patterns);
/* --watch: carry over from prev how long each task's stack has not changed. */
void stk_snapshot__compare(struct stk_snapshot *s, const struct stk_snapshot *prev,
			   double elapsed_s);
void stk_snapshot__free(struct stk_snapshot *s);

/* The grouped text view. color: ANSI emphasis (a terminal). */
void stk_report__text(FILE *out, const struct stk_snapshot *s, const struct model *m, bool color);
/* The JSON document (asyncbpf-stacks/1), NULL on ENOMEM; free with cJSON_free. */
char *stk_report__json(const struct stk_snapshot *s, const struct model *m);
/* One line per distinct stack: frames outermost first, ';'-separated, then the count. */
int stk_report__folded(FILE *out, const struct stk_snapshot *s, const struct model *m);

#endif
