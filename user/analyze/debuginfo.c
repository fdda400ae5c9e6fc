// SPDX-License-Identifier: GPL-2.0
/*
 * Debug info levels (debuginfo.h, docs/analyzer.md "Debug info levels").
 *
 * A file can hold DWARF and still none of the program: Rust's standard library
 * ships with its own debuginfo (namespaces and functions, no types), and it is
 * linked into every binary that keeps debuginfo, `debug = false` or not. So the
 * level is read per crate, from what each compile unit holds, and the program's
 * own crates are found by name (the default selection's rule) among the crates
 * that have code: a compile unit, or function symbols no compile unit covers.
 */
#include "analyze/debuginfo.h"

#include <dwarf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/crate.h"

/* Bounds: a hostile file must not make us keep millions of ranges or crates. */
#define MAX_CODE_RANGES (1u << 22)
#define MAX_CRATES	4096

struct code_range {
	uint64_t lo, hi;
};

struct dbg_walk {
	struct u64_map crate_index; /* interned crate name -> index in model.crates */
	struct code_range *ranges;  /* every DWARF function's code, sorted once needed */
	uint32_t nr_ranges, cap_ranges;
	bool sorted;
};

static struct dbg_walk *dbg_of(struct walk *w)
{
	if (!w->dbg) {
		w->dbg = calloc(1, sizeof(*w->dbg));
		if (w->dbg)
			u64_map__init(&w->dbg->crate_index);
	}
	return w->dbg;
}

static struct crate_debuginfo *crate_entry(struct walk *w, const char *name)
{
	struct dbg_walk *d = dbg_of(w);
	const char *key = strpool__intern(&w->m->strings, name);
	uint64_t idx;

	if (!d || !key)
		return NULL;
	if (u64_map__get(&d->crate_index, (uintptr_t)key, &idx))
		return &w->m->crates[idx];
	if (w->m->nr_crates >= MAX_CRATES)
		return &w->m->crates[w->m->nr_crates - 1]; /* counted into the last one */
	struct crate_debuginfo *c = model__add_crate(w->m);
	if (!c || u64_map__set(&d->crate_index, (uintptr_t)key, w->m->nr_crates - 1))
		return NULL;
	c->crate = key;
	c->crate_class = crate__classify(key);
	return c;
}

/*
 * The crate of a crate root source file, as Cargo names crates: `<pkg>/src/main.rs`
 * and `<pkg>/src/lib.rs` are the package's (a registry's `<pkg>-<version>` without
 * the version), `src/bin/<name>.rs` and `examples/<name>.rs` their own; `-` is `_`.
 */
static bool crate_of_root(const char *root, size_t len, char *buf, size_t buflen)
{
	const char *end = root + len, *dir, *at;
	size_t n;

	if (len > 3 && !strncmp(end - 3, ".rs", 3) &&
	    ((at = strstr(root, "/src/bin/")) != NULL ||
	     (at = strstr(root, "/examples/")) != NULL) &&
	    at < end) {
		dir = strrchr(at, '/') + 1; /* the file itself names it */
		n = (size_t)(end - 3 - dir);
	} else if (len >= 11 && (!strncmp(end - 11, "src/main.rs", 11) ||
				 !strncmp(end - 10, "src/lib.rs", 10))) {
		const char *src = !strncmp(end - 11, "src/main.rs", 11) ? end - 11 : end - 10;
		if (src == root) /* "src/main.rs" relative to the package: no name here */
			return false;
		dir = src - 1;
		while (dir > root && dir[-1] != '/')
			dir--;
		n = (size_t)(src - 1 - dir);
		/* a registry's package directory: `tokio-1.24.2` */
		for (size_t i = 1; i + 1 < n; i++)
			if (dir[i] == '-' && dir[i + 1] >= '0' && dir[i + 1] <= '9') {
				n = i;
				break;
			}
	} else {
		return false;
	}
	if (!n || n >= buflen)
		return false;
	for (size_t i = 0; i < n; i++)
		buf[i] = dir[i] == '-' ? '_' : dir[i];
	buf[n] = '\0';
	return true;
}

/*
 * The crate of a compile unit. rustc names a unit `<crate root>/@/<codegen unit>`,
 * the codegen unit `<crate>.<hash>-cgu.<n>` in a non-incremental build (release)
 * and a bare hash in an incremental one (debug): then the crate root's path says it.
 * A unit named otherwise (C, assembly, an older rustc): its first top-level namespace.
 */
static void cu_crate(struct walk *w, Dwarf_Die *cudie, char *buf, size_t len)
{
	const char *name = dwarf_diename(cudie), *at = name ? strstr(name, "/@/") : NULL;
	size_t n = 0;

	buf[0] = '\0';
	if (at) {
		const char *cgu = at + 3;
		while (cgu[n] && cgu[n] != '.' && cgu[n] != '/')
			n++;
		if (cgu[n] == '.' && n && n < len) {
			snprintf(buf, len, "%.*s", (int)n, cgu);
			return;
		}
		if (crate_of_root(name, (size_t)(at - name), buf, len))
			return;
	}
	if (w->cu_first_namespace)
		snprintf(buf, len, "%s", w->cu_first_namespace);
}

