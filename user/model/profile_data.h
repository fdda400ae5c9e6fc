/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What `asyncbpf profile` hands its exporters (folded, SVG flame graph, pprof,
 * Perfetto): samples already unwound, symbolized and projected onto async stacks.
 * Pure data, so every exporter is unit-tested with hand-made profiles.
 *
 * A stack is root first: "[runtime]" (the executor above the outermost poll), the
 * task's future, ..., the innermost polled future, then the synchronous frames it
 * called (leaf work). Samples outside any poll have "[not in a poll]" as their
 * first frame. Off-CPU samples (sched_switch) are kept apart by `offcpu`.
 */
#ifndef ASYNCBPF_PROFILE_DATA_H
#define ASYNCBPF_PROFILE_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pframe_kind {
	PFRAME_FUTURE,	 /* a polled future (its poll fn was on the stack, maybe inlined) */
	PFRAME_FUNCTION, /* an ordinary function below the innermost poll (leaf work) */
	PFRAME_RUNTIME,	 /* the collapsed executor frames above the outermost poll */
	PFRAME_SPECIAL,	 /* "[not in a poll]", "[unknown]", "[kernel]", ... */
};

/* Where a frame's code comes from (colors in the SVG); crate.c's classes, reduced. */
enum pframe_origin {
	PORIGIN_USER,	 /* the target's own crates */
	PORIGIN_RUNTIME, /* tokio, async-std, smol, futures, mio, ... */
	PORIGIN_STD,	 /* std, core, alloc, libc */
	PORIGIN_OTHER,	 /* other dependencies, unknown */
};

struct pframe {
	const char *name;   /* display name (demangled, hash stripped); never NULL */
	const char *file;   /* source file or NULL */
	uint32_t line;	    /* 0 when unknown */
	uint8_t kind;	    /* enum pframe_kind */
	uint8_t origin;	    /* enum pframe_origin */
	bool inlined;	    /* the frame exists only in an inline chain */
	uint64_t addr;	    /* pc in the target (0 for synthetic frames) */
	const char *module; /* mapping's file name, or NULL for synthetic frames */
};

struct pstack {
	const struct pframe *const *frames; /* root first; frames are shared between stacks */
	uint32_t nframes;
	bool offcpu;
	uint64_t samples; /* number of samples with exactly this stack */
	uint64_t weight;  /* on-CPU: samples; off-CPU: nanoseconds blocked */
};

/* One sample in time order, for per-thread timelines (Perfetto). */
struct psample {
	uint64_t time_ns; /* CLOCK_MONOTONIC */
	uint32_t pid, tid;
	uint32_t stack;	 /* index into profile_data.stacks */
	uint64_t weight; /* as pstack.weight, for this one sample */
};

struct pthread_name {
	uint32_t tid;
	const char *name;
};

struct profile_data {
	const struct pstack *stacks;
	size_t nstacks;
	const struct psample *samples; /* may be NULL (nsamples 0) when not kept */
	size_t nsamples;
	const struct pthread_name *threads;
	size_t nthreads;
	uint32_t pid;
	const char *process_name;
	const char *event; /* "cpu-clock" or "cycles" */
	uint32_t freq_hz;
	uint64_t start_ns, end_ns;
	uint64_t period_ns; /* nominal sampling period, 1e9 / freq */
	/* Lost and failed samples, reported in every output's metadata. */
	uint64_t dropped;	/* ring buffer reserve failures */
	uint64_t unwind_failed; /* samples whose stack could not be unwound at all */
	/* on-CPU samples whose unwind stopped at the end of the stack copy (their stacks
	 * start with "[stack cut short]"), and that copy's limit in bytes (0: unknown) */
	uint64_t cut_short;
	uint32_t stack_size;
	/* off-CPU blocks whose time is not in any stack (a kernel map or the off-CPU
	 * ring buffer was full), and the time they account for, as far as measured */
	uint64_t offcpu_lost, offcpu_lost_ns;
	/* off-CPU time was profiled (--off-cpu): its sample types are written even when
	 * no block came in this profile's interval (each file of --every the same) */
	bool offcpu;
};

#endif
