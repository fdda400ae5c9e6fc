// SPDX-License-Identifier: GPL-2.0
/*
 * The trace summary (user/trace_summary*.c, trace_instances.c, trace_tasks.c) on
 * hand-made polls over the shared task/middle/leaf model: lifetimes (address reuse,
 * an instance found Unresumed again, the same address under two poll fns), futures
 * pending at the end grouped by await point with the state's file:line, tasks'
 * busy/idle arithmetic, percentiles from the BPF histogram when records were
 * dropped, the caps, the (poll, self) map's deletion, the text and the JSON.
 * Every expected number is worked out by hand in the comments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "model/model.h"
#include "testlib.h"
#include "trace_model.h"
#include "trace/trace_summary.h"

#define MAIN_RS "/src/demo/src/main.rs"
#define NOP	TRACE_NO_INDEX

/* futures 0 task (line 10), 1 middle (20), 2 leaf (30): Suspend0 at line+2, Suspend1 at
 * line+4; 3 hand-written (no __state); poll 4 has no future */
static void add_future(struct model *m, const char *path, uint32_t line0)
{
	struct future *f = must(model__add_future(m));
	struct future_state *s;

	f->path = path;
	f->crate = "demo";
	f->kind = FUTURE_ASYNC_FN;
	f->poll = -1;
	if (!line0) {
		f->kind = FUTURE_HANDWRITTEN;
		f->file = MAIN_RS;
		f->line = 77;
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
	trace_model__build(m, "demo::Hand", "<Unknown as Future>::poll", add_future);
}

/* A poll of future `poll` (poll fn i polls future i; 4 has none) at `self`, depth 0 of
 * its own task unless set otherwise. */
static struct trace_poll mk(uint32_t poll, uint64_t self, uint64_t start, uint64_t end,
			    enum poll_result r, int32_t await_index, uint64_t state_before)
{
	struct trace_poll p = {
	    .start_ns = start,
	    .end_ns = end,
	    .pid = 1,
	    .tid = 1,
	    .poll = poll,
	    .future = poll < 4 ? poll : NOP,
	    .self = self,
	    .parent_poll = NOP,
	    .task_self = self,
	    .task_poll = poll,
	    .result = r,
	    .await_index = r == POLL_PENDING ? await_index : -1,
	    .state_before = state_before,
	};
	return p;
}

/* The same poll as a child at `depth` of task (task_poll, task_self). */
static struct trace_poll under(struct trace_poll p, uint32_t task_poll, uint64_t task_self,
			       uint16_t depth)
{
	p.task_poll = task_poll;
	p.task_self = task_self;
	p.depth = depth;
	p.parent_poll = task_poll;
	p.parent_self = task_self;
	return p;
}

static const struct summary_row *row_of(const struct summary_row *r, uint32_t nr, uint32_t poll)
{
	for (uint32_t i = 0; i < nr; i++)
		if (r[i].poll == poll)
			return &r[i];
	return NULL;
}

static char *print_text(struct trace_summary *s, const struct trace_run_totals *t)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = must(open_memstream(&buf, &len));

	trace_summary__print(s, t, out);
	fclose(out);
	return buf;
}

static cJSON *write_json(struct trace_summary *s, const struct trace_run_totals *t)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = must(open_memstream(&buf, &len));
	cJSON *doc;

	CHECK_EQ_I64(trace_summary__write_json(s, t, out), 0);
	fclose(out);
	doc = cJSON_Parse(buf);
	CHECK(doc != NULL);
	free(buf);
	return doc;
}

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v)) {
		fprintf(stderr, "JSON: no number %s\n", key);
		return -1;
	}
	return v->valuedouble;
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const cJSON *json_future(const cJSON *doc, uint32_t poll)
{
	const cJSON *f;

	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(
				  doc, "futures")) if (num(f, "poll") == poll) return f;
	return NULL;
}

/*
 * leaf (poll 2) at 0xc000: Pending [10,20], Ready [30,35]: lifetime 35 - 10 = 25; the
 * address again: Pending [40,42], Ready [50,60]: a new lifetime, 20. Another leaf at
 * 0xc100: Ready at once [0,5]: 5. Sorted 5, 20, 25: p50 = rank ceil(1.5) = 2 -> 20,
 * p99 = rank ceil(2.97) = 3 -> 25.
 * middle (poll 1) at 0xb000: Pending from Unresumed (0 -> Suspend0), then polled with
 * __state Unresumed again: the first was dropped (abandoned 1), a new instance that
 * goes Ready [100,130]: lifetime 30 from the second first poll at 100.
 * task (poll 0) at 0xb000 too (a future at offset 0 of another): its own instance,
 * Ready [70,90] -> 20, never merged with middle's.
 * middle at 0xb200: truncated [200,201] (an unwind), then Unresumed there again: a new
 * instance (not counted abandoned: it was not pending), Ready [210,215]: 5. middle's
 * lifetimes 5, 30: p50 = rank 1 -> 5, max 30.
 * leaf at 0xc200 first seen in Suspend0 (started before tracing did): its Ready ends no
 * lifetime, it is counted in started_before.
 */
