/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the selection modules (selection.c, glob.c, whitelist.c) and by
 * nothing else: not an interface, only a way not to keep two copies.
 */
#ifndef ASYNCBPF_SELECTION_INTERNAL_H
#define ASYNCBPF_SELECTION_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "select/selection.h"
#include "lib/text.h"

/* The selection may have been built for another model: only touch what both have. */
static inline uint32_t sel_nr(const struct selection *s, const struct model *m)
{
	if (!s->futures)
		return 0;
	return s->nr < m->nr_futures ? s->nr : m->nr_futures;
}

#endif
