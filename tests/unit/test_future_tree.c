// SPDX-License-Identifier: GPL-2.0
/*
 * The future-tree walk without a process (user/model/future_tree.c), on a hand-made
 * table and memory images: a compiler future's Suspend conditions, a join holding
 * two children of one type through Boxes, a niche Option (a null Box: no child), an
 * enum's variant condition read after a deref, a dyn child known and unknown by its
 * vtable, a child without a layout, a __state that is not live, unreadable memory,
 * a cycle, the depth and node bounds; then 200,000 random images under ASan/UBSan:
 * nothing read is trusted.
 */
#include <stdlib.h>
#include <string.h>

#include "model/future_tree.h"
#include "fake_image.h"
#include "testlib.h"

#define VT_LEAF	   0x7000 /* the vtable of Leaf */
#define VT_NOLAY   0x7100 /* of NoLayout */
#define VT_UNKNOWN 0x7200 /* none the model knows */

static int32_t vtable_of(void *ctx, uint64_t vtable)
{
	(void)ctx;
	return vtable == VT_LEAF ? 2 : vtable == VT_NOLAY ? 5 : -1;
}

static const struct tree_reader rd = {read_image, vtable_of, NULL};

/*
 * Futures: 0 Task (compiler: __state u8 at 0; Suspend0 = 3 awaits Join at +16,
 * Suspend1 = 4 awaits a Pin<Box<dyn Future>> at +8); 1 Join (hand-written: a Box
 * at 0 and one at 8 to a Leaf each, an Option<Box<Enum>> at 16); 2 Leaf (compiler:
 * __state at 0, Suspend0 = 3 awaits Opaque at +8); 3 Enum (hand-written enum, u8
 * discriminant at 0; variant 1 holds a Box<Leaf> at 8, and the Leaf's own u16 at
 * +4 behind it must be 5..7); 4 Opaque (hand-written, no child); 5 NoLayout (no
 * layout known); 6 Node (a Box<Node> at 0: a linked list).
 */
static struct future futures[7];
static struct future_tree trees[7];
static struct tree_slot slots[16];
static struct model m;

static void slot(uint32_t i, int32_t child, uint64_t off, bool deref)
{
	slots[i] = (struct tree_slot){
	    .child = child, .await_index = -1, .nr_steps = 1, .steps = {{off, deref}}};
}

static void build_model(void)
{
	for (int f = 0; f < 7; f++)
		futures[f] = (struct future){.path = "t::F", .kind = FUTURE_HANDWRITTEN};
	futures[0].kind = futures[2].kind = FUTURE_ASYNC_FN;
	/* Task: 2 slots */
	trees[0] = (struct future_tree){.known = true,
					.has_discr = true,
					.discr_size = 1,
					.discr_max = 4,
					.first_slot = 0,
					.nr_slots = 2};
	slot(0, 1, 16, false);
	slots[0].await_index = 0;
	slots[0].nr_conds = 1;
	slots[0].conds[0] = (struct tree_cond){.kind = TREE_COND_IN, .size = 1, .lo = 3, .hi = 3};
	slots[1] = (struct tree_slot){.child = -1,
				      .dyn = true,
				      .await_index = 1,
				      .nr_steps = 1,
				      .steps = {{8, false}},
				      .dyn_data = 0,
				      .dyn_vtable = 8,
				      .nr_conds = 1};
	slots[1].conds[0] = (struct tree_cond){.kind = TREE_COND_IN, .size = 1, .lo = 4, .hi = 4};
	/* Join: 3 slots */
	trees[1] = (struct future_tree){
	    .known = true, .discr_max = UINT64_MAX, .first_slot = 2, .nr_slots = 3};
	slot(2, 2, 0, true);
	slot(3, 2, 8, true);
	slot(4, 3, 16, true);
	slots[4].nr_conds = 1; /* Some: the pointer is not 0 */
	slots[4].conds[0] =
	    (struct tree_cond){.kind = TREE_COND_NOT_IN, .size = 8, .offset = 16, .lo = 0, .hi = 0};
	/* Leaf: 1 slot */
	trees[2] = (struct future_tree){.known = true,
					.has_discr = true,
					.discr_size = 1,
					.discr_max = 3,
					.first_slot = 5,
					.nr_slots = 1};
	slot(5, 4, 8, false);
	slots[5].nr_conds = 1;
	slots[5].conds[0] = (struct tree_cond){.kind = TREE_COND_IN, .size = 1, .lo = 3, .hi = 3};
	/* Enum: variant 1 holds Box<Leaf> at 8; behind it a u16 at +4 in 5..7 */
	trees[3] = (struct future_tree){.known = true,
					.has_discr = true,
					.discr_size = 1,
					.discr_max = UINT64_MAX,
					.first_slot = 6,
					.nr_slots = 1};
	slot(6, 2, 8, true);
	slots[6].nr_conds = 2;
	slots[6].conds[0] = (struct tree_cond){.kind = TREE_COND_IN, .size = 1, .lo = 1, .hi = 1};
	slots[6].conds[1] = (struct tree_cond){
	    .kind = TREE_COND_IN, .size = 2, .at_step = 1, .offset = 4, .lo = 5, .hi = 7};
	trees[4] = (struct future_tree){.known = true, .discr_max = UINT64_MAX, .first_slot = 7};
	trees[5] = (struct future_tree){.known = false};
	/* Node: a Box<Node> at 0 */
	trees[6] = (struct future_tree){
	    .known = true, .discr_max = UINT64_MAX, .first_slot = 7, .nr_slots = 1};
	slot(7, 6, 0, true);
	m = (struct model){.futures = futures,
			   .nr_futures = 7,
			   .trees = trees,
			   .nr_trees = 7,
			   .tree_slots = slots,
			   .nr_tree_slots = 8};
}

