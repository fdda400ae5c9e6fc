// SPDX-License-Identifier: GPL-2.0
/*
 * Static exporters: a hand-built model (with hostile strings, as a crafted binary
 * would give) written as JSON and parsed back, and as DOT and fed to `dot -Tsvg`.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analyze/disasm.h"
#include "export/export.h"
#include "model/model.h"
#include "testlib.h"

/*
 * Hostile bytes: quote, backslash, newline, control characters, DEL, a lone 0xff,
 * an overlong '/', a UTF-16 surrogate, a lead byte without continuation, valid
 * 2-, 3- and 4-byte UTF-8, U+2028, and a sequence cut at the end.
 */
#define EVIL_PREFIX                                                                                \
	"evil\"q\\b\n\x01\x1f\x7f|\xff|\xc0\xaf|\xed\xa0\x80|\xe9 caf\xc3\xa9 \xe2\x86\x92 "       \
	"\xf0\x9f\x98\x80 \xe2\x80\xa8<&mut T>"
#define EVIL_PATH EVIL_PREFIX "::{async_fn_env#0}"
#define EVIL_TAIL "tail\xe2\x82"
/* ...and what a JSON parser must give back: every ill-formed byte is U+FFFD */
#define FFFD "\xef\xbf\xbd"
#define EVIL_PREFIX_DECODED                                                                        \
	"evil\"q\\b\n\x01\x1f\x7f|" FFFD "|" FFFD FFFD "|" FFFD FFFD FFFD "|" FFFD                 \
	" caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80 \xe2\x80\xa8<&mut T>"
#define EVIL_TAIL_DECODED "tail" FFFD FFFD

#define DYN_FUTURE "core::pin::Pin<alloc::boxed::Box<dyn core::future::future::Future<Output=u32>>>"
#define BIG_NICHE  0x8000000000000001ULL /* a niche value: above 2^53 */

static struct future_state *states_alloc(uint32_t n)
{
	struct future_state *s = calloc(n, sizeof(*s));

	if (!s) {
		perror("calloc");
		exit(2);
	}
	return s;
}

/*
 * futures: 0 demo::top (root, out of line, 2 polls), 1 demo::middle (inlined only),
 * 2 evil (type only), 3 tokio Sleep (hand-written, runtime), 4 tokio::unused (type
 * only, no edges: not drawn), 5 demo::lonely (root, out of line, no edges).
 * edges: 0->1 await 0, 0->dyn await 1, 1->3 await 0, 1->2 await 1, 2->dyn await 0.
 */
