// SPDX-License-Identifier: GPL-2.0
/*
 * Exit and entry sites of a poll function, from its CFG (cfg.c) and value
 * dataflow (flow.c): every exit instruction, so exits can be probed without
 * uretprobes, and the cheapest safe entry probe site. The rules, and why, are in
 * docs/disasm.md.
 */
#include "analyze/disasm.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/exit_sites.h"

const char *disasm__reg_name(uint16_t dwarf_reg)
{
	return insn__reg_name(dwarf_reg);
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int copy_exits(const struct cfg *g, struct exit_site **exits, uint32_t *nr_exits)
{
	static const enum exit_kind kinds[] = {
	    [CFG_EXIT_RET] = EXIT_RET,
	    [CFG_EXIT_TAIL_JMP] = EXIT_TAIL_JMP,
	    [CFG_EXIT_TAIL_JMP_INDIRECT] = EXIT_TAIL_JMP_INDIRECT,
	};

	if (!g->nr_exits)
		return 0;
	*exits = calloc(g->nr_exits, sizeof(**exits));
	if (!*exits)
		return -ENOMEM;
	for (uint32_t k = 0; k < g->nr_exits; k++) {
		const struct insn *in = cfg__insn(g, g->exits[k].insn);

		(*exits)[k] = (struct exit_site){
		    .addr = in->addr,
		    .kind = kinds[g->exits[k].kind],
		    .target = g->exits[k].target,
		    .probeable = in->probeable,
		    .cond = exit_sites__plain_cond(g, g->exits[k].insn),
		};
	}
	*nr_exits = g->nr_exits;
	return 0;
}

static bool is_exit(const struct cfg *g, uint32_t i)
{
	for (uint32_t k = 0; k < g->nr_exits; k++)
		if (g->exits[k].insn == i)
			return true;
	return false;
}

/* Where st holds self: its own register first, then any register, then a slot. */
static bool self_where(const struct flow_state *st, uint16_t self_reg, struct entry_site *e)
{
	struct flow_val self = flow_arg((uint8_t)self_reg, 0);
	int64_t slot;
	int r;

	if (flow__same(st->reg[self_reg], self)) {
		e->self_kind = SELF_LOC_REG;
		e->self_reg = self_reg;
		return true;
	}
	r = flow__find_reg(st, self);
	if (r >= 0) {
		e->self_kind = SELF_LOC_REG;
		e->self_reg = (uint16_t)r;
		return true;
	}
	if (st->sp_known && flow__find_slot(st, self, &slot)) {
		e->self_kind = SELF_LOC_STACK;
		e->self_sp_offset = (int32_t)(slot - st->sp);
		return true;
	}
	return false;
}

static void snapshot(const struct cfg *g, uint32_t i, const struct flow_state *st, bool emulated,
		     uint16_t self_reg, struct entry_site *e)
{
	const struct insn *in = cfg__insn(g, i);

	memset(e, 0, sizeof(*e));
	e->valid = true;
	e->addr = in->addr;
	e->emulated = emulated; /* the site is cheap: false for a fallback */
	/* "mnemonic op_str", cut to fit: the text is for humans */
	insn__text(cfg__bytes(g, i), g->size - in->offset, in->addr, e->insn, sizeof(e->insn));
	e->sp_delta = (int32_t)st->sp;
	self_where(st, self_reg, e);
}

/*
 * The entry walk: along the entry block, up to its first branch or call (after a
 * call the caller-saved registers are gone) or until rsp is no longer a known
 * distance from the entry. The first instruction the kernel emulates where self
 * is still known is the site; else the first instruction it accepts at all.
 */
static void entry_walk(const struct cfg *g, const struct flow *f, uint16_t self_reg,
		       struct entry_site *entry)
{
	const struct cfg_block *b0 = &g->blocks[0];
	struct flow_state st;
	struct entry_site probe;
	bool have_fallback = false;

	flow__state_before(f, 0, &st);
	for (uint32_t i = b0->first; i <= b0->last && st.reached; i++) {
		const struct insn *in = cfg__insn(g, i);

		memset(&probe, 0, sizeof(probe));
		if (st.sp_known && in->probeable && self_where(&st, self_reg, &probe)) {
			if (in->emulated && !is_exit(g, i)) {
				snapshot(g, i, &st, true, self_reg, entry);
				return;
			}
			if (!have_fallback) {
				snapshot(g, i, &st, false, self_reg, entry);
				have_fallback = true;
			}
		}
		flow__step(&st, in);
		if (in->flow != INSN_FLOW_NONE || !st.sp_known)
			break;
	}
}

int disasm__sites(const struct cfg *g, const struct flow *f, uint16_t self_reg,
		  struct exit_site **exits, uint32_t *nr_exits, struct entry_site *entry, char *err,
		  size_t errlen)
{
	*exits = NULL;
	*nr_exits = 0;
	memset(entry, 0, sizeof(*entry));
	if (self_reg >= INSN_NR_GPRS || self_reg == DWARF_REG_RSP) {
		set_err(err, errlen,
			"self register %u (%s) is not a general-purpose argument register",
			self_reg, disasm__reg_name(self_reg));
		return -EINVAL;
	}
	if (copy_exits(g, exits, nr_exits)) {
		set_err(err, errlen, "out of memory for exit sites");
		return -ENOMEM;
	}
	if (g->nr_blocks) {
		entry_walk(g, f, self_reg, entry);
		entry->first_emulated = cfg__insn(g, g->blocks[0].first)->emulated &&
					cfg__insn(g, g->blocks[0].first)->probeable;
	}
	return 0;
}

int disasm__analyze_function(const uint8_t *code, size_t size, uint64_t addr, uint16_t self_reg,
			     struct exit_site **exits, uint32_t *nr_exits, struct entry_site *entry,
			     char *err, size_t errlen)
{
	struct cfg g;
	struct flow f = {0};
	int ret;

	*exits = NULL;
	*nr_exits = 0;
	memset(entry, 0, sizeof(*entry));
	if (err && errlen)
		err[0] = '\0';
#if !defined(__x86_64__)
	set_err(err, errlen,
		"disassembly supports x86-64 only: this build of asyncbpf is for another "
		"architecture");
	return -ENOTSUP;
#endif
	if (code && size && size > (size_t)INSN_MAX_FUNCTION_INSNS * 16) {
		set_err(err, errlen,
			"function at 0x%" PRIx64 " is %zu bytes: more than we analyse (%u)", addr,
			size, INSN_MAX_FUNCTION_INSNS * 16);
		return -E2BIG;
	}
	if (self_reg >= INSN_NR_GPRS || self_reg == DWARF_REG_RSP) {
		set_err(err, errlen,
			"self register %u (%s) is not a general-purpose argument register",
			self_reg, disasm__reg_name(self_reg));
		return -EINVAL;
	}
	ret = cfg__build(&g, code, size, addr, NULL, NULL, err, errlen);
	if (ret)
		return ret;
	ret = flow__run(&f, &g);
	if (ret)
		set_err(err, errlen, "out of memory analysing the function at 0x%" PRIx64, addr);
	else
		ret = disasm__sites(&g, &f, self_reg, exits, nr_exits, entry, err, errlen);
	flow__free(&f);
	cfg__free(&g);
	return ret;
}
