// SPDX-License-Identifier: GPL-2.0
/*
 * The DWARF walk. One pass over every compile unit with an explicit stack (no
 * recursion, bounded depth), keeping only what the model needs: future types
 * ({async_fn_env#N}, {async_block_env#N}, {async_closure_env#N} and types with a
 * Future::poll), poll functions (out of line and inlined), drop_in_place symbols.
 * Type paths are kept per CU only (Rust type references are CU-local).
 */
#include "analyze/analyzer.h"

#include <dwarf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analyze/analyzer_post.h"
#include "analyze/subprograms.h"
#include "analyze/awaits.h"
#include "analyze/guards.h"
#include "analyze/debuginfo.h"
#include "analyze/walk.h"
#include "analyze/demangle.h"
#include "analyze/disasm.h"
#include "lib/log.h"
#include "analyze/mapped_section.h"
#include "analyze/crate.h"
#include "analyze/runtimes.h"
#include "analyze/tail_calls.h"
#include "analyze/caller_exits.h"
#include "analyze/task_exits.h"
#include "analyze/trees.h"

static const char *const env_prefixes[] = {"{async_fn_env#", "{async_block_env#",
					   "{async_closure_env#"};

static int add_await(struct walk *w, int32_t future, uint32_t k, const char *file, uint32_t line,
		     Dwarf_Die *awaitee)
{
	if (w->nr_awaits == w->cap_awaits) {
		uint32_t cap = w->cap_awaits ? w->cap_awaits * 2 : 256;
		struct await_rec *n = realloc(w->awaits, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		w->awaits = n;
		w->cap_awaits = cap;
	}
	struct await_rec *a = &w->awaits[w->nr_awaits++];
	memset(a, 0, sizeof(*a));
	a->future = future;
	a->await_index = k;
	a->file = file;
	a->line = line;
	a->awaitee_offset = dwarf_dieoffset(awaitee);
	return 0;
}

static enum state_kind state_from_name(const char *name, uint32_t *k)
{
	if (!name)
		return STATE_OTHER;
	if (strcmp(name, "Unresumed") == 0)
		return STATE_UNRESUMED;
	if (strcmp(name, "Returned") == 0)
		return STATE_RETURNED;
	if (strcmp(name, "Panicked") == 0)
		return STATE_PANICKED;
	if (strncmp(name, "Suspend", 7) == 0 && name[7] >= '0' && name[7] <= '9') {
		char *end;
		unsigned long v = strtoul(name + 7, &end, 10);
		if (*end == '\0' && v < MAX_STATES) {
			*k = (uint32_t)v;
			return STATE_SUSPEND;
		}
	}
	return STATE_OTHER;
}

/* Find the __awaitee member of a Suspend<k> variant struct: its type and offset in it
 * (FUTURE_NO_OFFSET when DWARF does not say). */
static bool find_awaitee(Dwarf_Die *variant_struct, Dwarf_Die *awaitee_type, uint64_t *offset)
{
	Dwarf_Die child;

	if (dwarf_child(variant_struct, &child) != 0)
		return false;
	do {
		if (dwarf_tag(&child) != DW_TAG_member)
			continue;
		const char *n = dwarf_diename(&child);
		if (n && strcmp(n, "__awaitee") == 0) {
			if (!member_offset(&child, offset))
				*offset = FUTURE_NO_OFFSET;
			return die_type(&child, awaitee_type);
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* Read the variant part of a compiler-generated future: __state and every state. */
static int read_env_states(struct walk *w, int32_t fidx, Dwarf_Die *st)
{
	Dwarf_Die vp, child;
	bool found = false;

	if (dwarf_child(st, &vp) != 0)
		goto none;
	do {
		if (dwarf_tag(&vp) == DW_TAG_variant_part) {
			found = true;
			break;
		}
	} while (dwarf_siblingof(&vp, &vp) == 0);
	if (!found)
		goto none;

	struct future *f = &w->m->futures[fidx];
	Dwarf_Attribute a;
	Dwarf_Die discr, discr_type;
	if (dwarf_formref_die(dwarf_attr(&vp, DW_AT_discr, &a), &discr) &&
	    member_offset(&discr, &f->state_offset) && die_type(&discr, &discr_type)) {
		f->has_state = true;
		f->state_size = (uint32_t)die_bytesize(&discr_type);
	}

	uint32_t cap = 0;
	if (dwarf_child(&vp, &child) != 0)
		goto none;
	do {
		if (dwarf_tag(&child) != DW_TAG_variant)
			continue;
		if (f->nr_states >= MAX_STATES) {
			w->m->nr_limits_hit++;
			break;
		}
		Dwarf_Word discr_value = 0;
		bool has_value =
		    dwarf_formudata(dwarf_attr(&child, DW_AT_discr_value, &a), &discr_value) == 0;
		Dwarf_Die member, vtype;
		if (dwarf_child(&child, &member) != 0)
			continue;
		while (dwarf_tag(&member) != DW_TAG_member)
			if (dwarf_siblingof(&member, &member) != 0)
				goto next_variant;
		if (!die_type(&member, &vtype))
			continue;

		if (f->nr_states == cap) {
			cap = cap ? cap * 2 : 8;
			struct future_state *n = realloc(f->states, cap * sizeof(*n));
			if (!n)
				return -ENOMEM;
			f->states = n;
		}
		struct future_state *s = &f->states[f->nr_states++];
		memset(s, 0, sizeof(*s));
		s->awaitee_offset = FUTURE_NO_OFFSET;
		s->discr = has_value ? discr_value : UINT64_MAX;
		s->name = strpool__intern(&w->m->strings, dwarf_diename(&vtype));
		s->kind = state_from_name(s->name, &s->suspend_index);
		s->file = strpool__intern(&w->m->strings, dwarf_decl_file(&member));
		int line = 0;
		dwarf_decl_line(&member, &line);
		s->line = line > 0 ? (uint32_t)line : 0;
		if (s->kind == STATE_UNRESUMED) {
			f->file = s->file;
			f->line = s->line;
		}
		Dwarf_Die aw;
		uint64_t in_variant, variant_at;
		if (s->kind == STATE_SUSPEND && find_awaitee(&vtype, &aw, &in_variant)) {
			if (in_variant != FUTURE_NO_OFFSET && member_offset(&member, &variant_at)) {
				s->awaitee_offset = variant_at + in_variant;
				s->awaitee_size = die_bytesize(&aw);
				if (guards__defer(w, fidx, f->nr_states - 1, &vtype, variant_at))
					return -ENOMEM;
			}
			s->awaitee_type = NULL; /* filled when the tree is built */
			if (add_await(w, fidx, s->suspend_index, s->file, s->line, &aw))
				return -ENOMEM;
		}
	next_variant:;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
none:
	model__warn(w->m, "future %s (DIE 0x%" PRIx64 ") has no variant part: states unknown",
		    w->m->futures[fidx].path, w->m->futures[fidx].die_offset);
	return 0;
}

static int on_struct(struct walk *w, Dwarf_Die *die, const char *path, size_t path_len)
{
	const char *name = dwarf_diename(die);
	char full[MAX_PATH_LEN];

	if (!name || dwarf_hasattr(die, DW_AT_declaration))
		return 0;
	if (path_len)
		snprintf(full, sizeof(full), "%.*s::%s", (int)path_len, path, name);
	else
		snprintf(full, sizeof(full), "%s", name);
	const char *p = strpool__intern(&w->cu_pool, full);
	if (!p || u64_map__set(&w->type_paths, dwarf_dieoffset(die), (uintptr_t)p))
		return -ENOMEM;
	int e = runtimes__on_struct(w, die, path_len ? path : "", name);
	if (e)
		return e;

	bool is_env = false;
	for (size_t i = 0; i < 3; i++)
		if (starts_with(name, env_prefixes[i]))
			is_env = true;
	if (!is_env)
		return 0;
	enum future_kind kind = future_kind__from_name(name, NULL);
	int32_t fidx = walk__get_future(w, full, kind, dwarf_dieoffset(die), die_bytesize(die));
	if (fidx < 0)
		return fidx;
	if (u64_map__get(&w->filled_futures, (uint64_t)fidx, NULL))
		return 0; /* same type again in another CU */
	if (u64_map__set(&w->filled_futures, (uint64_t)fidx, 1))
		return -ENOMEM;
	struct future *f = &w->m->futures[fidx];
	f->kind = kind;
	f->die_offset = dwarf_dieoffset(die);
	f->size = die_bytesize(die);
	return read_env_states(w, fidx, die);
}

/*
 * `<T as core::future::future::Future>::{vtable}`: a dyn Future vtable rustc
 * describes, at its address (DW_OP_addr). Kept for the passes that read it.
 */
static int on_variable(struct walk *w, Dwarf_Die *die)
{
	static const char prefix[] = "<", suffix[] = " as core::future::future::Future>::{vtable}";
	const char *n = dwarf_diename(die);
	size_t nl = n ? strlen(n) : 0, sl = sizeof(suffix) - 1;
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t nops;

	if (nl <= sl + 1 || n[0] != prefix[0] || strcmp(n + nl - sl, suffix) != 0)
		return 0;
	if (!dwarf_attr(die, DW_AT_location, &a) || dwarf_getlocation(&a, &ops, &nops) != 0 ||
	    nops != 1 || ops[0].atom != DW_OP_addr || !ops[0].number)
		return 0;
	struct future_vtable *v = model__add_vtable(w->m);
	if (!v)
		return -ENOMEM;
	v->type = strpool__printf(&w->m->strings, "%.*s", (int)(nl - sl - 1), n + 1);
	v->addr = ops[0].number;
	return v->type ? 0 : -ENOMEM;
}

struct frame {
	Dwarf_Die die;
	size_t path_len;  /* namespace path length at this level */
	Dwarf_Off caller; /* enclosing concrete function's DIE (for inline sites), 0 if none */
};

static void show_progress(struct walk *w, uint64_t done, uint64_t total, struct timespec *last)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec - last->tv_sec < 1 && !(done >= total))
		return;
	*last = now;
	fprintf(stderr, "\rasyncbpf: analyzing %s: %3u%% of .debug_info, %u futures", w->t->display,
		(unsigned)(total ? done * 100 / total : 100), w->m->nr_futures);
	fflush(stderr);
}

static int walk_cu(struct walk *w, Dwarf_Die *cudie)
{
	static __thread struct frame stack[MAX_DIE_DEPTH];
	char path[MAX_PATH_LEN];
	int depth = 0, err;

	path[0] = '\0';
	if (dwarf_child(cudie, &stack[0].die) != 0)
		return 0;
	stack[0].path_len = 0;
	stack[0].caller = 0;
	for (;;) {
		Dwarf_Die *die = &stack[depth].die;
		size_t plen = stack[depth].path_len;
		Dwarf_Off caller = stack[depth].caller;
		bool descend = false;
		size_t child_plen = plen;

		w->m->nr_dies++;
		switch (dwarf_tag(die)) {
		case DW_TAG_namespace: {
			const char *n = dwarf_diename(die);
			size_t nl = n ? strlen(n) : 0;
			w->cu_namespaces++;
			if (depth == 0 && n && !w->cu_first_namespace)
				w->cu_first_namespace = n;
			if (n && plen + nl + 3 < sizeof(path)) {
				if (plen) {
					memcpy(path + plen, "::", 2);
					memcpy(path + plen + 2, n, nl + 1);
					child_plen = plen + 2 + nl;
				} else {
					memcpy(path, n, nl + 1);
					child_plen = nl;
				}
				descend = true;
			} else if (n) {
				w->m->nr_limits_hit++;
			}
			break;
		}
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_enumeration_type:
			w->cu_types++;
			path[plen] = '\0';
			if ((err = on_struct(w, die, path, plen)))
				return err;
			break;
		case DW_TAG_base_type: w->cu_types++; break;
		case DW_TAG_subprogram: {
			w->cu_subprograms++;
			w->cu_linkage_names += dwarf_hasattr(die, DW_AT_linkage_name);
			path[plen] = '\0';
			if ((err = analyzer__on_subprogram(w, die, path, plen)))
				return err;
			/* inline sites only in code that made it into the binary: a function
			 * the linker dropped keeps its DWARF with addresses near 0 */
			Dwarf_Addr pc;
			if (!dwarf_hasattr(die, DW_AT_declaration) && die_code_start(die, &pc)) {
				caller = dwarf_dieoffset(die);
				descend = true;
			}
			break;
		}
		case DW_TAG_variable:
			if (!caller && (err = on_variable(w, die)))
				return err;
			break;
		case DW_TAG_lexical_block: descend = true; break;
		case DW_TAG_inlined_subroutine:
			if ((err = analyzer__on_inlined(w, die, caller)))
				return err;
			descend = true;
			break;
		default: break;
		}

		if (descend && dwarf_haschildren(die)) {
			if (depth + 1 >= MAX_DIE_DEPTH) {
				w->m->nr_limits_hit++;
			} else if (dwarf_child(die, &stack[depth + 1].die) == 0) {
				depth++;
				stack[depth].path_len = child_plen;
				stack[depth].caller = caller;
				continue;
			}
		}
		for (;;) {
			int r = dwarf_siblingof(&stack[depth].die, &stack[depth].die);
			if (r == 0)
				break;
			if (r < 0)
				return -EINVAL;
			if (depth == 0)
				return 0;
			depth--;
		}
	}
}

static int walk_dwarf(struct walk *w)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	struct timespec last = {0};
	struct mapped_section info, str, line;
	int err;

	mapped_section__init(&info, dwarf_getelf(w->dw), ".debug_info");
	mapped_section__init(&str, dwarf_getelf(w->dw), ".debug_str");
	mapped_section__init(&line, dwarf_getelf(w->dw), ".debug_line");
	while (dwarf_nextcu(w->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cudie;
		w->m->nr_cus++;
		if (!dwarf_offdie(w->dw, off + hsize, &cudie)) {
			w->m->nr_cu_errors++;
			model__warn(w->m, "compile unit at 0x%" PRIx64 ": %s", (uint64_t)off,
				    dwarf_errmsg(-1));
			off = next;
			continue;
		}
		w->cu = cudie;
		w->first_cu_await = w->nr_awaits;
		err = walk_cu(w, &cudie);
		if (err == -ENOMEM)
			return err;
		if (err) {
			w->m->nr_cu_errors++;
			model__warn(w->m, "compile unit %s at 0x%" PRIx64 ": corrupt DIE tree (%s)",
				    dwarf_diename(&cudie) ? dwarf_diename(&cudie) : "?",
				    (uint64_t)off, dwarf_errmsg(-1));
		}
		analyzer__resolve_pending(w);
		if ((err = awaits__build_cu_trees(w)) || (err = runtimes__end_cu(w)) ||
		    (err = debuginfo__end_cu(w, &cudie)) || (err = trees__end_cu(w)) ||
		    (err = guards__end_cu(w)))
			return err;
		u64_map__clear(&w->type_paths);
		strpool__free(&w->cu_pool);
		strpool__init(&w->cu_pool);
		/* done with this unit's bytes; names and line tables are shared
		 * across units, so those go back every few units, not per unit */
		mapped_section__release(&info, off, next);
		if (w->m->nr_cus % 4 == 0) {
			mapped_section__release(&str, 0, str.size);
			mapped_section__release(&line, 0, line.size);
		}
		if (w->o->progress)
			show_progress(w, next, w->m->debug_info_size, &last);
		if (next <= off)
			break;
		off = next;
	}
	if (w->o->progress)
		fprintf(stderr, "\n");
	return 0;
}

int analyzer__analyze(struct target *t, const struct analyzer_opts *o, struct model *m, char *err,
		      size_t errlen)
{
	struct analyzer_opts defaults = {0};
	struct walk w = {.t = t, .m = m, .o = o ? o : &defaults, .dw = t->dwarf};
	int r = 0;

	m->path = strpool__intern(&m->strings, t->display);
	m->elf_path = strpool__intern(&m->strings, t->path);
	m->debuginfo_path = strpool__intern(&m->strings, t->debuginfo_path);
	m->build_id = t->build_id[0] ? strpool__intern(&m->strings, t->build_id) : NULL;
	m->pie = t->pie;
	m->has_dwarf = t->dwarf != NULL;
	m->debug_info_size = t->debug_info_size;
	strpool__init(&w.cu_pool);
	strpool__init(&w.foreign_pool);

	if (t->dwarf) {
		r = walk_dwarf(&w);
		w.walked = true;
	} else {
		char why[1024];
		target__explain_missing_dwarf(t, why, sizeof(why));
		model__warn(m, "no DWARF debuginfo for %s: %s", t->display, why);
		m->symbols_only = true;
	}
	/* code no DWARF function describes (all of it without DWARF; the program's own
	 * with `debug = false`, when the file keeps only std's DWARF; with line tables
	 * only, the functions that inline nothing): by its symbols */
	if (!r)
		r = analyzer__walk_symbols(&w);
	if (!r && !runtimes__found(&w) && (!t->dwarf || debuginfo__runtime_without_types(&w)))
		r = runtimes__link_symbols(&w);
	if (!r)
		r = awaits__resolve(&w);
	if (!r) {
		/* a poll with neither an out-of-line copy nor an inlined copy in the
		 * binary (only abstract DWARF left behind) has no code: drop it */
		uint32_t kept = 0;
		for (uint32_t i = 0; i < m->nr_polls; i++) {
			struct poll_fn *p = &m->polls[i];
			if (p->addr == 0 && p->nr_inline_sites_total == 0) {
				free(p->inline_sites);
				continue;
			}
			p->inlined_only = p->addr == 0;
			m->polls[kept++] = *p;
		}
		m->nr_polls = kept;
		analyzer__link_drops(&w);
		model__finish(m);
		r = analyzer__link_vtables(&w);
		if (!r)
			r = runtimes__link(&w);
		model__finish(m);
		for (uint32_t i = 0; i < m->nr_futures; i++) {
			struct future *f = &m->futures[i];
			for (uint32_t p = 0; p < m->nr_polls && !f->file; p++)
				if (m->polls[p].future == (int32_t)i) {
					f->file =
					    m->polls[p].file; /* hand-written: where poll is */
					f->line = m->polls[p].line;
				}
		}
		analyzer__classify_crates(m);
		if (!r)
			r = debuginfo__finish(&w);
		if (!r)
			r = trees__resolve(&w);
		if (!r && t->dwarf)
			r = waits__find(&w);
		if (!r)
			r = analyzer__disassemble_polls(&w);
		if (!r)
			r = analyzer__probe_sites(&w);
		if (!r)
			r = tail_calls__find(t, m);
		if (!r && w.o->caller_exits)
			r = caller_exits__find(&w);
		if (!r)
			r = task_exits__find(&w);
	}
	if (r == -ENOMEM)
		snprintf(err, errlen, "out of memory while analyzing %s", t->display);
	else if (r)
		snprintf(err, errlen, "analyzing %s failed: %s", t->display, strerror(-r));

	awaits__free(&w);
	runtimes__free(&w);
	debuginfo__free(&w);
	task_exits__free(&w);
	caller_exits__free(&w);
	trees__free(&w);
	guards__free(&w);
	strpool__free(&w.cu_pool);
	u64_map__free(&w.type_paths);
	u64_map__free(&w.future_by_path);
	u64_map__free(&w.poll_by_addr);
	u64_map__free(&w.poll_by_key);
	u64_map__free(&w.origin_class);
	u64_map__free(&w.drop_by_path);
	u64_map__free(&w.filled_futures);
	u64_map__free(&w.foreign_paths);
	u64_map__free(&w.indexed_cus);
	strpool__free(&w.foreign_pool);
	free(w.pending);
	free(w.drops);
	return r;
}
