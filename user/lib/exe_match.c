// SPDX-License-Identifier: GPL-2.0
/* The processes running an executable (exe_match.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/exe_match.h"

#define DELETED " (deleted)"

int exe_match__init(struct exe_match *m, const char *spec, char *err, size_t len)
{
	m->by_name = !strchr(spec, '/');
	if (m->by_name) {
		if (!spec[0] || strlen(spec) >= sizeof(m->want)) {
			snprintf(err, len, "--exe '%s': not an executable's name", spec);
			return -EINVAL;
		}
		snprintf(m->want, sizeof(m->want), "%s", spec);
		return 0;
	}
	if (!realpath(spec, m->want)) {
		int e = errno;

		snprintf(err, len, "--exe %s: %s", spec, strerror(e));
		return -e;
	}
	return 0;
}

bool exe_match__pid(const struct exe_match *m, pid_t pid)
{
	char link[64], exe[PATH_MAX + sizeof(DELETED)];
	ssize_t n;
	size_t w = strlen(m->want);

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	if ((size_t)n > strlen(DELETED) && !strcmp(exe + n - strlen(DELETED), DELETED))
		exe[n - strlen(DELETED)] = '\0';
	if (!m->by_name)
		return !strcmp(exe, m->want);
	const char *base = strrchr(exe, '/');

	base = base ? base + 1 : exe;
	return strlen(base) == w && !strcmp(base, m->want);
}

int exe_match__scan(const struct exe_match *m, void (*fn)(void *ctx, pid_t pid), void *ctx)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t self = getpid();

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end || pid <= 0 || pid == self)
			continue;
		if (exe_match__pid(m, (pid_t)pid))
			fn(ctx, (pid_t)pid);
	}
	closedir(d);
	return 0;
}
