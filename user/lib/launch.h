/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Launch mode of trace and profile: the command is resolved through PATH before the
 * fork (so the model is of the file we exec), started as a child blocked before
 * exec until the tracer has attached, and waited for.
 */
#ifndef ASYNCBPF_LAUNCH_H
#define ASYNCBPF_LAUNCH_H

#include <stddef.h>
#include <sys/types.h>

/* execvp's PATH search. 0, or -ENOENT, -EACCES, -ENAMETOOLONG. */
int launch__resolve(const char *name, char *out, size_t len);
/*
 * Fork a child that waits on a pipe and execs path with argv only after
 * launch__go(); if go_fd is closed instead, it exits 127 without running anything
 * (never untraced by accident). Returns the child's pid, or -errno.
 */
pid_t launch__start_stopped(const char *cmd, const char *path, char **argv, int *go_fd);
/* Let the child exec. 0 or -errno; closes *go_fd. */
int launch__go(int *go_fd);
/* The child's exit status, 128+N when killed by signal N, 1 on error. */
int launch__wait(pid_t child);

#endif
