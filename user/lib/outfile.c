// SPDX-License-Identifier: GPL-2.0
#include "lib/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int outfile__open(struct outfile *o, const char *path, char *err, size_t errlen)
{
	memset(o, 0, sizeof(*o));
	if (strcmp(path, "-") == 0) {
		o->f = stdout;
		o->is_stdout = 1;
		return 0;
	}
	if (strlen(path) >= sizeof(o->path)) {
		snprintf(err, errlen, "output path too long: %.64s...", path);
		return -ENAMETOOLONG;
	}
	snprintf(o->path, sizeof(o->path), "%s", path);

	struct stat st;
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "refusing to write %s: it exists and is not a regular file%s",
			 path, S_ISLNK(st.st_mode) ? " (a symlink)" : "");
		return -EEXIST;
	}
	snprintf(o->tmp, sizeof(o->tmp), "%s.XXXXXX", path);
	int fd = mkostemp(o->tmp, O_CLOEXEC); /* O_EXCL, mode 0600 */
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot create %s: %s", o->tmp, strerror(e));
		o->tmp[0] = '\0';
		return -e;
	}
	const char *uid = getenv("SUDO_UID"), *gid = getenv("SUDO_GID");
	if (uid && gid && geteuid() == 0)
		if (fchown(fd, (uid_t)strtoul(uid, NULL, 10), (gid_t)strtoul(gid, NULL, 10))) {
			/* not fatal: the file stays root's */
		}
	o->f = fdopen(fd, "w");
	if (!o->f) {
		int e = errno;
		close(fd);
		unlink(o->tmp);
		o->tmp[0] = '\0';
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
		return -e;
	}
	/* traces are written in many small pieces: 256 KiB per write(2), not 4 KiB */
	setvbuf(o->f, NULL, _IOFBF, 256 << 10);
	return 0;
}

int outfile__close(struct outfile *o, char *err, size_t errlen)
{
	if (o->is_stdout) {
		if (fflush(stdout) || ferror(stdout)) {
			snprintf(err, errlen, "writing to stdout failed: %s", strerror(errno));
			return -EIO;
		}
		return 0;
	}
	if (!o->f)
		return o->tmp[0] ? 0 : -EINVAL; /* closed already, or never opened */
	int bad = ferror(o->f);
	int e = fclose(o->f) ? errno : 0;
	o->f = NULL;
	if (bad || e) {
		snprintf(err, errlen, "writing %s failed: %s", o->path, strerror(e ? e : EIO));
		outfile__abort(o);
		return -(e ? e : EIO);
	}
	return 0;
}

int outfile__commit(struct outfile *o, char *err, size_t errlen)
{
	int e = outfile__close(o, err, errlen);

	if (e || o->is_stdout)
		return e;
	if (rename(o->tmp, o->path)) {
		e = errno;
		snprintf(err, errlen, "cannot rename %s to %s: %s", o->tmp, o->path, strerror(e));
		outfile__abort(o);
		return -e;
	}
	o->tmp[0] = '\0';
	return 0;
}

void outfile__abort(struct outfile *o)
{
	if (o->f && !o->is_stdout)
		fclose(o->f);
	o->f = NULL;
	if (o->tmp[0])
		unlink(o->tmp);
	o->tmp[0] = '\0';
}
