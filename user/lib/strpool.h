/* SPDX-License-Identifier: GPL-2.0 */
/* Interned strings: each distinct string stored once, freed all at once. */
#ifndef ASYNCBPF_STRPOOL_H
#define ASYNCBPF_STRPOOL_H

#include <stddef.h>
#include <stdint.h>

struct strpool_chunk;

struct strpool {
	struct strpool_chunk *chunks;
	const char **slots; /* open-addressing hash table of interned strings */
	size_t nr_slots, nr_used;
	size_t bytes; /* total bytes stored, for memory accounting */
};

void strpool__init(struct strpool *p);
void strpool__free(struct strpool *p);
/* Returns the interned copy of s (s may be NULL: returns NULL), or NULL on ENOMEM. */
const char *strpool__intern(struct strpool *p, const char *s);
const char *strpool__intern_len(struct strpool *p, const char *s, size_t len);
const char *strpool__printf(struct strpool *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
