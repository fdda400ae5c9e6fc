// SPDX-License-Identifier: GPL-2.0
/*
 * SVG flame graph: the hand-made profile of profile_model.h written into memory,
 * then its boxes found by name and depth and checked against the hand-made weights:
 * merging by prefix (handler and handler' are one box; parse under fetch and parse
 * directly under handler are two), widths proportional to weight, on-CPU and
 * off-CPU as separate graphs, escaping of hostile names, the cut of huge ones,
 * omitted narrow boxes, the empty profile, write errors. tests/test_profile_writers.py
 * checks the whole geometry with an XML parser.
 *
 * `test_flamegraph_svg --write FILE` only writes the sample graph.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/profile_export.h"
#include "profile_model.h"
#include "testlib.h"
#include "lib/text.h"

#define FRAME_WIDTH 1180.0 /* 1200 px less the margins: a graph's full width */

struct box {
	double x, y, w;
	unsigned long long weight;
	bool found;
};

/* The count-th box (0: first) at depth whose title starts with title_start. */
static struct box find_box(const char *svg, unsigned depth, const char *title_start, int count)
{
	char head[64];
	struct box b = {0};

	snprintf(head, sizeof(head), "<g class=\"f\" data-d=\"%u\" data-w=\"", depth);
	for (const char *p = strstr(svg, head); p; p = strstr(p + 1, head)) {
		const char *title = strstr(p, "<title>");
		if (!title || strncmp(title + 7, title_start, strlen(title_start)) ||
		    title[7 + strlen(title_start)] != '\n')
			continue;
		if (count-- > 0)
			continue;
		const char *rect = strstr(title, "<rect ");
		b.found =
		    rect && sscanf(p + strlen(head), "%llu", &b.weight) == 1 &&
		    sscanf(rect, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\"", &b.x, &b.y, &b.w) == 3;
		return b;
	}
	return b;
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
		n++;
	return n;
}

static bool near(double a, double b)
{
	return a - b < 0.01 && b - a < 0.01;
}

