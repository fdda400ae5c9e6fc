// SPDX-License-Identifier: GPL-2.0
/*
 * Perfetto profile writer: the hand-made profile of profile_model.h written into
 * memory and read back with pb_reader.h (no code shared with the encoder), packet by
 * packet, as trace_processor would: each track declared before a sample uses its
 * thread, each interned id (function name, mapping, frame, callstack) defined in an
 * earlier packet or the same one before use and never twice, and each sample's
 * callstack resolving to the hand-made stack, root first, "[off-CPU]" first for
 * off-CPU ones. Also: the aggregate form without samples, the empty profile, write
 * errors.
 *
 * `test_perfetto_profile --write FILE [--aggregate]` only writes the sample trace.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pb_reader.h"
#include "export/profile_export.h"
#include "profile_model.h"
#include "testlib.h"

#define MAX_IDS	   64
#define MAX_FRAMES 8

struct frame_def {
	uint64_t name, mapping;
};

struct callstack_def {
	uint64_t frames[MAX_FRAMES];
	size_t nframes;
};

struct sample {
	uint64_t ts, pid, tid, callstack, cpu_mode;
};

struct instant {
	uint64_t ts, track;
	char name[256];
	char stack[512];
	uint64_t samples, off_cpu_ns;
};

struct trace {
	char *names[MAX_IDS];	/* function_names by iid */
	bool mappings[MAX_IDS]; /* defined mapping iids */
	struct frame_def frames[MAX_IDS];
	bool frame_defined[MAX_IDS];
	struct callstack_def callstacks[MAX_IDS];
	bool callstack_defined[MAX_IDS];
	uint64_t tracks[MAX_IDS]; /* declared uuids */
	uint64_t thread_tids[MAX_IDS];
	char thread_names[MAX_IDS][64];
	size_t ntracks;
	uint64_t process_pid;
	char process_name[64];
	struct sample samples[32];
	size_t nsamples;
	struct instant instants[16];
	size_t ninstants;
	size_t npackets;
	bool first_ok, clock_ok;
	bool bad; /* malformed, or out of this decoder's bounds */
	bool used_before_defined, defined_twice;
};

static void copy_string(char *dst, size_t cap, const struct pb_field *f)
{
	size_t n = f->len < cap - 1 ? f->len : cap - 1;

	memcpy(dst, f->data, n);
	dst[n] = '\0';
}

/* InternedData: definitions; the whole message is defined before the packet's sample. */
static void decode_interned(struct trace *t, const struct pb_field *f)
{
	struct pb_reader r = pb_reader__of(f->data, f->len);
	struct pb_field g, h;

	while (pb_reader__next(&r, &g)) {
		struct pb_reader m = pb_reader__of(g.data, g.len);
		uint64_t iid = 0, a = 0, b = 0;
		char *str = NULL;
		struct callstack_def cs = {0};

		if (g.wire != 2) {
			t->bad = true;
			continue;
		}
		while (pb_reader__next(&m, &h)) {
			if (h.number == 1)
				iid = h.value;
			else if (g.number == 5 && h.number == 2)
				str = must(strndup((const char *)h.data, h.len));
			else if (g.number == 6 && h.number == 2)
				a = h.value;
			else if (g.number == 6 && h.number == 3)
				b = h.value;
			else if (g.number == 7 && h.number == 2 && h.wire == 0 &&
				 cs.nframes < MAX_FRAMES)
				cs.frames[cs.nframes++] = h.value;
			else if (g.number == 7 && h.number == 2)
				t->bad =
				    true; /* packed, or too many: trace_processor reads unpacked */
		}
		t->bad |= m.bad || iid == 0 || iid >= MAX_IDS;
		if (iid == 0 || iid >= MAX_IDS) {
			free(str);
			continue;
		}
		if (g.number == 5) { /* function_names */
			t->defined_twice |= t->names[iid] != NULL;
			free(t->names[iid]);
			t->names[iid] = str;
		} else if (g.number == 19) { /* mappings */
			t->defined_twice |= t->mappings[iid];
			t->mappings[iid] = true;
		} else if (g.number == 6) { /* frames: their references resolved at the end */
			t->defined_twice |= t->frame_defined[iid];
			t->frame_defined[iid] = true;
			t->frames[iid] = (struct frame_def){a, b};
		} else if (g.number == 7) { /* callstacks */
			t->defined_twice |= t->callstack_defined[iid];
			t->callstack_defined[iid] = true;
			t->callstacks[iid] = cs;
		}
		free(str != t->names[iid] ? str : NULL);
	}
	t->bad |= r.bad;
}

