/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Perfetto native trace writer (protobuf `Trace`, opened by ui.perfetto.dev and
 * trace_processor): one slice per completed poll on its thread's track and on its
 * task's track, flows between successive polls of the same future instance, and
 * the run's totals at the end. Encoded by hand (docs/trace-formats.md).
 *
 * Streaming with bounded memory: descriptors and interned names are written when
 * first needed; the polls of one thread are held back only until the outermost poll
 * they nest in completes (at most PERFETTO_MAX_PENDING_POLLS per thread), then
 * written as one properly nested group.
 */
#ifndef ASYNCBPF_PERFETTO_H
#define ASYNCBPF_PERFETTO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "model/model.h"
#include "model/trace_event.h"

/* Polls held per thread while waiting for the outermost one (then written early). */
#define PERFETTO_MAX_PENDING_POLLS 4096

struct perfetto_writer;

/*
 * m must outlive the writer (names are read from it); process_name may be NULL.
 * Writes the clock snapshot and the process track at once. NULL on ENOMEM.
 */
struct perfetto_writer *perfetto_writer__new(FILE *out, const struct model *m, uint32_t pid,
					     const char *process_name);
/*
 * Task tracks: one track per task (named "<future> @ 0x<address>") holding a copy of
 * its own polls, whichever thread ran them. Off: a flow links a task's polls instead
 * (cheaper: no copy). Set before the first poll.
 */
void perfetto_writer__set_task_tracks(struct perfetto_writer *w, bool on);
/*
 * Where the next file goes once one is full (the writer is done with the old FILE):
 * 0, or -errno to fail the writer.
 */
typedef int (*perfetto_next_file_fn)(void *ctx, FILE **out);
/*
 * Keep each file to about max_bytes (0: no limit; room is kept for the polls held
 * back and the totals). Once a file is full: with next_file NULL, later polls are
 * refused and counted (perfetto_writer__full() turns true, the totals say how many);
 * else the file ends with a "continued in the next file" instant and the writer
 * goes on in the FILE next_file gives, a complete trace of its own.
 */
void perfetto_writer__set_limit(struct perfetto_writer *w, uint64_t max_bytes,
				perfetto_next_file_fn next_file, void *ctx);
bool perfetto_writer__full(const struct perfetto_writer *w);
/* Polls refused because the file was full. */
uint64_t perfetto_writer__refused(const struct perfetto_writer *w);
/* Names a thread's track (declares it, or re-declares it with the name). 0 or -errno. */
int perfetto_writer__add_thread(struct perfetto_writer *w, uint32_t tid, const char *name);
/* One completed poll, in the order the consumer completes them. 0 or -errno. */
int perfetto_writer__add_poll(struct perfetto_writer *w, const struct trace_poll *p);
/* An off-CPU interval inside a poll: a "blocked in SYSCALL" slice nested in it. */
int perfetto_writer__add_block(struct perfetto_writer *w, const struct trace_block *b);
/* A future dropped while suspended: an instant "cancelled at FILE:LINE" on the thread. */
int perfetto_writer__add_drop(struct perfetto_writer *w, const struct trace_drop *d);
/* A wake that led to a task's poll: an instant with the arrow's start (the poll's
 * slice ends it: trace_poll.wake_flow). */
int perfetto_writer__add_wake(struct perfetto_writer *w, const struct trace_wake *k, uint64_t flow);
/*
 * Writes the polls still held back and the totals event, flushes. Returns 0, or
 * -ENOMEM when an earlier call lost data, or -EIO when a write failed.
 */
int perfetto_writer__finish(struct perfetto_writer *w, const struct trace_totals *t);
/* Frees the writer (NULL-safe); never closes out. */
void perfetto_writer__free(struct perfetto_writer *w);

struct pb;
/*
 * Appends a TracePacket.clock_snapshot that makes CLOCK_MONOTONIC the trace's clock
 * (times shown as recorded) and relates it to BOOTTIME; for every Perfetto writer's
 * first packet.
 */
void perfetto__clock_snapshot(struct pb *b);

#endif
