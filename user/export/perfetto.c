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
#include "export/perfetto_internal.h"
#include "export/poll_text.h"
#include "export/protobuf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/hashmap.h"
#include "lib/syscalls.h"

#define TYPE_SLICE_BEGIN 1
#define TYPE_SLICE_END	 2
#define TYPE_INSTANT	 3
/* wake-up flow ids: apart from the task flows' (perfetto__assign_flow) */
#define WAKE_FLOW_BASE (1ull << 62)
/* debug_annotation.proto: DebugAnnotation value fields */
#define ANNOTATION_UINT	      3	 /* uint_value */
#define ANNOTATION_STRING     6	 /* string_value */
#define ANNOTATION_POINTER    7	 /* pointer_value: shown in hex */
#define ANNOTATION_STRING_IID 17 /* string_value_iid: InternedData field 29 */

/* DebugAnnotationName iid = position + 1, interned by each sequence's first packet */
static const char *const annotation_names[] = {
    "result",	     "await",	    "self",	   "state",
    "polls",	     "dropped",	    "truncated",   "probes_attached",
    "probes_failed", "duration_ns", "not_written", "events_not_written",
    "await_stack",
};
enum annotation {
	ANN_RESULT = 1,
	ANN_AWAIT,
	ANN_SELF,
	ANN_STATE,
	ANN_POLLS,
	ANN_DROPPED,
	ANN_TRUNCATED,
	ANN_PROBES_ATTACHED,
	ANN_PROBES_FAILED,
	ANN_DURATION_NS,
	ANN_NOT_WRITTEN,
	ANN_EVENTS_NOT_WRITTEN,
	ANN_AWAIT_STACK,
};

/* What a thread sequence interns: event names and annotation string values */
enum intern_kind { INTERN_EVENT_NAME = 1, INTERN_RESULT, INTERN_AWAIT, INTERN_STATE, INTERN_STACK };

/* InternedData.debug_annotation_names: every one, in a sequence's first packet */
static void intern_annotation_names(struct pb *b)
{
	pb__begin(b, 12); /* TracePacket.interned_data; interned_data.proto: InternedData */
	for (size_t i = 0; i < sizeof(annotation_names) / sizeof(annotation_names[0]); i++) {
		pb__begin(b, 3);       /* debug_annotation_names: DebugAnnotationName */
		pb__uint(b, 1, i + 1); /* iid */
		pb__string(b, 2, annotation_names[i]); /* name */
		pb__end(b);
	}
	pb__end(b);
}

/* The global sequence's first packet: the clock snapshot, the annotation names. */
static void start_global_sequence(struct perfetto_writer *w)
{
	perfetto__packet_begin(w, SEQUENCE_GLOBAL, true, false);
	perfetto__clock_snapshot(&w->pkt);
	intern_annotation_names(&w->pkt);
	perfetto__packet_end(w);
	w->global_started = true;
}

/*
 * A thread sequence's first packet, written just before its first event at `ts`:
 * the incremental clock starting at ts (ClockSnapshot with CLOCK_MONOTONIC at the
 * same instant), TracePacketDefaults (that clock, the thread's track), the names.
 */
static void start_thread_sequence(struct perfetto_writer *w, struct thread_state *t, uint64_t ts)
{
	struct pb *b = &w->pkt;
	static const uint32_t ids[2] = {CLOCK_INCREMENTAL, BUILTIN_CLOCK_MONOTONIC};

	perfetto__packet_begin(w, t->sequence, true, false);
	pb__begin(b, 6); /* clock_snapshot: ClockSnapshot */
	for (int i = 0; i < 2; i++) {
		pb__begin(b, 1);	/* clocks: ClockSnapshot.Clock */
		pb__uint(b, 1, ids[i]); /* clock_id */
		pb__uint(b, 2, ts);	/* timestamp */
		if (ids[i] == CLOCK_INCREMENTAL)
			pb__uint(b, 3, 1); /* is_incremental */
		pb__end(b);
	}
	pb__end(b);
	pb__begin(b, 59);		    /* trace_packet_defaults: TracePacketDefaults */
	pb__uint(b, 58, CLOCK_INCREMENTAL); /* timestamp_clock_id */
	pb__begin(b, 11);		    /* track_event_defaults: TrackEventDefaults */
	pb__uint(b, 11, t->uuid);	    /* track_uuid */
	pb__end(b);
	pb__end(b);
	intern_annotation_names(b);
	perfetto__packet_end(w);
	t->sequence_started = true;
	t->clock = ts;
}

