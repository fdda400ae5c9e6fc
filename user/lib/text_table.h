/* SPDX-License-Identifier: GPL-2.0 */
/*
 * id -> text, each text copied once: names built at a cost that repeat (task mode's
 * await stacks, keyed by a hash of the chain) are spelled once and looked up after.
 */
#ifndef ASYNCBPF_TEXT_TABLE_H
#define ASYNCBPF_TEXT_TABLE_H

#include <stdint.h>

#include "lib/hashmap.h"

struct text_table {
	struct u64_map ids; /* id -> index into texts */
	char **texts;
	uint32_t nr, cap;
};

void text_table__init(struct text_table *t);
void text_table__free(struct text_table *t);
/* The text stored under id, NULL when none is. */
const char *text_table__get(const struct text_table *t, uint64_t id);
/* Store a copy of text under id (kept if id has one already); the stored text, or
 * NULL when out of memory. id must not be UINT64_MAX. */
const char *text_table__add(struct text_table *t, uint64_t id, const char *text);

#endif
