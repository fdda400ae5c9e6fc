// SPDX-License-Identifier: GPL-2.0
/*
 * The DWARF walk's functions (subprograms.h): which DW_TAG_subprogram is a future's
 * poll (`<F as Future>::poll`, or a coroutine body `{async_fn#N}`), its `self` type
 * and the parameter to read `self`'s location from, and every inlined copy of a poll
 * fn (DW_TAG_inlined_subroutine: where it was inlined, by whom).
 */
#include "analyze/subprograms.h"

#include <dwarf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/crate.h"
#include "analyze/debuginfo.h"
#include "analyze/demangle.h"
#include "analyze/disasm.h"
#include "analyze/runtimes.h"
#include "analyze/task_exits.h"
#include "lib/log.h"

static const char *const coroutine_prefixes[] = {"{async_fn#", "{async_block#", "{async_closure#"};

static bool is_poll_name(const char *name, const char *demangled)
{
	for (size_t i = 0; i < 3; i++)
		if (starts_with(name, coroutine_prefixes[i]))
			return true;
	if (!demangled || demangled[0] != '<')
		return false;
	size_t n = strlen(demangled), sn = strlen(FUTURE_POLL_SUFFIX);
	return n > sn && strcmp(demangled + n - sn, FUTURE_POLL_SUFFIX) == 0;
}

/*
 * The future a poll fn polls: its first parameter is Pin<&mut T>; the pointer
 * type's name spells T's full path ("&mut demo::leaf::{async_fn_env#0}"). Release
 * builds sometimes only declare the Pin struct in this unit: then its own name
 * ("Pin<&mut T>") is all there is, and *has_target is false.
 */
static bool poll_self_type(Dwarf_Die *fn, Dwarf_Die *param, char *path, size_t len,
			   Dwarf_Die *target, bool *has_target)
{
	Dwarf_Die child, pin, member, ptr;

	*has_target = false;
	if (dwarf_child(fn, &child) != 0)
		return false;
	do {
		if (dwarf_tag(&child) == DW_TAG_formal_parameter)
			break;
	} while (dwarf_siblingof(&child, &child) == 0);
	if (dwarf_tag(&child) != DW_TAG_formal_parameter)
		return false;
	*param = child;
	if (!die_type(&child, &pin))
		return false;
	if (dwarf_hasattr(&pin, DW_AT_declaration)) {
		const char *n = dwarf_diename(&pin);
		size_t nl = n ? strlen(n) : 0;
		if (!starts_with(n, "Pin<&mut ") || n[nl - 1] != '>' || nl - 10 >= len)
			return false;
		snprintf(path, len, "%.*s", (int)(nl - 10), n + 9);
		return true;
	}
	if (dwarf_child(&pin, &member) != 0)
		return false;
	while (dwarf_tag(&member) != DW_TAG_member)
		if (dwarf_siblingof(&member, &member) != 0)
			return false;
	if (!die_type(&member, &ptr))
		return false;
	int tag = dwarf_tag(&ptr);
	if (tag != DW_TAG_pointer_type && tag != DW_TAG_reference_type)
		return false;
	const char *n = dwarf_diename(&ptr);
	if (!n)
		return false;
	if (starts_with(n, "&mut "))
		n += 5;
	else if (starts_with(n, "&"))
		n += 1;
	snprintf(path, len, "%s", n);
	*has_target = die_type(&ptr, target);
	return true;
}

/*
 * The future a poll fn polls, from its name, when DWARF has no `self` parameter to
 * read (limited DWARF and line tables have no types): `x::f::{async_fn#0}` (the
 * DWARF name, on the path its symbol spells) polls `x::f::{async_fn_env#0}`, and
 * `<T as core::future::future::Future>::poll` polls T. Returns 1 with the path; 0
 * when the name says neither (an inlined copy with line tables only has no path:
 * `{async_fn#0}`); -1 for a blanket impl (`<&mut F as ..>::poll`: no one future).
 */
