// SPDX-License-Identifier: GPL-2.0
/*
 * Perfetto native trace writer. Debian ships no Perfetto library, so the protobuf is
 * encoded here (protobuf.h: varints, fixed64, length-delimited). Each field number is
 * written where it is used, with its message and field from Perfetto's protos/perfetto/trace/
 * (trace.proto, trace_packet.proto, clock_snapshot.proto, interned_data/,
 * track_event/: track_event, track_descriptor, process_descriptor, thread_descriptor,
 * debug_annotation). Layout and semantics: docs/trace-formats.md.
 *
 * Polls complete innermost first: a parent arrives after its children. A thread's
 * polls are held until its outermost one (depth 0) completes, then written sorted by
 * start (shallower first on ties), each END before the next BEGIN not nested in it:
 * within a group the packets nest in file order and timestamps never decrease, so
 * equal timestamps cannot mis-nest however a reader orders ties.
 */
#include "export/perfetto.h"
#include "export/protobuf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/hashmap.h"

/* TracePacket.SequenceFlags, BuiltinClock (common/builtin_clock.proto), TrackEvent.Type */
#define SEQ_INCREMENTAL_STATE_CLEARED 1
#define SEQ_NEEDS_INCREMENTAL_STATE   2
#define BUILTIN_CLOCK_MONOTONIC	      3
#define BUILTIN_CLOCK_BOOTTIME	      6
#define TYPE_SLICE_BEGIN	      1
#define TYPE_SLICE_END		      2
#define TYPE_INSTANT		      3
/* debug_annotation.proto: DebugAnnotation value fields */
#define ANNOTATION_UINT	   3 /* uint_value */
#define ANNOTATION_STRING  6 /* string_value */
#define ANNOTATION_POINTER 7 /* pointer_value: shown in hex */

#define SEQUENCE_ID  1 /* TracePacket.trusted_packet_sequence_id: ours; 0 is invalid */
#define NAME_MAX_LEN 1024

/* DebugAnnotationName iid = position + 1, all interned by the first packet */
static const char *const annotation_names[] = {
    "future",	    "result",	       "await",		"self",	       "task",
    "state_before", "state_after",     "depth",		"polls",       "dropped",
    "truncated",    "probes_attached", "probes_failed", "duration_ns",
};
enum annotation {
	ANN_FUTURE = 1,
	ANN_RESULT,
	ANN_AWAIT,
	ANN_SELF,
	ANN_TASK,
	ANN_STATE_BEFORE,
	ANN_STATE_AFTER,
	ANN_DEPTH,
	ANN_POLLS,
	ANN_DROPPED,
	ANN_TRUNCATED,
	ANN_PROBES_ATTACHED,
	ANN_PROBES_FAILED,
	ANN_DURATION_NS,
};

/* ---- the writer ---- */

struct pending_poll {
	struct trace_poll p;
	uint64_t arrival;    /* tie break: order of add_poll */
	uint64_t task_track; /* uuid */
	uint64_t flow_id;    /* 0: none */
	bool flow_terminates;
	uint64_t end; /* what is written: clamped only if the input is not nested */
};

struct thread_state {
	uint32_t pid, tid;
	uint64_t uuid;
	struct pending_poll *pending;
	uint32_t nr_pending, cap_pending;
};

struct perfetto_writer {
	FILE *out;
	const struct model *m;
	uint32_t pid;
	int err; /* sticky: first failure */
	bool first_packet_written;
	struct pb pkt;	  /* the packet being built, reused */
	struct pb outbuf; /* finished packets, written out in 256 KiB pieces */

	/* interned event names: 0 until emitted */
	uint64_t *future_name_iid; /* by model future index */
	uint64_t *poll_name_iid;   /* by model poll index, for unknown futures */
	uint64_t unknown_name_iid, next_name_iid;

	struct u64_map thread_index; /* (pid, tid) -> index + 1 into threads */
	struct thread_state *threads;
	uint32_t nr_threads, cap_threads;
	struct u64_map tasks; /* task key -> track uuid; 0 once the task finished */
	uint64_t live_tasks, task_serial;
	struct u64_map flows; /* instance key -> open flow id; 0 when none */
	uint64_t live_flows, next_flow_id;

