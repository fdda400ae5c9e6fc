/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One run of the tracer (trace, top): what cmd_trace.c holds from start to report,
 * shared with top's hooks (top_run.c).
 */
#ifndef ASYNCBPF_CLI_TRACE_RUN_H
#define ASYNCBPF_CLI_TRACE_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include <bpf/libbpf.h>

#include "model/model.h"
#include "cli/run_model.h"
#include "cli/top_prom.h"
#include "cli/trace_args.h"
#include "cli/trace_files.h"
#include "cli/trace_report.h"
#include "lib/rb_budget.h"
#include "select/selection.h"
#include "session/session.h"
#include "trace/trace_consumer.h"
#include "trace/trace_plan.h"
#include "trace/trace_summary.h"
#include "trace/tracer.h"
#include "trace/wake_sampler.h"

/* Everything one run holds, freed in one place. */
struct trace_run {
	const struct trace_args *a;
	struct session *s;
	struct model m;
	struct run_model model_own; /* m loaded here, or lent by top's fleet */
	struct selection sel;
	struct trace_plan plan;
	struct trace_files files;
	struct trace_summary sum;
	struct trace_consumer *consumer;
	struct tracer *t;
	struct wake_sampler *ws; /* the wake probes, attached part of the time */
	struct ring_buffer *rb;
	struct rb_budget budget;
	struct trace_run_totals totals;
	uint64_t detach_ns;
	/* the target's CPU time and context switches when tracing began (-1: unknown) */
	int64_t cpu_start;
	uint64_t voluntary_start, involuntary_start;
	bool switches_start;
	/* the live status line */
	uint64_t last_status_ns, last_records, last_hits;
	bool status_printed;
	/* top */
	struct poll_stats *top_prev;
	uint32_t top_prev_nr; /* its rows */
	uint64_t top_prev_ns;
	__u64 top_prev_counters[COUNTER_COUNT];
	int64_t top_prev_cpu;
	uint64_t top_prev_wake_ns; /* the wake probes' attached time (wake_sampler__on_ns) */
	long top_snapshots;
	int top_key;
	bool top_quit;
	bool top_section;      /* not the first table on the screen (top's fleet): no clear */
	uint64_t attached_ns;  /* when the probes were in */
	struct top_prom *prom; /* --prometheus */
};

/*
 * A run on the process r->a->pid, r zeroed but for a: first the session (the process
 * held, its executable open), then (m lent: run_model__borrow, or not) the analysis
 * unless borrowed, the plan, the tracer attached. Exit statuses (printed);
 * trace_run__free either way.
 */
int trace_run__open_session(struct trace_run *r);
int trace_run__start(struct trace_run *r);
/* Detach, drain, read the statistics; the totals filled (r->totals). */
void trace_run__stop(struct trace_run *r);
void trace_run__free(struct trace_run *r);

/* top: one table (and --prometheus page) from the statistics maps: a session tick. */
void top_run__tick(void *ctx, uint64_t now, uint64_t start);
/* top: the statistics maps now, *cur malloc'd (*nr rows). 0, or -1 (nothing read). */
int top_run__read(struct trace_run *r, struct poll_stats **cur, uint32_t *nr, __u64 *counters);
/* top: the --prometheus input of statistics cur read at now (cpu: the target's CPU time
 * then, < 0 unknown). */
void top_run__prom_in(struct trace_run *r, const struct poll_stats *cur, uint32_t nr,
		      const __u64 *counters, int64_t cpu, uint64_t now, struct top_prom_in *pin);
struct termios;
/* top: keystrokes one at a time, unechoed, without blocking (stdin a terminal): true,
 * *saved the settings to restore. */
bool top_run__raw_keys(struct termios *saved);
void top_run__restore_keys(const struct termios *saved);
/* top: the keystrokes waiting: sort keys set *key, q sets *quit; returns *quit. */
bool top_run__read_keys(bool batch, int *key, bool *quit);
/* top: keystrokes read; true when top should stop (q, --count reached). */
bool top_run__keys(struct trace_run *r);

#endif
