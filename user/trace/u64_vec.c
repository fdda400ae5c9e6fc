// SPDX-License-Identifier: GPL-2.0
/* A growable array of u64 (u64_vec.h). */
#include "trace/u64_vec.h"

#include <errno.h>
#include <stdlib.h>

int u64_vec__push(struct u64_vec *v, uint64_t x)
{
	if (v->nr == v->cap) {
		uint64_t cap = v->cap ? v->cap * 2 : 64;
		uint64_t *n = realloc(v->v, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		v->v = n;
		v->cap = cap;
	}
	v->v[v->nr++] = x;
	return 0;
}

uint64_t u64_vec__percentile(const uint64_t *sorted, uint64_t n, unsigned pct)
{
	uint64_t rank;

	if (!n)
		return 0;
	rank = (n * pct + 99) / 100;
	return sorted[rank ? rank - 1 : 0];
}
