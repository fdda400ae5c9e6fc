// SPDX-License-Identifier: GPL-2.0
/*
 * Selection: crate names and classes, globs, default and pattern selection, expansion
 * along a hand-built await graph, and whitelist files written, edited and read back.
 *
 * The graph (-> is "awaits"):
 *
 *   [0] app::main::{async_block_env#0}  (task root)
 *        -> [1] app::handler             -> [2] app::fetch -> [3] tokio Sleep
 *                                                          -> [6] core Ready<u32>
 *                                        -> [4] app::ping <-> [5] app::pong -> [3] Sleep
 *                                        -> (unresolved: dyn Future)
 *        -> [7] tokio JoinHandle<()>
 *   [11] tracing Instrumented<..> (task root) -> [8] app::worker -> [9] app::inlined
 *   [10] app::dead (type only: no poll code at all)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "model/model.h"
#include "select/selection.h"
#include "lib/strpool.h"
#include "testlib.h"

enum {
	F_MAIN,
	F_HANDLER,
	F_FETCH,
	F_SLEEP,
	F_PING,
	F_PONG,
	F_READY,
	F_JOIN,
	F_WORKER,
	F_INLINED,
	F_DEAD,
	F_INSTRUMENTED,
	NR_F,
};

static const struct {
	const char *path;
	enum future_kind kind;
	const char *file; /* NULL: unknown */
	uint32_t line;
	const char *poll;	  /* NULL: no poll fn at all */
	const char *linkage_name; /* NULL: none known */
	bool inlined_only;
} spec[NR_F] = {
    [F_MAIN] = {"app::main::{async_block_env#0}", FUTURE_ASYNC_BLOCK, "src/main.rs", 40,
		"app::main::{async_block#0}", "_ZN3app4main28_$u7b$$u7b$closure$u7d$$u7d$17h1E",
		false},
    [F_HANDLER] = {"app::handler::{async_fn_env#0}", FUTURE_ASYNC_FN, "src/main.rs", 20,
		   "app::handler::{async_fn#0}",
		   "_ZN3app7handler28_$u7b$$u7b$closure$u7d$$u7d$17h2E", false},
    [F_FETCH] = {"app::fetch::{async_fn_env#0}", FUTURE_ASYNC_FN, "src/fetch.rs", 7,
		 "app::fetch::{async_fn#0}", "_ZN3app5fetch28_$u7b$$u7b$closure$u7d$$u7d$17h3E",
		 false},
    [F_SLEEP] = {"tokio::time::sleep::Sleep", FUTURE_HANDWRITTEN, "src/time/sleep.rs", 440,
		 "<tokio::time::sleep::Sleep as core::future::future::Future>::poll",
		 "_ZN76_$LT$tokio..time..sleep..Sleep$u20$as$u20$core..future..future..Future$GT$"
		 "4poll17h4E",
		 false},
    [F_PING] = {"app::ping::{async_fn_env#0}", FUTURE_ASYNC_FN, "src/main.rs", 60,
		"app::ping::{async_fn#0}", "_ZN3app4ping17h5E", false},
    [F_PONG] = {"app::pong::{async_fn_env#0}", FUTURE_ASYNC_FN, "src/main.rs", 70,
		"app::pong::{async_fn#0}", "_ZN3app4pong17h6E", false},
    [F_READY] = {"core::future::ready::Ready<u32>", FUTURE_HANDWRITTEN, NULL, 0,
		 "<core::future::ready::Ready<u32> as core::future::future::Future>::poll",
		 "_ZN5ready17h7E", false},
    [F_JOIN] =
	{"tokio::runtime::task::join::JoinHandle<()>", FUTURE_HANDWRITTEN,
	 "src/runtime/task/join.rs", 300,
	 "<tokio::runtime::task::join::JoinHandle<()> as core::future::future::Future>::poll",
	 "_ZN4join17h8E", false},
    [F_WORKER] = {"app::worker::{async_fn_env#0}", FUTURE_ASYNC_FN, "src/worker.rs", 3,
		  "app::worker::{async_fn#0}", "_ZN3app6worker17h9E", false},
    [F_INLINED] = {"app::inlined::{async_fn_env#0}", FUTURE_ASYNC_FN, "src/worker.rs", 30,
		   "app::inlined::{async_fn#0}", NULL, true},
    [F_DEAD] = {"app::dead::{async_fn_env#0}", FUTURE_ASYNC_FN, NULL, 0, NULL, NULL, false},
    [F_INSTRUMENTED] = {"tracing::instrument::Instrumented<app::worker::{async_fn_env#0}>",
			FUTURE_HANDWRITTEN, NULL, 0,
			"<tracing::instrument::Instrumented<app::worker::{async_fn_env#0}> as "
			"core::future::future::Future>::poll",
			"_ZN7tracing10instrument17h10E", false},
};

static const int edges[][2] = {
    {F_MAIN, F_HANDLER}, {F_HANDLER, F_FETCH},	     {F_FETCH, F_SLEEP},    {F_FETCH, F_READY},
    {F_HANDLER, F_PING}, {F_PING, F_PONG},	     {F_PONG, F_PING},	    {F_PONG, F_SLEEP},
    {F_MAIN, F_JOIN},	 {F_INSTRUMENTED, F_WORKER}, {F_WORKER, F_INLINED}, {F_HANDLER, -1},
};

