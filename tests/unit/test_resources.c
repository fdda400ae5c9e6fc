// SPDX-License-Identifier: GPL-2.0
/*
 * Locks and deadlocks without a process (user/stacks/resources.c): hand-made task
 * stacks over a fake image. A task's outer future keeps a guard (a pointer to a lock
 * at offset 8) across its Suspend0, and its innermost future waits: tokio's Acquire
 * (a pointer to the semaphore at 0, `queued` at 8) or a join (a task header at 0).
 * Checked: a cycle of two is one deadlock whose edges alternate; a lock not locked
 * makes no holder (a stale guard slot); two tasks' guards on one exclusive lock make
 * neither a holder; a task running can progress (no edge); a waiter not queued is no
 * edge; a task waiting for its own guard's lock is counted, not a deadlock; a join
 * through a task that waits back is a cycle; unreadable pointers are left out. Locks
 * held in part (Semaphore permits, RwLock read guards): a possible deadlock when
 * every slot's task waits in it, proven when the permits add up.
 */
#include <stdlib.h>
#include <string.h>

#include "fake_image.h"
#include "stacks/report.h"
#include "stacks/resources.h"
#include "testlib.h"

enum {
	F_OUTER,
	F_ACQUIRE,
	F_JOIN,
	F_READER,
	F_PERMIT,
	F_METHOD,
	F_AWRITER,
	F_AREADER,
	F_AWAIT,
	NR_F
};

static struct future futures[NR_F];
static struct future_state outer_states[1], reader_states[1], permit_states[1];
static struct future_state awriter_states[1], areader_states[1];
static struct held_guard guard, read_guard, permit_guard, awrite_guard, aread_guard;
static struct model m;

/* the semaphores (keys): permits word at +16 (tokio: available << 1) */
#define SEM1	  (BASE + 0x100)
#define SEM2	  (BASE + 0x200)
#define STATE_OFF 16

static struct future_wait acquire_wait = {.kind = WAIT_LOCK,
					  .family = LOCK_TOKIO,
					  .nr_steps = 1,
					  .steps = {{0, true}},
					  .queued = 8,
					  .state = STATE_OFF,
					  .asked = 16, /* num_permits (4 bytes) */
					  .left = 24}; /* its node's state: still owed */
static struct future_wait join_wait = {.kind = WAIT_JOIN, .nr_steps = 1, .steps = {{0, true}}};
/* a RwLock's lock method: its `self` (at 0) is the lock, whose semaphore is at 0 in
 * it and whose count of permits at TOTAL_OFF */
#define TOTAL_OFF 24
static struct future_wait method_wait = {.kind = WAIT_LOCK,
					 .family = LOCK_TOKIO,
					 .nr_steps = 1,
					 .steps = {{0, true}},
					 .state = STATE_OFF,
					 .type = "tokio::sync::rwlock::RwLock<u64>",
					 .names_only = true,
					 .has_total = true,
					 .total = TOTAL_OFF};

/* async-lock's RwLock::write: its `self` (at 0) the RwLock, whose `state` is at
 * STATE_OFF: bit 0 a writer, 2 a reader */
static struct future_wait async_rw_wait = {.kind = WAIT_LOCK,
					   .family = LOCK_ASYNC_RWLOCK,
					   .nr_steps = 1,
					   .steps = {{0, true}},
					   .queued = FUTURE_NO_OFFSET,
					   .asked = FUTURE_NO_OFFSET,
					   .left = FUTURE_NO_OFFSET,
					   .state = STATE_OFF,
					   .type = "async_lock::rwlock::RwLock<u64>",
					   .over_inner = true};

