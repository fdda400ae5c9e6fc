// SPDX-License-Identifier: GPL-2.0
/* profile --every: a pprof file per interval, and the retention (profile_every.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/profile_every.h"
#include "export/profile_export.h"
#include "lib/exitcodes.h"
#include "lib/log.h"
#include "lib/outfile.h"

#define PREFIX "asyncbpf-"
#define SUFFIX ".pb"

struct profile_every {
	char dir[PATH_MAX];
	uint32_t keep;
	uint64_t keep_bytes;
	int pid;
	uint64_t written, failed, removed;
	int last_errno; /* the last failure's, said once until it changes */
};

int profile_every__open(const char *dir, uint32_t keep, uint64_t keep_bytes, int pid,
			struct profile_every **out)
{
	struct profile_every *e;
	struct stat st;

	*out = NULL;
	if (mkdir(dir, 0755) && errno != EEXIST) {
		pr_warn("profile: cannot make the --pprof-dir %s: %s (make it, or give another)\n",
			dir, strerror(errno));
		return EXIT_OUTPUT;
	}
	if (stat(dir, &st) || !S_ISDIR(st.st_mode) || access(dir, W_OK | X_OK)) {
		pr_warn("profile: --pprof-dir %s is not a directory this user can write to%s%s\n",
			dir, errno ? ": " : "", errno ? strerror(errno) : "");
		return EXIT_OUTPUT;
	}
	if (!(e = calloc(1, sizeof(*e)))) {
		pr_warn("profile: out of memory\n");
		return EXIT_FAILURE_INTERNAL;
	}
	snprintf(e->dir, sizeof(e->dir), "%s", dir);
	e->keep = keep;
	e->keep_bytes = keep_bytes;
	e->pid = pid;
	*out = e;
	return 0;
}

/* Ours: asyncbpf-<time>-<pid>.pb (not outfile's temporaries, which end in .pb.XXXXXX) */
static int ours(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return n > strlen(PREFIX) + strlen(SUFFIX) && !strncmp(d->d_name, PREFIX, strlen(PREFIX)) &&
	       !strcmp(d->d_name + n - strlen(SUFFIX), SUFFIX);
}

/* The oldest files removed while more than keep, or more than keep_bytes in all; the
 * newest (just written) always stays. */
static void retain(struct profile_every *e)
{
	struct dirent **list = NULL;
	int n = scandir(e->dir, &list, ours, alphasort); /* the time in the name sorts them */
	uint64_t total = 0, *size;
	char path[PATH_MAX + 256];

	if (n < 0)
		return;
	size = calloc((size_t)n + 1, sizeof(*size));
	for (int i = 0; i < n && size; i++) {
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", e->dir, list[i]->d_name);
		size[i] = stat(path, &st) ? 0 : (uint64_t)st.st_size;
		total += size[i];
	}
	for (int i = 0, left = n; size && i < n - 1; i++) {
		if ((!e->keep || (uint32_t)left <= e->keep) &&
		    (!e->keep_bytes || total <= e->keep_bytes))
			break;
		snprintf(path, sizeof(path), "%s/%s", e->dir, list[i]->d_name);
		if (unlink(path) && errno != ENOENT) {
			pr_warn("profile: cannot remove %s past --keep: %s\n", path,
				strerror(errno));
			continue;
		}
		total -= size[i];
		left--;
		e->removed++;
	}
	for (int i = 0; i < n; i++)
		free(list[i]);
	free(list);
	free(size);
}

int profile_every__write(struct profile_every *e, const struct profile_data *d)
{
	struct outfile o;
	char path[PATH_MAX + 128], stamp[32], err[512] = "";
	struct timespec now;
	struct tm tm;
	int r;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	snprintf(path, sizeof(path), "%s/" PREFIX "%s.%03ldZ-%d" SUFFIX, e->dir, stamp,
		 now.tv_nsec / 1000000, e->pid);
	r = outfile__open(&o, path, err, sizeof(err));
	if (!r) {
		r = pprof__write(o.f, d);
		if (r)
			outfile__abort(&o);
		else
			r = outfile__commit(&o, err, sizeof(err));
	}
	if (r) {
		e->failed++;
		if (r != -e->last_errno)
			pr_warn(
			    "profile: --every: this interval's profile is LOST, %s not written: "
			    "%s%s; sampling goes on, the next intervals are tried\n",
			    path, err[0] ? err : strerror(-r),
			    r == -ENOSPC ? " (the disk is full: free space, or a smaller "
					   "--keep/--keep-size)"
					 : "");
		e->last_errno = -r;
		return r;
	}
	if (e->last_errno)
		pr_warn("profile: --every: profiles are written again (%s)\n", path);
	e->last_errno = 0;
	e->written++;
	retain(e);
	return 0;
}

void profile_every__counts(const struct profile_every *e, uint64_t *written, uint64_t *failed,
			   uint64_t *removed)
{
	*written = e->written;
	*failed = e->failed;
	*removed = e->removed;
}

const char *profile_every__dir(const struct profile_every *e)
{
	return e->dir;
}

void profile_every__close(struct profile_every *e)
{
	free(e);
}