static const struct future *future_of(const struct perfetto_writer *w, uint32_t future)
{
	return future < w->m->nr_futures ? &w->m->futures[future] : NULL;
}

static const struct poll_fn *poll_of(const struct perfetto_writer *w, uint32_t poll)
{
	return poll < w->m->nr_polls ? &w->m->polls[poll] : NULL;
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

/*
 * The iid of an interned string on t's sequence, (kind, a, b) naming it; a new one is
 * added to the packet's InternedData (an event name or a debug annotation string
 * value), `text` called to spell it. 0 on ENOMEM.
 */
static uint64_t intern(struct perfetto_writer *w, struct thread_state *t, struct pb *pending,
		       enum intern_kind kind, uint64_t a, uint64_t b, uint64_t c,
		       const char *(*text)(struct perfetto_writer *, uint64_t, uint64_t, uint64_t))
{
	uint64_t key = hash4(kind, a, b, c), iid;
	bool name = kind == INTERN_EVENT_NAME;

	if (u64_map__get(&t->interned, key, &iid))
		return iid;
	iid = name ? ++t->next_name_iid : ++t->next_string_iid;
	if (u64_map__set(&t->interned, key, iid)) {
		set_error(w, -ENOMEM);
		return 0;
	}
	/* InternedData.event_names (2): EventName; .debug_annotation_string_values (29):
	 * InternedString {iid = 1, str = 2} */
	pb__begin(pending, name ? 2 : 29);
	pb__uint(pending, 1, iid);
	pb__string(pending, 2, text(w, a, b, c));
	pb__end(pending);
	return iid;
}

static const char *text_event_name(struct perfetto_writer *w, uint64_t future, uint64_t poll,
				   uint64_t unused)
{
	(void)unused;
	return perfetto__event_name(w, (uint32_t)future, (uint32_t)poll);
}

/* "blocked in clock_nanosleep", "blocked", "preempted", the tracer's (code: syscall +
 * 3, 1, 0, 2) */
static const char *text_block(struct perfetto_writer *w, uint64_t unused, uint64_t code,
			      uint64_t unused2)
{
	(void)unused, (void)unused2;
	if (code == 0)
		return "preempted";
	if (code == 1)
		return "blocked";
	if (code == 2)
		return "in asyncbpf's probe (the tracer's cost)";
	snprintf(w->name, sizeof(w->name), "blocked in %s", syscall__name((int)code - 3));
	return w->name;
}

/*
 * A thread sequence's packet up to its track_event: the sequence started if need be,
 * the timestamp, and the names interned for it (taken from interned, then freed).
 */
static void event_packet_begin(struct perfetto_writer *w, struct thread_state *t, uint64_t ts,
			       struct pb *interned)
{
	struct pb *b = &w->pkt;

	perfetto__packet_begin(w, t->sequence, false, true);
	perfetto__timestamp(w, t, ts);
	if (interned->len) {
		pb__begin(b, 12); /* TracePacket.interned_data: InternedData */
		pb__bytes(b, interned->data, interned->len);
		pb__end(b);
	}
	if (interned->oom)
		set_error(w, -ENOMEM);
	pb__free(interned);
}

/*
 * An event with nothing but a name (interned under the key a, b, c, its text from
 * text()): a slice's BEGIN or an instant, on the thread's track; flow != 0 starts
 * a flow there (TrackEvent.flow_ids).
 */
static void write_named_event(struct perfetto_writer *w, struct thread_state *t, uint64_t ts,
			      uint64_t type, uint64_t a, uint64_t b, uint64_t c,
			      const char *(*text)(struct perfetto_writer *, uint64_t, uint64_t,
						  uint64_t),
			      uint64_t flow)
{
	struct pb interned = {0};
	uint64_t name;

	if (!t->sequence_started)
		start_thread_sequence(w, t, ts);
	name = intern(w, t, &interned, INTERN_EVENT_NAME, a, b, c, text);
	event_packet_begin(w, t, ts, &interned);
	pb__begin(&w->pkt, 11);	     /* TracePacket.track_event: TrackEvent */
	pb__uint(&w->pkt, 9, type);  /* type */
	pb__uint(&w->pkt, 10, name); /* name_iid */
	if (flow)
		pb__fixed64(&w->pkt, 47, flow); /* flow_ids */
	pb__end(&w->pkt);
	perfetto__packet_end(w);
}

static void write_block_begin(struct perfetto_writer *w, struct thread_state *t,
			      const struct pending_poll *pp)
{
	uint64_t code = pp->offcpu_kind == OFFCPU_PREEMPTED ? 0
			: pp->offcpu_kind == OFFCPU_TRACER  ? 2
			: pp->syscall < 0		    ? 1
							    : (uint64_t)pp->syscall + 3;

	write_named_event(w, t, pp->p.start_ns, TYPE_SLICE_BEGIN, UINT64_MAX - 1, code, 1,
			  text_block, 0);
}

/* "cancelled at src/main.rs:42" */
static const char *text_cancel(struct perfetto_writer *w, uint64_t unused, uint64_t future,
			       uint64_t index)
{
	char at[400];

	(void)unused;
	if (!poll_text__await(w->m, (uint32_t)future, (int32_t)index, at, sizeof(at)))
		snprintf(at, sizeof(at), "await %d", (int)index);
	snprintf(w->name, sizeof(w->name), "cancelled at %s", at);
	return w->name;
}

static void write_cancel(struct perfetto_writer *w, struct thread_state *t,
			 const struct pending_poll *pp)
{
	write_named_event(w, t, pp->p.start_ns, TYPE_INSTANT, UINT64_MAX - 2, pp->p.future,
			  (uint64_t)(uint32_t)pp->p.await_index, text_cancel, 0);
}

static const char *text_result(struct perfetto_writer *w, uint64_t result, uint64_t unused,
			       uint64_t unused2)
{
	(void)w, (void)unused, (void)unused2;
	return poll_result__name((enum poll_result)result);
}

static const char *text_await(struct perfetto_writer *w, uint64_t future, uint64_t index,
			      uint64_t unused)
{
	(void)unused;
	if (!poll_text__await(w->m, (uint32_t)future, (int32_t)index, w->name, sizeof(w->name)))
		snprintf(w->name, sizeof(w->name), "?");
	return w->name;
}

/* a task poll's await chain, kept by perfetto_writer__add_poll */
static const char *text_stack(struct perfetto_writer *w, uint64_t id, uint64_t unused,
			      uint64_t unused2)
{
	const char *text = text_table__get(&w->stacks, id);

	(void)unused, (void)unused2;
	return text ? text : "?";
}

/* "Suspend0 (3) -> Suspend1 (4)": where the poll resumed the state machine, where it left it */
static const char *text_state(struct perfetto_writer *w, uint64_t future, uint64_t before,
			      uint64_t after)
{
	const struct future *f = future_of(w, (uint32_t)future);
	size_t n = poll_text__state(f, before, w->name, sizeof(w->name));

	n += (size_t)snprintf(w->name + n, sizeof(w->name) - n, " -> ");
	if (n < sizeof(w->name))
		poll_text__state(f, after, w->name + n, sizeof(w->name) - n);
	return w->name;
}

/*
 * A slice's BEGIN: TracePacket.track_event (11); track_event.proto: TrackEvent. On
 * the thread's track (the sequence's default) with the poll's annotations and flow;
 * on the task's track (task_track != 0) a bare copy: name and time.
 */
static void write_begin(struct perfetto_writer *w, struct thread_state *t,
			const struct pending_poll *pp, uint64_t task_track)
{
	const struct trace_poll *p = &pp->p;
	const struct future *f = future_of(w, p->future);
	uint64_t key_future = f ? p->future : TRACE_NO_INDEX;
	uint64_t key_poll = f ? 0 : (poll_of(w, p->poll) ? p->poll : TRACE_NO_INDEX);
	struct pb *b = &w->pkt, interned = {0};
	uint64_t name, result = 0, await = 0, state = 0, stack = 0;

	if (!t->sequence_started)
		start_thread_sequence(w, t, p->start_ns);
	name = intern(w, t, &interned, INTERN_EVENT_NAME, key_future, key_poll, 0, text_event_name);
	if (!task_track) {
		result = intern(w, t, &interned, INTERN_RESULT, p->result, 0, 0, text_result);
		if (p->result == POLL_PENDING &&
		    poll_text__await(w->m, p->future, p->await_index, NULL, 0))
			await = intern(w, t, &interned, INTERN_AWAIT, p->future,
				       (uint32_t)p->await_index, 0, text_await);
		if (f && f->has_state && !p->task_mode) /* task mode measures no state */
			state = intern(w, t, &interned, INTERN_STATE, p->future, p->state_before,
				       p->state_after, text_state);
		if (p->await_stack_id)
			stack = intern(w, t, &interned, INTERN_STACK, p->await_stack_id, 0, 0,
				       text_stack);
	}
	event_packet_begin(w, t, p->start_ns, &interned);
	pb__begin(b, 11);
	pb__uint(b, 9, TYPE_SLICE_BEGIN); /* type */
	if (task_track)
		pb__uint(b, 11, task_track); /* track_uuid; else the thread's, by default */
	pb__uint(b, 10, name);		     /* name_iid */
	if (!task_track) {
		if (pp->flow_id) /* terminating_flow_ids, flow_ids: repeated fixed64 */
			pb__fixed64(b, pp->flow_terminates ? 48 : 47, pp->flow_id);
		if (p->wake_flow) /* the end of a wake-up's arrow */
			pb__fixed64(b, 48, WAKE_FLOW_BASE + p->wake_flow);
		annotation(b, ANN_RESULT, ANNOTATION_STRING_IID, result, NULL);
		if (await)
			annotation(b, ANN_AWAIT, ANNOTATION_STRING_IID, await, NULL);
		annotation(b, ANN_SELF, ANNOTATION_POINTER, p->self, NULL);
		if (state)
			annotation(b, ANN_STATE, ANNOTATION_STRING_IID, state, NULL);
		if (stack)
			annotation(b, ANN_AWAIT_STACK, ANNOTATION_STRING_IID, stack, NULL);
	}
	pb__end(b);
	perfetto__packet_end(w);
}

/* END of the slice on the thread's track and on the task's */
static void write_slice_end(struct perfetto_writer *w, struct thread_state *t,
			    const struct pending_poll *pp)
{
	struct pb *b = &w->pkt;

	for (int i = 0; i < (pp->task_track ? 2 : 1); i++) {
		perfetto__packet_begin(w, t->sequence, false, true);
		perfetto__timestamp(w, t, pp->end);
		pb__begin(b, 11);		/* TracePacket.track_event */
		pb__uint(b, 9, TYPE_SLICE_END); /* type */
		if (i)
			pb__uint(b, 11, pp->task_track); /* track_uuid */
		pb__end(b);
		perfetto__packet_end(w);
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
		if (x->cancel) { /* an instant: nothing nests in it */
			write_cancel(w, t, x);
			continue;
		}
		if (x->block)
			write_block_begin(w, t, x);
		else
			write_begin(w, t, x, 0);
		if (x->task_track)
			write_begin(w, t, x, x->task_track);
		w->stack[depth++] = x;
	}
	while (depth)
		write_slice_end(w, t, w->stack[--depth]);
	t->nr_pending = 0;
}

/* What every file starts with: the global sequence, the process track. */
static void start_file(struct perfetto_writer *w)
{
	start_global_sequence(w);
	perfetto__declare_track(w, process_uuid(w->pid), 0, 3, w->pid, 0, w->process_name);
}

/* Room kept for the held polls and the totals written at the end. */
static uint64_t reserve(const struct perfetto_writer *w)
{
	return w->limit / 16 < (64u << 10) ? w->limit / 16 : (64u << 10);
}

static bool over_limit(const struct perfetto_writer *w)
{
	return w->limit && w->bytes + w->outbuf.len + reserve(w) >= w->limit;
}

/*
 * The current file is full: write what threads hold, mark the end, and go on in a
 * file of its own (a complete trace: every sequence, track and interned name starts
 * again; a task still running gets a new track there; flows do not cross files).
 */
static void rotate(struct perfetto_writer *w)
{
	struct pb *b = &w->pkt;
	FILE *next = NULL;
	int r;

	for (uint32_t i = 0; i < w->nr_threads; i++)
		flush_thread(w, &w->threads[i]);
	perfetto__packet_begin(w, SEQUENCE_GLOBAL, false, false);
	perfetto__timestamp_absolute(w, w->max_ts);
	pb__begin(b, 11);		       /* TracePacket.track_event: TrackEvent */
	pb__uint(b, 9, TYPE_INSTANT);	       /* type */
	pb__uint(b, 11, process_uuid(w->pid)); /* track_uuid */
	pb__string(b, 23, "asyncbpf: continued in the next file"); /* name */
	pb__end(b);
	perfetto__packet_end(w);
	perfetto__flush(w);
	if (fflush(w->out) || ferror(w->out))
		set_error(w, -EIO);
	if (w->err)
		return;
	if ((r = w->next_file(w->next_ctx, &next))) {
		set_error(w, r);
		return;
	}
	w->out = next;
	w->bytes = 0;
	for (uint32_t i = 0; i < w->nr_threads; i++) {
		struct thread_state *t = &w->threads[i];

		t->declared = t->sequence_started = false;
		t->next_name_iid = t->next_string_iid = 0;
		u64_map__clear(&t->interned);
	}
	u64_map__clear(&w->tasks);
	u64_map__clear(&w->flows);
	w->live_tasks = w->live_flows = 0;
	start_file(w);
}

void perfetto_writer__set_limit(struct perfetto_writer *w, uint64_t max_bytes,
				perfetto_next_file_fn next_file, void *ctx)
{
	w->limit = max_bytes;
	w->next_file = next_file;
	w->next_ctx = ctx;
}

void perfetto_writer__set_task_tracks(struct perfetto_writer *w, bool on)
{
	w->task_tracks = on;
}

bool perfetto_writer__full(const struct perfetto_writer *w)
{
	return w->full;
}

uint64_t perfetto_writer__refused(const struct perfetto_writer *w)
{
	return w->refused;
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
	text_table__init(&w->stacks);
	if (process_name && !(w->process_name = strdup(process_name))) {
		perfetto_writer__free(w);
		return NULL;
	}
	start_file(w);
	if (w->err == -ENOMEM) {
		perfetto_writer__free(w);
		return NULL;
	}
	return w;
}

int perfetto_writer__add_thread(struct perfetto_writer *w, uint32_t tid, const char *name)
{
	if (!w->err && !perfetto__get_thread(w, w->pid, tid, name))
		set_error(w, -ENOMEM);
	return w->err;
}

/*
 * One more entry held for a thread (zeroed but its arrival), its thread in *tp;
 * NULL (error set) when out of memory.
 */
static struct pending_poll *hold(struct perfetto_writer *w, uint32_t pid, uint32_t tid,
				 struct thread_state **tp)
{
	struct thread_state *t = perfetto__get_thread(w, pid, tid, NULL);
	struct pending_poll *pp;

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
		return NULL;
	}
	pp = &t->pending[t->nr_pending++];
	memset(pp, 0, sizeof(*pp));
	pp->arrival = w->arrivals++;
	*tp = t;
	return pp;
}

