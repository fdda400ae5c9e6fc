// SPDX-License-Identifier: GPL-2.0
/*
 * Chrome trace JSON writer: a hand-built model and hand-made polls (nested task ->
 * middle -> leaf, a task that moves threads, pending/ready/truncated/unknown results,
 * hostile names, a poll whose end precedes its start) written into memory, parsed
 * back with cJSON (and Python's strict json when there is one) and checked: every
 * X event as given, in microseconds; metadata; flows paired; totals.
 *
 * `test_chrome_trace --write FILE` only writes the sample (tests/test_trace_writers.py).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "export/chrome_trace.h"
#include "model/model.h"
#include "testlib.h"
#include "trace_model.h"

#define PID	4242
#define MAIN_RS "/src/demo/src/main.rs"
#define EVIL_PATH                                                                                  \
	"evil\"q\\\n\x01\x1f\x7f|\xff|\xc0\xaf|\xed\xa0\x80|caf\xc3\xa9 \xe2\x80\xa8::F<\xe2\x82>"
/* what a JSON parser must give back: U+FFFD for every byte that is not UTF-8 */
#define FFFD "\xef\xbf\xbd"
#define EVIL_DECODED                                                                               \
	"evil\"q\\\n\x01\x1f\x7f|" FFFD "|" FFFD FFFD "|" FFFD FFFD FFFD                           \
	"|caf\xc3\xa9 \xe2\x80\xa8::F<" FFFD FFFD ">"

static void add_future(struct model *m, const char *path, uint32_t line0)
{
	struct future *f = must(model__add_future(m));
	struct future_state *s;

	f->path = path;
	f->crate = "demo";
	f->kind = line0 ? FUTURE_ASYNC_FN : FUTURE_HANDWRITTEN;
	f->poll = -1;
	if (!line0)
		return;
	f->has_state = true;
	f->state_size = 1;
	f->states = s = must(calloc(4, sizeof(*s)));
	f->nr_states = 4;
	s[0] = (struct future_state){0,	   STATE_UNRESUMED,  0, "Unresumed", MAIN_RS, line0,
				     NULL, FUTURE_NO_OFFSET, 0, NULL,	     0};
	s[1] = (struct future_state){1,	   STATE_RETURNED,   0, "Returned", MAIN_RS, line0 + 9,
				     NULL, FUTURE_NO_OFFSET, 0, NULL,	    0};
	s[2] = (struct future_state){2,	   STATE_PANICKED,   0, "Panicked", MAIN_RS, line0 + 9,
				     NULL, FUTURE_NO_OFFSET, 0, NULL,	    0};
	s[3] = (struct future_state){3,	   STATE_SUSPEND,    0, "Suspend0", MAIN_RS, line0 + 2,
				     NULL, FUTURE_NO_OFFSET, 0, NULL,	    0};
}

static void build_model(struct model *m)
{
	trace_model__build(m, EVIL_PATH, "<Unknown as core::future::future::Future>::poll",
			   add_future);
}

#define TASK 0xa000
#define POLL(pl, fu, tid_, dep, s, e, res, aw, sb, sa, slf)                                        \
	{                                                                                          \
		.start_ns = s, .end_ns = e, .pid = PID, .tid = tid_, .poll = pl, .future = fu,     \
		.self = slf, .task_self = TASK, .task_poll = 0, .depth = dep, .result = res,       \
		.await_index = aw, .state_before = sb, .state_after = sa                           \
	}

/* innermost first, as the consumer completes them */
static const struct trace_poll polls[] = {
    POLL(2, 2, 100, 2, 1100, 1200, POLL_PENDING, 0, 0, 3, 0xc000),
    POLL(1, 1, 100, 1, 1050, 1300, POLL_PENDING, 0, 0, 3, 0xb000),
    POLL(0, 0, 100, 0, 1000, 1400, POLL_PENDING, 0, 0, 3, TASK),
    POLL(2, 2, 101, 2, 2100, 2200, POLL_READY, -1, 3, 1, 0xc000),
    POLL(1, 1, 101, 1, 2050, 2300, POLL_PENDING, 0, 3, 3, 0xb000),
    POLL(0, 0, 101, 0, 2000, 2400, POLL_PENDING, 0, 3, 3, TASK),
    POLL(1, 1, 100, 1, 3050, 3300, POLL_TRUNCATED, -1, 3, 3, 0xb000),
    POLL(0, 0, 100, 0, 3000, 3300, POLL_PANICKED, -1, 3, 2, TASK),
    POLL(4, TRACE_NO_INDEX, 102, 0, 1234567, 1234568, POLL_UNKNOWN, -1, 0, 0, 0xf000),
    POLL(3, 3, 102, 0, 2000000, 2000001, POLL_READY, -1, 0, 0, 0xf100),
    POLL(999, 999, 102, 0, 2000100, 2000050, POLL_PENDING, 0, 0, 0, 0xf200), /* end < start */
};
#define NR_POLLS (sizeof(polls) / sizeof(polls[0]))
#define NR_LINKS 5 /* leaf 1, middle 2, task 2 */

