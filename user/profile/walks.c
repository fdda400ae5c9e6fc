// SPDX-License-Identifier: GPL-2.0
/* Walked stacks kept until the end, each distinct one once (walks.h). */
#include "profile/walks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MASK (~0ull >> 1) /* u64_map keys must not be UINT64_MAX */

void walk_table__init(struct walk_table *t)
{
	memset(t, 0, sizeof(*t));
	u64_map__init(&t->by_hash);
}

void walk_table__free(struct walk_table *t)
{
	for (size_t i = 0; i < t->nr; i++)
		free(t->walks[i].pcs);
	free(t->walks);
	u64_map__free(&t->by_hash);
	memset(t, 0, sizeof(*t));
}

int64_t walk_table__add(struct walk_table *t, const uint64_t *pcs, uint32_t n,
			enum unwind_reason reason)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)reason, v;
	struct walk *w;

	for (uint32_t i = 0; i < n; i++)
		h = (h ^ pcs[i]) * 0x100000001b3ull;
	h ^= n;
	for (h &= KEY_MASK;; h = (h * 31 + 1) & KEY_MASK) {
		if (!u64_map__get(&t->by_hash, h, &v))
			break;
		w = &t->walks[v];
		if (w->n == n && w->reason == reason &&
		    (!n || !memcmp(w->pcs, pcs, n * sizeof(*pcs))))
			return (int64_t)v;
	}
	if (t->nr == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct walk *ws = realloc(t->walks, cap * sizeof(*ws));

		if (!ws)
			return -ENOMEM;
		t->walks = ws;
		t->cap = cap;
	}
	w = &t->walks[t->nr];
	*w = (struct walk){.n = n, .reason = reason, .stack = -1};
	if (!(w->pcs = malloc((n ? n : 1) * sizeof(*pcs))))
		return -ENOMEM;
	if (n)
		memcpy(w->pcs, pcs, n * sizeof(*pcs));
	if (u64_map__set(&t->by_hash, h, t->nr)) {
		free(w->pcs);
		return -ENOMEM;
	}
	return (int64_t)t->nr++;
}

void walk_table__forget_stacks(struct walk_table *t)
{
	for (size_t i = 0; i < t->nr; i++)
		t->walks[i].stack = -1;
}