static void build_model(struct model *m)
{
	struct future *f;
	struct poll_fn *p;
	struct await_edge *e;
	struct future_state *s;

	model__init(m);
	m->path = "./demo";
	m->elf_path = "/home/u/demo/target/release/demo";
	m->debuginfo_path = NULL;
	m->build_id = "0123abcd";
	m->pie = true;
	m->has_dwarf = true;
	m->debug_info_size = 123456;
	m->nr_cus = 42;
	m->nr_dies = 100000;
	m->nr_cu_errors = 1;
	m->nr_limits_hit = 2;
	model__warn(m, "CU at 0x%x: %s", 0x10, "bad \"abbrev\"\n\x02\xff");

	/* 0 */
	f = must(model__add_future(m));
	f->path = "demo::top::{async_fn_env#0}";
	f->crate = "demo";
	f->crate_class = CRATE_USER;
	f->kind = FUTURE_ASYNC_FN;
	f->die_offset = 0x1234;
	f->size = 664;
	f->has_state = true;
	f->state_offset = 656;
	f->state_size = 1;
	f->states = s = states_alloc(5);
	f->nr_states = 5;
	s[0] = (struct future_state){0,
				     STATE_UNRESUMED,
				     0,
				     "Unresumed",
				     "/home/u/demo/src/main.rs",
				     5,
				     NULL,
				     FUTURE_NO_OFFSET,
				     0,
				     NULL,
				     0};
	s[1] = (struct future_state){1,
				     STATE_RETURNED,
				     0,
				     "Returned",
				     "/home/u/demo/src/main.rs",
				     12,
				     NULL,
				     FUTURE_NO_OFFSET,
				     0,
				     NULL,
				     0};
	s[2] = (struct future_state){2,
				     STATE_PANICKED,
				     0,
				     "Panicked",
				     "/home/u/demo/src/main.rs",
				     12,
				     NULL,
				     FUTURE_NO_OFFSET,
				     0,
				     NULL,
				     0};
	s[3] = (struct future_state){3,
				     STATE_SUSPEND,
				     0,
				     "Suspend0",
				     "/home/u/demo/src/main.rs",
				     7,
				     "demo::middle::{async_fn_env#0}",
				     FUTURE_NO_OFFSET,
				     0,
				     NULL,
				     0};
	s[4] = (struct future_state){4, STATE_SUSPEND, 1,  "Suspend1", "/home/u/demo/src/main.rs",
				     9, DYN_FUTURE,    16, 16,	       NULL,
				     0};
	f->file = "/home/u/demo/src/main.rs";
	f->line = 5;
	f->drop_symbol =
	    "_ZN4core3ptr50drop_in_place$LT$demo..top..$u7b$$u7b$closure$u7d$$u7d$$GT$17h0E";
	f->drop_addr = 0x402000;

	/* 1 */
	f = must(model__add_future(m));
	f->path = "demo::middle::{async_fn_env#0}";
	f->crate = "demo";
	f->crate_class = CRATE_USER;
	f->kind = FUTURE_ASYNC_FN;
	f->size = 128;
	f->has_state = true;
	f->state_offset = 120;
	f->state_size = 1;
	f->states = s = states_alloc(1);
	f->nr_states = 1;
	s[0] = (struct future_state){
	    7, STATE_OTHER, 99, "Weird\tname", "src/lib.rs", 3, NULL, FUTURE_NO_OFFSET, 0, NULL, 0};
	f->file = "src/lib.rs";
	f->line = 3;

	/* 2: hostile */
	f = must(model__add_future(m));
	f->path = EVIL_PATH;
	f->crate = "evil\"crate\\";
	f->crate_class = CRATE_OTHER;
	f->kind = FUTURE_ASYNC_BLOCK;
	f->file = "/a/b\"c/" EVIL_TAIL;
	f->line = 77;

	/* 3 */
	f = must(model__add_future(m));
	f->path = "tokio::time::sleep::Sleep";
	f->crate = "tokio";
	f->crate_class = CRATE_RUNTIME;
	f->kind = FUTURE_HANDWRITTEN;
	f->size = 80;

	/* 4 */
	f = must(model__add_future(m));
	f->path = "tokio::unused::Thing";
	f->crate = "tokio";
	f->crate_class = CRATE_RUNTIME;
	f->kind = FUTURE_HANDWRITTEN;

	/* 5 */
	f = must(model__add_future(m));
	f->path = "demo::lonely::{async_block_env#3}";
	f->crate = "demo";
	f->crate_class = CRATE_USER;
	f->kind = FUTURE_ASYNC_BLOCK;

	/* poll 0: demo::top, out of line */
	p = must(model__add_poll(m));
	p->name = "demo::top::{async_fn#0}";
	p->linkage_name = "_ZN4demo3top28_$u7b$$u7b$closure$u7d$$u7d$17h1E";
	p->crate = "demo";
	p->crate_class = CRATE_USER;
	p->addr = 0x401000;
	p->size = 0x80;
	p->file_offset = 0x1000;
	p->file = "/home/u/demo/src/main.rs";
	p->line = 5;
	p->future = 0;
	p->exits = must(calloc(3, sizeof(*p->exits)));
	p->nr_exits = 3;
	p->exits[0] = (struct exit_site){.addr = 0x401040,
					 .file_offset = 0x1040,
					 .kind = EXIT_RET,
					 .probeable = true,
					 .cond = EXIT_COND_ALWAYS,
					 .covers = 0x401040};
	p->exits[1] = (struct exit_site){.addr = 0x401050,
					 .file_offset = 0x1050,
					 .kind = EXIT_TAIL_JMP,
					 .target = 0x405000,
					 .probeable = true,
					 .emulated = true,
					 .cond = EXIT_COND_ALWAYS,
					 .covers = 0x401050};
	p->exits[2] = (struct exit_site){.addr = 0x401060,
					 .file_offset = 0x1060,
					 .kind = EXIT_TAIL_JMP_INDIRECT,
					 .cond = EXIT_COND_ALWAYS,
					 .covers = 0x401060};
	p->entry.valid = true;
	p->entry.addr = 0x401000;
	p->entry.file_offset = 0x1000;
	p->entry.emulated = true;
	snprintf(p->entry.insn, sizeof(p->entry.insn), "push rbp");
	p->entry.sp_delta = 0;
	p->entry.self_kind = SELF_LOC_REG;
	p->entry.self_reg = DWARF_REG_RDI;
	p->self_arg_reg = DWARF_REG_RDI;
	p->self_known = true;
	p->abi.source = ABI_SOURCE_CODE;
	p->abi.code_self = DWARF_REG_RDI;
	p->abi.code_ret = RET_CONV_REGISTERS;
	p->abi.rets = 2;
	p->abi.rets_direct = 2;
	p->abi.state_via[0] = 3;

	/* poll 1: demo::middle, inlined only */
	p = must(model__add_poll(m));
	p->name = "demo::middle::{async_fn#0}";
	p->crate = "demo";
	p->crate_class = CRATE_USER;
	p->future = 1;
	p->inlined_only = true;
	p->inline_sites = must(calloc(2, sizeof(*p->inline_sites)));
	p->nr_inline_sites = 2;
	p->nr_inline_sites_total = 7;
	p->inline_sites[0] =
	    (struct inline_site){0x401010, "demo::top::{async_fn#0}", "src/main.rs", 7};
	p->inline_sites[1] = (struct inline_site){0x403010, "other\"caller", NULL, 0};
	p->self_arg_reg = DWARF_REG_RDI;

	/* poll 2: tokio Sleep, self on the stack, Poll returned in memory */
	p = must(model__add_poll(m));
	p->name = "<tokio::time::sleep::Sleep as core::future::future::Future>::poll";
	p->linkage_name = "_ZN5tokio4time5sleep5Sleep4poll17h2E";
	p->crate = "tokio";
	p->crate_class = CRATE_RUNTIME;
	p->addr = 0x7ffff7a00000ULL;
	p->size = 0x200;
	p->file_offset = 0x200000;
	p->future = 3;
	p->entry.valid = true;
	p->entry.addr = 0x7ffff7a00004ULL;
	p->entry.file_offset = 0x200004;
	p->entry.emulated = false;
	snprintf(p->entry.insn, sizeof(p->entry.insn), "mov qword ptr [rsp + 8], rdi");
	p->entry.sp_delta = -8;
	p->entry.self_kind = SELF_LOC_STACK;
	p->entry.self_sp_offset = 8;
	p->self_arg_reg = DWARF_REG_RSI;
	p->self_known = true;
	p->abi.source = ABI_SOURCE_DWARF;
	p->abi.dwarf_self = DWARF_REG_RSI;
	p->abi.rule_ret = RET_CONV_MEMORY;
	p->ret = (struct poll_layout){.known = true,
				      .size = 24,
				      .discr_offset = 0,
				      .discr_size = 8,
				      .pending_has_value = false,
				      .ready_has_value = true,
				      .ready_value = BIG_NICHE,
				      .in_memory = true,
				      .convention = RET_CONV_MEMORY};
	p->disasm_error = "capstone: bad \"insn\" at\n0x7ffff7a00100";

	/* poll 3: a second out-of-line copy of demo::top's poll */
	p = must(model__add_poll(m));
	p->name = "demo::top::{async_fn#0}";
	p->crate = "demo";
	p->crate_class = CRATE_USER;
	p->addr = 0x409000;
	p->size = 0x10;
	p->file_offset = 0x9000;
	p->future = 0;
	p->ret = (struct poll_layout){.known = true,
				      .size = 1,
				      .discr_size = 1,
				      .pending_has_value = true,
				      .pending_value = 1,
				      .ready_has_value = true,
				      .ready_value = 0,
				      .convention = RET_CONV_REGISTERS};
	p->self_arg_reg = DWARF_REG_RDI;
	p->self_known = true;
	p->abi.source = ABI_SOURCE_CODE;
	p->abi.rule_ret = RET_CONV_MEMORY; /* an older compiler's rule, overridden */
	p->abi.rule_disagrees = true;

	/* poll 4: demo::lonely */
	p = must(model__add_poll(m));
	p->name = "demo::lonely::{async_block#3}";
	p->crate = "demo";
	p->addr = 0x40a000;
	p->future = 5;
	p->self_arg_reg = DWARF_REG_RDI; /* not known: printed as null */
	p->abi.source = ABI_SOURCE_UNKNOWN;

	e = must(model__add_edge(m));
	*e = (struct await_edge){0,    1,
				 0,    "/home/u/demo/src/main.rs",
				 7,    "demo::middle::{async_fn_env#0}",
				 NULL, .steps_known = true};
	e = must(model__add_edge(m));
	*e = (struct await_edge){0,
				 -1,
				 1,
				 "/home/u/demo/src/main.rs",
				 9,
				 DYN_FUTURE,
				 NULL,
				 .steps_known = true,
				 .dyn = true,
				 .nr_steps = 2,
				 .steps = {{8, false}, {0, true}}};
	e = must(model__add_edge(m));
	*e = (struct await_edge){1,
				 3,
				 0,
				 "src/lib.rs",
				 4,
				 "tokio::time::sleep::Sleep",
				 "core::pin::Pin<&mut tokio::time::sleep::Sleep>",
				 .steps_known = false};
	e = must(model__add_edge(m));
	*e = (struct await_edge){1, 2, 1, "src/lib.rs", 5, EVIL_PATH, NULL, .steps_known = false};
	e = must(model__add_edge(m));
	*e =
	    (struct await_edge){2, -1, 0, NULL, 0, DYN_FUTURE, "evil\\via\"", .steps_known = false};

	model__finish(m);
}

