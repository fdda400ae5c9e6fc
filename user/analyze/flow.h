/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every register and tracked stack slot of a function holds at each
 * instruction, as far as the code proves it: a forward "must" dataflow over the
 * CFG (cfg.h). A value is the function's argument register r as it was at entry
 * (plus a constant offset), an address in the function's own frame (relative to
 * rsp at entry), a constant, or unknown. Stack-pointer distance from entry is
 * tracked too. What this is for: where `self` is at any instruction (entry sites),
 * whether a function returns through a hidden pointer (rax = the incoming rdi at
 * every `ret`), which constant a path stores into `__state` (abi.c; exit sites).
 *
 * Sound for what it claims ("must"), except for one assumption about memory,
 * said where it is made (flow.c, calls): a callee given the address of one stack
 * object writes only that object.
 */
#ifndef ASYNCBPF_ANALYZE_FLOW_H
#define ASYNCBPF_ANALYZE_FLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "analyze/cfg.h"

enum flow_kind {
	FLOW_UNKNOWN = 0,
	FLOW_ARG,   /* the value register `arg` had at function entry, plus off */
	FLOW_FRAME, /* the address rsp-at-entry + off */
	FLOW_CONST, /* the constant off */
};

struct flow_val {
	uint8_t kind; /* enum flow_kind */
	uint8_t arg;  /* FLOW_ARG: DWARF register number */
	int64_t off;
};

#define FLOW_MAX_SLOTS	 24 /* 8-byte stack slots tracked at once */
#define FLOW_MAX_ESCAPED 16 /* frame addresses known to have escaped, else "anywhere" */

struct flow_slot {
	int64_t off; /* from rsp at entry */
	struct flow_val v;
};

struct flow_state {
	bool reached; /* false: no path reaches this point (yet) */
	bool sp_known;
	int64_t sp;			   /* rsp - rsp at entry */
	struct flow_val reg[INSN_NR_GPRS]; /* reg[rsp] unused: see sp */
	struct flow_slot slot[FLOW_MAX_SLOTS];
	uint8_t nr_slots;
	uint8_t nr_escaped;
	bool escaped_anywhere;		   /* a frame address we could not follow escaped */
	int64_t escaped[FLOW_MAX_ESCAPED]; /* frame addresses handed out (calls, memory) */
};

struct flow {
	const struct cfg *g;
	struct flow_state *in; /* per block: the state at its first instruction */
	uint32_t iterations;
	bool converged; /* false: stopped at the iteration bound (results unusable) */
};

/* Run the analysis; 0 or -ENOMEM. */
int flow__run(struct flow *f, const struct cfg *g);
void flow__free(struct flow *f);

/* The state before instruction i (walks its block from the block's entry state).
 * st->reached is false for an instruction no known path reaches. */
void flow__state_before(const struct flow *f, uint32_t i, struct flow_state *st);
/* Apply instruction in to st (the transfer function). */
void flow__step(struct flow_state *st, const struct insn *in);

/* Where does st hold the value v? The first register (not rsp) holding exactly v,
 * else -1; and the first stack slot (*slot_off, from rsp at entry) holding it. */
int flow__find_reg(const struct flow_state *st, struct flow_val v);
bool flow__find_slot(const struct flow_state *st, struct flow_val v, int64_t *slot_off);
/* The value a memory operand's address has, if it is base + disp with a known base. */
bool flow__address(const struct flow_state *st, const struct insn_op *m, struct flow_val *addr);
bool flow__same(struct flow_val a, struct flow_val b);

static inline struct flow_val flow_arg(uint8_t reg, int64_t off)
{
	return (struct flow_val){.kind = FLOW_ARG, .arg = reg, .off = off};
}

#endif
