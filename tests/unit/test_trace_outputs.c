// SPDX-License-Identifier: GPL-2.0
/*
 * Folded stacks and the dynamic await graph (user/export/trace_outputs.c): a hand-built model
 * (task -> middle -> leaf, a hostile name, a poll of an unknown future) and hand-made
 * polls, innermost first as the consumer hands them over, on interleaved threads:
 * self times, stacks, orphans, polls left waiting at the end, rounding, the per-thread
 * cap; node and edge counts, escaping, and `dot -Tsvg` when Graphviz is installed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "model/model.h"
#include "testlib.h"
#include "trace_model.h"
#include "export/trace_outputs.h"

#define MAIN_RS "/src/demo/src/main.rs"

static void add_future(struct model *m, const char *path, uint32_t line)
{
	struct future *f = must(model__add_future(m));

	f->path = path;
	f->crate = "demo";
	f->kind = line ? FUTURE_ASYNC_FN : FUTURE_HANDWRITTEN;
	f->poll = -1;
	f->file = line ? MAIN_RS : NULL;
	f->line = line;
}

static void build_model(struct model *m)
{
	trace_model__build(m, "evil::A;b\n\"&\xff", "<Unknown as Future>::poll", add_future);
}

#define US 1000ull
/* poll, future, tid, depth, start, end (µs), result, self, parent self, parent poll */
#define POLL(pl, fu, tid_, dep, s, e, res, slf, pself, ppoll)                                      \
	{                                                                                          \
		.start_ns = (s)*US, .end_ns = (e)*US, .pid = 1, .tid = tid_, .poll = pl,           \
		.future = fu, .self = slf, .parent_self = pself, .parent_poll = ppoll,             \
		.task_self = 0xa000, .depth = dep, .result = res, .await_index = -1                \
	}
#define NOP TRACE_NO_INDEX

static const struct trace_poll polls[] = {
    /* thread 100: task(100) -> middle(40) -> leaf(10), leaf(5) */
    POLL(2, 2, 100, 2, 10, 20, POLL_READY, 0xc000, 0xb000, 1),
    /* thread 101 interleaved: its leaf must not be adopted by thread 100's middle */
    POLL(2, 2, 101, 2, 11, 13, POLL_PENDING, 0xc000, 0xb000, 1),
    POLL(2, 2, 100, 2, 25, 30, POLL_PENDING, 0xc100, 0xb000, 1),
    POLL(1, 1, 100, 1, 5, 45, POLL_PENDING, 0xb000, 0xa000, 0),
    POLL(0, 0, 100, 0, 0, 100, POLL_PENDING, 0xa000, 0, NOP),
    /* thread 100 again: the same stacks add up */
    POLL(1, 1, 100, 1, 205, 210, POLL_READY, 0xb000, 0xa000, 0),
    POLL(0, 0, 100, 0, 200, 220, POLL_READY, 0xa000, 0, NOP),
    /* thread 102: a leaf whose parent was never traced */
    POLL(2, 2, 102, 2, 301, 304, POLL_PENDING, 0xc200, 0xdead, 1),
    POLL(0, 0, 102, 0, 300, 310, POLL_PENDING, 0xa200, 0, NOP),
    /* thread 103: the hostile future; 104: an unknown future's polls, 0.4 + 1.1 µs */
    POLL(3, 3, 103, 0, 400, 404, POLL_UNKNOWN, 0xe000, 0, NOP),
    {.start_ns = 500000,
     .end_ns = 500400,
     .tid = 104,
     .poll = 4,
     .future = NOP,
     .self = 0xf000,
     .parent_poll = NOP,
     .result = POLL_UNKNOWN,
     .await_index = -1},
    {.start_ns = 600000,
     .end_ns = 601100,
     .tid = 104,
     .poll = 4,
     .future = NOP,
     .self = 0xf000,
     .parent_poll = NOP,
     .result = POLL_UNKNOWN,
     .await_index = -1},
    /* thread 105: a poll of 0 µs is omitted */
    POLL(1, 1, 105, 0, 0, 0, POLL_READY, 0xb500, 0, NOP),
};
#define NR_POLLS (sizeof(polls) / sizeof(polls[0]))

