/* SPDX-License-Identifier: GPL-2.0 */
/* Static exporters of the analyzer's model: JSON (docs/json-schema.md) and DOT. */
#ifndef ASYNCBPF_EXPORT_H
#define ASYNCBPF_EXPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "model/model.h"

/* The full model as JSON. Returns 0 or -errno. */
int export_json__write(const struct model *m, FILE *out);

/*
 * The await graph for Graphviz: clusters per crate, node labels "path\nfile:line",
 * edges labelled with the await index and line, inlined-only futures dashed, roots
 * marked. selected (indexed like model.futures) may be NULL: every future that has
 * an edge or a poll is drawn; else only selected ones and their direct neighbours.
 */
int export_dot__write(const struct model *m, const bool *selected, FILE *out);

#endif
