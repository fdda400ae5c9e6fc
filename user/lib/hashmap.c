// SPDX-License-Identifier: GPL-2.0
#include "lib/hashmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void u64_map__init(struct u64_map *m)
{
	memset(m, 0, sizeof(*m));
}

void u64_map__free(struct u64_map *m)
{
	free(m->keys);
	free(m->values);
	memset(m, 0, sizeof(*m));
}

void u64_map__clear(struct u64_map *m)
{
	if (m->keys)
		memset(m->keys, 0, m->nr_slots * sizeof(*m->keys));
	m->nr_used = 0;
}

static size_t slot_of(uint64_t key, size_t nr_slots)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (size_t)key & (nr_slots - 1);
}

static int grow(struct u64_map *m)
{
	size_t nr = m->nr_slots ? m->nr_slots * 2 : 256;
	uint64_t *keys = calloc(nr, sizeof(*keys));
	uint64_t *values = malloc(nr * sizeof(*values));

	if (!keys || !values) {
		free(keys);
		free(values);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->nr_slots; i++) {
		if (!m->keys[i])
			continue;
		size_t j = slot_of(m->keys[i] - 1, nr);
		while (keys[j])
			j = (j + 1) & (nr - 1);
		keys[j] = m->keys[i];
		values[j] = m->values[i];
	}
	free(m->keys);
	free(m->values);
	m->keys = keys;
	m->values = values;
	m->nr_slots = nr;
	return 0;
}

int u64_map__set(struct u64_map *m, uint64_t key, uint64_t value)
{
	if ((m->nr_used + 1) * 4 > m->nr_slots * 3 && grow(m))
		return -ENOMEM;
	size_t j = slot_of(key, m->nr_slots);
	while (m->keys[j] && m->keys[j] != key + 1)
		j = (j + 1) & (m->nr_slots - 1);
	if (!m->keys[j]) {
		m->keys[j] = key + 1;
		m->nr_used++;
	}
	m->values[j] = value;
	return 0;
}

bool u64_map__get(const struct u64_map *m, uint64_t key, uint64_t *value)
{
	if (!m->nr_slots)
		return false;
	size_t j = slot_of(key, m->nr_slots);
	while (m->keys[j]) {
		if (m->keys[j] == key + 1) {
			if (value)
				*value = m->values[j];
			return true;
		}
		j = (j + 1) & (m->nr_slots - 1);
	}
	return false;
}
