/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Debug info levels (docs/analyzer.md, "Debug info levels"): how much DWARF each
 * crate of the binary has, which crates are the program's own, and what the lowest
 * of their levels loses. The DWARF walk reports every compile unit here; the symbol
 * pass reports the functions no compile unit covers.
 */
#ifndef ASYNCBPF_ANALYZE_DEBUGINFO_H
#define ASYNCBPF_ANALYZE_DEBUGINFO_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stdint.h>

#include "analyze/walk.h"

/* A compile unit is done: its level (from the walk's counts) and crate. */
int debuginfo__end_cu(struct walk *w, Dwarf_Die *cudie);
/* A DWARF function with code in the binary (its ranges: the code DWARF describes). */
int debuginfo__add_function(struct walk *w, Dwarf_Die *fn);
/* Does some DWARF function describe the code at this link-time address? (With line
 * tables only LLVM leaves out the functions that inline nothing: not described.) */
bool debuginfo__covered(struct walk *w, uint64_t addr);
/* A Rust function symbol (demangled) that no compile unit covers: its crate has code. */
int debuginfo__count_symbol(struct walk *w, const char *demangled);
/* Is there an async runtime's crate whose DWARF has no types (or none at all)? Its
 * task types are then found by its symbols (runtimes__link_symbols). */
bool debuginfo__runtime_without_types(const struct walk *w);
/* After the walk and the symbol pass: the program's own crates, their level, the note. */
int debuginfo__finish(struct walk *w);
void debuginfo__free(struct walk *w);

#endif
