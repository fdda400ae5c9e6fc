/* SPDX-License-Identifier: GPL-2.0 */
/* Parts of analyze --json (docs/json-schema.md), for export_json.c only. */
#ifndef ASYNCBPF_EXPORT_JSON_PARTS_H
#define ASYNCBPF_EXPORT_JSON_PARTS_H

#include "export/json_writer.h"
#include "model/model.h"

void json__write_stats(struct json_writer *w, const struct model *m);
void json__write_tree(struct json_writer *w, const struct model *m, uint32_t id);
/* "steps": [{offset, deref}...], the first nr (at most MODEL_AWAIT_STEPS). */
void json__write_steps(struct json_writer *w, const struct await_step *steps, uint32_t nr);
void json__write_task_type(struct json_writer *w, const struct model *m, uint32_t id);

#endif