/* After a packet's interned data: every frame's name and mapping are defined. */
static void check_frames(struct trace *t)
{
	for (size_t i = 1; i < MAX_IDS; i++) {
		if (!t->frame_defined[i])
			continue;
		if (t->frames[i].name >= MAX_IDS || !t->names[t->frames[i].name] ||
		    t->frames[i].mapping >= MAX_IDS || !t->mappings[t->frames[i].mapping])
			t->used_before_defined = true;
	}
	for (size_t i = 1; i < MAX_IDS; i++)
		for (size_t j = 0; t->callstack_defined[i] && j < t->callstacks[i].nframes; j++)
			if (t->callstacks[i].frames[j] >= MAX_IDS ||
			    !t->frame_defined[t->callstacks[i].frames[j]])
				t->used_before_defined = true;
}

static void decode_track(struct trace *t, const struct pb_field *f)
{
	struct pb_reader r = pb_reader__of(f->data, f->len);
	struct pb_field g, h;
	uint64_t uuid = 0, tid = 0;
	char name[64] = "";
	bool thread = false;

	while (pb_reader__next(&r, &g)) {
		if (g.number == 1)
			uuid = g.value;
		if (g.number != 3 && g.number != 4)
			continue;
		thread = g.number == 4;
		struct pb_reader d = pb_reader__of(g.data, g.len);
		while (pb_reader__next(&d, &h)) {
			if (h.number == 1 && !thread)
				t->process_pid = h.value;
			else if (h.number == 2 && thread)
				tid = h.value;
			else if (h.number == (thread ? 5u : 6u))
				copy_string(name, sizeof(name), &h);
		}
	}
	if (t->ntracks == MAX_IDS) {
		t->bad = true;
		return;
	}
	t->tracks[t->ntracks] = uuid;
	t->thread_tids[t->ntracks] = thread ? tid : UINT64_MAX;
	strcpy(t->thread_names[t->ntracks], name);
	t->ntracks++;
	if (!thread)
		strcpy(t->process_name, name);
}

static bool tid_declared(const struct trace *t, uint64_t tid)
{
	for (size_t i = 0; i < t->ntracks; i++)
		if (t->thread_tids[i] == tid)
			return true;
	return false;
}

