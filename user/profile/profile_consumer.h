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

#include "model/model.h"
#include "model/profile_data.h"
#include "profile/offcpu.h"
#include "profile/profile_project.h"
#include "profile/unwind.h"

struct profile_consumer;

#define PROFILE_DEPTH_BUCKETS 12 /* up to 1 KiB, 2, 4, ... 1024 KiB, more */

/* What the consumer counted (problems included), for the summary. */
struct profile_counts {
	uint64_t received; /* on-CPU samples */
	uint64_t bad_records, failed, partial;
	struct offcpu_counts off; /* --off-cpu */
	uint64_t reasons[UNWIND_REASON_COUNT];
	/* on-CPU samples by the depth of their stack (sp to the top of the thread's
	 * stack): [k] counts depths in (2^(k-1), 2^k] KiB, [0] up to 1 KiB; and the
	 * deepest, for choosing --stack-size */
	uint64_t depth_hist[PROFILE_DEPTH_BUCKETS];
	uint64_t depth_max, depth_unknown;
	/* CPU time of the consumer thread: walking the stacks as they came; symbolizing
	 * and projecting them at the end */
	uint64_t walk_cpu_ns, symbolize_cpu_ns;
	int error;		/* first -ENOMEM: some samples are missing */
	bool have_unwinder;	/* the target's mappings could be read */
	const char *unwind_err; /* why not, when they could not */
};

/*
 * A consumer of pid's samples for model m (which must outlive it); keep > 0 keeps
 * copies of the last `keep` on-CPU records for --bench-replay. NULL: out of memory.
 */
struct profile_consumer *profile_consumer__new(const struct model *m, pid_t pid, uint32_t keep);
/*
 * Read the target's mappings now (-p mode: a failure is reported before sampling;
 * launch mode reads them at the first sample). 0 or -errno, err filled.
 */
int profile_consumer__open_unwinder(struct profile_consumer *c, char *err, size_t errlen);
/* libbpf ring_buffer callback; never fails (problems are counted). */
int profile_consumer__handle(void *ctx, void *data, size_t size);
const struct profile_counts *profile_consumer__counts(const struct profile_consumer *c);
/* --off-cpu: handle its records, teach the rules learned from them to rules_fd (the
 * unwind_rules map). 0 or -ENOMEM. */
int profile_consumer__enable_offcpu(struct profile_consumer *c, int rules_fd);
/*
 * At the end, after the last record: the kernel's off-CPU sums into the projection
 * (offcpu__collect). 0 or -errno (-EINVAL: off-CPU was not enabled).
 */
int profile_consumer__add_offcpu(struct profile_consumer *c, int times_fd, int stacks_fd,
				 int pending_fd);
/* After the last record: symbolize and project the on-CPU samples walked so far. */
void profile_consumer__finish(struct profile_consumer *c);
/* The projected stacks and the thread names into d (they stay the consumer's). */
void profile_consumer__fill(struct profile_consumer *c, struct profile_data *d);
/*
 * profile --every, after an interval's finish, add_offcpu, fill and write: its
 * stacks dropped (a new projection; the walks and the unwinder's caches stay), so
 * that the next fill holds the next interval only. 0 or -ENOMEM.
 */
int profile_consumer__next_interval(struct profile_consumer *c);
/* The unwinder's cache: pcs described and mapping refreshes (0 without one). */
void profile_consumer__unwinder_stats(const struct profile_consumer *c, uint64_t *pcs,
				      uint64_t *refreshes);
/*
 * --bench-replay N: unwind and project the kept records N more times with warm
 * caches, timed on this thread's CPU clock, and print the rate (bench/profile.sh).
 */
void profile_consumer__bench_replay(struct profile_consumer *c, const struct model *m,
				    uint32_t rounds);
void profile_consumer__free(struct profile_consumer *c);

#endif
