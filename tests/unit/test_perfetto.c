// SPDX-License-Identifier: GPL-2.0
/*
 * Perfetto writer: a hand-built model and hand-made polls (threads, nested polls
 * task -> middle -> leaf, pending and ready, a task that migrates threads, a task
 * address reused, truncated and unknown polls, hostile names, equal timestamps, a
 * child that outlives its parent) written into memory, then read back by a small
 * protobuf decoder of this file's own (it shares no code with the writer) that
 * checks what trace_processor relies on: tracks declared before use, interned ids
 * defined before use, BEGIN/END balanced and nested per track, timestamps as given.
 *
 * `test_perfetto --write FILE` only writes the sample trace (tests/test_trace_writers.py).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "export/perfetto.h"
#include "testlib.h"
#include "trace_model.h"

#define PID	  4242
#define OTHER_PID 4343
#define EVIL_PATH "evil\"q\\\n\x01\xff|\xc0\xaf|\xe9|caf\xc3\xa9::Fut<\xe2\x82>"
/* what a protobuf string can hold: U+FFFD for every byte that is not UTF-8 */
#define EVIL_SANITIZED                                                                             \
	"evil\"q\\\n\x01\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd|caf\xc3\xa9::Fut<"
#define MAIN_RS "/src/demo/src/main.rs"

static void add_future(struct model *m, const char *path, uint32_t line0)
{
	struct future *f = must(model__add_future(m));
	struct future_state *s;

	f->path = path;
	f->crate = "demo";
	f->kind = FUTURE_ASYNC_FN;
	f->poll = -1;
	if (!line0) { /* hand-written: no __state */
		f->kind = FUTURE_HANDWRITTEN;
		return;
	}
	f->has_state = true;
	f->state_size = 1;
	f->states = s = must(calloc(5, sizeof(*s)));
	f->nr_states = 5;
	s[0] = (struct future_state){0, STATE_UNRESUMED, 0, "Unresumed", MAIN_RS, line0, NULL};
	s[1] = (struct future_state){1, STATE_RETURNED, 0, "Returned", MAIN_RS, line0 + 9, NULL};
	s[2] = (struct future_state){2, STATE_PANICKED, 0, "Panicked", MAIN_RS, line0 + 9, NULL};
	s[3] = (struct future_state){3, STATE_SUSPEND, 0, "Suspend0", MAIN_RS, line0 + 2, NULL};
	s[4] = (struct future_state){4, STATE_SUSPEND, 1, "Suspend1", MAIN_RS, line0 + 4, NULL};
}

static void build_model(struct model *m)
{
	trace_model__build(m, EVIL_PATH, "<Unknown as core::future::future::Future>::poll",
			   add_future);
}

enum { TASK_A = 0xa000, MIDDLE = 0xb000, LEAF = 0xc000, LEAF2 = 0xc100, TASK_B = 0xd000 };

/* poll, future, tid, depth, start, end, result, await, before, after, self, task */
#define POLL(pl, fu, tid_, dep, s, e, res, aw, sb, sa, slf, tsk)                                   \
	{                                                                                          \
		.start_ns = s, .end_ns = e, .pid = PID, .tid = tid_, .poll = pl, .future = fu,     \
		.self = slf, .task_self = tsk, .task_poll = dep ? (tsk == TASK_B) : pl,            \
		.depth = dep, .result = res, .await_index = aw, .state_before = sb,                \
		.state_after = sa                                                                  \
	}

