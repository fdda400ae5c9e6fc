// SPDX-License-Identifier: GPL-2.0
/*
 * Which futures to trace (docs/selection.md): crate classification by name, globs on
 * Rust paths, expansion along the await graph, and whitelist files.
 *
 * Everything here is pure code over a model. Whitelists are hand-edited and may come
 * from anywhere, so the reader bounds the file size, validates every entry before it
 * changes the selection, and says which entry and which field is wrong.
 */
#include "selection.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"

#define WHITELIST_VERSION   1
#define WHITELIST_MAX_BYTES (64u << 20)

/* ---------------------------------------------------------------------------------- */
/* UTF-8                                                                              */

/*
 * Length of the well-formed UTF-8 sequence at s (NUL-terminated), or 0 when it is not
 * one: overlong forms, surrogates and code points past U+10FFFF are rejected
 * (Unicode 15, table 3-7). A NUL byte is never a continuation byte, so this never
 * reads past the terminator.
 */
static size_t utf8_sequence_length(const unsigned char *s)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else {
		return 0;
	}
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

/*
 * One character of s (non-empty): its code point and length. A byte that does not
 * start a well-formed sequence is one character on its own, with its byte value as
 * code point, so globs still behave predictably on malformed names.
 */
static size_t utf8_next(const char *s, uint32_t *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len = utf8_sequence_length(u);

	switch (len) {
	case 1: *cp = u[0]; return 1;
	case 2: *cp = (uint32_t)(u[0] & 0x1f) << 6 | (u[1] & 0x3f); return 2;
	case 3:
		*cp = (uint32_t)(u[0] & 0x0f) << 12 | (uint32_t)(u[1] & 0x3f) << 6 | (u[2] & 0x3f);
		return 3;
	case 4:
		*cp = (uint32_t)(u[0] & 0x07) << 18 | (uint32_t)(u[1] & 0x3f) << 12 |
		      (uint32_t)(u[2] & 0x3f) << 6 | (u[3] & 0x3f);
		return 4;
	}
	*cp = u[0];
	return 1;
}

/* ---------------------------------------------------------------------------------- */
/* Globs                                                                              */

/*
 * A bracket expression at p ('['): does it contain c, and how long is it. Returns
 * false with *plen = 0 when the bracket is not closed: the caller then takes '[' as a
 * literal character, as shells do.
 */
static bool glob_class(const char *p, uint32_t c, size_t *plen)
{
	const char *q = p + 1;
	bool negate = false, found = false, first = true;

	*plen = 0;
	if (*q == '!' || *q == '^') {
		negate = true;
		q++;
	}
	for (;;) {
		uint32_t lo, hi;

		if (!*q)
			return false; /* unterminated */
		if (*q == ']' && !first)
			break;
		first = false;
		if (*q == '\\' && q[1])
			q++;
		q += utf8_next(q, &lo);
		hi = lo;
		if (*q == '-' && q[1] && q[1] != ']') {
			q++;
			if (*q == '\\' && q[1])
				q++;
			q += utf8_next(q, &hi);
		}
		if (lo <= c && c <= hi)
			found = true;
	}
	*plen = (size_t)(q + 1 - p);
	return found != negate;
}

/*
 * Does the pattern token at p (not '*', not end) match the character at t (not end)?
 * Sets the token's and the character's lengths.
 */
static bool glob_token(const char *p, const char *t, size_t *plen, size_t *tlen)
{
	uint32_t tc, pc;

	*tlen = utf8_next(t, &tc);
	switch (*p) {
	case '?': *plen = 1; return true;
	case '[': {
		bool in = glob_class(p, tc, plen);
		if (*plen)
			return in;
		*plen = 1; /* unterminated: a literal '[' */
		return tc == '[';
	}
	case '\\':
		if (p[1]) {
			*plen = 1 + utf8_next(p + 1, &pc);
			return pc == tc;
		}
		*plen = 1; /* trailing backslash: itself */
		return tc == '\\';
	}
	*plen = utf8_next(p, &pc);
	return pc == tc;
}

/*
 * The classic iterative matcher: on a mismatch, let the most recent '*' swallow one
 * more character and retry from just after it. Earlier stars never need revisiting
 * (whatever they matched, the later star can absorb), so time is O(|pattern|·|text|)
 * and there is no recursion, whatever the input.
 */
bool glob__match(const char *pattern, const char *text)
{
	const char *p = pattern, *t = text;
	const char *star_p = NULL, *star_t = NULL;

	if (!pattern || !text)
		return false;
	while (*t) {
		size_t plen, tlen;

		if (*p == '*') {
			while (*p == '*')
				p++;
			if (!*p)
				return true;
			star_p = p;
			star_t = t;
			continue;
		}
		if (*p && glob_token(p, t, &plen, &tlen)) {
			p += plen;
			t += tlen;
			continue;
		}
		if (!star_p)
			return false;
		uint32_t cp;
		star_t += utf8_next(star_t, &cp);
		t = star_t;
		p = star_p;
	}
	while (*p == '*')
		p++;
	return !*p;
}

