// SPDX-License-Identifier: GPL-2.0
/*
 * The session (user/session/session.c) without root: a session on this very process
 * (-p mode), its identity and names; the output table renamed into place together,
 * or every file removed when one writer failed or a file was never finished; a
 * dropped output does not fail the set; size and seconds parsing (cli/args.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/args.h"
#include "lib/exitcodes.h"
#include "lib/log.h"
#include "lib/outfile.h"
#include "session/session.h"
#include "testlib.h"

static char dir[] = "/tmp/asyncbpf-test-session-XXXXXX";

static bool exists(const char *name)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return !stat(path, &st);
}

/* Nothing but the named files (no temporary left behind). */
static int count_files(void)
{
	char cmd[512];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l", dir);
	p = popen(cmd, "r");
	if (p && fscanf(p, "%d", &n) != 1)
		n = -1;
	if (p)
		pclose(p);
	return n;
}

static struct session *open_self(void)
{
	struct session_opts o = {.cmd = "test", .verb = "testing", .pid = getpid()};
	struct session *s = NULL;

	CHECK(session__open(&o, &s) == EXIT_OK);
	return s;
}

static struct outfile *output(struct session *s, const char *name, const char *what)
{
	char path[256];
	struct outfile *o;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	o = session__output(s, path, what);
	CHECK(o != NULL);
	if (o)
		fprintf(o->f, "%s\n", name);
	return o;
}

static void test_identity(void)
{
	struct session *s = open_self();
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (!s)
		return;
	CHECK(n > 0);
	self[n > 0 ? n : 0] = '\0';
	CHECK_EQ_I64(session__pid(s), getpid());
	CHECK(!session__launched(s));
	CHECK_STR(session__exe(s), self);
	CHECK(!strncmp(session__probe_path(s), "/proc/self/fd/", 14));
	CHECK(session__comm(s)[0] != '\0' && !strchr(session__comm(s), '\n'));
	CHECK(session__check_exe(s) == EXIT_OK);
	CHECK(session__spawn(s) == EXIT_OK); /* -p: nothing to start */
	CHECK_EQ_I64(session__finish(s, EXIT_OUTPUT), EXIT_OUTPUT);
	session__free(s);
}

static void test_no_process(void)
{
	struct session_opts o = {.cmd = "test", .verb = "testing", .pid = 0x3ffffff};
	struct session *s = (struct session *)&o;

	CHECK_EQ_I64(session__open(&o, &s), EXIT_NO_INPUT);
	CHECK(s == NULL);
}

static void test_all_written(void)
{
	struct session *s = open_self();
	struct outfile *a, *b;

	if (!s)
		return;
	a = output(s, "a.out", "first");
	b = output(s, "b.out", "second");
	CHECK(!exists("a.out") && !exists("b.out")); /* temporaries only, until committed */
	session__output_done(s, a, 0);
	session__output_done(s, b, 0);
	CHECK_EQ_I64(session__commit_outputs(s), EXIT_OK);
	CHECK(exists("a.out") && exists("b.out"));
	CHECK_EQ_I64(count_files(), 2);
	session__free(s);
}

static void test_one_failed(void)
{
	struct session *s = open_self();
	struct outfile *a, *b;

	if (!s)
		return;
	a = output(s, "c.out", "first");
	b = output(s, "d.out", "second");
	session__output_done(s, a, 0);
	session__output_done(s, b, -EIO);
	CHECK_EQ_I64(session__commit_outputs(s), EXIT_OUTPUT);
	CHECK(!exists("c.out") && !exists("d.out"));
	CHECK_EQ_I64(count_files(), 2); /* a.out and b.out of the test before */
	session__free(s);
}

static void test_unfinished_and_dropped(void)
{
	struct session *s = open_self();
	struct outfile *a, *b;

	if (!s)
		return;
	/* never finished: the set is not committed, nothing is left */
	a = output(s, "e.out", "first");
	(void)a;
	CHECK_EQ_I64(session__commit_outputs(s), EXIT_OUTPUT);
	CHECK(!exists("e.out"));
	session__free(s);

	/* a dropped output (its writer is not built in) does not fail the others */
	s = open_self();
	if (!s)
		return;
	a = output(s, "f.out", "first");
	b = output(s, "g.out", "second");
	session__output_drop(s, b);
	session__output_done(s, a, 0);
	CHECK_EQ_I64(session__commit_outputs(s), EXIT_OK);
	CHECK(exists("f.out") && !exists("g.out"));
	session__free(s);

	/* freed before the commit: every temporary is removed */
	s = open_self();
	if (!s)
		return;
	output(s, "h.out", "first");
	session__free(s);
	CHECK(!exists("h.out"));
	CHECK_EQ_I64(count_files(), 3);
}

static void test_args(void)
{
	uint64_t v = 0;
	double d = 0;
	char *argv[] = {"x", "-p", "1", "--", "cmd", "arg", NULL}, **cmd;

	CHECK(!args__parse_size("16M", 4096, 1ull << 30, &v) && v == 16ull << 20);
	CHECK(!args__parse_size("8k", 64, 1 << 20, &v) && v == 8192);
	CHECK(!args__parse_size("1G", 1, 1ull << 30, &v) && v == 1ull << 30);
	CHECK(args__parse_size("2G", 1, 1ull << 30, &v)); /* above max */
	CHECK(args__parse_size("-1", 0, ~0ull, &v));
	CHECK(args__parse_size("12Q", 0, ~0ull, &v));
	CHECK(args__parse_size("", 0, ~0ull, &v));
	CHECK(args__parse_size("99999999999999999999G", 0, ~0ull, &v)); /* overflows */
	CHECK(!args__parse_seconds("0.5", &d) && d == 0.5);
	CHECK(args__parse_seconds("0", &d) && args__parse_seconds("nan", &d) &&
	      args__parse_seconds("1s", &d) && args__parse_seconds("2e9", &d));
	CHECK_EQ_I64(args__split_command(6, argv, &cmd), 3);
	CHECK(cmd == &argv[4]);
	CHECK_EQ_I64(args__split_command(3, argv, &cmd), 3);
	CHECK(cmd == NULL);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	log_verbosity = 0;
	test_identity();
	test_no_process();
	test_all_written();
	test_one_failed();
	test_unfinished_and_dropped();
	test_args();
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		CHECK(system(cmd) == 0);
	}
	TEST_MAIN_END();
}
