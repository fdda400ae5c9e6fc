// SPDX-License-Identifier: GPL-2.0
/*
 * The probe-cost estimate without root (user/trace/probe_cost.c): what one poll of
 * each poll fn costs its enclosing poll, from the plan's specs and the measured
 * classes; and the per-thread tally of the probes inside each poll, fed records in
 * completion order (innermost first), across threads, after a lost record.
 */
#include <stdlib.h>
#include <string.h>

#include "trace/probe_cost.h"
#include "testlib.h"

static const struct probe_costs costs = {
    .measured = true, .emulated_ns = 100, .stepped_ns = 1000, .returned_ns = 10};

static void add_spec(struct trace_plan *p, uint32_t poll, uint8_t kind, uint32_t flags)
{
	p->specs[p->nr++] = (struct poll_spec){.poll = poll, .kind = kind, .flags = flags};
}

static void test_per_poll(void)
{
	struct poll_spec specs[16];
	struct trace_plan plan = {.specs = specs};
	uint64_t out[5];

	/* 0: emulated entry, stepped ret */
	add_spec(&plan, 0, PROBE_ENTRY, 0);
	add_spec(&plan, 0, PROBE_EXIT, SPEC_SINGLE_STEPPED);
	/* 1: stepped entry, a leaf's uretprobe */
	add_spec(&plan, 1, PROBE_ENTRY, SPEC_SINGLE_STEPPED);
	add_spec(&plan, 1, PROBE_EXIT, SPEC_EXIT_RETURNED);
	/* 2: emulated entry, one emulated and one stepped exit: their mean */
	add_spec(&plan, 2, PROBE_ENTRY, 0);
	add_spec(&plan, 2, PROBE_EXIT, 0);
	add_spec(&plan, 2, PROBE_EXIT, SPEC_SINGLE_STEPPED);
	/* 3: one tail jump that is entry and exit at once: one hit */
	add_spec(&plan, 3, PROBE_ENTRY | PROBE_EXIT, 0);
	/* 4: not traced */
	probe_costs__per_poll(&costs, &plan, 5, out);
	CHECK_EQ_U64(out[0], 1100);
	CHECK_EQ_U64(out[1], 1010);
	CHECK_EQ_U64(out[2], 100 + 550);
	CHECK_EQ_U64(out[3], 100);
	CHECK_EQ_U64(out[4], 0);
	/* nothing measured: nothing subtracted */
	struct probe_costs none = {0};
	probe_costs__per_poll(&none, &plan, 5, out);
	CHECK_EQ_U64(out[0] + out[1] + out[2] + out[3], 0);
}

static struct trace_poll poll_at(uint32_t tid, uint32_t poll, uint16_t depth)
{
	return (struct trace_poll){.tid = tid, .poll = poll, .depth = depth};
}

static void test_tally(void)
{
	const uint64_t per_poll[3] = {1000, 200, 30};
	struct probe_tally *t = probe_tally__new(per_poll, 3);
	struct trace_poll p;

	CHECK(t);
	/* thread 1: task (poll 0) > mid (poll 1) > two leaves (poll 2), innermost first */
	p = poll_at(1, 2, 2);
	CHECK_EQ_U64(probe_tally__add(t, &p), 0);
	p = poll_at(1, 2, 2);
	CHECK_EQ_U64(probe_tally__add(t, &p), 0);
	/* thread 2 in between: its own stack */
	p = poll_at(2, 2, 1);
	CHECK_EQ_U64(probe_tally__add(t, &p), 0);
	p = poll_at(1, 1, 1);
	CHECK_EQ_U64(probe_tally__add(t, &p), 60); /* two leaves */
	p = poll_at(2, 0, 0);
	CHECK_EQ_U64(probe_tally__add(t, &p), 30);
	p = poll_at(1, 0, 0);
	CHECK_EQ_U64(probe_tally__add(t, &p), 60 + 200); /* mid and what was inside it */
	/* the next task poll on thread 1 starts from nothing */
	p = poll_at(1, 1, 1);
	CHECK_EQ_U64(probe_tally__add(t, &p), 0);
	p = poll_at(1, 0, 0);
	CHECK_EQ_U64(probe_tally__add(t, &p), 200);
	/* a lost depth-1 record: its leaf's cost must not leak into a later poll */
	p = poll_at(1, 2, 2);
	CHECK_EQ_U64(probe_tally__add(t, &p), 0);
	p = poll_at(1, 0, 0); /* the depth-1 record between was dropped */
	CHECK_EQ_U64(probe_tally__add(t, &p), 0);
	p = poll_at(1, 1, 1);
	CHECK_EQ_U64(probe_tally__add(t, &p), 0);
	/* an unknown poll index and a depth past the limit do not crash */
	p = poll_at(3, 99, 60000);
	CHECK_EQ_U64(probe_tally__add(t, &p), 0);
	probe_tally__free(t);
}

int main(void)
{
	test_per_poll();
	test_tally();
	TEST_MAIN_END();
}
