/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The consumer: ring-buffer records (struct poll_record, bpf/asyncbpf.h) become
 * completed polls (struct trace_poll) handed to the summary and to each output
 * writer the command opened.
 */
#ifndef ASYNCBPF_TRACE_CONSUMER_H
#define ASYNCBPF_TRACE_CONSUMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "model/model.h"
#include "model/trace_event.h"

struct trace_consumer;
struct trace_summary;
struct perfetto_writer;
struct chrome_trace;
struct trace_folded;
struct trace_dot;

/* Where completed polls go: the summary always, every other sink when not NULL. */
struct trace_sinks {
	struct trace_summary *summary;
	struct perfetto_writer *perfetto;
	struct chrome_trace *chrome;
	FILE *records; /* --records: one JSON line per poll */
	struct trace_folded *folded;
	struct trace_dot *dot;
};

/* NULL when out of memory. m and the sinks must outlive the consumer. */
struct trace_consumer *trace_consumer__new(const struct model *m, pid_t pid,
					   const struct trace_sinks *sinks);
/* Decode one ring-buffer record (libbpf ring_buffer callback shape). Never fails. */
int trace_consumer__handle(void *ctx, void *data, size_t size);
/* Task mode's root types (trace_plan.root_types, kept): a task that finishes in its
 * first poll seen still has a root. */
void trace_consumer__set_root_types(struct trace_consumer *c, const uint32_t *roots, uint32_t nr);
/* top --locks: a task tree's locks are followed (the summary's), nothing else of it. */
void trace_consumer__set_locks_only(struct trace_consumer *c, bool on);
/*
 * Estimate each poll's descendants' probe cost (trace_poll.probe_ns) from what one
 * poll of each poll fn costs its enclosing poll (per_poll[nr_polls], copied;
 * probe_cost.h). 0 or -ENOMEM.
 */
int trace_consumer__set_probe_costs(struct trace_consumer *c, const uint64_t *per_poll,
				    uint32_t nr_polls);
/* The first error a writer returned (-errno), or 0. */
/* Who resolves a wake the BPF side could not (tracer__resolve_woken's shape). */
void trace_consumer__set_wake_resolver(struct trace_consumer *c,
				       int (*fn)(void *ctx, uint8_t runtime, uint64_t header,
						 uint64_t vtable, uint64_t *self),
				       void *ctx);
int trace_consumer__write_err(const struct trace_consumer *c);
void trace_consumer__free(struct trace_consumer *c);

/* Record → trace_poll (pure). Returns 0, or -EINVAL for a record of another type/size. */
int trace_record__decode(const void *data, size_t size, const struct model *m,
			 struct trace_poll *out);
/* A RECORD_WAKE into out. 0, or -EINVAL for a record that is not one. */
int trace_wake__decode(const void *data, size_t size, struct trace_wake *out);
/* A RECORD_DROP into out. 0, or -EINVAL for a record that is not one. */
int trace_drop__decode(const void *data, size_t size, const struct model *m,
		       struct trace_drop *out);
/* A RECORD_BLOCK into out. 0, or -EINVAL for a record that is not one. */
int trace_block__decode(const void *data, size_t size, const struct model *m,
			struct trace_block *out);

#endif
