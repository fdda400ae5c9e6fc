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
/* The Perfetto trace's default size limit: well under protobuf's 2 GiB (docs/tracing.md). */
#define TRACE_DEFAULT_MAX_SIZE (1ull << 30)
#define TRACE_MAX_MAX_SIZE     (1ull << 40)

extern const char trace_usage[];

/* top -p A,B...: at most this many processes at once (each has its own BPF side) */
#define TOP_MAX_PIDS 64 /* = FLEET_MAX_PIDS */

struct trace_args {
	pid_t pid;
	pid_t pids[TOP_MAX_PIDS]; /* top: every -p (pid is the first) */
	uint32_t nr_pids;
	const char *exe; /* top --exe PATH|NAME: every process running it */
	char **command;	 /* launch mode: argv of CMD, NULL-terminated */
	char **patterns;
	int nr_patterns;
	const char *whitelist, *output, *chrome, *summary_json, *records, *folded, *dot;
	enum expand_dir expand;
	bool all_crates, verbose, task_tracks;
	bool no_blocking;   /* --no-blocking */
	bool no_cancel;	    /* --no-cancel */
	bool no_wakes;	    /* --no-wakes */
	bool tasks;	    /* --tasks: task mode */
	bool deep;	    /* --deep: per-future probes, not task mode */
	double wake_sample; /* --wake-sample / 100; 0: the default (wake_sampler.h) */
	/* asyncbpf top (cmd_top.c): statistics only, a table every interval */
	bool top, batch;
	bool locks; /* top --locks: task mode's trees read for their locks */
	double interval;
	int sort;		/* enum top_key */
	long count;		/* --count: snapshots (batch), 0: until stopped */
	const char *prometheus; /* --prometheus ADDR:PORT: serve /metrics (docs/metrics.md) */
	unsigned prom_top;	/* --prometheus-top N: futures with series of their own */
	bool quiet;		/* --quiet: no tables (with --prometheus) */
	double block_threshold; /* seconds: BLOCKING warnings past it */
	double duration;
	uint64_t ringbuf_size;
	enum exits_mode exits;
	enum attach_mode attach;
	unsigned long max_probes; /* 0: no limit */
	uint64_t max_size;	  /* Perfetto bytes (per --ring file: / ring); 0: no limit */
	unsigned long ring;	  /* 0: stop at max_size; else keep the newest `ring` files */
};

/* EXIT_OK, -1 after --help, or an exit status (usage errors say why). */
int trace_args__parse(int argc, char **argv, struct trace_args *a);
/* --wake-sample PCT (1 to 100) as a fraction; an exit status (the error said). */
int trace_args__wake_sample(const char *cmd, const char *arg, double *fraction);

#endif