static void build_model(void)
{
	guard = (struct held_guard){.name = "g",
				    .type = "tokio::sync::mutex::MutexGuard<u64>",
				    .resource = "tokio::sync::mutex::Mutex<u64>",
				    .offset = 8,
				    .lock = GUARD_EXCLUSIVE,
				    .family = LOCK_TOKIO,
				    .provable = true,
				    .nr_steps = 1,
				    .steps = {{0, true}},
				    .state_offset = STATE_OFF};
	outer_states[0] = (struct future_state){.discr = 3,
						.kind = STATE_SUSPEND,
						.name = "Suspend0",
						.file = "src/main.rs",
						.line = 10,
						.awaitee_offset = 32,
						.held = &guard,
						.nr_held = 1};
	futures[F_OUTER] = (struct future){.path = "t::outer",
					   .kind = FUTURE_ASYNC_FN,
					   .crate_class = CRATE_USER,
					   .has_state = true,
					   .state_size = 1,
					   .states = outer_states,
					   .nr_states = 1};
	/* t::reader: the same, its guard a RwLock's read side */
	read_guard = guard;
	read_guard.type = "tokio::sync::rwlock::read_guard::RwLockReadGuard<u64>";
	read_guard.resource = NULL;
	read_guard.lock = GUARD_SHARED;
	read_guard.provable = false;
	reader_states[0] = outer_states[0];
	reader_states[0].held = &read_guard;
	futures[F_READER] = futures[F_OUTER];
	futures[F_READER].path = "t::reader";
	futures[F_READER].states = reader_states;
	/* t::permits: the same, its guard a Semaphore's permit */
	permit_guard = read_guard;
	permit_guard.type = "tokio::sync::semaphore::SemaphorePermit";
	permit_guard.lock = GUARD_PERMITS;
	permit_states[0] = outer_states[0];
	permit_states[0].held = &permit_guard;
	futures[F_PERMIT] = futures[F_OUTER];
	futures[F_PERMIT].path = "t::permits";
	futures[F_PERMIT].states = permit_states;
	futures[F_METHOD] = (struct future){.path = "tokio::sync::rwlock::RwLock::write",
					    .kind = FUTURE_ASYNC_FN,
					    .crate_class = CRATE_RUNTIME,
					    .wait = &method_wait};
	/* t::awriter / t::areader: async-lock RwLock guards */
	awrite_guard = guard;
	awrite_guard.type = "async_lock::rwlock::RwLockWriteGuard<u64>";
	awrite_guard.resource = "async_lock::rwlock::RwLock<u64>";
	awrite_guard.family = LOCK_ASYNC_RWLOCK;
	aread_guard = awrite_guard;
	aread_guard.type = "async_lock::rwlock::RwLockReadGuard<u64>";
	aread_guard.lock = GUARD_SHARED;
	aread_guard.provable = false;
	awriter_states[0] = outer_states[0];
	awriter_states[0].held = &awrite_guard;
	areader_states[0] = outer_states[0];
	areader_states[0].held = &aread_guard;
	futures[F_AWRITER] = futures[F_OUTER];
	futures[F_AWRITER].path = "t::awriter";
	futures[F_AWRITER].states = awriter_states;
	futures[F_AREADER] = futures[F_OUTER];
	futures[F_AREADER].path = "t::areader";
	futures[F_AREADER].states = areader_states;
	futures[F_AWAIT] = (struct future){.path = "async_lock::rwlock::RwLock::write",
					   .kind = FUTURE_ASYNC_FN,
					   .crate_class = CRATE_RUNTIME,
					   .wait = &async_rw_wait};
	futures[F_ACQUIRE] = (struct future){.path = "tokio::sync::batch_semaphore::Acquire",
					     .kind = FUTURE_HANDWRITTEN,
					     .crate_class = CRATE_RUNTIME,
					     .wait = &acquire_wait};
	futures[F_JOIN] = (struct future){.path = "tokio::runtime::task::join::JoinHandle<()>",
					  .kind = FUTURE_HANDWRITTEN,
					  .crate_class = CRATE_RUNTIME,
					  .wait = &join_wait};
	memset(&m, 0, sizeof(m));
	m.futures = futures;
	m.nr_futures = NR_F;
}

/*
 * Task i: its outer future at BASE + 0x400 + i * 0x100 (Suspend0, its guard pointing
 * at `holds`, 0: none), its waiting future 0x40 further (Acquire on `waits`, or with
 * join a JoinHandle on task `waits`'s header), its header BASE + 0x800 + i * 0x10.
 */
static void make_task(struct stk_task *t, uint32_t i, uint64_t holds, uint64_t waits, bool join,
		      bool queued)
{
	uint64_t outer = BASE + 0x400 + i * 0x100, inner = outer + 0x40;

	memset(t, 0, sizeof(*t));
	t->root = (struct task_root){.runtime = TASK_RT_TOKIO,
				     .future = F_OUTER,
				     .addr = outer,
				     .header = BASE + 0x800 + i * 0x10};
	t->stack.frames[0] = (struct stack_frame){.future = F_OUTER,
						  .addr = outer,
						  .state = FRAME_SUSPENDED,
						  .discr = 3,
						  .await_index = 0,
						  .file = "src/main.rs",
						  .line = 10 + i};
	t->stack.frames[1] = (struct stack_frame){.future = join ? F_JOIN : F_ACQUIRE,
						  .addr = inner,
						  .state = FRAME_OPAQUE,
						  .await_index = -1};
	t->stack.nr = 2;
	put8(outer, 3);
	put64(outer + 8, holds);
	put64(inner, join ? BASE + 0x800 + waits * 0x10 : waits);
	put8(inner + 8, queued);
	put64(inner + 16, 1); /* asked for one, none given yet */
	put64(inner + 24, 1);
}