static char *run_folded(const struct model *m, uint64_t *dropped)
{
	struct trace_folded *f = must(trace_folded__new(m));
	char *buf = NULL;
	size_t len = 0;
	FILE *out = must(open_memstream(&buf, &len));

	fputc('\n', out); /* every line is then "\n...\n" */
	for (size_t i = 0; i < NR_POLLS; i++)
		CHECK_EQ_I64(trace_folded__add(f, &polls[i]), 0);
	CHECK_EQ_I64(trace_folded__write(f, out), 0);
	*dropped = trace_folded__dropped(f);
	trace_folded__free(f);
	fclose(out);
	return buf;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_folded(const struct model *m)
{
	uint64_t dropped = 1;
	char *out = run_folded(m, &dropped);
	static const char *const lines[] = {
	    /* thread 100: 100 - 40 + 20 - 5; thread 102: 10 (its leaf is not its child) */
	    "\ndemo::task 85\n",
	    "\ndemo::task;demo::middle 30\n",		 /* 40 - 15 + 5 */
	    "\ndemo::task;demo::middle;demo::leaf 15\n", /* 10 + 5 */
	    "\n[incomplete];demo::leaf 2\n",		 /* thread 101 never finished */
	    "\n[parent not traced];demo::leaf 3\n",
	    "\nevil::A,b?\"&\xef\xbf\xbd 4\n",
	    "\n<Unknown as Future>::poll 2\n",
	};

	CHECK_EQ_U64(dropped, 0);
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		if (!strstr(out, lines[i])) {
			CHECK(!"a folded line is missing");
			fprintf(stderr, "missing %s in:%s", lines[i], out);
		}
	CHECK_EQ_I64(count_lines(out), 1 + 7);
	CHECK(!strstr(out, "demo::middle 0") && !strstr(out, " 0\n"));
	free(out);
}

static void test_folded_cap(const struct model *m)
{
	struct trace_folded *f = must(trace_folded__new(m));
	char *buf = NULL;
	size_t len = 0;
	FILE *out = must(open_memstream(&buf, &len));
	struct trace_poll leaf = POLL(2, 2, 7, 1, 0, 1, POLL_READY, 0xc000, 0xa000, 0);
	struct trace_poll task = POLL(0, 0, 7, 0, 0, 5000, POLL_READY, 0xa000, 0, NOP);
	int fails = 0;

	for (int i = 0; i < TRACE_FOLDED_MAX_PENDING + 3; i++)
		fails += trace_folded__add(f, &leaf) != 0;
	CHECK_EQ_I64(fails, 3);
	CHECK_EQ_U64(trace_folded__dropped(f), 3);
	/* the depth-0 poll always gets in and empties the list */
	CHECK_EQ_I64(trace_folded__add(f, &task), 0);
	CHECK_EQ_I64(trace_folded__add(f, &leaf), 0);
	CHECK_EQ_I64(trace_folded__write(f, out), 0);
	fclose(out);
	CHECK(strstr(buf, "demo::task 904\n") != NULL); /* 5000 - 4096 */
	CHECK(strstr(buf, "demo::task;demo::leaf 4096\n") != NULL);
	CHECK(strstr(buf, "[incomplete];demo::leaf 1\n") != NULL);
	free(buf);
	trace_folded__free(f);
}

static bool dot_renders(const char *buf, size_t len)
{
	FILE *p;
	int st;

	if (system("command -v dot >/dev/null 2>&1") != 0) {
		fprintf(stderr, "test_trace_outputs: dot not found: rendering check skipped\n");
		return true;
	}
	/* any warning on stderr fails the check, like test_export's */
	p = popen("out=$(dot -Tsvg 2>&1 >/dev/null) && [ -z \"$out\" ] || "
		  "{ echo \"$out\" >&2; exit 1; }",
		  "w");
	if (!p)
		return false;
	fwrite(buf, 1, len, p);
	st = pclose(p);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void test_dot(const struct model *m)
{
	struct trace_dot *d = must(trace_dot__new(m));
	char *buf = NULL;
	size_t len = 0;
	FILE *out = must(open_memstream(&buf, &len));

	for (size_t i = 0; i < NR_POLLS; i++)
		CHECK_EQ_I64(trace_dot__add(d, &polls[i]), 0);
	CHECK_EQ_I64(trace_dot__write(d, out), 0);
	fclose(out);
	CHECK(strncmp(buf, "digraph ", 8) == 0);
	CHECK(strstr(buf, "\tf0 [label=\"demo::task\\nsrc/main.rs:10\\npolls 3, ready 1, "
			  "pending 2\", tooltip=\"demo::task::{async_fn_env#0}\", "
			  "peripheries=2];\n") != NULL);
	CHECK(strstr(buf, "\tf1 [label=\"demo::middle\\nsrc/main.rs:20\\npolls 3, ready 2, "
			  "pending 1\"") != NULL);
	CHECK(strstr(buf, "\tf2 [label=\"demo::leaf\\nsrc/main.rs:30\\npolls 4, ready 1, "
			  "pending 3\"") != NULL);
	CHECK(strstr(buf, "\tf3 [label=\"evil::A;b\\n\\\"&amp;\xef\xbf\xbd\\npolls 1, ready 0, "
			  "pending 0, unknown 1\"") != NULL);
	CHECK(strstr(buf, "\tp4 [label=\"<Unknown as Future>::poll\\npolls 2, ready 0, pending "
			  "0, unknown 2\"") != NULL);
	CHECK(strstr(buf, "\tf0 -> f1 [label=\"2 polls\"];\n") != NULL);
	CHECK(strstr(buf, "\tf1 -> f2 [label=\"4 polls\"];\n") != NULL);
	CHECK(strstr(buf, "\tf0 -> f2") == NULL);
	CHECK(strstr(buf, "-> f0") == NULL);
	CHECK(dot_renders(buf, len));
	free(buf);
	trace_dot__free(d);
}

int main(void)
{
	struct model m;

	build_model(&m);
	test_folded(&m);
	test_folded_cap(&m);
	test_dot(&m);
	model__free(&m);
	TEST_MAIN_END();
}