	struct pending_poll **stack; /* scratch for writing a group */
	uint32_t cap_stack;
	uint64_t arrivals, max_ts;
	char name[NAME_MAX_LEN];
};

static void set_error(struct perfetto_writer *w, int err)
{
	if (!w->err)
		w->err = err;
}

/* splitmix64's finalizer: track uuids and map keys from small tuples */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t hash4(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	uint64_t h = mix64(mix64(mix64(mix64(a) ^ b) ^ c) ^ d);

	/* 0 is the implicit global track (and "none" in the maps); UINT64_MAX is no map key */
	return h == 0 || h == UINT64_MAX ? h ^ 0x5a5a : h;
}

enum hash_domain { UUID_PROCESS = 1, UUID_THREAD, UUID_TASK, KEY_TASK, KEY_FLOW };

static uint64_t process_uuid(uint32_t pid)
{
	return hash4(UUID_PROCESS, pid, 0, 0);
}

/* trace_packet.proto: TracePacket */
static void packet_begin(struct perfetto_writer *w, bool needs_incremental_state)
{
	uint32_t flags = needs_incremental_state ? SEQ_NEEDS_INCREMENTAL_STATE : 0;

	pb__reset(&w->pkt);
	pb__uint(&w->pkt, 10, SEQUENCE_ID); /* trusted_packet_sequence_id */
	if (!w->first_packet_written) {
		/* nothing on this sequence refers to state from before this packet */
		pb__uint(&w->pkt, 87, 1); /* first_packet_on_sequence */
		flags |= SEQ_INCREMENTAL_STATE_CLEARED;
		w->first_packet_written = true;
	}
	if (flags)
		pb__uint(&w->pkt, 13, flags); /* sequence_flags */
}

static void packet_timestamp(struct perfetto_writer *w, uint64_t ts)
{
	pb__uint(&w->pkt, 8, ts);			/* timestamp */
	pb__uint(&w->pkt, 58, BUILTIN_CLOCK_MONOTONIC); /* timestamp_clock_id */
}

static void flush_out(struct perfetto_writer *w)
{
	int r = pb__flush(&w->outbuf, w->out);

	if (r)
		set_error(w, r);
}

/* Writes the packet as one `Trace.packet` (trace.proto: field 1). */
static void packet_end(struct perfetto_writer *w)
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
			flush_out(w);
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

/* The first packet: the clock snapshot, and every debug annotation name interned. */
static void write_first_packet(struct perfetto_writer *w)
{
	struct pb *b = &w->pkt;

	packet_begin(w, false);
	perfetto__clock_snapshot(b);
	pb__begin(b, 12); /* TracePacket.interned_data; interned_data.proto: InternedData */
	for (size_t i = 0; i < sizeof(annotation_names) / sizeof(annotation_names[0]); i++) {
		pb__begin(b, 3);       /* debug_annotation_names: DebugAnnotationName */
		pb__uint(b, 1, i + 1); /* iid */
		pb__string(b, 2, annotation_names[i]); /* name */
		pb__end(b);
	}
	pb__end(b);
	packet_end(w);
}

/*
 * TracePacket.track_descriptor (60); track_descriptor.proto: TrackDescriptor.
 * descriptor: 3 (process: ProcessDescriptor), 4 (thread: ThreadDescriptor) or 0 for
 * a track known by its name only.
 */
static void declare_track(struct perfetto_writer *w, uint64_t uuid, uint64_t parent,
			  uint32_t descriptor, uint32_t pid, uint32_t tid, const char *name)
{
	struct pb *b = &w->pkt;

	packet_begin(w, false);
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
	packet_end(w);
}

