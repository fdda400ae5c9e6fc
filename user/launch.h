/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the commands that attach BPF to a process share (trace, profile): the
 * privilege check with its explanation, and launch mode: resolve CMD like execvp,
 * start it blocked before exec until the caller has attached, collect its status.
 * Moved here from cmd_trace.c so both commands use one copy.
 */
#ifndef ASYNCBPF_LAUNCH_H
#define ASYNCBPF_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* root, or CAP_BPF+CAP_PERFMON, in the initial user namespace. */
bool privileged(void);
/* Say (prefixed with cmd) what is missing and what to do. */
void explain_privilege(const char *cmd);

/* execvp's PATH search, done before the fork so the model is of the file we exec. */
int resolve_command(const char *name, char *out, size_t len);
/*
 * Fork; the child waits on a pipe until the parent writes "g" to *go_fd (then execs
 * path with argv) or closes it (then exits 127 without running anything). Returns
 * the child's pid or -errno. cmd prefixes the child's exec failure message.
 */
pid_t launch_stopped(const char *cmd, const char *path, char **argv, int *go_fd);
/* Wait for the child: its exit status, 128+N when killed by signal N. */
int wait_child(pid_t child);

#endif
