/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Poll functions found by the DWARF walk (subprograms.c): called by analyzer.c's walk
 * for each DW_TAG_subprogram and DW_TAG_inlined_subroutine. Internal to analyze/.
 */
#ifndef ASYNCBPF_ANALYZE_SUBPROGRAMS_H
#define ASYNCBPF_ANALYZE_SUBPROGRAMS_H

#include <elfutils/libdw.h>
#include <stddef.h>

#include "analyze/walk.h"

/*
 * A subprogram DIE at namespace path[path_len]: a poll fn of a future is added to the
 * model (with what the passes after the walk need). 0 or -errno.
 */
int analyzer__on_subprogram(struct walk *w, Dwarf_Die *die, const char *path, size_t path_len);
/* An inlined copy of a function inside `caller` (its DIE offset, 0 if none): a poll
 * fn's inline site is recorded. 0 or -errno. */
int analyzer__on_inlined(struct walk *w, Dwarf_Die *die, Dwarf_Off caller);

#endif