/* The thread's state, its track declared (with name, when given) before first use. */
static struct thread_state *get_thread(struct perfetto_writer *w, uint32_t pid, uint32_t tid,
				       const char *name)
{
	uint64_t key = (uint64_t)pid << 32 | tid, index;
	struct thread_state *t;

	if (u64_map__get(&w->thread_index, key, &index)) {
		t = &w->threads[index - 1];
		if (name) /* re-declared: the reader takes the name */
			declare_track(w, t->uuid, process_uuid(pid), 4, pid, tid, name);
		return t;
	}
	if (w->nr_threads == w->cap_threads) {
		uint32_t cap = w->cap_threads ? w->cap_threads * 2 : 16;
		struct thread_state *n = realloc(w->threads, cap * sizeof(*n));
		if (!n)
			return NULL;
		w->threads = n;
		w->cap_threads = cap;
	}
	if (u64_map__set(&w->thread_index, key, w->nr_threads + 1))
		return NULL;
	t = &w->threads[w->nr_threads++];
	*t = (struct thread_state){.pid = pid, .tid = tid, .uuid = hash4(UUID_THREAD, pid, tid, 0)};
	if (pid != w->pid) /* another process (a fork): its track, again for each thread */
		declare_track(w, process_uuid(pid), 0, 3, pid, 0, NULL);
	declare_track(w, t->uuid, process_uuid(pid), 4, pid, tid, name);
	return t;
}

static const struct future *future_of(const struct perfetto_writer *w, uint32_t future)
{
	return future < w->m->nr_futures ? &w->m->futures[future] : NULL;
}

static const struct poll_fn *poll_of(const struct perfetto_writer *w, uint32_t poll)
{
	return poll < w->m->nr_polls ? &w->m->polls[poll] : NULL;
}

/* Display name of the future, else the poll fn's name, into w->name. */
static const char *event_name(struct perfetto_writer *w, uint32_t future, uint32_t poll)
{
	const struct future *f = future_of(w, future);
	const struct poll_fn *pf = poll_of(w, poll);

	if (f)
		future__display_name(f, w->name, sizeof(w->name));
	else if (pf && pf->name)
		snprintf(w->name, sizeof(w->name), "%s", pf->name);
	else if (pf)
		snprintf(w->name, sizeof(w->name), "poll#%" PRIu32, poll);
	else
		snprintf(w->name, sizeof(w->name), "(unknown poll)");
	return w->name;
}

/* Drops dead entries (value 0) once they outnumber live ones: memory follows live state. */
static void map_compact(struct perfetto_writer *w, struct u64_map *m, uint64_t live)
{
	struct u64_map fresh;

	if (m->nr_used < 1024 || m->nr_used < 4 * live)
		return;
	u64_map__init(&fresh);
	for (size_t i = 0; i < m->nr_slots; i++) {
		if (m->keys[i] && m->values[i] &&
		    u64_map__set(&fresh, m->keys[i] - 1, m->values[i])) {
			u64_map__free(&fresh);
			set_error(w, -ENOMEM);
			return;
		}
	}
	u64_map__free(m);
	*m = fresh;
}

/*
 * The task's track: a task is (pid, poll fn, self) of the outermost frame. Once its
 * outermost poll is Ready (or panicked, or unwound), a later task at the same address
 * gets a track of its own.
 */
static uint64_t task_track(struct perfetto_writer *w, const struct trace_poll *p, uint32_t pid)
{
	uint64_t task_self = p->task_self, uuid = 0;
	uint32_t task_poll = p->task_poll;

	if (p->depth == 0 && !task_self) {
		task_self = p->self;
		task_poll = p->poll;
	}
	uint64_t key = hash4(KEY_TASK, pid, task_poll, task_self);
	if (!u64_map__get(&w->tasks, key, &uuid) || !uuid) {
		const struct poll_fn *pf = poll_of(w, task_poll);
		char track_name[NAME_MAX_LEN + 32];

		event_name(w, pf ? (uint32_t)pf->future : TRACE_NO_INDEX, task_poll);
		snprintf(track_name, sizeof(track_name), "%s @ 0x%" PRIx64, w->name, task_self);
		uuid = hash4(UUID_TASK, pid, key, ++w->task_serial);
		declare_track(w, uuid, process_uuid(pid), 0, pid, 0, track_name);
		w->live_tasks++;
	}
	bool finished = p->depth == 0 && p->result != POLL_PENDING && p->result != POLL_UNKNOWN;
	if (u64_map__set(&w->tasks, key, finished ? 0 : uuid))
		set_error(w, -ENOMEM);
	if (finished) {
		w->live_tasks--;
		map_compact(w, &w->tasks, w->live_tasks);
	}
	return uuid;
}

/*
 * Flows link successive polls of one instance: the same self for the same future
 * (two out-of-line copies of one poll fn still poll the same future). The flow ends
 * on the poll that completes it; a future that is Ready at its first poll has none.
 */