static void set_locked(uint64_t sem, bool locked)
{
	put64(sem + STATE_OFF, locked ? 0 : 1u << 1);
}

static void build(struct res_report *r, struct stk_task *t, uint32_t n)
{
	CHECK(resources__build(r, &m, t, n, read_image, NULL) == 0);
}

/* Two tasks, each holding one locked lock and queued on the other's. */
static void make_cycle_of_two(struct stk_task *t)
{
	memset(image, 0, sizeof(image));
	set_locked(SEM1, true);
	set_locked(SEM2, true);
	make_task(&t[0], 0, SEM1, SEM2, false, true);
	make_task(&t[1], 1, SEM2, SEM1, false, true);
}

static void test_cycle_of_two(void)
{
	struct stk_task t[2];
	struct res_report r;

	make_cycle_of_two(t);
	build(&r, t, 2);
	CHECK_EQ_U64(r.nr_res, 2);
	CHECK_EQ_U64(r.nr_holds, 2);
	CHECK(r.holds[0].held && r.holds[1].held);
	CHECK_EQ_U64(r.nr_deadlocks, 1);
	CHECK_EQ_U64(r.deadlocks[0].nr, 2);
	/* task 0 waits for SEM2, which task 1 holds; and back */
	for (uint32_t k = 0; k < 2; k++) {
		uint32_t tk = r.cycle_task[k], next = r.cycle_task[(k + 1) % 2];

		CHECK_EQ_U64(r.res[r.cycle_res[k]].key, tk == 0 ? SEM2 : SEM1);
		CHECK(next != tk);
	}
	CHECK_EQ_U64(r.res[r.holds[0].resource].lock, SEM1); /* resource_back 0 */
	resources__free(&r);

	/* the same memory with SEM1 free: task 0's guard slot is stale, no cycle */
	set_locked(SEM1, false);
	build(&r, t, 2);
	CHECK_EQ_U64(r.nr_deadlocks, 0);
	CHECK(!r.holds[0].held && r.holds[1].held);
	resources__free(&r);

	/* task 1 running: it can release what it holds, no deadlock */
	set_locked(SEM1, true);
	t[1].root.st.running = true;
	build(&r, t, 2);
	CHECK_EQ_U64(r.nr_deadlocks, 0);
	resources__free(&r);
	t[1].root.st.running = false;

	/* task 0's lock awaited in a select! or under a timeout (its frame awaits
	 * other futures too): another branch may end the wait, no edge */
	t[0].stack.frames[0].branches = 1;
	build(&r, t, 2);
	CHECK_EQ_U64(r.nr_deadlocks, 0);
	CHECK(r.nr_waits == 2 && r.waits[0].alternatives);
	resources__free(&r);
	t[0].stack.frames[0].branches = 0;

	/* task 0's Acquire not queued: not waiting in the lock's list, no edge */
	put8(t[0].stack.frames[1].addr + 8, 0);
	build(&r, t, 2);
	CHECK_EQ_U64(r.nr_deadlocks, 0);
	resources__free(&r);
}

/* Tasks stuck behind a cycle: listed under its deadlock, in no cycle themselves. */
static void test_behind(void)
{
	const uint64_t sem3 = BASE + 0x300;
	struct stk_task t[4];
	struct res_report r;

	make_cycle_of_two(t);
	set_locked(sem3, true);
	make_task(&t[2], 2, sem3, SEM1, false, true); /* keeps sem3, queued on task 0's */
	make_task(&t[3], 3, 0, sem3, false, true);    /* queued on task 2's */
	build(&r, t, 4);
	CHECK_EQ_U64(r.nr_deadlocks, 1);
	CHECK_EQ_U64(r.deadlocks[0].nr, 2);
	CHECK_EQ_U64(r.nr_behind, 2);
	for (uint32_t i = 0; i < r.nr_behind; i++) {
		const struct res_behind *b = &r.behind[i];

		CHECK(b->task == 2 || b->task == 3);
		CHECK_EQ_U64(b->deadlock, 0);
		CHECK_EQ_U64(b->next, b->task == 2 ? 0 : 2);
		CHECK(b->res != RES_NONE && r.res[b->res].key == (b->task == 2 ? SEM1 : sem3));
	}
	resources__free(&r);

	/* task 2 running: it may let go of sem3, so task 3 is not stuck; task 2 no part */
	t[2].root.st.running = true;
	build(&r, t, 4);
	CHECK_EQ_U64(r.nr_deadlocks, 1);
	CHECK_EQ_U64(r.nr_behind, 0);
	resources__free(&r);
}

