/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How a poll function really receives `self` and returns its Poll<T>, read off its
 * machine code (the CFG and dataflow of cfg.h/flow.h), not from a size rule: a
 * compiler's return convention changes between versions (rustc 1.95 returns a
 * 16-byte Poll<io::Result<usize>> in rax:rdx, an older rule said memory), and a
 * wrong guess makes every record of that future wrong. docs/analyzer.md, "Calling
 * conventions".
 */
#ifndef ASYNCBPF_ANALYZE_ABI_H
#define ASYNCBPF_ANALYZE_ABI_H

#include <stdbool.h>
#include <stdint.h>

#include "analyze/cfg.h"
#include "analyze/flow.h"
#include "model/model.h"

/*
 * Read the code's evidence into ev's code_* and counting fields (the others come
 * from DWARF). state: the future's __state (has_state false for a hand-written
 * future); layout: its Poll<T> from DWARF (may be !known).
 */
void abi__read(const struct cfg *g, const struct flow *f, bool has_state, uint64_t state_offset,
	       uint32_t state_size, const struct poll_layout *layout, struct poll_abi *ev);

#endif