static void test_lifetimes(void)
{
	struct model m;
	struct trace_summary s;
	const struct trace_poll polls[] = {
	    mk(2, 0xc000, 10, 20, POLL_PENDING, 0, 0),
	    mk(2, 0xc000, 30, 35, POLL_READY, -1, 3),
	    mk(2, 0xc000, 40, 42, POLL_PENDING, 1, 0),
	    mk(2, 0xc000, 50, 60, POLL_READY, -1, 4),
	    mk(2, 0xc100, 0, 5, POLL_READY, -1, 0),
	    mk(1, 0xb000, 1, 2, POLL_PENDING, 0, 0),
	    mk(0, 0xb000, 70, 90, POLL_READY, -1, 0),
	    mk(1, 0xb000, 100, 110, POLL_PENDING, 0, 0),
	    mk(1, 0xb000, 120, 130, POLL_READY, -1, 3),
	    mk(1, 0xb200, 200, 201, POLL_TRUNCATED, -1, 0),
	    mk(1, 0xb200, 210, 215, POLL_READY, -1, 0),
	    mk(2, 0xc200, 300, 301, POLL_READY, -1, 3),
	};
	struct summary_row *r;
	const struct summary_row *leaf, *middle, *task;
	uint32_t nr;

	build_model(&m);
	CHECK_EQ_I64(trace_summary__init(&s, &m), 0);
	for (size_t i = 0; i < sizeof(polls) / sizeof(polls[0]); i++)
		trace_summary__add(&s, &polls[i]);
	r = must(trace_summary__rows(&s, &nr));
	CHECK_EQ_U64(nr, 3);
	leaf = row_of(r, nr, 2);
	middle = row_of(r, nr, 1);
	task = row_of(r, nr, 0);
	CHECK(leaf && middle && task);
	if (leaf && middle && task) {
		CHECK_EQ_U64(s.polls[2].lifetimes.nr, 3);
		CHECK_EQ_U64(s.polls[2].started_before, 1);
		CHECK_EQ_U64(s.polls[1].started_before, 0);
		CHECK_EQ_U64(leaf->life_p50, 20);
		CHECK_EQ_U64(leaf->life_p99, 25);
		CHECK_EQ_U64(leaf->life_max, 25);
		CHECK_EQ_U64(s.polls[1].lifetimes.nr, 2);
		CHECK_EQ_U64(middle->life_p50, 5);
		CHECK_EQ_U64(middle->life_max, 30);
		CHECK_EQ_U64(s.polls[1].abandoned, 1);
		CHECK_EQ_U64(s.polls[0].lifetimes.nr, 1);
		CHECK_EQ_U64(task->life_p50, 20);
		/* durations: leaf 10, 5, 2, 10, 5, 1 -> sorted 1 2 5 5 10 10: p50 rank 3 -> 5 */
		CHECK_EQ_U64(leaf->p50, 5);
		CHECK_EQ_U64(leaf->max, 10);
		CHECK(!leaf->from_histogram);
	}
	/* everything ended Ready: nothing live */
	CHECK_EQ_U64(s.instances.nr, 0);
	free(r);
	trace_summary__free(&s);
	model__free(&m);
}

/*
 * Live at the end: 3 middles pending at await #0 (line 22), 1 at await #1 (24), a leaf
 * running at stop after resuming from await #0 (line 32), a leaf running in its first
 * poll, a hand-written future pending (no await point, declared at 77), a
 * middle whose last poll was truncated, an unknown future with unknown results, and a
 * middle that was pending but then went Ready (not listed).
 */
