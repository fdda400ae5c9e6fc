// SPDX-License-Identifier: GPL-2.0
/*
 * (poll fn, self) -> value: the index of the summary's live future instances and
 * tasks. Open addressing, linear probing, deletion by backward shift (no tombstones,
 * so a long run of ends and starts does not slow lookups down).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace/key_map.h"

#define EMPTY_POLL UINT32_MAX

void key_map__init(struct key_map *m)
{
	memset(m, 0, sizeof(*m));
}

void key_map__free(struct key_map *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

static size_t key_slot(uint32_t poll, uint64_t self, size_t nr_slots)
{
	uint64_t h = self ^ ((uint64_t)poll << 32 | poll);

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return (size_t)h & (nr_slots - 1);
}

static struct key_map_slot *key_find(const struct key_map *m, uint32_t poll, uint64_t self)
{
	if (!m->nr_slots)
		return NULL;
	for (size_t i = key_slot(poll, self, m->nr_slots);; i = (i + 1) & (m->nr_slots - 1)) {
		struct key_map_slot *sl = &m->slots[i];

		if (sl->poll == EMPTY_POLL)
			return NULL;
		if (sl->poll == poll && sl->self == self)
			return sl;
	}
}

static void key_insert(struct key_map_slot *slots, size_t nr, const struct key_map_slot *e)
{
	size_t i = key_slot(e->poll, e->self, nr);

	while (slots[i].poll != EMPTY_POLL)
		i = (i + 1) & (nr - 1);
	slots[i] = *e;
}

static int key_grow(struct key_map *m)
{
	size_t nr = m->nr_slots ? m->nr_slots * 2 : 256;
	struct key_map_slot *slots = malloc(nr * sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < nr; i++)
		slots[i].poll = EMPTY_POLL;
	for (size_t i = 0; i < m->nr_slots; i++)
		if (m->slots[i].poll != EMPTY_POLL)
			key_insert(slots, nr, &m->slots[i]);
	free(m->slots);
	m->slots = slots;
	m->nr_slots = nr;
	return 0;
}

bool key_map__get(const struct key_map *m, uint32_t poll, uint64_t self, uint64_t *value)
{
	const struct key_map_slot *sl = key_find(m, poll, self);

	if (sl)
		*value = sl->value;
	return sl != NULL;
}

int key_map__set(struct key_map *m, uint32_t poll, uint64_t self, uint64_t value)
{
	struct key_map_slot *sl = key_find(m, poll, self), e = {.self = self, .poll = poll};

	if (sl) {
		sl->value = value;
		return 0;
	}
	/* load factor <= 1/2: probes stay short, an empty slot always ends a search */
	if ((m->nr_used + 1) * 2 > m->nr_slots && key_grow(m))
		return -ENOMEM;
	e.value = value;
	key_insert(m->slots, m->nr_slots, &e);
	m->nr_used++;
	return 0;
}

/* Linear probing's deletion: shift later members of the cluster back into the hole. */
void key_map__delete(struct key_map *m, uint32_t poll, uint64_t self)
{
	struct key_map_slot *sl = key_find(m, poll, self);
	size_t mask = m->nr_slots - 1, hole, i;

	if (!sl)
		return;
	hole = (size_t)(sl - m->slots);
	m->slots[hole].poll = EMPTY_POLL;
	m->nr_used--;
	for (i = (hole + 1) & mask; m->slots[i].poll != EMPTY_POLL; i = (i + 1) & mask) {
		size_t home = key_slot(m->slots[i].poll, m->slots[i].self, m->nr_slots);

		/* the entry may move into the hole unless its home lies in (hole, i] */
		if (((i - home) & mask) >= ((i - hole) & mask)) {
			m->slots[hole] = m->slots[i];
			m->slots[i].poll = EMPTY_POLL;
			hole = i;
		}
	}
}
