/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The processes of one followed executable (top --exe) as one Prometheus source
 * (docs/metrics.md, "Following an executable"): their snapshots summed by future
 * name, the live ones' current values plus the last values of those gone, so that
 * a restart (a new pid) continues the same series and counters never go down. A
 * new build's futures join by name. Pure: the unit test sums hand-made snapshots.
 */
#ifndef ASYNCBPF_EXPORT_PROM_SUM_H
#define ASYNCBPF_EXPORT_PROM_SUM_H

#include <stdbool.h>

#include "export/prometheus.h"

struct prom_sum;

/* NULL on ENOMEM. exe: the group's label value (copied). */
struct prom_sum *prom_sum__new(const char *exe);
void prom_sum__free(struct prom_sum *g);

/* A new round: the sum starts from what the processes gone left. */
void prom_sum__begin(struct prom_sum *g);
/*
 * Add one process's snapshot (rows named through s->name; hits, lost by their
 * names) to this round; gone: the process is gone and s holds its last values,
 * kept in every later round (its live instances no longer count). The first
 * process's mode is the series': one with task rows where they are per-future (or
 * the other way) is refused, -EINVAL, nothing added; one whose wakes are probed
 * otherwise (all, sampled, none) adds all but its wakes. -ENOMEM: this round has no
 * sum.
 */
int prom_sum__add(struct prom_sum *g, const struct prom_snapshot *s, bool gone);
/* This round has no sum (a process's snapshot could not be made). */
void prom_sum__fail(struct prom_sum *g);
/* This round's sum: valid until the next call on g. processes: the live ones added. */
const struct prom_snapshot *prom_sum__snapshot(struct prom_sum *g, double seconds);

#endif
