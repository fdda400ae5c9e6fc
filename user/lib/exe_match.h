/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The processes running an executable (top --exe, docs/top.md "Following an
 * executable"): given a path, those whose /proc/PID/exe is that file's absolute path,
 * or that path marked " (deleted)" (an older build still running after the file was
 * replaced); given a name (no '/'), those whose executable's base name it is.
 */
#ifndef ASYNCBPF_LIB_EXE_MATCH_H
#define ASYNCBPF_LIB_EXE_MATCH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct exe_match {
	bool by_name;
	char want[PATH_MAX]; /* the absolute path, or the name */
};

/* 0, or -errno with err set (a path that does not exist: -ENOENT; a name too long). */
int exe_match__init(struct exe_match *m, const char *spec, char *err, size_t len);
/* Does process pid run the executable? (false for a process gone or a kernel thread) */
bool exe_match__pid(const struct exe_match *m, pid_t pid);
/* fn(ctx, pid) for every process that runs it but this one, in /proc's order. 0, or
 * -errno when /proc cannot be read. */
int exe_match__scan(const struct exe_match *m, void (*fn)(void *ctx, pid_t pid), void *ctx);

#endif
