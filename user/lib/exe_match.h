/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The processes running an executable (top --exe, docs/top.md "Several processes, and
 * following an executable"): given a path, those whose /proc/PID/exe is the file the
 * path resolves to now or resolved to before (a symlink switched to a new release:
 * the old release's processes still count), or such a file marked " (deleted)" (an
 * older build still running after the file was replaced); given a name (no '/'),
 * those whose executable has that base name.
 */
#ifndef ASYNCBPF_LIB_EXE_MATCH_H
#define ASYNCBPF_LIB_EXE_MATCH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* the files a path resolved to that are remembered (the oldest forgotten) */
#define EXE_MATCH_PATHS 8

struct exe_match {
	bool by_name;
	char spec[PATH_MAX];  /* as given */
	char label[PATH_MAX]; /* the path made absolute, symlinks kept; or the name */
	char want[EXE_MATCH_PATHS][PATH_MAX]; /* resolutions, newest last; or the name */
	unsigned nr_want;
};

/* 0, or -errno with err set (a path that does not resolve: -ENOENT ...; a bad name:
 * -EINVAL). */
int exe_match__init(struct exe_match *m, const char *spec, char *err, size_t len);
/* Resolve the path again (a symlink switched since): the new file added. */
void exe_match__refresh(struct exe_match *m);
/* Does process pid run the executable? (false for a process gone or a kernel thread) */
bool exe_match__pid(const struct exe_match *m, pid_t pid);
/* Refresh, then fn(ctx, pid) for every process that runs it but this one, in /proc's
 * order. 0, or -errno when /proc cannot be read. */
int exe_match__scan(struct exe_match *m, void (*fn)(void *ctx, pid_t pid), void *ctx);

#endif
