// SPDX-License-Identifier: GPL-2.0
/*
 * top --exe's series (user/export/prom_sum.c): the processes of one executable summed
 * by future name; a process that is gone leaves its last values in every later
 * round (a restart continues the series, counters never go down) but no live
 * instances; a new build's futures join by name, new names get rows of their own;
 * blocked time by syscall, hits and lost events summed by name; a process in the
 * other mode (per-future rows where the first had task rows) refused; the page labels the
 * group with exe only and says how many processes it has.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/prom_sum.h"
#include "testlib.h"

/* rows named by ctx: a NULL-terminated list */
static void name(void *ctx, uint32_t row, char *buf, size_t len)
{
	const char *const *names = ctx;

	snprintf(buf, len, "%s", names[row]);
}

static const char *const v1[] = {"app::serve", "app::handle", NULL};
static const char *const v2[] = {"app::handle", "app::new_in_v2", "app::serve", NULL};

static uint32_t row_named(const struct prom_snapshot *s, const char *want)
{
	char buf[128];

	for (uint32_t i = 0; i < s->nr; i++) {
		s->name(s->ctx, i, buf, sizeof(buf));
		if (!strcmp(buf, want))
			return i;
	}
	return UINT32_MAX;
}

static const struct poll_stats *stats_named(const struct prom_snapshot *s, const char *want)
{
	uint32_t r = row_named(s, want);

	return r == UINT32_MAX ? NULL : &s->stats[r];
}

static void test_restart_continues(void)
{
	struct prom_sum *g = prom_sum__new("/srv/app");
	struct poll_stats p1[2] = {{.records = 10, .started = 4, .ended = 1, .busy_ns = 100},
				   {.records = 3, .hist = {[5] = 3}}};
	struct poll_stats p2[2] = {{.records = 1, .started = 1}, {.records = 2}};
	struct prom_sys sys1[] = {{.row = 1, .syscall = 0, .count = 2, .ns = 50}};
	struct prom_sys sys2[] = {{.row = 1, .syscall = 0, .count = 1, .ns = 5}};
	struct prom_hits hits[] = {{"entry", "emulated", 7}};
	struct prom_lost lost[] = {{"unmatched_exit", 1}};
	struct prom_snapshot a = {.pid = 10,
				  .nr = 2,
				  .stats = p1,
				  .name = name,
				  .ctx = (void *)v1,
				  .sys = sys1,
				  .nr_sys = 1,
				  .hits = hits,
				  .nr_hits = 1,
				  .lost = lost,
				  .nr_lost = 1,
				  .tracer_cpu_ns = 100,
				  .target_cpu_ns = 1000,
				  .tasks = true};
	struct prom_snapshot b = a;
	const struct prom_snapshot *s;

	b.pid = 11;
	b.stats = p2;
	b.sys = sys2;
	CHECK(g != NULL);
	if (!g)
		return;
	/* round 1: two processes of the binary at once */
	prom_sum__begin(g);
	CHECK(prom_sum__add(g, &a, false) == 0 && prom_sum__add(g, &b, false) == 0);
	s = prom_sum__snapshot(g, 1.0);
	CHECK(s && s->group && s->processes == 2 && s->processes_seen == 2 && s->tasks);
	CHECK(s && !strcmp(s->exe, "/srv/app"));
	CHECK(s && stats_named(s, "app::serve")->records == 11);
	CHECK(s && stats_named(s, "app::handle")->records == 5);
	CHECK(s && stats_named(s, "app::handle")->hist[5] == 3);
	CHECK(s && s->nr_sys == 1 && s->sys[0].count == 3 && s->sys[0].ns == 55);
	CHECK(s && s->sys[0].row == row_named(s, "app::handle"));
	CHECK(s && s->nr_hits == 1 && s->hits[0].hits == 14);
	CHECK(s && s->nr_lost == 1 && s->lost[0].count == 2);
	CHECK(s && s->tracer_cpu_ns == 200 && s->target_cpu_ns == 2000);
	/* round 2: process 10 gone with its last values, 11 went on */
	p1[0].records = 12;
	p2[0].records = 4;
	prom_sum__begin(g);
	CHECK(prom_sum__add(g, &a, true) == 0 && prom_sum__add(g, &b, false) == 0);
	s = prom_sum__snapshot(g, 2.0);
	CHECK(s && s->processes == 1 && s->processes_seen == 2);
	CHECK(s && stats_named(s, "app::serve")->records == 16);
	/* live: 10's 3 started and not ended no longer count; 11's 1 does */
	const struct poll_stats *serve = s ? stats_named(s, "app::serve") : NULL;
	CHECK(serve && serve->started - serve->ended == 1);
	/* round 3: 11 restarted as a new build (12): rows by name, counters go on */
	struct poll_stats p3[3] = {{.records = 1}, {.records = 5}, {.records = 2}};
	struct prom_snapshot c = {.pid = 12,
				  .nr = 3,
				  .stats = p3,
				  .name = name,
				  .ctx = (void *)v2,
				  .tasks = true,
				  .target_cpu_ns = -1};
	prom_sum__begin(g);
	CHECK(prom_sum__add(g, &b, true) == 0 && prom_sum__add(g, &c, false) == 0);
	s = prom_sum__snapshot(g, 3.0);
	CHECK(s && s->processes == 1 && s->processes_seen == 3 && s->nr == 3);
	CHECK(s && stats_named(s, "app::serve")->records == 12 + 4 + 2);
	CHECK(s && stats_named(s, "app::handle")->records == 3 + 2 + 1);
	CHECK(s && stats_named(s, "app::new_in_v2")->records == 5);
	CHECK(s && s->target_cpu_ns == 2000); /* 12's unknown adds nothing */
	/* round 4: 12 alone, a little later: nothing counted twice */
	p3[2].records = 3;
	prom_sum__begin(g);
	CHECK(prom_sum__add(g, &c, false) == 0);
	/* a process traced in the other mode (per-future rows): refused, nothing added */
	struct prom_snapshot d = c;

	d.pid = 13;
	d.tasks = false;
	CHECK(prom_sum__add(g, &d, false) == -EINVAL);
	CHECK(prom_sum__add(g, &d, true) == -EINVAL); /* gone, the same */
	/* one whose wakes are probed otherwise (all, where the series' are none): its
	 * polls count, its wakes not */
	struct poll_stats p4[3] = {{.records = 2, .wakes = 9, .window_polls = 2, .delay_ns = 5}};
	struct prom_snapshot w = c;

	w.pid = 14;
	w.stats = p4;
	w.wakes = PROM_WAKES_ALL;
	w.wake_sample_seconds = 3;
	CHECK(prom_sum__add(g, &w, false) == 0);
	s = prom_sum__snapshot(g, 4.0);
	CHECK(s && stats_named(s, "app::handle")->records == 3 + 2 + 1 + 2);
	CHECK(s && stats_named(s, "app::handle")->wakes == 0);
	CHECK(s && stats_named(s, "app::handle")->delay_ns == 0);
	CHECK(s && s->wake_sample_seconds == 0 && s->wakes == PROM_WAKES_OFF);
	CHECK(s && s->processes == 2 && s->tasks);
	prom_sum__free(g);
}

