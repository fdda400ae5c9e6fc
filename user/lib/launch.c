// SPDX-License-Identifier: GPL-2.0
/* Launch mode: start a command blocked before exec, let it go, wait (launch.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/exitcodes.h"
#include "lib/launch.h"

/* execvp's PATH search, done before the fork so the model is of the file we exec. */
int launch__resolve(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	struct stat st;

	if (strchr(name, '/')) {
		if (snprintf(out, len, "%s", name) >= (int)len)
			return -ENAMETOOLONG;
		return access(out, X_OK) ? -errno : 0;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);

		if (snprintf(out, len, "%.*s/%s", (int)n, n ? path : ".", name) < (int)len &&
		    !access(out, X_OK) && !stat(out, &st) && S_ISREG(st.st_mode))
			return 0;
		path += n + (colon ? 1 : 0);
		if (!colon)
			break;
	}
	return -ENOENT;
}

/*
 * The child: wait until the parent has attached (or gave up), ask to be traced (so the
 * kernel stops it right after its exec, before the command's first instruction; it
 * says so on held_fd), then exec.
 */
pid_t launch__start_stopped(const char *cmd, const char *path, char **argv, int *go_fd,
			    int *held_fd)
{
	int fds[2], held[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	if (pipe2(held, O_CLOEXEC)) {
		int e = errno;

		close(fds[0]);
		close(fds[1]);
		return -e;
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(fds[0]);
		close(fds[1]);
		close(held[0]);
		close(held[1]);
		return -e;
	}
	if (pid == 0) {
		char go = 0;
		ssize_t n;

		close(fds[1]);
		close(held[0]);
		do
			n = read(fds[0], &go, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1 || go != 'g')
			_exit(127); /* the tracer failed: never run the command untraced */
		close(fds[0]);
		/* held[1] closes at the exec: 't' then EOF says "stopped at the exec" */
		if (!ptrace(PTRACE_TRACEME, 0, NULL, NULL) && write(held[1], "t", 1) != 1)
			_exit(127);
		execv(path, argv);
		fprintf(stderr, "asyncbpf: %s: cannot execute %s: %s\n", cmd, path,
			strerror(errno));
		_exit(127);
	}
	close(fds[0]);
	close(held[1]);
	*go_fd = fds[1];
	*held_fd = held[0];
	return pid;
}

static int exit_status(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return EXIT_FAILURE_INTERNAL;
}

int launch__wait(pid_t child)
{
	int st;

	while (waitpid(child, &st, 0) < 0)
		if (errno != EINTR)
			return EXIT_FAILURE_INTERNAL;
	return exit_status(st);
}

int launch__go(int *go_fd, int *held_fd, pid_t child, int *status)
{
	char t = 0;
	ssize_t n;
	int st, r = LAUNCH_RUNNING;

	if (*go_fd < 0)
		return -EBADF;
	if (write(*go_fd, "g", 1) != 1)
		r = -errno;
	close(*go_fd);
	*go_fd = -1;
	if (*held_fd < 0 || r < 0)
		return r;
	do
		n = read(*held_fd, &t, 1);
	while (n < 0 && errno == EINTR);
	close(*held_fd);
	*held_fd = -1;
	if (n != 1 || t != 't')
		return LAUNCH_RUNNING; /* not traced (ptrace refused): it runs at once */
	while (waitpid(child, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFSTOPPED(st))
		return LAUNCH_HELD;
	*status = exit_status(st); /* the exec failed: the child exited, reaped here */
	return LAUNCH_EXITED;
}

int launch__release(pid_t child)
{
	return ptrace(PTRACE_DETACH, child, NULL, NULL) ? -errno : 0;
}