/* ---- JSON helpers: "(missing)" / "(null)" instead of NULL so CHECK_STR can print */

static const cJSON *get(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *sget(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);

	if (!v)
		return "(missing)";
	if (cJSON_IsNull(v))
		return "(null)";
	if (!cJSON_IsString(v))
		return "(not a string)";
	return v->valuestring;
}

/* numbers the test compares are all below 2^53: exact in a double */
static uint64_t nget(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);

	return cJSON_IsNumber(v) ? (uint64_t)v->valuedouble : 0xdeadbeefULL;
}

static int64_t iget(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);

	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -999999;
}

static bool is_null(const cJSON *o, const char *key)
{
	return cJSON_IsNull(get(o, key));
}

static bool bget(const cJSON *o, const char *key, bool *value)
{
	const cJSON *v = get(o, key);

	if (!cJSON_IsBool(v))
		return false;
	*value = cJSON_IsTrue(v);
	return true;
}

#define CHECK_BOOL(obj, key, expected)                                                             \
	do {                                                                                       \
		bool _v = !(expected);                                                             \
		CHECK(bget((obj), (key), &_v));                                                    \
		CHECK(_v == (expected));                                                           \
	} while (0)

static int array_size(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);

	return cJSON_IsArray(v) ? cJSON_GetArraySize(v) : -1;
}

static const cJSON *at(const cJSON *o, const char *key, int i)
{
	return cJSON_GetArrayItem(get(o, key), i);
}

/*
 * Output bytes must be UTF-8 without raw control characters except line breaks (and
 * tabs, which the DOT writer indents with).
 */
static bool bytes_clean(const char *buf, size_t len, bool allow_tab)
{
	const unsigned char *s = (const unsigned char *)buf;

	for (size_t i = 0; i < len;) {
		unsigned char c = s[i];
		size_t n = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
		if (!n || i + n > len || (c < 0x20 && c != '\n' && !(allow_tab && c == '\t')) ||
		    c == 0x7f)
			return false;
		for (size_t k = 1; k < n; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
		i += n;
	}
	return true;
}

static bool have_command(const char *name)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", name);
	return system(cmd) == 0;
}

/* Pipe buf into a shell command; returns its exit status (-1 on failure). */
static int pipe_to(const char *cmd, const char *buf, size_t len)
{
	FILE *p = popen(cmd, "w");

	if (!p)
		return -1;
	fwrite(buf, 1, len, p);
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *write_json(const struct model *m, size_t *len, int *err)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f) {
		perror("open_memstream");
		exit(2);
	}
	*err = export_json__write(m, f);
	fclose(f);
	return buf;
}