static void test_pending_at_end(void)
{
	struct model m;
	struct trace_summary s;
	const struct trace_poll polls[] = {
	    mk(1, 0x100, 0, 1, POLL_PENDING, 0, 0),  mk(1, 0x200, 0, 1, POLL_PENDING, 1, 0),
	    mk(1, 0x200, 2, 3, POLL_PENDING, 0, 4),  mk(1, 0x300, 0, 1, POLL_PENDING, 0, 0),
	    mk(1, 0x400, 0, 1, POLL_PENDING, 1, 0),  mk(2, 0x500, 0, 9, POLL_PENDING, 0, 0),
	    mk(2, 0x500, 10, 20, POLL_OPEN, -1, 3),  mk(2, 0x510, 15, 20, POLL_OPEN, -1, 0),
	    mk(3, 0x600, 0, 1, POLL_PENDING, -1, 0), mk(1, 0x700, 0, 1, POLL_TRUNCATED, -1, 0),
	    mk(4, 0x800, 0, 1, POLL_UNKNOWN, -1, 0), mk(1, 0x900, 0, 1, POLL_PENDING, 0, 0),
	    mk(1, 0x900, 5, 6, POLL_READY, -1, 3),
	};
	struct trace_run_totals t = {0};
	struct pending_report rep;
	char *text;
	cJSON *doc, *pending, *groups;
	int failed_before = testlib_failed;

	build_model(&m);
	CHECK_EQ_I64(trace_summary__init(&s, &m), 0);
	for (size_t i = 0; i < sizeof(polls) / sizeof(polls[0]); i++)
		trace_summary__add(&s, &polls[i]);
	CHECK_EQ_I64(instance_table__pending(&s.instances, &rep), 0);
	CHECK_EQ_U64(rep.pending, 5); /* 0x100 0x200 0x300 0x400 0x600 */
	CHECK_EQ_U64(rep.running, 2);
	CHECK_EQ_U64(rep.truncated, 1);
	CHECK_EQ_U64(rep.unknown, 1);
	CHECK_EQ_U64(rep.nr, 5);
	if (rep.nr == 5) {
		/* most numerous first, then by poll, result, await */
		CHECK_EQ_U64(rep.groups[0].poll, 1);
		CHECK_EQ_I64(rep.groups[0].await_index, 0);
		CHECK_EQ_U64(rep.groups[0].count, 3);
		CHECK_EQ_U64(rep.groups[1].poll, 1);
		CHECK_EQ_I64(rep.groups[1].await_index, 1);
		CHECK_EQ_U64(rep.groups[1].count, 1);
		CHECK_EQ_U64(rep.groups[2].poll, 2);
		CHECK_EQ_U64(rep.groups[2].result, POLL_OPEN);
		CHECK_EQ_I64(rep.groups[2].await_index, -1);
		CHECK_EQ_U64(rep.groups[3].poll, 2);
		CHECK_EQ_U64(rep.groups[3].result, POLL_OPEN);
		CHECK_EQ_I64(rep.groups[3].await_index, 0);
		CHECK_EQ_U64(rep.groups[4].poll, 3);
		CHECK_EQ_I64(rep.groups[4].await_index, -1);
	}
	pending_report__free(&rep);

	text = print_text(&s, &t);
	CHECK(strstr(text, "3 \u00d7 demo::middle pending at " MAIN_RS ":22 (await #0)") != NULL);
	CHECK(strstr(text, "1 \u00d7 demo::middle pending at " MAIN_RS ":24 (await #1)") != NULL);
	CHECK(strstr(text, "1 \u00d7 demo::leaf running when tracing stopped\n") != NULL);
	CHECK(strstr(text, "1 \u00d7 demo::leaf running when tracing stopped (resumed from " MAIN_RS
			   ":32, await #0)\n") != NULL);
	CHECK(strstr(text, "demo::Hand pending (no await point; declared at " MAIN_RS ":77)") !=
	      NULL);
	CHECK(strstr(text, "1 whose last poll was truncated, 1 whose last result is unknown") !=
	      NULL);
	CHECK(strstr(text, "running at stop 2,") != NULL);
	if (testlib_failed != failed_before)
		fprintf(stderr, "the text summary was:\n%s", text);
	free(text);

	doc = write_json(&s, &t);
	pending = cJSON_GetObjectItemCaseSensitive(doc, "pending_at_end");
	groups = cJSON_GetObjectItemCaseSensitive(pending, "groups");
	CHECK_EQ_U64(num(pending, "pending"), 5);
	CHECK_EQ_U64(num(pending, "running"), 2);
	CHECK_EQ_U64(cJSON_GetArraySize(groups), 5);
	CHECK_STR(str(cJSON_GetArrayItem(groups, 0), "file"), MAIN_RS);
	CHECK_EQ_U64(num(cJSON_GetArrayItem(groups, 0), "line"), 22);
	CHECK_EQ_U64(num(cJSON_GetArrayItem(groups, 0), "await_index"), 0);
	CHECK_STR(str(cJSON_GetArrayItem(groups, 2), "state"), "running");
	CHECK(
	    cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(groups, 2), "file")));
	CHECK(cJSON_IsNull(
	    cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(groups, 2), "await_index")));
	CHECK_STR(str(cJSON_GetArrayItem(groups, 3), "state"), "running");
	CHECK_EQ_U64(num(cJSON_GetArrayItem(groups, 3), "line"), 32);
	CHECK_EQ_U64(num(cJSON_GetArrayItem(groups, 3), "await_index"), 0);
	CHECK_EQ_U64(num(json_future(doc, 2), "running"), 2);
	CHECK_EQ_U64(num(cJSON_GetObjectItemCaseSensitive(doc, "totals"), "running_at_stop"), 2);
	cJSON_Delete(doc);
	trace_summary__free(&s);
	model__free(&m);
}