static void build_model(struct model *m)
{
	char crate[64];

	model__init(m);
	m->path = strpool__intern(&m->strings, "/srv/app/target/release/app");
	m->build_id = strpool__intern(&m->strings, "0123456789abcdef");
	m->has_dwarf = true;
	for (int i = 0; i < NR_F; i++) {
		struct future *f = model__add_future(m);
		if (!f)
			abort();
		f->path = strpool__intern(&m->strings, spec[i].path);
		rust_path__crate(f->path, crate, sizeof(crate));
		f->crate = strpool__intern(&m->strings, crate);
		f->crate_class = crate__classify(f->crate);
		f->kind = spec[i].kind;
		f->file = strpool__intern(&m->strings, spec[i].file);
		f->line = spec[i].line;
		if (!spec[i].poll)
			continue;
		struct poll_fn *p = model__add_poll(m);
		if (!p)
			abort();
		p->name = strpool__intern(&m->strings, spec[i].poll);
		p->linkage_name = strpool__intern(&m->strings, spec[i].linkage_name);
		rust_path__crate(p->name, crate, sizeof(crate));
		p->crate = strpool__intern(&m->strings, crate);
		p->crate_class = crate__classify(p->crate);
		p->future = i;
		p->inlined_only = spec[i].inlined_only;
		p->addr = 0x1000 + 0x100 * (uint64_t)i;
	}
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		struct await_edge *e = model__add_edge(m);
		if (!e)
			abort();
		e->from = edges[i][0];
		e->to = edges[i][1];
		e->await_index = (uint32_t)i;
	}
	model__finish(m);
}

/* The selection as a bit mask over the F_* indices, for compact expectations. */
static unsigned mask(const struct selection *s)
{
	unsigned bits = 0;
	for (uint32_t i = 0; i < s->nr; i++)
		if (s->futures[i])
			bits |= 1u << i;
	return bits;
}

#define BIT(x) (1u << (x))

static void test_model_shape(void)
{
	struct model m;

	build_model(&m);
	CHECK(m.futures[F_MAIN].is_root);
	CHECK(m.futures[F_INSTRUMENTED].is_root);
	CHECK(!m.futures[F_HANDLER].is_root);
	CHECK(!m.futures[F_PING].is_root); /* awaited by handler and pong */
	CHECK(m.futures[F_DEAD].is_root);
	CHECK(m.futures[F_INLINED].inlined_only);
	CHECK(m.futures[F_INLINED].poll < 0);
	CHECK(m.futures[F_DEAD].poll < 0 && !m.futures[F_DEAD].inlined_only);
	CHECK(m.futures[F_FETCH].poll >= 0);
	model__free(&m);
}

static void check_crate(const char *path, const char *expected, int line)
{
	char buf[64];

	memset(buf, 'x', sizeof(buf));
	rust_path__crate(path, buf, sizeof(buf));
	if (strcmp(buf, expected))
		fprintf(stderr, "  (rust_path__crate called from line %d)\n", line);
	CHECK_STR(buf, expected);
}

#define CRATE(path, expected) check_crate(path, expected, __LINE__)

static void test_crate_names(void)
{
	char small[4];

	CRATE("tokio::time::Sleep", "tokio");
	CRATE("app", "app");
	CRATE("app::fetch::{async_fn_env#0}", "app");
	CRATE("<tokio::time::sleep::Sleep as core::future::future::Future>::poll", "tokio");
	CRATE("<&mut app::Fut as core::future::future::Future>::poll", "app");
	CRATE("&mut core::pin::Pin<&mut app::X>", "core");
	CRATE("&app::X", "app");
	CRATE("&'static str", "core");
	CRATE("&'a mut futures_util::Fuse<app::X>", "futures_util");
	CRATE("*const app::X", "app");
	CRATE("*mut tokio::X", "tokio");
	CRATE("<*mut app::Node as core::fmt::Debug>::fmt", "app");
	CRATE("dyn core::future::future::Future<Output = ()>", "core");
	CRATE("<dyn core::any::Any>::type_id", "core");
	CRATE("&dyn for<'a> app::Handler<'a>", "app");
	CRATE("alloc::vec::Vec<tokio::task::JoinHandle<()>>", "alloc");
	CRATE("<<app::A as app::B>::Out as core::future::future::Future>::poll", "app");
	CRATE("<std::future::PollFn<app::main::{closure#0}> as core::future::future::Future>::poll",
	      "std");
	CRATE("<u32 as app::Trait>::method", "app");
	CRATE("<[u8] as core::fmt::Debug>::fmt", "core");
	CRATE("<() as app::Unit>::go", "app");
	CRATE("u32", "core");
	CRATE("()", "core");
	CRATE("[app::X; 4]", "app");
	CRATE("(app::A, tokio::B)", "app");
	CRATE("::std::io::Error", "std");
	CRATE("caf\xc3\xa9::x", "caf\xc3\xa9");
	CRATE("{impl#0}::poll", "");
	CRATE("", "");
	CRATE(NULL, "");
	CRATE("<", "");
	CRATE("&mut ", "");
	CRATE("dyn ", "");
	CRATE("for<'a", "");

	rust_path__crate("tokio::x", small, sizeof(small));
	CHECK_STR(small, "tok");
	small[0] = 'z';
	rust_path__crate("tokio::x", small, 0); /* len 0: untouched, no crash */
	CHECK(small[0] == 'z');
	rust_path__crate("tokio::x", NULL, 10);
}

static void check_strict(const char *path, const char *expected, int line)
{
	char buf[64];

	memset(buf, 'x', sizeof(buf));
	rust_path__crate_strict(path, buf, sizeof(buf));
	if (strcmp(buf, expected))
		fprintf(stderr, "  (rust_path__crate_strict called from line %d)\n", line);
	CHECK_STR(buf, expected);
}

#define STRICT(path, expected) check_strict(path, expected, __LINE__)

/* Names read from symbols: a generic parameter of a blanket impl is no crate. */
static void test_crate_names_strict(void)
{
	STRICT("<&mut F as core::future::future::Future>::poll", "");
	STRICT("<core::pin::Pin<P> as core::future::future::Future>::poll", "core");
	STRICT("<handwritten::Join2<A,B> as core::future::future::Future>::poll", "handwritten");
	STRICT("tokio_mt::leaf::{{closure}}", "tokio_mt");
	STRICT("<u32 as app::Trait>::method", "app");
	STRICT("u32", "core");
	STRICT("app", "");
	STRICT("main", "");
	STRICT("_ZN3foo3barEv", "");
	STRICT("{async_fn#0}", "");
	STRICT(NULL, "");
}

