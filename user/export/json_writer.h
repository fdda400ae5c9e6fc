/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A streaming JSON writer for export_json.c (docs/json-schema.md): objects and arrays
 * nested up to JSON_MAX_DEPTH, one member or element per call, strings escaped to
 * valid JSON (RFC 8259) whatever their bytes. key NULL: an array element.
 */
#ifndef ASYNCBPF_EXPORT_JSON_WRITER_H
#define ASYNCBPF_EXPORT_JSON_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json_writer {
	FILE *out;
	int depth;
	bool need_comma[JSON_MAX_DEPTH];
};

void jw_object(struct json_writer *w, const char *key);
void jw_object_end(struct json_writer *w);
void jw_array(struct json_writer *w, const char *key);
void jw_array_end(struct json_writer *w);
void jw_null(struct json_writer *w, const char *key);
void jw_string(struct json_writer *w, const char *key, const char *value);
void jw_u64(struct json_writer *w, const char *key, uint64_t value);
void jw_i64(struct json_writer *w, const char *key, int64_t value);
void jw_bool(struct json_writer *w, const char *key, bool value);

#endif