/* rustc remaps the toolchain's prebuilt crates to these directories. */
static bool is_toolchain_dir(const char *dir)
{
	return dir && (starts_with(dir, "/rustc/") || starts_with(dir, "/rust/deps/"));
}

static int add_range(struct walk *w, struct dbg_walk *d, uint64_t lo, uint64_t hi)
{
	if (d->nr_ranges >= MAX_CODE_RANGES) {
		w->m->nr_limits_hit++; /* later code is then read by its symbols too */
		return 0;
	}
	if (d->nr_ranges == d->cap_ranges) {
		uint32_t cap = d->cap_ranges ? d->cap_ranges * 2 : 1024;
		struct code_range *n = realloc(d->ranges, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		d->ranges = n;
		d->cap_ranges = cap;
	}
	d->ranges[d->nr_ranges++] = (struct code_range){lo, hi};
	d->sorted = false;
	return 0;
}

int debuginfo__end_cu(struct walk *w, Dwarf_Die *cudie)
{
	struct dbg_walk *d = dbg_of(w);
	char name[256];
	Dwarf_Attribute a;
	enum debuginfo_level level = DEBUGINFO_NONE;

	if (!d)
		return -ENOMEM;
	/* what rustc emits at each `debug` setting: types only at full; namespaces and
	 * linkage names from limited on; bare function names with line tables only */
	if (w->cu_types)
		level = DEBUGINFO_FULL;
	else if (w->cu_namespaces || w->cu_linkage_names)
		level = DEBUGINFO_LIMITED;
	else if (w->cu_subprograms)
		level = DEBUGINFO_LINE_TABLES;
	cu_crate(w, cudie, name, sizeof(name));
	struct crate_debuginfo *c = crate_entry(w, name);
	if (!c)
		return -ENOMEM;
	c->nr_cus++;
	if (level > c->level)
		c->level = level;
	if (is_toolchain_dir(dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &a))) ||
	    is_toolchain_dir(dwarf_diename(cudie)))
		c->toolchain = true;

	w->cu_types = w->cu_namespaces = w->cu_linkage_names = w->cu_subprograms = 0;
	w->cu_first_namespace = NULL;
	return 0;
}

