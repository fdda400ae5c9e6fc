/* SPDX-License-Identifier: GPL-2.0 */
/*
 * asyncbpf trace's output files: the Perfetto trace (one file, or --ring K files
 * BASE.1, BASE.2, ... keeping the newest K), Chrome JSON, JSON lines of records,
 * folded stacks, the run-time await graph and the summary JSON. All are opened in
 * the session (session/session.h) before the probes go in, so that a bad path fails
 * before tracing, and are renamed into place together at the end.
 */
#ifndef ASYNCBPF_TRACE_FILES_H
#define ASYNCBPF_TRACE_FILES_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "cli/trace_args.h"
#include "model/model.h"
#include "model/trace_event.h"
#include "trace/trace_consumer.h"

struct session;
struct outfile;
struct trace_summary;
struct trace_run_totals;

/* --ring: the Perfetto trace in files BASE.1, BASE.2, ..., the newest `keep` kept */
struct ring_files {
	const char *base;
	unsigned long keep, index; /* index: the current file's number */
	struct outfile *cur;
};

struct trace_files {
	char output[PATH_MAX]; /* the Perfetto trace's path (--ring: the files' base) */
	struct ring_files ring;
	struct outfile *perfetto_file, *chrome_file, *records_file, *folded_file, *dot_file,
	    *summary_file;
	struct perfetto_writer *perfetto;
	struct chrome_trace *chrome;
	struct trace_folded *folded;
	struct trace_dot *dot;
};

/* Open every output a asks for, with its writer. An exit status (printed why). */
int trace_files__open(struct trace_files *f, struct session *s, const struct trace_args *a,
		      const struct model *m);
/* Where the consumer sends completed polls (summary: the caller's). */
void trace_files__sinks(const struct trace_files *f, struct trace_summary *sum,
			struct trace_sinks *sinks);
/* The Perfetto trace reached --max-size (stop mode). */
bool trace_files__full(const struct trace_files *f);
/*
 * Finish every writer (the summary JSON from sum and t), hand each result to the
 * session and commit the set. EXIT_OK or EXIT_OUTPUT.
 */
int trace_files__close(struct trace_files *f, struct session *s, struct trace_summary *sum,
		       const struct trace_run_totals *t);
/* Free the writers (the files are the session's). */
void trace_files__free(struct trace_files *f);

#endif