static void test_classify(void)
{
	static const char *const std_names[] = {"std",
						"core",
						"alloc",
						"proc_macro",
						"test",
						"std_detect",
						"panic_unwind",
						"panic_abort",
						"compiler_builtins",
						"rustc_std_workspace_core"};
	static const char *const runtime_names[] = {
	    "tokio",
	    "tokio_util",
	    "tokio_stream",
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
	    "blocking",
	    "smol",
	    "futures",
	    "futures_util",
	    "futures_core",
	    "futures_executor",
	    "futures_channel",
	    "futures_io",
	    "futures_lite",
	    "polling",
	    "mio",
	    "event_listener",
	    "pin_project_lite",
	    "actix_rt",
	    "glommio",
	    "monoio",
	    "embassy_executor",
	};
	static const char *const other_names[] = {
	    /* libraries on a runtime, not runtimes: their futures are the tasks' own */
	    "hyper",
	    "hyper_util",
	    "h2",
	    "want",
	    "tower",
	    "tower_http",
	    "reqwest",
	    "tonic",
	    "serde",
	    "log",
	    "tracing",
	    "tracing_core",
	    "bytes",
	    "parking_lot",
	    "crossbeam_channel",
	    "crossbeam_utils",
	    "once_cell",
	    "slab",
	    "socket2",
	    "libc",
	    "hashbrown",
	    "memchr",
	    "gimli",
	    "addr2line",
	    "object",
	    "miniz_oxide",
	    "adler2",
	    "rustc_demangle",
	    "",
	};
	static const char *const user_names[] = {"app",	     "demo",	   "my_service", "stdx",
						 "tokio2",   "core_utils", "mytokio",	 "futuresx",
						 "crossbeam" /* listed: other */};

	for (size_t i = 0; i < sizeof(std_names) / sizeof(std_names[0]); i++)
		CHECK_STR(crate_class__name(crate__classify(std_names[i])), "std");
	for (size_t i = 0; i < sizeof(runtime_names) / sizeof(runtime_names[0]); i++)
		CHECK_STR(crate_class__name(crate__classify(runtime_names[i])), "runtime");
	for (size_t i = 0; i < sizeof(other_names) / sizeof(other_names[0]); i++)
		CHECK_STR(crate_class__name(crate__classify(other_names[i])), "dependency");
	/* names that merely resemble listed ones are the user's */
	for (size_t i = 0; i + 1 < sizeof(user_names) / sizeof(user_names[0]); i++)
		CHECK_STR(crate_class__name(crate__classify(user_names[i])), "user");
	CHECK(crate__classify("crossbeam") == CRATE_OTHER);
	CHECK(crate__classify(NULL) == CRATE_OTHER);
}

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_glob(void)
{
	/* stars cross "::", '<', '>' */
	CHECK(glob__match("*", ""));
	CHECK(glob__match("*", "app::x"));
	CHECK(glob__match("app::*", "app::fetch::{async_fn_env#0}"));
	CHECK(glob__match("*::fetch::*", "app::fetch::{async_fn_env#0}"));
	CHECK(glob__match("*Sleep*",
			  "<tokio::time::sleep::Sleep as core::future::future::Future>::poll"));
	CHECK(glob__match("<*as*Future>::poll",
			  "<tokio::time::sleep::Sleep as core::future::future::Future>::poll"));
	CHECK(glob__match("app::generic<*>", "app::generic<alloc::vec::Vec<u8>>"));
	CHECK(glob__match("**a**", "xay"));
	CHECK(glob__match("app::*::{async_fn_env#0}", "app::a::b::{async_fn_env#0}"));
	/* whole-string match */
	CHECK(!glob__match("app", "app::x"));
	CHECK(!glob__match("*::fetch", "app::fetcher"));
	CHECK(!glob__match("app::*", "myapp::x"));
	CHECK(glob__match("", ""));
	CHECK(!glob__match("", "a"));
	CHECK(!glob__match("a", ""));
	/* '?' is one character, a UTF-8 sequence counting as one */
	CHECK(glob__match("?", "a"));
	CHECK(!glob__match("?", ""));
	CHECK(!glob__match("?", "ab"));
	CHECK(glob__match("caf?", "caf\xc3\xa9"));
	CHECK(glob__match("caf?::x", "caf\xc3\xa9::x"));
	CHECK(glob__match("{async_fn_env#?}", "{async_fn_env#7}"));
	CHECK(glob__match("?", "\xff")); /* a malformed byte is one character too */
	/* classes */
	CHECK(glob__match("[abc]x", "bx"));
	CHECK(!glob__match("[abc]x", "dx"));
	CHECK(glob__match("[a-z]*", "tokio"));
	CHECK(!glob__match("[a-z]*", "Tokio"));
	CHECK(glob__match("[!a-z]*", "Tokio"));
	CHECK(!glob__match("[!a-z]*", "tokio"));
	CHECK(glob__match("[^0-9]", "x"));
	CHECK(!glob__match("[^0-9]", "5"));
	CHECK(glob__match("[]]", "]"));
	CHECK(glob__match("[!]]", "a"));
	CHECK(!glob__match("[!]]", "]"));
	CHECK(glob__match("[a-]", "-"));
	CHECK(glob__match("[\\]]", "]"));
	CHECK(glob__match("[\xce\xb1-\xcf\x89]", "\xce\xb2")); /* [α-ω] matches β */
	CHECK(!glob__match("[\xce\xb1-\xcf\x89]", "b"));
	CHECK(glob__match("x[0-9][0-9]", "x42"));
	/* an unterminated '[' is a literal */
	CHECK(glob__match("[", "["));
	CHECK(glob__match("a[b", "a[b"));
	CHECK(!glob__match("a[b", "ab"));
	CHECK(glob__match("*[", "xx["));
	/* escapes */
	CHECK(glob__match("\\*", "*"));
	CHECK(!glob__match("\\*", "a"));
	CHECK(glob__match("a\\?", "a?"));
	CHECK(!glob__match("a\\?", "ab"));
	CHECK(glob__match("\\[x]", "[x]"));
	CHECK(glob__match("a\\", "a\\")); /* trailing backslash: itself */
	CHECK(!glob__match(NULL, "a"));
	CHECK(!glob__match("a", NULL));

	/* pathological patterns stay polynomial */
	size_t n = 200000;
	char *text = malloc(n + 2);
	memset(text, 'a', n);
	text[n] = '\0';
	double t0 = now_seconds();
	CHECK(!glob__match("a*a*a*a*a*a*a*a*b", text));
	CHECK(!glob__match("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b*", text));
	CHECK(glob__match("a*a*a*a*a*a*a*a*a", text));
	CHECK(!glob__match("*[b-z]*", text));
	text[n] = 'b';
	text[n + 1] = '\0';
	CHECK(glob__match("a*a*a*a*a*a*a*a*b", text));
	double elapsed = now_seconds() - t0;
	if (elapsed >= 2.0)
		fprintf(stderr, "  glob: pathological patterns took %.2f s\n", elapsed);
	CHECK(elapsed < 2.0);
	free(text);
}