/* The group's page: exe only, the processes gauges, the rows under their names. */
static void test_group_page(void)
{
	struct prom_sum *g = prom_sum__new("/srv/app");
	struct poll_stats p1[2] = {{.records = 10, .busy_ns = 100}, {.records = 3, .busy_ns = 50}};
	struct prom_snapshot a = {
	    .pid = 10, .nr = 2, .stats = p1, .name = name, .ctx = (void *)v1, .target_cpu_ns = -1};
	struct prom_exporter *e = prom__new(10);
	char *page = NULL;
	size_t len;

	CHECK(g && e);
	if (!g || !e)
		goto out;
	prom_sum__begin(g);
	CHECK(prom_sum__add(g, &a, false) == 0);
	CHECK(prom__render(e, prom_sum__snapshot(g, 1.0), &page, &len) == 0 && page);
	if (page) {
		CHECK(strstr(page, "asyncbpf_future_polls_total{future=\"app::serve\","
				   "exe=\"/srv/app\"} 10\n") != NULL);
		CHECK(strstr(page, "asyncbpf_processes{exe=\"/srv/app\"} 1\n") != NULL);
		CHECK(strstr(page, "asyncbpf_processes_seen_total{exe=\"/srv/app\"} 1\n") != NULL);
		CHECK(strstr(page, "pid=") == NULL);
	}
out:
	free(page);
	prom__free(e);
	prom_sum__free(g);
}

int main(void)
{
	test_restart_continues();
	test_group_page();
	TEST_MAIN_END();
}
