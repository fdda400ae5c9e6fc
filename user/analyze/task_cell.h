/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A tokio task's `Cell<T, S>` read from its DWARF type tree (task_cell.c): when the
 * future T is there, and how a poll that ended it ended it. Internal to analyze/.
 */
#ifndef ASYNCBPF_ANALYZE_TASK_CELL_H
#define ASYNCBPF_ANALYZE_TASK_CELL_H

#include "analyze/walk.h"
#include "model/model.h"

/* The conditions under which a tokio task's future is there (task_type.live_conds),
 * and those that say how it went (finished_conds, cancelled_conds; nr 0: not found),
 * each relative to T's address. */
struct task_live {
	uint8_t nr;
	bool cut;
	struct task_live_cond conds[MODEL_TREE_CONDS];
	uint8_t nr_finished, nr_cancelled;
	struct task_live_cond finished[MODEL_TREE_CONDS], cancelled[MODEL_TREE_CONDS];
};

/*
 * The conditions of `cell` (a `Cell<T, S>`) for its future `t` into *out: 1, or 0 when
 * T is not found in it (or lies behind a pointer), or -ENOMEM.
 */
int task_cell__read(struct walk *w, Dwarf_Die *cell, Dwarf_Die *t, struct task_live *out);

#endif
