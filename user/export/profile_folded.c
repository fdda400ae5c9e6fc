// SPDX-License-Identifier: GPL-2.0
/*
 * Folded stacks for flamegraph.pl, inferno and speedscope: one line per distinct
 * stack, "frame;frame;... WEIGHT", root first, sorted, equal lines merged. On-CPU
 * weight is samples; off-CPU (offcpu != 0) weight is nanoseconds blocked. Inlined
 * frames carry flamegraph.pl's "_[i]" suffix. A ';' inside a name (Rust array types:
 * "[u8; 4]") would split the frame, so it is written as ','; control characters
 * as ' '.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export/profile_export.h"

struct line {
	char *text;
	uint64_t weight;
};

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

static char *render(const struct pstack *s)
{
	size_t len = 1;
	char *buf, *at;

	for (uint32_t i = 0; i < s->nframes; i++)
		len += strlen(s->frames[i]->name) + 5;
	if (!(buf = malloc(len)))
		return NULL;
	at = buf;
	for (uint32_t i = 0; i < s->nframes; i++) {
		const struct pframe *f = s->frames[i];

		if (i)
			*at++ = ';';
		for (const char *c = f->name; *c; c++)
			*at++ = *c == ';' ? ',' : (unsigned char)*c < 0x20 ? ' ' : *c;
		if (f->inlined && f->kind == PFRAME_FUNCTION) {
			memcpy(at, "_[i]", 4);
			at += 4;
		}
	}
	*at = '\0';
	return buf;
}

int folded__write(FILE *out, const struct profile_data *p, int offcpu)
{
	struct line *lines = calloc(p->nstacks ? p->nstacks : 1, sizeof(*lines));
	size_t n = 0;
	int err = 0;

	if (!lines)
		return -ENOMEM;
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct pstack *s = &p->stacks[i];

		if (s->offcpu != (offcpu != 0) || !s->weight || !s->nframes)
			continue;
		if (!(lines[n].text = render(s))) {
			err = -ENOMEM;
			goto out;
		}
		lines[n++].weight = s->weight;
	}
	qsort(lines, n, sizeof(*lines), cmp_line);
	for (size_t i = 0; i < n;) {
		uint64_t w = 0;
		size_t j = i;

		for (; j < n && !strcmp(lines[j].text, lines[i].text); j++)
			w += lines[j].weight;
		if (fprintf(out, "%s %" PRIu64 "\n", lines[i].text, w) < 0) {
			err = -EIO;
			goto out;
		}
		i = j;
	}
	if (fflush(out) || ferror(out))
		err = -EIO;
out:
	for (size_t i = 0; i < n; i++)
		free(lines[i].text);
	free(lines);
	return err;
}
