// SPDX-License-Identifier: GPL-2.0
/*
 * top --exe's process matching (user/lib/exe_match.c) on this machine's processes: a
 * child running this test's own executable is found by path, by name and through a
 * symlink, this process never (it is the tracer); a child running another program
 * (sleep) is not; a symlink switched to another file matches that file's processes
 * and still the old one's; a path that does not exist is refused; a child gone no
 * longer matches.
 */
#include <errno.h>
#include <fcntl.h>
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

static bool scan_finds(struct exe_match *m, pid_t pid)
{
	struct found f = {.want = pid};

	return exe_match__scan(m, on_pid, &f) == 0 && f.seen && !f.self;
}

/* Once pid runs path (its exec done: up to 10 s). */
static bool execd(pid_t pid, const char *path)
{
	char link[64], exe[PATH_MAX], want[PATH_MAX];

	if (!realpath(path, want))
		return false;
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	for (int i = 0; i < 1000; i++) {
		ssize_t n = readlink(link, exe, sizeof(exe) - 1);

		if (n > 0 && (exe[n] = '\0', !strcmp(exe, want)))
			return true;
		usleep(10000);
	}
	return false;
}

/* argv run with a pipe on stdin: it waits for the pipe's EOF (or sleeps) */
static pid_t start(const char *path, char *const argv[], int *wfd)
{
	int fds[2];
	pid_t pid;

	/* close-on-exec: a later child must not keep an earlier one's write end (the
	 * sleep held the first child's stdin open for its 30 s) */
	if (pipe2(fds, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(fds[0], STDIN_FILENO);
		close(fds[1]);
		execv(path, argv);
		_exit(127);
	}
	close(fds[0]);
	*wfd = fds[1];
	return pid;
}

int main(int argc, char **argv)
{
	char self[PATH_MAX], link[PATH_MAX + 32], err[256] = "";
	struct exe_match m;
	pid_t child, other;
	int w1, w2;

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
	char *const child_argv[] = {self, "child", NULL};
	char *const sleep_argv[] = {"sleep", "30", NULL};

	child = start(self, child_argv, &w1);
	other = start("/bin/sleep", sleep_argv, &w2);
	CHECK(execd(child, self) && execd(other, "/usr/bin/sleep"));
	CHECK(exe_match__init(&m, self, err, sizeof(err)) == 0 && !m.by_name);
	CHECK(!strcmp(m.label, self));
	CHECK(exe_match__pid(&m, child));
	CHECK(!exe_match__pid(&m, other));
	CHECK(scan_finds(&m, child));
	CHECK(exe_match__init(&m, strrchr(self, '/') + 1, err, sizeof(err)) == 0 && m.by_name);
	CHECK(scan_finds(&m, child) && !exe_match__pid(&m, other));
	/* through a symlink, then the symlink switched to sleep: both programs match */
	snprintf(link, sizeof(link), "/tmp/asyncbpf-exe-match-%d", (int)getpid());
	CHECK(symlink(self, link) == 0);
	CHECK(exe_match__init(&m, link, err, sizeof(err)) == 0 && !strcmp(m.label, link));
	CHECK(scan_finds(&m, child) && !exe_match__pid(&m, other));
	char sleep_real[PATH_MAX];

	CHECK(realpath("/bin/sleep", sleep_real) != NULL);
	CHECK(unlink(link) == 0 && symlink(sleep_real, link) == 0);
	exe_match__refresh(&m);
	CHECK(exe_match__pid(&m, other) && exe_match__pid(&m, child));
	unlink(link);
	CHECK(exe_match__init(&m, "/no/such/exe", err, sizeof(err)) == -ENOENT);
	CHECK(strstr(err, "/no/such/exe") != NULL);
	CHECK(exe_match__init(&m, self, err, sizeof(err)) == 0);
	close(w1);
	waitpid(child, NULL, 0);
	CHECK(!exe_match__pid(&m, child)); /* gone */
	kill(other, SIGKILL);
	close(w2);
	waitpid(other, NULL, 0);
	TEST_MAIN_END();
}