/*
 * Task A (poll 0 at 0xa000): children first as a thread hands them over.
 *   middle [5,45] depth 1, own [0,100] Pending; leaf [205,206] depth 2, middle [204,210]
 *   depth 1, own [200,220] Ready. own polls 2, all 5, busy 100 + 20 = 120, span 220,
 *   idle 100, completed.
 * Then 0xa000 again (a new task after Ready): own [300,310] Pending: busy 10, idle 0,
 *   not completed.
 * Task B (poll 1 at 0xb000, a middle polled at depth 0): own [50,60] Pending and
 *   [400,430] Pending: busy 40, span 380, idle 340.
 * Task C: only a child arrived (its depth-0 record was lost): no span, idle 0.
 */
static void test_tasks(void)
{
	struct model m;
	struct trace_summary s;
	const struct trace_poll polls[] = {
	    under(mk(1, 0xb100, 5, 45, POLL_PENDING, 0, 0), 0, 0xa000, 1),
	    mk(0, 0xa000, 0, 100, POLL_PENDING, 0, 0),
	    mk(1, 0xb000, 50, 60, POLL_PENDING, 0, 0),
	    under(mk(2, 0xc100, 205, 206, POLL_READY, -1, 0), 0, 0xa000, 2),
	    under(mk(1, 0xb100, 204, 210, POLL_READY, -1, 3), 0, 0xa000, 1),
	    mk(0, 0xa000, 200, 220, POLL_READY, -1, 3),
	    mk(0, 0xa000, 300, 310, POLL_PENDING, 0, 0),
	    mk(1, 0xb000, 400, 430, POLL_PENDING, 0, 3),
	    under(mk(2, 0xc900, 500, 501, POLL_PENDING, 0, 0), 0, 0xd000, 1),
	};
	const struct task_summary *a1, *a2, *b, *c;
	struct task_summary *list = NULL;
	struct task_type_row *rows;
	struct trace_run_totals t = {0};
	uint32_t nr = 0;
	cJSON *doc, *tasks, *first;

	build_model(&m);
	CHECK_EQ_I64(trace_summary__init(&s, &m), 0);
	for (size_t i = 0; i < sizeof(polls) / sizeof(polls[0]); i++)
		trace_summary__add(&s, &polls[i]);
	CHECK_EQ_U64(s.tasks.count, 4);
	list = task_table__list(&s.tasks, &nr);
	CHECK_EQ_U64(nr, 4);
	if (nr != 4)
		goto out;
	/* busiest first */
	a1 = &list[0];
	b = &list[1];
	a2 = &list[2];
	c = &list[3];
	CHECK_EQ_U64(a1->self, 0xa000);
	CHECK_EQ_U64(a1->own_polls, 2);
	CHECK_EQ_U64(a1->all_polls, 5);
	CHECK_EQ_U64(a1->busy_ns, 120);
	CHECK_EQ_U64(task_summary__idle(a1), 100);
	CHECK_EQ_U64(a1->first_start_ns, 0);
	CHECK_EQ_U64(a1->last_end_ns, 220);
	CHECK(a1->completed);
	CHECK_EQ_U64(b->self, 0xb000);
	CHECK_EQ_U64(b->busy_ns, 40);
	CHECK_EQ_U64(task_summary__idle(b), 340);
	CHECK(!b->completed);
	CHECK_EQ_U64(a2->self, 0xa000);
	CHECK_EQ_U64(a2->own_polls, 1);
	CHECK_EQ_U64(a2->busy_ns, 10);
	CHECK_EQ_U64(task_summary__idle(a2), 0);
	CHECK(!a2->completed);
	CHECK_EQ_U64(c->own_polls, 0);
	CHECK_EQ_U64(c->all_polls, 1);
	CHECK_EQ_U64(task_summary__idle(c), 0);
	CHECK_EQ_U64(c->first_seen_ns, 500);
	/* by root future: poll 0 (A twice: 130 busy), poll 1 (B: 40), poll 2... C's root
	 * is poll 0 too (0xd000): 3 tasks of poll 0 */
	rows = task_table__types(&s.tasks, &nr);
	CHECK_EQ_U64(nr, 2);
	if (nr == 2) {
		CHECK_EQ_U64(rows[0].poll, 0);
		CHECK_EQ_U64(rows[0].tasks, 3);
		CHECK_EQ_U64(rows[0].completed, 1);
		CHECK_EQ_U64(rows[0].busy_ns, 130);
		CHECK_EQ_U64(rows[0].max_busy_ns, 120);
		CHECK_EQ_U64(rows[1].poll, 1);
		CHECK_EQ_U64(rows[1].tasks, 1);
	}
	free(rows);

	doc = write_json(&s, &t);
	tasks = cJSON_GetObjectItemCaseSensitive(doc, "tasks");
	CHECK_EQ_U64(num(tasks, "count"), 4);
	CHECK_EQ_U64(num(tasks, "completed"), 1);
	first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(tasks, "list"), 0);
	CHECK_STR(str(first, "name"), "demo::task");
	CHECK_EQ_U64(num(first, "busy_ns"), 120);
	CHECK_EQ_U64(num(first, "idle_ns"), 100);
	CHECK_EQ_U64(num(first, "span_ns"), 220);
	CHECK_EQ_U64(num(first, "self"), 0xa000);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(first, "completed")));
	cJSON_Delete(doc);