static void test_default_selection(void)
{
	struct model m;
	struct selection s;

	build_model(&m);
	CHECK_EQ_U64(selection__init(&s, &m), 0);
	CHECK_EQ_U64(s.nr, NR_F);
	CHECK_EQ_U64(selection__count(&s), 0);
	/* user futures with code: out-of-line polls, and the inlined-only one; not dead */
	CHECK_EQ_U64(selection__add_default(&s, &m, false), 7);
	CHECK_EQ_U64(mask(&s), BIT(F_MAIN) | BIT(F_HANDLER) | BIT(F_FETCH) | BIT(F_PING) |
				   BIT(F_PONG) | BIT(F_WORKER) | BIT(F_INLINED));
	CHECK_EQ_U64(selection__add_default(&s, &m, false), 0); /* nothing new */
	/* all crates: add std, runtime and dependency futures; still not the dead one */
	CHECK_EQ_U64(selection__add_default(&s, &m, true), 4);
	CHECK_EQ_U64(selection__count(&s), NR_F - 1);
	CHECK(!s.futures[F_DEAD]);
	selection__free(&s);
	selection__free(&s); /* idempotent */

	/* an empty model */
	struct model empty;
	model__init(&empty);
	model__finish(&empty);
	CHECK_EQ_U64(selection__init(&s, &empty), 0);
	CHECK_EQ_U64(selection__add_default(&s, &empty, true), 0);
	CHECK_EQ_U64(selection__add_pattern(&s, &empty, "*"), 0);
	selection__expand(&s, &empty, EXPAND_BOTH);
	CHECK_EQ_U64(selection__count(&s), 0);
	selection__free(&s);
	model__free(&empty);
	model__free(&m);
}

static unsigned pattern_mask(const struct model *m, const char *pattern, uint32_t *matched)
{
	struct selection s;
	unsigned bits;

	if (selection__init(&s, m))
		abort();
	*matched = selection__add_pattern(&s, m, pattern);
	bits = mask(&s);
	selection__free(&s);
	return bits;
}

static void test_pattern_selection(void)
{
	struct model m;
	struct selection s;
	uint32_t n;

	build_model(&m);
	/* the display name of an async fn env */
	CHECK_EQ_U64(pattern_mask(&m, "app::fetch", &n), BIT(F_FETCH));
	CHECK_EQ_U64(n, 1);
	/* the display name of a block */
	CHECK_EQ_U64(pattern_mask(&m, "app::main::{async_block#0}", &n), BIT(F_MAIN));
	/* the path */
	CHECK_EQ_U64(pattern_mask(&m, "app::fetch::{async_fn_env#0}", &n), BIT(F_FETCH));
	/* any crate, when asked for explicitly */
	CHECK_EQ_U64(pattern_mask(&m, "tokio::*", &n), BIT(F_SLEEP) | BIT(F_JOIN));
	CHECK_EQ_U64(n, 2);
	/* only poll fn names say {async_fn#N}: futures with polls, inlined ones included */
	CHECK_EQ_U64(pattern_mask(&m, "app::*::{async_fn#0}", &n),
		     BIT(F_HANDLER) | BIT(F_FETCH) | BIT(F_PING) | BIT(F_PONG) | BIT(F_WORKER) |
			 BIT(F_INLINED));
	CHECK_EQ_U64(n, 6);
	CHECK_EQ_U64(pattern_mask(&m, "<tokio::time::*>::poll", &n), BIT(F_SLEEP));
	/* a linkage name, as perf or a backtrace shows it */
	CHECK_EQ_U64(pattern_mask(&m, "_ZN3app5fetch*", &n), BIT(F_FETCH));
	/* patterns match even futures without code; the dead one is the user's own */
	CHECK_EQ_U64(pattern_mask(&m, "app::*", &n), BIT(F_MAIN) | BIT(F_HANDLER) | BIT(F_FETCH) |
							 BIT(F_PING) | BIT(F_PONG) | BIT(F_WORKER) |
							 BIT(F_INLINED) | BIT(F_DEAD));
	CHECK_EQ_U64(pattern_mask(&m, "nothing::*", &n), 0);
	CHECK_EQ_U64(n, 0);
	/* Instrumented<app::worker..> contains app::worker, but does not match app::worker */
	CHECK_EQ_U64(pattern_mask(&m, "app::worker", &n), BIT(F_WORKER));
	CHECK_EQ_U64(pattern_mask(&m, "*app::worker*", &n), BIT(F_WORKER) | BIT(F_INSTRUMENTED));

	/* count is of matches, including already selected ones; selection accumulates */
	CHECK_EQ_U64(selection__init(&s, &m), 0);
	CHECK_EQ_U64(selection__add_pattern(&s, &m, "app::fetch"), 1);
	CHECK_EQ_U64(selection__add_pattern(&s, &m, "app::f*"), 1);
	CHECK_EQ_U64(selection__add_pattern(&s, &m, "*Sleep"), 1);
	CHECK_EQ_U64(selection__add_pattern(&s, &m, NULL), 0);
	CHECK_EQ_U64(mask(&s), BIT(F_FETCH) | BIT(F_SLEEP));
	selection__free(&s);
	model__free(&m);
}

