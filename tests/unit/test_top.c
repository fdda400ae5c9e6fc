// SPDX-License-Identifier: GPL-2.0
/*
 * top's table (trace/top.c) from hand-made statistics, no root needed: rates over the
 * interval, wakes per second measured, sampled (the wakes per poll of the windows
 * times all polls) or unknown, task mode's DONE/S and TASK headings, "-" where a
 * value was not measured, sorting.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "trace/top.h"

static void name(void *ctx, uint32_t index, char *buf, size_t len)
{
	(void)ctx;
	snprintf(buf, len, "entry_%u", index);
}

/* What top__print writes for the rows (malloc'd). */
static char *print(const struct top_names *names, const struct top_row *rows, int nr)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	top__print(f, names, rows, nr, 0);
	fclose(f);
	return buf;
}

static void test_rates(void)
{
	struct poll_stats prev[3] = {0}, cur[3] = {0};
	struct top_interval in = {.dt = 2.0, .wakes = TOP_WAKES_ALL, .key = TOP_POLLS};
	struct top_row *rows = NULL;
	int n;

	/* entry 0: 1000 polls, 900 wakes, 2 ms busy, 10 finished; entry 1 idle; entry 2:
	 * 4000 polls, 400 of them in the wake windows with 200 wakes */
	cur[0].records = 1000;
	cur[0].wakes = 900;
	cur[0].busy_ns = 2000000;
	cur[0].hist[10] = 1000;
	cur[0].ready = 10;
	cur[0].cancelled = 3;
	cur[0].started = 5;
	cur[0].ended = 2;
	cur[0].delay_hist[12] = 900;
	cur[2].records = 4000;
	cur[2].window_polls = 400;
	cur[2].wakes = 200;
	cur[2].hist[11] = 4000;
	n = top__rows(prev, cur, 3, &in, &rows);
	CHECK(n == 2);
	CHECK(rows && rows[0].poll == 2 && rows[1].poll == 0); /* by polls/s */
	CHECK(rows && rows[1].polls_s == 500 && rows[1].wakes_s == 450);
	CHECK(rows && rows[1].busy_pct > 0.099 && rows[1].busy_pct < 0.101);
	CHECK(rows && rows[1].ends_s == 1.5 && rows[1].live == 3); /* cancellations */
	CHECK(rows && rows[1].delay_known && !rows[0].delay_known);
	free(rows);

	/* task mode: ends are tasks finished, Ready or cancelled (10 + 3 in 2 s); wakes
	 * sampled: 200 per 400 polls of the windows, 4000 polls in 2 s: 1000 wakes/s */
	in.tasks = true;
	in.wakes = TOP_WAKES_SAMPLED;
	n = top__rows(prev, cur, 3, &in, &rows);
	CHECK(n == 2);
	CHECK(rows && rows[0].poll == 2 && rows[0].wakes_s == 1000);
	CHECK(rows && rows[1].ends_s == 6.5);
	free(rows);

	/* sampled, wakes but no poll in a window: not known; no wake probes: not known */
	cur[2].window_polls = 0;
	n = top__rows(prev, cur, 3, &in, &rows);
	CHECK(n == 2 && rows && rows[0].wakes_s < 0);
	free(rows);
	in.wakes = TOP_WAKES_OFF;
	n = top__rows(prev, cur, 3, &in, &rows);
	CHECK(n == 2 && rows && rows[0].wakes_s < 0 && rows[1].wakes_s < 0);
	free(rows);
}

static void test_print(void)
{
	struct top_row rows[1] = {{.poll = 7,
				   .polls_s = 10,
				   .busy_pct = 1,
				   .wakes_s = -1,
				   .ends_s = 2,
				   .live = 4,
				   .delay_known = false}};
	struct top_names tasks = {.tasks = true, .name = name}, futures = {.name = name};
	char *out = print(&tasks, rows, 1);

	CHECK(out && strstr(out, "DONE/S") && strstr(out, "TASK") && !strstr(out, "CANCEL/S"));
	CHECK(out && strstr(out, "entry_7"));
	/* wakes/s and the delay not measured: "-", never 0 */
	CHECK(out && strstr(out, "        -           -       2.0       4  entry_7"));
	free(out);
	out = print(&futures, rows, 0);
	CHECK(out && strstr(out, "CANCEL/S") && strstr(out, "FUTURE") &&
	      strstr(out, "no traced future was active"));
	free(out);
	CHECK(top_key__parse("done") == TOP_CANCELLED && top_key__parse("nope") < 0);
}

int main(void)
{
	test_rates();
	test_print();
	TEST_MAIN_END();
}