out:
	free(list);
	trace_summary__free(&s);
	model__free(&m);
}

/*
 * leaf (poll 2): 4 records arrived (durations 100, 200, 300, 400) but the BPF side
 * dropped 96 more: its histogram says 90 polls in [1024, 2048) and 10 in [2^20, 2^21).
 * p50 = rank 50 -> bucket 10 -> upper bound 2048; p99 = rank 99 -> bucket 20 -> 2^21;
 * max: the highest bucket's bound 2^21; busy from BPF (exact).
 * middle (poll 1): nothing dropped: exact percentiles from its records.
 */
static void test_histogram_when_dropped(void)
{
	struct model m;
	struct trace_summary s;
	struct poll_stats stats[5] = {0};
	struct trace_run_totals t = {.totals = {.dropped = 96}};
	struct summary_row *r;
	const struct summary_row *leaf, *middle;
	const cJSON *hist, *f;
	uint32_t nr;
	char *text;
	cJSON *doc;

	build_model(&m);
	CHECK_EQ_I64(trace_summary__init(&s, &m), 0);
	for (uint64_t i = 1; i <= 4; i++) {
		struct trace_poll p =
		    mk(2, 0xc000 + i, 1000 * i, 1000 * i + 100 * i, POLL_READY, -1, 0);

		trace_summary__add(&s, &p);
	}
	for (uint64_t i = 1; i <= 3; i++) {
		struct trace_poll p =
		    mk(1, 0xb000, 10000 * i, 10000 * i + 7 * i, POLL_PENDING, 0, 3);

		trace_summary__add(&s, &p);
	}
	stats[2] =
	    (struct poll_stats){.records = 100, .emitted = 4, .dropped = 96, .busy_ns = 123456};
	stats[2].hist[10] = 90;
	stats[2].hist[20] = 10;
	stats[1] = (struct poll_stats){.records = 3, .emitted = 3, .busy_ns = 42};
	stats[1].hist[2] = 1;
	stats[1].hist[3] = 2;
	CHECK_EQ_I64(trace_summary__set_bpf_stats(&s, stats, 5), 0);
	r = must(trace_summary__rows(&s, &nr));
	leaf = row_of(r, nr, 2);
	middle = row_of(r, nr, 1);
	CHECK(leaf && middle);
	if (leaf && middle) {
		CHECK(leaf->from_histogram);
		CHECK_EQ_U64(leaf->p50, 2048);
		CHECK_EQ_U64(leaf->p99, 1ull << 21);
		CHECK_EQ_U64(leaf->max, 1ull << 21);
		CHECK_EQ_U64(leaf->busy_ns, 123456);
		CHECK_EQ_U64(leaf->dropped, 96);
		CHECK(!middle->from_histogram);
		CHECK_EQ_U64(middle->p50, 14); /* 7 14 21: rank 2 */
		CHECK_EQ_U64(middle->p99, 21);
		CHECK_EQ_U64(middle->busy_ns, 42); /* 7 + 14 + 21 */
	}
	free(r);
	/* the bucket helpers: [0,2), [2,4), ..., the last one open-ended */
	CHECK_EQ_U64(summary__bucket_low(0), 0);
	CHECK_EQ_U64(summary__bucket_high(0), 2);
	CHECK_EQ_U64(summary__bucket_low(10), 1024);
	CHECK_EQ_U64(summary__bucket_high(63), UINT64_MAX);

	text = print_text(&s, &t);
	CHECK(strstr(text, "\u2248") != NULL);
	CHECK(strstr(text, "records DROPPED") != NULL);
	free(text);

	doc = write_json(&s, &t);
	f = json_future(doc, 2);
	CHECK_STR(str(f, "percentiles_from"), "histogram");
	CHECK_EQ_U64(num(f, "p50_ns"), 2048);
	CHECK_EQ_U64(num(f, "dropped"), 96);
	CHECK_EQ_U64(num(f, "bpf_records"), 100);
	hist = cJSON_GetObjectItemCaseSensitive(f, "hist_log2_ns");
	CHECK_EQ_U64(cJSON_GetArraySize(hist), 2);
	CHECK_EQ_U64(cJSON_GetArrayItem(cJSON_GetArrayItem(hist, 0), 0)->valuedouble, 1024);
	CHECK_EQ_U64(cJSON_GetArrayItem(cJSON_GetArrayItem(hist, 0), 1)->valuedouble, 90);
	CHECK_EQ_U64(cJSON_GetArrayItem(cJSON_GetArrayItem(hist, 1), 0)->valuedouble, 1 << 20);
	f = json_future(doc, 1);
	CHECK_STR(str(f, "percentiles_from"), "records");
	CHECK_EQ_U64(num(f, "p99_ns"), 21);
	CHECK_EQ_U64(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(f, "hist_log2_ns")), 2);
	CHECK_STR(str(doc, "schema"), "asyncbpf-trace-summary/2");
	cJSON_Delete(doc);
	trace_summary__free(&s);
	model__free(&m);
}