static void decode_packet(struct trace *t, const struct pb_field *pf)
{
	struct pb_reader r = pb_reader__of(pf->data, pf->len);
	struct pb_field f, g;
	uint64_t ts = 0, seq = 0, flags = 0;
	struct pb_field sample = {0}, event = {0};

	while (pb_reader__next(&r, &f)) {
		switch (f.number) {
		case 8: ts = f.value; break;
		case 10: seq = f.value; break;
		case 13: flags = f.value; break;
		case 87: t->first_ok = t->npackets == 0 && f.value == 1; break;
		case 6: t->clock_ok = t->npackets == 0; break;
		case 12: decode_interned(t, &f); break;
		case 60: decode_track(t, &f); break;
		case 66: sample = f; break;
		case 11: event = f; break;
		}
	}
	t->bad |= r.bad || seq != 1;
	check_frames(t);
	if (sample.data) {
		struct sample s = {.ts = ts};
		struct pb_reader d = pb_reader__of(sample.data, sample.len);
		while (pb_reader__next(&d, &g)) {
			if (g.number == 2)
				s.pid = g.value;
			else if (g.number == 3)
				s.tid = g.value;
			else if (g.number == 4)
				s.callstack = g.value;
			else if (g.number == 5)
				s.cpu_mode = g.value;
		}
		t->bad |= !(flags & 2); /* interned ids need SEQ_NEEDS_INCREMENTAL_STATE */
		if (s.callstack >= MAX_IDS || !t->callstack_defined[s.callstack] ||
		    !tid_declared(t, s.tid))
			t->used_before_defined = true;
		if (t->nsamples < 32)
			t->samples[t->nsamples++] = s;
		else
			t->bad = true;
	}
	if (event.data && t->ninstants < 16) {
		struct instant *in = &t->instants[t->ninstants++];
		struct pb_reader d = pb_reader__of(event.data, event.len);
		*in = (struct instant){.ts = ts};
		while (pb_reader__next(&d, &g)) {
			if (g.number == 11)
				in->track = g.value;
			else if (g.number == 23)
				copy_string(in->name, sizeof(in->name), &g);
			else if (g.number == 4) { /* DebugAnnotation: name 10, uint 3, string 6 */
				struct pb_reader a = pb_reader__of(g.data, g.len);
				struct pb_field h;
				char aname[32] = "";
				uint64_t uint_value = 0;
				struct pb_field string = {0};
				while (pb_reader__next(&a, &h)) {
					if (h.number == 10)
						copy_string(aname, sizeof(aname), &h);
					else if (h.number == 3)
						uint_value = h.value;
					else if (h.number == 6)
						string = h;
				}
				if (!strcmp(aname, "stack") && string.data)
					copy_string(in->stack, sizeof(in->stack), &string);
				if (!strcmp(aname, "samples"))
					in->samples = uint_value;
				if (!strcmp(aname, "off_cpu_ns"))
					in->off_cpu_ns = uint_value;
			}
		}
		bool declared = false;
		for (size_t i = 0; i < t->ntracks; i++)
			declared |= t->tracks[i] == in->track;
		t->used_before_defined |= !declared;
	}
	t->npackets++;
}

static void decode(struct trace *t, const char *buf, size_t len)
{
	struct pb_reader r = pb_reader__of(buf, len);
	struct pb_field f;

	memset(t, 0, sizeof(*t));
	while (pb_reader__next(&r, &f)) {
		if (f.number != 1 || f.wire != 2) {
			t->bad = true; /* a Trace is only packets */
			break;
		}
		decode_packet(t, &f);
	}
	t->bad |= r.bad;
}

static void trace_free(struct trace *t)
{
	for (size_t i = 0; i < MAX_IDS; i++)
		free(t->names[i]);
}

/* The callstack's frame names, root first, joined by ';'. */
static void stack_text(const struct trace *t, uint64_t iid, char *out, size_t cap)
{
	const struct callstack_def *cs = &t->callstacks[iid];
	size_t len = 0;

	out[0] = '\0';
	for (size_t i = 0; i < cs->nframes && len < cap; i++) {
		const char *name = t->names[t->frames[cs->frames[i]].name];
		len +=
		    (size_t)snprintf(out + len, cap - len, "%s%s", i ? ";" : "", name ? name : "?");
	}
}

static void expected_text(const struct pstack *s, char *out, size_t cap)
{
	size_t len = (size_t)snprintf(out, cap, "%s", s->offcpu ? "[off-CPU]" : "");

	for (uint32_t i = 0; i < s->nframes && len < cap; i++)
		len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? ";" : "",
					s->frames[i]->name);
}

