/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Wake probes attached part of the time (docs/tracing.md, "Task mode": wake-ups
 * sampled). A probe on every wake costs one uprobe hit per wake, about as much as a
 * task poll's two; attached for a fraction of each period, they measure scheduling
 * delays on a sample of the wakes at that fraction of the cost. The tracer attaches
 * the other probes without them (tracer_opts.wakes_apart); this module owns their
 * own uprobe_multi link, attached and closed at the window edges.
 */
#ifndef ASYNCBPF_WAKE_SAMPLER_H
#define ASYNCBPF_WAKE_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "trace/trace_plan.h"

#define WAKE_SAMPLE_DEFAULT   0.1	    /* task mode: attached 10% of the time... */
#define WAKE_SAMPLE_PERIOD_NS 1000000000ull /* ...of each second */

struct wake_sampler;

/* What the sample covered. */
struct wake_sample {
	double fraction;    /* planned: attached this share of each period */
	uint64_t on_ns;	    /* time the wake probes were attached */
	uint64_t run_ns;    /* time from the first window to the stop */
	uint32_t windows;   /* windows attached */
	uint32_t failures;  /* attaches that failed (the window was skipped) */
	int last_error;	    /* -errno of the last failure, 0 */
	uint64_t toggle_ns; /* time spent attaching and detaching them */
};

/*
 * A sampler of plan's wake probes (PROBE_WAKE specs, by cookie) for the loaded program
 * prog_fd on path (pid's executable), attached fraction (0 < f < 1) of every
 * period_ns. NULL: out of memory, or the plan has no wake probe.
 */
struct wake_sampler *wake_sampler__new(int prog_fd, const char *path, pid_t pid,
				       const struct trace_plan *plan, double fraction,
				       uint64_t period_ns);
/*
 * Attach or detach at the window edges due by now (CLOCK_MONOTONIC ns; the first call
 * opens the first window). Returns when it wants to be called next.
 */
uint64_t wake_sampler__pulse(struct wake_sampler *ws, uint64_t now);
/* Detach for good (the window open at now ends there). */
void wake_sampler__stop(struct wake_sampler *ws, uint64_t now);
void wake_sampler__stats(const struct wake_sampler *ws, struct wake_sample *out);
/* fn(ctx, true) once the wake probes are attached, fn(ctx, false) before they are
 * detached (top counts the polls of the windows: tracer__set_wake_window). */
void wake_sampler__on_toggle(struct wake_sampler *ws, void (*fn)(void *ctx, bool attached),
			     void *ctx);
/* The time the wake probes were attached up to now (the open window's part too). */
uint64_t wake_sampler__on_ns(const struct wake_sampler *ws, uint64_t now);
void wake_sampler__free(struct wake_sampler *ws);

#endif
