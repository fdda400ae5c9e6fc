/* SPDX-License-Identifier: GPL-2.0 */
/* u64 -> u64 open-addressing hash map (DIE offsets, interned-string pointers). */
#ifndef ASYNCBPF_HASHMAP_H
#define ASYNCBPF_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct u64_map {
	uint64_t *keys; /* key + 1; 0 marks an empty slot */
	uint64_t *values;
	size_t nr_slots, nr_used;
};

void u64_map__init(struct u64_map *m);
void u64_map__free(struct u64_map *m);
void u64_map__clear(struct u64_map *m); /* keeps the allocation */
/* Returns 0 or -ENOMEM. Overwrites an existing key. key must not be UINT64_MAX. */
int u64_map__set(struct u64_map *m, uint64_t key, uint64_t value);
bool u64_map__get(const struct u64_map *m, uint64_t key, uint64_t *value);

/* splitmix64's finalizer: a well-mixed key from small tuples (map keys, ids) */
static inline uint64_t hash__mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

#endif