static void test_ambiguous_and_self(void)
{
	struct stk_task t[3];
	struct res_report r;

	memset(image, 0, sizeof(image));
	set_locked(SEM1, true);
	set_locked(SEM2, true);
	/* tasks 0 and 1 both point at SEM1 (one slot is stale): neither holds it */
	make_task(&t[0], 0, SEM1, SEM2, false, true);
	make_task(&t[1], 1, SEM1, BASE + 0x300, false, true);
	make_task(&t[2], 2, SEM2, SEM1, false, true);
	set_locked(BASE + 0x300, true);
	build(&r, t, 3);
	CHECK(r.holds[0].ambiguous && r.holds[1].ambiguous && !r.holds[0].held);
	CHECK(r.holds[2].held);
	CHECK_EQ_U64(r.nr_deadlocks, 0);
	resources__free(&r);

	/* a task waiting for the lock its own guard slot points at */
	make_task(&t[0], 0, SEM1, SEM1, false, true);
	build(&r, t, 1);
	CHECK_EQ_U64(r.self_waits, 1);
	CHECK_EQ_U64(r.nr_deadlocks, 0);
	resources__free(&r);
}

static void test_join_cycle_and_bad_pointers(void)
{
	struct stk_task t[2];
	struct res_report r;

	memset(image, 0, sizeof(image));
	set_locked(SEM1, true);
	/* task 0 holds SEM1 and joins task 1; task 1 waits for SEM1 */
	make_task(&t[0], 0, SEM1, 1, true, true);
	make_task(&t[1], 1, 0, SEM1, false, true);
	build(&r, t, 2);
	CHECK_EQ_U64(r.nr_deadlocks, 1);
	CHECK_EQ_U64(r.deadlocks[0].nr, 2);
	for (uint32_t k = 0; k < 2; k++)
		if (r.cycle_task[k] == 0)
			CHECK_EQ_U64(r.cycle_res[k], RES_NONE);
	CHECK_EQ_U64(r.unread, 1); /* task 1's null guard pointer */
	resources__free(&r);

	/* the joined task finished: nothing to wait for */
	t[1].root.st.complete = true;
	build(&r, t, 2);
	CHECK_EQ_U64(r.nr_deadlocks, 0);
	resources__free(&r);

	/* locks outside the image: their state unread, nothing claimed */
	make_task(&t[0], 0, 0xdead0000, 0xbeef0000, false, true);
	build(&r, t, 1);
	CHECK_EQ_U64(r.nr_deadlocks, 0);
	CHECK(r.nr_res == 2 && !r.res[0].read && !r.res[1].read && !r.holds[0].held);
	resources__free(&r);
}

/* Random memory under the same stacks, ASan/UBSan watching: whatever is read, every
 * edge of a deadlock is a queued wait on a held lock or a join. */
static void test_random_images(void)
{
	struct stk_task t[4];
	uint32_t seed = 12345;

	for (int round = 0; round < 20000; round++) {
		struct res_report r;

		for (uint32_t i = 0; i < SIZE; i++) {
			seed = seed * 1103515245u + 12345u;
			image[i] = (uint8_t)(seed >> 16);
		}
		for (uint32_t i = 0; i < 4; i++) {
			seed = seed * 1103515245u + 12345u;
			make_task(&t[i], i, BASE + ((seed >> 8) % SIZE),
				  BASE + ((seed >> 20) % SIZE), (seed & 3) == 0, (seed & 4) != 0);
			t[i].root.st.running = (seed & 8) != 0;
		}
		for (uint32_t i = 0; i < SIZE; i += 64) { /* some pointers back into the image */
			seed = seed * 1103515245u + 12345u;
			if (i + 8 <= SIZE)
				put64(BASE + i, BASE + ((seed >> 8) % SIZE));
		}
		if (resources__build(&r, &m, t, 4, read_image, NULL)) {
			CHECK(0);
			return;
		}
		for (uint32_t d = 0; d < r.nr_deadlocks; d++)
			for (uint32_t k = 0; k < r.deadlocks[d].nr; k++) {
				uint32_t x = r.cycle_res[r.deadlocks[d].first + k];

				if (x != RES_NONE && !(r.res[x].read && r.res[x].locked)) {
					CHECK(0);
					resources__free(&r);
					return;
				}
			}
		/* a task behind a deadlock: of a deadlock found, in no cycle, not itself */
		for (uint32_t i = 0; i < r.nr_behind; i++) {
			bool ok = r.behind[i].deadlock < r.nr_deadlocks &&
				  r.behind[i].next != r.behind[i].task && r.behind[i].next < 4;

			for (uint32_t d = 0; ok && d < r.nr_deadlocks; d++)
				for (uint32_t k = 0; k < r.deadlocks[d].nr; k++)
					ok &= r.cycle_task[r.deadlocks[d].first + k] !=
					      r.behind[i].task;
			if (!ok) {
				CHECK(0);
				resources__free(&r);
				return;
			}
		}
		resources__free(&r);
	}
	CHECK(1);
}