static const struct trace_totals totals = {
    .polls = NR_POLLS,
    .dropped = 7,
    .truncated = 1,
    .probes_attached = 12,
    .probes_failed = 1,
    .duration_ns = 5000000000ULL,
};

static int write_sample(FILE *f, const struct trace_totals *t)
{
	struct model m;
	int err = 0;

	build_model(&m);
	struct chrome_trace *w = chrome_trace__new(f, &m, PID, "demo-proc \"x\"");
	if (!w) {
		model__free(&m);
		return -ENOMEM;
	}
	if (!err)
		err = chrome_trace__add_thread(w, 100, "worker-1");
	if (!err)
		err = chrome_trace__add_thread(w, 101, EVIL_PATH);
	for (size_t i = 0; i < NR_POLLS && !err; i++)
		err = chrome_trace__add_poll(w, &polls[i]);
	if (!err)
		err = chrome_trace__finish(w, t);
	chrome_trace__free(w);
	model__free(&m);
	return err;
}

static char *write_to_memory(const struct trace_totals *t, size_t *len, int *err)
{
	char *buf = NULL;
	FILE *f = must(open_memstream(&buf, len));

	*err = write_sample(f, t);
	fclose(f);
	return buf;
}

/* UTF-8, no raw control characters but line breaks */
static bool bytes_clean(const char *buf, size_t len)
{
	const unsigned char *s = (const unsigned char *)buf;

	for (size_t i = 0; i < len;) {
		unsigned char c = s[i];
		size_t n = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
		if (!n || i + n > len || (c < 0x20 && c != '\n') || c == 0x7f)
			return false;
		for (size_t k = 1; k < n; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
		i += n;
	}
	return true;
}

static bool strict_json_ok(const char *buf, size_t len)
{
	FILE *p;

	if (system("command -v python3 >/dev/null 2>&1") != 0) {
		fprintf(stderr,
			"test_chrome_trace: python3 not found: strict JSON check skipped\n");
		return true;
	}
	p = popen(
	    "python3 -c 'import json,sys; json.loads(sys.stdin.buffer.read().decode(\"utf-8\"))'",
	    "w");
	if (!p)
		return false;
	fwrite(buf, 1, len, p);
	int st = pclose(p);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static const cJSON *get(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *sget(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);

	return cJSON_IsString(v) ? v->valuestring : "(missing)";
}

static double nget(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : -1e300;
}

#define CHECK_US(value, ns) CHECK(fabs((value) - (double)(ns) / 1000.0) < 1e-6)

/* The X event of a tid at a start time, or NULL. */
static const cJSON *complete_event(const cJSON *events, uint32_t tid, uint64_t start_ns)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, events)
	{
		if (!strcmp(sget(e, "ph"), "X") && nget(e, "tid") == tid &&
		    fabs(nget(e, "ts") - (double)start_ns / 1000.0) < 1e-6)
			return e;
	}
	return NULL;
}

static const char *expected_name(uint32_t poll)
{
	static const char *const names[] = {"demo::task", "demo::middle", "demo::leaf",
					    EVIL_DECODED,
					    "<Unknown as core::future::future::Future>::poll"};

	return poll < 5 ? names[poll] : "(unknown poll)";
}

