/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Output files written safely: into a temporary file next to the destination
 * (O_EXCL, mode 0600, never following a symlink), renamed into place only when
 * complete, and handed to SUDO_UID/SUDO_GID when run through sudo. A failed or
 * interrupted run never leaves a partial file that looks complete.
 */
#ifndef ASYNCBPF_OUTFILE_H
#define ASYNCBPF_OUTFILE_H

#include <limits.h>
#include <stdio.h>

struct outfile {
	FILE *f;
	char path[PATH_MAX];
	char tmp[PATH_MAX + 16];
	int is_stdout;
};

/* "-" means stdout. Returns 0 or -errno with err filled. */
int outfile__open(struct outfile *o, const char *path, char *err, size_t errlen);
/*
 * Flush and close the temporary file, checking every write made to it, without
 * renaming it yet (a set of outputs is renamed only once all of them closed well).
 * 0 or -errno with err filled (the temporary file is then removed).
 */
int outfile__close(struct outfile *o, char *err, size_t errlen);
/* Close (when not done yet), fsync-free rename into place. Returns 0 or -errno with err filled. */
int outfile__commit(struct outfile *o, char *err, size_t errlen);
/* Remove the temporary file (on any failure path). Safe to call twice. */
void outfile__abort(struct outfile *o);

#endif