static void test_json(void)
{
	struct model m;
	size_t len = 0;
	int err;

	build_model(&m);
	char *buf = write_json(&m, &len, &err);
	CHECK_EQ_U64(err, 0);
	CHECK(buf && len > 0);
	CHECK(bytes_clean(buf, len, false));

	const char *end = NULL;
	cJSON *root = cJSON_ParseWithOpts(buf, &end, 1);
	CHECK(root != NULL);
	if (!root) {
		fprintf(stderr, "cJSON parse failed near: %.60s\n", end ? end : "?");
		free(buf);
		model__free(&m);
		return;
	}

	/* a strict parser too, when there is one */
	if (have_command("python3"))
		CHECK_EQ_U64(pipe_to("python3 -c 'import json,sys; "
				     "json.loads(sys.stdin.buffer.read().decode(\"utf-8\"))'",
				     buf, len),
			     0);
	else
		fprintf(stderr, "test_export: python3 not found: strict JSON check skipped\n");

	/* a niche above 2^53 is written exactly, not rounded through a double */
	CHECK(strstr(buf, "\"ready_value\":9223372036854775809") != NULL);

	CHECK_STR(sget(root, "schema"), "asyncbpf-model/1");

	const cJSON *bin = get(root, "binary");
	CHECK_STR(sget(bin, "path"), "./demo");
	CHECK_STR(sget(bin, "elf_path"), "/home/u/demo/target/release/demo");
	CHECK(is_null(bin, "debuginfo_path"));
	CHECK_STR(sget(bin, "build_id"), "0123abcd");
	CHECK_BOOL(bin, "pie", true);
	CHECK_BOOL(bin, "has_dwarf", true);
	CHECK_BOOL(bin, "symbols_only", false);
	CHECK_EQ_U64(nget(bin, "debug_info_size"), 123456);

	const cJSON *st = get(root, "stats");
	CHECK_EQ_U64(nget(st, "compile_units"), 42);
	CHECK_EQ_U64(nget(st, "dies"), 100000);
	CHECK_EQ_U64(nget(st, "cu_errors"), 1);
	CHECK_EQ_U64(nget(st, "limits_hit"), 2);
	CHECK_EQ_U64(nget(st, "futures"), 6);
	CHECK_EQ_U64(nget(st, "polls"), 5);
	CHECK_EQ_U64(nget(st, "edges"), 5);
	CHECK_EQ_U64(nget(st, "roots"), 3); /* top, unused, lonely */
	CHECK_EQ_U64(nget(st, "inlined_only"), 1);

	CHECK_EQ_U64(array_size(root, "warnings"), 1);
	const cJSON *w0 = at(root, "warnings", 0);
	CHECK(cJSON_IsString(w0));
	if (cJSON_IsString(w0))
		CHECK_STR(w0->valuestring, "CU at 0x10: bad \"abbrev\"\n\x02" FFFD);

	/* futures */
	CHECK_EQ_U64(array_size(root, "futures"), 6);
	const cJSON *f0 = at(root, "futures", 0);
	CHECK_EQ_U64(nget(f0, "id"), 0);
	CHECK_STR(sget(f0, "path"), "demo::top::{async_fn_env#0}");
	CHECK_STR(sget(f0, "name"), "demo::top");
	CHECK_STR(sget(f0, "crate"), "demo");
	CHECK_STR(sget(f0, "crate_class"), "user");
	CHECK_STR(sget(f0, "kind"), "async_fn");
	CHECK_EQ_U64(nget(f0, "die_offset"), 0x1234);
	CHECK_EQ_U64(nget(f0, "size"), 664);
	CHECK_EQ_U64(nget(get(f0, "state"), "offset"), 656);
	CHECK_EQ_U64(nget(get(f0, "state"), "size"), 1);
	CHECK_EQ_U64(array_size(f0, "states"), 5);
	const cJSON *s0 = at(f0, "states", 0), *s4 = at(f0, "states", 4);
	CHECK_EQ_U64(nget(s0, "discr"), 0);
	CHECK_STR(sget(s0, "kind"), "unresumed");
	CHECK(get(s0, "index") == NULL); /* only for suspend states */
	CHECK_STR(sget(s0, "name"), "Unresumed");
	CHECK_EQ_U64(nget(s0, "line"), 5);
	CHECK(is_null(s0, "awaitee"));
	CHECK(is_null(s0, "awaitee_offset") && is_null(s0, "awaitee_size"));
	CHECK_EQ_U64(nget(s4, "discr"), 4);
	CHECK_STR(sget(s4, "kind"), "suspend");
	CHECK_EQ_U64(nget(s4, "index"), 1);
	CHECK_STR(sget(s4, "name"), "Suspend1");
	CHECK_STR(sget(s4, "file"), "/home/u/demo/src/main.rs");
	CHECK_EQ_U64(nget(s4, "line"), 9);
	CHECK_STR(sget(s4, "awaitee"), DYN_FUTURE);
	CHECK_EQ_U64(nget(s4, "awaitee_offset"), 16);
	CHECK_EQ_U64(nget(s4, "awaitee_size"), 16);
	CHECK_STR(sget(f0, "file"), "/home/u/demo/src/main.rs");
	CHECK_EQ_U64(nget(f0, "line"), 5);
	CHECK_STR(sget(get(f0, "drop_in_place"), "symbol"),
		  "_ZN4core3ptr50drop_in_place$LT$demo..top..$u7b$$u7b$closure$u7d$$u7d$$GT$17h0E");
	CHECK_EQ_U64(nget(get(f0, "drop_in_place"), "addr"), 0x402000);
	CHECK_EQ_U64(nget(f0, "poll"), 0);
	CHECK_EQ_U64(array_size(f0, "polls"), 2);
	CHECK_EQ_U64(cJSON_GetArrayItem(get(f0, "polls"), 0)->valuedouble, 0);
	CHECK_EQ_U64(cJSON_GetArrayItem(get(f0, "polls"), 1)->valuedouble, 3);
	CHECK_BOOL(f0, "inlined_only", false);
	CHECK_BOOL(f0, "root", true);

	const cJSON *f1 = at(root, "futures", 1);
	CHECK_STR(sget(f1, "name"), "demo::middle");
	CHECK(is_null(f1, "poll"));
	CHECK_EQ_U64(array_size(f1, "polls"), 1);
	CHECK_BOOL(f1, "inlined_only", true);
	CHECK_BOOL(f1, "root", false);
	CHECK(is_null(f1, "drop_in_place"));
	CHECK_STR(sget(at(f1, "states", 0), "kind"), "other");
	CHECK_STR(sget(at(f1, "states", 0), "name"), "Weird\tname");
	CHECK(get(at(f1, "states", 0), "index") == NULL);

	const cJSON *f2 = at(root, "futures", 2);
	CHECK_STR(sget(f2, "path"), EVIL_PREFIX_DECODED "::{async_fn_env#0}");
	CHECK_STR(sget(f2, "name"), EVIL_PREFIX_DECODED);
	CHECK_STR(sget(f2, "crate"), "evil\"crate\\");
	CHECK_STR(sget(f2, "crate_class"), "dependency");
	CHECK_STR(sget(f2, "kind"), "async_block");
	CHECK_STR(sget(f2, "file"), "/a/b\"c/" EVIL_TAIL_DECODED);
	CHECK(is_null(f2, "state"));
	CHECK_EQ_U64(array_size(f2, "states"), 0);
	CHECK_EQ_U64(array_size(f2, "polls"), 0);
	CHECK(is_null(f2, "poll"));

	const cJSON *f3 = at(root, "futures", 3);
	CHECK_STR(sget(f3, "name"), "tokio::time::sleep::Sleep");
	CHECK_STR(sget(f3, "kind"), "handwritten");
	CHECK_STR(sget(f3, "crate_class"), "runtime");
	CHECK_EQ_U64(nget(f3, "poll"), 2);

	CHECK_STR(sget(at(root, "futures", 5), "name"), "demo::lonely::{async_block#3}");

	/* polls */
	CHECK_EQ_U64(array_size(root, "polls"), 5);
	const cJSON *p0 = at(root, "polls", 0);
	CHECK_EQ_U64(nget(p0, "id"), 0);
	CHECK_STR(sget(p0, "name"), "demo::top::{async_fn#0}");
	CHECK_STR(sget(p0, "linkage_name"), "_ZN4demo3top28_$u7b$$u7b$closure$u7d$$u7d$17h1E");
	CHECK_STR(sget(p0, "crate"), "demo");
	CHECK_STR(sget(p0, "crate_class"), "user");
	CHECK_EQ_U64(nget(p0, "addr"), 0x401000);
	CHECK_EQ_U64(nget(p0, "size"), 0x80);
	CHECK_EQ_U64(nget(p0, "file_offset"), 0x1000);
	CHECK_STR(sget(p0, "file"), "/home/u/demo/src/main.rs");
	CHECK_EQ_U64(nget(p0, "line"), 5);
	CHECK_EQ_U64(nget(p0, "future"), 0);
	CHECK_BOOL(p0, "inlined_only", false);
	CHECK_EQ_U64(array_size(p0, "inline_sites"), 0);
	CHECK_EQ_U64(nget(p0, "inline_sites_total"), 0);
	CHECK_EQ_U64(array_size(p0, "exits"), 3);
	const cJSON *x0 = at(p0, "exits", 0), *x1 = at(p0, "exits", 1), *x2 = at(p0, "exits", 2);
	CHECK_EQ_U64(nget(x0, "addr"), 0x401040);
	CHECK_EQ_U64(nget(x0, "file_offset"), 0x1040);
	CHECK_STR(sget(x0, "kind"), "ret");
	CHECK(get(x0, "target") == NULL);
	CHECK_STR(sget(x1, "kind"), "tail_jmp");
	CHECK_EQ_U64(nget(x1, "target"), 0x405000);
	CHECK_STR(sget(x2, "kind"), "tail_jmp_indirect");
	CHECK(get(x2, "target") == NULL);
	CHECK_BOOL(x0, "probeable", true);
	CHECK_BOOL(x2, "probeable", false);
	const cJSON *e0 = get(p0, "entry");
	CHECK_EQ_U64(nget(e0, "addr"), 0x401000);
	CHECK_EQ_U64(nget(e0, "file_offset"), 0x1000);
	CHECK_BOOL(e0, "emulated", true);
	CHECK_STR(sget(e0, "insn"), "push rbp");
	CHECK_EQ_U64(iget(e0, "sp_delta"), 0);
	CHECK_STR(sget(get(e0, "self"), "kind"), "register");
	CHECK_STR(sget(get(e0, "self"), "reg"), "rdi");
	CHECK(is_null(get(e0, "self"), "sp_offset"));
	CHECK_STR(sget(p0, "self_arg_reg"), "rdi");
	const cJSON *a0 = get(p0, "abi");
	CHECK_STR(sget(a0, "source"), "code");
	CHECK_STR(sget(a0, "code_convention"), "registers");
	CHECK_STR(sget(a0, "code_self"), "rdi");
	CHECK(is_null(a0, "dwarf_self"));
	CHECK_EQ_U64(nget(a0, "rets"), 2);
	CHECK_EQ_U64(nget(a0, "rets_constant"), 2);
	CHECK_EQ_U64(nget(a0, "rets_hidden_pointer"), 0);
	CHECK_EQ_U64(nget(a0, "state_via_rdi"), 3);
	CHECK_BOOL(a0, "size_rule_overridden", false);
	CHECK(is_null(p0, "return"));
	CHECK(is_null(p0, "disasm_error"));

	const cJSON *p1 = at(root, "polls", 1);
	CHECK(is_null(p1, "linkage_name"));
	CHECK_BOOL(p1, "inlined_only", true);
	CHECK(is_null(p1, "entry"));
	CHECK_EQ_U64(array_size(p1, "inline_sites"), 2);
	CHECK_EQ_U64(nget(p1, "inline_sites_total"), 7);
	CHECK_EQ_U64(nget(at(p1, "inline_sites", 0), "addr"), 0x401010);
	CHECK_STR(sget(at(p1, "inline_sites", 0), "caller"), "demo::top::{async_fn#0}");
	CHECK_STR(sget(at(p1, "inline_sites", 0), "file"), "src/main.rs");
	CHECK_EQ_U64(nget(at(p1, "inline_sites", 0), "line"), 7);
	CHECK_STR(sget(at(p1, "inline_sites", 1), "caller"), "other\"caller");
	CHECK(is_null(at(p1, "inline_sites", 1), "file"));

	const cJSON *p2 = at(root, "polls", 2);
	CHECK_EQ_U64(nget(p2, "addr"), 0x7ffff7a00000ULL);
	CHECK_EQ_U64(nget(p2, "future"), 3);
	const cJSON *e2 = get(p2, "entry");
	CHECK_BOOL(e2, "emulated", false);
	CHECK_STR(sget(e2, "insn"), "mov qword ptr [rsp + 8], rdi");
	CHECK_EQ_U64(iget(e2, "sp_delta"), (uint64_t)-8);
	CHECK_STR(sget(get(e2, "self"), "kind"), "stack");
	CHECK(is_null(get(e2, "self"), "reg"));
	CHECK_EQ_U64(iget(get(e2, "self"), "sp_offset"), 8);
	CHECK_STR(sget(p2, "self_arg_reg"), "rsi");
	const cJSON *r2 = get(p2, "return");
	CHECK_EQ_U64(nget(r2, "size"), 24);
	CHECK_EQ_U64(nget(r2, "discr_offset"), 0);
	CHECK_EQ_U64(nget(r2, "discr_size"), 8);
	CHECK(is_null(r2, "pending_value"));
	CHECK(cJSON_IsNumber(get(r2, "ready_value")));
	CHECK_BOOL(r2, "in_memory", true);
	CHECK_STR(sget(get(p2, "abi"), "source"), "dwarf");
	CHECK_STR(sget(get(p2, "abi"), "dwarf_self"), "rsi");
	CHECK_STR(sget(get(p2, "abi"), "convention"), "memory");
	CHECK_STR(sget(p2, "disasm_error"), "capstone: bad \"insn\" at\n0x7ffff7a00100");

	const cJSON *r3 = get(at(root, "polls", 3), "return");
	CHECK_EQ_U64(nget(r3, "pending_value"), 1);
	CHECK_EQ_U64(nget(r3, "ready_value"), 0);
	CHECK_BOOL(r3, "in_memory", false);
	CHECK_BOOL(get(at(root, "polls", 3), "abi"), "size_rule_overridden", true);
	CHECK_STR(sget(get(at(root, "polls", 3), "abi"), "size_rule"), "memory");
	const cJSON *p4 = at(root, "polls", 4);
	CHECK(is_null(p4, "self_arg_reg"));
	CHECK_STR(sget(get(p4, "abi"), "source"), "unknown");

	/* edges */
	CHECK_EQ_U64(array_size(root, "edges"), 5);
	const cJSON *g0 = at(root, "edges", 0), *g1 = at(root, "edges", 1);
	const cJSON *g2 = at(root, "edges", 2), *g4 = at(root, "edges", 4);
	CHECK_EQ_U64(nget(g0, "from"), 0);
	CHECK_EQ_U64(nget(g0, "to"), 1);
	CHECK_EQ_U64(nget(g0, "await_index"), 0);
	CHECK_STR(sget(g0, "file"), "/home/u/demo/src/main.rs");
	CHECK_EQ_U64(nget(g0, "line"), 7);
	CHECK_STR(sget(g0, "awaitee_type"), "demo::middle::{async_fn_env#0}");
	CHECK(is_null(g0, "via"));
	CHECK(is_null(g1, "to"));
	CHECK_EQ_U64(nget(g1, "await_index"), 1);
	CHECK_STR(sget(g1, "awaitee_type"), DYN_FUTURE);
	/* steps: none for the future itself; in order, with their deref; null unknown */
	CHECK(cJSON_IsArray(get(g0, "steps")) && array_size(g0, "steps") == 0);
	CHECK(cJSON_IsFalse(get(g0, "dyn")) && cJSON_IsTrue(get(g1, "dyn")));
	CHECK_EQ_U64(array_size(g1, "steps"), 2);
	CHECK_EQ_U64(nget(at(g1, "steps", 0), "offset"), 8);
	CHECK(cJSON_IsFalse(get(at(g1, "steps", 0), "deref")));
	CHECK_EQ_U64(nget(at(g1, "steps", 1), "offset"), 0);
	CHECK(cJSON_IsTrue(get(at(g1, "steps", 1), "deref")));
	CHECK(is_null(g2, "steps"));
	CHECK_STR(sget(g2, "via"), "core::pin::Pin<&mut tokio::time::sleep::Sleep>");
	CHECK(is_null(g4, "file"));
	CHECK_STR(sget(g4, "via"), "evil\\via\"");

	/* roots */
	CHECK_EQ_U64(array_size(root, "roots"), 3);
	CHECK_EQ_U64(cJSON_GetArrayItem(get(root, "roots"), 0)->valuedouble, 0);
	CHECK_EQ_U64(cJSON_GetArrayItem(get(root, "roots"), 1)->valuedouble, 4);
	CHECK_EQ_U64(cJSON_GetArrayItem(get(root, "roots"), 2)->valuedouble, 5);

	cJSON_Delete(root);
	free(buf);
	model__free(&m);
}