#define TASK 0x100u
#define L1   0x300u
#define L2   0x400u
#define EN   0x500u
#define L3   0x600u

static uint32_t walk(int32_t root, uint64_t at, struct tree_walk_node *n, uint32_t cap,
		     uint32_t depth, struct tree_walk_stats *st)
{
	return future_tree__walk(&m, root, BASE + at, &rd, n, cap, depth, st);
}

static void test_join(void)
{
	struct tree_walk_node n[32];
	struct tree_walk_stats st;
	uint32_t nr;

	memset(image, 0, sizeof(image));
	put8(BASE + TASK, 3);		    /* Task: Suspend0, Join at +16 */
	put64(BASE + TASK + 16, BASE + L1); /* Join.a */
	put64(BASE + TASK + 24, BASE + L2); /* Join.b */
	put8(BASE + L1, 3);		    /* Leaf 1 suspended: Opaque at +8 */
	put8(BASE + L2, 0);		    /* Leaf 2 not started */
	nr = walk(0, TASK, n, 32, 16, &st);
	CHECK_EQ_U64(nr, 5);
	CHECK(n[0].future == 0 && n[0].parent == -1 && n[0].slot == -1 && n[0].discr == 3);
	CHECK(n[1].future == 1 && n[1].addr == BASE + TASK + 16 && n[1].parent == 0 &&
	      n[1].slot == 0 && n[1].depth == 1);
	/* both children of one type, each at its own address, in slot order */
	CHECK(n[2].future == 2 && n[2].addr == BASE + L1 && n[2].parent == 1 && n[2].slot == 2);
	CHECK(n[3].future == 2 && n[3].addr == BASE + L2 && n[3].parent == 1 && n[3].slot == 3);
	CHECK(n[2].discr == 3 && n[3].discr == 0);
	/* Leaf 1's Suspend0 holds Opaque; Leaf 2's is not live; the None Option: nothing */
	CHECK(n[4].future == 4 && n[4].addr == BASE + L1 + 8 && n[4].parent == 2 &&
	      n[4].depth == 3);
	CHECK(!st.cut_nodes && !st.cut_depth && !st.repeats && !st.unreadable);
	for (uint32_t i = 0; i < nr; i++)
		CHECK(n[i].flags == 0);

	/* Some(Box<Enum>) in variant 1, whose Leaf's u16 at +4 is 6: one more branch */
	put64(BASE + TASK + 32, BASE + EN);
	put8(BASE + EN, 1);
	put64(BASE + EN + 8, BASE + L3);
	put8(BASE + L3, 0);
	image[L3 + 4] = 6;
	nr = walk(0, TASK, n, 32, 16, &st);
	CHECK_EQ_U64(nr, 7);
	CHECK(n[4].future == 3 && n[4].addr == BASE + EN && n[4].parent == 1 && n[4].discr == 1);
	CHECK(n[6].future == 2 && n[6].addr == BASE + L3 && n[6].parent == 4 && n[6].slot == 6);
	/* the condition after the deref fails (8 is outside 5..7), then the variant's */
	image[L3 + 4] = 8;
	CHECK_EQ_U64(walk(0, TASK, n, 32, 16, &st), 6);
	image[L3 + 4] = 6;
	put8(BASE + EN, 2);
	CHECK_EQ_U64(walk(0, TASK, n, 32, 16, &st), 6);
	put8(BASE + EN, 1);

	/* the node bound: what is left out is counted */
	nr = walk(0, TASK, n, 3, 16, &st);
	CHECK(nr == 3 && st.cut_nodes == 3); /* L2, the Enum, then Opaque under L1 */
	/* the depth bound: Join's children are not read */
	nr = walk(0, TASK, n, 32, 1, &st);
	CHECK(nr == 2 && st.cut_depth == 1 && (n[1].flags & TREE_NODE_DEPTH));

	/* Join.b points at Leaf 1 too: one future, kept once */
	put64(BASE + TASK + 24, BASE + L1);
	nr = walk(0, TASK, n, 32, 16, &st);
	CHECK(st.repeats == 1 && nr == 6);
	/* a Box pointing outside memory: the Leaf is there but unreadable */
	put64(BASE + TASK + 24, 0xdead0000);
	nr = walk(0, TASK, n, 32, 16, &st);
	CHECK(nr == 7 && n[3].addr == 0xdead0000 && (n[3].flags & TREE_NODE_UNREADABLE));
	/* a __state the Leaf never has */
	put64(BASE + TASK + 24, BASE + L2);
	put8(BASE + L2, 9);
	nr = walk(0, TASK, n, 32, 16, &st);
	CHECK(n[3].future == 2 && (n[3].flags & TREE_NODE_BAD_STATE));
	/* Task returned: no child at all */
	put8(BASE + TASK, 1);
	CHECK_EQ_U64(walk(0, TASK, n, 32, 16, &st), 1);
	/* a root that is no model future, an unreadable root */
	CHECK_EQ_U64(walk(9, TASK, n, 32, 16, &st), 0);
	nr = future_tree__walk(&m, 0, 0x42, &rd, n, 32, 16, &st);
	CHECK(nr == 1 && (n[0].flags & TREE_NODE_UNREADABLE));
}