/* in the order the consumer completes them: innermost first */
static const struct trace_poll polls[] = {
    /* round 1, thread 100: all three suspend */
    POLL(2, 2, 100, 2, 1100, 1200, POLL_PENDING, 0, 0, 3, LEAF, TASK_A),
    POLL(1, 1, 100, 1, 1050, 1300, POLL_PENDING, 1, 0, 4, MIDDLE, TASK_A),
    POLL(0, 0, 100, 0, 1000, 1400, POLL_PENDING, 0, 0, 3, TASK_A, TASK_A),
    /* round 2, the task moved to thread 101: leaf done */
    POLL(2, 2, 101, 2, 2100, 2200, POLL_READY, -1, 3, 1, LEAF, TASK_A),
    POLL(1, 1, 101, 1, 2050, 2300, POLL_PENDING, 0, 4, 3, MIDDLE, TASK_A),
    POLL(0, 0, 101, 0, 2000, 2400, POLL_PENDING, 0, 3, 3, TASK_A, TASK_A),
    /* round 3, thread 100: three polls begin at the same nanosecond; the task is done */
    POLL(2, 2, 100, 2, 3000, 3100, POLL_READY, -1, 0, 1, LEAF2, TASK_A),
    POLL(1, 1, 100, 1, 3000, 3300, POLL_READY, -1, 3, 1, MIDDLE, TASK_A),
    POLL(0, 0, 100, 0, 3000, 3400, POLL_READY, -1, 3, 1, TASK_A, TASK_A),
    /* a new task at the same address */
    POLL(0, 0, 100, 0, 5000, 5100, POLL_PENDING, 0, 0, 3, TASK_A, TASK_A),
    POLL(0, 0, 100, 0, 6000, 6100, POLL_READY, -1, 3, 1, TASK_A, TASK_A),
    /* task B on thread 101 (middle's poll fn as its task): unwound, equal ends */
    POLL(2, 2, 101, 1, 7000, 7500, POLL_TRUNCATED, -1, 3, 3, 0xe000, TASK_B),
    POLL(1, 1, 101, 0, 6900, 7500, POLL_TRUNCATED, -1, 3, 3, TASK_B, TASK_B),
    /* unknown future, hostile future, unknown poll index, on thread 102 */
    POLL(4, TRACE_NO_INDEX, 102, 0, 8000, 8050, POLL_UNKNOWN, -1, 0, 0, 0xf000, 0xf000),
    POLL(3, 3, 102, 0, 9000, 9010, POLL_READY, -1, 0, 0, 0xf100, 0xf100),
    POLL(999, 999, 102, 0, 9700, 9800, POLL_PENDING, 0, 0, 0, 0xf200, 0xf200),
    /* a child that outlives its parent (not what polls do): clamped, still nested */
    POLL(2, 2, 103, 1, 10000, 10600, POLL_PENDING, 0, 0, 3, 0xf300, 0xf400),
    POLL(0, 0, 103, 0, 10050, 10500, POLL_PENDING, 0, 0, 3, 0xf400, 0xf400),
};
#define NR_POLLS     (sizeof(polls) / sizeof(polls[0]))
#define FIRST_INSANE 16 /* polls from here on are clamped */

static const struct trace_totals totals = {.polls = NR_POLLS + 1,
					   .dropped = 3,
					   .truncated = 2,
					   .probes_attached = 12,
					   .probes_failed = 1,
					   .duration_ns = 1000000000};

/* ---- an independent protobuf reader ---- */

struct reader {
	const uint8_t *p, *end;
	bool bad;
};

struct field {
	uint32_t num, wire;
	uint64_t v;
	struct reader sub; /* length-delimited content */
};

static uint64_t read_varint(struct reader *r)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end) {
			r->bad = true;
			return 0;
		}
		uint8_t c = *r->p++;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

static bool next_field(struct reader *r, struct field *f)
{
	if (r->bad || r->p >= r->end)
		return false;
	uint64_t tag = read_varint(r);
	f->num = (uint32_t)(tag >> 3);
	f->wire = tag & 7;
	f->v = 0;
	if (f->wire == 0) {
		f->v = read_varint(r);
	} else if (f->wire == 1) {
		if (r->end - r->p < 8)
			r->bad = true;
		for (int i = 0; i < 8 && !r->bad; i++)
			f->v |= (uint64_t)*r->p++ << (8 * i);
	} else if (f->wire == 2) {
		uint64_t len = read_varint(r);
		if (len > (uint64_t)(r->end - r->p))
			r->bad = true;
		else
			f->sub = (struct reader){r->p, r->p + len, false};
		if (!r->bad)
			r->p += len;
	} else {
		r->bad = true; /* the writer uses no other wire type */
	}
	return !r->bad && f->num > 0;
}

