/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the trace benchmark's tools share (bench/README.md): the exact probe plan
 * asyncbpf trace would build for a binary and a selection (through the tracer's own
 * trace_plan__build), a monotonic clock, and launching a command stopped until the
 * probes are attached.
 */
#ifndef ASYNCBPF_BENCH_COMMON_H
#define ASYNCBPF_BENCH_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "model.h"
#include "tracer.h"

uint64_t bench__now_ns(void);

/* Exit probes as asyncbpf trace --exits chooses them. */
enum bench_exits {
	BENCH_EXITS_AUTO, /* uretprobes when the binary cannot unwind (panic=abort), else ret */
	BENCH_EXITS_RET,
	BENCH_EXITS_URETPROBE,
};

/*
 * Analyze path and build the probe plan of asyncbpf trace for patterns (none: the
 * default selection, every crate's with all_crates) and the exit mode. Returns 0, or
 * an exit status (the message is printed). m and plan are the caller's to free on
 * success.
 */
int bench__plan(const char *path, char **patterns, int nr_patterns, bool all_crates,
		enum bench_exits exits, struct model *m, struct trace_plan *plan);

/*
 * Attach prog_fd to every probe of the plan as asyncbpf does: one uprobe_multi link
 * for the uprobes and, when the plan has uretprobes, one for those. links[0..1] are
 * set (-1 when unused). 0 or -errno (links closed).
 */
int bench__attach(int prog_fd, const char *path, const struct trace_plan *plan, pid_t pid,
		  int links[2]);

/*
 * Fork a child that waits on a pipe, then execs path with argv: returns its pid and
 * the pipe's write end in *go_fd (write "g" to run it, close it to make it exit 127),
 * or -errno.
 */
pid_t bench__launch_stopped(const char *path, char **argv, int *go_fd);
/* Run the child launched above; 0 or -errno. */
int bench__go(int *go_fd);
/* Its exit status (128+N for signal N), or -errno. */
int bench__wait(pid_t pid);

#endif
