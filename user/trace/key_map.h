/* SPDX-License-Identifier: GPL-2.0 */
/* (poll fn, self) -> value, for the summary's instance and task tables. Pure. */
#ifndef ASYNCBPF_TRACE_KEY_MAP_H
#define ASYNCBPF_TRACE_KEY_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* (poll, self) -> value, open addressing with deletion (backward shift). */
struct key_map_slot {
	uint64_t self;
	uint32_t poll; /* UINT32_MAX: empty */
	uint32_t pad;
	uint64_t value;
};

struct key_map {
	struct key_map_slot *slots;
	size_t nr_slots, nr_used;
};

void key_map__init(struct key_map *m);
void key_map__free(struct key_map *m);
bool key_map__get(const struct key_map *m, uint32_t poll, uint64_t self, uint64_t *value);
int key_map__set(struct key_map *m, uint32_t poll, uint64_t self, uint64_t value);
void key_map__delete(struct key_map *m, uint32_t poll, uint64_t self);

#endif