static int future_from_name(const char *dwarf_name, const char *demangled, char *path, size_t len)
{
	static const char *const envs[] = {"{async_fn_env#", "{async_block_env#",
					   "{async_closure_env#"};
	char crate[256];
	size_t n, sl = strlen(FUTURE_POLL_SUFFIX);

	if (!demangled)
		return 0;
	n = strlen(demangled);
	if (demangled[0] == '<' && n > sl && strcmp(demangled + n - sl, FUTURE_POLL_SUFFIX) == 0) {
		snprintf(path, len, "%.*s", (int)(n - sl - 1), demangled + 1);
		rust_path__crate_strict(path, crate, sizeof(crate));
		return crate[0] ? 1 : -1;
	}
	for (size_t i = 0; i < 3; i++) {
		const char *last = rust_path__last_segment(demangled);
		if (!starts_with(dwarf_name, coroutine_prefixes[i]) || !last || last == demangled)
			continue;
		/* the symbol's last segment is `{{closure}}` (legacy) or `{closure#N}` (v0):
		 * the DWARF name says which coroutine, with its generic arguments */
		snprintf(path, len, "%.*s%s%s", (int)(last - demangled), demangled, envs[i],
			 dwarf_name + strlen(coroutine_prefixes[i]));
		return 1;
	}
	return 0;
}

