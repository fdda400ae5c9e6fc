// SPDX-License-Identifier: GPL-2.0
#include "lib/text_table.h"

#include <stdlib.h>
#include <string.h>

void text_table__init(struct text_table *t)
{
	*t = (struct text_table){0};
	u64_map__init(&t->ids);
}

void text_table__free(struct text_table *t)
{
	for (uint32_t i = 0; i < t->nr; i++)
		free(t->texts[i]);
	free(t->texts);
	u64_map__free(&t->ids);
	*t = (struct text_table){0};
}

const char *text_table__get(const struct text_table *t, uint64_t id)
{
	uint64_t i;

	return u64_map__get(&t->ids, id, &i) && i < t->nr ? t->texts[i] : NULL;
}

const char *text_table__add(struct text_table *t, uint64_t id, const char *text)
{
	const char *have = text_table__get(t, id);
	char *copy;

	if (have)
		return have;
	if (t->nr == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 16;
		char **texts = realloc(t->texts, cap * sizeof(*texts));

		if (!texts)
			return NULL;
		t->texts = texts;
		t->cap = cap;
	}
	copy = strdup(text);
	if (!copy || u64_map__set(&t->ids, id, t->nr)) {
		free(copy);
		return NULL;
	}
	t->texts[t->nr++] = copy;
	return copy;
}