/* A string field, which must be UTF-8 (structurally), copied and cut to len */
static void copy_string(char *dst, size_t len, const struct field *f)
{
	const uint8_t *s = f->sub.p, *end = f->sub.end;
	size_t n = (size_t)(end - s), k = 1;

	for (; s < end && k; s += k) {
		k = *s < 0x80	 ? 1
		    : *s >= 0xf5 ? 0
		    : *s >= 0xf0 ? 4
		    : *s >= 0xe0 ? 3
		    : *s >= 0xc2 ? 2
				 : 0;
		if ((size_t)(end - s) < k)
			k = 0;
		for (size_t i = 1; i < k; i++)
			if ((s[i] & 0xc0) != 0x80)
				k = 0;
	}
	CHECK(s >= end && k);
	if (n >= len)
		n = len - 1;
	memcpy(dst, f->sub.p, n);
	dst[n] = '\0';
}

/* ---- what the decoder keeps ---- */

#define MAX_ANN	   12
#define MAX_IIDS   64
#define MAX_TRACKS 64

struct ann {
	char name[32];
	char kind; /* 'u' uint, 'p' pointer, 's' string */
	uint64_t u;
	char s[160];
};

struct event {
	uint64_t ts, track;
	uint32_t type;
	char name[192];
	uint64_t flow, term; /* at most one of each here */
	int nr_flow, nr_term;
	struct ann ann[MAX_ANN];
	int nr_ann;
	int depth;    /* BEGIN: nesting depth on its track, from check_nesting() */
	uint64_t end; /* BEGIN: its END's timestamp */
};

struct track {
	uint64_t uuid, parent;
	char name[192], thread_name[64], process_name[64];
	bool is_process, is_thread;
	uint32_t pid, tid;
	int declarations;
};

struct decoded {
	struct event *ev;
	int nr_ev, cap_ev;
	struct track tracks[MAX_TRACKS];
	int nr_tracks;
	char event_names[MAX_IIDS][192];
	char annotation_names[MAX_IIDS][32];
	int packets, clock_snapshots;
	bool keep_annotations;
};

static struct track *find_track(struct decoded *d, uint64_t uuid)
{
	for (int i = 0; i < d->nr_tracks; i++)
		if (d->tracks[i].uuid == uuid)
			return &d->tracks[i];
	return NULL;
}

static void decode_interned(struct decoded *d, struct reader r)
{
	struct field f, g;

	while (next_field(&r, &f)) {
		if (f.wire != 2 || (f.num != 2 && f.num != 3))
			continue;
		uint64_t iid = 0;
		char name[192] = "";
		struct reader e = f.sub;
		while (next_field(&e, &g)) {
			if (g.num == 1)
				iid = g.v;
			else if (g.num == 2 && g.wire == 2)
				copy_string(name, sizeof(name), &g);
		}
		CHECK(iid > 0 && iid < MAX_IIDS);
		if (!iid || iid >= MAX_IIDS)
			continue;
		char *slot = f.num == 2 ? d->event_names[iid] : d->annotation_names[iid];
		size_t len =
		    f.num == 2 ? sizeof(d->event_names[0]) : sizeof(d->annotation_names[0]);
		CHECK(!slot[0] || strcmp(slot, name) == 0); /* never redefined differently */
		snprintf(slot, len, "%s", name);
	}
}

static void decode_descriptor(struct decoded *d, struct reader r)
{
	struct track t = {0};
	struct field f, g;

	while (next_field(&r, &f)) {
		if (f.num == 1)
			t.uuid = f.v;
		else if (f.num == 5)
			t.parent = f.v;
		else if (f.num == 2 && f.wire == 2)
			copy_string(t.name, sizeof(t.name), &f);
		else if ((f.num == 3 || f.num == 4) && f.wire == 2) {
			struct reader s = f.sub;
			t.is_process = f.num == 3;
			t.is_thread = f.num == 4;
			while (next_field(&s, &g)) {
				if (g.num == 1)
					t.pid = (uint32_t)g.v;
				else if (g.num == 2 && t.is_thread)
					t.tid = (uint32_t)g.v;
				else if (g.num == 5 && t.is_thread)
					copy_string(t.thread_name, sizeof(t.thread_name), &g);
				else if (g.num == 6 && t.is_process)
					copy_string(t.process_name, sizeof(t.process_name), &g);
			}
		}
	}
	CHECK(t.uuid != 0);
	CHECK(!t.parent || find_track(d, t.parent) != NULL); /* parents come first */
	struct track *old = find_track(d, t.uuid);
	if (old) { /* re-declared: same kind of track, details may be added */
		CHECK(old->is_thread == t.is_thread && old->pid == t.pid && old->tid == t.tid);
		t.declarations = old->declarations + 1;
		*old = t;
		return;
	}
	CHECK(d->nr_tracks < MAX_TRACKS);
	if (d->nr_tracks < MAX_TRACKS) {
		t.declarations = 1;
		d->tracks[d->nr_tracks++] = t;
	}
}