static void test_sample(void)
{
	size_t len = 0;
	int err;
	char *buf = write_to_memory(&totals, &len, &err);

	CHECK_EQ_U64(err, 0);
	CHECK(bytes_clean(buf, len));
	CHECK(strict_json_ok(buf, len));
	/* microseconds with three decimals, exactly */
	CHECK(strstr(buf, "\"ts\":1.100,\"dur\":0.100,") != NULL);
	CHECK(strstr(buf, "\"ts\":1234.567,\"dur\":0.001,") != NULL);

	const char *end = NULL;
	cJSON *root = cJSON_ParseWithOpts(buf, &end, 1);
	CHECK(root != NULL);
	if (!root) {
		fprintf(stderr, "cJSON parse failed near: %.80s\n", end ? end : "?");
		free(buf);
		return;
	}
	CHECK_STR(sget(root, "displayTimeUnit"), "ns");
	const cJSON *other = get(root, "otherData");
	CHECK_EQ_U64(nget(other, "polls"), NR_POLLS);
	CHECK_EQ_U64(nget(other, "dropped"), 7);
	CHECK_EQ_U64(nget(other, "truncated"), 1);
	CHECK_EQ_U64(nget(other, "probes_attached"), 12);
	CHECK_EQ_U64(nget(other, "probes_failed"), 1);
	CHECK_EQ_U64(nget(other, "duration_ns"), 5000000000ULL);
	CHECK(cJSON_IsFalse(get(other, "lossless")));

	const cJSON *events = get(root, "traceEvents"), *e;
	int nr_x = 0, nr_s = 0, nr_f = 0, nr_m = 0;
	bool process_named = false, thread_named = false, evil_thread = false;
	cJSON_ArrayForEach(e, events)
	{
		const char *ph = sget(e, "ph");
		CHECK(cJSON_IsNumber(get(e, "pid")) && cJSON_IsNumber(get(e, "tid")));
		if (!strcmp(ph, "X")) {
			nr_x++;
			CHECK(nget(e, "dur") >= 0);
			CHECK_STR(sget(e, "cat"), "poll");
		} else if (!strcmp(ph, "M")) {
			nr_m++;
			const char *n = sget(get(e, "args"), "name");
			process_named |= !strcmp(sget(e, "name"), "process_name") &&
					 !strcmp(n, "demo-proc \"x\"");
			thread_named |= !strcmp(sget(e, "name"), "thread_name") &&
					nget(e, "tid") == 100 && !strcmp(n, "worker-1");
			evil_thread |= nget(e, "tid") == 101 && !strcmp(n, EVIL_DECODED);
		} else if (!strcmp(ph, "s")) {
			nr_s++;
		} else if (!strcmp(ph, "f")) {
			nr_f++;
			CHECK_STR(sget(e, "bp"), "e");
		}
	}
	CHECK_EQ_U64(nr_x, NR_POLLS);
	CHECK_EQ_U64(nr_m, 3);
	CHECK(process_named && thread_named && evil_thread);
	CHECK_EQ_U64(nr_s, NR_LINKS);
	CHECK_EQ_U64(nr_f, NR_LINKS);

	/* every poll as given */
	for (size_t i = 0; i < NR_POLLS; i++) {
		const struct trace_poll *p = &polls[i];
		const cJSON *x = complete_event(events, p->tid, p->start_ns);
		CHECK(x != NULL);
		if (!x)
			continue;
		CHECK_STR(sget(x, "name"), expected_name(p->poll));
		CHECK_EQ_U64(nget(x, "pid"), PID);
		CHECK_US(nget(x, "dur"), p->end_ns > p->start_ns ? p->end_ns - p->start_ns : 0);
		const cJSON *args = get(x, "args");
		char self[32];
		snprintf(self, sizeof(self), "0x%lx", (unsigned long)p->self);
		CHECK_STR(sget(args, "self"), self);
		CHECK_EQ_U64(nget(args, "depth"), p->depth);
	}

	/* arguments of the first leaf poll, and of the others that have something to say */
	const cJSON *args = get(complete_event(events, 100, 1100), "args");
	CHECK_STR(sget(args, "future"), "demo::leaf::{async_fn_env#0}");
	CHECK_STR(sget(args, "result"), "pending");
	CHECK_STR(sget(args, "await"), MAIN_RS ":32");
	CHECK_STR(sget(args, "task"), "0xa000");
	CHECK_STR(sget(args, "state_before"), "Unresumed (0)");
	CHECK_STR(sget(args, "state_after"), "Suspend0 (3)");
	CHECK_STR(sget(get(complete_event(events, 100, 3000), "args"), "result"), "panicked");
	CHECK_STR(sget(get(complete_event(events, 100, 3050), "args"), "result"), "truncated");
	args = get(complete_event(events, 102, 1234567), "args");
	CHECK_STR(sget(args, "result"), "unknown");
	CHECK_STR(sget(args, "future"), "<Unknown as core::future::future::Future>::poll");
	CHECK(get(args, "state_before") == NULL && get(args, "await") == NULL);
	CHECK_STR(sget(get(complete_event(events, 102, 2000000), "args"), "future"), EVIL_DECODED);

	/* flows: each "s" at the previous poll's start on its thread, its "f" at the next */
	static const struct {
		uint32_t from_tid, to_tid;
		uint64_t from, to;
	} links[NR_LINKS] = {
	    {100, 101, 1100, 2100}, {100, 101, 1050, 2050}, {100, 101, 1000, 2000},
	    {101, 100, 2050, 3050}, {101, 100, 2000, 3000},
	};
	for (int k = 0; k < NR_LINKS; k++) {
		const cJSON *s = NULL, *f = NULL;
		cJSON_ArrayForEach(e, events)
		{
			if (!strcmp(sget(e, "ph"), "s") && nget(e, "tid") == links[k].from_tid &&
			    fabs(nget(e, "ts") - (double)links[k].from / 1000.0) < 1e-6)
				s = e;
		}
		CHECK(s != NULL);
		cJSON_ArrayForEach(e, events)
		{
			if (s && !strcmp(sget(e, "ph"), "f") && nget(e, "id") == nget(s, "id"))
				f = e;
		}
		CHECK(f != NULL);
		if (!s || !f)
			continue;
		CHECK_EQ_U64(nget(f, "tid"), links[k].to_tid);
		CHECK_US(nget(f, "ts"), links[k].to);
		CHECK_STR(sget(s, "name"), sget(f, "name"));
		CHECK_STR(sget(s, "cat"), sget(f, "cat"));
		CHECK(nget(s, "id") < 9007199254740992.0); /* exact in a double */
	}

	/* the totals instant, named for the drops */
	const cJSON *last = cJSON_GetArrayItem(events, cJSON_GetArraySize(events) - 1);
	CHECK_STR(sget(last, "ph"), "i");
	CHECK_STR(sget(last, "name"), "asyncbpf: 7 records DROPPED");
	CHECK_EQ_U64(nget(get(last, "args"), "dropped"), 7);
	cJSON_Delete(root);
	free(buf);
}