/*
 * Caps of 2 live instances and 1 task: three pending middles (tasks of their own):
 * the third instance's 2 polls are not tracked; only the first task is kept, the
 * others' 3 polls are counted, and the second task's Ready end counts one untracked
 * task. An instance that ends frees its place: a fourth, after the first went Ready,
 * is tracked.
 */
static void test_caps(void)
{
	struct model m;
	struct trace_summary s;
	const struct trace_poll polls[] = {
	    mk(1, 0x100, 0, 1, POLL_PENDING, 0, 0), mk(1, 0x200, 0, 1, POLL_PENDING, 0, 0),
	    mk(1, 0x300, 0, 1, POLL_PENDING, 0, 0), mk(1, 0x300, 2, 3, POLL_PENDING, 0, 3),
	    mk(1, 0x100, 4, 5, POLL_READY, -1, 3),  mk(1, 0x400, 6, 7, POLL_PENDING, 0, 0),
	};
	struct trace_poll last = mk(1, 0x200, 8, 9, POLL_READY, -1, 3);
	struct trace_run_totals t = {0};
	char *text;

	build_model(&m);
	CHECK_EQ_I64(trace_summary__init(&s, &m), 0);
	trace_summary__set_caps(&s, 2, 1);
	for (size_t i = 0; i < sizeof(polls) / sizeof(polls[0]); i++)
		trace_summary__add(&s, &polls[i]);
	trace_summary__add(&s, &last);
	CHECK_EQ_U64(s.instances.untracked_polls, 2);
	CHECK_EQ_U64(s.instances.nr, 1);	  /* 0x400 (0x100 and 0x200 went Ready) */
	CHECK_EQ_U64(s.polls[1].lifetimes.nr, 2); /* 0x100: 0 -> 5, 0x200: 0 -> 9 */
	/* a live cap of 1: 0x100 live until its Ready, then 0x400; 0x200 and 0x300 (twice)
	 * came while one was live, and 0x200's Ready while 0x400 was */
	CHECK_EQ_U64(s.tasks.count, 2);
	CHECK_EQ_U64(s.tasks.nr_live, 1);
	CHECK_EQ_U64(s.tasks.untracked_polls, 4);
	CHECK_EQ_U64(s.tasks.untracked_tasks, 1);
	text = print_text(&s, &t);
	CHECK(strstr(text, "WARNING: 2 polls of future instances past the cap of 2") != NULL);
	CHECK(strstr(text, "WARNING: 4 polls of tasks past the cap of 1 live tasks (1 such tasks "
			   "ended)") != NULL);
	CHECK(strstr(text, "untracked polls 6,") != NULL);
	free(text);
	trace_summary__free(&s);
	model__free(&m);
}