static void assign_flow(struct perfetto_writer *w, struct pending_poll *pp, uint32_t pid)
{
	const struct trace_poll *p = &pp->p;
	bool known = future_of(w, p->future) != NULL;
	uint64_t key = hash4(KEY_FLOW, pid, known ? p->future : (1ULL << 32 | p->poll), p->self);
	uint64_t id = 0;
	bool done =
	    p->result == POLL_READY || p->result == POLL_PANICKED || p->result == POLL_TRUNCATED;

	u64_map__get(&w->flows, key, &id);
	if (!id && done)
		return;
	if (!id) {
		id = ++w->next_flow_id;
		w->live_flows++;
	}
	pp->flow_id = id;
	pp->flow_terminates = done;
	if (u64_map__set(&w->flows, key, done ? 0 : id))
		set_error(w, -ENOMEM);
	if (done) {
		w->live_flows--;
		map_compact(w, &w->flows, w->live_flows);
	}
}

/* TrackEvent.debug_annotations (4); debug_annotation.proto: DebugAnnotation */
static void annotation(struct pb *b, enum annotation a, uint32_t field, uint64_t value,
		       const char *string)
{
	pb__begin(b, 4);
	pb__uint(b, 1, a); /* name_iid */
	if (field == ANNOTATION_STRING)
		pb__string(b, field, string);
	else
		pb__uint(b, field, value);
	pb__end(b);
}

static void annotation_state(struct pb *b, enum annotation a, const struct future *f,
			     uint64_t discr)
{
	char text[160];

	snprintf(text, sizeof(text), "%" PRIu64, discr);
	for (uint32_t i = 0; i < f->nr_states; i++)
		if (f->states[i].discr == discr && f->states[i].name)
			snprintf(text, sizeof(text), "%.120s (%" PRIu64 ")", f->states[i].name,
				 discr);
	annotation(b, a, ANNOTATION_STRING, 0, text);
}

/* The iid of the poll's event name; *fresh is set when it must be interned now. */
static uint64_t name_iid(struct perfetto_writer *w, const struct trace_poll *p, bool *fresh)
{
	uint64_t *slot = future_of(w, p->future) ? &w->future_name_iid[p->future]
			 : poll_of(w, p->poll)	 ? &w->poll_name_iid[p->poll]
						 : &w->unknown_name_iid;

	*fresh = !*slot;
	if (!*slot)
		*slot = ++w->next_name_iid;
	return *slot;
}

/* A slice's BEGIN: TracePacket.track_event (11); track_event.proto: TrackEvent */
static void write_begin(struct perfetto_writer *w, const struct pending_poll *pp, uint64_t track,
			bool with_flow)
{
	const struct trace_poll *p = &pp->p;
	const struct future *f = future_of(w, p->future);
	const struct poll_fn *pf = poll_of(w, p->poll);
	struct pb *b = &w->pkt;
	char text[NAME_MAX_LEN];
	bool fresh;
	uint64_t iid = name_iid(w, p, &fresh);

	packet_begin(w, true);
	packet_timestamp(w, p->start_ns);
	if (fresh) {
		pb__begin(b, 12);    /* TracePacket.interned_data: InternedData */
		pb__begin(b, 2);     /* event_names: EventName (track_event.proto) */
		pb__uint(b, 1, iid); /* iid */
		pb__string(b, 2, event_name(w, p->future, p->poll)); /* name */
		pb__end(b);
		pb__end(b);
	}
	pb__begin(b, 11);
	pb__uint(b, 9, TYPE_SLICE_BEGIN); /* type */
	pb__uint(b, 11, track);		  /* track_uuid */
	pb__uint(b, 10, iid);		  /* name_iid */
	if (with_flow && pp->flow_id)	  /* terminating_flow_ids, flow_ids: repeated fixed64 */
		pb__fixed64(b, pp->flow_terminates ? 48 : 47, pp->flow_id);
	annotation(b, ANN_FUTURE, ANNOTATION_STRING, 0,
		   f && f->path	    ? f->path
		   : pf && pf->name ? pf->name
				    : "(unknown)");
	annotation(b, ANN_RESULT, ANNOTATION_STRING, 0, poll_result__name(p->result));
	for (uint32_t i = 0; p->result == POLL_PENDING && f && i < f->nr_states; i++) {
		const struct future_state *s = &f->states[i];
		if (s->kind != STATE_SUSPEND || p->await_index < 0 ||
		    s->suspend_index != (uint32_t)p->await_index)
			continue;
		snprintf(text, sizeof(text), "%s:%" PRIu32, s->file ? s->file : "?", s->line);
		annotation(b, ANN_AWAIT, ANNOTATION_STRING, 0, text);
		break;
	}
	annotation(b, ANN_SELF, ANNOTATION_POINTER, p->self, NULL);
	annotation(b, ANN_TASK, ANNOTATION_POINTER, p->task_self ? p->task_self : p->self, NULL);
	if (f && f->has_state) {
		annotation_state(b, ANN_STATE_BEFORE, f, p->state_before);
		annotation_state(b, ANN_STATE_AFTER, f, p->state_after);
	}
	annotation(b, ANN_DEPTH, ANNOTATION_UINT, p->depth, NULL);
	pb__end(b);
	packet_end(w);
}