static void test_dyn(void)
{
	struct tree_walk_node n[8];
	struct tree_walk_stats st;
	uint32_t nr;

	memset(image, 0, sizeof(image));
	put8(BASE + TASK, 4);		   /* Suspend1: the fat pointer at +8 */
	put64(BASE + TASK + 8, BASE + L1); /* data */
	put64(BASE + TASK + 16, VT_LEAF);  /* vtable */
	put8(BASE + L1, 3);
	nr = walk(0, TASK, n, 8, 16, &st);
	CHECK(nr == 3 && n[1].future == 2 && n[1].addr == BASE + L1 && n[1].slot == 1);
	CHECK(n[2].future == 4 && n[2].parent == 1);
	put64(BASE + TASK + 16, VT_NOLAY); /* a future the model has no layout of */
	nr = walk(0, TASK, n, 8, 16, &st);
	CHECK(nr == 2 && n[1].future == 5 && (n[1].flags & TREE_NODE_NO_LAYOUT));
	put64(BASE + TASK + 16, VT_UNKNOWN);
	nr = walk(0, TASK, n, 8, 16, &st);
	CHECK(nr == 2 && n[1].future == -1 && (n[1].flags & TREE_NODE_UNKNOWN_DYN));
	/* no vtable resolver: every dyn child is unknown */
	struct tree_reader none = {read_image, NULL, NULL};
	nr = future_tree__walk(&m, 0, BASE + TASK, &none, n, 8, 16, &st);
	CHECK(nr == 2 && n[1].future == -1);
	/* a null data pointer: no child */
	put64(BASE + TASK + 8, 0);
	CHECK_EQ_U64(walk(0, TASK, n, 8, 16, &st), 1);
}