static void test_json_empty_and_errors(void)
{
	struct model m;
	size_t len = 0;
	int err;

	model__init(&m);
	char *buf = write_json(&m, &len, &err);
	CHECK_EQ_U64(err, 0);
	cJSON *root = cJSON_ParseWithOpts(buf, NULL, 1);
	CHECK(root != NULL);
	CHECK_STR(sget(root, "schema"), "asyncbpf-model/1");
	CHECK(is_null(get(root, "binary"), "path"));
	CHECK_EQ_U64(array_size(root, "futures"), 0);
	CHECK_EQ_U64(array_size(root, "polls"), 0);
	CHECK_EQ_U64(array_size(root, "edges"), 0);
	CHECK_EQ_U64(array_size(root, "roots"), 0);
	CHECK_EQ_U64(array_size(root, "warnings"), 0);
	cJSON_Delete(root);
	free(buf);

	/* a stream that cannot be written: -EIO, for both exporters */
	FILE *ro = fopen("/dev/null", "r");
	CHECK(ro != NULL);
	if (ro) {
		CHECK_EQ_U64(export_json__write(&m, ro), (uint64_t)-EIO);
		clearerr(ro);
		CHECK_EQ_U64(export_dot__write(&m, NULL, ro), (uint64_t)-EIO);
		fclose(ro);
	}
	model__free(&m);
}