/* The model's helpers both stacks' readers use: a way of steps followed through the
 * image (a null or unreadable pointer ends it), a state found by its discriminant. */
static void test_steps_and_states(void)
{
	struct await_step way[3] = {{8, true}, {16, true}, {4, false}};
	uint64_t to = 0, at = 0;

	memset(image, 0, sizeof(image));
	put64(BASE + 8, BASE + 0x40);
	put64(BASE + 0x40 + 16, BASE + 0x80);
	CHECK(await_steps__follow(way, 3, BASE, read_image, NULL, &to, &at));
	CHECK_EQ_U64(to, BASE + 0x80 + 4);
	CHECK_EQ_U64(at, BASE + 0x40 + 16);
	CHECK(await_steps__follow(way, 0, BASE, read_image, NULL, &to, &at) && to == BASE && !at);
	put64(BASE + 0x40 + 16, 0); /* a null pointer on the way */
	CHECK(!await_steps__follow(way, 3, BASE, read_image, NULL, &to, &at));
	put64(BASE + 8, 0x10); /* a pointer out of the image */
	CHECK(!await_steps__follow(way, 3, BASE, read_image, NULL, &to, &at));
	for (uint32_t f = 0; f < m.nr_futures; f++)
		for (uint32_t i = 0; i < m.futures[f].nr_states; i++)
			CHECK(future__state_of(&m.futures[f], m.futures[f].states[i].discr) ==
			      &m.futures[f].states[i]);
	CHECK(m.nr_futures && !future__state_of(&m.futures[0], 0xdead));
}

/*
 * A guard that takes all of its lock's permits (a tokio RwLock's write side, not
 * provable by the state alone): task 0 keeps one on SEM1, without a permit left;
 * task 1 is queued on SEM1. Held while task 1 was given none of the permits it asked
 * for (a cycle with task 1 holding SEM2 as a Mutex), not held once it was given
 * some (they are its, not a writer's: the slot may be stale), nor when the
 * waiters' counts cannot be told (no offsets: then neither task's).
 */
static void test_all_permits(void)
{
	struct stk_task t[2];
	struct res_report r;

	make_cycle_of_two(t);
	guard.provable = false;
	guard.all_permits = true;
	put64(BASE + 0x500 + 0x40 + 16, 1u << 29); /* task 1 asks for them all */
	put64(BASE + 0x500 + 0x40 + 24, 1u << 29);
	build(&r, t, 2);
	CHECK(r.nr_holds == 2 && r.holds[0].held && r.holds[1].held);
	CHECK_EQ_U64(r.nr_deadlocks, 1);
	resources__free(&r);
	/* a read guard's slot on SEM1 too (task 2, parked, not queued): readers could
	 * hold every permit (a lock with few readers allowed), one slot is stale, which
	 * is not known: the write guard is not proven */
	struct stk_task t3[3] = {t[0], t[1]};

	make_task(&t3[2], 2, SEM1, SEM2, false, false);
	t3[2].stack.frames[0].future = F_READER;
	build(&r, t3, 3);
	CHECK(r.nr_holds == 3 && !r.holds[0].held && r.holds[1].held && !r.holds[2].held);
	CHECK_EQ_U64(r.nr_deadlocks, 0);
	resources__free(&r);
	put64(BASE + 0x500 + 0x40 + 24, 2); /* given all but two */
	build(&r, t, 2);
	CHECK(r.nr_holds == 2 && !r.holds[0].held && r.holds[1].held);
	CHECK(r.nr_res == 2 && r.res[r.holds[0].resource].given);
	CHECK_EQ_U64(r.nr_deadlocks, 0);
	resources__free(&r);
	put64(BASE + 0x500 + 0x40 + 24, 1u << 29);
	acquire_wait.asked = acquire_wait.left = FUTURE_NO_OFFSET; /* not known: neither */
	build(&r, t, 2);
	CHECK(r.nr_holds == 2 && !r.holds[0].held && !r.holds[1].held);
	CHECK_EQ_U64(r.nr_deadlocks, 0);
	resources__free(&r);
	set_locked(SEM1, false); /* a free lock: no guard holds it, offsets or not */
	acquire_wait.asked = 16;
	acquire_wait.left = 24;
	build(&r, t, 2);
	CHECK(r.nr_holds == 2 && !r.holds[0].held);
	resources__free(&r);
	guard.provable = true;
	guard.all_permits = false;
}

