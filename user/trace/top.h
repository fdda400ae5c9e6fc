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
#include "model/model.h"

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
	uint32_t poll;
	double polls_s, busy_pct, blocked_ms_s, wakes_s, cancelled_s;
	uint64_t p50_ns, p99_ns, delay_p99_ns;
	int64_t live; /* instances started and not finished since attach (>= 0) */
};

/* "busy", "polls", ...: the --sort names; -1 for an unknown one. */
int top_key__parse(const char *name);
const char *top_key__name(enum top_key k);
/* The key a keystroke selects ('b', 'p', '9', 'B', 'w', 'd', 'c', 'l'), or -1. */
int top_key__from_char(int c);

/*
 * The rows of the poll fns active in the interval (cur - prev over dt seconds, both
 * nr entries), sorted by key, biggest first. *rows (caller frees); the count, or -1
 * on ENOMEM.
 */
int top__rows(const struct poll_stats *prev, const struct poll_stats *cur, uint32_t nr, double dt,
	      enum top_key key, struct top_row **rows);
/* Header and at most max_rows rows (0: all); names from the model. */
void top__print(FILE *out, const struct model *m, const struct top_row *rows, int nr, int max_rows);

#endif
