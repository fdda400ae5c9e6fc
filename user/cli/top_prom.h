/* SPDX-License-Identifier: GPL-2.0 */
/*
 * top --prometheus (docs/metrics.md): the endpoint, and each interval's statistics
 * turned into its page (export/prometheus.h) with what only the tracer knows: blocked
 * time by syscall, the probes' hits and cost, what was lost.
 */
#ifndef ASYNCBPF_CLI_TOP_PROM_H
#define ASYNCBPF_CLI_TOP_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "asyncbpf.h"
#include "trace/probe_cost.h"
#include "trace/top.h"
#include "trace/tracer.h"

struct top_prom;

/* Listen on spec (http_page.h) before anything is attached; prints the URL. 0, or an
 * exit code (EXIT_USAGE for a bad spec, EXIT_OUTPUT when it cannot listen). */
int top_prom__start(const char *spec, uint32_t top_n, struct top_prom **out);
void top_prom__stop(struct top_prom *tp);

struct top_prom_in {
	bool tasks;
	uint32_t nr;
	const struct poll_stats *stats; /* cumulative since attach */
	const __u64 *counters;		/* COUNTER_COUNT, cumulative */
	void (*name)(void *ctx, uint32_t row, char *buf, size_t len);
	void *ctx;
	const struct tracer *t; /* blocked time by syscall */
	const struct probe_costs *per_hit;
	enum top_wakes wakes;
	double wake_seconds;
	int pid;
	const char *exe;
	int64_t target_cpu_ns; /* since attach, < 0 unknown */
	double seconds;
};

/* Render and publish one page of one process; a failure keeps the last page and is
 * logged once. */
void top_prom__publish(struct top_prom *tp, const struct top_prom_in *in);

/*
 * Several processes on one page (top -p A,B, --exe): a source is one process (its
 * series labelled pid and exe) or, group, every process of a followed executable
 * (labelled exe: summed by future name, those gone included; export/prom_sum.h).
 * Each interval: begin, add every process to its source, end renders and publishes.
 */
struct top_prom_src;

/* NULL on ENOMEM (printed). exe: the executable's path (made absolute), or a group's
 * label as is. */
struct top_prom_src *top_prom__source(struct top_prom *tp, bool group, const char *exe);
/* A process's source whose process is gone: its series leave the page. */
void top_prom__drop(struct top_prom *tp, struct top_prom_src *src);
void top_prom__begin(struct top_prom *tp);
/* in's arrays are read until top_prom__end. gone (a group): in holds the last values
 * of a process gone, kept in the group's series from now on. 0; -EINVAL when a group's
 * processes so far were traced in the other mode (task or per-future: rows of the one
 * are not rows of the other): in is left out; -ENOMEM (said). */
int top_prom__add(struct top_prom *tp, struct top_prom_src *src, const struct top_prom_in *in,
		  bool gone);
void top_prom__end(struct top_prom *tp, uint64_t now_ns);

#endif