/* Task t's Acquire awaited through a RwLock's lock method (its `self` the lock at
 * `lock`, which keeps `total` permits), asking for `asked` and still owed `left`. */
static void wait_by_method(struct stk_task *t, uint64_t lock, uint32_t total, uint64_t asked,
			   uint64_t left)
{
	uint64_t method = t->stack.frames[0].addr + 0x80, inner = t->stack.frames[1].addr;

	t->stack.frames[2] = t->stack.frames[1];
	t->stack.frames[1] = (struct stack_frame){
	    .future = F_METHOD, .addr = method, .state = FRAME_OPAQUE, .await_index = -1};
	t->stack.nr = 3;
	put64(method, lock);
	put64(lock + TOTAL_OFF, total);
	put64(inner + 16, asked);
	put64(inner + 24, left);
}

/*
 * Locks held in part. A Semaphore's permits: task 0 keeps a permit slot on SEM1 (no
 * permit left) and is queued on SEM2, a Mutex task 1 holds, queued on SEM1: a
 * possible deadlock, not proven (who holds the permits is not in memory). A second
 * permit slot on SEM1 kept by a task parked elsewhere: task 1 waits for it too, no
 * deadlock; that task queued on SEM2 as well: all three deadlocked, the cycle of two
 * reported. A RwLock's read side whose count of permits is known: held, proven,
 * when the permits add up (available + given to the queued writer + one a reader ==
 * its total), several readers each held; not when they do not (a stale slot).
 */
