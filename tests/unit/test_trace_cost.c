// SPDX-License-Identifier: GPL-2.0
/*
 * The tracer's own cost statement (trace/trace_cost.c), no root needed: the share of
 * the target's CPU time, the WARNING past TRACER_COST_WARN_PERCENT, and what it names
 * as cheaper: task mode only where the per-future probes were used (no task-poll
 * hits), for trace and for top; for task mode's single-stepped task polls, what the
 * build costs, not "fewer futures".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace_cost.h"
#include "testlib.h"

/* What tracer_cost__print writes for c (malloc'd). */
static char *print(const struct tracer_cost *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	tracer_cost__print(c, f);
	fclose(f);
	return buf;
}

static struct tracer_cost costly(void)
{
	struct tracer_cost c = {.hits_known = true,
				.per_hit = {.measured = true,
					    .emulated_ns = 500,
					    .stepped_ns = 10000,
					    .returned_ns = 200,
					    .cpu_emulated_ns = 500,
					    .cpu_stepped_ns = 10000,
					    .cpu_returned_ns = 200},
				.target_cpu_ns = 100000000, /* 100 ms */
				.duration_ns = 1000000000};

	c.hits[HIT_ENTRY_EMULATED] = 2000;
	c.hits[HIT_EXIT_STEPPED] = 2000; /* 20 ms of 100 ms: warned */
	return c;
}

static void test_cheaper(void)
{
	struct tracer_cost c = costly();
	char *out = print(&c);

	CHECK(out && strstr(out, "WARNING: tracing took ~"));
	CHECK(out && strstr(out, "is single-stepped probes"));
	CHECK(out && strstr(out, "fewer futures"));
	CHECK(out && strstr(out, "task mode (no patterns or --deep, or --tasks) probes each task "
				 "poll once and reads"));
	free(out);

	/* task mode ran: it is not named as the cheaper choice */
	c.hits[HIT_TASK_EMULATED] = 1000;
	out = print(&c);
	CHECK(out && strstr(out, "WARNING: tracing took ~"));
	CHECK(out && !strstr(out, "task mode (no patterns"));
	free(out);

	/* task mode's task polls single-stepped: the build, not the selection */
	c = costly();
	c.hits[HIT_EXIT_STEPPED] = 0;
	c.hits[HIT_ENTRY_EMULATED] = 0;
	c.hits[HIT_TASK_STEPPED] = 2000;
	out = print(&c);
	CHECK(out && strstr(out, "this build's task-poll functions"));
	CHECK(out && !strstr(out, "fewer futures") && !strstr(out, "task mode (no patterns"));
	free(out);

	/* top (stats only) per future: task mode named, without reading trees */
	c = costly();
	c.stats_only = true;
	out = print(&c);
	CHECK(out && strstr(out, "task mode (no patterns or --deep, or --tasks) probes each task "
				 "poll once;"));
	free(out);

	/* under the threshold: no warning, no advice */
	c = costly();
	c.hits[HIT_EXIT_STEPPED] = 10;
	out = print(&c);
	CHECK(out && !strstr(out, "WARNING") && !strstr(out, "cheaper:"));
	free(out);
}

/* The change of the probes' cost between two measurements, hits weighted by class. */
static void test_drift(void)
{
	struct tracer_cost c = costly(); /* 2000 x 500 ns + 2000 x 10000 ns = 21 ms */
	struct probe_costs end = c.per_hit;

	CHECK(tracer_cost__drift(&c, &end) == 0);
	end.stepped_ns = 13000; /* +6 ms of 21 */
	CHECK(fabs(tracer_cost__drift(&c, &end) - 100.0 * 6 / 21) < 1e-9);
	end.stepped_ns = 7000; /* -6 ms: the same change */
	CHECK(fabs(tracer_cost__drift(&c, &end) - 100.0 * 6 / 21) < 1e-9);
	/* a class that cost nothing in this run does not count, however far it moved */
	end = c.per_hit;
	end.returned_ns = 5000;
	CHECK(tracer_cost__drift(&c, &end) == 0);
	/* the measured tree time is no estimate: left out */
	c.tree_ns = 1000000000;
	end.stepped_ns = 13000;
	CHECK(fabs(tracer_cost__drift(&c, &end) - 100.0 * 6 / 21) < 1e-9);
	/* either measurement missing, or the hits unread: unknown */
	end.measured = false;
	CHECK(tracer_cost__drift(&c, &end) < 0);
	end.measured = true;
	c.hits_known = false;
	CHECK(tracer_cost__drift(&c, &end) < 0);
	c = costly();
	memset(c.hits, 0, sizeof(c.hits));
	CHECK(tracer_cost__drift(&c, &end) < 0);
}

int main(void)
{
	test_cheaper();
	test_drift();
	TEST_MAIN_END();
}