static unsigned expand_mask(const struct model *m, unsigned seeds, enum expand_dir dir)
{
	struct selection s;
	unsigned bits;

	if (selection__init(&s, m))
		abort();
	for (int i = 0; i < NR_F; i++)
		s.futures[i] = seeds & BIT(i);
	selection__expand(&s, m, dir);
	bits = mask(&s);
	selection__free(&s);
	return bits;
}

static void test_expand(void)
{
	struct model m;

	build_model(&m);
	/* expected sets read off the graph at the top of this file */
	CHECK_EQ_U64(expand_mask(&m, BIT(F_FETCH), EXPAND_NONE), BIT(F_FETCH));
	CHECK_EQ_U64(expand_mask(&m, BIT(F_FETCH), EXPAND_UP),
		     BIT(F_FETCH) | BIT(F_HANDLER) | BIT(F_MAIN));
	CHECK_EQ_U64(expand_mask(&m, BIT(F_FETCH), EXPAND_DOWN),
		     BIT(F_FETCH) | BIT(F_SLEEP) | BIT(F_READY));
	CHECK_EQ_U64(expand_mask(&m, BIT(F_FETCH), EXPAND_BOTH),
		     BIT(F_FETCH) | BIT(F_HANDLER) | BIT(F_MAIN) | BIT(F_SLEEP) | BIT(F_READY));
	/* through the ping <-> pong cycle */
	CHECK_EQ_U64(expand_mask(&m, BIT(F_PING), EXPAND_UP),
		     BIT(F_PING) | BIT(F_PONG) | BIT(F_HANDLER) | BIT(F_MAIN));
	CHECK_EQ_U64(expand_mask(&m, BIT(F_PING), EXPAND_DOWN),
		     BIT(F_PING) | BIT(F_PONG) | BIT(F_SLEEP));
	/* both = up ∪ down of the seeds: not down of up (that would add fetch, ready, join) */
	CHECK_EQ_U64(expand_mask(&m, BIT(F_PING), EXPAND_BOTH),
		     BIT(F_PING) | BIT(F_PONG) | BIT(F_HANDLER) | BIT(F_MAIN) | BIT(F_SLEEP));
	/* a leaf awaited from two places */
	CHECK_EQ_U64(expand_mask(&m, BIT(F_SLEEP), EXPAND_UP), BIT(F_SLEEP) | BIT(F_FETCH) |
								   BIT(F_PONG) | BIT(F_PING) |
								   BIT(F_HANDLER) | BIT(F_MAIN));
	CHECK_EQ_U64(expand_mask(&m, BIT(F_SLEEP), EXPAND_DOWN), BIT(F_SLEEP));
	/* the other task; the unresolved edge from handler leads nowhere */
	CHECK_EQ_U64(expand_mask(&m, BIT(F_INLINED), EXPAND_UP),
		     BIT(F_INLINED) | BIT(F_WORKER) | BIT(F_INSTRUMENTED));
	CHECK_EQ_U64(expand_mask(&m, BIT(F_MAIN), EXPAND_DOWN),
		     BIT(F_MAIN) | BIT(F_HANDLER) | BIT(F_FETCH) | BIT(F_SLEEP) | BIT(F_READY) |
			 BIT(F_PING) | BIT(F_PONG) | BIT(F_JOIN));
	/* several seeds at once, and nothing selected */
	CHECK_EQ_U64(expand_mask(&m, BIT(F_JOIN) | BIT(F_WORKER), EXPAND_BOTH),
		     BIT(F_JOIN) | BIT(F_MAIN) | BIT(F_WORKER) | BIT(F_INSTRUMENTED) |
			 BIT(F_INLINED));
	CHECK_EQ_U64(expand_mask(&m, BIT(F_DEAD), EXPAND_BOTH), BIT(F_DEAD));
	CHECK_EQ_U64(expand_mask(&m, 0, EXPAND_BOTH), 0);

	/* edges pointing outside the model are ignored, not followed */
	struct await_edge *e = model__add_edge(&m);
	e->from = F_DEAD;
	e->to = 1000;
	e = model__add_edge(&m);
	e->from = -7;
	e->to = F_DEAD;
	CHECK_EQ_U64(expand_mask(&m, BIT(F_DEAD), EXPAND_BOTH), BIT(F_DEAD));
	model__free(&m);
}

/* ---------------------------------------------------------------------------------- */
/* Whitelists                                                                         */

static char *temp_path(void)
{
	const char *dir = getenv("TMPDIR");
	char *path;

	if (asprintf(&path, "%s/asyncbpf-wl-XXXXXX", dir && *dir ? dir : "/tmp") < 0)
		abort();
	int fd = mkstemp(path);
	if (fd < 0)
		abort();
	close(fd);
	return path;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		abort();
	fputs(text, f);
	fclose(f);
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;

	if (!f)
		abort();
	fseek(f, 0, SEEK_END);
	len = (size_t)ftell(f);
	rewind(f);
	buf = calloc(1, len + 64); /* room for edits that grow it */
	if (fread(buf, 1, len, f) != len)
		abort();
	fclose(f);
	return buf;
}

/* Set the "trace" flag on the line of the entry for `future` (one entry per line). */
static bool edit_trace(char *text, const char *future, bool trace)
{
	char needle[256];
	snprintf(needle, sizeof(needle), "\"future\": \"%s\"", future);
	char *at = strstr(text, needle);
	if (!at)
		return false;
	char *line = at;
	while (line > text && line[-1] != '\n')
		line--;
	char *flag = strstr(line, "\"trace\": ");
	if (!flag || flag > at)
		return false;
	flag += strlen("\"trace\": ");
	const char *now = trace ? "true" : "false";
	const char *old = trace ? "false" : "true";
	if (strncmp(flag, old, strlen(old)))
		return false;
	/* true is one character shorter than false: shift the rest of the text */
	memmove(flag + strlen(now), flag + strlen(old), strlen(flag + strlen(old)) + 1);
	memcpy(flag, now, strlen(now));
	return true;
}

