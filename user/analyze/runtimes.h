/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The walk's pass over the runtimes' task types (tokio 1.x, async-task 4.x): the
 * functions that know each task's future type, the runtimes' layout members, and
 * afterwards the vtables, found through the relocations that fill them. The result
 * is the model's task_types and runtimes (model.h); docs/stacks.md says how `stacks`
 * uses them.
 */
#ifndef ASYNCBPF_ANALYZE_RUNTIMES_H
#define ASYNCBPF_ANALYZE_RUNTIMES_H

#include "analyze/walk.h"

/* A concrete function at addr: tokio's raw::poll<T, S> or async-task's run? 0/-ENOMEM */
int runtimes__on_function(struct walk *w, Dwarf_Die *die, uint64_t addr, uint64_t size);
/* A named struct at path::name: a runtime type whose members or layout we need? */
int runtimes__on_struct(struct walk *w, Dwarf_Die *die, const char *path, const char *name);
/* The end of a compile unit: the futures of the functions it held (type paths). */
int runtimes__end_cu(struct walk *w);
/* After the walk: the model's task types, each with its vtable. 0 or -ENOMEM. */
int runtimes__link(struct walk *w);
/* Without DWARF: tokio's task types from its symbols and calls (runtimes.c). */
int runtimes__link_symbols(struct walk *w);
/* Did the DWARF walk find a runtime's task type function (tokio's raw::poll<T, S>,
 * async-task's RawTask<F, T, S>::run, with its future's type)? */
bool runtimes__found(const struct walk *w);
void runtimes__free(struct walk *w);

#endif
