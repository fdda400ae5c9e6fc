// SPDX-License-Identifier: GPL-2.0
#include "lib/strpool.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_SIZE (64 * 1024)

struct strpool_chunk {
	struct strpool_chunk *next;
	size_t used, cap;
	char data[];
};

void strpool__init(struct strpool *p)
{
	memset(p, 0, sizeof(*p));
}

void strpool__free(struct strpool *p)
{
	struct strpool_chunk *c = p->chunks, *next;

	for (; c; c = next) {
		next = c->next;
		free(c);
	}
	free(p->slots);
	memset(p, 0, sizeof(*p));
}

static uint64_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static char *pool_alloc(struct strpool *p, size_t n)
{
	struct strpool_chunk *c = p->chunks;

	if (!c || c->cap - c->used < n) {
		size_t cap = n > CHUNK_SIZE ? n : CHUNK_SIZE;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = p->chunks;
		p->chunks = c;
	}
	char *r = c->data + c->used;
	c->used += n;
	p->bytes += n;
	return r;
}

static int grow(struct strpool *p)
{
	size_t nr = p->nr_slots ? p->nr_slots * 2 : 1024;
	const char **slots = calloc(nr, sizeof(*slots));

	if (!slots)
		return -1;
	for (size_t i = 0; i < p->nr_slots; i++) {
		const char *s = p->slots[i];
		if (!s)
			continue;
		size_t j = hash_bytes(s, strlen(s)) & (nr - 1);
		while (slots[j])
			j = (j + 1) & (nr - 1);
		slots[j] = s;
	}
	free(p->slots);
	p->slots = slots;
	p->nr_slots = nr;
	return 0;
}

const char *strpool__intern_len(struct strpool *p, const char *s, size_t len)
{
	if (!s)
		return NULL;
	if ((p->nr_used + 1) * 2 > p->nr_slots && grow(p))
		return NULL;
	size_t j = hash_bytes(s, len) & (p->nr_slots - 1);
	while (p->slots[j]) {
		const char *t = p->slots[j];
		if (strncmp(t, s, len) == 0 && t[len] == '\0')
			return t;
		j = (j + 1) & (p->nr_slots - 1);
	}
	char *copy = pool_alloc(p, len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, s, len);
	copy[len] = '\0';
	p->slots[j] = copy;
	p->nr_used++;
	return copy;
}

const char *strpool__intern(struct strpool *p, const char *s)
{
	return s ? strpool__intern_len(p, s, strlen(s)) : NULL;
}

const char *strpool__printf(struct strpool *p, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	if ((size_t)n < sizeof(buf))
		return strpool__intern_len(p, buf, (size_t)n);

	char *big = malloc((size_t)n + 1);
	if (!big)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	const char *r = strpool__intern_len(p, big, (size_t)n);
	free(big);
	return r;
}
