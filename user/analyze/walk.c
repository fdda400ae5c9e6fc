// SPDX-License-Identifier: GPL-2.0
/*
 * The analyzer's shared walk state and the DWARF helpers every pass uses: type
 * paths across compile units, futures by path, DIE attributes. Below the DWARF walk
 * (analyzer.c) and the passes after it (analyzer_post.c, awaits.c), which include
 * only this, so the analyzer's files depend on each other one way.
 */
#include "analyze/walk.h"

#include <dwarf.h>
#include <errno.h>
#include <string.h>

static const char *const env_prefixes[] = {"{async_fn_env#", "{async_block_env#",
					   "{async_closure_env#"};

const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
}

const char *die_linkage_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!s)
		s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	return s;
}

/* Where a function or inlined copy starts: DW_AT_entry_pc, DW_AT_low_pc, or the
 * first of its DW_AT_ranges; false (or 0) when it has no code in the binary. */
bool die_code_start(Dwarf_Die *die, Dwarf_Addr *pc)
{
	Dwarf_Addr base, start, end;

	if (dwarf_entrypc(die, pc) == 0 && *pc)
		return true;
	if (dwarf_lowpc(die, pc) == 0 && *pc)
		return true;
	if (dwarf_ranges(die, 0, &base, &start, &end) > 0 && start) {
		*pc = start;
		return true;
	}
	return false;
}

