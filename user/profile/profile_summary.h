/* SPDX-License-Identifier: GPL-2.0 */
/*
 * asyncbpf profile's summary: what was sampled and lost (by reason), the target's CPU
 * time over the run, and the top async stacks on-CPU (and off-CPU).
 */
#ifndef ASYNCBPF_PROFILE_SUMMARY_H
#define ASYNCBPF_PROFILE_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "model/profile_data.h"
#include "profile/profile_consumer.h"

/*
 * counters: PCOUNTER_*; target_cpu_ns: the target's CPU time during the run, or -1
 * when unknown.
 */
void profile_summary__print(FILE *out, const struct profile_counts *c, const struct profile_data *d,
			    const uint64_t *counters, bool offcpu, int64_t target_cpu_ns);

#endif