/* ---------------------------------------------------------------------------------- */
/* Crates                                                                             */

static bool is_ident_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c >= 0x80;
}

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Types that belong to no crate of their own: primitives, unit, fn pointers. */
static bool is_builtin_type(const char *ident, size_t len)
{
	static const char *const builtins[] = {
	    "bool",  "char", "str",  "u8",  "u16",    "u32",	"u64",	 "u128",
	    "usize", "i8",   "i16",  "i32", "i64",    "i128",	"isize", "f16",
	    "f32",   "f64",  "f128", "fn",  "unsafe", "extern",
	};

	if (!len)
		return true; /* "()", "[..]" of nothing we could read, "!" */
	for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
		if (strlen(builtins[i]) == len && !memcmp(builtins[i], ident, len))
			return true;
	return false;
}

/*
 * Skip what stands before a type's path: qualified-path '<', references with their
 * lifetimes, raw pointers, `dyn`/`impl`, higher-ranked `for<..>`, tuple and slice
 * brackets, a leading "::". Every step consumes input, so this ends.
 */
static const char *skip_type_prefix(const char *s)
{
	for (;;) {
		while (*s == ' ')
			s++;
		if (*s == '<' || *s == '(' || *s == '[') {
			s++;
		} else if (*s == '&') {
			s++;
			while (*s == ' ')
				s++;
			if (*s == '\'') { /* &'a T */
				s++;
				while (is_ident_byte((unsigned char)*s))
					s++;
			}
			while (*s == ' ')
				s++;
			if (starts_with(s, "mut "))
				s += 4;
		} else if (starts_with(s, "*const ")) {
			s += 7;
		} else if (starts_with(s, "*mut ")) {
			s += 5;
		} else if (starts_with(s, "dyn ")) {
			s += 4;
		} else if (starts_with(s, "impl ")) {
			s += 5;
		} else if (starts_with(s, "for<")) {
			const char *close = strchr(s, '>');
			s = close ? close + 1 : s + strlen(s);
		} else if (starts_with(s, "::")) {
			s += 2;
		} else {
			return s;
		}
	}
}

static void copy_truncated(char *buf, size_t len, const char *s, size_t n)
{
	if (n >= len)
		n = len - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
}

void rust_path__crate(const char *path, char *buf, size_t len)
{
	const char *s, *ident;
	size_t n;

	if (!buf || !len)
		return;
	buf[0] = '\0';
	if (!path)
		return;
	s = skip_type_prefix(path);
	ident = s;
	while (is_ident_byte((unsigned char)*s))
		s++;
	n = (size_t)(s - ident);
	if (!is_builtin_type(ident, n)) {
		copy_truncated(buf, len, ident, n);
		return;
	}
	/*
	 * A primitive has no crate of its own: `<u32 as app::Trait>::f` is code of the
	 * trait's crate; a bare primitive is core's.
	 */
	if (path[0] == '<') {
		const char *as = strstr(s, " as ");
		if (as) {
			s = skip_type_prefix(as + 4);
			ident = s;
			while (is_ident_byte((unsigned char)*s))
				s++;
			n = (size_t)(s - ident);
			if (n && !is_builtin_type(ident, n)) {
				copy_truncated(buf, len, ident, n);
				return;
			}
		}
	}
	if (n || *ident == '(' || *ident == ')' || *ident == ']' || *ident == '!')
		copy_truncated(buf, len, "core", 4);
}

/*
 * Classification is by crate name alone (docs/selection.md has the rule and the
 * lists). Entries are globs so a family ("crossbeam_*") is one line.
 */

/*
 * The standard library's own crates, and crates that only ever exist as part of the
 * sysroot. Crates std vendors but that are also ordinary crates.io dependencies
 * (hashbrown, memchr, libc, gimli, ...) cannot be told apart by name: they are
 * CRATE_OTHER below, which selects the same (not by default).
 */
static const char *const std_crates[] = {
    "std",
    "core",
    "alloc",
    "proc_macro",
    "test",
    "std_detect",
    "panic_unwind",
    "panic_abort",
    "unwind",
    "compiler_builtins",
    "profiler_builtins",
    "rustc_std_workspace_*",
    "sysroot",
};