static int read_into(const struct model *m, const char *path, unsigned *bits, uint32_t *unknown,
		     char *err, size_t errlen)
{
	struct selection s;
	int ret;

	if (selection__init(&s, m))
		abort();
	ret = whitelist__read(&s, m, path, unknown, err, errlen);
	*bits = mask(&s);
	selection__free(&s);
	return ret;
}

static void test_whitelist_round_trip(void)
{
	struct model m;
	struct selection s;
	char *path = temp_path();
	char err[512];
	unsigned bits;
	uint32_t unknown = 99;

	build_model(&m);
	CHECK_EQ_U64(selection__init(&s, &m), 0);
	selection__add_default(&s, &m, false);
	selection__add_pattern(&s, &m, "*Sleep");
	unsigned selected = mask(&s);

	FILE *out = fopen(path, "w");
	CHECK(out != NULL);
	CHECK_EQ_U64(whitelist__write(&m, &s, false, out), 0);
	fclose(out);

	CHECK_EQ_U64(read_into(&m, path, &bits, &unknown, err, sizeof(err)), 0);
	CHECK_EQ_U64(bits, selected);
	CHECK_EQ_U64(unknown, 0);
	CHECK_STR(err, "");

	/* what the file holds: user futures plus the selected Sleep, by crate then path */
	char *text = read_text(path);
	static const char *const order[] = {
	    "app::dead::{async_fn_env#0}",    "app::fetch::{async_fn_env#0}",
	    "app::handler::{async_fn_env#0}", "app::inlined::{async_fn_env#0}",
	    "app::main::{async_block_env#0}", "app::ping::{async_fn_env#0}",
	    "app::pong::{async_fn_env#0}",    "app::worker::{async_fn_env#0}",
	    "tokio::time::sleep::Sleep",
	};
	const char *prev = text;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		char needle[256];
		snprintf(needle, sizeof(needle), "\"future\": \"%s\"", order[i]);
		const char *at = strstr(prev, needle);
		if (!at)
			fprintf(stderr, "  whitelist: '%s' missing or out of order\n", order[i]);
		CHECK(at != NULL);
		if (at)
			prev = at;
	}
	CHECK(strstr(text, "JoinHandle") == NULL); /* runtime, not selected */
	CHECK(strstr(text, "Ready<u32>") == NULL);
	CHECK(strstr(text, "\"asyncbpf_whitelist\": 1") != NULL);
	CHECK(strstr(text, "\"build_id\": \"0123456789abcdef\"") != NULL);
	CHECK(strstr(text, "\"binary\": \"/srv/app/target/release/app\"") != NULL);
	CHECK(strstr(text, "{\"trace\": true, \"future\": \"app::fetch::{async_fn_env#0}\", "
			   "\"name\": \"app::fetch\", \"crate\": \"app\", \"class\": \"user\", "
			   "\"kind\": \"async_fn\", \"traceable\": true, \"inlined_only\": false, "
			   "\"poll\": \"app::fetch::{async_fn#0}\", \"linkage_name\": "
			   "\"_ZN3app5fetch28_$u7b$$u7b$closure$u7d$$u7d$17h3E\", "
			   "\"file\": \"src/fetch.rs\", \"line\": 7}") != NULL);
	/* inlined only: selected, not traceable, named by its inlined poll */
	CHECK(strstr(text, "{\"trace\": true, \"future\": \"app::inlined::{async_fn_env#0}\", "
			   "\"name\": \"app::inlined\", \"crate\": \"app\", \"class\": \"user\", "
			   "\"kind\": \"async_fn\", \"traceable\": false, \"inlined_only\": true, "
			   "\"poll\": \"app::inlined::{async_fn#0}\", \"linkage_name\": null, "
			   "\"file\": \"src/worker.rs\", \"line\": 30}") != NULL);
	/* no code, no file: a candidate, not traced */
	CHECK(strstr(text, "{\"trace\": false, \"future\": \"app::dead::{async_fn_env#0}\", "
			   "\"name\": \"app::dead\", \"crate\": \"app\", \"class\": \"user\", "
			   "\"kind\": \"async_fn\", \"traceable\": false, \"inlined_only\": false, "
			   "\"poll\": null, \"linkage_name\": null, \"file\": null, "
			   "\"line\": null}") != NULL);

	/* edit: untrace fetch, trace dead */
	CHECK(edit_trace(text, "app::fetch::{async_fn_env#0}", false));
	CHECK(edit_trace(text, "app::dead::{async_fn_env#0}", true));
	write_text(path, text);
	CHECK_EQ_U64(read_into(&m, path, &bits, &unknown, err, sizeof(err)), 0);
	CHECK_EQ_U64(bits, (selected & ~BIT(F_FETCH)) | BIT(F_DEAD));
	CHECK_EQ_U64(unknown, 0);
	free(text);

	/* reading adds to what is already selected */
	selection__free(&s);
	CHECK_EQ_U64(selection__init(&s, &m), 0);
	selection__add_pattern(&s, &m, "app::fetch");
	CHECK_EQ_U64(whitelist__read(&s, &m, path, NULL, NULL, 0), 0);
	CHECK(s.futures[F_FETCH]);
	CHECK(s.futures[F_DEAD]);

	/* all crates: every future is a candidate; the file stays stable when rewritten */
	char *path2 = temp_path();
	out = fopen(path2, "w");
	CHECK_EQ_U64(whitelist__write(&m, &s, true, out), 0);
	fclose(out);
	text = read_text(path2);
	for (int i = 0; i < NR_F; i++) {
		char needle[256];
		snprintf(needle, sizeof(needle), "\"future\": \"%s\"", spec[i].path);
		CHECK(strstr(text, needle) != NULL);
	}
	/* core < tokio < tracing, and app first */
	CHECK(strstr(text, "\"app::worker") < strstr(text, "\"core::future"));
	CHECK(strstr(text, "\"core::future") < strstr(text, "\"tokio::runtime"));
	CHECK(strstr(text, "\"tokio::time") < strstr(text, "\"tracing::instrument"));
	free(text);
	unsigned before = mask(&s);
	CHECK_EQ_U64(read_into(&m, path2, &bits, &unknown, err, sizeof(err)), 0);
	CHECK_EQ_U64(bits, before);

	/* a write error is reported */
	FILE *full = fopen("/dev/full", "w");
	if (full) {
		CHECK_EQ_U64((uint64_t)(int64_t)whitelist__write(&m, &s, true, full),
			     (uint64_t)(int64_t)-EIO);
		fclose(full);
	}

	selection__free(&s);
	unlink(path);
	unlink(path2);
	free(path);
	free(path2);
	model__free(&m);
}

