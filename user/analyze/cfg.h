/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control-flow graph of one function: basic blocks over its decoded
 * instructions (insn.h), edges for fall-through, direct branches and jump tables
 * (read from the binary's data when a reader is given), the function's exits, and
 * a reverse post-order for the dataflow passes (flow.h).
 */
#ifndef ASYNCBPF_ANALYZE_CFG_H
#define ASYNCBPF_ANALYZE_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/insn.h"

/* Bytes of the binary at a link-time address (jump tables live in .rodata):
 * 0, or -errno when [addr, addr+len) is not in the file. */
typedef int (*cfg_read_fn)(void *ctx, uint64_t addr, size_t len, const uint8_t **bytes);

#define CFG_MAX_TABLE_ENTRIES 4096u
#define CFG_NONE	      UINT32_MAX

enum cfg_exit_kind {
	CFG_EXIT_RET,
	CFG_EXIT_TAIL_JMP,	    /* direct jmp/jcc whose target is outside the function */
	CFG_EXIT_TAIL_JMP_INDIRECT, /* jmp reg/mem that is not a jump-table dispatch */
};

struct cfg_block {
	uint32_t first, last; /* instruction indices, inclusive */
	uint32_t succ[2];     /* fall-through / branch target blocks, CFG_NONE if none */
	uint32_t table_first; /* jump-table successors: cfg.table_succ[table_first ...] */
	uint32_t nr_table;
	uint32_t nr_preds;   /* known edges into the block */
	uint32_t pred_first; /* cfg.preds[pred_first ...]: those edges' source blocks */
	bool dispatch;	     /* ends in a jump-table dispatch */
	bool table_resolved; /* its table was read (else its successors are unknown) */
	bool unknown_preds;  /* may be entered by an edge we could not resolve */
	bool reachable;	     /* from the entry through known edges */
};

struct cfg_exit {
	uint32_t insn;
	enum cfg_exit_kind kind;
	uint64_t target; /* CFG_EXIT_TAIL_JMP */
};

struct cfg {
	uint64_t addr, size;
	const uint8_t *code;
	struct insn_seq seq;
	struct cfg_block *blocks;
	uint32_t nr_blocks;
	uint32_t *block_of; /* instruction index -> block */
	uint32_t *table_succ;
	uint32_t nr_table_succ;
	uint32_t *preds;
	uint32_t nr_pred_edges;
	uint32_t *rpo; /* reachable blocks, reverse post-order from the entry */
	uint32_t nr_rpo;
	struct cfg_exit *exits;
	uint32_t nr_exits;
	uint32_t nr_dispatch, nr_unresolved_dispatch;
};

/*
 * Decode [addr, addr + size) (insn__decode) and build the graph. read may be NULL
 * (jump tables then stay unresolved: their targets are marked unknown_preds).
 * Returns 0 or -errno with a reason in err (insn__decode's errors; -EINVAL when a
 * branch targets the middle of an instruction).
 */
int cfg__build(struct cfg *g, const uint8_t *code, size_t size, uint64_t addr, cfg_read_fn read,
	       void *read_ctx, char *err, size_t errlen);
void cfg__free(struct cfg *g);

static inline const struct insn *cfg__insn(const struct cfg *g, uint32_t i)
{
	return &g->seq.insns[i];
}

/* The bytes of instruction i. */
static inline const uint8_t *cfg__bytes(const struct cfg *g, uint32_t i)
{
	return g->code + g->seq.insns[i].offset;
}

#endif
