/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the trace benchmark's tools share (bench/README.md): the exact probe plan
 * asyncbpf trace would build for a binary and a selection (through the tracer's own
 * trace_plan__build) and a monotonic clock. Launching a command stopped until the
 * probes are attached is the tracer's own (user/lib/launch.h).
 */
#ifndef ASYNCBPF_BENCH_COMMON_H
#define ASYNCBPF_BENCH_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/model.h"
#include "trace/tracer.h"
#include "trace/trace_consumer.h"
#include "trace/trace_summary.h"
#include "export/perfetto.h"

uint64_t bench__now_ns(void);

/* Exit probes as asyncbpf trace --exits chooses them. */
enum bench_exits {
	BENCH_EXITS_AUTO, /* uretprobes when the binary cannot unwind (panic=abort), else emulated
			   */
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

#endif
