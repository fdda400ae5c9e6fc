/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tail calls out of poll fns (docs/analyzer.md, "Tail calls"): a poll fn that
 * leaves by `jmp callee` with rsp as at its entry hands its caller's return address
 * to the callee, which computes the Poll<T> the caller receives. At the jump that
 * value does not exist yet; it is in rax (rdx, or the buffer rax points to) at the
 * callee's `ret`. This module finds, for every direct tail-jump target of a poll
 * fn, the callee's bounds (its symbol) and its `ret`s, or why they cannot stand
 * for the poll's exit.
 */
#ifndef ASYNCBPF_ANALYZE_TAIL_CALLS_H
#define ASYNCBPF_ANALYZE_TAIL_CALLS_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/cfg.h"
#include "analyze/target.h"
#include "model/model.h"

/*
 * Can the callee's exits end the poll that jumped to it? Yes (0) when every exit of
 * g is a `ret` the kernel can probe: their addresses go to rets (room for
 * g->nr_exits), their count to *nr. Otherwise 1 and why (a sentence) in why: no
 * ret at all, a further tail jump (followed one level only), an indirect jump out
 * (a vtable or GOT tail call), a ret the kernel refuses to probe.
 */
int tail_calls__callee_rets(const struct cfg *g, uint64_t *rets, uint32_t *nr, char *why,
			    size_t whylen);

/*
 * model.tail_callees: one per distinct direct tail-jump target of the model's
 * out-of-line poll fns (sorted by address), each disassembled. 0 or -ENOMEM.
 */
int tail_calls__find(struct target *t, struct model *m);

#endif