static void decode_annotation(struct decoded *d, struct event *e, struct reader r)
{
	struct ann a = {0};
	struct field f;

	while (next_field(&r, &f)) {
		if (f.num == 1) {
			CHECK(f.v > 0 && f.v < MAX_IIDS && d->annotation_names[f.v][0]);
			if (f.v < MAX_IIDS)
				snprintf(a.name, sizeof(a.name), "%s", d->annotation_names[f.v]);
		} else if (f.num == 3 || f.num == 7) {
			a.kind = f.num == 3 ? 'u' : 'p';
			a.u = f.v;
		} else if (f.num == 6 && f.wire == 2) {
			a.kind = 's';
			copy_string(a.s, sizeof(a.s), &f);
		}
	}
	CHECK(a.kind != 0);
	if (d->keep_annotations && e->nr_ann < MAX_ANN)
		e->ann[e->nr_ann++] = a;
}

static void decode_event(struct decoded *d, struct reader r, uint64_t ts, bool has_ts,
			 uint32_t clock, uint32_t flags)
{
	struct event e = {.ts = ts};
	struct field f;

	CHECK(has_ts);
	CHECK_EQ_U64(clock, 3); /* BUILTIN_CLOCK_MONOTONIC */
	while (next_field(&r, &f)) {
		if (f.num == 9)
			e.type = (uint32_t)f.v;
		else if (f.num == 11)
			e.track = f.v;
		else if (f.num == 10) {
			CHECK(flags & 2); /* SEQ_NEEDS_INCREMENTAL_STATE */
			CHECK(f.v > 0 && f.v < MAX_IIDS && d->event_names[f.v][0]);
			if (f.v < MAX_IIDS)
				snprintf(e.name, sizeof(e.name), "%s", d->event_names[f.v]);
		} else if (f.num == 23 && f.wire == 2) {
			copy_string(e.name, sizeof(e.name), &f);
		} else if (f.num == 47 || f.num == 48) {
			CHECK_EQ_U64(f.wire, 1); /* repeated fixed64 */
			if (f.num == 47)
				e.flow = f.v, e.nr_flow++;
			else
				e.term = f.v, e.nr_term++;
		} else if (f.num == 4 && f.wire == 2) {
			CHECK(flags & 2);
			decode_annotation(d, &e, f.sub);
		}
	}
	CHECK(e.type >= 1 && e.type <= 3);
	CHECK(find_track(d, e.track) != NULL); /* declared by an earlier packet */
	if (e.type != 2)
		CHECK(e.name[0] != '\0');
	if (d->nr_ev == d->cap_ev) {
		d->cap_ev = d->cap_ev ? d->cap_ev * 2 : 256;
		d->ev = must(realloc(d->ev, d->cap_ev * sizeof(*d->ev)));
	}
	d->ev[d->nr_ev++] = e;
}

static void decode_clock_snapshot(struct decoded *d, struct reader r)
{
	struct field f, g;
	bool boot = false, mono = false, primary = false;

	while (next_field(&r, &f)) {
		if (f.num == 1 && f.wire == 2) {
			struct reader c = f.sub;
			while (next_field(&c, &g))
				if (g.num == 1)
					boot |= g.v == 6, mono |= g.v == 3;
		} else if (f.num == 2) {
			primary = f.v == 3;
		}
	}
	CHECK(boot && mono && primary);
	d->clock_snapshots++;
}

