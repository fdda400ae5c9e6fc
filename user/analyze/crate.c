// SPDX-License-Identifier: GPL-2.0
/*
 * Crate of a Rust path and its classification by name alone (docs/selection.md): the
 * standard library's crates, async runtimes and their building blocks, well-known
 * third-party crates, and everything else, which is taken to be the user's. The lists
 * here are the authoritative ones (docs/selection.md mirrors them).
 */
#include "analyze/crate.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "lib/glob.h"

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

void rust_path__crate_strict(const char *path, char *buf, size_t len)
{
	char seg[260];

	rust_path__crate(path, buf, len);
	if (!buf || !len || !buf[0] || strcmp(buf, "core") == 0)
		return;
	snprintf(seg, sizeof(seg), "%s::", buf);
	if (!strstr(path, seg))
		buf[0] = '\0';
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
    "__rustc", /* rustc's allocator shims: `__rustc::__rust_alloc` */
};

/*
 * Async runtimes: what runs tasks (executors, schedulers, reactors, timers, blocking
 * pools, task harnesses) and the crates they are built from, combinators included
 * (smol's and async-std's executor loops are futures_lite's `or` of futures, their
 * threads wait on async_channel). The profiler folds these futures into [runtime]
 * when they lie above a task's own future. A library that does a program's work on
 * top of a runtime (HTTP, RPC, databases, service stacks) is not one: its futures are
 * the tasks' (other_crates below).
 */
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
    /* protocols, servers and clients built on a runtime: their futures are tasks' */
    "hyper",
    "hyper_util",
    "h2",
    "want",
    "tower",
    "tower_*",
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