/* Async runtimes, executors, reactors and the crates they are built from. */
static const char *const runtime_crates[] = {
    /* tokio */
    "tokio",
    "tokio_util",
    "tokio_stream",
    "tokio_macros",
    "tokio_uring",
    /* async-std, smol and their building blocks */
    "async_std",
    "async_global_executor",
    "async_executor",
    "async_task",
    "async_io",
    "async_channel",
    "async_lock",
    "async_process",
    "async_net",
    "async_fs",
    "async_signal",
    "async_broadcast",
    "async_compat",
    "blocking",
    "smol",
    "polling",
    "event_listener",
    "event_listener_strategy",
    "concurrent_queue",
    "parking",
    "waker_fn",
    "atomic_waker",
    "fastrand",
    /* futures-rs and friends */
    "futures",
    "futures_*", /* util, core, executor, channel, io, sink, task, lite, timer, ... */
    "pin_project",
    "pin_project_lite",
    "pin_utils",
    "pollster",
    "async_stream",
    /* reactors */
    "mio",
    /* HTTP/service stacks that drive futures on behalf of the user */
    "hyper",
    "hyper_util",
    "h2",
    "want",
    "tower",
    "tower_*",
    /* other runtimes */
    "actix_rt",
    "actix_server",
    "glommio",
    "monoio",
    "compio",
    "compio_*",
    "embassy_executor",
    "embassy_futures",
    "embassy_time",
    "embassy_sync",
    "wasm_bindgen_futures",
};

/* Well-known third-party crates: neither the user's, nor std, nor a runtime. */
static const char *const other_crates[] = {
    /* vendored by std, but also ordinary dependencies */
    "hashbrown",
    "memchr",
    "libc",
    "cfg_if",
    "gimli",
    "addr2line",
    "object",
    "miniz_oxide",
    "adler",
    "adler2",
    "rustc_demangle",
    "dlmalloc",
    "getopts",
    "unicode_width",
    /* serialization */
    "serde",
    "serde_*",
    "bincode",
    "prost",
    "prost_*",
    /* logging, tracing */
    "log",
    "env_logger",
    "tracing",
    "tracing_*",
    "sharded_slab",
    "thread_local",
    "valuable",
    "value_bag",
    /* data structures, sync */
    "bytes",
    "parking_lot",
    "parking_lot_core",
    "lock_api",
    "crossbeam",
    "crossbeam_*",
    "once_cell",
    "lazy_static",
    "slab",
    "smallvec",
    "indexmap",
    "arrayvec",
    "either",
    "itertools",
    "scopeguard",
    "spin",
    "dashmap",
    "ahash",
    "foldhash",
    "fnv",
    "rayon",
    "rayon_core",
    /* system */
    "socket2",
    "nix",
    "rustix",
    "linux_raw_sys",
    "signal_hook",
    "signal_hook_registry",
    "num_cpus",
    "getrandom",
    "errno",
    /* text, numbers, time */
    "itoa",
    "ryu",
    "regex",
    "regex_*",
    "aho_corasick",
    "unicode_*",
    "percent_encoding",
    "form_urlencoded",
    "idna",
    "url",
    "base64",
    "encoding_rs",
    "rand",
    "rand_*",
    "ppv_lite86",
    "num_*",
    "chrono",
    "time",
    "uuid",
    "anyhow",
    "thiserror",
    "clap",
    "clap_*",
    /* protocols and clients built on a runtime */
    "http",
    "http_body",
    "http_body_util",
    "httparse",
    "httpdate",
    "mime",
    "reqwest",
    "tonic",
    "axum",
    "axum_core",
    "warp",
    "actix_web",
    "actix_http",
    "tungstenite",
    "tokio_tungstenite",
    "rustls",
    "tokio_rustls",
    "ring",
    "webpki",
    "openssl",
    "openssl_sys",
    "native_tls",
    "tokio_native_tls",
    "tokio_postgres",
    "sqlx",
    "sqlx_*",
    "redis",
    /* compression */
    "flate2",
    "zstd",
    "zstd_*",
};

static bool crate_in(const char *crate, const char *const *list, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		if (glob__match(list[i], crate))
			return true;
	return false;
}

#define CRATE_IN(crate, list) crate_in(crate, list, sizeof(list) / sizeof(list[0]))

enum crate_class crate__classify(const char *crate)
{
	/* no crate we can name: not known to be the user's, select it by pattern */
	if (!crate || !*crate)
		return CRATE_OTHER;
	if (CRATE_IN(crate, std_crates))
		return CRATE_STD;
	if (CRATE_IN(crate, runtime_crates))
		return CRATE_RUNTIME;
	if (CRATE_IN(crate, other_crates))
		return CRATE_OTHER;
	return CRATE_USER;
}

/* ---------------------------------------------------------------------------------- */
/* Selection                                                                          */

