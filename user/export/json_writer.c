// SPDX-License-Identifier: GPL-2.0
/* The streaming JSON writer (json_writer.h). */
#include "export/json_writer.h"

#include <inttypes.h>
#include <string.h>

#include "lib/text.h"

/* Comma, line break (top two levels only: one future or poll per line) and key. */
static void jw_prefix(struct json_writer *w, const char *key)
{
	if (w->need_comma[w->depth])
		putc(',', w->out);
	w->need_comma[w->depth] = true;
	if (w->depth >= 1 && w->depth <= 2) {
		putc('\n', w->out);
		for (int i = 0; i < w->depth; i++)
			putc(' ', w->out);
	}
	if (key) {
		/* keys are our own identifiers: nothing to escape */
		putc('"', w->out);
		fputs(key, w->out);
		fputs("\":", w->out);
	}
}

static void jw_open(struct json_writer *w, const char *key, char bracket)
{
	if (w->depth > 0 || w->need_comma[0])
		jw_prefix(w, key);
	putc(bracket, w->out);
	/* the structure is fixed by this file: JSON_MAX_DEPTH is never reached */
	if (w->depth + 1 < JSON_MAX_DEPTH)
		w->depth++;
	w->need_comma[w->depth] = false;
}

static void jw_close(struct json_writer *w, char bracket)
{
	bool had_items = w->need_comma[w->depth];

	w->depth--;
	if (had_items && w->depth <= 1) {
		putc('\n', w->out);
		for (int i = 0; i < w->depth; i++)
			putc(' ', w->out);
	}
	putc(bracket, w->out);
}

void jw_object(struct json_writer *w, const char *key)
{
	jw_open(w, key, '{');
}

void jw_object_end(struct json_writer *w)
{
	jw_close(w, '}');
}

void jw_array(struct json_writer *w, const char *key)
{
	jw_open(w, key, '[');
}

void jw_array_end(struct json_writer *w)
{
	jw_close(w, ']');
}

void jw_null(struct json_writer *w, const char *key)
{
	jw_prefix(w, key);
	fputs("null", w->out);
}

/* NULL becomes null */
void jw_string(struct json_writer *w, const char *key, const char *value)
{
	jw_prefix(w, key);
	if (value)
		json__write_string(w->out, value);
	else
		fputs("null", w->out);
}

void jw_u64(struct json_writer *w, const char *key, uint64_t value)
{
	jw_prefix(w, key);
	fprintf(w->out, "%" PRIu64, value);
}

void jw_i64(struct json_writer *w, const char *key, int64_t value)
{
	jw_prefix(w, key);
	fprintf(w->out, "%" PRId64, value);
}

void jw_bool(struct json_writer *w, const char *key, bool value)
{
	jw_prefix(w, key);
	fputs(value ? "true" : "false", w->out);
}

/* A future index as an id, or null when it does not name a future of this model. */
