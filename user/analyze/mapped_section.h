/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Give back the pages of a memory-mapped ELF section we are done reading. libdw
 * reads DWARF straight from libelf's read-only file mapping, and every page the
 * walk touches stays resident until unmapped: on a large binary that is all of
 * .debug_info and .debug_str, more than the walk's own memory. Dropping a page of
 * a private, unmodified file mapping is free (the next read refaults it from the
 * page cache), so the walk releases each compile unit's range once it is done.
 */
#ifndef ASYNCBPF_MAPPED_SECTION_H
#define ASYNCBPF_MAPPED_SECTION_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mapped_section {
	const uint8_t *base;
	size_t size;
	bool releasable; /* file-backed mapping, raw bytes: safe to drop pages */
};

/* Find section `name` of elf; releasable only when its bytes live in a file mapping
 * (never for decompressed or read() copies, where dropping pages would lose data). */
void mapped_section__init(struct mapped_section *s, Elf *elf, const char *name);
/* Drop the whole pages inside [from, to) (offsets into the section). */
void mapped_section__release(const struct mapped_section *s, uint64_t from, uint64_t to);

#endif
