/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Two outputs of `asyncbpf trace` built from completed polls (docs/tracing.md):
 *
 * - folded stacks (--folded): `frame;frame;frame COUNT` per line, the format of
 *   flamegraph.pl, inferno and speedscope. A poll's stack is its task's future down
 *   to its own future (the records' parent chain); COUNT is the stack's self busy
 *   time (duration minus its direct children's durations) in microseconds, rounded;
 *   stacks that round to 0 are omitted.
 * - the dynamic await graph (--dot): one node per future seen, one edge per
 *   (awaiter future, awaited future) pair seen, with counts.
 *
 * Pure code: fed with struct trace_poll and a model, unit-tested without BPF.
 */
#ifndef ASYNCBPF_TRACE_OUTPUTS_H
#define ASYNCBPF_TRACE_OUTPUTS_H

#include <stdint.h>
#include <stdio.h>

#include "model/model.h"
#include "model/trace_event.h"

/* Completed polls of one thread waiting for their depth-0 poll: beyond this, dropped. */
#define TRACE_FOLDED_MAX_PENDING 4096

struct trace_folded;

struct trace_folded *trace_folded__new(const struct model *m);
/*
 * One completed poll. Records of a thread arrive innermost first; they are kept
 * until that thread's depth-0 poll completes, then added to the stacks.
 * 0 or -ENOMEM (the poll is counted as dropped).
 */
int trace_folded__add(struct trace_folded *f, const struct trace_poll *p);
/* An off-CPU interval inside a poll: a [blocked:SYSCALL] (or [preempted]) leaf under
 * it, its time taken out of the poll's own. */
int trace_folded__add_block(struct trace_folded *f, const struct trace_block *b);
/* Polls not counted: over the per-thread cap, or out of memory. */
uint64_t trace_folded__dropped(const struct trace_folded *f);
/*
 * Write every stack. Polls still waiting for their depth-0 poll (tracing stopped
 * inside it) are written under a "[incomplete]" root frame. 0 or -errno.
 */
int trace_folded__write(struct trace_folded *f, FILE *out);
void trace_folded__free(struct trace_folded *f);

struct trace_dot;

struct trace_dot *trace_dot__new(const struct model *m);
/* 0 or -ENOMEM. */
int trace_dot__add(struct trace_dot *d, const struct trace_poll *p);
/* Graphviz digraph, same escaping and style as `asyncbpf analyze --dot`. 0 or -errno. */
int trace_dot__write(struct trace_dot *d, FILE *out);
void trace_dot__free(struct trace_dot *d);

#endif