int debuginfo__add_function(struct walk *w, Dwarf_Die *fn)
{
	struct dbg_walk *d = dbg_of(w);
	Dwarf_Addr base, start, end;
	ptrdiff_t o = 0;

	if (!d)
		return -ENOMEM;
	for (uint32_t k = 0; k < 4096 && (o = dwarf_ranges(fn, o, &base, &start, &end)) > 0; k++)
		if (start && end > start && add_range(w, d, start, end))
			return -ENOMEM;
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct code_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

bool debuginfo__covered(struct walk *w, uint64_t addr)
{
	struct dbg_walk *d = w->dbg;
	uint32_t lo = 0, hi;

	if (!d || !d->nr_ranges)
		return false;
	if (!d->sorted) {
		qsort(d->ranges, d->nr_ranges, sizeof(*d->ranges), cmp_range);
		/* make each range's hi the running maximum, so one binary search finds
		 * whether any range starting at or below addr reaches past it */
		for (uint32_t i = 1; i < d->nr_ranges; i++)
			if (d->ranges[i].hi < d->ranges[i - 1].hi)
				d->ranges[i].hi = d->ranges[i - 1].hi;
		d->sorted = true;
	}
	hi = d->nr_ranges;
	while (lo < hi) { /* first range starting above addr */
		uint32_t mid = lo + (hi - lo) / 2;
		if (d->ranges[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && addr < d->ranges[lo - 1].hi;
}

int debuginfo__count_symbol(struct walk *w, const char *demangled)
{
	char crate[256], seg[260];

	rust_path__crate(demangled, crate, sizeof(crate));
	/* a real path names its crate followed by `::`; `<&mut F as ..>::poll` (a
	 * generic parameter, as legacy symbols spell blanket impls) names none */
	snprintf(seg, sizeof(seg), "%s::", crate);
	if (!crate[0] || !strstr(demangled, seg))
		return 0;
	struct crate_debuginfo *c = crate_entry(w, crate);
	if (!c)
		return -ENOMEM;
	c->nr_fns_without_dwarf++;
	return 0;
}

bool debuginfo__runtime_without_types(const struct walk *w)
{
	for (uint32_t i = 0; i < w->m->nr_crates; i++) {
		const struct crate_debuginfo *c = &w->m->crates[i];
		if (c->crate_class == CRATE_RUNTIME &&
		    ((c->nr_cus && c->level < DEBUGINFO_FULL) || c->nr_fns_without_dwarf))
			return true;
	}
	return false;
}

/* "a, b, c" (at most three, then ", ...") of the own crates at this level. */
static const char *crates_at(struct model *m, enum debuginfo_level level)
{
	char buf[512] = "";
	size_t used = 0;
	uint32_t n = 0;

	for (uint32_t i = 0; i < m->nr_crates; i++) {
		const struct crate_debuginfo *c = &m->crates[i];
		if (!c->own || c->level != level)
			continue;
		if (n++ == 3) {
			snprintf(buf + used, sizeof(buf) - used, ", ...");
			break;
		}
		int k =
		    snprintf(buf + used, sizeof(buf) - used, "%s%s", used ? ", " : "", c->crate);
		if (k < 0 || (size_t)k >= sizeof(buf) - used)
			break;
		used += (size_t)k;
	}
	return strpool__intern(&m->strings, buf);
}

static void write_note(struct walk *w)
{
	struct model *m = w->m;
	const char *who = m->own_crates && m->own_crates[0] ? m->own_crates : NULL;
	char crates[600];

	snprintf(crates, sizeof(crates), "%s%s%s", who ? " (" : "", who ? who : "", who ? ")" : "");
	switch (m->own_debuginfo) {
	case DEBUGINFO_NONE:
		m->debuginfo_note = strpool__printf(
		    &m->strings,
		    "%s has no DWARF for its own crates%s%s: async fns and blocks are "
		    "`{{closure}}` symbols, not told from closures, so only hand-written futures "
		    "are found, without states, await points or layouts",
		    m->path, crates,
		    m->has_dwarf ? ", only Rust's standard library's (built with Cargo's "
				   "`debug = false`)"
				 : "");
		m->debuginfo_advice = "rebuild with `debug = true` in the Cargo profile you ship "
				      "(`[profile.release]`), or at least `debug = "
				      "\"line-tables-only\"` for poll fns by name";
		break;
	case DEBUGINFO_LINE_TABLES:
		m->debuginfo_note = strpool__printf(
		    &m->strings,
		    "%s's own crates%s have line tables only (`debug = \"line-tables-only\"`): "
		    "poll fns kept out of line are named by their symbols, those inlined into "
		    "callers (%u in the file) have no name, and without types there are no "
		    "states, await points or layouts",
		    m->path, crates, m->nr_unnamed_polls);
		m->debuginfo_advice = "rebuild with `debug = true` (`[profile.release]`) for "
				      "states, await points and layouts";
		break;
	case DEBUGINFO_LIMITED:
		m->debuginfo_note = strpool__printf(
		    &m->strings,
		    "%s's own crates%s have no types (`debug = \"limited\"` or `debug = 1`): "
		    "poll fns are named, inlined ones too, but there are no states, await points "
		    "or layouts",
		    m->path, crates);
		m->debuginfo_advice = "rebuild with `debug = true` (`[profile.release]`) for "
				      "states, await points and layouts";
		break;
	case DEBUGINFO_FULL: break;
	}
}

int debuginfo__finish(struct walk *w)
{
	struct model *m = w->m;
	bool any_own = false;
	enum debuginfo_level own = DEBUGINFO_FULL, others = DEBUGINFO_NONE;

	for (uint32_t i = 0; i < m->nr_crates; i++) {
		struct crate_debuginfo *c = &m->crates[i];
		c->own = c->crate[0] && c->crate_class == CRATE_USER &&
			 (c->nr_cus || c->nr_fns_without_dwarf);
		if (c->own) {
			any_own = true;
			if (c->level < own)
				own = c->level;
		} else if (c->nr_cus && !c->toolchain && c->crate_class != CRATE_STD &&
			   c->level > others) {
			others = c->level;
		}
	}
	/* no crate named like the user's (a program called like a known crate, a C
	 * program): the best of the units not built from the toolchain's sources */
	m->own_debuginfo = any_own ? own : others;
	m->own_crates = crates_at(m, m->own_debuginfo);
	for (uint32_t i = 0; i < m->nr_polls; i++)
		m->nr_unnamed_polls += m->polls[i].future < 0 && m->polls[i].name &&
				       starts_with(m->polls[i].name, "{async_");
	if (!m->own_crates)
		return -ENOMEM;
	if (m->nr_unnamed_polls && m->own_debuginfo != DEBUGINFO_LINE_TABLES)
		model__warn(m,
			    "%u poll fn%s of crates with line tables only (DWARF without paths) "
			    "inlined into callers: which future %s polls is not known",
			    m->nr_unnamed_polls, m->nr_unnamed_polls == 1 ? "" : "s",
			    m->nr_unnamed_polls == 1 ? "it" : "each");
	else if (w->nr_unreadable_self > m->nr_unnamed_polls)
		model__warn(m,
			    "%u poll fn%s: which future %s polls could be read neither from a "
			    "self parameter nor from the name",
			    w->nr_unreadable_self - m->nr_unnamed_polls,
			    w->nr_unreadable_self - m->nr_unnamed_polls == 1 ? "" : "s",
			    w->nr_unreadable_self - m->nr_unnamed_polls == 1 ? "it" : "each");
	write_note(w);
	return m->own_debuginfo == DEBUGINFO_FULL || m->debuginfo_note ? 0 : -ENOMEM;
}

void debuginfo__free(struct walk *w)
{
	if (!w->dbg)
		return;
	u64_map__free(&w->dbg->crate_index);
	free(w->dbg->ranges);
	free(w->dbg);
	w->dbg = NULL;
}
