// SPDX-License-Identifier: GPL-2.0
/*
 * top --prometheus's page without BPF (user/export/prometheus.c): label values
 * escaped; counters, a histogram's cumulative buckets, _sum and _count from hand-made
 * statistics; blocked time by syscall; at most top_n futures with series of their
 * own and the rest under future="other", which neither goes down nor jumps when a
 * busier future takes a series from a less busy one; futures of one name told apart
 * for the whole run; every family has HELP and TYPE, every series one line.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/prometheus.h"
#include "testlib.h"

static const char *const names[] = {"app::first", "app::second \"quoted\"", "app::third"};

static void name(void *ctx, uint32_t row, char *buf, size_t len)
{
	(void)ctx;
	snprintf(buf, len, "%s", row < 3 ? names[row] : "");
}

static void same_name(void *ctx, uint32_t row, char *buf, size_t len)
{
	(void)ctx;
	(void)row;
	snprintf(buf, len, "app::x");
}

static const char *sys_name(int nr)
{
	return nr == 0 ? "read" : NULL;
}

/* The value of the series (its name and labels, exactly), or -1 when absent. */
static double value(const char *page, const char *series)
{
	size_t n = strlen(series);

	for (const char *l = page; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, series, n) && l[n] == ' ')
			return strtod(l + n + 1, NULL);
	return -1;
}

/* Every sample follows its own family's TYPE line, families never interleave, and
 * every TYPE has a HELP just before it. */
static bool grouped(const char *page)
{
	char family[128] = "";
	bool help = false;

	for (const char *l = page; *l; l = strchr(l, '\n') + 1) {
		size_t n = strcspn(l, "\n"), f = strlen(family);

		if (!strncmp(l, "# HELP ", 7)) {
			help = true;
		} else if (!strncmp(l, "# TYPE ", 7)) {
			if (!help)
				return false;
			help = false;
			snprintf(family, sizeof(family), "%.*s", (int)strcspn(l + 7, " "), l + 7);
		} else if (!f || strncmp(l, family, f) ||
			   !(l[f] == '{' || l[f] == ' ' || !strncmp(l + f, "_bucket{", 8) ||
			     !strncmp(l + f, "_sum{", 5) || !strncmp(l + f, "_count{", 7))) {
			return false;
		}
		if (!l[n])
			break;
	}
	return true;
}

/* No two samples with the same name and labels. */
static bool unique(const char *page)
{
	size_t n = 0, cap = 256;
	char **keys = malloc(cap * sizeof(*keys));
	bool ok = keys != NULL;

	for (const char *l = page; ok && *l; l = strchr(l, '\n') + 1) {
		if (*l != '#') {
			size_t k = strcspn(l, "}") + 1;

			for (size_t i = 0; i < n && ok; i++)
				ok = strncmp(keys[i], l, k) || keys[i][k - 1] != '}';
			if (n == cap) {
				char **more = realloc(keys, 2 * cap * sizeof(*keys));

				if (!more)
					break;
				keys = more;
				cap *= 2;
			}
			keys[n++] = (char *)l;
		}
		if (!strchr(l, '\n'))
			break;
	}
	free(keys);
	return ok;
}

/* Three futures of one name: three series, each with its own row, from the start. */
static void test_same_names(void)
{
	struct poll_stats st[3] = {0};
	struct prom_snapshot s = {.pid = 1, .exe = "x", .nr = 3, .stats = st, .name = same_name};
	struct prom_exporter *e = prom__new(2);
	char *page = NULL;
	size_t len;

	for (int i = 0; i < 3; i++) {
		st[i].records = 1;
		st[i].busy_ns = 10 + (uint64_t)i;
	}
	CHECK(e && prom__render(e, &s, &page, &len) == 0 && page);
	if (page) {
		CHECK(value(page, "asyncbpf_future_polls_total{future=\"app::x (row 2)\",pid=\"1\","
				  "exe=\"x\"}") == 1);
		CHECK(value(page, "asyncbpf_future_polls_total{future=\"app::x (row 1)\",pid=\"1\","
				  "exe=\"x\"}") == 1);
		CHECK(value(page, "asyncbpf_future_polls_total{future=\"other\",pid=\"1\","
				  "exe=\"x\"}") == 1);
		CHECK(unique(page) && grouped(page));
	}
	free(page);
	prom__free(e);
}

#define T   "pid=\"42\",exe=\"/srv/a \\\"b\\\"\""
#define F0  "{future=\"app::first\"," T "}"
#define F1  "{future=\"app::second \\\"quoted\\\"\"," T "}"
#define F2  "{future=\"app::third\"," T "}"
#define OTH "{future=\"other\"," T "}"

