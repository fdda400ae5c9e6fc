// SPDX-License-Identifier: GPL-2.0
/*
 * Task mode's locks without BPF (user/trace/task_locks*.c): the lock nodes taken out
 * of a tree with the other nodes' parents renumbered; the lock slots a table adds
 * (a waiting future's, a guard's under its state); waits and holds over a hand-made
 * sequence of task polls (a wait, then a hold across an await, two tasks claiming it
 * at once: neither counted, what is open at the end, a finished task).
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "trace/task_locks.h"

static struct future futures[2];
static struct future_state states[4];
static struct future_tree trees[2];
static struct held_guard guard;
static struct future_wait wait = {.kind = WAIT_LOCK,
				  .family = LOCK_TOKIO,
				  .nr_steps = 1,
				  .steps = {{0, true}},
				  .queued = 8,
				  .state = 32};
static struct model m;

static void build_model(void)
{
	guard = (struct held_guard){.name = "g",
				    .type = "tokio::sync::mutex::MutexGuard<u64>",
				    .resource = "tokio::sync::mutex::Mutex<u64>",
				    .offset = 16,
				    .lock = GUARD_EXCLUSIVE,
				    .family = LOCK_TOKIO,
				    .provable = true,
				    .nr_steps = 1,
				    .steps = {{0, true}},
				    .state_offset = 32};
	states[0] = (struct future_state){.discr = 0, .kind = STATE_UNRESUMED, .name = "Unresumed"};
	states[1] = (struct future_state){.discr = 3,
					  .kind = STATE_SUSPEND,
					  .name = "Suspend0",
					  .file = "src/main.rs",
					  .line = 7};
	states[2] = (struct future_state){.discr = 4,
					  .kind = STATE_SUSPEND,
					  .suspend_index = 1,
					  .name = "Suspend1",
					  .file = "src/main.rs",
					  .line = 8,
					  .held = &guard,
					  .nr_held = 1};
	futures[0] = (struct future){.path = "t::task",
				     .kind = FUTURE_ASYNC_FN,
				     .crate_class = CRATE_USER,
				     .has_state = true,
				     .state_offset = 0,
				     .state_size = 1,
				     .states = states,
				     .nr_states = 3};
	futures[1] = (struct future){.path = "tokio::sync::batch_semaphore::Acquire",
				     .kind = FUTURE_HANDWRITTEN,
				     .wait = &wait};
	trees[0] =
	    (struct future_tree){.known = true, .has_discr = true, .discr_size = 1, .discr_max = 4};
	trees[1] = (struct future_tree){.known = true};
	memset(&m, 0, sizeof(m));
	m.futures = futures;
	m.nr_futures = 2;
	m.trees = trees;
	m.nr_trees = 2;
}

static void test_table(void)
{
	struct lock_table t;

	CHECK(lock_table__build(&t, &m) == 0);
	CHECK_EQ_U64(t.nr_pseudo, 2);
	/* the task's guard under Suspend1, the Acquire's lock */
	CHECK_EQ_U64(t.count[0], 1);
	CHECK_EQ_U64(t.count[1], 1);
	const struct tree_slot *g = &t.slots[t.first[0]], *w = &t.slots[t.first[1]];
	CHECK(g->nr_conds == 1 && g->conds[0].lo == 4 && g->conds[0].hi == 4);
	CHECK(g->nr_steps == 1 && g->steps[0].offset == 16 && g->steps[0].deref);
	CHECK(w->nr_conds == 0 && w->nr_steps == 1 && w->steps[0].deref);
	CHECK((uint32_t)g->child >= m.nr_futures && (uint32_t)w->child >= m.nr_futures);
	CHECK(t.pseudo[g->child - 2].kind == LOCK_PSEUDO_HELD);
	CHECK(t.pseudo[w->child - 2].kind == LOCK_PSEUDO_WAIT);

	/* a tree: task, a held lock, Acquire, its lock */
	struct task_tree tree = {.phase = TASK_PHASE_END, .nr = 4};
	struct lock_seen seen[4];
	tree.nodes[0] =
	    (struct task_tree_node){.addr = 0x1000, .future = 0, .parent = -1, .discr = 4};
	tree.nodes[1] = (struct task_tree_node){.addr = 0x9000, .future = g->child, .parent = 0};
	tree.nodes[2] =
	    (struct task_tree_node){.addr = 0x1100, .future = 1, .parent = 0, .depth = 1};
	tree.nodes[3] = (struct task_tree_node){
	    .addr = 0x9000, .future = w->child, .parent = 2, .flags = TASK_NODE_UNREADABLE};
	uint32_t n = task_locks__strip(&t, &tree, seen, 4);
	CHECK_EQ_U64(n, 2);
	CHECK_EQ_U64(tree.nr, 2);
	CHECK(tree.nodes[1].future == 1 && tree.nodes[1].parent == 0);
	CHECK(seen[0].kind == LOCK_PSEUDO_HELD && seen[0].key == 0x9000 && !seen[0].unreadable);
	CHECK(task_locks__locked(&seen[0]));  /* tokio: word 0, no permit left */
	CHECK(!task_locks__locked(&seen[1])); /* unreadable: never locked */
	seen[0].word = 2;		      /* one permit available */
	CHECK(!task_locks__locked(&seen[0]));
	lock_table__free(&t);
}