static void test_held_in_part(void)
{
	struct stk_task t[3];
	struct res_report r;

	memset(image, 0, sizeof(image));
	set_locked(SEM1, true);
	set_locked(SEM2, true);
	make_task(&t[0], 0, SEM1, SEM2, false, true);
	t[0].stack.frames[0].future = F_PERMIT;
	make_task(&t[1], 1, SEM2, SEM1, false, true);
	build(&r, t, 2);
	CHECK(r.nr_holds == 2 && !r.holds[0].held && r.holds[1].held);
	CHECK(resources__claimed(&r.res[r.holds[0].resource]));
	CHECK(!resources__proven(&r.res[r.holds[0].resource]));
	CHECK_EQ_U64(r.nr_deadlocks, 1);
	CHECK(r.deadlocks[0].nr == 2 && !r.deadlocks[0].proven);
	resources__free(&r);
	/* SEM1 free: its permits are not all taken, nothing to wait for */
	set_locked(SEM1, false);
	build(&r, t, 2);
	CHECK_EQ_U64(r.nr_deadlocks, 0);
	resources__free(&r);
	set_locked(SEM1, true);
	/* task 2 keeps a permit slot on SEM1 too, parked, queued on nothing */
	make_task(&t[2], 2, SEM1, BASE + 0x300, false, false);
	t[2].stack.frames[0].future = F_PERMIT;
	build(&r, t, 3);
	CHECK_EQ_U64(r.nr_deadlocks, 0);
	resources__free(&r);
	/* ... running: no edge at all */
	t[2].root.st.running = true;
	build(&r, t, 3);
	CHECK_EQ_U64(r.nr_deadlocks, 0);
	resources__free(&r);
	t[2].root.st.running = false;
	/* ... queued on SEM2 like task 0: every holder of SEM1's permits waits */
	make_task(&t[2], 2, SEM1, SEM2, false, true);
	t[2].stack.frames[0].future = F_PERMIT;
	build(&r, t, 3);
	CHECK_EQ_U64(r.nr_deadlocks, 1);
	CHECK(r.deadlocks[0].nr == 2 && !r.deadlocks[0].proven);
	resources__free(&r);

	/* task 1 keeps a permit slot on SEM1 too while asking for more: not a self
	 * wait, it waits for task 0's permit (and task 0 for it): possible */
	make_task(&t[0], 0, SEM1, SEM2, false, true);
	t[0].stack.frames[0].future = F_PERMIT;
	make_task(&t[1], 1, SEM1, SEM1, false, true);
	t[1].stack.frames[0].future = F_PERMIT;
	make_task(&t[2], 2, SEM2, BASE + 0x300, false, false);
	build(&r, t, 3);
	CHECK_EQ_U64(r.self_waits, 0);
	CHECK_EQ_U64(r.nr_deadlocks, 0); /* task 0 waits for SEM2, which task 2 keeps */
	resources__free(&r);

	/* a RwLock (SEM1, 8 permits) read by task 0; task 1 queued to write, given 7 */
	make_task(&t[0], 0, SEM1, SEM2, false, true);
	t[0].stack.frames[0].future = F_READER;
	make_task(&t[1], 1, SEM2, SEM1, false, true);
	wait_by_method(&t[1], SEM1, 8, 8, 1);
	build(&r, t, 2);
	CHECK(r.nr_holds == 2 && r.holds[0].held && r.holds[1].held);
	CHECK(r.res[r.holds[0].resource].counted && r.res[r.holds[0].resource].total == 8);
	CHECK(r.res[r.holds[0].resource].holder == 0);
	CHECK(r.nr_deadlocks == 1 && r.deadlocks[0].proven);
	resources__free(&r);
	/* given 6: one permit is nobody's that stacks sees (a stale slot, or a reader
	 * it cannot see): not counted, the read slot not proven, the cycle possible */
	put64(t[1].stack.frames[2].addr + 24, 2);
	build(&r, t, 2);
	CHECK(r.nr_holds == 2 && !r.holds[0].held && !r.res[r.holds[0].resource].counted);
	CHECK(r.nr_deadlocks == 1 && !r.deadlocks[0].proven);
	resources__free(&r);
	/* a second reader, parked elsewhere: both held, the writer waits for both */
	make_task(&t[2], 2, SEM1, BASE + 0x300, false, false);
	t[2].stack.frames[0].future = F_READER;
	build(&r, t, 3);
	CHECK(r.holds[0].held && r.holds[2].held && r.res[r.holds[0].resource].counted);
	CHECK(r.res[r.holds[0].resource].holder == RES_NONE);
	CHECK(resources__proven(&r.res[r.holds[0].resource]));
	CHECK_EQ_U64(r.nr_deadlocks, 0);
	resources__free(&r);
	/* a reader queued behind the writer given permits (FIFO: it waits for that
	 * writer too, which no slot says): no edge from it */
	{
		struct stk_task t4[4] = {t[0], t[1], t[2]};

		make_task(&t4[3], 3, SEM2, SEM1, false, true);
		build(&r, t4, 4);
		CHECK(r.nr_waits >= 2 && r.res[r.holds[0].resource].given_permits == 6);
		for (uint32_t d = 0; d < r.nr_deadlocks; d++)
			for (uint32_t k = 0; k < r.deadlocks[d].nr; k++)
				CHECK(r.cycle_task[r.deadlocks[d].first + k] != 3);
		resources__free(&r);
	}
	/* ... queued on SEM2 too: a deadlock, proven */
	make_task(&t[2], 2, SEM1, SEM2, false, true);
	t[2].stack.frames[0].future = F_READER;
	build(&r, t, 3);
	CHECK(r.nr_deadlocks == 1 && r.deadlocks[0].proven);
	resources__free(&r);
	/* a task running (anywhere): a guard it took since it last parked is not seen,
	 * so nothing adds up */
	{
		struct stk_task t4[4] = {t[0], t[1], t[2]};

		make_task(&t4[3], 3, 0, BASE + 0x300, false, false);
		t4[3].root.st.running = true;
		build(&r, t4, 4);
		CHECK(r.running == 1 && !r.res[r.holds[0].resource].counted);
		CHECK(r.nr_deadlocks == 1 && !r.deadlocks[0].proven);
		resources__free(&r);
	}
	/* the lock's count of permits not known (a Semaphore's): nothing adds up */
	method_wait.has_total = false;
	build(&r, t, 3);
	CHECK(!r.res[r.holds[0].resource].counted && !r.holds[0].held);
	CHECK(r.nr_deadlocks == 1 && !r.deadlocks[0].proven);
	resources__free(&r);
	method_wait.has_total = true;
}