/* The selection may have been built for another model: only touch what both have. */
static uint32_t sel_nr(const struct selection *s, const struct model *m)
{
	if (!s->futures)
		return 0;
	return s->nr < m->nr_futures ? s->nr : m->nr_futures;
}

int selection__init(struct selection *s, const struct model *m)
{
	s->futures = NULL;
	s->nr = 0;
	if (!m->nr_futures)
		return 0;
	s->futures = calloc(m->nr_futures, sizeof(*s->futures));
	if (!s->futures)
		return -ENOMEM;
	s->nr = m->nr_futures;
	return 0;
}

void selection__free(struct selection *s)
{
	if (!s)
		return;
	free(s->futures);
	s->futures = NULL;
	s->nr = 0;
}

uint32_t selection__count(const struct selection *s)
{
	uint32_t n = 0;

	if (!s->futures)
		return 0;
	for (uint32_t i = 0; i < s->nr; i++)
		n += s->futures[i];
	return n;
}

/* Code exists for it: an out-of-line poll to probe, or inlined copies to report. */
static bool future_has_code(const struct model *m, const struct future *f)
{
	return (f->poll >= 0 && (uint32_t)f->poll < m->nr_polls) || f->inlined_only;
}

uint32_t selection__add_default(struct selection *s, const struct model *m, bool all_crates)
{
	uint32_t nr = sel_nr(s, m), added = 0;

	for (uint32_t i = 0; i < nr; i++) {
		const struct future *f = &m->futures[i];

		if (s->futures[i] || !future_has_code(m, f))
			continue;
		if (!all_crates && f->crate_class != CRATE_USER)
			continue;
		s->futures[i] = true;
		added++;
	}
	return added;
}

uint32_t selection__add_pattern(struct selection *s, const struct model *m, const char *pattern)
{
	uint32_t nr = sel_nr(s, m), matched = 0;
	bool *hit;
	char *name = NULL;
	size_t name_cap = 0;

	if (!pattern || !nr)
		return 0;
	hit = calloc(nr, sizeof(*hit));
	if (!hit) {
		pr_warn("selection: out of memory matching pattern '%s'\n", pattern);
		return 0;
	}
	for (uint32_t i = 0; i < m->nr_polls; i++) {
		const struct poll_fn *p = &m->polls[i];

		if (p->future < 0 || (uint32_t)p->future >= nr || hit[p->future])
			continue;
		if (glob__match(pattern, p->name) || glob__match(pattern, p->linkage_name))
			hit[p->future] = true;
	}
	for (uint32_t i = 0; i < nr; i++) {
		const struct future *f = &m->futures[i];

		if (!hit[i] && f->path) {
			/* the display name is never longer than the path */
			size_t need = strlen(f->path) + 64;
			if (need > name_cap) {
				char *n = realloc(name, need);
				if (!n) {
					pr_warn("selection: out of memory matching pattern '%s'\n",
						pattern);
					break;
				}
				name = n;
				name_cap = need;
			}
			future__display_name(f, name, name_cap);
			hit[i] = glob__match(pattern, f->path) || glob__match(pattern, name);
		}
		if (hit[i]) {
			s->futures[i] = true;
			matched++;
		}
	}
	free(name);
	free(hit);
	return matched;
}

/*
 * Compressed adjacency of the await graph, built once: for each future the
 * futures it awaits (forward) or that await it (reverse). Unresolved edges (to == -1)
 * and indices outside the model are left out.
 */
struct adjacency {
	uint32_t *start; /* nr + 1 offsets into next */
	uint32_t *next;
};

static bool edge_valid(const struct await_edge *e, uint32_t nr)
{
	return e->from >= 0 && e->to >= 0 && (uint32_t)e->from < nr && (uint32_t)e->to < nr;
}

static int adjacency__build(struct adjacency *a, const struct model *m, uint32_t nr, bool reverse)
{
	uint32_t nr_valid = 0;

	a->start = calloc((size_t)nr + 1, sizeof(*a->start));
	if (!a->start)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->nr_edges; i++) {
		const struct await_edge *e = &m->edges[i];
		if (!edge_valid(e, nr))
			continue;
		a->start[(reverse ? e->to : e->from) + 1]++;
		nr_valid++;
	}
	for (uint32_t i = 0; i < nr; i++)
		a->start[i + 1] += a->start[i];
	a->next = malloc((size_t)(nr_valid ? nr_valid : 1) * sizeof(*a->next));
	if (!a->next) {
		free(a->start);
		a->start = NULL;
		return -ENOMEM;
	}
	/* fill using start[] as cursors, then shift back */
	for (uint32_t i = 0; i < m->nr_edges; i++) {
		const struct await_edge *e = &m->edges[i];
		if (!edge_valid(e, nr))
			continue;
		uint32_t from = (uint32_t)(reverse ? e->to : e->from);
		a->next[a->start[from]++] = (uint32_t)(reverse ? e->from : e->to);
	}
	for (uint32_t i = nr; i > 0; i--)
		a->start[i] = a->start[i - 1];
	a->start[0] = 0;
	return 0;
}