static const cJSON *only_lock(cJSON *o)
{
	const cJSON *arr = cJSON_GetObjectItem(o, "locks");

	return cJSON_GetArraySize(arr) == 1 ? cJSON_GetArrayItem(arr, 0) : NULL;
}

static double num(const cJSON *o, const char *k)
{
	return cJSON_GetNumberValue(cJSON_GetObjectItem(o, k));
}

/* The task's guard under Suspend1 (future 0, state 2) and the Acquire (future 1), both
 * on the lock at 0x9000 (word 0: no permit left) */
static const struct lock_pseudo held_pseudo = {.kind = LOCK_PSEUDO_HELD,
					       .family = LOCK_TOKIO,
					       .future = 0,
					       .state = 2,
					       .guard = &guard,
					       .state_offset = 32},
				wait_pseudo = {.kind = LOCK_PSEUDO_WAIT,
					       .family = LOCK_TOKIO,
					       .future = 1,
					       .state_offset = 32};
static const struct lock_seen wait_seen = {.kind = LOCK_PSEUDO_WAIT,
					   .family = LOCK_TOKIO,
					   .key = 0x9000,
					   .pseudo = &wait_pseudo},
			      held_seen = {.kind = LOCK_PSEUDO_HELD,
					   .family = LOCK_TOKIO,
					   .key = 0x9000,
					   .pseudo = &held_pseudo};

static void test_over_time(void)
{
	const struct lock_seen w = wait_seen, h = held_seen;
	struct task_locks *l = task_locks__new(&m);
	cJSON *o = cJSON_CreateObject();
	const cJSON *x;

	CHECK(l && o);
	CHECK(task_locks__add(l, 0xa, 0, 0, 10, false, &w, 1) == 0);	/* waits from 10 */
	CHECK(task_locks__add(l, 0xa, 0, 20, 30, false, &h, 1) == 0);	/* got it at 20 */
	CHECK(task_locks__add(l, 0xa, 0, 40, 50, false, NULL, 0) == 0); /* let go at 40 */
	CHECK(task_locks__add(l, 0xb, 0, 45, 55, false, &h, 1) == 0);	/* b holds it */
	CHECK(task_locks__add(l, 0xc, 0, 46, 56, false, &h, 1) == 0);	/* c claims it too */
	CHECK(task_locks__add(l, 0xd, 0, 47, 57, false, &w, 1) == 0);	/* d waits */
	task_locks__finish(l, 100);
	CHECK(task_locks__json(l, o) == 0);
	x = only_lock(o);
	CHECK(x != NULL);
	if (x) {
		CHECK(num(x, "waits") == 1 && num(x, "wait_ns") == 10 &&
		      num(x, "wait_max_ns") == 10);
		CHECK(num(x, "holds") == 1 && num(x, "hold_max_ns") == 20); /* 20..40 */
		CHECK(num(x, "conflicts") == 1);
		CHECK(num(x, "waiting_at_end") == 1 && num(x, "open_wait_ns") == 100 - 57);
		CHECK(!cJSON_IsTrue(cJSON_GetObjectItem(x, "held_at_end")) &&
		      num(x, "open_hold_ns") == 0);
		CHECK(num(x, "addr") == 0x9000);
		CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(x, "type")),
			      "tokio::sync::mutex::Mutex<u64>"));
		const cJSON *lh = cJSON_GetObjectItem(x, "longest_hold");
		CHECK(lh && num(lh, "line") == 8);
	}
	cJSON_Delete(o);
	task_locks__free(l);

	/* a task that finishes lets go of everything at its last poll's start */
	l = task_locks__new(&m);
	o = cJSON_CreateObject();
	CHECK(task_locks__add(l, 0xa, 0, 0, 10, false, &h, 1) == 0);
	CHECK(task_locks__add(l, 0xa, 0, 30, 40, true, &h, 1) == 0);
	CHECK(task_locks__json(l, o) == 0);
	x = only_lock(o);
	CHECK(x && num(x, "holds") == 1 && num(x, "hold_max_ns") == 30); /* 0..30 */
	CHECK(x && !cJSON_IsTrue(cJSON_GetObjectItem(x, "held_at_end")));
	cJSON_Delete(o);
	task_locks__free(l);
}