/*
 * async-lock's RwLock (its state word: bit 0 a writer, 2 per reader), waited on
 * through RwLock::write, a few frames out of the inner Mutex's wait (over_inner).
 * Task 0 writes RWL and waits for SEM2 (a tokio Mutex task 1 holds), task 1 waits to
 * write RWL: the write guard holds it when the word is its writer bit alone (1),
 * proven; not with readers in (3: a writer waiting for them). Task 0 reading RWL
 * (word 3: a reader and task 1's writer bit): its read slot held, proven, when the
 * readers counted are the read slots; no edge when they are not (5: a reader
 * unseen, which may go on).
 */
static void test_async_lock_rwlock(void)
{
	struct stk_task t[2];
	struct res_report r;
	const uint64_t rwl = BASE + 0x300;

	memset(image, 0, sizeof(image));
	set_locked(SEM2, true);
	make_task(&t[0], 0, rwl, SEM2, false, true);
	t[0].stack.frames[0].future = F_AWRITER;
	make_task(&t[1], 1, SEM2, rwl, false, true);
	/* task 1: its RwLock::write frame, then the inner Mutex's Acquire-like wait */
	wait_by_method(&t[1], rwl, 0, 1, 1);
	t[1].stack.frames[1].future = F_AWAIT;
	put64(rwl + STATE_OFF, 1);
	build(&r, t, 2);
	CHECK(r.nr_waits == 2 && r.waits[1].resource == r.holds[0].resource);
	CHECK(r.holds[0].held && r.res[r.holds[0].resource].holder == 0);
	CHECK(r.nr_deadlocks == 1 && r.deadlocks[0].proven);
	resources__free(&r);
	put64(rwl + STATE_OFF, 3); /* a reader in: the write slot is stale */
	build(&r, t, 2);
	CHECK(!r.holds[0].held && r.nr_deadlocks == 0);
	resources__free(&r);
	t[0].stack.frames[0].future = F_AREADER;
	build(&r, t, 2);
	CHECK(r.holds[0].held && r.res[r.holds[0].resource].counted);
	CHECK(r.nr_deadlocks == 1 && r.deadlocks[0].proven);
	resources__free(&r);
	put64(rwl + STATE_OFF, 5); /* two readers, one slot: a reader out of sight, which
				    * may go on: no edge */
	build(&r, t, 2);
	CHECK(!r.holds[0].held && !r.res[r.holds[0].resource].counted);
	CHECK(r.nr_deadlocks == 0);
	resources__free(&r);
	put64(rwl + STATE_OFF, 0); /* free: nothing to wait for */
	build(&r, t, 2);
	CHECK(r.nr_deadlocks == 0);
	resources__free(&r);
}

/* What each family's state word says (model.c, lock_family__*), against the crates'
 * own constants: tokio's PERMIT_SHIFT, async-lock's and futures-util's bit 0, async-lock's
 * WRITER_BIT and ONE_READER. */
static void test_families(void)
{
	CHECK(lock_family__locked(LOCK_TOKIO, 0) && !lock_family__locked(LOCK_TOKIO, 1u << 1));
	CHECK(lock_family__locked(LOCK_TOKIO, 1) /* closed, no permit */);
	CHECK(lock_family__held(LOCK_ASYNC_LOCK, 1) && !lock_family__held(LOCK_ASYNC_LOCK, 2));
	/* futures-util: IS_LOCKED 1, HAS_WAITERS 2 */
	CHECK(lock_family__held(LOCK_FUTURES, 1) && lock_family__held(LOCK_FUTURES, 3));
	CHECK(!lock_family__locked(LOCK_FUTURES, 0) && !lock_family__locked(LOCK_FUTURES, 2));
	CHECK(!strcmp(lock_family__name(LOCK_FUTURES), "futures-util"));
	CHECK(lock_family__held(LOCK_ASYNC_RWLOCK, 1) && !lock_family__held(LOCK_ASYNC_RWLOCK, 3));
	CHECK_EQ_U64(lock_family__readers(LOCK_ASYNC_RWLOCK, 2 * 5), 5);
	CHECK_EQ_U64(lock_family__permits(LOCK_ASYNC_SEMAPHORE, 4), 4);
	CHECK_EQ_U64(lock_family__permits(LOCK_FUTURES, 4), 0);
}

int main(void)
{
	build_model();
	test_families();
	test_steps_and_states();
	test_cycle_of_two();
	test_behind();
	test_ambiguous_and_self();
	test_join_cycle_and_bad_pointers();
	test_all_permits();
	test_held_in_part();
	test_async_lock_rwlock();
	test_random_images();
	TEST_MAIN_END();
}