static void adjacency__free(struct adjacency *a)
{
	free(a->start);
	free(a->next);
}

/* Mark in reached[] everything reachable from the seeds (breadth first). */
static void reach_from_seeds(const struct adjacency *a, const bool *seeds, bool *reached,
			     uint32_t nr, uint32_t *queue)
{
	uint32_t head = 0, tail = 0;

	for (uint32_t i = 0; i < nr; i++) {
		reached[i] = seeds[i];
		if (seeds[i])
			queue[tail++] = i;
	}
	while (head < tail) {
		uint32_t u = queue[head++];
		for (uint32_t k = a->start[u]; k < a->start[u + 1]; k++) {
			uint32_t v = a->next[k];
			if (!reached[v]) {
				reached[v] = true;
				queue[tail++] = v; /* each node enters once: tail <= nr */
			}
		}
	}
}

void selection__expand(struct selection *s, const struct model *m, enum expand_dir dir)
{
	uint32_t nr = sel_nr(s, m);
	struct adjacency adj = {0};
	bool *reached = NULL;
	uint32_t *queue = NULL;
	bool *seeds = NULL;

	if (!nr || !(dir & EXPAND_BOTH))
		return;
	reached = malloc(nr * sizeof(*reached));
	queue = malloc(nr * sizeof(*queue));
	seeds = malloc(nr * sizeof(*seeds));
	if (!reached || !queue || !seeds)
		goto nomem;
	/* both directions start from the original seeds: up ∪ down, not down-of-up */
	memcpy(seeds, s->futures, nr * sizeof(*seeds));
	for (int d = EXPAND_UP; d <= EXPAND_DOWN; d <<= 1) {
		if (!(dir & d))
			continue;
		if (adjacency__build(&adj, m, nr, d == EXPAND_UP))
			goto nomem;
		reach_from_seeds(&adj, seeds, reached, nr, queue);
		adjacency__free(&adj);
		for (uint32_t i = 0; i < nr; i++)
			s->futures[i] |= reached[i];
	}
	goto out;
nomem:
	pr_warn("selection: out of memory expanding the selection along the await graph\n");
out:
	free(seeds);
	free(queue);
	free(reached);
}

/* ---------------------------------------------------------------------------------- */
/* Whitelist: write                                                                   */

static const char *future_crate(const struct future *f, char *buf, size_t len)
{
	if (f->crate)
		return f->crate;
	rust_path__crate(f->path, buf, len);
	return buf;
}

static int compare_by_crate_path(const void *pa, const void *pb, void *arg)
{
	const struct model *m = arg;
	const struct future *a = &m->futures[*(const uint32_t *)pa];
	const struct future *b = &m->futures[*(const uint32_t *)pb];
	char ca[256], cb[256];
	int c;

	c = strcmp(future_crate(a, ca, sizeof(ca)), future_crate(b, cb, sizeof(cb)));
	if (!c)
		c = strcmp(a->path, b->path);
	if (!c) /* identical paths: keep model order, so output is stable */
		c = *(const uint32_t *)pa < *(const uint32_t *)pb ? -1 : 1;
	return c;
}

/*
 * A JSON string whatever the bytes: control characters escaped, bytes that are not
 * well-formed UTF-8 become U+FFFD (such a name cannot round-trip; Rust's never need to).
 */
static void json_string(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	if (!str) {
		fputs("null", out);
		return;
	}
	putc('"', out);
	while (*s) {
		unsigned char c = *s;
		size_t len = 1;

		if (c == '"' || c == '\\') {
			putc('\\', out);
			putc(c, out);
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(out, "\\u%04x", c);
		} else if (c >= 0x80) {
			len = utf8_sequence_length(s);
			if (!len) {
				fputs("\\ufffd", out);
				len = 1;
			} else {
				fwrite(s, 1, len, out);
			}
		} else {
			putc(c, out);
		}
		s += len;
	}
	putc('"', out);
}

static void json_key_string(FILE *out, const char *key, const char *value)
{
	fprintf(out, ", \"%s\": ", key);
	json_string(out, value);
}

/*
 * One future per line, "trace" first: a reviewer sees every decision in one column,
 * a diff shows exactly the entries that changed, and sed/grep can edit the file.
 */
