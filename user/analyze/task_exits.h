/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Task polls' exits (docs/disasm.md, "Task polls"): where a runtime calls a task's
 * vtable poll function, and the continuation of each such call. The code that
 * makes the call is found in the DWARF: every copy, out of line or inlined, of
 * tokio's `runtime::task::raw::RawTask::poll` and async-task's `Runnable::run`
 * (the dispatchers); the call itself in their code, through the member offsets of
 * the runtime's own types (Header.vtable, the vtable's poll/run slot). Internal to
 * analyze/.
 */
#ifndef ASYNCBPF_ANALYZE_TASK_EXITS_H
#define ASYNCBPF_ANALYZE_TASK_EXITS_H

#include <elfutils/libdw.h>
#include <stdint.h>

#include "analyze/walk.h"

/* The walk's hooks: an out-of-line function, and an inlined copy of the function
 * whose abstract DIE is origin (not a poll fn). 0 or -ENOMEM. */
int task_exits__on_function(struct walk *w, Dwarf_Die *die, uint64_t addr, uint64_t size);
int task_exits__on_inlined(struct walk *w, Dwarf_Die *die, Dwarf_Die *origin);

/* After caller_exits__find (it needs w->calls): m->task_poll_exits and
 * m->task_polls. 0 or -ENOMEM. */
int task_exits__find(struct walk *w);
void task_exits__free(struct walk *w);

#endif