static void test_escape(void)
{
	char buf[64];

	prom__escape("a\"b\\c\nd", buf, sizeof(buf));
	CHECK_STR(buf, "a\\\"b\\\\c\\nd");
	prom__escape("\"\"\"", buf, 4); /* never half an escape */
	CHECK_STR(buf, "\\\"");
	prom__escape("\xc3\xa9\xc3\xa9\xc3\xa9", buf, 6); /* never half a character */
	CHECK_STR(buf, "\xc3\xa9\xc3\xa9");
	prom__escape("a\xff"
		     "b",
		     buf, sizeof(buf)); /* not UTF-8: U+FFFD */
	CHECK_STR(buf, "a\xef\xbf\xbd"
		       "b");
}

static void test_page(void)
{
	struct poll_stats st[3] = {0};
	struct prom_sys sys[] = {{.row = 0, .syscall = 0, .count = 3, .ns = 1500000000},
				 {.row = 2, .syscall = 7, .count = 1, .ns = 1000}};
	struct prom_hits hits[] = {{"entry", "emulated", 10}};
	struct prom_lost lost[] = {{"live_untracked", 0}};
	struct prom_snapshot s = {.pid = 42,
				  .exe = "/srv/a \"b\"",
				  .nr = 3,
				  .stats = st,
				  .name = name,
				  .wakes = PROM_WAKES_ALL,
				  .sys = sys,
				  .nr_sys = 2,
				  .syscall_name = sys_name,
				  .hits = hits,
				  .nr_hits = 1,
				  .lost = lost,
				  .nr_lost = 1,
				  .tracer_cpu_ns = 2000,
				  .target_cpu_ns = -1,
				  .seconds = 1};
	struct prom_exporter *e = prom__new(2);
	char *page = NULL;
	size_t len = 0;

	CHECK(e != NULL);
	/* row 0: 4 polls, 1 Ready; durations 600 ns, 2 x 2 us, 2^40 ns */
	st[0].records = 4;
	st[0].ready = 1;
	st[0].pending = 3;
	st[0].hist[9] = 1;
	st[0].hist[11] = 2;
	st[0].hist[40] = 1;
	st[0].busy_ns = 3000000000;
	st[0].started = 2;
	st[0].ended = 1;
	st[0].wakes = 5;
	st[0].delay_hist[12] = 5;
	st[0].delay_ns = 25000;
	st[1].records = 2;
	st[1].busy_ns = 2000;
	st[1].hist[10] = 2;
	st[2].records = 7;
	st[2].busy_ns = 1000;
	st[2].hist[9] = 7;
	st[2].blocked = 1;
	CHECK(prom__render(e, &s, &page, &len) == 0 && page && len == strlen(page));
	if (!page)
		return;
	CHECK(value(page, "asyncbpf_future_polls_total" F0) == 4);
	CHECK(value(page, "asyncbpf_future_ready_total" F0) == 1);
	CHECK(value(page, "asyncbpf_future_pending_total" F0) == 3);
	CHECK(value(page, "asyncbpf_future_live" F0) == 1);
	CHECK(value(page, "asyncbpf_future_wakes_total" F0) == 5);
	CHECK(value(page, "asyncbpf_future_busy_seconds_total" F0) == 3.0);
	/* buckets: le = 2^10 - 1 ns holds bucket 9 (600 ns), le = 2^12 - 1 ns buckets
	 * 10-11 too, 2^40 ns only in +Inf */
	CHECK(value(page, "asyncbpf_future_poll_duration_seconds_bucket{future=\"app::first\"," T
			  ",le=\"1.023e-06\"}") == 1);
	CHECK(value(page, "asyncbpf_future_poll_duration_seconds_bucket{future=\"app::first\"," T
			  ",le=\"4.095e-06\"}") == 3);
	CHECK(value(page, "asyncbpf_future_poll_duration_seconds_bucket{future=\"app::first\"," T
			  ",le=\"17.179869183\"}") == 3);
	CHECK(value(page, "asyncbpf_future_poll_duration_seconds_bucket{future=\"app::first\"," T
			  ",le=\"+Inf\"}") == 4);
	CHECK(value(page, "asyncbpf_future_poll_duration_seconds_count" F0) == 4);
	CHECK(value(page, "asyncbpf_future_poll_duration_seconds_sum" F0) == 3.0);
	CHECK(value(page, "asyncbpf_future_schedule_delay_seconds_sum" F0) == 25e-6);
	CHECK(value(page, "asyncbpf_future_blocked_seconds_total{future=\"app::first\"," T
			  ",syscall=\"read\"}") == 1.5);
	/* the two busiest have series; the third is "other", without blocked time by
	 * syscall (futures with series only) */
	CHECK(value(page, "asyncbpf_future_polls_total" F1) == 2);
	CHECK(value(page, "asyncbpf_future_polls_total" F2) == -1);
	CHECK(value(page, "asyncbpf_future_polls_total" OTH) == 7);
	CHECK(value(page,
		    "asyncbpf_future_blocks_total{future=\"other\"," T ",syscall=\"nr_7\"}") == -1);
	CHECK(value(page, "asyncbpf_tracer_probe_hits_total{" T
			  ",probe=\"entry\",how=\"emulated\"}") == 10);
	CHECK(value(page, "asyncbpf_info{" T ",mode=\"future\"}") == 1);
	CHECK(strstr(page, "# TYPE asyncbpf_future_poll_duration_seconds histogram\n") != NULL);
	CHECK(strstr(page, "# TYPE asyncbpf_future_polls_total counter\n") != NULL);
	CHECK(strstr(page, "# HELP asyncbpf_lost_events_total ") != NULL);
	CHECK(grouped(page) && unique(page));
	free(page);

	/* the third outdoes the second more than twice: they swap; "other" keeps the 7
	 * polls it showed of the third and counts the second from its series' last 2 */
	st[2].records = 9;
	st[2].busy_ns = 5000;
	st[1].started = 3;
	st[1].ended = 1;
	CHECK(prom__render(e, &s, &page, &len) == 0 && page);
	if (page) {
		CHECK(value(page, "asyncbpf_future_polls_total" F2) == 9);
		CHECK(value(page, "asyncbpf_future_polls_total" F1) == -1);
		CHECK(value(page, "asyncbpf_future_polls_total" OTH) == 7);
		CHECK(value(page, "asyncbpf_future_live" OTH) == 2); /* the second's, now */
		CHECK(value(page, "asyncbpf_future_blocks_total{future=\"app::third\"," T
				  ",syscall=\"nr_7\"}") == 1);
		CHECK(grouped(page) && unique(page));
	}
	free(page);
	/* not twice as busy as the least busy with a series: no swap back; "other"
	 * grows by the second's new poll */
	st[1].busy_ns = 9000;
	st[1].records = 3;
	CHECK(prom__render(e, &s, &page, &len) == 0 && page);
	if (page) {
		CHECK(value(page, "asyncbpf_future_polls_total" F1) == -1);
		CHECK(value(page, "asyncbpf_future_polls_total" OTH) == 7 + 1);
	}
	free(page);
	prom__free(e);
}

