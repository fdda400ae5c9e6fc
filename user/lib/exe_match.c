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

static void remember(struct exe_match *m, const char *path)
{
	for (unsigned k = 0; k < m->nr_want; k++)
		if (!strcmp(m->want[k], path))
			return;
	if (m->nr_want == EXE_MATCH_PATHS) { /* the oldest forgotten */
		memmove(m->want[0], m->want[1], (EXE_MATCH_PATHS - 1) * sizeof(m->want[0]));
		m->nr_want--;
	}
	snprintf(m->want[m->nr_want++], sizeof(m->want[0]), "%s", path);
}

int exe_match__init(struct exe_match *m, const char *spec, char *err, size_t len)
{
	char real[PATH_MAX], cwd[PATH_MAX];

	m->by_name = !strchr(spec, '/');
	m->nr_want = 0;
	if (!spec[0] || strlen(spec) >= sizeof(m->spec)) {
		snprintf(err, len, "--exe '%s': not an executable's path or name", spec);
		return -EINVAL;
	}
	snprintf(m->spec, sizeof(m->spec), "%s", spec);
	if (m->by_name) {
		snprintf(m->label, sizeof(m->label), "%s", spec);
		remember(m, spec);
		return 0;
	}
	if (!realpath(spec, real)) {
		int e = errno;

		snprintf(err, len, "--exe %s: %s", spec, strerror(e));
		return -e;
	}
	remember(m, real);
	if (spec[0] == '/' || !getcwd(cwd, sizeof(cwd))) {
		snprintf(m->label, sizeof(m->label), "%s", spec);
		return 0;
	}
	int w = snprintf(m->label, sizeof(m->label), "%s/%s", cwd,
			 strncmp(spec, "./", 2) ? spec : spec + 2);

	if (w < 0 || (size_t)w >= sizeof(m->label)) {
		snprintf(err, len, "--exe %s: the path is too long", spec);
		return -ENAMETOOLONG;
	}
	return 0;
}

void exe_match__refresh(struct exe_match *m)
{
	char real[PATH_MAX];

	/* a path that does not resolve right now (a deploy switching it) keeps the old */
	if (!m->by_name && realpath(m->spec, real))
		remember(m, real);
}

bool exe_match__pid(const struct exe_match *m, pid_t pid)
{
	char link[64], exe[PATH_MAX + sizeof(DELETED)];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	if ((size_t)n > strlen(DELETED) && !strcmp(exe + n - strlen(DELETED), DELETED))
		exe[n - strlen(DELETED)] = '\0';
	if (m->by_name) {
		const char *base = strrchr(exe, '/');

		return !strcmp(base ? base + 1 : exe, m->want[0]);
	}
	for (unsigned k = 0; k < m->nr_want; k++)
		if (!strcmp(exe, m->want[k]))
			return true;
	return false;
}

int exe_match__scan(struct exe_match *m, void (*fn)(void *ctx, pid_t pid), void *ctx)
{
	DIR *d;
	struct dirent *e;
	pid_t self = getpid();

	exe_match__refresh(m);
	if (!(d = opendir("/proc")))
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