/* task_locks__top's table into a string (malloc'd) */
static char *top_table(struct task_locks *l, uint64_t now, double dt)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(f != NULL);
	if (!f)
		return NULL;
	task_locks__top(l, now, dt, f, 0);
	fclose(f);
	return buf;
}

/* top --locks: now's waiters and holder, the interval's ended waits and holds */
static void test_top(void)
{
	const struct lock_seen w = wait_seen, h = held_seen;
	struct task_locks *l = task_locks__new(&m);
	const uint64_t ms = 1000000;
	char *s;

	CHECK(l != NULL);
	s = top_table(l, 0, 1);
	CHECK(s && strstr(s, "no task has waited for or held a lock"));
	free(s);
	/* a holds it from 0 (a runtime's wrapper its root: named by its guard's future),
	 * b waits from 10 ms */
	futures[1].crate_class = CRATE_RUNTIME;
	CHECK(task_locks__add(l, 0xa, 1, 0, 1 * ms, false, &h, 1) == 0);
	CHECK(task_locks__add(l, 0xb, 0, 5 * ms, 10 * ms, false, &w, 1) == 0);
	s = top_table(l, 30 * ms, 1);
	CHECK(s && strstr(s, "      1      20.000      0.0           -      0.0  "
			     "tokio::sync::mutex::Mutex<u64> at 0x9000"));
	CHECK(s && strstr(s, "held 30.000 ms by t::task (its g, kept across src/main.rs:8)"));
	free(s);
	/* a lets go at 40 ms, b gets it: one wait of 30 ms and one hold ended; b holds */
	CHECK(task_locks__add(l, 0xa, 1, 40 * ms, 41 * ms, false, NULL, 0) == 0);
	CHECK(task_locks__add(l, 0xb, 0, 42 * ms, 43 * ms, false, &h, 1) == 0);
	s = top_table(l, 50 * ms, 2);
	CHECK(s && strstr(s, "      0       0.000      0.5      32.000      0.5  "
			     "tokio::sync::mutex::Mutex<u64> at 0x9000"));
	CHECK(s && strstr(s, "held 8.000 ms by t::task (its g, kept across src/main.rs:8)"));
	free(s);
	/* b lets go: one hold ended; then nothing at all */
	CHECK(task_locks__add(l, 0xb, 0, 60 * ms, 61 * ms, false, NULL, 0) == 0);
	s = top_table(l, 70 * ms, 1);
	CHECK(s && strstr(s, "      0       0.000      0.0           -      1.0  ") &&
	      strstr(s, "not held now"));
	free(s);
	s = top_table(l, 80 * ms, 1);
	CHECK(s && strstr(s, "no task waited for or held a lock in this interval"));
	free(s);
	futures[1].crate_class = CRATE_USER;
	/* a task of the user's own whose guard a deeper future keeps: "its g in ..." */
	CHECK(task_locks__add(l, 0xa, 1, 90 * ms, 91 * ms, false, &h, 1) == 0);
	s = top_table(l, 100 * ms, 1);
	CHECK(s && strstr(s, "held 10.000 ms by tokio::sync::batch_semaphore::Acquire (its g in "
			     "t::task, kept across src/main.rs:8)"));
	free(s);
	/* b waits, then its header comes back as a task of another type: its last polls
	 * were lost; its wait is dropped, not counted */
	CHECK(task_locks__add(l, 0xb, 0, 101 * ms, 102 * ms, false, &w, 1) == 0);
	CHECK(task_locks__add(l, 0xb, 1, 200 * ms, 201 * ms, false, NULL, 0) == 0);
	s = top_table(l, 210 * ms, 1);
	CHECK(s && strstr(s, "      0       0.000      0.0           -      0.0  "
			     "tokio::sync::mutex::Mutex<u64> at 0x9000"));
	CHECK(s && strstr(s, "1 tasks' last polls not seen"));
	free(s);
	task_locks__free(l);
}

int main(void)
{
	build_model();
	test_table();
	test_over_time();
	test_top();
	TEST_MAIN_END();
}
