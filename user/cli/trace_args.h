/* SPDX-License-Identifier: GPL-2.0 */
/* asyncbpf trace's command line, parsed (docs/tracing.md). */
#ifndef ASYNCBPF_TRACE_ARGS_H
#define ASYNCBPF_TRACE_ARGS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "select/selection.h"
#include "trace/tracer.h"

/* More probes than this need --max-probes: attaching and the traps scale with it. */
#define TRACE_DEFAULT_MAX_PROBES 20000

extern const char trace_usage[];

struct trace_args {
	pid_t pid;
	char **command; /* launch mode: argv of CMD, NULL-terminated */
	char **patterns;
	int nr_patterns;
	const char *whitelist, *output, *chrome, *summary_json, *records, *folded, *dot;
	enum expand_dir expand;
	bool all_crates, verbose;
	double duration;
	uint64_t ringbuf_size;
	enum exits_mode exits;
	enum attach_mode attach;
	unsigned long max_probes; /* 0: no limit */
};

/* EXIT_OK, -1 after --help, or an exit status (usage errors say why). */
int trace_args__parse(int argc, char **argv, struct trace_args *a);

#endif
