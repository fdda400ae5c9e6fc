/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Disassembly of poll functions (Capstone): where the tracer can probe a poll's
 * exits without uretprobes, and the cheapest safe entry site.
 */
#ifndef ASYNCBPF_DISASM_H
#define ASYNCBPF_DISASM_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/cfg.h"
#include "analyze/flow.h"
#include "analyze/insn.h" /* DWARF_REG_* */
#include "model/model.h"

/*
 * Disassemble one function: code holds its bytes [addr, addr + size).
 * self_reg is the DWARF register holding `self` at the first instruction.
 *
 * Fills *exits (malloc'd array, caller frees; file_offset left 0 for the caller)
 * with every `ret` and every jump leaving the function (direct jumps whose target
 * is outside [addr, addr+size), indirect jumps that are not jump-table dispatches),
 * and *entry with the cheapest safe entry probe site.
 * Returns 0, or -errno with a reason in err: -EINVAL when the bytes do not decode
 * as a whole function, -ENOMEM, -ENOTSUP on an architecture we cannot disassemble.
 */
int disasm__analyze_function(const uint8_t *code, size_t size, uint64_t addr, uint16_t self_reg,
			     struct exit_site **exits, uint32_t *nr_exits, struct entry_site *entry,
			     char *err, size_t errlen);

/*
 * The same answers from a function's CFG and dataflow, built once by the caller
 * (analyzer_post.c builds them with a reader, so jump tables are read). 0 or
 * -ENOMEM / -EINVAL (a self register that is not a general-purpose register).
 */
int disasm__sites(const struct cfg *g, const struct flow *f, uint16_t self_reg,
		  struct exit_site **exits, uint32_t *nr_exits, struct entry_site *entry, char *err,
		  size_t errlen);

/* Name of a DWARF x86-64 register number ("rdi"), or "?" */
const char *disasm__reg_name(uint16_t dwarf_reg);

#endif
