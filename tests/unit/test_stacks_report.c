// SPDX-License-Identifier: GPL-2.0
/*
 * The runtimes' state words (stacks/task_state.c) against the runtimes' own bit
 * layouts, and the report's grouping, --watch comparison and folded lines on a
 * hand-made snapshot.
 */
#include "stacks/report.h"
#include "stacks/task_state.h"

#include "testlib.h"

#define TOKIO_REF (1ull << 6)
#define AT_REF	  (1ull << 8)

static void test_tokio_words(void)
{
	struct task_state s;

	/* spawned, never polled: 3 refs (list, Notified, JoinHandle) | JOIN_INTEREST | NOTIFIED */
	CHECK(task_state__decode(TASK_RT_TOKIO, 3 * TOKIO_REF | 8 | 4, &s));
	CHECK(s.scheduled && s.handle && !s.running && s.refs == 3 && !s.no_waker);
	CHECK(strcmp(task_state__label(&s), "scheduled") == 0);
	/* parked, JoinHandle kept, one waker somewhere: 3 refs */
	CHECK(task_state__decode(TASK_RT_TOKIO, 3 * TOKIO_REF | 8, &s));
	CHECK(!s.no_waker && strcmp(task_state__label(&s), "parked") == 0);
	/* parked, JoinHandle kept, no waker: list + handle only */
	CHECK(task_state__decode(TASK_RT_TOKIO, 2 * TOKIO_REF | 8, &s) && s.no_waker);
	/* parked, JoinHandle dropped, no waker: the list's reference only */
	CHECK(task_state__decode(TASK_RT_TOKIO, 1 * TOKIO_REF, &s) && s.no_waker);
	/* running, complete, cancelled: never "no waker" */
	CHECK(task_state__decode(TASK_RT_TOKIO, 1 * TOKIO_REF | 1, &s) && !s.no_waker && s.running);
	CHECK(task_state__decode(TASK_RT_TOKIO, 1 * TOKIO_REF | 2, &s) && !s.no_waker &&
	      s.complete);
	CHECK(task_state__decode(TASK_RT_TOKIO, 1 * TOKIO_REF | 32, &s) && !s.no_waker);
	CHECK(strcmp(task_state__label(&s), "cancelled") == 0);
	/* freed or reused memory: no reference, or a pointer's worth of them */
	CHECK(!task_state__decode(TASK_RT_TOKIO, 8, &s));
	CHECK(!task_state__decode(TASK_RT_TOKIO, 0x00007f1234567890ull, &s));
	CHECK(!task_state__decode(TASK_RT_DYN, 3 * TOKIO_REF, &s));
}

static void test_async_task_words(void)
{
	struct task_state s;

	/* SCHEDULED | TASK, one reference (the Runnable) */
	CHECK(task_state__decode(TASK_RT_ASYNC_TASK, AT_REF | 1 | 16, &s));
	CHECK(s.scheduled && s.handle && s.refs == 1 && !s.no_waker);
	/* parked with its handle: no claim about wakers (the executor keeps one) */
	CHECK(task_state__decode(TASK_RT_ASYNC_TASK, 16, &s) && !s.no_waker);
	CHECK(strcmp(task_state__label(&s), "parked") == 0);
	CHECK(task_state__decode(TASK_RT_ASYNC_TASK, 4 | 8, &s) && s.complete && s.closed);
	CHECK(!task_state__decode(TASK_RT_ASYNC_TASK, 0x00007f1234567890ull, &s));
}

static struct model m;
static struct future futures[3];
static const char *names[3] = {"app::outer::{async_fn_env#0}", "app::inner::{async_fn_env#0}",
			       "app::Leaf"};

static void task(struct stk_task *t, uint64_t header, int depth, uint64_t word)
{
	memset(t, 0, sizeof(*t));
	t->root.runtime = TASK_RT_TOKIO;
	t->root.header = header;
	t->root.state = word;
	CHECK(task_state__decode(TASK_RT_TOKIO, word, &t->root.st));
	for (int i = 0; i < depth; i++) {
		struct stack_frame *f = &t->stack.frames[t->stack.nr++];

		f->future = i;
		f->addr = header + 0x100 + (uint64_t)i * 0x40;
		f->state = i + 1 < depth ? FRAME_SUSPENDED : FRAME_OPAQUE;
		f->await_index = i + 1 < depth ? 0 : -1;
		f->file = "/src/app/src/main.rs";
		f->line = 10 + (uint32_t)i;
	}
}

