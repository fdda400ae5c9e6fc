/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Chrome trace-event JSON writer (chrome://tracing, ui.perfetto.dev, speedscope):
 * {"traceEvents":[...], "displayTimeUnit":"ns", "otherData":{totals}}. One "X"
 * complete event per poll, "M" process/thread names, "s"/"f" flow pairs between
 * successive polls of one future instance. Streamed: memory follows the number of
 * threads and of futures that are between two polls, never the number of events.
 * See docs/trace-formats.md.
 */
#ifndef ASYNCBPF_CHROME_TRACE_H
#define ASYNCBPF_CHROME_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "model/model.h"
#include "model/trace_event.h"

struct chrome_trace;

/* m must outlive the writer; process_name may be NULL. Writes the header. NULL on ENOMEM. */
struct chrome_trace *chrome_trace__new(FILE *out, const struct model *m, uint32_t pid,
				       const char *process_name);
/* A thread_name metadata event. 0 or -errno. */
int chrome_trace__add_thread(struct chrome_trace *w, uint32_t tid, const char *name);
/* One completed poll, in the order the consumer completes them. 0 or -errno. */
int chrome_trace__add_poll(struct chrome_trace *w, const struct trace_poll *p);
/* An off-CPU interval inside a poll: a nested "blocked in SYSCALL" slice. */
int chrome_trace__add_block(struct chrome_trace *w, const struct trace_block *b);
/* A future dropped while suspended: an instant "cancelled at FILE:LINE". */
int chrome_trace__add_drop(struct chrome_trace *w, const struct trace_drop *d);
/* A wake that led to a task's poll: the arrow's start ("s"; the poll has its "f"). */
int chrome_trace__add_wake(struct chrome_trace *w, const struct trace_wake *k, uint64_t flow);
/*
 * The totals event, closes the array, writes displayTimeUnit and otherData, flushes.
 * Returns 0, or -ENOMEM when an earlier call lost data, or -EIO when a write failed.
 */
int chrome_trace__finish(struct chrome_trace *w, const struct trace_totals *t);
/* Frees the writer (NULL-safe); never closes out. */
void chrome_trace__free(struct chrome_trace *w);

#endif