int perfetto_writer__add_poll(struct perfetto_writer *w, const struct trace_poll *p)
{
	uint32_t pid = p->pid ? p->pid : w->pid;
	struct thread_state *t;
	struct pending_poll *pp;

	if (w->err)
		return w->err;
	if (w->full) {
		w->refused++;
		return 0;
	}
	if (p->await_stack_id && p->await_stack &&
	    !text_table__add(&w->stacks, p->await_stack_id, p->await_stack)) {
		set_error(w, -ENOMEM);
		return w->err;
	}
	if (!(pp = hold(w, pid, p->tid, &t)))
		return w->err;
	pp->p = *p;
	pp->p.await_stack = NULL; /* the caller's: w->stacks has it */
	/* a task's own polls (the outermost traced ones) are linked: by a flow, or with
	 * task tracks by being copied onto its track (unless it was done in one) */
	if (trace_poll__is_task_root(p) && w->task_tracks)
		pp->task_track = perfetto__task_track(w, p, pid);
	else if (trace_poll__is_task_root(p))
		perfetto__assign_flow(w, pp, pid);
	if (p->depth == 0 || t->nr_pending >= PERFETTO_MAX_PENDING_POLLS)
		flush_thread(w, t);
	if (over_limit(w)) {
		if (w->next_file)
			rotate(w);
		else
			w->full = true;
	}
	return w->err;
}