/* Two processes on one page (top -p A,B): each family once, every process's series
 * under it with its own pid; a family of future mode only (panics) lists the
 * process in future mode and not the one in task mode. */
static void test_two_sources(void)
{
	struct poll_stats a[1] = {{.records = 3, .busy_ns = 30}}, b[1] = {{.records = 5}};
	struct prom_snapshot sa = {.pid = 1,
				   .exe = "/x",
				   .tasks = true,
				   .nr = 1,
				   .stats = a,
				   .name = name,
				   .target_cpu_ns = -1};
	struct prom_snapshot sb = {
	    .pid = 2, .exe = "/y", .nr = 1, .stats = b, .name = name, .target_cpu_ns = 7000000000};
	struct prom_part parts[2] = {{prom__new(5), &sa}, {prom__new(5), &sb}};
	char *page = NULL;
	size_t len = 0;

	CHECK(parts[0].e && parts[1].e && prom__render_many(parts, 2, &page, &len) == 0 && page);
	if (page) {
		CHECK(value(page, "asyncbpf_future_polls_total{future=\"app::first\",pid=\"1\","
				  "exe=\"/x\"}") == 3);
		CHECK(value(page, "asyncbpf_future_polls_total{future=\"app::first\",pid=\"2\","
				  "exe=\"/y\"}") == 5);
		CHECK(value(page, "asyncbpf_future_panicked_total{future=\"app::first\",pid="
				  "\"1\",exe=\"/x\"}") == -1);
		CHECK(value(page, "asyncbpf_future_panicked_total{future=\"app::first\",pid="
				  "\"2\",exe=\"/y\"}") == 0);
		CHECK(value(page, "asyncbpf_info{pid=\"1\",exe=\"/x\",mode=\"task\"}") == 1);
		CHECK(value(page, "asyncbpf_info{pid=\"2\",exe=\"/y\",mode=\"future\"}") == 1);
		CHECK(value(page, "asyncbpf_target_cpu_seconds_total{pid=\"2\",exe=\"/y\"}") == 7);
		CHECK(value(page, "asyncbpf_target_cpu_seconds_total{pid=\"1\",exe=\"/x\"}") == -1);
		CHECK(!strstr(page, "asyncbpf_processes")); /* no group */
		CHECK(grouped(page) && unique(page));
	}
	free(page);
	prom__free(parts[0].e);
	prom__free(parts[1].e);
}

int main(void)
{
	test_escape();
	test_page();
	test_same_names();
	test_two_sources();
	TEST_MAIN_END();
}