static void test_profile(void)
{
	struct profile_model m;
	char *svg = NULL;
	size_t len = 0;

	profile_model__build(&m);
	FILE *f = must(open_memstream(&svg, &len));
	CHECK_EQ_I64(flamegraph_svg__write(f, &m.p, "demo <profile> & co"), 0);
	fclose(f);

	CHECK(strncmp(svg, "<?xml", 5) == 0);
	CHECK(strstr(svg, "</svg>\n") == svg + len - 7);
	CHECK(strstr(svg, "<script type=\"text/ecmascript\"><![CDATA[") != NULL);
	CHECK(strstr(svg, "http://") == strstr(svg, "http://www.w3.org/2000/svg")); /* no URL */
	CHECK(strstr(svg, ">demo &lt;profile&gt; &amp; co</text>") != NULL);

	/* on-CPU 9 boxes, off-CPU 4: see profile_model.h */
	CHECK_EQ_U64(count(svg, "<g class=\"f\""), 13);
	CHECK_EQ_U64(count(svg, "<g class=\"graph\""), 2);
	CHECK(strstr(svg, "On-CPU: 101 samples") != NULL);
	CHECK(strstr(svg, "Off-CPU: time blocked, 5.000 ms in 6 switches") != NULL);
	CHECK(strstr(svg, "7 dropped") && strstr(svg, "3 unwind failed"));
	CHECK(strstr(svg, "5 cut short by the 128 KiB stack copy"));
	CHECK(strstr(svg, "2 off-CPU blocks lost (1.500 ms)"));
	CHECK(strstr(svg, " 0 frames omitted") != NULL);

	/* on-CPU graph (the first): handler and handler' merge; widths by weight */
	struct box rt = find_box(svg, 0, "[runtime]", 0);
	struct box handler = find_box(svg, 1, "demo::handler", 0);
	struct box fetch = find_box(svg, 2, "demo::fetch", 0);
	struct box parse_in_fetch = find_box(svg, 3, "demo::parse", 0);
	struct box parse_in_handler = find_box(svg, 2, "demo::parse", 0);
	struct box utf8 = find_box(svg, 3, "core::str::from_utf8", 0);
	CHECK(rt.found && handler.found && fetch.found && parse_in_fetch.found &&
	      parse_in_handler.found && utf8.found);
	CHECK(near(rt.w, FRAME_WIDTH * 96 / 101));
	CHECK(near(handler.w, FRAME_WIDTH * 95 / 101));
	CHECK(near(fetch.w, FRAME_WIDTH * 85 / 101));
	CHECK(near(parse_in_fetch.w, FRAME_WIDTH * 55 / 101));
	CHECK(near(utf8.w, FRAME_WIDTH * 30 / 101));
	CHECK(near(parse_in_handler.w, FRAME_WIDTH * 10 / 101));
	CHECK_EQ_U64(handler.weight, 95);
	/* children sorted by name, left to right, starting at their parent's left edge */
	CHECK(near(fetch.x, handler.x));
	CHECK(near(parse_in_handler.x, fetch.x + fetch.w));
	CHECK(near(utf8.x, fetch.x));
	CHECK(near(parse_in_fetch.x, utf8.x + utf8.w));
	/* root at the bottom: deeper boxes higher up */
	CHECK(handler.y < rt.y && fetch.y < handler.y);
	/* the second [runtime] box is the off-CPU graph's, in its own graph below */
	struct box off_rt = find_box(svg, 0, "[runtime]", 1);
	struct box off_fetch = find_box(svg, 2, "demo::fetch", 1);
	struct box park = find_box(svg, 1, "tokio::runtime::park", 0);
	CHECK(off_rt.found && off_fetch.found && park.found);
	CHECK(off_rt.y > rt.y);
	CHECK(near(off_rt.w, FRAME_WIDTH));
	CHECK(near(off_fetch.w, FRAME_WIDTH * 4 / 5));
	CHECK(near(park.w, FRAME_WIDTH * 1 / 5));
	CHECK(strstr(svg, "95 samples (94.06%)") != NULL); /* handler: S4's 4 off-CPU not in */
	CHECK(strstr(svg, "4.000 ms off-CPU, 4 switches (80.00%)") != NULL);
	CHECK(strstr(svg, "55 samples (54.46%)") != NULL);
	CHECK(strstr(svg, PM_MAIN_RS ":40\n") != NULL);

	/* hostile name: entities, \xHH for the control character, U+FFFD for the rest */
	CHECK(strstr(svg, "<title>evil&lt;&amp;&quot;&apos;\\x01\xef\xbf\xbd&gt;::Fut&lt;"
			  "\xef\xbf\xbd\xef\xbf\xbd&gt;\n") != NULL);
	CHECK(strstr(svg, "/src/evil&amp;&lt;.rs:7") != NULL);
	CHECK(strstr(svg, "\x01") == NULL && strstr(svg, "\xff") == NULL);
	/* huge name: cut in the title, never whole; its 11.7 px box shows no text */
	CHECK(strstr(svg, m.huge) == NULL);
	CHECK(count(svg, "abcdefghijklmnopqrstuvwxyz") > 70);

	free(svg);
	profile_model__free(&m);
}

/* One heavy stack and a light one under it: the light one's boxes are omitted. */
static void test_omitted(void)
{
	struct pframe a = {.name = "a", .kind = PFRAME_FUNCTION}, b = a, c = a, d = a;
	const struct pframe *heavy[] = {&a, &b}, *light[] = {&a, &c, &d};
	struct pstack stacks[] = {{heavy, 2, false, 1000000, 1000000}, {light, 3, false, 1, 1}};
	struct profile_data p = {.stacks = stacks, .nstacks = 2};
	char *svg = NULL;
	size_t len = 0;

	b.name = "b";
	c.name = "c";
	d.name = "d";
	FILE *f = must(open_memstream(&svg, &len));
	CHECK_EQ_I64(flamegraph_svg__write(f, &p, NULL), 0);
	fclose(f);
	CHECK_EQ_U64(count(svg, "<g class=\"f\""), 2);	 /* a, b */
	CHECK(strstr(svg, " 2 frames omitted") != NULL); /* c, d */
	CHECK(strstr(svg, "Off-CPU") == NULL);		 /* no off-CPU stacks: no graph */
	CHECK(strstr(svg, ">asyncbpf profile</text>") != NULL);
	free(svg);
}

