// SPDX-License-Identifier: GPL-2.0
/*
 * The stack decoder without a process (user/stacks/decode.c): hand-made memory
 * images over a small model: a three-deep stack through a Box, a boxed dyn Future
 * resolved through its vtable, an unknown vtable, end states, a bad __state, an
 * unreadable pointer, a cycle in memory, the depth limit; then 200,000 random
 * images (random bytes, random root) under ASan/UBSan: nothing read is trusted.
 */
#include <stdlib.h>
#include <string.h>

#include "stacks/decode.h"
#include "fake_image.h"
#include "testlib.h"

/*
 * Futures: 0 Outer (Suspend0 awaits Mid through a Box at awaitee+0), 1 Mid (Suspend0
 * awaits Leaf directly, at offset 16), 2 Leaf (hand-written: opaque), 3 DynOuter
 * (Suspend0 awaits a Pin<Box<dyn Future>> at offset 8). __state at offset 0, 1 byte:
 * 0 Unresumed, 1 Returned, 2 Panicked, 3 Suspend0.
 */
static struct future_state states[4][4];
static struct future futures[4];
static struct await_edge edges[3];
static struct future_vtable vtables[1];
static struct model m;

static void build_model(void)
{
	const char *names[4] = {"t::outer", "t::mid", "t::Leaf", "t::dyn_outer"};
	uint64_t awaitee[4] = {8, 16, 0, 8};

	for (int f = 0; f < 4; f++) {
		futures[f] = (struct future){.path = names[f], .kind = FUTURE_ASYNC_FN, .size = 64};
		if (f == 2) {
			futures[f].kind = FUTURE_HANDWRITTEN;
			continue;
		}
		futures[f].has_state = true;
		futures[f].state_size = 1;
		futures[f].states = states[f];
		futures[f].nr_states = 4;
		for (int s = 0; s < 4; s++)
			states[f][s] = (struct future_state){
			    .discr = (uint64_t)s,
			    .kind = s == 0   ? STATE_UNRESUMED
				    : s == 1 ? STATE_RETURNED
				    : s == 2 ? STATE_PANICKED
					     : STATE_SUSPEND,
			    .file = "src/x.rs",
			    .line = (uint32_t)(100 * f + s),
			    .awaitee_offset = s == 3 ? awaitee[f] : FUTURE_NO_OFFSET};
	}
	edges[0] = (struct await_edge){
	    .from = 0, .to = 1, .steps_known = true, .nr_steps = 1, .steps = {{0, true}}};
	edges[1] = (struct await_edge){.from = 1, .to = 2, .steps_known = true};
	edges[2] = (struct await_edge){.from = 3,
				       .to = -1,
				       .steps_known = true,
				       .dyn = true,
				       .nr_steps = 1,
				       .steps = {{0, true}}};
	vtables[0] = (struct future_vtable){.type = "t::outer", .future = 0, .addr = 0x9000};
	m = (struct model){.futures = futures,
			   .nr_futures = 4,
			   .edges = edges,
			   .nr_edges = 3,
			   .vtables = vtables,
			   .nr_vtables = 1};
}

static void test_three_deep(const struct vtable_index *ix)
{
	struct task_stack s;

	memset(image, 0, sizeof(image));
	put8(BASE + 0x100, 3);		   /* outer: Suspend0 */
	put64(BASE + 0x108, BASE + 0x200); /* its awaitee: Box<mid> */
	put8(BASE + 0x200, 3);		   /* mid: Suspend0, Leaf at +16 */
	stacks__decode(&m, ix, 0, BASE + 0x100, read_image, NULL, &s);
	CHECK_EQ_U64(s.nr, 3);
	CHECK(s.frames[0].state == FRAME_SUSPENDED && s.frames[0].line == 3);
	CHECK(s.frames[1].future == 1 && s.frames[1].addr == BASE + 0x200 &&
	      s.frames[1].line == 103);
	CHECK(s.frames[2].future == 2 && s.frames[2].addr == BASE + 0x210 &&
	      s.frames[2].state == FRAME_OPAQUE);
	CHECK(!s.cycle && !s.too_deep);

	/* mid returned: the stack ends there, said so */
	put8(BASE + 0x200, 1);
	stacks__decode(&m, ix, 0, BASE + 0x100, read_image, NULL, &s);
	CHECK(s.nr == 2 && s.frames[1].state == FRAME_RETURNED);
	/* a value mid never holds */
	put8(BASE + 0x200, 9);
	stacks__decode(&m, ix, 0, BASE + 0x100, read_image, NULL, &s);
	CHECK(s.nr == 2 && s.frames[1].state == FRAME_BAD_STATE);
	/* a Box pointing nowhere */
	put64(BASE + 0x108, 0xdead0000);
	stacks__decode(&m, ix, 0, BASE + 0x100, read_image, NULL, &s);
	CHECK(s.nr == 2 && s.frames[1].state == FRAME_UNREADABLE);
	/* the root itself unreadable */
	stacks__decode(&m, ix, 0, 0x42, read_image, NULL, &s);
	CHECK(s.nr == 1 && s.frames[0].state == FRAME_UNREADABLE);
}