static void decode_trace(struct decoded *d, const uint8_t *buf, size_t len)
{
	struct reader top = {buf, buf + len, false};
	struct field pf, f;
	uint64_t sequence = 0;

	while (next_field(&top, &pf)) {
		CHECK_EQ_U64(pf.num, 1); /* Trace.packet */
		CHECK_EQ_U64(pf.wire, 2);
		struct reader r = pf.sub, event = {0};
		uint64_t ts = 0, seq = 0, first = 0;
		uint32_t clock = 0, flags = 0;
		bool has_ts = false, has_event = false;

		/* interned data and descriptors apply before the packet's own event */
		while (next_field(&r, &f)) {
			switch (f.num) {
			case 8: ts = f.v, has_ts = true; break;
			case 58: clock = (uint32_t)f.v; break;
			case 10: seq = f.v; break;
			case 13: flags = (uint32_t)f.v; break;
			case 87: first = f.v; break;
			case 12: decode_interned(d, f.sub); break;
			case 60: decode_descriptor(d, f.sub); break;
			case 6: decode_clock_snapshot(d, f.sub); break;
			case 11: event = f.sub, has_event = true; break;
			default: CHECK(!"unexpected TracePacket field"); break;
			}
		}
		CHECK(!r.bad);
		CHECK(seq != 0);
		if (d->packets == 0) {
			CHECK_EQ_U64(first, 1);
			CHECK(flags & 1); /* SEQ_INCREMENTAL_STATE_CLEARED */
			sequence = seq;
		} else {
			CHECK_EQ_U64(seq, sequence);
			CHECK_EQ_U64(first, 0);
			CHECK(!(flags & 1));
		}
		if (has_event)
			decode_event(d, event, ts, has_ts, clock, flags);
		d->packets++;
	}
	CHECK(!top.bad);
	CHECK_EQ_U64(d->clock_snapshots, 1);
}

/*
 * What trace_processor does with a track's events: stable sort by timestamp, BEGIN
 * pushes, END pops. Every END must find an open slice and every slice must close.
 * With in_file_order, the file order itself must already be sorted (the writer
 * promises that within a track unless polls overflowed the per-thread hold).
 */
static void check_nesting(struct decoded *d, bool in_file_order)
{
	int *idx = must(calloc((size_t)d->nr_ev + 1, sizeof(*idx)));
	int *stack = must(calloc((size_t)d->nr_ev + 1, sizeof(*stack)));

	for (int t = 0; t < d->nr_tracks; t++) {
		int n = 0, depth = 0;
		for (int i = 0; i < d->nr_ev; i++)
			if (d->ev[i].track == d->tracks[t].uuid)
				idx[n++] = i;
		for (int i = 1; i < n; i++) { /* insertion sort: stable */
			int v = idx[i], j = i;
			if (in_file_order)
				CHECK(d->ev[idx[i - 1]].ts <= d->ev[v].ts);
			while (j > 0 && d->ev[idx[j - 1]].ts > d->ev[v].ts) {
				idx[j] = idx[j - 1];
				j--;
			}
			idx[j] = v;
		}
		for (int i = 0; i < n; i++) {
			struct event *e = &d->ev[idx[i]];
			if (e->type == 1) {
				e->depth = depth;
				stack[depth++] = idx[i];
			} else if (e->type == 2) {
				CHECK(depth > 0);
				if (depth > 0)
					d->ev[stack[--depth]].end = e->ts;
			}
		}
		CHECK_EQ_U64(depth, 0);
	}
	free(idx);
	free(stack);
}

/* ---- the sample trace ---- */

static int write_sample(FILE *f, bool with_drops)
{
	struct model m;
	struct trace_totals t = totals;
	int err = 0;

	build_model(&m);
	struct perfetto_writer *w = perfetto_writer__new(f, &m, PID, "demo-proc");
	if (!w) {
		model__free(&m);
		return -ENOMEM;
	}
	err = err ?: perfetto_writer__add_thread(w, 100, "worker-1");
	for (size_t i = 0; i < NR_POLLS; i++) {
		err = err ?: perfetto_writer__add_poll(w, &polls[i]);
		if (i == 3) /* after thread 101 was declared without a name */
			err = err ?: perfetto_writer__add_thread(w, 101, "late-name");
	}
	struct trace_poll foreign = polls[2];
	foreign.pid = OTHER_PID;
	foreign.tid = OTHER_PID;
	foreign.start_ns = 9500;
	foreign.end_ns = 9600;
	err = err ?: perfetto_writer__add_poll(w, &foreign);
	if (!with_drops)
		t.dropped = 0;
	err = err ?: perfetto_writer__finish(w, &t);
	perfetto_writer__free(w);
	model__free(&m);
	return err;
}