/* A 5000-frame stack: drawn without recursion, one row per depth. */
static void test_deep(void)
{
	enum { DEPTH = 5000 };
	struct pframe f = {.name = "recurse", .kind = PFRAME_FUNCTION, .origin = PORIGIN_USER};
	const struct pframe **frames = must(calloc(DEPTH, sizeof(*frames)));
	char *svg = NULL;
	size_t len = 0;

	for (int i = 0; i < DEPTH; i++)
		frames[i] = &f;
	struct pstack stack = {frames, DEPTH, false, 3, 3};
	struct profile_data p = {.stacks = &stack, .nstacks = 1};
	FILE *out = must(open_memstream(&svg, &len));
	CHECK_EQ_I64(flamegraph_svg__write(out, &p, NULL), 0);
	fclose(out);
	CHECK_EQ_U64(count(svg, "<g class=\"f\""), DEPTH);
	CHECK(strstr(svg, "data-d=\"4999\"") != NULL);
	free(svg);
	free(frames);
}

static void test_empty(void)
{
	struct profile_data p = {0};
	char *svg = NULL;
	size_t len = 0;

	FILE *f = must(open_memstream(&svg, &len));
	CHECK_EQ_I64(flamegraph_svg__write(f, &p, NULL), 0);
	fclose(f);
	CHECK(strstr(svg, "No samples.") != NULL);
	CHECK_EQ_U64(count(svg, "<g class=\"f\""), 0);
	CHECK(strstr(svg, "</svg>\n") != NULL);
	free(svg);
}

/* xml__write_text on its own: what the SVG's names go through. */
static void test_xml_text(void)
{
	static const struct {
		const char *in;
		size_t max;
		const char *out;
	} cases[] = {
	    {"a<b>&\"'", 100, "a&lt;b&gt;&amp;&quot;&apos;"},
	    {"tab\tnl\n\x7f", 100, "tab\\x09nl\\x0A\\x7F"},
	    {"\xef\xbf\xbe\xef\xbf\xbf", 100, "\xef\xbf\xbd\xef\xbf\xbd"}, /* not XML chars */
	    {"\xc0\xaf\xed\xa0\x80", 100,
	     "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
	    {"caf\xc3\xa9s", 4, "caf..."}, /* never cut inside a sequence */
	    {"caf\xc3\xa9s", 5, "caf\xc3\xa9..."},
	    {NULL, 10, ""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = must(open_memstream(&buf, &len));
		xml__write_text(f, cases[i].in, cases[i].max);
		fclose(f);
		CHECK_STR(buf, cases[i].out);
		free(buf);
	}
}

static void test_write_error(void)
{
	struct profile_model m;
	FILE *f = fopen("/dev/full", "w");

	if (!f) {
		fprintf(stderr, "test_flamegraph_svg: no /dev/full: write-error check skipped\n");
		return;
	}
	profile_model__build(&m);
	CHECK_EQ_I64(flamegraph_svg__write(f, &m.p, NULL), -EIO);
	fclose(f);
	profile_model__free(&m);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write") == 0) {
		struct profile_model m;
		FILE *f = fopen(argv[2], "w");
		if (!f) {
			perror(argv[2]);
			return 2;
		}
		profile_model__build(&m);
		int err = flamegraph_svg__write(f, &m.p, "demo <profile> & co");
		profile_model__free(&m);
		if (fclose(f) || err) {
			fprintf(stderr, "test_flamegraph_svg: writing %s failed: %s\n", argv[2],
				strerror(-err));
			return 1;
		}
		return 0;
	}
	test_profile();
	test_omitted();
	test_deep();
	test_empty();
	test_xml_text();
	test_write_error();
	TEST_MAIN_END();
}