static void test_dyn(const struct vtable_index *ix)
{
	struct task_stack s;

	memset(image, 0, sizeof(image));
	put8(BASE + 0x100, 3);		      /* dyn_outer: Suspend0 */
	put64(BASE + 0x108, BASE + 0x300);    /* fat pointer: data ... */
	put64(BASE + 0x110, 0x9000 + 0x1000); /* ... and vtable (bias 0x1000) */
	put8(BASE + 0x300, 0);		      /* outer, not started */
	stacks__decode(&m, ix, 3, BASE + 0x100, read_image, NULL, &s);
	CHECK_EQ_U64(s.nr, 2);
	CHECK(s.frames[1].future == 0 && s.frames[1].state == FRAME_UNRESUMED);
	/* a vtable the model does not know */
	put64(BASE + 0x110, 0x7777);
	stacks__decode(&m, ix, 3, BASE + 0x100, read_image, NULL, &s);
	CHECK(s.nr == 2 && s.frames[1].future == -1 && s.frames[1].state == FRAME_UNKNOWN_DYN);
}

static void test_cycle(const struct vtable_index *ix)
{
	struct task_stack s;

	/* outer's Box points back at outer itself */
	memset(image, 0, sizeof(image));
	put8(BASE + 0x100, 3);
	put64(BASE + 0x108, BASE + 0x100);
	edges[0].to = 0; /* outer awaits outer (recursion through a Box) */
	stacks__decode(&m, ix, 0, BASE + 0x100, read_image, NULL, &s);
	CHECK(s.cycle && s.nr == 1);
	/* a chain of 100 distinct boxes: cut at the limit */
	for (uint64_t i = 0; i < 100; i++) {
		put8(BASE + 0x100 + 16 * i, 3);
		put64(BASE + 0x108 + 16 * i, BASE + 0x100 + 16 * (i + 1));
	}
	stacks__decode(&m, ix, 0, BASE + 0x100, read_image, NULL, &s);
	CHECK(s.too_deep && s.nr == STACKS_MAX_FRAMES);
	edges[0].to = 1;
}

static void test_random(const struct vtable_index *ix)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	uint64_t frames = 0;

	for (int round = 0; round < 200000; round++) {
		struct task_stack s;
		int32_t root = (int32_t)(x % 5) - 1; /* -1 .. 3 */

		for (unsigned i = 0; i < 64; i++) { /* refresh a part of the image */
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			uint64_t at = x % (SIZE / 8);
			uint64_t v = x >> 3;
			/* often a plausible pointer or a small state value */
			if (v % 3 == 0)
				v = BASE + (v % SIZE);
			else if (v % 3 == 1)
				v %= 5;
			memcpy(image + at * 8, &v, 8);
		}
		stacks__decode(&m, ix, root, BASE + (x % SIZE), read_image, NULL, &s);
		CHECK(s.nr >= 1 && s.nr <= STACKS_MAX_FRAMES);
		for (uint32_t i = 0; i < s.nr; i++)
			CHECK(s.frames[i].state <= FRAME_UNKNOWN_DYN);
		frames += s.nr;
	}
	CHECK(frames > 200000); /* the random images did go deeper than the roots */
}

int main(void)
{
	struct vtable_index ix;

	build_model();
	CHECK(!vtable_index__init(&ix, &m, 0x1000));
	CHECK(vtable_index__find(&ix, 0xa000) == 0 && vtable_index__find(&ix, 0x9000) == -1);
	test_three_deep(&ix);
	test_dyn(&ix);
	test_cycle(&ix);
	test_random(&ix);
	vtable_index__free(&ix);
	TEST_MAIN_END();
}