static void test_whitelist_unknown(void)
{
	struct model m;
	char *path = temp_path();
	char err[512];
	unsigned bits;
	uint32_t unknown;

	build_model(&m);
	/*
	 * gone: not in the binary (counted, named); renamed: its path changed but its
	 * poll's linkage name still matches; false entries that match are not unknown.
	 */
	write_text(path,
		   "{\"asyncbpf_whitelist\": 1, \"binary\": \"x\", \"futures\": [\n"
		   " {\"future\": \"app::ping::{async_fn_env#0}\", \"trace\": false},\n"
		   " {\"future\": \"app::gone::{async_fn_env#0}\", \"trace\": true},\n"
		   " {\"future\": \"app::renamed\", \"trace\": true, \"linkage_name\": "
		   "\"_ZN3app5fetch28_$u7b$$u7b$closure$u7d$$u7d$17h3E\"},\n"
		   " {\"future\": \"app::also_gone\", \"trace\": false, \"linkage_name\": null},\n"
		   " {\"future\": \"tokio::time::sleep::Sleep\", \"trace\": true, \"extra\": [1]}\n"
		   "], \"unknown_top_level_key\": {}}\n");
	CHECK_EQ_U64(read_into(&m, path, &bits, &unknown, err, sizeof(err)), 0);
	CHECK_EQ_U64(bits, BIT(F_FETCH) | BIT(F_SLEEP));
	CHECK_EQ_U64(unknown, 2);
	CHECK(strstr(err, "futures[1]") != NULL);
	CHECK(strstr(err, "app::gone::{async_fn_env#0}") != NULL);

	/* an empty list is valid */
	write_text(path, "{\"asyncbpf_whitelist\": 1, \"futures\": []}");
	CHECK_EQ_U64(read_into(&m, path, &bits, &unknown, err, sizeof(err)), 0);
	CHECK_EQ_U64(bits, 0);
	CHECK_EQ_U64(unknown, 0);

	unlink(path);
	free(path);
	model__free(&m);
}

static void check_rejected(const struct model *m, const char *path, const char *text, int expected,
			   const char *err_contains, int line)
{
	char err[512] = "";
	unsigned bits = 0;
	uint32_t unknown = 0;
	int ret;

	if (text)
		write_text(path, text);
	ret = read_into(m, path, &bits, &unknown, err, sizeof(err));
	if (ret != expected || !strstr(err, err_contains))
		fprintf(stderr, "  (line %d) ret %d, err '%s'\n", line, ret, err);
	CHECK_EQ_U64((uint64_t)(int64_t)ret, (uint64_t)(int64_t)expected);
	CHECK(strstr(err, err_contains) != NULL);
	CHECK_EQ_U64(bits, 0); /* a rejected file changes nothing */
}

#define REJECT(text, expected, contains)                                                           \
	check_rejected(&m, path, text, expected, contains, __LINE__)

