// SPDX-License-Identifier: GPL-2.0
/*
 * Perfetto writer: a hand-built model and hand-made polls (threads, nested polls
 * task -> middle -> leaf, pending and ready, a task that migrates threads, a task
 * address reused, truncated and unknown polls, hostile names, equal timestamps, a
 * child that outlives its parent; more nested polls than a thread holds). Here they
 * are written (under the sanitizers) and a write error is reported;
 * `test_perfetto --write sample|task-tracks|no-drops|overflow FILE` writes them for
 * tests/test_trace_writers.py, whose reader (tests/perfetto_reader.py, Python's
 * protobuf against Perfetto's field numbers) shares no code with the writer and
 * checks every value against the polls below.
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
	s[0] = (struct future_state){0,	   STATE_UNRESUMED,  0, "Unresumed", MAIN_RS, line0,
				     NULL, FUTURE_NO_OFFSET, 0, NULL,	     0};
	s[1] = (struct future_state){1,	   STATE_RETURNED,   0, "Returned", MAIN_RS, line0 + 9,
				     NULL, FUTURE_NO_OFFSET, 0, NULL,	    0};
	s[2] = (struct future_state){2,	   STATE_PANICKED,   0, "Panicked", MAIN_RS, line0 + 9,
				     NULL, FUTURE_NO_OFFSET, 0, NULL,	    0};
	s[3] = (struct future_state){3,	   STATE_SUSPEND,    0, "Suspend0", MAIN_RS, line0 + 2,
				     NULL, FUTURE_NO_OFFSET, 0, NULL,	    0};
	s[4] = (struct future_state){4,	   STATE_SUSPEND,    1, "Suspend1", MAIN_RS, line0 + 4,
				     NULL, FUTURE_NO_OFFSET, 0, NULL,	    0};
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

/* A writer on f over the sample model (built into m); NULL, m freed, out of memory. */
static struct perfetto_writer *open_sample_writer(FILE *f, struct model *m, const char *process)
{
	struct perfetto_writer *w;

	build_model(m);
	if (!(w = perfetto_writer__new(f, m, PID, process)))
		model__free(m);
	return w;
}

/* Finish the file (unless err), free the writer and the model: err, else finish's. */
static int close_sample_writer(struct perfetto_writer *w, struct model *m,
			       const struct trace_totals *t, int err)
{
	err = err ?: perfetto_writer__finish(w, t);
	perfetto_writer__free(w);
	model__free(m);
	return err;
}

static int write_sample(FILE *f, bool with_drops, bool task_tracks)
{
	struct model m;
	struct trace_totals t = totals;
	int err = 0;

	struct perfetto_writer *w = open_sample_writer(f, &m, "demo-proc");

	if (!w)
		return -ENOMEM;
	perfetto_writer__set_task_tracks(w, task_tracks);
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
	return close_sample_writer(w, &m, &t, err);
}

/*
 * Task mode: one slice per task poll, its chain in await_stack (the caller's buffer,
 * overwritten after each add: the writer keeps its own copy), two polls sharing one
 * chain, no state annotation.
 */
static int write_task_mode(FILE *f)
{
	static const char *const chains[] = {
	    "demo::task (/src/demo/src/main.rs:10) → demo::middle (/src/demo/src/main.rs:20) → "
	    "demo::leaf",
	    "demo::task (/src/demo/src/main.rs:11) → demo::middle"};
	struct model m;
	char buf[256];
	int err = 0;

	struct perfetto_writer *w = open_sample_writer(f, &m, "demo-proc");

	if (!w)
		return -ENOMEM;
	for (int i = 0; i < 3; i++) {
		struct trace_poll p =
		    POLL(0, 0, 104, 0, 20000 + 1000 * (uint64_t)i, 20500 + 1000 * (uint64_t)i,
			 POLL_PENDING, 0, 3, 4, TASK_A, TASK_A);

		snprintf(buf, sizeof(buf), "%s", chains[i == 1]);
		p.task_mode = 1;
		p.await_stack = buf;
		p.await_stack_id = 77 + (i == 1);
		err = err ?: perfetto_writer__add_poll(w, &p);
		memset(buf, 'X', sizeof(buf) - 1);
	}
	return close_sample_writer(w, &m, &totals, err);
}

/* More nested polls than a thread holds (written early), then their parent. */
static int write_overflow(FILE *f)
{
	struct model m;
	uint32_t n = PERFETTO_MAX_PENDING_POLLS + 10;
	int err = 0;

	struct perfetto_writer *w = open_sample_writer(f, &m, NULL);

	if (!w)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct trace_poll p = polls[0];
		p.depth = 1;
		p.start_ns = 100000 + 10 * (uint64_t)i;
		p.end_ns = p.start_ns + 5;
		p.self = 0x100000 + i;
		err = err ?: perfetto_writer__add_poll(w, &p);
	}
	struct trace_poll parent = polls[2];
	parent.start_ns = 99999;
	parent.end_ns = 100000 + 10 * (uint64_t)n;
	err = err ?: perfetto_writer__add_poll(w, &parent);
	return close_sample_writer(w, &m, NULL, err);
}