static int add_pending(struct walk *w, uint32_t poll, Dwarf_Die *fn, Dwarf_Die *param,
		       bool has_param)
{
	Dwarf_Die rt;

	if (!die_type(fn, &rt))
		return 0;
	if (w->nr_pending == w->cap_pending) {
		uint32_t cap = w->cap_pending ? w->cap_pending * 2 : 64;
		struct pending_poll *n = realloc(w->pending, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		w->pending = n;
		w->cap_pending = cap;
	}
	struct pending_poll *p = &w->pending[w->nr_pending++];
	p->poll = poll;
	p->return_type = dwarf_dieoffset(&rt);
	p->has_param = has_param;
	if (has_param)
		p->param = *param;
	/* debug builds: self lives in a slot at frame base + N; the frame base is rsp */
	p->frame_reg = -1;
	Dwarf_Attribute fb;
	Dwarf_Op *ops;
	size_t nops;
	if (dwarf_attr(fn, DW_AT_frame_base, &fb) && dwarf_getlocation(&fb, &ops, &nops) == 0 &&
	    nops == 1 && (ops[0].atom == DW_OP_reg7 || ops[0].atom == DW_OP_reg6))
		p->frame_reg = (int8_t)(ops[0].atom - DW_OP_reg0);
	return 0;
}

/*
 * Classify a subprogram DIE (concrete or abstract) as a poll fn and return its
 * index, creating it on first sight; -1 when it is not a poll, -ENOMEM.
 */
static int64_t poll_of(struct walk *w, Dwarf_Die *fn, bool concrete, uint64_t lowpc, uint64_t size)
{
	const char *name = die_name(fn);
	uint64_t idx;
	bool coroutine = false;

	for (size_t i = 0; i < 3; i++)
		if (starts_with(name, coroutine_prefixes[i]))
			coroutine = true;
	/* demangling is the expensive part: only for names that can be polls
	 * ("poll", or "poll<()>" in a generic impl) */
	if (!coroutine && (!name || strncmp(name, "poll", 4) != 0 || (name[4] && name[4] != '<')))
		return -1;
	const char *linkage = die_linkage_name(fn);
	/* line tables only: no linkage name in DWARF, but the symbol at its address */
	if (!linkage && concrete)
		linkage = walk__symbol_at(w, lowpc);
	const char *demangled = linkage ? symbol__demangle(&w->m->strings, linkage) : NULL;
	if (!is_poll_name(name, demangled))
		return -1;
	if (concrete && u64_map__get(&w->poll_by_addr, lowpc, &idx))
		return (int64_t)idx;

	const char *key = linkage
			      ? strpool__intern(&w->m->strings, linkage)
			      : strpool__printf(&w->m->strings, "%s@%" PRIx64, name ? name : "?",
						(uint64_t)dwarf_dieoffset(fn));
	if (!key)
		return -ENOMEM;
	bool have = u64_map__get(&w->poll_by_key, (uintptr_t)key, &idx);
	if (have && (!concrete || w->m->polls[idx].addr == 0)) {
		/* fill an inlined-only entry with its out-of-line copy */
		if (concrete) {
			struct poll_fn *p = &w->m->polls[idx];
			p->addr = lowpc;
			p->size = size;
			p->inlined_only = false;
			if (u64_map__set(&w->poll_by_addr, lowpc, idx))
				return -ENOMEM;
			Dwarf_Die param, target;
			char path[MAX_PATH_LEN];
			bool has_target;
			bool has_param =
			    poll_self_type(fn, &param, path, sizeof(path), &target, &has_target);
			if (add_pending(w, (uint32_t)idx, fn, &param, has_param))
				return -ENOMEM;
		}
		return (int64_t)idx;
	}

	struct poll_fn *p = model__add_poll(w->m);
	if (!p)
		return -ENOMEM;
	idx = w->m->nr_polls - 1;
	p->linkage_name = linkage ? key : NULL;
	p->name = demangled ? demangled : strpool__intern(&w->m->strings, name);
	p->file = strpool__intern(&w->m->strings, dwarf_decl_file(fn));
	int line = 0;
	dwarf_decl_line(fn, &line);
	p->line = line > 0 ? (uint32_t)line : 0;
	Dwarf_Line *first;
	if (!p->file && concrete && (first = dwarf_getsrc_die(&w->cu, lowpc)) != NULL) {
		/* line tables only: no declaration, the line of its first instruction */
		p->file = strpool__intern(&w->m->strings, dwarf_linesrc(first, NULL, NULL));
		line = 0;
		dwarf_lineno(first, &line);
		p->line = line > 0 ? (uint32_t)line : 0;
	}
	p->inlined_only = !concrete;
	p->self_arg_reg = DWARF_REG_RDI;
	if (concrete) {
		p->addr = lowpc;
		p->size = size;
		if (u64_map__set(&w->poll_by_addr, lowpc, idx))
			return -ENOMEM;
	}
	if (!have && u64_map__set(&w->poll_by_key, (uintptr_t)key, idx))
		return -ENOMEM;

	Dwarf_Die param, target;
	char path[MAX_PATH_LEN];
	bool has_target;
	bool has_param = poll_self_type(fn, &param, path, sizeof(path), &target, &has_target);
	int named = has_param ? 1 : future_from_name(name, demangled, path, sizeof(path));
	if (named > 0) {
		bool is_env;
		enum future_kind kind = future_kind__from_name(path, &is_env);
		int32_t f = walk__get_future(w, path, kind,
					     has_param && has_target ? dwarf_dieoffset(&target) : 0,
					     has_param && has_target ? die_bytesize(&target) : 0);
		if (f < 0)
			return -ENOMEM;
		w->m->polls[idx].future = f;
	} else if (named == 0) {
		w->nr_unreadable_self++; /* said once, by level (debuginfo.c) */
	}
	if (concrete && add_pending(w, (uint32_t)idx, fn, &param, has_param))
		return -ENOMEM;
	return (int64_t)idx;
}

int analyzer__on_subprogram(struct walk *w, Dwarf_Die *die, const char *path, size_t path_len)
{
	Dwarf_Addr lowpc, highpc;

	if (dwarf_hasattr(die, DW_AT_declaration))
		return 0;
	/* low_pc 0: the linker dropped the function (--gc-sections) but its DWARF stayed */
	bool concrete = dwarf_lowpc(die, &lowpc) == 0 && dwarf_highpc(die, &highpc) == 0 &&
			highpc > lowpc && lowpc != 0;
	if (!concrete && !dwarf_hasattr(die, DW_AT_inline)) {
		/* hot/cold split functions have DW_AT_ranges only: take the entry range */
		Dwarf_Addr base, start, end;
		ptrdiff_t o = dwarf_ranges(die, 0, &base, &start, &end);
		Dwarf_Addr entry;
		if (o > 0 && dwarf_entrypc(die, &entry) == 0) {
			for (; o > 0; o = dwarf_ranges(die, o, &base, &start, &end))
				if (entry >= start && entry < end && entry != 0) {
					lowpc = entry;
					highpc = end;
					concrete = true;
					break;
				}
		}
	}
	const char *name = die_name(die);
	int e;
	if (concrete && (e = debuginfo__add_function(w, die)))
		return e;
	if (concrete && ((e = runtimes__on_function(w, die, lowpc, highpc - lowpc)) ||
			 (e = task_exits__on_function(w, die, lowpc, highpc - lowpc))))
		return e;
	if (concrete && name && starts_with(name, "drop_in_place<") && path_len == 9 &&
	    strncmp(path, "core::ptr", 9) == 0) {
		const char *inner = name + strlen("drop_in_place<");
		const char *close = strrchr(inner, '>');
		if (close && close > inner) {
			const char *tp =
			    strpool__intern_len(&w->m->strings, inner, (size_t)(close - inner));
			uint64_t dummy;
			if (!tp)
				return -ENOMEM;
			if (!u64_map__get(&w->drop_by_path, (uintptr_t)tp, &dummy)) {
				if (w->nr_drops == w->cap_drops) {
					uint32_t cap = w->cap_drops ? w->cap_drops * 2 : 256;
					struct drop_rec *n = realloc(w->drops, cap * sizeof(*n));
					if (!n)
						return -ENOMEM;
					w->drops = n;
					w->cap_drops = cap;
				}
				w->drops[w->nr_drops] = (struct drop_rec){
				    .type_path = tp,
				    .linkage_name =
					strpool__intern(&w->m->strings, die_linkage_name(die)),
				    .addr = lowpc,
				    .size = highpc - lowpc,
				};
				if (u64_map__set(&w->drop_by_path, (uintptr_t)tp, w->nr_drops++))
					return -ENOMEM;
			}
		}
		return 0;
	}
	if (!concrete && !dwarf_hasattr(die, DW_AT_inline))
		return 0;
	int64_t r = poll_of(w, die, concrete, concrete ? lowpc : 0, concrete ? highpc - lowpc : 0);
	if (r < -1)
		return (int)r;
	if (!concrete) {
		uint64_t v = r >= 0 ? (uint64_t)r + 1 : 0;
		if (u64_map__set(&w->origin_class, dwarf_dieoffset(die), v))
			return -ENOMEM;
	}
	return 0;
}

static const char *call_file(struct walk *w, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Word idx;
	Dwarf_Files *files;
	size_t nfiles;

	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &a), &idx) != 0)
		return NULL;
	if (dwarf_getsrcfiles(&w->cu, &files, &nfiles) != 0 || idx >= nfiles)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static const char *caller_name(struct walk *w, Dwarf_Off caller)
{
	Dwarf_Die fn;

	Dwarf_Addr pc;

	if (!caller || !dwarf_offdie(w->dw, caller, &fn))
		return NULL;
	const char *ln = die_linkage_name(&fn);
	if (!ln && die_code_start(&fn, &pc)) /* line tables only: the symbol names it */
		ln = walk__symbol_at(w, pc);
	return ln ? symbol__demangle(&w->m->strings, ln)
		  : strpool__intern(&w->m->strings, die_name(&fn));
}