static void test_samples(void)
{
	struct profile_model m;
	struct trace t;
	char *buf = NULL;
	size_t len = 0;

	profile_model__build(&m);
	CHECK_EQ_I64(profile_model__write_mem(perfetto_profile__write, &m.p, &buf, &len), 0);
	decode(&t, buf, len);
	CHECK(!t.bad);
	CHECK(!t.used_before_defined);
	CHECK(!t.defined_twice);
	CHECK(t.first_ok && t.clock_ok);

	CHECK_EQ_U64(t.process_pid, PM_PID);
	CHECK_STR(t.process_name, "demo-proc");
	CHECK_EQ_U64(t.ntracks, 4); /* the process, 100, 101 (named), 102 */
	for (size_t i = 0; i < t.ntracks; i++) {
		if (t.thread_tids[i] == 100)
			CHECK_STR(t.thread_names[i], "worker-1");
		if (t.thread_tids[i] == 101)
			CHECK_STR(t.thread_names[i], "worker<2>");
		if (t.thread_tids[i] == 102)
			CHECK_STR(t.thread_names[i], "");
	}

	/* every sample, in order, with its thread, time and stack */
	CHECK_EQ_U64(t.nsamples, 12);
	for (size_t i = 0; i < t.nsamples && i < 12; i++) {
		const struct psample *want = &m.samples[i];
		char got[25000], expect[25000];
		CHECK_EQ_U64(t.samples[i].ts, want->time_ns);
		CHECK_EQ_U64(t.samples[i].pid, PM_PID);
		CHECK_EQ_U64(t.samples[i].tid, want->tid);
		CHECK_EQ_U64(t.samples[i].cpu_mode, m.stacks[want->stack].offcpu ? 0 : 2);
		if (t.samples[i].callstack >= MAX_IDS)
			continue;
		stack_text(&t, t.samples[i].callstack, got, sizeof(got));
		expected_text(&m.stacks[want->stack], expect, sizeof(expect));
		if (want->stack == 3) /* the hostile name arrives as valid UTF-8 */
			CHECK_STR(got, "[not in a poll];" PM_EVIL_UTF8);
		else
			CHECK_STR(got, expect);
	}
	/* dedup: 8 callstacks, 11 frames and "[off-CPU]"; names by distinct pointer */
	size_t callstacks = 0, frames = 0;
	for (size_t i = 0; i < MAX_IDS; i++) {
		callstacks += t.callstack_defined[i];
		frames += t.frame_defined[i];
	}
	CHECK_EQ_U64(callstacks, 8);
	CHECK_EQ_U64(frames, 12);
	CHECK(t.samples[0].callstack == t.samples[8].callstack); /* S0 again: same iid */

	/* the totals: last, on the process track */
	CHECK_EQ_U64(t.ninstants, 1);
	CHECK_STR(t.instants[0].name, "asyncbpf profile: 7 samples DROPPED, 3 unwind failed, 5 cut "
				      "short, 2 off-CPU blocks lost");
	CHECK(t.instants[0].ts >= 2200000000ULL);

	trace_free(&t);
	free(buf);
	profile_model__free(&m);
}

static void test_aggregate(void)
{
	struct profile_model m;
	struct trace t;
	char *buf = NULL;
	size_t len = 0;

	profile_model__build(&m);
	m.p.samples = NULL;
	m.p.nsamples = 0;
	CHECK_EQ_I64(profile_model__write_mem(perfetto_profile__write, &m.p, &buf, &len), 0);
	decode(&t, buf, len);
	CHECK(!t.bad && !t.used_before_defined);
	CHECK_EQ_U64(t.nsamples, 0);
	CHECK_EQ_U64(t.ninstants, 9); /* 8 stacks, the totals */
	CHECK_STR(t.instants[0].name, "demo::parse");
	CHECK_STR(t.instants[0].stack, "[runtime]\ndemo::handler\ndemo::fetch\ndemo::parse");
	CHECK_EQ_U64(t.instants[0].samples, 50);
	CHECK_EQ_U64(t.instants[0].ts, 1000000000);
	CHECK_EQ_U64(t.ntracks, 3); /* the process and the two named threads */
	trace_free(&t);
	free(buf);

	struct profile_data empty = {0};
	buf = NULL;
	CHECK_EQ_I64(profile_model__write_mem(perfetto_profile__write, &empty, &buf, &len), 0);
	decode(&t, buf, len);
	CHECK(!t.bad && !t.used_before_defined);
	CHECK_EQ_U64(t.ninstants, 1);
	CHECK_STR(t.instants[0].name, "asyncbpf profile totals");
	trace_free(&t);
	free(buf);
	profile_model__free(&m);
}

/*
 * Off-CPU stacks summed in the kernel have no samples of their own: the on-CPU
 * samples are written as such, the off-CPU stacks as instant events with their
 * blocks and time, before the totals.
 */