static void write_entry(FILE *out, const struct model *m, uint32_t idx, int32_t any_poll,
			bool trace, char *name, size_t name_len)
{
	const struct future *f = &m->futures[idx];
	const struct poll_fn *p = NULL;
	char crate[256];

	if (f->poll >= 0 && (uint32_t)f->poll < m->nr_polls)
		p = &m->polls[f->poll];
	else if (any_poll >= 0)
		p = &m->polls[any_poll];
	future__display_name(f, name, name_len);
	fprintf(out, "    {\"trace\": %s, \"future\": ", trace ? "true" : "false");
	json_string(out, f->path);
	json_key_string(out, "name", name);
	json_key_string(out, "crate", future_crate(f, crate, sizeof(crate)));
	json_key_string(out, "class", crate_class__name(f->crate_class));
	json_key_string(out, "kind", future_kind__name(f->kind));
	fprintf(out, ", \"traceable\": %s",
		f->poll >= 0 && (uint32_t)f->poll < m->nr_polls ? "true" : "false");
	fprintf(out, ", \"inlined_only\": %s", f->inlined_only ? "true" : "false");
	json_key_string(out, "poll", p ? p->name : NULL);
	json_key_string(out, "linkage_name", p ? p->linkage_name : NULL);
	json_key_string(out, "file", f->file);
	if (f->file && f->line)
		fprintf(out, ", \"line\": %" PRIu32 "}", f->line);
	else
		fputs(", \"line\": null}", out);
}

int whitelist__write(const struct model *m, const struct selection *s, bool all_crates, FILE *out)
{
	uint32_t nr = sel_nr(s, m), nr_out = 0;
	uint32_t *order = NULL;
	int32_t *any_poll = NULL;
	char *name = NULL;
	size_t name_len = 0;
	int err = 0;

	if (m->nr_futures) {
		order = malloc(m->nr_futures * sizeof(*order));
		any_poll = malloc(m->nr_futures * sizeof(*any_poll));
		if (!order || !any_poll) {
			err = -ENOMEM;
			goto out;
		}
	}
	for (uint32_t i = 0; i < m->nr_futures; i++) {
		const struct future *f = &m->futures[i];
		bool selected = i < nr && s->futures[i];

		any_poll[i] = -1;
		if (!f->path) /* nothing to match it by when read back */
			continue;
		if (selected || all_crates || f->crate_class == CRATE_USER)
			order[nr_out++] = i;
		if (strlen(f->path) + 64 > name_len)
			name_len = strlen(f->path) + 64;
	}
	/* a name for futures whose polls are all inlined: the first poll fn we know */
	for (uint32_t i = 0; i < m->nr_polls; i++) {
		int32_t fi = m->polls[i].future;
		if (fi >= 0 && (uint32_t)fi < m->nr_futures && any_poll[fi] < 0)
			any_poll[fi] = (int32_t)i;
	}
	if (nr_out)
		qsort_r(order, nr_out, sizeof(*order), compare_by_crate_path, (void *)m);
	if (name_len) {
		name = malloc(name_len);
		if (!name) {
			err = -ENOMEM;
			goto out;
		}
	}

	fprintf(out, "{\n  \"asyncbpf_whitelist\": %d,\n  \"binary\": ", WHITELIST_VERSION);
	json_string(out, m->path);
	fputs(",\n  \"build_id\": ", out);
	json_string(out, m->build_id);
	fputs(",\n  \"help\": \"Set \\\"trace\\\" to true or false per future, then pass this "
	      "file back with --whitelist. Entries match by \\\"future\\\" path.\",\n",
	      out);
	fputs("  \"futures\": [", out);
	for (uint32_t k = 0; k < nr_out; k++) {
		uint32_t i = order[k];
		fputs(k ? ",\n" : "\n", out);
		write_entry(out, m, i, any_poll[i], i < nr && s->futures[i], name, name_len);
	}
	fputs(nr_out ? "\n  ]\n}\n" : "]\n}\n", out);
	if (fflush(out) || ferror(out))
		err = -EIO;
out:
	free(name);
	free(any_poll);
	free(order);
	return err;
}

/* ---------------------------------------------------------------------------------- */
/* Whitelist: read                                                                    */

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

