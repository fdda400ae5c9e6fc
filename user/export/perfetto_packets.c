// SPDX-License-Identifier: GPL-2.0
/*
 * The Perfetto writer's packet level (perfetto_internal.h): TracePacket framing on a
 * sequence, timestamps (deltas on a thread's incremental clock or absolute), the
 * clock snapshot, track descriptors and poll slice names. Used one way by the
 * writer (perfetto.c) and its tracks (perfetto_tracks.c); protos are cited where
 * each field is written, as in perfetto.c.
 */
#include "export/perfetto_internal.h"
#include "export/poll_text.h"
#include "export/protobuf.h"

#include <errno.h>
#include <stdbool.h>
#include <time.h>

/*
 * trace_packet.proto: TracePacket on `sequence`. The sequence's first packet says so
 * and clears its incremental state; packets that use interned data, defaults or the
 * incremental clock say they need it.
 */
void perfetto__packet_begin(struct perfetto_writer *w, uint32_t sequence, bool first,
			    bool needs_incremental_state)
{
	uint32_t flags = needs_incremental_state ? SEQ_NEEDS_INCREMENTAL_STATE : 0;

	pb__reset(&w->pkt);
	pb__uint(&w->pkt, 10, sequence); /* trusted_packet_sequence_id */
	if (first) {
		pb__uint(&w->pkt, 87, 1); /* first_packet_on_sequence */
		flags |= SEQ_INCREMENTAL_STATE_CLEARED;
	}
	if (flags)
		pb__uint(&w->pkt, 13, flags); /* sequence_flags */
}

/* An absolute CLOCK_MONOTONIC timestamp (the global sequence, or a thread's late packet) */
void perfetto__timestamp_absolute(struct perfetto_writer *w, uint64_t ts)
{
	pb__uint(&w->pkt, 8, ts);			/* timestamp */
	pb__uint(&w->pkt, 58, BUILTIN_CLOCK_MONOTONIC); /* timestamp_clock_id */
}

/*
 * On a thread's sequence: the delta since its last packet on the incremental clock
 * (the sequence's default), or, for a time before that, an absolute timestamp on
 * CLOCK_MONOTONIC, which leaves the incremental clock where it was.
 */
void perfetto__timestamp(struct perfetto_writer *w, struct thread_state *t, uint64_t ts)
{
	if (ts >= t->clock) {
		pb__uint(&w->pkt, 8, ts - t->clock); /* timestamp, on CLOCK_INCREMENTAL */
		t->clock = ts;
	} else {
		perfetto__timestamp_absolute(w, ts);
	}
}

void perfetto__flush(struct perfetto_writer *w)
{
	size_t n = w->outbuf.len;
	int r = pb__flush(&w->outbuf, w->out);

	w->bytes += n;
	if (r)
		set_error(w, r);
}

/* Writes the packet as one `Trace.packet` (trace.proto: field 1). */
void perfetto__packet_end(struct perfetto_writer *w)
{
	uint8_t hdr[11] = {1 << 3 | PB_WIRE_LEN};
	size_t n = 1 + pb__varint_encode(w->pkt.len, hdr + 1);

	if (w->pkt.oom) {
		w->pkt.oom = false;
		set_error(w, -ENOMEM);
	} else {
		pb__bytes(&w->outbuf, hdr, n);
		pb__bytes(&w->outbuf, w->pkt.data, w->pkt.len);
		if (w->outbuf.len >= (256u << 10))
			perfetto__flush(w);
	}
}

static uint64_t ns_of(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000ULL + (uint64_t)t->tv_nsec;
}

/*
 * TracePacket.clock_snapshot (6); clock_snapshot.proto: ClockSnapshot. Makes
 * CLOCK_MONOTONIC (bpf_ktime_get_ns) the trace clock and relates it to BOOTTIME.
 */
void perfetto__clock_snapshot(struct pb *b)
{
	struct timespec mono1, boot, mono2;

	pb__begin(b, 6);
	/* BOOTTIME read between two MONOTONIC reads: the pair is off by half the gap */
	if (!clock_gettime(CLOCK_MONOTONIC, &mono1) && !clock_gettime(CLOCK_BOOTTIME, &boot) &&
	    !clock_gettime(CLOCK_MONOTONIC, &mono2)) {
		uint64_t m1 = ns_of(&mono1), m2 = ns_of(&mono2);
		uint64_t ids[2] = {BUILTIN_CLOCK_BOOTTIME, BUILTIN_CLOCK_MONOTONIC};
		uint64_t values[2] = {ns_of(&boot), m1 + (m2 - m1) / 2};
		for (int i = 0; i < 2; i++) {
			pb__begin(b, 1);	   /* clocks: ClockSnapshot.Clock */
			pb__uint(b, 1, ids[i]);	   /* clock_id */
			pb__uint(b, 2, values[i]); /* timestamp */
			pb__end(b);
		}
	}
	pb__uint(b, 2, BUILTIN_CLOCK_MONOTONIC); /* primary_trace_clock: times shown as given */
	pb__end(b);
}

/*
 * TracePacket.track_descriptor (60); track_descriptor.proto: TrackDescriptor.
 * descriptor: 3 (process: ProcessDescriptor), 4 (thread: ThreadDescriptor) or 0 for
 * a track known by its name only.
 */
void perfetto__declare_track(struct perfetto_writer *w, uint64_t uuid, uint64_t parent,
			     uint32_t descriptor, uint32_t pid, uint32_t tid, const char *name)
{
	struct pb *b = &w->pkt;

	perfetto__packet_begin(w, SEQUENCE_GLOBAL, false, false);
	pb__begin(b, 60);
	pb__uint(b, 1, uuid); /* uuid */
	if (parent)
		pb__uint(b, 5, parent); /* parent_uuid */
	if (descriptor) {
		pb__begin(b, descriptor);
		pb__uint(b, 1, pid); /* ProcessDescriptor.pid, ThreadDescriptor.pid */
		if (descriptor == 4)
			pb__uint(b, 2, tid); /* ThreadDescriptor.tid */
		if (name) /* ThreadDescriptor.thread_name, ProcessDescriptor.process_name */
			pb__string(b, descriptor == 4 ? 5 : 6, name);
		pb__end(b);
	} else {
		pb__string(b, 2, name); /* name */
	}
	pb__end(b);
	perfetto__packet_end(w);
}

/* The slice name of a poll (poll_text.h), into w->name. */
const char *perfetto__event_name(struct perfetto_writer *w, uint32_t future, uint32_t poll)
{
	return poll_text__name(w->m, future, poll, w->name, sizeof(w->name));
}
