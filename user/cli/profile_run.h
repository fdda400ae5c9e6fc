/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One run of the profiler on one process (profile): what cmd_profile.c holds from
 * start to report, shared with profile_fleet.c (several processes, --exe).
 */
#ifndef ASYNCBPF_CLI_PROFILE_RUN_H
#define ASYNCBPF_CLI_PROFILE_RUN_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>

#include <bpf/libbpf.h>

#include "cli/profile_args.h"
#include "cli/profile_every.h"
#include "cli/run_model.h"
#include "lib/outfile.h"
#include "lib/rb_budget.h"
#include "model/model.h"
#include "model/profile_data.h"
#include "profile/profile_consumer.h"
#include "profile/profiler.h"
#include "session/session.h"

enum { OUT_SVG, OUT_FOLDED, OUT_FOLDED_OFFCPU, OUT_PPROF, OUT_PERFETTO, OUT_COUNT };

/* Everything one run holds, freed in one place. */
struct profile_run {
	const struct profile_args *a;
	struct session *s;
	struct model m;
	struct run_model model_own; /* m loaded here, or lent by profile's fleet */
	char svg[PATH_MAX];
	struct outfile *files[OUT_COUNT];
	struct profile_consumer *c;
	struct profiler *p;
	struct ring_buffer *rb;
	struct rb_budget budget;
	struct profiler_offcpu_fds offcpu;
	struct profile_data d;
	uint64_t counters[PCOUNTER_COUNT];
	int64_t cpu_start, cpu_end;  /* the target's CPU time around the run */
	struct rusage ru0, ru1;	     /* ours, for the --bench-replay stats line */
	struct profile_every *every; /* --every: a pprof per interval */
	uint64_t interval_start_ns;
};

/*
 * A run on r->a's process (-p) or command, r zeroed but for a, cpu_start and cpu_end
 * -1: first the session (the process held, its executable open; a command resolved),
 * then (m lent: run_model__borrow, or not) the analysis unless borrowed, the command
 * spawned held, the outputs or the --every writer opened, the profiler attached.
 * Exit statuses (printed); profile_run__free either way.
 */
int profile_run__open_session(struct profile_run *r);
int profile_run__start(struct profile_run *r);
/* The session loop's hooks: exec counts, and with --every an interval per tick. */
void profile_run__hooks(struct profile_run *r, struct session_hooks *h);
/* The stats line a benchmark parses (-v, --bench-replay). */
void profile_run__print_stats(const struct profile_run *r);
/* --every: this interval's samples into their pprof file, then a new interval. */
void profile_run__interval(struct profile_run *r, uint64_t now);
/* Detach, drain, and gather what the outputs and the summary show. */
void profile_run__stop(struct profile_run *r);
/* The outputs (--every: the last interval's file), the summary (when asked), the
 * warnings that must be seen last. An exit status. */
int profile_run__report(struct profile_run *r, bool summary);
void profile_run__free(struct profile_run *r);

#endif