static uint8_t *write_to_memory(bool with_drops, size_t *len, int *err)
{
	char *buf = NULL;
	FILE *f = must(open_memstream(&buf, len));

	*err = write_sample(f, with_drops);
	fclose(f);
	return (uint8_t *)buf;
}

static struct decoded *current; /* the trace test_structure() looks at */

/* The process (tid 0) or thread track of pid/tid; an empty one, and a failed check, if none. */
static const struct track *track_of(uint32_t pid, uint32_t tid)
{
	static const struct track none = {.uuid = UINT64_MAX};

	for (int i = 0; i < current->nr_tracks; i++) {
		const struct track *t = &current->tracks[i];
		if ((tid ? t->is_thread : t->is_process) && t->pid == pid && t->tid == tid)
			return t;
	}
	fprintf(stderr, "no track for pid %u tid %u\n", pid, tid);
	CHECK(!"track declared");
	return &none;
}

/* The BEGIN at ts on a thread's track (name NULL: any); an empty one if none. */
static struct event *slice(uint32_t tid, uint64_t ts, const char *name)
{
	static struct event none;
	uint64_t track = track_of(PID, tid)->uuid;

	for (int i = 0; i < current->nr_ev; i++) {
		struct event *e = &current->ev[i];
		if (e->type == 1 && e->track == track && e->ts == ts &&
		    (!name || !strcmp(e->name, name)))
			return e;
	}
	fprintf(stderr, "no slice %s on thread %u at %lu\n", name ? name : "", tid,
		(unsigned long)ts);
	CHECK(!"slice found");
	memset(&none, 0, sizeof(none));
	return &none;
}

static const struct ann *ann(const struct event *e, const char *name)
{
	static const struct ann missing = {.kind = '?', .s = "(missing)"};

	for (int i = 0; i < e->nr_ann; i++)
		if (strcmp(e->ann[i].name, name) == 0)
			return &e->ann[i];
	return &missing;
}

static const char *expected_name(uint32_t poll)
{
	static const char *const names[] = {"demo::task", "demo::middle", "demo::leaf", NULL,
					    "<Unknown as core::future::future::Future>::poll"};

	return poll < 5 ? names[poll] : "(unknown poll)";
}

