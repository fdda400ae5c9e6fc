// SPDX-License-Identifier: GPL-2.0
/*
 * top --exe's process matching (user/lib/exe_match.c) on this machine's processes: a
 * child running this test's own executable is found by path and by name, this
 * process never (it is the tracer); a path that does not exist is refused; a child
 * running another program is not found.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/exe_match.h"
#include "testlib.h"

struct found {
	pid_t want;
	bool seen, self;
};

static void on_pid(void *ctx, pid_t pid)
{
	struct found *f = ctx;

	f->seen |= pid == f->want;
	f->self |= pid == getpid();
}

int main(int argc, char **argv)
{
	char self[PATH_MAX], err[256] = "";
	struct exe_match m;
	const char *base;
	pid_t child;
	int fds[2];

	(void)argv;
	if (argc > 1) { /* the child: wait for the parent to close the pipe */
		char c;

		return read(STDIN_FILENO, &c, 1) < 0;
	}
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	CHECK(n > 0);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	base = strrchr(self, '/') + 1;
	CHECK(pipe(fds) == 0);
	child = fork();
	if (child == 0) {
		dup2(fds[0], STDIN_FILENO);
		close(fds[1]);
		execl(self, self, "child", (char *)NULL);
		_exit(127);
	}
	close(fds[0]);
	usleep(200000); /* the child has exec'd */
	CHECK(exe_match__init(&m, self, err, sizeof(err)) == 0 && !m.by_name);
	CHECK(exe_match__pid(&m, child));
	struct found f = {.want = child};
	CHECK(exe_match__scan(&m, on_pid, &f) == 0 && f.seen && !f.self);
	CHECK(exe_match__init(&m, base, err, sizeof(err)) == 0 && m.by_name);
	f = (struct found){.want = child};
	CHECK(exe_match__scan(&m, on_pid, &f) == 0 && f.seen && !f.self);
	CHECK(exe_match__init(&m, "/bin/sh", err, sizeof(err)) == 0);
	CHECK(!exe_match__pid(&m, child));
	CHECK(exe_match__init(&m, "/no/such/exe", err, sizeof(err)) == -ENOENT);
	CHECK(strstr(err, "/no/such/exe") != NULL);
	close(fds[1]);
	waitpid(child, NULL, 0);
	CHECK(!exe_match__pid(&m, child)); /* gone */
	TEST_MAIN_END();
}