/*
 * Task roots: poll 0 is a task's root future, poll 1 is not (a per-request future
 * whose parent is not traced): its depth-0 polls are futures within a task, counted
 * apart, never tasks. And a run of many short tasks keeps only the busiest (keep 2),
 * while the counts and the rows by root future cover every one.
 */
static void test_task_roots(void)
{
	struct model m;
	struct trace_summary s;
	const uint8_t roots[8] = {1, 0, 0, 0, 0, 0, 0, 0};
	struct task_summary *list;
	struct task_type_row *rows;
	uint32_t nr = 0, nr_rows = 0;

	build_model(&m);
	CHECK(m.nr_polls <= sizeof(roots));
	CHECK_EQ_I64(trace_summary__init(&s, &m), 0);
	task_table__free(&s.tasks);
	task_table__init(&s.tasks, 1000, 2);
	CHECK_EQ_I64(trace_summary__set_task_roots(&s, roots), 0);
	for (uint64_t i = 0; i < 5; i++) { /* tasks busy 10, 20, 30, 40, 50 */
		struct trace_poll p =
		    mk(0, 0x1000 + i * 0x100, i * 100, i * 100 + 10 * (i + 1), POLL_READY, -1, 3);
		trace_summary__add(&s, &p);
	}
	for (uint64_t i = 0; i < 3; i++) { /* three requests outside any traced task */
		struct trace_poll p =
		    mk(1, 0x9000, 1000 + i * 10, 1005 + i * 10, POLL_READY, -1, 3);
		trace_summary__add(&s, &p);
	}
	CHECK_EQ_U64(s.tasks.count, 5);
	CHECK_EQ_U64(s.tasks.completed, 5);
	CHECK_EQ_U64(s.tasks.outside_polls, 3);
	CHECK_EQ_U64(s.tasks.outside_ns, 15);
	CHECK_EQ_U64(task_table__busy_ns(&s.tasks), 150);
	list = task_table__list(&s.tasks, &nr);
	CHECK_EQ_U64(nr, 2);
	if (nr == 2) {
		CHECK_EQ_U64(list[0].busy_ns, 50);
		CHECK_EQ_U64(list[1].busy_ns, 40);
	}
	rows = task_table__types(&s.tasks, &nr_rows);
	CHECK_EQ_U64(nr_rows, 1);
	if (nr_rows == 1) {
		CHECK_EQ_U64(rows[0].poll, 0);
		CHECK_EQ_U64(rows[0].tasks, 5);
		CHECK_EQ_U64(rows[0].busy_ns, 150);
		CHECK_EQ_U64(rows[0].max_busy_ns, 50);
	}
	free(rows);
	free(list);
	trace_summary__free(&s);
	model__free(&m);
}

/* A task poll of task mode with at most one future event. */
static struct task_poll tpoll(uint64_t header, int32_t root, bool completed, int32_t future,
			      int32_t await_index)
{
	struct task_poll p = {.header = header,
			      .root = root,
			      .completed = completed,
			      .start_ns = 100,
			      .end_ns = 200,
			      .info = 0};

	if (future >= 0) {
		p.nr_events = 1;
		p.events[0] = (struct task_future_event){
		    .future = future,
		    .fate = await_index >= 0 ? TASK_FUTURE_PENDING : TASK_FUTURE_READY,
		    .await_index = await_index};
	}
	return p;
}

/*
 * Task mode's per task type rows: a task counted once while its header lives; one seen
 * only in the poll it finished in is a task too; a header live under another root is
 * a new task in a dead one's memory; completed never more than tasks on any row. And
 * where each future was parked, per await.
 */
