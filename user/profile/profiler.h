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

struct profile_bpf;
struct bpf_link;

struct profiler {
	struct profile_bpf *skel;
	int *perf_fds;
	struct bpf_link **links;
	struct bpf_link *offcpu_link;
	int nr_cpus;
	int nr_attached;
	const char *event; /* "cycles" or "cpu-clock" */
	int stats_fd;	   /* BPF_ENABLE_STATS while held, or -1/0 */
};

struct profiler_opts {
	pid_t pid;
	uint32_t freq_hz;
	uint32_t stack_size;
	uint64_t ringbuf_size;
	bool offcpu;
	bool verbose;
};

/* 0 or -errno with err filled. */
int profiler__load(struct profiler *p, const struct profiler_opts *o, char *err, size_t errlen);
/* Open the per-CPU events and attach. 0 or -errno (-EOPNOTSUPP/-ENOENT: no sampling
 * event; -EACCES/-EPERM: perf_event_paranoid or capabilities). */
int profiler__attach(struct profiler *p, const struct profiler_opts *o, char *err, size_t errlen);
int profiler__ringbuf_fd(const struct profiler *p);
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
void profiler__free(struct profiler *p);

#endif