static void test_writes(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = must(open_memstream(&buf, &len));

	CHECK_EQ_I64(write_sample(f, true, true), 0);
	CHECK_EQ_I64(write_sample(f, true, false), 0);
	CHECK_EQ_I64(write_overflow(f), 0);
	CHECK_EQ_I64(write_task_mode(f), 0);
	fclose(f);
	CHECK(len > 0);
	free(buf);
}

/* --max-size: N polls into files of `limit` bytes; stop mode (next NULL) or a ring */
struct ring_test {
	char *bufs[64];
	size_t lens[64];
	FILE *files[64];
	int n;
};

static int next_memfile(void *ctx, FILE **out)
{
	struct ring_test *r = ctx;

	if (r->n == 64)
		return -ENOSPC;
	fclose(r->files[r->n - 1]);
	r->files[r->n - 1] = NULL;
	r->files[r->n] = must(open_memstream(&r->bufs[r->n], &r->lens[r->n]));
	*out = r->files[r->n++];
	return 0;
}

static void write_limited(struct ring_test *r, uint64_t limit, bool ring, uint32_t n,
			  uint64_t *refused, bool *full)
{
	struct model m;

	build_model(&m);
	r->files[0] = must(open_memstream(&r->bufs[0], &r->lens[0]));
	r->n = 1;
	struct perfetto_writer *w = must(perfetto_writer__new(r->files[0], &m, PID, "demo-proc"));
	perfetto_writer__set_limit(w, limit, ring ? next_memfile : NULL, r);
	for (uint32_t i = 0; i < n; i++) {
		struct trace_poll p = polls[2]; /* the task, pending: one poll per group */
		p.start_ns = 1000000 + 1000 * (uint64_t)i;
		p.end_ns = p.start_ns + 500;
		CHECK_EQ_I64(perfetto_writer__add_poll(w, &p), 0);
	}
	*full = perfetto_writer__full(w);
	*refused = perfetto_writer__refused(w);
	if (*full) { /* events that are not polls, refused too, are not counted as polls */
		struct trace_block b = {.start_ns = 2000000000,
					.end_ns = 2000000100,
					.pid = PID,
					.tid = polls[2].tid,
					.poll = polls[2].poll,
					.future = polls[2].future,
					.syscall = 0};
		struct trace_wake k = {.time_ns = 2000000200, .pid = PID, .tid = polls[2].tid};
		struct trace_drop d = {.time_ns = 2000000300,
				       .pid = PID,
				       .tid = polls[2].tid,
				       .poll = polls[2].poll,
				       .future = polls[2].future,
				       .has_state = true,
				       .await_index = 0};

		CHECK_EQ_I64(perfetto_writer__add_block(w, &b), 0);
		CHECK_EQ_I64(perfetto_writer__add_wake(w, &k, 1), 0);
		CHECK_EQ_I64(perfetto_writer__add_drop(w, &d), 0);
		CHECK_EQ_U64(perfetto_writer__refused(w), *refused);
	}
	CHECK_EQ_I64(perfetto_writer__finish(w, &totals), 0);
	perfetto_writer__free(w);
	model__free(&m);
	fclose(r->files[r->n - 1]);
}

static void test_limit(void)
{
	struct ring_test r = {0};
	uint64_t refused;
	bool full;

	/* stop: the file stays under the limit, the rest is refused and counted */
	write_limited(&r, 64 << 10, false, 10000, &refused, &full);
	CHECK(full && refused > 0 && refused < 10000);
	CHECK_EQ_U64(r.n, 1);
	CHECK(r.lens[0] <= 64 << 10 && r.lens[0] > 32 << 10);
	free(r.bufs[0]);

	/* ring: every file under the limit, none refused */
	memset(&r, 0, sizeof(r));
	write_limited(&r, 64 << 10, true, 10000, &refused, &full);
	CHECK(!full && refused == 0 && r.n > 2);
	for (int i = 0; i < r.n; i++) {
		CHECK(r.lens[i] <= 64 << 10);
		free(r.bufs[i]);
	}
}

static void test_write_error(void)
{
	FILE *f = fopen("/dev/full", "w");

	if (!f) {
		fprintf(stderr, "test_perfetto: no /dev/full: write-error check skipped\n");
		return;
	}
	CHECK_EQ_I64(write_sample(f, true, false), -EIO);
	fclose(f);
	perfetto_writer__free(NULL);
}

/* `--write KIND FILE`: the sample (with or without drops) or the overflow, for Python */
static int write_file(const char *kind, const char *path)
{
	FILE *f = fopen(path, "wb");
	int err;

	if (!f) {
		perror(path);
		return 2;
	}
	if (!strcmp(kind, "sample"))
		err = write_sample(f, true, false);
	else if (!strcmp(kind, "task-tracks"))
		err = write_sample(f, true, true);
	else if (!strcmp(kind, "no-drops"))
		err = write_sample(f, false, false);
	else if (!strcmp(kind, "task-mode"))
		err = write_task_mode(f);
	else
		err = write_overflow(f);
	if (fclose(f) || err) {
		fprintf(stderr, "test_perfetto: writing %s failed: %s\n", path,
			strerror(err ? -err : errno));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--write") == 0)
		return write_file(argv[2], argv[3]);
	test_writes();
	test_limit();
	test_write_error();
	TEST_MAIN_END();
}
