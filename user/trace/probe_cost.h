/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a probe hit costs the traced thread, measured on this machine before tracing
 * (probe_cost.c), and what the probes of a traced poll's descendants add to its
 * duration (docs/tracing.md, "Probe cost"). The summary subtracts the latter.
 */
#ifndef ASYNCBPF_TRACE_PROBE_COST_H
#define ASYNCBPF_TRACE_PROBE_COST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "model/trace_event.h"
#include "trace/trace_plan.h"

/* Nanoseconds one hit costs the thread, by how the kernel handles the probe. */
struct probe_costs {
	bool measured;
	uint64_t emulated_ns; /* a uprobe on an instruction the kernel emulates */
	uint64_t stepped_ns;  /* a uprobe on an instruction it single-steps */
	uint64_t returned_ns; /* a uretprobe's return through the trampoline */
	/* the same as CPU time charged to the thread (CLOCK_THREAD_CPUTIME_ID): what the
	 * kernel counts as the target's CPU time; less than the wall time where the
	 * machine's hypervisor takes part of a trap (steal time) */
	uint64_t cpu_emulated_ns, cpu_stepped_ns, cpu_returned_ns;
};

/*
 * Measure the three classes on asyncbpf's own probe target (lib/probe_target.c) with a
 * program doing poll_probe's fixed work: `calls` calls per class, each against the same
 * calls unprobed; the median of `rounds` rounds. 0, or -errno with err set (then
 * c->measured stays false and nothing is subtracted).
 */
int probe_costs__measure(struct probe_costs *c, unsigned calls, unsigned rounds, char *err,
			 size_t errlen);

/*
 * Per model poll fn (out[m->nr_polls], 0 for untraced ones): what its probes cost a
 * poll that encloses one of its polls: its entry plus the mean of its exit sites
 * (an entry shared with an exit counts once). Pure.
 */
void probe_costs__per_poll(const struct probe_costs *c, const struct trace_plan *plan,
			   uint32_t nr_polls, uint64_t *out);

/*
 * Per thread, what the probes of the traced polls below each open poll cost: polls
 * complete innermost first, so a poll's descendants have all completed (and been
 * added) when it completes. Pure; the consumer feeds it every record in order.
 */
struct probe_tally;

/* per_poll[nr_polls] (probe_costs__per_poll) is copied. NULL when out of memory. */
struct probe_tally *probe_tally__new(const uint64_t *per_poll, uint32_t nr_polls);
/* p's descendants' probe cost in ns (0 for a poll with none traced); p counts for its
 * parent from now on. A thread that cannot be tracked (out of memory) gets 0. */
uint64_t probe_tally__add(struct probe_tally *t, const struct trace_poll *p);
void probe_tally__free(struct probe_tally *t);

#endif