int analyzer__on_inlined(struct walk *w, Dwarf_Die *die, Dwarf_Off caller)
{
	Dwarf_Attribute a;
	Dwarf_Die origin;
	uint64_t v;

	if (!dwarf_formref_die(dwarf_attr(die, DW_AT_abstract_origin, &a), &origin))
		return 0;
	uint64_t off = dwarf_dieoffset(&origin);
	if (!u64_map__get(&w->origin_class, off, &v)) {
		int64_t r = poll_of(w, &origin, false, 0, 0);
		if (r < -1)
			return (int)r;
		v = r >= 0 ? (uint64_t)r + 1 : 0;
		if (u64_map__set(&w->origin_class, off, v))
			return -ENOMEM;
	}
	if (!v)
		return task_exits__on_inlined(w, die, &origin);
	struct poll_fn *p = &w->m->polls[v - 1];
	uint32_t max = w->o->max_inline_sites ? w->o->max_inline_sites : 64;
	Dwarf_Addr entry = 0;
	if (!die_code_start(die, &entry))
		return 0; /* no code in the binary */
	p->nr_inline_sites_total++;
	if (p->nr_inline_sites >= max)
		return 0;
	if ((p->nr_inline_sites & (p->nr_inline_sites - 1)) == 0) { /* 0,1,2,4,...: grow */
		uint32_t cap = p->nr_inline_sites ? p->nr_inline_sites * 2 : 1;
		struct inline_site *n = realloc(p->inline_sites, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		p->inline_sites = n;
	}
	struct inline_site *s = &p->inline_sites[p->nr_inline_sites++];
	Dwarf_Word line = 0;
	dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &line);
	s->addr = entry;
	s->caller = caller_name(w, caller);
	s->file = strpool__intern(&w->m->strings, call_file(w, die));
	s->line = (uint32_t)line;
	return 0;
}
