/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Consuming a BPF ring buffer in bounded rounds. ring_buffer__consume() returns only
 * once the buffer is empty: when records arrive faster than they are handled, it
 * never returns and a stop loop never sees Ctrl-C, --duration or the target's exit.
 * libbpf 1.1 (Debian bookworm) has no ring_buffer__consume_n(), so the sample
 * callback counts instead: after `n` records it returns -EAGAIN, which makes libbpf
 * stop (that record is consumed) and hand control back.
 */
#ifndef ASYNCBPF_RB_BUDGET_H
#define ASYNCBPF_RB_BUDGET_H

#include <bpf/libbpf.h>
#include <stdint.h>

/* Records per round: ~10-50 ms of the consumers' work, then the stop checks run. */
#define RB_BUDGET_ROUND 16384

struct rb_budget {
	ring_buffer_sample_fn fn; /* the real handler */
	void *ctx;
	uint32_t left;
};

/* The sample callback to give ring_buffer__new() with the budget as its ctx. */
int rb_budget__sample(void *ctx, void *data, size_t size);
/*
 * Consume at most n records (n >= 1). Returns how many were consumed (n: there may
 * be more), or a negative error from libbpf or the handler.
 */
int rb_budget__consume(struct ring_buffer *rb, struct rb_budget *b, uint32_t n);
/* Consume everything there is now, in rounds of n; stops at an error. */
int rb_budget__drain(struct ring_buffer *rb, struct rb_budget *b, uint32_t n);

#endif