static char *write_dot(const struct model *m, const bool *selected, size_t *len, int *err)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f) {
		perror("open_memstream");
		exit(2);
	}
	*err = export_dot__write(m, selected, f);
	fclose(f);
	return buf;
}

/* `dot -Tsvg` must accept the graph and print nothing (no warnings). */
static void check_dot_renders(const char *buf, size_t len, const char *what)
{
	static int have_dot = -1;
	char path[] = "/tmp/test_export.XXXXXX";
	char cmd[512], out[4096];
	size_t n = 0;

	if (have_dot < 0) {
		have_dot = have_command("dot");
		if (!have_dot)
			fprintf(stderr, "test_export: 'dot' (graphviz) not found in PATH: "
					"rendering checks skipped\n");
	}
	if (!have_dot)
		return;

	int fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(write(fd, buf, len) == (ssize_t)len);
	close(fd);

	snprintf(cmd, sizeof(cmd), "dot -Tsvg -o /dev/null %s 2>&1", path);
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL);
	if (p) {
		n = fread(out, 1, sizeof(out) - 1, p);
		out[n] = '\0';
		int st = pclose(p);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		if (n)
			fprintf(stderr, "dot on the %s graph said: %s\n", what, out);
		CHECK_EQ_U64(n, 0);
	}
	unlink(path);
}

