// SPDX-License-Identifier: GPL-2.0
/* Privileges and launch mode, shared by trace and profile (launch.h). */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exitcodes.h"
#include "log.h"
#include "sysfacts.h"

bool privileged(void)
{
	return sysfacts__in_initial_user_namespace() &&
	       (sysfacts__has_capability(CAP_SYS_ADMIN) ||
		(sysfacts__has_capability(CAP_BPF) && sysfacts__has_capability(CAP_PERFMON)));
}

void explain_privilege(const char *cmd)
{
	char missing[256] = "";

	if (!sysfacts__has_capability(CAP_BPF))
		sysfacts__add_fact(missing, sizeof(missing), "CAP_BPF");
	if (!sysfacts__has_capability(CAP_PERFMON))
		sysfacts__add_fact(missing, sizeof(missing), "CAP_PERFMON");
	if (!sysfacts__has_capability(CAP_SYS_ADMIN))
		sysfacts__add_fact(missing, sizeof(missing), "CAP_SYS_ADMIN");
	pr_warn("%s: needs root, or CAP_BPF+CAP_PERFMON (CAP_SYS_ADMIN too for perf-event "
		"uprobes on kernels without uprobe_multi); running as uid %u without %s%s: run "
		"it with sudo\n",
		cmd, (unsigned)getuid(), missing,
		sysfacts__in_initial_user_namespace()
		    ? ""
		    : ", in a user namespace whose capabilities do not grant BPF");
}

int resolve_command(const char *name, char *out, size_t len)
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

pid_t launch_stopped(const char *cmd, const char *path, char **argv, int *go_fd)
{
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(fds[0]);
		close(fds[1]);
		return -e;
	}
	if (pid == 0) {
		char go = 0;
		ssize_t n;

		close(fds[1]);
		do
			n = read(fds[0], &go, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1 || go != 'g')
			_exit(127); /* the parent failed: never run the command unobserved */
		close(fds[0]);
		execv(path, argv);
		fprintf(stderr, "asyncbpf: %s: cannot execute %s: %s\n", cmd, path,
			strerror(errno));
		_exit(127);
	}
	close(fds[0]);
	*go_fd = fds[1];
	return pid;
}

int wait_child(pid_t child)
{
	int st;

	while (waitpid(child, &st, 0) < 0)
		if (errno != EINTR)
			return EXIT_FAILURE_INTERNAL;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return EXIT_FAILURE_INTERNAL;
}