/* END of the slice on the thread's track and on the task's */
static void write_slice_end(struct perfetto_writer *w, const struct thread_state *t,
			    const struct pending_poll *pp)
{
	struct pb *b = &w->pkt;

	for (int i = 0; i < 2; i++) {
		packet_begin(w, false);
		packet_timestamp(w, pp->end);
		pb__begin(b, 11);			       /* TracePacket.track_event */
		pb__uint(b, 9, TYPE_SLICE_END);		       /* type */
		pb__uint(b, 11, i ? pp->task_track : t->uuid); /* track_uuid */
		pb__end(b);
		packet_end(w);
	}
	if (pp->end > w->max_ts)
		w->max_ts = pp->end;
}

static int compare_pending(const void *a, const void *b)
{
	const struct pending_poll *x = a, *y = b;

	if (x->p.start_ns != y->p.start_ns)
		return x->p.start_ns < y->p.start_ns ? -1 : 1;
	if (x->p.depth != y->p.depth)
		return x->p.depth < y->p.depth ? -1 : 1;
	return x->arrival < y->arrival ? -1 : x->arrival > y->arrival;
}

/*
 * Writes a thread's held polls as one group: sorted by start, shallower first on
 * ties, every slice closed before the next one that is not nested in it begins.
 * Input that is not properly nested (a child outliving its parent, overlapping
 * siblings) has its ends clamped so that the trace stays nested; real polls never
 * need it.
 */
static void flush_thread(struct perfetto_writer *w, struct thread_state *t)
{
	uint32_t n = t->nr_pending, depth = 0;

	if (n > w->cap_stack) {
		struct pending_poll **s = realloc(w->stack, n * sizeof(*s));
		if (!s) {
			set_error(w, -ENOMEM);
			t->nr_pending = 0;
			return;
		}
		w->stack = s;
		w->cap_stack = n;
	}
	if (n > 1)
		qsort(t->pending, n, sizeof(*t->pending), compare_pending);
	for (uint32_t i = 0; i < n; i++) {
		struct pending_poll *x = &t->pending[i];

		x->end = x->p.end_ns > x->p.start_ns ? x->p.end_ns : x->p.start_ns;
		while (depth) {
			struct pending_poll *top = w->stack[depth - 1];
			if (top->p.depth < x->p.depth && top->end > x->p.start_ns)
				break; /* x nests in top */
			if (top->end > x->p.start_ns)
				top->end = x->p.start_ns;
			write_slice_end(w, t, top);
			depth--;
		}
		if (depth && x->end > w->stack[depth - 1]->end)
			x->end = w->stack[depth - 1]->end;
		write_begin(w, x, t->uuid, true);
		write_begin(w, x, x->task_track, false);
		w->stack[depth++] = x;
	}
	while (depth)
		write_slice_end(w, t, w->stack[--depth]);
	t->nr_pending = 0;
}

