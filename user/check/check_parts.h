/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What each part of asyncbpf needs from the kernel (docs/check.md, "parts"): a
 * table of parts and the features each one needs, judged against check's results.
 */
#ifndef ASYNCBPF_CHECK_PARTS_H
#define ASYNCBPF_CHECK_PARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

struct feature_status {
	const char *name; /* "uprobe", "tp_btf", ... */
	bool ok;
};

/* The PART / STATUS / NEEDS table. */
void check_parts__print(FILE *out, const struct feature_status *f, size_t n);
/* root.parts[]: {name, needs, status, missing}. */
void check_parts__json(cJSON *root, const struct feature_status *f, size_t n);

#endif