static void test_groups(void)
{
	struct stk_snapshot s = {.pid = 42, .paused = true}, next = {.pid = 42, .paused = true};
	char buf[4096];
	FILE *f;

	for (int i = 0; i < 3; i++) {
		futures[i] =
		    (struct future){.path = names[i], .crate = "app", .kind = FUTURE_ASYNC_FN};
	}
	futures[2].kind = FUTURE_HANDWRITTEN;
	m.futures = futures;
	m.nr_futures = 3;

	s.nr = 5;
	s.tasks = must(calloc(s.nr, sizeof(*s.tasks)));
	task(&s.tasks[0], 0x1000, 3, 3 * TOKIO_REF | 8);
	task(&s.tasks[1], 0x2000, 2, 3 * TOKIO_REF | 8);
	task(&s.tasks[2], 0x3000, 3, 3 * TOKIO_REF | 8);
	task(&s.tasks[3], 0x4000, 3, 2 * TOKIO_REF | 8); /* same stack, but no waker */
	task(&s.tasks[4], 0x5000, 3, 3 * TOKIO_REF | 8);
	CHECK(!stk_snapshot__group(&s, &m, NULL, 0));
	CHECK(s.shown == 5 && s.nr_groups == 3 && s.per_runtime[TASK_RT_TOKIO] == 5);
	CHECK(s.groups[0].count == 3 && s.groups[0].first == 0); /* biggest first */
	CHECK(s.tasks[2].group == 0 && s.tasks[4].group == 0 && s.tasks[3].group != 0);

	f = fmemopen(buf, sizeof(buf), "w");
	CHECK(f && !stk_report__folded(f, &s, &m));
	fclose(f);
	CHECK(strstr(buf, "tokio 1.x;app::outer (src/main.rs:10);app::inner (src/main.rs:11);"
			  "app::Leaf 3\n") != NULL);
	CHECK(strstr(buf, ";app::Leaf;[no waker] 1\n") != NULL);

	/* the next snapshot: task 0x1000 moved on, the others did not */
	next.nr = 5;
	next.tasks = must(calloc(next.nr, sizeof(*next.tasks)));
	for (int i = 0; i < 5; i++)
		next.tasks[i] = s.tasks[i];
	task(&next.tasks[0], 0x1000, 2, 3 * TOKIO_REF | 8);
	CHECK(!stk_snapshot__group(&next, &m, NULL, 0));
	stk_snapshot__compare(&next, &s, 2.0);
	CHECK(next.tasks[0].unchanged_s == 0 && next.tasks[2].unchanged_s == 2.0);
	/* 0x3000 and 0x5000 unchanged; 0x1000 now with 0x2000, which did not move */
	CHECK(next.groups[next.tasks[2].group].count == 2 &&
	      next.groups[next.tasks[2].group].stuck == 2);
	CHECK(next.groups[next.tasks[0].group].count == 2 &&
	      next.groups[next.tasks[0].group].stuck == 1);

	/* a pattern keeps the tasks with a matching frame only */
	char *pat[] = {"app::inner"};
	stk_snapshot__free(&next);
	next.tasks = must(calloc(5, sizeof(*next.tasks)));
	next.nr = 5;
	next.shown = 0;
	memset(next.per_runtime, 0, sizeof(next.per_runtime));
	for (int i = 0; i < 5; i++)
		next.tasks[i] = s.tasks[i];
	task(&next.tasks[1], 0x2000, 1, 3 * TOKIO_REF | 8);
	CHECK(!stk_snapshot__group(&next, &m, pat, 1));
	CHECK(next.shown == 4 && !next.tasks[1].shown);

	char *json = stk_report__json(&next, &m);
	CHECK(json && strstr(json, "\"schema\":\"asyncbpf-stacks/1\"") &&
	      strstr(json, "\"no_waker\":true"));
	free(json);
	stk_snapshot__free(&next);
	stk_snapshot__free(&s);
}

int main(void)
{
	test_tokio_words();
	test_async_task_words();
	test_groups();
	TEST_MAIN_END();
}