static void test_follow(void)
{
	uint64_t to, vt;

	memset(image, 0, sizeof(image));
	put8(BASE + EN, 1);
	put64(BASE + EN + 8, BASE + L3);
	image[L3 + 4] = 7;
	CHECK(future_tree__follow(&slots[6], BASE + EN, &rd, &to, &vt) == 1 && to == BASE + L3);
	image[L3 + 4] = 4;
	CHECK(future_tree__follow(&slots[6], BASE + EN, &rd, &to, &vt) == 0);
	put64(BASE + EN + 8, 0xdead0000); /* the condition behind the pointer: unreadable */
	CHECK(future_tree__follow(&slots[6], BASE + EN, &rd, &to, &vt) == -1);
	/* a condition past the last step is never met */
	struct tree_slot s = slots[6];
	s.conds[1].at_step = 2;
	CHECK(future_tree__follow(&s, BASE + EN, &rd, &to, &vt) == 0);
}

static void test_cycle(void)
{
	struct tree_walk_node n[64];
	struct tree_walk_stats st;
	uint32_t nr;

	/* a Node whose Box points back at itself */
	memset(image, 0, sizeof(image));
	put64(BASE + 0x100, BASE + 0x100);
	nr = walk(6, 0x100, n, 64, 100, &st);
	CHECK(nr == 1 && st.repeats == 1);
	/* a loop of three */
	put64(BASE + 0x100, BASE + 0x200);
	put64(BASE + 0x200, BASE + 0x300);
	put64(BASE + 0x300, BASE + 0x100);
	nr = walk(6, 0x100, n, 64, 100, &st);
	CHECK(nr == 3 && st.repeats == 1 && n[2].depth == 2);
	/* a list of 40: cut at the depth bound */
	for (uint64_t i = 0; i < 40; i++)
		put64(BASE + 0x100 + 16 * i, BASE + 0x100 + 16 * (i + 1));
	nr = walk(6, 0x100, n, 64, 10, &st);
	CHECK(nr == 11 && st.cut_depth == 1 && n[10].depth == 10);
}

static void test_random(void)
{
	static struct tree_walk_node n[48];
	uint64_t x = 0x9e3779b97f4a7c15ull, below = 0;

	for (int round = 0; round < 200000; round++) {
		struct tree_walk_stats st;
		int32_t root = (int32_t)(x % 9) - 1; /* -1 .. 7 */

		for (unsigned i = 0; i < 64; i++) { /* refresh a part of the image */
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			uint64_t at = x % (SIZE / 8), v = x >> 3;
			if (v % 4 == 0)
				v = BASE + (v % SIZE); /* often a plausible pointer */
			else if (v % 4 == 1)
				v %= 5; /* or a small state */
			else if (v % 4 == 2)
				v = VT_LEAF + 0x100 * (v % 3);
			memcpy(image + at * 8, &v, 8);
		}
		uint32_t nr = future_tree__walk(&m, root, BASE + (x % SIZE), &rd, n, 48, 12, &st);
		CHECK(nr <= 48);
		for (uint32_t i = 1; i < nr; i++)
			CHECK(n[i].parent >= 0 && (uint32_t)n[i].parent < i &&
			      n[i].depth == n[n[i].parent].depth + 1 && n[i].depth <= 12);
		below += nr > 1 ? nr - 1 : 0;
	}
	CHECK(below > 20000); /* the random images did lead below the roots */
}

int main(void)
{
	build_model();
	test_join();
	test_dyn();
	test_follow();
	test_cycle();
	test_random();
	TEST_MAIN_END();
}
