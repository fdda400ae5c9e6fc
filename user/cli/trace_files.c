// SPDX-License-Identifier: GPL-2.0
/* asyncbpf trace's output files and their writers: trace_files.h. */
#include "cli/trace_files.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "export/chrome_trace.h"
#include "export/perfetto.h"
#include "export/trace_outputs.h"
#include "lib/exitcodes.h"
#include "lib/log.h"
#include "lib/outfile.h"
#include "session/session.h"
#include "trace/trace_summary.h"

static int ring_file_path(const struct ring_files *r, unsigned long index, char *path, size_t len)
{
	int n = snprintf(path, len, "%s.%lu", r->base, index);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* perfetto_next_file_fn: commit the full file, delete the one that falls out, open the next */
static int ring_next_file(void *ctx, FILE **out)
{
	struct ring_files *r = ctx;
	char err[512], path[PATH_MAX];
	int e;

	if ((e = outfile__commit(r->cur, err, sizeof(err)))) {
		pr_warn("trace: %s\n", err);
		return e;
	}
	if (r->index >= r->keep && !ring_file_path(r, r->index + 1 - r->keep, path, sizeof(path)) &&
	    unlink(path) && errno != ENOENT)
		pr_warn("trace: cannot remove %s: %s\n", path, strerror(errno));
	r->index++;
	/* the session's entry for the file is reopened in place */
	if ((e = ring_file_path(r, r->index, path, sizeof(path))) ||
	    (e = outfile__open(r->cur, path, err, sizeof(err)))) {
		pr_warn("trace: %s\n",
			e == -ENAMETOOLONG ? "--ring: the file name is too long" : err);
		return e;
	}
	pr_debug("trace: the Perfetto trace goes on in %s\n", path);
	*out = r->cur->f;
	return 0;
}

/* An optional output: NULL path, nothing to do; else open it or fail the command. */
static int open_one(struct session *s, const char *path, const char *what, struct outfile **out)
{
	if (!path)
		return EXIT_OK;
	*out = session__output(s, path, what);
	return *out ? EXIT_OK : EXIT_OUTPUT;
}

static int open_perfetto(struct trace_files *f, struct session *s, const struct trace_args *a)
{
	char path[PATH_MAX];

	if (a->output)
		snprintf(f->output, sizeof(f->output), "%s", a->output);
	else
		snprintf(f->output, sizeof(f->output), "asyncbpf-%d.pftrace", (int)session__pid(s));
	f->ring = (struct ring_files){.base = f->output, .keep = a->ring, .index = 1};
	if (a->ring && ring_file_path(&f->ring, 1, path, sizeof(path))) {
		pr_warn("trace: --ring: the file name %s.1 is too long\n", f->output);
		return EXIT_OUTPUT;
	}
	return open_one(s, a->ring ? path : f->output, "Perfetto trace: open it in ui.perfetto.dev",
			&f->perfetto_file);
}

int trace_files__open(struct trace_files *f, struct session *s, const struct trace_args *a,
		      const struct model *m)
{
	uint32_t pid = (uint32_t)session__pid(s);
	const char *comm = session__comm(s)[0] ? session__comm(s) : NULL;
	int status;

	memset(f, 0, sizeof(*f));
	if ((status = open_perfetto(f, s, a)) ||
	    (status = open_one(s, a->chrome, "Chrome trace", &f->chrome_file)) ||
	    (status = open_one(s, a->records, "records", &f->records_file)) ||
	    (status = open_one(s, a->folded, "folded stacks", &f->folded_file)) ||
	    (status = open_one(s, a->dot, "await graph", &f->dot_file)) ||
	    (status = open_one(s, a->summary_json, "summary", &f->summary_file)))
		return status;
	f->ring.cur = f->perfetto_file;
	f->perfetto = perfetto_writer__new(f->perfetto_file->f, m, pid, comm);
	if (f->chrome_file)
		f->chrome = chrome_trace__new(f->chrome_file->f, m, pid, comm);
	if (f->folded_file)
		f->folded = trace_folded__new(m);
	if (f->dot_file)
		f->dot = trace_dot__new(m);
	if (!f->perfetto || (f->chrome_file && !f->chrome) || (f->folded_file && !f->folded) ||
	    (f->dot_file && !f->dot)) {
		pr_warn("trace: out of memory\n");
		return EXIT_FAILURE_INTERNAL;
	}
	perfetto_writer__set_task_tracks(f->perfetto, a->task_tracks);
	perfetto_writer__set_limit(f->perfetto, a->ring ? a->max_size / a->ring : a->max_size,
				   a->ring ? ring_next_file : NULL, &f->ring);
	return EXIT_OK;
}

void trace_files__sinks(const struct trace_files *f, struct trace_summary *sum,
			struct trace_sinks *sinks)
{
	*sinks = (struct trace_sinks){
	    .summary = sum,
	    .perfetto = f->perfetto,
	    .chrome = f->chrome,
	    .records = f->records_file ? f->records_file->f : NULL,
	    .folded = f->folded,
	    .dot = f->dot,
	};
}

bool trace_files__full(const struct trace_files *f)
{
	return perfetto_writer__full(f->perfetto);
}

static void report_perfetto(const struct trace_files *f)
{
	const struct ring_files *r = &f->ring;

	if (r->keep && r->index > 1)
		pr_info("trace: wrote %s.%lu to %s.%lu, the newest %lu of %lu files (each a trace "
			"of its own: open one in ui.perfetto.dev)\n",
			f->output, r->index > r->keep ? r->index - r->keep + 1 : 1, f->output,
			r->index, r->index < r->keep ? r->index : r->keep, r->index);
	if (perfetto_writer__refused(f->perfetto))
		pr_warn("trace: %" PRIu64 " polls after the Perfetto trace reached --max-size are "
			"not in it (the summary counts them)\n",
			perfetto_writer__refused(f->perfetto));
}

int trace_files__close(struct trace_files *f, struct session *s, struct trace_summary *sum,
		       const struct trace_run_totals *t)
{
	int status;

	session__output_done(s, f->perfetto_file, perfetto_writer__finish(f->perfetto, &t->totals));
	if (f->chrome)
		session__output_done(s, f->chrome_file,
				     chrome_trace__finish(f->chrome, &t->totals));
	if (f->records_file)
		session__output_done(s, f->records_file, 0);
	if (f->folded) {
		if (trace_folded__dropped(f->folded))
			pr_warn("trace: the folded stacks miss %" PRIu64 " polls (more than %u "
				"waiting for their task's poll on one thread, or out of memory)\n",
				trace_folded__dropped(f->folded), TRACE_FOLDED_MAX_PENDING);
		session__output_done(s, f->folded_file,
				     trace_folded__write(f->folded, f->folded_file->f));
	}
	if (f->dot)
		session__output_done(s, f->dot_file, trace_dot__write(f->dot, f->dot_file->f));
	if (f->summary_file)
		session__output_done(s, f->summary_file,
				     trace_summary__write_json(sum, t, f->summary_file->f));
	status = session__commit_outputs(s);
	if (status == EXIT_OK)
		report_perfetto(f);
	return status;
}

void trace_files__free(struct trace_files *f)
{
	perfetto_writer__free(f->perfetto);
	chrome_trace__free(f->chrome);
	trace_folded__free(f->folded);
	trace_dot__free(f->dot);
	memset(f, 0, sizeof(*f));
}
