/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The profiler's BPF side (bpf/profile.bpf.c): open, size, load; one sampling perf
 * event per CPU (hardware cycles when the machine has them, else cpu-clock) with
 * the program attached; optionally tp_btf/sched_switch for off-CPU time; detach.
 * docs/profile.md.
 */
#ifndef ASYNCBPF_PROFILER_H
#define ASYNCBPF_PROFILER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "asyncbpf.h"

#define PROFILE_DEFAULT_FREQ	99
#define PROFILE_MAX_FREQ	10000
#define PROFILE_DEFAULT_RINGBUF (16u << 20)

struct profiler;

struct profiler_opts {
	pid_t pid;
	uint32_t freq_hz;
	uint32_t stack_size;
	uint64_t ringbuf_size;
	bool offcpu;
	bool verbose;
};

/* A profiler for o (copied). NULL: out of memory. */
struct profiler *profiler__new(const struct profiler_opts *o);
/* Open, size and load the BPF object. 0 or -errno with err filled. */
int profiler__load(struct profiler *p, char *err, size_t errlen);
/*
 * Open the per-CPU events and attach, and the exec watch (raw_tp/sched_process_exec;
 * said once when it cannot attach). 0 or -errno (-EOPNOTSUPP/-ENOENT: no sampling
 * event; -EACCES/-EPERM: perf_event_paranoid or capabilities).
 */
int profiler__attach(struct profiler *p, char *err, size_t errlen);
int profiler__ringbuf_fd(const struct profiler *p);

/* --off-cpu: the ring buffer of stacks to unwind in user space, and the kernel's maps
 * (bpf/asyncbpf.h, "Off-CPU time is summed in the kernel"); -1 without --off-cpu. */
struct profiler_offcpu_fds {
	int events;  /* ring buffer of RECORD_PROFILE_OFFCPU */
	int rules;   /* unwind_rules: user space writes the rules it learned */
	int stacks;  /* offcpu_stacks: key -> pcs */
	int times;   /* offcpu_times: key -> blocks and ns */
	int pending; /* offcpu_start: threads blocked now */
};
void profiler__offcpu_fds(const struct profiler *p, struct profiler_offcpu_fds *fds);
/* Execs of the target since attach (0 when they cannot be watched). */
uint32_t profiler__exec_count(const struct profiler *p);
/* The sampling event: "cycles" or "cpu-clock". */
const char *profiler__event(const struct profiler *p);
/* CPUs whose event the sampler is attached to. */
int profiler__nr_attached(const struct profiler *p);
/* Sum the per-CPU counters into counters[PCOUNTER_COUNT]. 0 or -errno. */
int profiler__read_counters(const struct profiler *p, uint64_t *counters);
/*
 * Kernel run-time statistics of the sampling program (BPF_ENABLE_STATS, for
 * bench/profile.sh): enable before attaching; read sums over every CPU and every
 * process the program ran for (it filters the target's TGID itself). 0 or -errno.
 */
int profiler__enable_run_stats(struct profiler *p);
int profiler__run_stats(const struct profiler *p, uint64_t *run_ns, uint64_t *run_cnt);
/* Destroy the links and close the events (idempotent). */
void profiler__detach(struct profiler *p);
/* Detach and free (NULL is fine). */
void profiler__free(struct profiler *p);

#endif