bool starts_with(const char *s, const char *prefix)
{
	return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Kind of a future from its path: only the last top-level segment counts, so that
 * "core::pin::Pin<Box<demo::x::{async_fn_env#0}>>" is a hand-written future. */
enum future_kind future_kind__from_name(const char *path, bool *is_env)
{
	static const enum future_kind kinds[] = {FUTURE_ASYNC_FN, FUTURE_ASYNC_BLOCK,
						 FUTURE_ASYNC_CLOSURE};
	const char *last = path ? rust_path__last_segment(path) : NULL;

	for (size_t i = 0; i < 3 && last; i++)
		if (starts_with(last, env_prefixes[i])) {
			if (is_env)
				*is_env = true;
			return kinds[i];
		}
	if (is_env)
		*is_env = false;
	return FUTURE_HANDWRITTEN;
}

bool die_type(Dwarf_Die *die, Dwarf_Die *type)
{
	Dwarf_Attribute a;
	return dwarf_formref_die(dwarf_attr_integrate(die, DW_AT_type, &a), type) != NULL;
}

uint64_t die_bytesize(Dwarf_Die *die)
{
	int n = dwarf_bytesize(die);
	return n > 0 ? (uint64_t)n : 0;
}

bool member_offset(Dwarf_Die *member, uint64_t *off)
{
	Dwarf_Attribute a;
	Dwarf_Word w;

	if (!dwarf_attr(member, DW_AT_data_member_location, &a))
		return false;
	if (dwarf_formudata(&a, &w) == 0) {
		*off = w;
		return true;
	}
	return false;
}

const char *walk__symbol_at(struct walk *w, uint64_t addr)
{
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name =
	    dwfl_module_addrinfo(w->t->module, addr + w->t->bias, &off, &sym, NULL, NULL, NULL);

	return name && off == 0 && GELF_ST_TYPE(sym.st_info) == STT_FUNC ? name : NULL;
}

/*
 * A variant's DW_AT_discr_value. A 16-byte discriminant (Poll<u128>: a u128 tag)
 * comes as a block: little-endian, accepted when it fits in 64 bits (the tag is
 * then read as its low 8 bytes, see analyzer__resolve_pending).
 */
bool die_discr_value(Dwarf_Die *variant, Dwarf_Word *v)
{
	Dwarf_Attribute a;
	Dwarf_Block b;

	if (!dwarf_attr(variant, DW_AT_discr_value, &a))
		return false;
	if (dwarf_formudata(&a, v) == 0)
		return true;
	if (dwarf_formblock(&a, &b) != 0 || b.length == 0 || b.length > 16)
		return false;
	*v = 0;
	for (size_t i = 0; i < b.length; i++) {
		if (i >= 8 && b.data[i])
			return false;
		if (i < 8)
			*v |= (Dwarf_Word)b.data[i] << (8 * i);
	}
	return true;
}

int32_t walk__get_future(struct walk *w, const char *path, enum future_kind kind,
			 uint64_t die_offset, uint64_t size)
{
	uint64_t idx;
	const char *ipath = strpool__intern(&w->m->strings, path);

	if (!ipath)
		return -ENOMEM;
	if (u64_map__get(&w->future_by_path, (uintptr_t)ipath, &idx))
		return (int32_t)idx;
	struct future *f = model__add_future(w->m);
	if (!f)
		return -ENOMEM;
	f->path = ipath;
	f->kind = kind;
	f->die_offset = die_offset;
	f->size = size;
	idx = w->m->nr_futures - 1;
	if (u64_map__set(&w->future_by_path, (uintptr_t)ipath, idx))
		return -ENOMEM;
	return (int32_t)idx;
}

/*
 * Index the type paths of another compile unit, once: a type referenced across
 * units (DW_FORM_ref_addr, common in release builds) has its namespaces only in
 * its own unit, and libdw has no parent links. One walk per unit, not one per type
 * (a per-type walk dominated the run time on large binaries). Bounded like the main
 * walk; types are recorded at namespace level, as walk_cu does.
 */
static int index_foreign_cu(struct walk *w, Dwarf_Die *cudie)
{
	Dwarf_Die stack[MAX_DIE_DEPTH];
	size_t plen[MAX_DIE_DEPTH];
	char path[MAX_PATH_LEN];
	int depth = 0;

	if (dwarf_child(cudie, &stack[0]) != 0)
		return 0;
	plen[0] = 0;
	for (;;) {
		Dwarf_Die *die = &stack[depth];
		int tag = dwarf_tag(die);
		const char *n = dwarf_diename(die);
		size_t nl = n ? strlen(n) : 0;
		size_t at = plen[depth] ? plen[depth] + 2 : 0;
		bool fits = n && at + nl + 1 < sizeof(path);

		if (fits) {
			if (plen[depth])
				memcpy(path + plen[depth], "::", 2);
			memcpy(path + at, n, nl + 1);
		}
		if (fits &&
		    (tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
		     tag == DW_TAG_enumeration_type) &&
		    !dwarf_hasattr(die, DW_AT_declaration)) {
			const char *p = strpool__intern(&w->foreign_pool, path);
			if (!p ||
			    u64_map__set(&w->foreign_paths, dwarf_dieoffset(die), (uintptr_t)p))
				return -ENOMEM;
		}
		if (fits && tag == DW_TAG_namespace && depth + 1 < MAX_DIE_DEPTH &&
		    dwarf_child(die, &stack[depth + 1]) == 0) {
			plen[++depth] = at + nl;
			continue;
		}
		for (;;) {
			if (dwarf_siblingof(&stack[depth], &stack[depth]) == 0)
				break;
			if (depth == 0)
				return 0;
			depth--;
		}
	}
}

const char *walk__type_path(struct walk *w, uint64_t off)
{
	uint64_t v;
	Dwarf_Die die, cudie;

	if (u64_map__get(&w->type_paths, off, &v))
		return (const char *)(uintptr_t)v;
	if (u64_map__get(&w->foreign_paths, off, &v))
		return (const char *)(uintptr_t)v;
	if (!dwarf_offdie(w->dw, off, &die) || !dwarf_diecu(&die, &cudie, NULL, NULL))
		return NULL;
	uint64_t cu = dwarf_dieoffset(&cudie);
	if ((!w->walked && cu == dwarf_dieoffset(&w->cu)) ||
	    u64_map__get(&w->indexed_cus, cu, NULL))
		return NULL; /* already indexed: not a named namespace-level type */
	if (u64_map__set(&w->indexed_cus, cu, 1) || index_foreign_cu(w, &cudie))
		return NULL;
	return u64_map__get(&w->foreign_paths, off, &v) ? (const char *)(uintptr_t)v : NULL;
}