/* "woke a task": the instant a wake-up arrow starts from, on the waker's thread */
static const char *text_woke(struct perfetto_writer *w, uint64_t a, uint64_t b, uint64_t c)
{
	(void)w, (void)a, (void)b, (void)c;
	return "woke a task";
}

int perfetto_writer__add_wake(struct perfetto_writer *w, const struct trace_wake *k, uint64_t flow)
{
	uint32_t pid = k->pid ? k->pid : w->pid;
	struct thread_state *t;

	if (w->err)
		return w->err;
	if (w->full) {
		w->refused_events++; /* not a poll: counted apart */
		return 0;
	}
	t = perfetto__get_thread(w, pid, k->tid, NULL);
	if (!t) {
		set_error(w, -ENOMEM);
		return w->err;
	}
	/* an instant needs no nesting: written now (a time before the sequence's last
	 * packet takes an absolute timestamp) */
	write_named_event(w, t, k->time_ns, TYPE_INSTANT, UINT64_MAX - 3, 0, 0, text_woke,
			  WAKE_FLOW_BASE + flow);
	return w->err;
}

int perfetto_writer__add_drop(struct perfetto_writer *w, const struct trace_drop *d)
{
	uint32_t pid = d->pid ? d->pid : w->pid;
	struct thread_state *t;
	struct pending_poll *pp;

	if (w->err)
		return w->err;
	/* an instant for a future dropped while suspended at an await: cancelled there */
	if (d->await_index < 0)
		return 0;
	if (w->full) {
		w->refused_events++; /* not a poll: counted apart */
		return 0;
	}
	if (!(pp = hold(w, pid, d->tid, &t)))
		return w->err;
	pp->cancel = true;
	pp->p = (struct trace_poll){.start_ns = d->time_ns,
				    .end_ns = d->time_ns,
				    .pid = pid,
				    .tid = d->tid,
				    .poll = d->poll,
				    .future = d->future,
				    .depth = d->depth,
				    .await_index = d->await_index};
	if (t->nr_pending >= PERFETTO_MAX_PENDING_POLLS)
		flush_thread(w, t);
	return w->err;
}

