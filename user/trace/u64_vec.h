/* SPDX-License-Identifier: GPL-2.0 */
/* A growable array of durations (ns), for exact percentiles. */
#ifndef ASYNCBPF_TRACE_U64_VEC_H
#define ASYNCBPF_TRACE_U64_VEC_H

#include <stdint.h>

struct u64_vec {
	uint64_t *v;
	uint64_t nr, cap;
};

/* Append x: 0 or -ENOMEM. */
int u64_vec__push(struct u64_vec *v, uint64_t x);

/* Nearest-rank percentile pct (0-100) of n sorted values; 0 when n is 0. */
uint64_t u64_vec__percentile(const uint64_t *sorted, uint64_t n, unsigned pct);

#endif
