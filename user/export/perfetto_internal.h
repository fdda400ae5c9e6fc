/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Perfetto trace writer's private state, shared by perfetto.c (sequences,
 * interning, slices, file limits), perfetto_tracks.c (thread and task tracks, flows)
 * and perfetto_packets.c (packet framing, timestamps, descriptors), used in that
 * order, one way. Not an interface: only user/export/perfetto*.c include it.
 */
#ifndef ASYNCBPF_PERFETTO_INTERNAL_H
#define ASYNCBPF_PERFETTO_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "export/perfetto.h"
#include "export/protobuf.h"
#include "lib/hashmap.h"
#include "lib/text_table.h"

#define NAME_MAX_LEN 1024
/* TracePacket.SequenceFlags, BuiltinClock (common/builtin_clock.proto), TrackEvent.Type */
#define SEQ_INCREMENTAL_STATE_CLEARED 1
#define SEQ_NEEDS_INCREMENTAL_STATE   2
#define BUILTIN_CLOCK_MONOTONIC	      3
#define BUILTIN_CLOCK_BOOTTIME	      6
/* clock_snapshot.proto: ids 64-127 are sequence-scoped; ours counts in deltas */
#define CLOCK_INCREMENTAL 64
/*
 * TracePacket.trusted_packet_sequence_id: 1 carries the descriptors and the totals;
 * each thread writes its polls on a sequence of its own (SEQUENCE_FIRST_THREAD + its
 * index), whose timestamps are deltas on an incremental clock and whose packets
 * default to the thread's track (0 is invalid).
 */
#define SEQUENCE_GLOBAL	      1
#define SEQUENCE_FIRST_THREAD 2

struct pending_poll {
	struct trace_poll p;
	uint64_t arrival;    /* tie break: order of add_poll */
	uint64_t task_track; /* uuid */
	uint64_t flow_id;    /* 0: none */
	bool flow_terminates;
	uint64_t end;	     /* what is written: clamped only if the input is not nested */
	bool block;	     /* an off-CPU interval (p: its times, tid, depth), not a poll */
	bool cancel;	     /* a cancellation instant (p.start_ns, p.future, p.await_index) */
	uint8_t offcpu_kind; /* block: enum offcpu_kind */
	int32_t syscall;
};

struct thread_state {
	uint32_t pid, tid;
	uint64_t uuid;
	uint32_t sequence;	 /* its trusted_packet_sequence_id */
	bool declared;		 /* its track is declared in the current file */
	char *name;		 /* its name, once given */
	bool sequence_started;	 /* its first packet (clock, defaults, names) is written */
	uint64_t clock;		 /* the incremental clock's value: the last delta's end */
	struct u64_map interned; /* hash of (intern_kind, a, b) -> iid */
	uint64_t next_name_iid, next_string_iid; /* per index, as Perfetto wants */
	struct pending_poll *pending;
	uint32_t nr_pending, cap_pending;
};

struct perfetto_writer {
	FILE *out;
	const struct model *m;
	uint32_t pid;
	int err; /* sticky: first failure */
	bool global_started;
	char *process_name; /* declared again in every file */

	/* --max-size: bytes per file; then stop (refuse polls) or go on in a next file */
	uint64_t bytes, limit, refused;
	uint64_t refused_events; /* off-CPU slices, instants refused (full): not polls */
	perfetto_next_file_fn next_file;
	void *next_ctx;
	bool full;
	bool task_tracks; /* a track per task, its own polls copied there */
	struct pb pkt;	  /* the packet being built, reused */
	struct pb outbuf; /* finished packets, written out in 256 KiB pieces */

	struct u64_map thread_index; /* (pid, tid) -> index + 1 into threads */
	struct thread_state *threads;
	uint32_t nr_threads, cap_threads;
	struct u64_map tasks; /* task key -> track uuid; 0 once the task finished */
	uint64_t live_tasks, task_serial;
	struct u64_map flows;	  /* instance key -> open flow id; 0 when none */
	struct text_table stacks; /* task mode's await chains, by their id */
	uint64_t live_flows, next_flow_id;

	struct pending_poll **stack; /* scratch for writing a group */
	uint32_t cap_stack;
	uint64_t arrivals, max_ts;
	char name[NAME_MAX_LEN];
};

static inline void set_error(struct perfetto_writer *w, int err)
{
	if (!w->err)
		w->err = err;
}

static inline uint64_t hash4(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	uint64_t h = hash__mix64(hash__mix64(hash__mix64(hash__mix64(a) ^ b) ^ c) ^ d);

	/* 0 is the implicit global track (and "none" in the maps); UINT64_MAX is no map key */
	return h == 0 || h == UINT64_MAX ? h ^ 0x5a5a : h;
}

enum hash_domain { KEY_TASK = 1, KEY_FLOW };

/*
 * Track uuids are small (every event on a task track names its uuid; varints): the
 * low two bits say what the rest counts, so they never collide.
 */
enum uuid_kind { UUID_PROCESS = 1, UUID_THREAD, UUID_TASK };

static inline uint64_t make_uuid(enum uuid_kind kind, uint64_t n)
{
	return n << 2 | kind;
}

static inline uint64_t process_uuid(uint32_t pid)
{
	return make_uuid(UUID_PROCESS, pid);
}

/* perfetto_packets.c */
/* Start w->pkt: a TracePacket on `sequence` (first: its first packet) */
void perfetto__packet_begin(struct perfetto_writer *w, uint32_t sequence, bool first,
			    bool needs_incremental_state);
/* An absolute CLOCK_MONOTONIC timestamp on the packet */
void perfetto__timestamp_absolute(struct perfetto_writer *w, uint64_t ts);
/* A delta on t's incremental clock, or absolute for a time before it */
void perfetto__timestamp(struct perfetto_writer *w, struct thread_state *t, uint64_t ts);
/* Append w->pkt to the output buffer (written out in 256 KiB pieces) */
void perfetto__packet_end(struct perfetto_writer *w);
/* Write the output buffer out now */
void perfetto__flush(struct perfetto_writer *w);
/* A TrackDescriptor packet (descriptor 3 process, 4 thread, 0 named) */
void perfetto__declare_track(struct perfetto_writer *w, uint64_t uuid, uint64_t parent,
			     uint32_t descriptor, uint32_t pid, uint32_t tid, const char *name);
/* The slice name of a poll, into w->name */
const char *perfetto__event_name(struct perfetto_writer *w, uint32_t future, uint32_t poll);

/* perfetto_tracks.c */
/* The thread's state, its track declared (again after a new file) before use; NULL: ENOMEM */
struct thread_state *perfetto__get_thread(struct perfetto_writer *w, uint32_t pid, uint32_t tid,
					  const char *name);
/* The task's track uuid (declared on first use), or 0 for a task done in one poll */
uint64_t perfetto__task_track(struct perfetto_writer *w, const struct trace_poll *p, uint32_t pid);
/* The flow linking a task's successive polls: pp->flow_id, flow_terminates */
void perfetto__assign_flow(struct perfetto_writer *w, struct pending_poll *pp, uint32_t pid);

#endif
