/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Emulated exit sites (docs/disasm.md, "Emulated exit sites"): for each `ret` of a
 * function, the branch instructions (jmp, jcc: the kernel emulates a uprobe on them,
 * where a probe on `ret` is single-stepped) through which every execution reaches
 * that `ret`, each passed exactly once, with nothing after it but instructions that
 * store nothing, call nothing and leave the result registers alone; the stack
 * pointer's distance from the entry at each site (from the dataflow), and for a jcc
 * the condition under which it leads to the `ret`. A `ret` with no such set keeps
 * its own probe.
 */
#ifndef ASYNCBPF_ANALYZE_EXIT_SITES_H
#define ASYNCBPF_ANALYZE_EXIT_SITES_H

#include <stdint.h>

#include "analyze/cfg.h"
#include "analyze/flow.h"
#include "model/model.h"

/* Why a `ret` keeps its own probe (counted per reason by exit_sites__find). */
/* Why a ret keeps its probe (model.exits_kept; named in analyze --json's "rets_kept",
 * user/export/export_json.c: keep the order). */
enum exit_keep {
	EXIT_KEEP_UNSAFE_TAIL,	/* a store, call or result-register write after every site */
	EXIT_KEEP_FALLTHROUGH,	/* reached by falling through from an unsafe block */
	EXIT_KEEP_ENTRY,	/* the function's entry block leads straight to it */
	EXIT_KEEP_NOT_EMULATED, /* a branch into it the kernel would single-step */
	EXIT_KEEP_LOOP,		/* a jcc site inside a loop: it would fire every iteration */
	EXIT_KEEP_UNKNOWN,	/* unresolved edges, unknown stack pointer */
	EXIT_KEEP_STATE,	/* __state's final value cannot be told at a site */
	EXIT_KEEP_COUNT,
};
_Static_assert(EXIT_KEEP_COUNT == 7, "rename in export_json.c's rets_kept too");

/* What the exit probe of a poll fn reads, which the tail must leave alone. */
struct exit_sites_opts {
	/* bit r for each DWARF register the result is read from (rax, rdx): hand-written */
	uint16_t keep_regs;
	/* a state machine: the only store allowed in a tail is to __state, of state_size
	 * bytes at self (the incoming self_reg) + state_offset; the site then says where
	 * the value comes from (exit_site.state_src) */
	bool has_state;
	uint16_t self_reg;
	uint64_t state_offset;
	uint32_t state_size;
};

/*
 * The exit sites of g for the default mode: every exit of g, each `ret` replaced by
 * its emulated sites where safe. *out is malloc'd (sorted by address, a site shared
 * by several paths once; the caller fills file offsets); *covered counts the rets
 * replaced; kept[reason] (may be NULL) counts the rets kept. 0 or -ENOMEM.
 */
int exit_sites__find(const struct cfg *g, const struct flow *f, const struct exit_sites_opts *o,
		     struct exit_site **out, uint32_t *nr, uint32_t *covered,
		     uint32_t kept[EXIT_KEEP_COUNT]);
/* "a store, call or result-register write after every site", ... */
const char *exit_keep__describe(enum exit_keep k);
/* The x86 condition code of a jcc's bytes (low nibble of its opcode), or -1. */
int exit_sites__jcc_cond(const uint8_t *bytes, size_t len);
/* The condition a plain exit (ret, tail jump) of g at instruction i leaves under:
 * a conditional tail jump's code (the probe fires before the branch is decided),
 * else EXIT_COND_ALWAYS. */
uint8_t exit_sites__plain_cond(const struct cfg *g, uint32_t i);

#endif