static void test_whitelist_malformed(void)
{
	struct model m;
	char *path = temp_path();

	build_model(&m);
	REJECT("", -EINVAL, "not valid JSON at line 1");
	REJECT("hello", -EINVAL, "not valid JSON");
	REJECT(
	    "{\"asyncbpf_whitelist\": 1,\n \"futures\": [\n  {\"future\": \"a\" \"trace\": true}]}",
	    -EINVAL, "line 3");
	REJECT("{\"asyncbpf_whitelist\": 1, \"futures\": []} trailing", -EINVAL, "not valid JSON");
	REJECT("[]", -EINVAL, "must be a JSON object");
	REJECT("{\"futures\": []}", -EINVAL, "not an asyncbpf whitelist");
	REJECT("{\"asyncbpf_whitelist\": 2, \"futures\": []}", -EINVAL,
	       "is 2, this asyncbpf reads version 1");
	REJECT("{\"asyncbpf_whitelist\": \"1\", \"futures\": []}", -EINVAL, "reads version 1");
	REJECT("{\"asyncbpf_whitelist\": 1}", -EINVAL, "\"futures\" is missing");
	REJECT("{\"asyncbpf_whitelist\": 1, \"futures\": {}}", -EINVAL,
	       "\"futures\" must be an array");
	/* entry errors name the index and the field; earlier valid entries change nothing */
	REJECT("{\"asyncbpf_whitelist\": 1, \"futures\": ["
	       "{\"future\": \"app::fetch::{async_fn_env#0}\", \"trace\": true}, 7]}",
	       -EINVAL, "futures[1] must be an object");
	REJECT(
	    "{\"asyncbpf_whitelist\": 1, \"futures\": ["
	    "{\"future\": \"app::fetch::{async_fn_env#0}\", \"trace\": true}, {\"trace\": true}]}",
	    -EINVAL, "futures[1] has no \"future\"");
	REJECT("{\"asyncbpf_whitelist\": 1, \"futures\": [{\"future\": 3, \"trace\": true}]}",
	       -EINVAL, "futures[0] \"future\" must be a string");
	REJECT("{\"asyncbpf_whitelist\": 1, \"futures\": [{\"future\": \"app::fetch\"}]}", -EINVAL,
	       "futures[0] ('app::fetch') has no \"trace\"");
	REJECT("{\"asyncbpf_whitelist\": 1, \"futures\": ["
	       "{\"future\": \"app::fetch::{async_fn_env#0}\", \"trace\": true},"
	       "{\"future\": \"app::x\", \"trace\": \"yes\"}]}",
	       -EINVAL, "futures[1] ('app::x') \"trace\" must be true or false");
	REJECT("{\"asyncbpf_whitelist\": 1, \"futures\": [{\"future\": \"x\", \"trace\": 1}]}",
	       -EINVAL, "\"trace\" must be true or false");
	REJECT("{\"asyncbpf_whitelist\": 1, \"futures\": [{\"future\": \"x\", \"trace\": true, "
	       "\"linkage_name\": 5}]}",
	       -EINVAL, "\"linkage_name\" must be a string or null");

	/* a NUL byte hides the rest of the file from a C parser: refused */
	FILE *f = fopen(path, "w");
	fwrite("{\"asyncbpf_whitelist\": 1, \"futures\": []}\0junk", 1, 45, f);
	fclose(f);
	REJECT(NULL, -EINVAL, "NUL byte");

	/* deep nesting is refused by cJSON's own limit, without a stack overflow */
	size_t depth = 100000;
	char *deep = malloc(2 * depth + 1);
	memset(deep, '[', depth);
	memset(deep + depth, ']', depth);
	deep[2 * depth] = '\0';
	REJECT(deep, -EINVAL, "not valid JSON");
	free(deep);

	/* huge: refused from its size, before reading (sparse, so the test is cheap) */
	int fd = open(path, O_WRONLY | O_TRUNC);
	CHECK(fd >= 0);
	CHECK_EQ_U64(ftruncate(fd, (off_t)65 << 20), 0);
	close(fd);
	REJECT(NULL, -EFBIG, "larger than 64 MiB");

	/* huge through a pipe, where the size is unknown until read */
	char cmd[512];
	char *fifo = temp_path();
	unlink(fifo);
	if (mkfifo(fifo, 0600) == 0) {
		snprintf(cmd, sizeof(cmd), "head -c %d /dev/zero > '%s' 2>/dev/null &", 70 << 20,
			 fifo);
		CHECK_EQ_U64(system(cmd), 0);
		check_rejected(&m, fifo, NULL, -EFBIG, "larger than 64 MiB", __LINE__);
		unlink(fifo);
	}
	free(fifo);

	/* files that cannot be read */
	check_rejected(&m, "/nonexistent/wl.json", NULL, -ENOENT, "cannot open", __LINE__);
	check_rejected(&m, "/", NULL, -EISDIR, "'/'", __LINE__);

	/* NULL err and nr_unknown are fine */
	struct selection s;
	CHECK_EQ_U64(selection__init(&s, &m), 0);
	write_text(path, "nope");
	CHECK_EQ_U64((uint64_t)(int64_t)whitelist__read(&s, &m, path, NULL, NULL, 0),
		     (uint64_t)(int64_t)-EINVAL);
	selection__free(&s);

	unlink(path);
	free(path);
	model__free(&m);
}

/* A model with holes, as a symbols-only or damaged binary could give. */
static void test_null_fields(void)
{
	struct model m;
	struct selection s;
	char *path = temp_path();
	unsigned bits;
	uint32_t unknown;
	char err[256];

	model__init(&m);
	struct future *f = model__add_future(&m); /* [0] no path, no crate, no file */
	f->crate_class = CRATE_USER;
	f = model__add_future(&m); /* [1] a path, crate left NULL */
	f->path = strpool__intern(&m.strings, "app::x::{async_fn_env#0}");
	f->crate_class = CRATE_USER;
	struct poll_fn *p = model__add_poll(&m); /* no name, no linkage name */
	p->future = 0;
	p = model__add_poll(&m);
	p->future = 1;
	p = model__add_poll(&m); /* points nowhere */
	p->future = 77;
	p->name = strpool__intern(&m.strings, "app::stray");
	struct await_edge *e = model__add_edge(&m);
	e->from = 0;
	e->to = 1;
	model__finish(&m);

	CHECK_EQ_U64(selection__init(&s, &m), 0);
	CHECK_EQ_U64(selection__add_pattern(&s, &m, "*"), 1); /* only [1] has a name */
	CHECK_EQ_U64(selection__add_pattern(&s, &m, "app::stray"), 0);
	CHECK_EQ_U64(selection__add_default(&s, &m, false), 1);
	CHECK_EQ_U64(mask(&s), 3);
	selection__expand(&s, &m, EXPAND_BOTH);
	FILE *out = fopen(path, "w");
	CHECK_EQ_U64(whitelist__write(&m, &s, true, out), 0); /* binary, build id: null */
	fclose(out);
	char *text = read_text(path);
	CHECK(strstr(text, "\"binary\": null") != NULL);
	CHECK(strstr(text, "\"crate\": \"app\"") != NULL); /* computed from the path */
	free(text);
	/* [0] cannot be named in a file: it is left out, [1] round-trips */
	CHECK_EQ_U64(read_into(&m, path, &bits, &unknown, err, sizeof(err)), 0);
	CHECK_EQ_U64(bits, 2);
	CHECK_EQ_U64(unknown, 0);

	/* a selection made for a bigger model is only used where both overlap */
	struct model big;
	build_model(&big);
	struct selection wide;
	CHECK_EQ_U64(selection__init(&wide, &big), 0);
	CHECK_EQ_U64(selection__add_default(&wide, &m, true), 2);
	selection__expand(&wide, &m, EXPAND_BOTH);
	CHECK_EQ_U64(selection__count(&wide), 2);
	selection__free(&wide);
	model__free(&big);

	selection__free(&s);
	unlink(path);
	free(path);
	model__free(&m);
}

int main(void)
{
	test_model_shape();
	test_crate_names();
	test_crate_names_strict();
	test_classify();
	test_glob();
	test_default_selection();
	test_pattern_selection();
	test_expand();
	test_whitelist_round_trip();
	test_whitelist_unknown();
	test_whitelist_malformed();
	test_null_fields();
	TEST_MAIN_END();
}
