/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tracer's own cost, stated at the end of a run (docs/tracing.md, "The tracer's
 * own cost"): every probe hit counted by class (bpf/asyncbpf.h, enum hit_class) times
 * the per-hit cost measured at start (probe_cost.h), as CPU time and as a share of the
 * target's CPU time over the run, and the time its threads spent off-CPU inside the
 * probes' handling. When that is large, what would cost less. Pure.
 */
#ifndef ASYNCBPF_TRACE_COST_H
#define ASYNCBPF_TRACE_COST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "asyncbpf.h"
#include "trace/probe_cost.h"

/* A share of the target's CPU time above this is warned about. */
#define TRACER_COST_WARN_PERCENT 10.0

struct tracer_cost {
	bool hits_known;		/* hits[] was read from the BPF counters */
	uint64_t hits[HIT_CLASS_COUNT]; /* by enum hit_class */
	struct probe_costs per_hit;	/* measured at start (per_hit.measured) */
	int64_t target_cpu_ns;		/* the target's CPU time over the run; -1 unknown */
	uint64_t offcpu, offcpu_ns;	/* off-CPU intervals inside the probes' handling */
	uint64_t duration_ns;		/* of the run */
	bool stats_only;		/* top: no records (no ring buffer, no consumer) */
	uint64_t trees, tree_ns;	/* task mode: trees read in BPF, time measured there */
};

/* hits[], trees and tree_ns from the BPF counters (COUNTER_COUNT of them), less
 * since's when not NULL (the counters at an interval's start). */
void tracer_cost__set_hits(struct tracer_cost *c, const __u64 *counters, const __u64 *since);
/* "entry", "exit", "wake", "drop"; "emulated", "single-stepped", "return". */
const char *hit_class__probe(enum hit_class k);
const char *hit_class__how(enum hit_class k);
/* What one hit of class k costs the thread in CPU time (ns), per the measurement; 0
 * when not measured. */
uint64_t tracer_cost__per_hit(const struct tracer_cost *c, enum hit_class k);
/* The wall-clock time the hits stalled the target's threads (ns): at least the CPU
 * time, more where part of a trap is spent outside the guest (steal time). */
uint64_t tracer_cost__stall_ns(const struct tracer_cost *c);
/* Hits of class k times their cost (ns). */
uint64_t tracer_cost__class_ns(const struct tracer_cost *c, enum hit_class k);
/* All classes (ns); and the hits of the probes of one kind (PROBE_WAKE, ...). */
uint64_t tracer_cost__total_ns(const struct tracer_cost *c);
uint64_t tracer_cost__kind_ns(const struct tracer_cost *c, unsigned probe_kind);
/* The estimate as a share of the target's CPU time (percent); < 0 when unknown. */
double tracer_cost__share(const struct tracer_cost *c);
/*
 * How far the probes' wall-clock cost moves when each hit costs what `end` (the same
 * measurement after detaching) says instead of what per_hit says: in percent of the
 * latter, the hits weighted by class (the measured tree time left out). -1 when either
 * measurement or the hits are missing.
 */
double tracer_cost__drift(const struct tracer_cost *c, const struct probe_costs *end);
/* past this change (percent) the summary warns that durations' correction is uncertain */
#define PROBE_COST_DRIFT_WARN 25.0
/* The text: per class hits and cost, the total and its share, a WARNING and cheaper
 * ways when the share passes TRACER_COST_WARN_PERCENT. */
void tracer_cost__print(const struct tracer_cost *c, FILE *out);

#endif