struct perfetto_writer *perfetto_writer__new(FILE *out, const struct model *m, uint32_t pid,
					     const char *process_name)
{
	struct perfetto_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->out = out;
	w->m = m;
	w->pid = pid;
	u64_map__init(&w->thread_index);
	u64_map__init(&w->tasks);
	u64_map__init(&w->flows);
	w->future_name_iid = calloc(m->nr_futures + 1, sizeof(*w->future_name_iid));
	w->poll_name_iid = calloc(m->nr_polls + 1, sizeof(*w->poll_name_iid));
	if (w->future_name_iid && w->poll_name_iid) {
		write_first_packet(w);
		declare_track(w, process_uuid(pid), 0, 3, pid, 0, process_name);
	}
	if (!w->future_name_iid || !w->poll_name_iid || w->err == -ENOMEM) {
		perfetto_writer__free(w);
		return NULL;
	}
	return w;
}

int perfetto_writer__add_thread(struct perfetto_writer *w, uint32_t tid, const char *name)
{
	if (!w->err && !get_thread(w, w->pid, tid, name))
		set_error(w, -ENOMEM);
	return w->err;
}

int perfetto_writer__add_poll(struct perfetto_writer *w, const struct trace_poll *p)
{
	uint32_t pid = p->pid ? p->pid : w->pid;
	struct thread_state *t;
	struct pending_poll *pp;

	if (w->err)
		return w->err;
	t = get_thread(w, pid, p->tid, NULL);
	if (t && t->nr_pending == t->cap_pending) {
		uint32_t cap = t->cap_pending ? t->cap_pending * 2 : 16;
		pp = realloc(t->pending, cap * sizeof(*pp));
		if (pp) {
			t->pending = pp;
			t->cap_pending = cap;
		}
	}
	if (!t || t->nr_pending == t->cap_pending) {
		set_error(w, -ENOMEM);
		return w->err;
	}
	pp = &t->pending[t->nr_pending++];
	*pp = (struct pending_poll){.p = *p, .arrival = w->arrivals++};
	pp->task_track = task_track(w, p, pid);
	assign_flow(w, pp, pid);
	if (p->depth == 0 || t->nr_pending >= PERFETTO_MAX_PENDING_POLLS)
		flush_thread(w, t);
	return w->err;
}

int perfetto_writer__finish(struct perfetto_writer *w, const struct trace_totals *t)
{
	static const struct trace_totals none;
	struct pb *b = &w->pkt;
	char name[96];

	if (!t)
		t = &none;
	for (uint32_t i = 0; i < w->nr_threads; i++)
		flush_thread(w, &w->threads[i]);

	if (t->dropped)
		snprintf(name, sizeof(name), "asyncbpf: %" PRIu64 " records DROPPED", t->dropped);
	else
		snprintf(name, sizeof(name), "asyncbpf totals");
	packet_begin(w, true);
	packet_timestamp(w, w->max_ts);
	pb__begin(b, 11);		       /* TracePacket.track_event: TrackEvent */
	pb__uint(b, 9, TYPE_INSTANT);	       /* type */
	pb__uint(b, 11, process_uuid(w->pid)); /* track_uuid */
	pb__string(b, 23, name);	       /* name */
	annotation(b, ANN_POLLS, ANNOTATION_UINT, t->polls, NULL);
	annotation(b, ANN_DROPPED, ANNOTATION_UINT, t->dropped, NULL);
	annotation(b, ANN_TRUNCATED, ANNOTATION_UINT, t->truncated, NULL);
	annotation(b, ANN_PROBES_ATTACHED, ANNOTATION_UINT, t->probes_attached, NULL);
	annotation(b, ANN_PROBES_FAILED, ANNOTATION_UINT, t->probes_failed, NULL);
	annotation(b, ANN_DURATION_NS, ANNOTATION_UINT, t->duration_ns, NULL);
	pb__end(b);
	packet_end(w);

	flush_out(w);
	if (fflush(w->out) || ferror(w->out))
		set_error(w, -EIO);
	return w->err;
}

void perfetto_writer__free(struct perfetto_writer *w)
{
	if (!w)
		return;
	for (uint32_t i = 0; i < w->nr_threads; i++)
		free(w->threads[i].pending);
	free(w->threads);
	free(w->stack);
	free(w->future_name_iid);
	free(w->poll_name_iid);
	pb__free(&w->pkt);
	pb__free(&w->outbuf);
	u64_map__free(&w->thread_index);
	u64_map__free(&w->tasks);
	u64_map__free(&w->flows);
	free(w);
}
