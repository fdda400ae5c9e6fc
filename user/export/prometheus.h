/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Prometheus text exposition format (version 0.0.4) of top's BPF statistics
 * (docs/metrics.md): per future (a poll fn's, or in task mode a task type's root
 * future) polls, results, busy time, poll-time and scheduling-delay histograms,
 * blocked time by syscall, wakes, live instances; the tracer's cost and what it
 * lost. Pure: the unit test renders hand-made statistics.
 *
 * Cardinality is bounded: at most top_n futures get series of their own, the
 * busiest (busy time since attach) as they appear; a future without one that has
 * been busy more than twice as long as the least busy with one takes its place. The
 * others are summed under future="other", which never goes down: a future that
 * loses its series goes on counting there from what its series last showed; one that
 * gets a series leaves there what "other" had shown of it, and its series counts its
 * whole history (so a sum() over futures counts that part twice). Blocked time by
 * syscall is given for the futures with series of their own only.
 */
#ifndef ASYNCBPF_EXPORT_PROMETHEUS_H
#define ASYNCBPF_EXPORT_PROMETHEUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "asyncbpf.h"

#define PROM_DEFAULT_TOP  50
#define PROM_MAX_TOP	  10000
#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Blocked time of one row in one syscall (-1: none, a page fault ...). */
struct prom_sys {
	uint32_t row;
	int32_t syscall;
	uint64_t count, ns;
};

/* A probe class's hits (probe "entry", how "emulated", ...). */
struct prom_hits {
	const char *probe, *how;
	uint64_t hits;
};

/* Something lost or left out, by reason. */
struct prom_lost {
	const char *reason;
	uint64_t count;
};

/* One scrape's worth of one source: every value cumulative since attach. */
struct prom_snapshot {
	int pid;
	const char *exe;
	/* a followed executable's processes summed (--exe): labels exe only, no pid */
	bool group;
	uint32_t processes;	 /* group: processes traced now */
	uint64_t processes_seen; /* group: processes traced since the start */
	bool tasks;		 /* rows are task types (their root futures), else poll fns */
	uint32_t nr;
	const struct poll_stats *stats; /* nr rows */
	void (*name)(void *ctx, uint32_t row, char *buf, size_t len);
	void *ctx;
	/* wakes: every wake probed (wakes_total), a sample (sampled_*), or none */
	enum prom_wakes { PROM_WAKES_OFF, PROM_WAKES_ALL, PROM_WAKES_SAMPLED } wakes;
	double wake_sample_seconds; /* the time the sampled probes were attached */
	const struct prom_sys *sys;
	uint32_t nr_sys;
	const char *(*syscall_name)(int nr); /* NULL or a name for a syscall number */
	const struct prom_hits *hits;
	uint32_t nr_hits;
	const struct prom_lost *lost;
	uint32_t nr_lost;
	uint64_t tracer_cpu_ns; /* the probes' estimated CPU time */
	int64_t target_cpu_ns;	/* the target's CPU time since attach; < 0 unknown */
	double seconds;		/* since attach */
};

struct prom_exporter;

/* top_n: futures with series of their own (1..PROM_MAX_TOP). NULL on ENOMEM. */
struct prom_exporter *prom__new(uint32_t top_n);
void prom__free(struct prom_exporter *e);

/* The page (malloc'd, *len bytes, NUL-terminated) of one snapshot: 0 or -errno. */
int prom__render(struct prom_exporter *e, const struct prom_snapshot *s, char **page, size_t *len);

/* One source of a page of several (processes, followed executables): its exporter,
 * the same one every page, and its snapshot. */
struct prom_part {
	struct prom_exporter *e;
	const struct prom_snapshot *s;
};

/* The page of n sources, each family's series of them all under one HELP and TYPE
 * (a family only some sources have, such as cancellations in future mode, lists
 * theirs). Their target labels must differ. 0 or -errno. */
int prom__render_many(const struct prom_part *parts, uint32_t n, char **page, size_t *len);

/* A label value escaped as the format wants (\\, \", \n) into buf, cut at len only
 * between characters; bytes that are not UTF-8 become U+FFFD (Prometheus refuses a
 * page with invalid UTF-8). */
void prom__escape(const char *in, char *buf, size_t len);

#endif
