/* SPDX-License-Identifier: GPL-2.0 */
/*
 * asyncbpf top's table (docs/top.md): per poll fn, rates over the last interval from
 * two reads of the BPF statistics (struct poll_stats, summed over CPUs), sorted by
 * a key. Pure: the unit test feeds it hand-made statistics.
 */
#ifndef ASYNCBPF_TRACE_TOP_H
#define ASYNCBPF_TRACE_TOP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "asyncbpf.h"

enum top_key {
	TOP_BUSY, /* busy % of a CPU (default) */
	TOP_POLLS,
	TOP_P99,
	TOP_BLOCKED,
	TOP_WAKES,
	TOP_DELAY,
	TOP_CANCELLED,
	TOP_LIVE,
	TOP_KEY_COUNT,
};

struct top_row {
	uint32_t poll; /* the statistics' index: a poll fn, or a task type (task mode) */
	double polls_s, busy_pct, blocked_ms_s;
	double wakes_s; /* < 0: not known (no wake probes, or none in a sample) */
	double ends_s;	/* cancellations/s; task mode: tasks finished/s */
	uint64_t p50_ns, p99_ns, delay_p99_ns;
	bool delay_known; /* a delay was measured (else DELAY99 is "-") */
	int64_t live;	  /* instances started and not finished since attach (>= 0) */
};

/* "busy", "polls", ...: the --sort names; -1 for an unknown one. */
int top_key__parse(const char *name);
const char *top_key__name(enum top_key k);
/* The key a keystroke selects ('b', 'p', '9', 'B', 'w', 'd', 'c', 'l'), or -1. */
int top_key__from_char(int c);

/* One interval of top. */
struct top_interval {
	double dt; /* seconds between the two reads */
	enum top_wakes {
		TOP_WAKES_OFF,	   /* no wake probes: wakes/s unknown */
		TOP_WAKES_ALL,	   /* every wake seen: wakes / dt */
		TOP_WAKES_SAMPLED, /* attached part of the time: the wakes per poll of the
				    * sample (wakes / window_polls) times the polls */
	} wakes;
	bool tasks; /* task mode: rows are task types, ends are tasks finished */
	enum top_key key;
};

/*
 * The rows of the entries active in the interval (cur - prev, both nr entries), sorted
 * by in->key, biggest first. *rows (caller frees); the count, or -1 on ENOMEM.
 */
int top__rows(const struct poll_stats *prev, const struct poll_stats *cur, uint32_t nr,
	      const struct top_interval *in, struct top_row **rows);

/* How rows are named: a poll fn's future, or a task type's root future. */
struct top_names {
	bool tasks; /* the headings say TASK and DONE/S */
	void (*name)(void *ctx, uint32_t index, char *buf, size_t len);
	void *ctx;
};

/* Header and at most max_rows rows (0: all). */
void top__print(FILE *out, const struct top_names *names, const struct top_row *rows, int nr,
		int max_rows);

#endif
