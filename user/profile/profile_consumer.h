/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The profiler's ring-buffer consumer: each record (bpf/asyncbpf.h) is unwound
 * (unwind.h), projected onto its async stack (profile_project.h) and counted: unwind
 * failures by reason, off-CPU time paired with the stack where the thread blocked,
 * thread names. docs/profile.md.
 */
#ifndef ASYNCBPF_PROFILE_CONSUMER_H
#define ASYNCBPF_PROFILE_CONSUMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/hashmap.h"
#include "model/model.h"
#include "model/profile_data.h"
#include "profile/profile_project.h"
#include "profile/unwind.h"

struct consumer {
	pid_t pid;
	char err[512];
	struct unwinder *unwinder;
	int unwinder_err;
	struct projector *proj;
	uint64_t received, offcpu_records, bad_records, failed, partial, unknown_waits;
	uint64_t reasons[UNWIND_REASON_COUNT];
	uint64_t unwind_cpu_ns, last_refresh, refresh_interval;
	struct u64_map threads; /* tid -> index in names */
	struct pthread_name *names;
	size_t nr_names, cap_names;
	struct u64_map blocked; /* off-CPU: tid -> stack of its last switch-out */
	int error;		/* first -ENOMEM */
	void **kept;		/* --bench-replay: copies of the last on-CPU records */
	size_t *kept_size, nr_kept, keep;
	struct unwind_result result; /* large: kept here, not on the stack */
};

/* libbpf ring_buffer callback; never fails (problems are counted). */
int consumer__handle(void *ctx, void *data, size_t size);
/*
 * --bench-replay N: unwind and project the kept records N more times with warm
 * caches, timed on this thread's CPU clock, and print the rate (bench/profile.sh).
 */
void consumer__bench_replay(struct consumer *c, const struct model *m, uint32_t rounds);
void consumer__free(struct consumer *c);
uint64_t now_ns(void);

#endif