/* The whole file, NUL-terminated, refusing anything past WHITELIST_MAX_BYTES. */
static int read_bounded(const char *path, char **data, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	char *buf = NULL;
	size_t used = 0, cap = 0;
	int ret = 0;

	*data = NULL;
	*len = 0;
	if (!f) {
		ret = -errno;
		set_err(err, errlen, "whitelist '%s': cannot open: %s", path, strerror(-ret));
		return ret;
	}
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size > WHITELIST_MAX_BYTES)
		goto too_big;
	for (;;) {
		if (cap - used < 65536 + 1) {
			size_t ncap = cap ? cap * 2 : 65536 + 1;
			if (ncap > WHITELIST_MAX_BYTES + 2)
				ncap = WHITELIST_MAX_BYTES + 2;
			char *n = realloc(buf, ncap);
			if (!n) {
				ret = -ENOMEM;
				set_err(err, errlen, "whitelist '%s': out of memory", path);
				goto out;
			}
			buf = n;
			cap = ncap;
		}
		size_t want = cap - used - 1;
		size_t got = fread(buf + used, 1, want, f);
		used += got;
		if (used > WHITELIST_MAX_BYTES)
			goto too_big;
		if (got < want) {
			if (ferror(f)) {
				ret = errno ? -errno : -EIO;
				set_err(err, errlen, "whitelist '%s': cannot read: %s", path,
					strerror(-ret));
				goto out;
			}
			break; /* EOF */
		}
	}
	buf[used] = '\0';
	*data = buf;
	*len = used;
	buf = NULL;
	goto out;
too_big:
	ret = -EFBIG;
	set_err(err, errlen,
		"whitelist '%s': larger than %u MiB: not a whitelist written by asyncbpf?", path,
		WHITELIST_MAX_BYTES >> 20);
out:
	free(buf);
	fclose(f);
	return ret;
}

