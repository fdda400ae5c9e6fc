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
 * (never untraced by accident). The child asks to be ptraced, so that the kernel
 * stops it right after its exec, before the command's first instruction: what needs
 * the command's load address (BPF maps of run-time addresses) is filled then
 * (held_fd tells the parent whether it was). Returns the child's pid, or -errno.
 */
pid_t launch__start_stopped(const char *cmd, const char *path, char **argv, int *go_fd,
			    int *held_fd);

enum launch_state {
	LAUNCH_RUNNING = 0, /* the command runs (it could not be held at its exec) */
	LAUNCH_HELD = 1,    /* stopped right after its exec: launch__release() it */
	LAUNCH_EXITED = 2,  /* the exec failed: the child exited (reaped: *status) */
};
/* Let the child exec (closes *go_fd and *held_fd): enum launch_state, or -errno. */
int launch__go(int *go_fd, int *held_fd, pid_t child, int *status);
/* Let a child held at its exec run (detach). 0 or -errno. */
int launch__release(pid_t child);
/* The child's exit status, 128+N when killed by signal N, 1 on error. */
int launch__wait(pid_t child);

#endif