static bool contains(const char *buf, const char *needle)
{
	bool found = strstr(buf, needle) != NULL;

	if (!found)
		fprintf(stderr, "DOT output lacks: %s\n", needle);
	return found;
}

static void test_dot(void)
{
	struct model m;
	size_t len = 0, len2 = 0;
	int err;

	build_model(&m);
	char *buf = write_dot(&m, NULL, &len, &err);
	CHECK_EQ_U64(err, 0);
	CHECK(bytes_clean(buf, len, true));
	CHECK(strncmp(buf, "digraph asyncbpf {\n", 19) == 0);
	CHECK(len > 2 && strcmp(buf + len - 2, "}\n") == 0);

	/* clusters sorted by crate name: demo, evil"crate\, tokio */
	CHECK(contains(buf, "subgraph cluster_0 {\n\t\tlabel=\"demo\";"));
	CHECK(contains(buf, "subgraph cluster_1 {\n\t\tlabel=\"evil\\\"crate\\\\\";"));
	CHECK(contains(buf, "subgraph cluster_2 {\n\t\tlabel=\"tokio\";"));
	CHECK(strstr(buf, "cluster_3") == NULL);

	/* nodes: root doubled, inlined-only dashed, type-only dotted, unused not drawn */
	CHECK(contains(buf, "f0 [label=\"demo::top\\nsrc/main.rs:5\", "
			    "tooltip=\"demo::top::{async_fn_env#0}\", peripheries=2];"));
	CHECK(contains(buf,
		       "f1 [label=\"demo::middle\\nsrc/lib.rs:3\", "
		       "tooltip=\"demo::middle::{async_fn_env#0}\", style=\"filled,dashed\"];"));
	CHECK(contains(
	    buf,
	    "f3 [label=\"tokio::time::sleep::Sleep\", tooltip=\"tokio::time::sleep::Sleep\"];"));
	const char *f2_line = strstr(buf, "\t\tf2 [");
	const char *f2_dotted = f2_line ? strstr(f2_line, ", style=\"filled,dotted\"];\n") : NULL;
	CHECK(f2_dotted && f2_dotted < strchr(f2_line, '\n'));
	CHECK(contains(buf, "f5 [label=\"demo::lonely::{async_block#3}\", "
			    "tooltip=\"demo::lonely::{async_block_env#3}\", peripheries=2];"));
	CHECK(strstr(buf, "f4 [") == NULL);
	/* the hostile label: escaped quote/backslash, data newline as \n, control chars
	 * as \\xHH, &amp;, U+FFFD, valid UTF-8 kept; file shortened to 2 components */
	CHECK(contains(buf,
		       "f2 [label=\"evil\\\"q\\\\b\\n\\\\x01\\\\x1F\\\\x7F|" FFFD "|" FFFD FFFD
		       "|" FFFD FFFD FFFD "|" FFFD " caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80 "
		       "\xe2\x80\xa8<&amp;mut T>\\nb\\\"c/tail" FFFD FFFD ":77\""));

	/* edges: await index and line; unresolved ones to one ellipse per type */
	CHECK(contains(buf, "\tf0 -> f1 [label=\"await 0\\nline 7\"];\n"));
	CHECK(contains(buf, "\tf0 -> u0 [label=\"await 1\\nline 9\", style=dashed];\n"));
	CHECK(contains(buf, "\tf1 -> f3 [label=\"await 0\\nline 4\", tooltip=\"via "
			    "core::pin::Pin<&amp;mut tokio::time::sleep::Sleep>\"];\n"));
	CHECK(contains(buf, "\tf1 -> f2 [label=\"await 1\\nline 5\"];\n"));
	CHECK(contains(
	    buf,
	    "\tf2 -> u0 [label=\"await 0\", tooltip=\"via evil\\\\via\\\"\", style=dashed];\n"));
	CHECK(contains(buf, "\tu0 [shape=ellipse, style=dashed, label=\"" DYN_FUTURE "\""));
	CHECK(strstr(buf, "\tu1 [") == NULL); /* same type: one placeholder */
	check_dot_renders(buf, len, "full");

	/* deterministic */
	char *again = write_dot(&m, NULL, &len2, &err);
	CHECK(len == len2 && memcmp(buf, again, len) == 0);
	free(again);
	free(buf);

	/* selection: tokio's Sleep only: its awaiter middle is drawn greyed, top is not */
	bool selected[6] = {false, false, false, true, false, false};
	buf = write_dot(&m, selected, &len, &err);
	CHECK_EQ_U64(err, 0);
	CHECK(contains(buf, "f3 [label=\"tokio::time::sleep::Sleep\""));
	CHECK(contains(buf, "f1 [label=\"demo::middle\\nsrc/lib.rs:3\", "
			    "tooltip=\"demo::middle::{async_fn_env#0}\", style=\"filled,dashed\", "
			    "color=gray60, fontcolor=gray45, fillcolor=gray96];"));
	CHECK(contains(
	    buf, "\tf1 -> f3 [label=\"await 0\\nline 4\", tooltip=\"via core::pin::Pin<&amp;mut "
		 "tokio::time::sleep::Sleep>\", color=gray60, fontcolor=gray45];\n"));
	CHECK(strstr(buf, "f0 [") == NULL);
	CHECK(strstr(buf, "f2 [") == NULL);
	CHECK(strstr(buf, "f1 -> f2") == NULL); /* between unselected futures */
	CHECK(strstr(buf, "u0") == NULL);
	check_dot_renders(buf, len, "selected");
	free(buf);

	/* selection: top: its unresolved await is drawn, middle greyed */
	bool selected_top[6] = {true, false, false, false, false, false};
	buf = write_dot(&m, selected_top, &len, &err);
	CHECK_EQ_U64(err, 0);
	CHECK(contains(buf, "\tf0 -> u0 [label=\"await 1\\nline 9\", style=dashed];\n"));
	CHECK(contains(
	    buf, "\tf0 -> f1 [label=\"await 0\\nline 7\", color=gray60, fontcolor=gray45];\n"));
	CHECK(strstr(buf, "f1 -> f3") == NULL);
	CHECK(strstr(buf, "f2 -> u0") == NULL);
	check_dot_renders(buf, len, "selected-top");
	free(buf);
	model__free(&m);

	/* an empty model is still a graph */
	model__init(&m);
	buf = write_dot(&m, NULL, &len, &err);
	CHECK_EQ_U64(err, 0);
	check_dot_renders(buf, len, "empty");
	free(buf);
	model__free(&m);
}