static void test_task_mode_tasks(void)
{
	struct model m;
	struct trace_summary s;
	struct task_poll p;

	build_model(&m);
	CHECK_EQ_I64(trace_summary__init(&s, &m), 0);
	p = tpoll(0x1000, 0, false, 1, 0); /* task A (root 0): middle parked at await 0 */
	trace_summary__add_task_poll(&s, &p);
	p = tpoll(0x1000, 0, false, 1, 1); /* again, at await 1 */
	trace_summary__add_task_poll(&s, &p);
	p = tpoll(0x1000, 0, false, 1, 1);
	trace_summary__add_task_poll(&s, &p);
	p = tpoll(0x1000, 0, true, -1, -1); /* A finishes */
	trace_summary__add_task_poll(&s, &p);
	p = tpoll(0x2000, 0, true, -1, -1); /* B: seen only in its last poll */
	trace_summary__add_task_poll(&s, &p);
	p = tpoll(0x3000, 0, false, -1, -1); /* C (root 0) never seen again: dropped */
	trace_summary__add_task_poll(&s, &p);
	p = tpoll(0x3000, 2, false, -1, -1); /* D (root 2) in C's memory */
	trace_summary__add_task_poll(&s, &p);
	p = tpoll(0x3000, 2, true, -1, -1); /* D finishes */
	trace_summary__add_task_poll(&s, &p);
	p = tpoll(0x3000, 2, true, -1, -1); /* D polled after its end: no new task */
	p.finished = true;
	trace_summary__add_task_poll(&s, &p);
	p = tpoll(0x4000, 2, false, -1, -1); /* E (root 2) parked, then aborted */
	trace_summary__add_task_poll(&s, &p);
	p = tpoll(0x4000, 2, true, -1, -1);
	p.cancelled = true;
	trace_summary__add_task_poll(&s, &p);
	CHECK(s.tm != NULL);
	if (s.tm) {
		CHECK_EQ_U64(s.tm->roots[0].tasks, 3); /* A, B, C */
		CHECK_EQ_U64(s.tm->roots[0].completed, 2);
		CHECK_EQ_U64(s.tm->roots[0].cancelled, 0);
		CHECK_EQ_U64(s.tm->roots[2].tasks, 2); /* D, E */
		CHECK_EQ_U64(s.tm->roots[2].completed, 2);
		CHECK_EQ_U64(s.tm->roots[2].cancelled, 1);
		CHECK_EQ_U64(s.tm->roots[2].polls, 4); /* not the finished one */
		CHECK_EQ_U64(s.tm->finished_polls, 1);
		CHECK_EQ_U64(s.tm->futures[1].pending, 3);
		CHECK_EQ_U64(s.tm->futures[1].nr_parked, 2);
		if (s.tm->futures[1].nr_parked == 2) {
			CHECK_EQ_U64(s.tm->futures[1].parked[0], 1);
			CHECK_EQ_U64(s.tm->futures[1].parked[1], 2);
		}
	}
	trace_summary__free(&s);
	model__free(&m);
}

/* The (poll, self) map: set, overwrite, delete in an order that breaks clusters. */
static void test_key_map(void)
{
	struct key_map km;
	uint64_t v;
	int bad = 0;
	enum { N = 20000 };

	key_map__init(&km);
	CHECK(!key_map__get(&km, 1, 1, &v));
	for (uint64_t i = 0; i < N; i++)
		bad += key_map__set(&km, (uint32_t)(i % 7), i * 64, i) != 0;
	CHECK_EQ_I64(bad, 0);
	CHECK_EQ_I64(key_map__set(&km, 3, 3 * 64, 999), 0); /* overwrite */
	CHECK_EQ_U64(km.nr_used, N);
	for (uint64_t i = 0; i < N; i += 3)
		key_map__delete(&km, (uint32_t)(i % 7), i * 64);
	key_map__delete(&km, 5, 12345); /* absent */
	for (uint64_t i = 0; i < N; i++) {
		bool found = key_map__get(&km, (uint32_t)(i % 7), i * 64, &v);
		uint64_t want = i == 3 ? 999 : i;

		if (i % 3 == 0 ? found : !found || v != want)
			bad++;
	}
	CHECK_EQ_I64(bad, 0);
	CHECK_EQ_U64(km.nr_used, N - (N + 2) / 3);
	CHECK(!key_map__get(&km, 4, 3 * 64, &v)); /* same self, other poll */
	key_map__free(&km);
}

int main(void)
{
	test_lifetimes();
	test_pending_at_end();
	test_tasks();
	test_task_roots();
	test_task_mode_tasks();
	test_histogram_when_dropped();
	test_caps();
	test_key_map();
	TEST_MAIN_END();
}
