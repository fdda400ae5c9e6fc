/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How a completed poll is named in the trace writers (docs/trace-formats.md, "What a
 * poll becomes"): the slice name, the `await` location, state names. Shared by the
 * Perfetto and Chrome writers so both say the same. Pure code.
 */
#ifndef ASYNCBPF_POLL_TEXT_H
#define ASYNCBPF_POLL_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

/* The future's display name, else the poll fn's name, else "poll#N" / "(unknown poll)". */
const char *poll_text__name(const struct model *m, uint32_t future, uint32_t poll, char *buf,
			    size_t len);
/* The future's full Rust path, else the poll fn's name, else "(unknown)". */
const char *poll_text__path(const struct model *m, uint32_t future, uint32_t poll);
/* "file:line" of await point `index` of the future; false (buf untouched) when it has none.
 * buf NULL: only whether it has one (nothing formatted). */
bool poll_text__await(const struct model *m, uint32_t future, int32_t index, char *buf, size_t len);
/* "Suspend0 (3)", or the raw value when the state has no name. Returns the length. */
size_t poll_text__state(const struct future *f, uint64_t discr, char *buf, size_t len);

#endif