/* A long type name is cut in labels (at a UTF-8 boundary) but kept whole in JSON. */
static void test_long_names(void)
{
	struct model m;
	char name[4000];
	size_t len = 0;
	int err;

	model__init(&m);
	memset(name, 0, sizeof(name));
	for (size_t i = 0; i + 3 < sizeof(name) - 1; i += 3)
		memcpy(name + i, "\xe2\x86\x92", 3); /* U+2192: a cut must not split it */
	struct future *f = must(model__add_future(&m));
	f->path = strpool__intern(&m.strings, name);
	f->crate = "x";
	struct await_edge *e = must(model__add_edge(&m));
	*e = (struct await_edge){0, -1, 0, "f.rs", 1, f->path, NULL, .steps_known = false};
	model__finish(&m);

	char *buf = write_dot(&m, NULL, &len, &err);
	CHECK_EQ_U64(err, 0);
	CHECK(bytes_clean(buf, len, true));
	CHECK(len < 4000 * 2);
	check_dot_renders(buf, len, "long-names");
	free(buf);

	buf = write_json(&m, &len, &err);
	CHECK_EQ_U64(err, 0);
	cJSON *root = cJSON_Parse(buf);
	CHECK(root != NULL);
	CHECK_STR(sget(at(root, "futures", 0), "path"), name);
	cJSON_Delete(root);
	free(buf);
	model__free(&m);
}

int main(void)
{
	test_json();
	test_json_empty_and_errors();
	test_dot();
	test_long_names();
	TEST_MAIN_END();
}