static void test_offcpu_summed(void)
{
	struct profile_model m;
	struct psample on[12];
	struct trace t;
	char *buf = NULL;
	size_t len = 0, n = 0;

	profile_model__build(&m);
	for (size_t i = 0; i < m.p.nsamples; i++)
		if (!m.stacks[m.samples[i].stack].offcpu)
			on[n++] = m.samples[i];
	m.p.samples = on;
	m.p.nsamples = n;
	CHECK_EQ_I64(profile_model__write_mem(perfetto_profile__write, &m.p, &buf, &len), 0);
	decode(&t, buf, len);
	CHECK(!t.bad && !t.used_before_defined);
	CHECK_EQ_U64(t.nsamples, n);
	CHECK_EQ_U64(n, 9);
	CHECK_EQ_U64(t.ninstants, 3); /* S4, S5, the totals */
	CHECK_STR(t.instants[0].name, "demo::fetch");
	CHECK_STR(t.instants[0].stack, "[runtime]\ndemo::handler\ndemo::fetch");
	CHECK_EQ_U64(t.instants[0].samples, 4);
	CHECK_EQ_U64(t.instants[0].off_cpu_ns, 4000000);
	CHECK_STR(t.instants[1].name, "tokio::runtime::park");
	CHECK_EQ_U64(t.instants[1].samples, 2);
	CHECK_EQ_U64(t.instants[1].off_cpu_ns, 1000000);
	CHECK_STR(t.instants[2].name,
		  "asyncbpf profile: 7 samples DROPPED, 3 unwind failed, 5 cut short, 2 off-CPU "
		  "blocks lost");
	trace_free(&t);
	free(buf);
	profile_model__free(&m);
}

/* A sample of another process (a fork) gets its process and thread declared; a
 * sample whose stack index is out of range is left out. */
static void test_fork_and_bad_index(void)
{
	struct profile_model m;
	struct trace t;
	char *buf = NULL;
	size_t len = 0;

	profile_model__build(&m);
	m.samples[1].pid = 4343;
	m.samples[1].tid = 200;
	m.samples[2].stack = 99;
	CHECK_EQ_I64(profile_model__write_mem(perfetto_profile__write, &m.p, &buf, &len), 0);
	decode(&t, buf, len);
	CHECK(!t.bad && !t.used_before_defined && !t.defined_twice);
	CHECK_EQ_U64(t.nsamples, 11);
	CHECK_EQ_U64(t.ntracks, 6); /* two processes, threads 100, 101, 200, 102 */
	CHECK(tid_declared(&t, 200));
	CHECK(t.nsamples > 1 && t.samples[1].pid == 4343 && t.samples[1].tid == 200);
	trace_free(&t);
	free(buf);
	profile_model__free(&m);
}

static void test_write_error(void)
{
	struct profile_model m;
	FILE *f = fopen("/dev/full", "w");

	if (!f) {
		fprintf(stderr, "test_perfetto_profile: no /dev/full: write-error check skipped\n");
		return;
	}
	profile_model__build(&m);
	CHECK_EQ_I64(perfetto_profile__write(f, &m.p), -ENOSPC); /* /dev/full says why */
	fclose(f);
	profile_model__free(&m);
}

int main(int argc, char **argv)
{
	if ((argc == 3 || argc == 4) && strcmp(argv[1], "--write") == 0) {
		struct profile_model m;
		FILE *f = fopen(argv[2], "wb");
		if (!f) {
			perror(argv[2]);
			return 2;
		}
		profile_model__build(&m);
		if (argc == 4 && !strcmp(argv[3], "--aggregate"))
			m.p.samples = NULL, m.p.nsamples = 0;
		int err = perfetto_profile__write(f, &m.p);
		profile_model__free(&m);
		if (fclose(f) || err) {
			fprintf(stderr, "test_perfetto_profile: writing %s failed: %s\n", argv[2],
				strerror(-err));
			return 1;
		}
		return 0;
	}
	test_samples();
	test_aggregate();
	test_offcpu_summed();
	test_fork_and_bad_index();
	test_write_error();
	TEST_MAIN_END();
}
