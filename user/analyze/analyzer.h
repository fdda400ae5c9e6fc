/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The async analyzer: one streaming walk over a Rust binary's DWARF that fills a
 * model (futures, states, polls, await graph), then disassembles each poll fn.
 */
#ifndef ASYNCBPF_ANALYZER_H
#define ASYNCBPF_ANALYZER_H

#include <stdbool.h>
#include <stdint.h>

#include "model/model.h"
#include "analyze/target.h"

struct analyzer_opts {
	bool progress;		   /* progress on stderr (the caller decides: a TTY) */
	uint32_t max_inline_sites; /* kept per poll fn (the total is still counted); 0: 64 */
	/* the exits in the callers of every poll fn and the task polls' exits
	 * (docs/disasm.md, "Exits in the caller"): decodes the whole executable once,
	 * ~0.13 s per 1.6 MB of code on the development VM, so only when asked */
	bool caller_exits;
};

/*
 * Analyze an opened target into m (initialised by the caller with model__init).
 * Returns 0 (possibly with warnings in m, and m->symbols_only when there is no
 * DWARF) or -errno with a message in err (-ENOMEM, -ENOEXEC on unusable input).
 */
int analyzer__analyze(struct target *t, const struct analyzer_opts *o, struct model *m, char *err,
		      size_t errlen);

#endif
