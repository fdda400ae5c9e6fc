// SPDX-License-Identifier: GPL-2.0
/*
 * Task mode's trees (user/trace/task_trees.c): what a start and an end tree say of each
 * future, and the pairing of a thread's records, on hand-made trees. Futures: 0 task
 * and 1 middle (compiler futures, states Unresumed/Returned/Panicked/Suspend0/1), 2 a
 * hand-written combinator (no __state) holding 3 and 4, compiler leaves.
 */
#include "trace/task_trees.h"
#include "testlib.h"

static void add_future(struct model *m, const char *path, bool state)
{
	struct future *f = must(model__add_future(m));

	f->path = path;
	f->kind = state ? FUTURE_ASYNC_FN : FUTURE_HANDWRITTEN;
	f->has_state = state;
	if (state) {
		f->states = must(calloc(5, sizeof(*f->states)));
		f->nr_states = 5;
		for (uint32_t k = 0; k < 5; k++) {
			f->states[k].discr = k;
			f->states[k].kind = k == 0   ? STATE_UNRESUMED
					    : k == 1 ? STATE_RETURNED
					    : k == 2 ? STATE_PANICKED
						     : STATE_SUSPEND;
			f->states[k].suspend_index = k >= 3 ? k - 3 : 0;
		}
	}
	f->poll = -1;
	f->folded_into = -1;
}

static void build(struct model *m)
{
	model__init(m);
	add_future(m, "t::task::{async_fn_env#0}", true);
	add_future(m, "t::middle::{async_fn_env#0}", true);
	add_future(m, "t::Join", false);
	add_future(m, "t::a::{async_fn_env#0}", true);
	add_future(m, "t::b::{async_fn_env#0}", true);
}

static struct task_tree_node node(int32_t future, uint64_t addr, int8_t parent, uint64_t discr)
{
	return (struct task_tree_node){
	    .addr = addr, .discr = discr, .future = future, .parent = parent};
}

static struct task_tree tree(uint8_t phase, uint64_t start, uint32_t nr,
			     const struct task_tree_node *n)
{
	struct task_tree t = {.phase = phase,
			      .tid = 7,
			      .header = 0x1000,
			      .start_ns = start,
			      .end_ns = start + 50,
			      .info = 0,
			      .nr = nr};

	memcpy(t.nodes, n, nr * sizeof(*n));
	for (uint32_t i = 1; i < nr; i++)
		t.nodes[i].depth = t.nodes[t.nodes[i].parent].depth + 1;
	return t;
}

static const struct task_future_event *event(const struct task_poll *p, int32_t f, uint64_t a)
{
	for (uint32_t i = 0; i < p->nr_events; i++)
		if (p->events[i].future == f && p->events[i].addr == a)
			return &p->events[i];
	return NULL;
}

/*
 * task (Suspend0) -> middle (Suspend1) -> Join -> {a (Suspend0), b (Suspend0)}.
 * At the end: task still Suspend0, middle moved to Suspend0 (a new await), the Join
 * gone with a and b: middle moved on, so the Join was Ready; a and b left with their
 * awaiter, a hand-written one: ended, not known how. A new leaf b' under middle.
 */