static void test_structure(void)
{
	struct decoded d = {.keep_annotations = true};
	size_t len = 0;
	int err;
	uint8_t *buf = write_to_memory(true, &len, &err);

	current = &d;
	CHECK_EQ_U64(err, 0);
	decode_trace(&d, buf, len);
	check_nesting(&d, true);

	const struct track *proc = track_of(PID, 0);
	CHECK_STR(proc->process_name, "demo-proc");
	track_of(OTHER_PID, 0);
	track_of(OTHER_PID, OTHER_PID);
	CHECK_STR(track_of(PID, 100)->thread_name, "worker-1");
	CHECK_STR(track_of(PID, 101)->thread_name, "late-name");
	CHECK_EQ_U64(track_of(PID, 101)->declarations, 2);
	for (int i = 0; i < d.nr_tracks; i++)
		if (d.tracks[i].is_thread && d.tracks[i].pid == PID)
			CHECK_EQ_U64(d.tracks[i].parent, proc->uuid);

	/* every sane poll: on its thread track, at its depth, with its exact times */
	uint64_t task_a_tracks[2] = {0, 0};
	for (size_t i = 0; i < FIRST_INSANE; i++) {
		const struct trace_poll *p = &polls[i];
		const char *name = expected_name(p->poll);
		struct event *e = slice(p->tid, p->start_ns, name);
		CHECK_EQ_U64(e->end, p->end_ns);
		CHECK_EQ_U64(e->depth, p->depth);
		CHECK_EQ_U64(ann(e, "depth")->u, p->depth);
		CHECK_EQ_U64(ann(e, "self")->u, p->self);
		CHECK_EQ_U64(ann(e, "self")->kind, 'p');

		/* ...and the same slice on its task's track, parented to the process */
		int on_task = 0;
		for (int k = 0; k < d.nr_ev; k++) {
			struct event *x = &d.ev[k];
			const struct track *tt = find_track(&d, x->track);
			if (x->type != 1 || x->ts != p->start_ns || !tt || tt->is_thread ||
			    tt->is_process || (name && strcmp(x->name, name)))
				continue;
			on_task++;
			CHECK_EQ_U64(x->end, p->end_ns);
			CHECK_EQ_U64(x->depth, p->depth);
			CHECK_EQ_U64(tt->parent, proc->uuid);
			CHECK_EQ_U64(x->nr_flow + x->nr_term, 0); /* flows live on thread tracks */
			if (p->task_self == TASK_A) {
				int gen = p->start_ns >= 5000;
				CHECK(!task_a_tracks[gen] || task_a_tracks[gen] == tt->uuid);
				task_a_tracks[gen] = tt->uuid;
				CHECK_STR(tt->name, "demo::task @ 0xa000");
			}
		}
		CHECK_EQ_U64(on_task, 1);
	}
	/* a task that finished and a new one at the same address: two tracks */
	CHECK(task_a_tracks[0] && task_a_tracks[1] && task_a_tracks[0] != task_a_tracks[1]);

	/* annotations of round 1 (thread 100) */
	struct event *leaf = slice(100, 1100, "demo::leaf"), *middle = slice(100, 1050, NULL);
	CHECK_STR(ann(leaf, "result")->s, "pending");
	CHECK_STR(ann(leaf, "await")->s, MAIN_RS ":32");
	CHECK_STR(ann(middle, "await")->s, MAIN_RS ":24"); /* Suspend1 */
	CHECK_STR(ann(leaf, "future")->s, "demo::leaf::{async_fn_env#0}");
	CHECK_STR(ann(leaf, "state_before")->s, "Unresumed (0)");
	CHECK_STR(ann(leaf, "state_after")->s, "Suspend0 (3)");
	CHECK_EQ_U64(ann(leaf, "task")->u, TASK_A);

	/* flows: leaf 1100 -> 2100 (Ready: ends); middle 1050 -> 2050 -> 3000 (ends) */
	struct event *leaf2 = slice(101, 2100, NULL), *mid2 = slice(101, 2050, NULL);
	struct event *mid3 = slice(100, 3000, "demo::middle"), *task1 = slice(100, 1000, NULL);
	struct event *task3 = slice(100, 3000, "demo::task"), *task4 = slice(100, 5000, NULL);
	struct event *task5 = slice(100, 6000, NULL), *fresh_leaf = slice(100, 3000, "demo::leaf");
	CHECK(leaf->nr_flow == 1 && leaf->flow && leaf->nr_term == 0);
	CHECK(leaf2->nr_term == 1 && leaf2->term == leaf->flow && leaf2->nr_flow == 0);
	CHECK(middle->nr_flow == 1 && mid2->nr_flow == 1 && mid2->flow == middle->flow);
	CHECK(mid3->nr_term == 1 && mid3->term == middle->flow);
	CHECK(middle->flow != leaf->flow);
	CHECK(task3->nr_term == 1 && task3->term == task1->flow);
	CHECK(task4->nr_flow == 1 && task4->flow != task1->flow);
	CHECK(task5->nr_term == 1 && task5->term == task4->flow);
	CHECK_EQ_U64(fresh_leaf->nr_flow + fresh_leaf->nr_term, 0); /* Ready at once: no flow */
	CHECK_STR(ann(task3, "result")->s, "ready");

	/* truncated, unknown, hostile, out of range */
	CHECK_STR(ann(slice(101, 6900, "demo::middle"), "result")->s, "truncated");
	struct event *unknown = slice(102, 8000, expected_name(4));
	CHECK_STR(ann(unknown, "result")->s, "unknown");
	CHECK_STR(ann(unknown, "future")->s, expected_name(4));
	CHECK_EQ_U64(ann(unknown, "state_before")->kind, '?'); /* no __state to show */
	CHECK(strncmp(slice(102, 9000, NULL)->name, EVIL_SANITIZED, sizeof(EVIL_SANITIZED) - 1) ==
	      0);
	CHECK_EQ_U64(ann(slice(102, 9700, "(unknown poll)"), "await")->kind, '?');

	/* the child that outlived its parent: clamped, still balanced (checked above) */
	CHECK(slice(103, 10000, NULL)->end <= 10050);

	/* totals: the last packet, an instant on the process track */
	struct event *last = &d.ev[d.nr_ev - 1];
	CHECK_EQ_U64(last->type, 3);
	CHECK_EQ_U64(last->track, proc->uuid);
	CHECK_STR(last->name, "asyncbpf: 3 records DROPPED");
	CHECK_EQ_U64(ann(last, "dropped")->u, 3);
	CHECK_EQ_U64(ann(last, "polls")->u, NR_POLLS + 1);
	CHECK_EQ_U64(ann(last, "truncated")->u, 2);
	CHECK_EQ_U64(ann(last, "probes_attached")->u, 12);
	CHECK_EQ_U64(ann(last, "probes_failed")->u, 1);
	CHECK_EQ_U64(ann(last, "duration_ns")->u, 1000000000);
	CHECK_EQ_U64(last->ts, 10500); /* the last slice's end */
	free(d.ev);
	free(buf);
}