static void test_no_drops_no_polls(void)
{
	struct model m;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = must(open_memstream(&buf, &len));

	build_model(&m);
	struct chrome_trace *w = must(chrome_trace__new(f, &m, PID, NULL));
	CHECK_EQ_U64(chrome_trace__finish(w, NULL), 0);
	chrome_trace__free(w);
	fclose(f);
	cJSON *root = cJSON_Parse(buf);
	CHECK(root != NULL);
	const cJSON *events = get(root, "traceEvents");
	CHECK_EQ_U64(cJSON_GetArraySize(events), 1);
	CHECK_STR(sget(cJSON_GetArrayItem(events, 0), "name"), "asyncbpf totals");
	CHECK(cJSON_IsTrue(get(get(root, "otherData"), "lossless")));
	cJSON_Delete(root);
	free(buf);
	model__free(&m);
	chrome_trace__free(NULL);
}

static void test_write_error(void)
{
	FILE *f = fopen("/dev/full", "w");

	if (!f) {
		fprintf(stderr, "test_chrome_trace: no /dev/full: write-error check skipped\n");
		return;
	}
	CHECK_EQ_I64(write_sample(f, &totals), -EIO);
	fclose(f);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write") == 0) {
		FILE *f = fopen(argv[2], "w");
		if (!f) {
			perror(argv[2]);
			return 2;
		}
		int err = write_sample(f, &totals);
		if (fclose(f) || err) {
			fprintf(stderr, "test_chrome_trace: writing %s failed: %s\n", argv[2],
				strerror(err ? -err : errno));
			return 1;
		}
		return 0;
	}
	test_sample();
	test_no_drops_no_polls();
	test_write_error();
	TEST_MAIN_END();
}