static void test_diff(void)
{
	struct model m;
	struct task_poll p;
	const struct task_tree_node s[] = {node(0, 0x100, -1, 3), node(1, 0x200, 0, 4),
					   node(2, 0x300, 1, 0), node(3, 0x400, 2, 3),
					   node(4, 0x500, 2, 3)};
	const struct task_tree_node e[] = {node(0, 0x100, -1, 3), node(1, 0x200, 0, 3),
					   node(4, 0x600, 1, 0)};
	struct task_tree st = tree(TASK_PHASE_START, 100, 5, s),
			 et = tree(TASK_PHASE_END, 100, 3, e);
	const struct task_future_event *x;

	build(&m);
	task_poll__diff(&m, &st, &et, &p);
	CHECK(!p.completed);
	CHECK_EQ_U64(p.nr_events, 6);
	CHECK((x = event(&p, 0, 0x100)) && x->fate == TASK_FUTURE_PENDING && x->await_index == 0);
	CHECK((x = event(&p, 1, 0x200)) && x->fate == TASK_FUTURE_PENDING && x->await_index == 0);
	CHECK((x = event(&p, 2, 0x300)) && x->fate == TASK_FUTURE_READY);
	CHECK((x = event(&p, 3, 0x400)) && x->fate == TASK_FUTURE_ENDED);
	CHECK((x = event(&p, 4, 0x500)) && x->fate == TASK_FUTURE_ENDED);
	CHECK((x = event(&p, 4, 0x600)) && x->fate == TASK_FUTURE_PENDING && x->started);

	/* the task's future gone (it returned Ready): the root Ready, the chain below a
	 * compiler awaiter Ready, below the hand-written Join not known */
	et = tree(TASK_PHASE_END, 100, 0, e);
	et.flags = TASK_TREE_GONE;
	task_poll__diff(&m, &st, &et, &p);
	CHECK(p.completed);
	CHECK((x = event(&p, 0, 0x100)) && x->fate == TASK_FUTURE_READY);
	CHECK((x = event(&p, 1, 0x200)) && x->fate == TASK_FUTURE_READY);
	CHECK((x = event(&p, 2, 0x300)) && x->fate == TASK_FUTURE_READY);
	CHECK((x = event(&p, 3, 0x400)) && x->fate == TASK_FUTURE_ENDED);

	/* gone in a poll that began with the task cancelled (an abort): the future was
	 * dropped, not Ready: the root and everything below it ended */
	et = tree(TASK_PHASE_END, 100, 0, e);
	et.flags = TASK_TREE_GONE | TASK_TREE_CANCELLING;
	task_poll__diff(&m, &st, &et, &p);
	CHECK(p.completed && p.cancelled);
	for (uint32_t i = 0; i < 5; i++)
		CHECK((x = event(&p, s[i].future, s[i].addr)) && x->fate == TASK_FUTURE_ENDED);
	/* a cancel that reached it while it ran, read at its end: the same */
	et = tree(TASK_PHASE_END, 100, 0, e);
	et.flags = TASK_TREE_GONE | TASK_TREE_CANCELLED_IN_POLL;
	task_poll__diff(&m, &st, &et, &p);
	CHECK(p.completed && p.cancelled && !p.unsure);
	for (uint32_t i = 0; i < 5; i++)
		CHECK((x = event(&p, s[i].future, s[i].addr)) && x->fate == TASK_FUTURE_ENDED);
	/* an end that could not be told: completed, the root ended, neither Ready nor
	 * cancelled */
	et.flags = TASK_TREE_GONE | TASK_TREE_END_UNSURE;
	task_poll__diff(&m, &st, &et, &p);
	CHECK(p.completed && !p.cancelled && p.unsure);
	CHECK((x = event(&p, s[0].future, s[0].addr)) && x->fate == TASK_FUTURE_ENDED);
	/* the flag alone (the future still there: this poll has not dropped it) */
	et = tree(TASK_PHASE_END, 100, 3, e);
	et.flags = TASK_TREE_CANCELLING;
	task_poll__diff(&m, &st, &et, &p);
	CHECK(!p.completed && !p.cancelled);

	/* a panic in middle's await: middle Panicked, what it awaited not Ready */
	const struct task_tree_node e2[] = {node(0, 0x100, -1, 3), node(1, 0x200, 0, 2)};
	et = tree(TASK_PHASE_END, 100, 2, e2);
	task_poll__diff(&m, &st, &et, &p);
	CHECK((x = event(&p, 2, 0x300)) && x->fate == TASK_FUTURE_ENDED);
	model__free(&m);
}

/*
 * Instances told apart by path: the same leaf type at the same address, held at
 * another await of its parent (slot 1, not 0), is another instance (the first left
 * Ready: its compiler awaiter moved on). An async fn found at an earlier await than
 * at the start (a loop, or a new instance in the old one's place) is flagged.
 */
static void test_identity(void)
{
	struct model m;
	struct task_poll p;
	struct task_tree_node s[] = {node(0, 0x100, -1, 3), node(3, 0x400, 0, 3)};
	struct task_tree_node e[] = {node(0, 0x100, -1, 4), node(3, 0x400, 0, 3)};
	struct task_tree st, et;
	const struct task_future_event *x;
	uint32_t pending = 0, ready = 0;

	build(&m);
	e[1].slot = 1;
	st = tree(TASK_PHASE_START, 100, 2, s);
	et = tree(TASK_PHASE_END, 100, 2, e);
	task_poll__diff(&m, &st, &et, &p);
	CHECK_EQ_U64(p.nr_events, 3);
	for (uint32_t i = 0; i < p.nr_events; i++) {
		x = &p.events[i];
		if (x->future != 3)
			continue;
		pending += x->fate == TASK_FUTURE_PENDING && x->started;
		ready += x->fate == TASK_FUTURE_READY && !x->started;
	}
	CHECK_EQ_U64(pending, 1);
	CHECK_EQ_U64(ready, 1);
	CHECK((x = event(&p, 0, 0x100)) && !x->went_back && x->await_index == 1);

	/* the task back at its first await (Suspend1 -> Suspend0): pending, went back */
	s[0].discr = 4;
	e[0].discr = 3;
	e[1].slot = 0;
	st = tree(TASK_PHASE_START, 100, 2, s);
	et = tree(TASK_PHASE_END, 100, 2, e);
	task_poll__diff(&m, &st, &et, &p);
	CHECK((x = event(&p, 0, 0x100)) && x->fate == TASK_FUTURE_PENDING && x->went_back &&
	      x->await_index == 0);
	CHECK((x = event(&p, 3, 0x400)) && x->fate == TASK_FUTURE_PENDING && !x->went_back);
	model__free(&m);
}

static int polls_seen;
static struct task_poll last;

static void on_poll(void *ctx, const struct task_poll *p)
{
	(void)ctx;
	polls_seen++;
	last = *p;
}

/*
 * Polls of one task, each record its end tree: the first has no tree before it; the
 * next starts with the tree the last one ended with; one that began before the last
 * ended overlapped another thread's poll (told apart); after the task completed, a
 * poll at its header is a new task's first.
 */