int perfetto_writer__add_block(struct perfetto_writer *w, const struct trace_block *b)
{
	uint32_t pid = b->pid ? b->pid : w->pid;
	struct thread_state *t;
	struct pending_poll *pp;

	if (w->err)
		return w->err;
	if (w->full) {
		w->refused_events++; /* not a poll: counted apart */
		return 0;
	}
	/* held with the thread's polls: written nested in the poll it is blamed on */
	if (!(pp = hold(w, pid, b->tid, &t)))
		return w->err;
	*pp = (struct pending_poll){.p = {.start_ns = b->start_ns,
					  .end_ns = b->end_ns,
					  .pid = pid,
					  .tid = b->tid,
					  .poll = b->poll,
					  .future = TRACE_NO_INDEX,
					  .depth = (uint16_t)(b->depth + 1)},
				    .arrival = pp->arrival,
				    .block = true,
				    .offcpu_kind = b->kind,
				    .syscall = b->syscall};
	if (t->nr_pending >= PERFETTO_MAX_PENDING_POLLS)
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
	else if (w->refused)
		snprintf(name, sizeof(name), "asyncbpf: %" PRIu64 " polls not written (--max-size)",
			 w->refused);
	else
		snprintf(name, sizeof(name), "asyncbpf totals");
	perfetto__packet_begin(w, SEQUENCE_GLOBAL, false, true);
	perfetto__timestamp_absolute(w, w->max_ts);
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
	if (w->refused)
		annotation(b, ANN_NOT_WRITTEN, ANNOTATION_UINT, w->refused, NULL);
	if (w->refused_events)
		annotation(b, ANN_EVENTS_NOT_WRITTEN, ANNOTATION_UINT, w->refused_events, NULL);
	pb__end(b);
	perfetto__packet_end(w);

	perfetto__flush(w);
	if (fflush(w->out) || ferror(w->out))
		set_error(w, -EIO);
	return w->err;
}

void perfetto_writer__free(struct perfetto_writer *w)
{
	if (!w)
		return;
	for (uint32_t i = 0; i < w->nr_threads; i++) {
		free(w->threads[i].pending);
		free(w->threads[i].name);
		u64_map__free(&w->threads[i].interned);
	}
	free(w->threads);
	free(w->process_name);
	free(w->stack);
	pb__free(&w->pkt);
	pb__free(&w->outbuf);
	u64_map__free(&w->thread_index);
	u64_map__free(&w->tasks);
	u64_map__free(&w->flows);
	text_table__free(&w->stacks);
	free(w);
}