static void line_col(const char *data, const char *at, unsigned *line, unsigned *col)
{
	*line = 1;
	*col = 1;
	for (const char *p = data; p < at && *p; p++) {
		if (*p == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/* Sorted indices, for exact lookups by string in O(log n). */
struct name_index {
	uint32_t *idx;
	uint32_t nr;
};

static int compare_future_path(const void *pa, const void *pb, void *arg)
{
	const struct model *m = arg;
	return strcmp(m->futures[*(const uint32_t *)pa].path,
		      m->futures[*(const uint32_t *)pb].path);
}

static int compare_poll_linkage(const void *pa, const void *pb, void *arg)
{
	const struct model *m = arg;
	return strcmp(m->polls[*(const uint32_t *)pa].linkage_name,
		      m->polls[*(const uint32_t *)pb].linkage_name);
}

/* First position whose key is >= s. */
static uint32_t lower_bound(const struct name_index *ix, const struct model *m, bool polls,
			    const char *s)
{
	uint32_t lo = 0, hi = ix->nr;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const char *key =
		    polls ? m->polls[ix->idx[mid]].linkage_name : m->futures[ix->idx[mid]].path;
		if (strcmp(key, s) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Select every future the entry names: all futures with this exact path (a model may
 * hold one path more than once), else the future of the poll fn with this linkage
 * name. Returns how many futures it matched.
 */
static uint32_t apply_entry(struct selection *s, const struct model *m, uint32_t nr,
			    const struct name_index *by_path, const struct name_index *by_linkage,
			    const char *path, const char *linkage_name, bool trace)
{
	uint32_t n = 0;

	for (uint32_t k = lower_bound(by_path, m, false, path);
	     k < by_path->nr && !strcmp(m->futures[by_path->idx[k]].path, path); k++) {
		if (trace)
			s->futures[by_path->idx[k]] = true;
		n++;
	}
	if (n || !linkage_name)
		return n;
	for (uint32_t k = lower_bound(by_linkage, m, true, linkage_name);
	     k < by_linkage->nr && !strcmp(m->polls[by_linkage->idx[k]].linkage_name, linkage_name);
	     k++) {
		int32_t fi = m->polls[by_linkage->idx[k]].future;
		if (fi < 0 || (uint32_t)fi >= nr)
			continue;
		if (trace)
			s->futures[fi] = true;
		n++;
	}
	return n;
}

int whitelist__read(struct selection *s, const struct model *m, const char *path,
		    uint32_t *nr_unknown, char *err, size_t errlen)
{
	uint32_t nr = sel_nr(s, m), unknown = 0;
	struct name_index by_path = {0}, by_linkage = {0};
	const cJSON *version, *futures, *entry;
	const char *parse_end = NULL;
	cJSON *root = NULL;
	char *data = NULL;
	size_t len;
	int ret, i;

	if (nr_unknown)
		*nr_unknown = 0;
	set_err(err, errlen, "%s", "");
	ret = read_bounded(path, &data, &len, err, errlen);
	if (ret)
		return ret;
	if (memchr(data, '\0', len)) {
		set_err(err, errlen, "whitelist '%s': contains a NUL byte: not a JSON text", path);
		ret = -EINVAL;
		goto out;
	}
	/* len + 1: the terminator is part of the buffer, so trailing garbage is refused */
	root = cJSON_ParseWithLengthOpts(data, len + 1, &parse_end, 1);
	if (!root) {
		unsigned line, col;
		line_col(data, parse_end ? parse_end : data, &line, &col);
		set_err(err, errlen, "whitelist '%s': not valid JSON at line %u, column %u", path,
			line, col);
		ret = -EINVAL;
		goto out;
	}
	if (!cJSON_IsObject(root)) {
		set_err(err, errlen, "whitelist '%s': the top level must be a JSON object", path);
		ret = -EINVAL;
		goto out;
	}
	version = cJSON_GetObjectItemCaseSensitive(root, "asyncbpf_whitelist");
	if (!version) {
		set_err(err, errlen,
			"whitelist '%s': no \"asyncbpf_whitelist\" key: not an asyncbpf whitelist "
			"(write one with 'asyncbpf list BIN -o FILE')",
			path);
		ret = -EINVAL;
		goto out;
	}
	if (!cJSON_IsNumber(version) || version->valuedouble != WHITELIST_VERSION) {
		char *v = cJSON_PrintUnformatted(version);
		set_err(err, errlen,
			"whitelist '%s': \"asyncbpf_whitelist\" is %.32s, this asyncbpf reads "
			"version %d",
			path, v ? v : "?", WHITELIST_VERSION);
		free(v);
		ret = -EINVAL;
		goto out;
	}
	futures = cJSON_GetObjectItemCaseSensitive(root, "futures");
	if (!cJSON_IsArray(futures)) {
		set_err(err, errlen, "whitelist '%s': \"futures\" %s", path,
			futures ? "must be an array" : "is missing");
		ret = -EINVAL;
		goto out;
	}

	/* validate every entry before the selection changes: a bad file changes nothing */
	i = 0;
	cJSON_ArrayForEach(entry, futures)
	{
		const cJSON *future = cJSON_GetObjectItemCaseSensitive(entry, "future");
		const cJSON *trace = cJSON_GetObjectItemCaseSensitive(entry, "trace");
		const cJSON *linkage = cJSON_GetObjectItemCaseSensitive(entry, "linkage_name");
		const char *what = NULL;

		if (!cJSON_IsObject(entry))
			what = "must be an object";
		else if (!future)
			what = "has no \"future\"";
		else if (!cJSON_IsString(future))
			what = "\"future\" must be a string";
		else if (!trace)
			what = "has no \"trace\"";
		else if (!cJSON_IsBool(trace))
			what = "\"trace\" must be true or false";
		else if (linkage && !cJSON_IsString(linkage) && !cJSON_IsNull(linkage))
			what = "\"linkage_name\" must be a string or null";
		if (what) {
			if (future && cJSON_IsString(future))
				set_err(err, errlen, "whitelist '%s': futures[%d] ('%.200s') %s",
					path, i, future->valuestring, what);
			else
				set_err(err, errlen, "whitelist '%s': futures[%d] %s", path, i,
					what);
			ret = -EINVAL;
			goto out;
		}
		i++;
	}

	if (nr) {
		by_path.idx = malloc(nr * sizeof(*by_path.idx));
		by_linkage.idx = malloc((m->nr_polls ? m->nr_polls : 1) * sizeof(*by_linkage.idx));
		if (!by_path.idx || !by_linkage.idx) {
			set_err(err, errlen, "whitelist '%s': out of memory", path);
			ret = -ENOMEM;
			goto out;
		}
	}
	for (uint32_t k = 0; k < nr; k++)
		if (m->futures[k].path)
			by_path.idx[by_path.nr++] = k;
	for (uint32_t k = 0; nr && k < m->nr_polls; k++)
		if (m->polls[k].linkage_name)
			by_linkage.idx[by_linkage.nr++] = k;
	if (by_path.nr)
		qsort_r(by_path.idx, by_path.nr, sizeof(uint32_t), compare_future_path, (void *)m);
	if (by_linkage.nr)
		qsort_r(by_linkage.idx, by_linkage.nr, sizeof(uint32_t), compare_poll_linkage,
			(void *)m);

	i = 0;
	cJSON_ArrayForEach(entry, futures)
	{
		const char *future = cJSON_GetObjectItemCaseSensitive(entry, "future")->valuestring;
		const cJSON *linkage = cJSON_GetObjectItemCaseSensitive(entry, "linkage_name");
		bool trace = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(entry, "trace"));

		if (!apply_entry(s, m, nr, &by_path, &by_linkage, future,
				 cJSON_IsString(linkage) ? linkage->valuestring : NULL, trace)) {
			if (!unknown++)
				set_err(err, errlen,
					"whitelist '%s': futures[%d] '%.300s' is not a future of "
					"this binary (renamed, or a different build?)",
					path, i, future);
		}
		i++;
	}
	if (nr_unknown)
		*nr_unknown = unknown;
	ret = 0;
out:
	free(by_path.idx);
	free(by_linkage.idx);
	cJSON_Delete(root);
	free(data);
	return ret;
}