static void test_no_drops(void)
{
	struct decoded d = {.keep_annotations = true};
	size_t len = 0;
	int err;
	uint8_t *buf = write_to_memory(false, &len, &err);

	CHECK_EQ_U64(err, 0);
	decode_trace(&d, buf, len);
	CHECK(d.nr_ev > 0 && strcmp(d.ev[d.nr_ev - 1].name, "asyncbpf totals") == 0);
	free(d.ev);
	free(buf);
}

/* More nested polls than a thread holds: written early, still balanced once sorted. */
static void test_overflow(void)
{
	struct model m;
	struct decoded d = {0};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = must(open_memstream(&buf, &len));
	uint32_t n = PERFETTO_MAX_PENDING_POLLS + 10;

	build_model(&m);
	struct perfetto_writer *w = must(perfetto_writer__new(f, &m, PID, NULL));
	for (uint32_t i = 0; i < n; i++) {
		struct trace_poll p = polls[0];
		p.depth = 1;
		p.start_ns = 100000 + 10 * (uint64_t)i;
		p.end_ns = p.start_ns + 5;
		p.self = 0x100000 + i; /* Pending once each: flows that never continue */
		CHECK_EQ_U64(perfetto_writer__add_poll(w, &p), 0);
	}
	struct trace_poll parent = polls[2];
	parent.start_ns = 99999;
	parent.end_ns = 100000 + 10 * (uint64_t)n;
	CHECK_EQ_U64(perfetto_writer__add_poll(w, &parent), 0);
	CHECK_EQ_U64(perfetto_writer__finish(w, NULL), 0);
	perfetto_writer__free(w);
	fclose(f);
	decode_trace(&d, (uint8_t *)buf, len);
	check_nesting(&d, false);
	CHECK_EQ_U64(d.nr_ev, 4 * (n + 1) + 1);
	free(d.ev);
	free(buf);
	model__free(&m);
}

static void test_write_error(void)
{
	FILE *f = fopen("/dev/full", "w");

	if (!f) {
		fprintf(stderr, "test_perfetto: no /dev/full: write-error check skipped\n");
		return;
	}
	CHECK_EQ_I64(write_sample(f, true), -EIO);
	fclose(f);
	perfetto_writer__free(NULL);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write") == 0) {
		FILE *f = fopen(argv[2], "wb");
		if (!f) {
			perror(argv[2]);
			return 2;
		}
		int err = write_sample(f, true);
		if (fclose(f) || err) {
			fprintf(stderr, "test_perfetto: writing %s failed: %s\n", argv[2],
				strerror(err ? -err : errno));
			return 1;
		}
		return 0;
	}
	test_structure();
	test_no_drops();
	test_overflow();
	test_write_error();
	TEST_MAIN_END();
}