static void test_pairing(void)
{
	struct model m;
	struct task_trees *t;
	const struct task_tree_node n1[] = {node(0, 0x100, -1, 3), node(1, 0x200, 0, 3)};
	const struct task_tree_node n2[] = {node(0, 0x100, -1, 4)};
	struct task_tree e1 = tree(TASK_PHASE_END, 100, 2, n1),
			 e2 = tree(TASK_PHASE_END, 200, 1, n2), over = e2,
			 gone = tree(TASK_PHASE_END, 400, 0, n2), again = e1;
	const struct task_future_event *x;

	build(&m);
	t = must(task_trees__new(&m, NULL, 0));
	CHECK_EQ_I64(task_trees__add(t, &e1, on_poll, NULL), 0);
	CHECK_EQ_U64(polls_seen, 1);
	CHECK(last.first && !last.concurrent);
	CHECK_EQ_I64(task_trees__add(t, &e2, on_poll, NULL), 0);
	CHECK_EQ_U64(polls_seen, 2);
	CHECK(!last.first);
	/* middle (a compiler future's awaitee) left while the task moved on: Ready */
	CHECK((x = event(&last, 1, 0x200)) && x->fate == TASK_FUTURE_READY);
	CHECK((x = event(&last, 0, 0x100)) && x->fate == TASK_FUTURE_PENDING &&
	      x->await_index == 1);
	over.start_ns = 150; /* before e2 ended (250) */
	CHECK_EQ_I64(task_trees__add(t, &over, on_poll, NULL), 0);
	CHECK(last.concurrent);
	gone.flags = TASK_TREE_GONE;
	CHECK_EQ_I64(task_trees__add(t, &gone, on_poll, NULL), 0);
	CHECK(last.completed && !last.concurrent);
	CHECK((x = event(&last, 0, 0x100)) && x->fate == TASK_FUTURE_READY);
	again.start_ns = 600;
	again.end_ns = 650;
	CHECK_EQ_I64(task_trees__add(t, &again, on_poll, NULL), 0);
	CHECK(last.first && !last.completed);
	CHECK_EQ_U64(polls_seen, 5);
	/* a tree not read (the per-CPU buffers used meanwhile): a poll of the task, no
	 * fates, and its next poll starts over (no tree before it) */
	struct task_tree unread = tree(TASK_PHASE_END, 700, 0, n1), next = e2;

	unread.flags = TASK_TREE_NOT_READ;
	CHECK_EQ_I64(task_trees__add(t, &unread, on_poll, NULL), 0);
	CHECK(last.not_read && !last.lost && !last.first && last.nr_events == 0);
	CHECK_EQ_I64(last.root, 0); /* from the tree before it */
	next.start_ns = 800;
	next.end_ns = 850;
	CHECK_EQ_I64(task_trees__add(t, &next, on_poll, NULL), 0);
	CHECK(last.first && !last.not_read);
	CHECK_EQ_U64(polls_seen, 7);
	/* it ends; then a poll that found it finished already (a wake after its end): a
	 * finished poll, no events, not a new task that completed; the task stays
	 * finished, so the next one like it is too */
	struct task_tree end = tree(TASK_PHASE_END, 900, 0, n2), after = end;

	end.flags = TASK_TREE_GONE;
	CHECK_EQ_I64(task_trees__add(t, &end, on_poll, NULL), 0);
	CHECK(last.completed && !last.finished && last.nr_events > 0);
	for (int k = 0; k < 2; k++) {
		after.start_ns = 1000 + 100 * (uint64_t)k;
		after.end_ns = after.start_ns + 50;
		after.flags = TASK_TREE_GONE | TASK_TREE_GONE_AT_START;
		CHECK_EQ_I64(task_trees__add(t, &after, on_poll, NULL), 0);
		CHECK(last.finished && last.nr_events == 0 && !last.concurrent);
	}
	CHECK_EQ_U64(polls_seen, 10);
	task_trees__free(t);
	model__free(&m);
}

/* Decoding refuses records whose parents do not point back. */
static void test_decode(void)
{
	struct task_tree_record r = {.type = RECORD_TASK_TREE, .nr_nodes = 2};
	struct task_tree out;

	r.nodes[0].parent = -1;
	r.nodes[1].parent = 0;
	CHECK_EQ_I64(task_tree__decode(&r, TASK_TREE_RECORD_HEAD + 2 * sizeof(r.nodes[0]), &out),
		     0);
	CHECK_EQ_U64(out.nr, 2);
	r.nodes[1].parent = 1;
	CHECK(task_tree__decode(&r, sizeof(r), &out) != 0);
	r.nodes[1].parent = 0;
	CHECK(task_tree__decode(&r, TASK_TREE_RECORD_HEAD + sizeof(r.nodes[0]), &out) != 0);
	r.nr_nodes = TASK_TREE_MAX_NODES + 1;
	CHECK(task_tree__decode(&r, sizeof(r), &out) != 0);
}

int main(void)
{
	test_diff();
	test_identity();
	test_pairing();
	test_decode();
	TEST_MAIN_END();
}
