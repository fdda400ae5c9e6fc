// SPDX-License-Identifier: GPL-2.0
/*
 * One run of the profiler on one process (profile_run.h): the analysis, the outputs
 * or the --every writer, the profiler attached, the intervals, the report.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <bpf/libbpf.h>

#include "cli/commands.h"
#include "cli/profile_args.h"
#include "cli/profile_every.h"
#include "cli/profile_fleet.h"
#include "cli/profile_run.h"
#include "export/profile_export.h"
#include "lib/exitcodes.h"
#include "lib/log.h"
#include "lib/outfile.h"
#include "lib/privilege.h"
#include "lib/rb_budget.h"
#include "lib/sysfacts.h"
#include "profile/profile_consumer.h"
#include "profile/profile_summary.h"
#include "profile/profiler.h"
#include "session/session.h"

static const char *const out_what[OUT_COUNT] = {
    "SVG flame graph", "folded stacks", "folded off-CPU stacks", "pprof profile", "Perfetto trace"};

/* Analyze the target: the model names the polls (without DWARF, from symbols). */
static int analyze(struct profile_run *r)
{
	struct target_spec spec = {0};
	int status;

	if (session__launched(r->s))
		spec.path = session__exe(r->s);
	else
		spec.pid = session__pid(r->s);
	if (!r->model_own.borrowed) {
		status = load_model("profile", &spec, &r->m);
		r->model_own.loaded = true;
		if (status)
			return status;
		r->model_own.ok = true;
	}
	if ((status = session__check_exe(r->s)))
		return status;
	if (r->model_own.borrowed)
		return EXIT_OK; /* said for the process it was made for */
	print_warnings("profile", &r->m);
	/* limited DWARF names every poll, inlined ones too: all a profile needs */
	if (r->m.own_debuginfo < DEBUGINFO_LIMITED)
		print_debuginfo("profile", &r->m,
				r->m.own_debuginfo == DEBUGINFO_NONE
				    ? "samples are unwound (CFI) and named by their symbols: polls "
				      "inlined into callers are not seen, and async fns show as "
				      "`{{closure}}` frames"
				    : "polls kept out of line are named by their symbols; those "
				      "inlined into callers show as bare `{async_fn#N}` frames");
	return EXIT_OK;
}

static int open_outputs(struct profile_run *r)
{
	const struct profile_args *a = r->a;
	const char *paths[OUT_COUNT] = {r->svg, a->folded, a->folded_offcpu, a->pprof, a->perfetto};

	if (a->svg)
		snprintf(r->svg, sizeof(r->svg), "%s", a->svg);
	else
		snprintf(r->svg, sizeof(r->svg), "asyncbpf-profile-%d.svg",
			 (int)session__pid(r->s));
	for (int i = 0; i < OUT_COUNT; i++)
		if (paths[i] && !(r->files[i] = session__output(r->s, paths[i], out_what[i])))
			return EXIT_OUTPUT;
	return EXIT_OK;
}

/* The consumer, the BPF side loaded and attached, the ring buffer. An exit status. */
static int start_profiler(struct profile_run *r)
{
	const struct profile_args *a = r->a;
	struct profiler_opts o = {
	    .pid = session__pid(r->s),
	    .freq_hz = a->freq,
	    .stack_size = (uint32_t)a->stack_size,
	    .ringbuf_size = a->ringbuf_size,
	    .offcpu = a->offcpu,
	    .verbose = a->verbose,
	};
	char err[1024] = "";
	int e;

	r->c = profile_consumer__new(&r->m, o.pid, a->replay_rounds ? 2000 : 0);
	r->p = profiler__new(&o);
	if (!r->c || !r->p) {
		pr_warn("profile: out of memory\n");
		return EXIT_FAILURE_INTERNAL;
	}
	/* -p: read the mappings now, so that a failure is reported before sampling */
	if (!session__launched(r->s) &&
	    (e = profile_consumer__open_unwinder(r->c, err, sizeof(err)))) {
		pr_warn("profile: %s\n", err);
		return exit_code_from_errno(e);
	}
	e = profiler__load(r->p, err, sizeof(err));
	if (!e && a->replay_rounds && profiler__enable_run_stats(r->p))
		pr_warn("profile: cannot enable BPF run-time statistics\n");
	if (!e)
		e = profiler__attach(r->p, err, sizeof(err));
	if (e) {
		pr_warn("profile: %s\n", err);
		return e == -EPERM || e == -EACCES ? EXIT_NO_PERMISSION : EXIT_KERNEL;
	}
	r->budget = (struct rb_budget){.fn = profile_consumer__handle, .ctx = r->c};
	r->rb = ring_buffer__new(profiler__ringbuf_fd(r->p), rb_budget__sample, &r->budget, NULL);
	profiler__offcpu_fds(r->p, &r->offcpu);
	if (r->rb && r->offcpu.events >= 0 &&
	    ring_buffer__add(r->rb, r->offcpu.events, rb_budget__sample, &r->budget)) {
		ring_buffer__free(r->rb);
		r->rb = NULL;
	}
	if (!r->rb) {
		pr_warn("profile: cannot set up the ring buffer consumer: %s\n", strerror(errno));
		return EXIT_KERNEL;
	}
	if (a->offcpu && profile_consumer__enable_offcpu(r->c, r->offcpu.rules)) {
		pr_warn("profile: out of memory\n");
		return EXIT_FAILURE_INTERNAL;
	}
	pr_info("profile: sampling pid %d (%s) with %s at %u Hz on %d CPUs, %" PRIu64
		" bytes of stack per sample%s; Ctrl-C stops\n",
		(int)o.pid, session__comm(r->s), profiler__event(r->p), a->freq,
		profiler__nr_attached(r->p), a->stack_size, a->offcpu ? ", off-CPU too" : "");
	return EXIT_OK;
}

static uint32_t hook_execs(void *ctx)
{
	const struct profile_run *r = ctx;

	return profiler__exec_count(r->p);
}

/* What the outputs show, from the consumer's projection between start_ns and end_ns. */
static void fill_data(struct profile_run *r, uint64_t start_ns, uint64_t end_ns)
{
	const struct profile_counts *n = profile_consumer__counts(r->c);

	r->d = (struct profile_data){
	    .pid = (uint32_t)session__pid(r->s),
	    .process_name = session__comm(r->s)[0] ? session__comm(r->s) : NULL,
	    .event = profiler__event(r->p),
	    .freq_hz = r->a->freq,
	    .period_ns = 1000000000ull / r->a->freq,
	    .start_ns = start_ns,
	    .end_ns = end_ns,
	    .dropped = r->counters[PCOUNTER_DROPPED],
	    .stack_size = (uint32_t)r->a->stack_size,
	    .cut_short = n->reasons[UNWIND_STACK_SHORT],
	    .offcpu_lost = r->counters[PCOUNTER_OFFCPU_LOST] +
			   r->counters[PCOUNTER_OFFCPU_UNENDED] + n->off.unknown,
	    .offcpu_lost_ns = r->counters[PCOUNTER_OFFCPU_LOST_NS] + n->off.unknown_ns,
	    .offcpu = r->a->offcpu,
	};
	profile_consumer__fill(r->c, &r->d);
}

/* The counters, the samples walked so far symbolized and projected, the kernel's
 * off-CPU sums (what grew since the last call): r->d between start_ns and end_ns. */
static void gather(struct profile_run *r, uint64_t start_ns, uint64_t end_ns)
{
	int e;

	if (profiler__read_counters(r->p, r->counters))
		pr_warn("profile: cannot read the BPF counters\n");
	profile_consumer__finish(r->c);
	if (r->a->offcpu && (e = profile_consumer__add_offcpu(r->c, r->offcpu.times,
							      r->offcpu.stacks, r->offcpu.pending)))
		pr_warn("profile: cannot read the off-CPU sums from the kernel: %s\n",
			strerror(-e));
	fill_data(r, start_ns, end_ns);
}

void profile_run__interval(struct profile_run *r, uint64_t now)
{
	gather(r, r->interval_start_ns, now);
	profile_every__write(r->every, &r->d); /* a failure is said there; sampling goes on */
	if (profile_consumer__next_interval(r->c))
		pr_warn("profile: out of memory: the next interval's profile adds to this one's\n");
	r->interval_start_ns = now;
}

static void hook_interval(void *ctx, uint64_t now, uint64_t start)
{
	(void)start;
	profile_run__interval(ctx, now);
}

void profile_run__stop(struct profile_run *r)
{
	const struct profile_counts *n;
	uint64_t end_ns;

	/* a zombie still says: not reaped yet */
	r->cpu_end = sysfacts__process_cpu_ns((int)session__pid(r->s));
	profiler__detach(r->p);
	end_ns = sysfacts__now_ns();
	/* what arrived before the events were gone */
	rb_budget__drain(r->rb, &r->budget, RB_BUDGET_ROUND);
	getrusage(RUSAGE_SELF, &r->ru1);
	/* the samples walked while sampling, symbolized now that sampling has stopped */
	gather(r, r->every ? r->interval_start_ns : session__start_ns(r->s), end_ns);
	n = profile_consumer__counts(r->c);
	if (n->error)
		pr_warn("profile: out of memory: some samples are missing from the outputs\n");
	if (n->bad_records)
		pr_warn("profile: %" PRIu64 " malformed ring buffer records ignored\n",
			n->bad_records);
	if (!n->have_unwinder && n->received)
		pr_warn("profile: could not read the target's mappings, nothing was unwound: %s\n",
			n->unwind_err);
	if (r->counters[PCOUNTER_SAMPLES] < n->received ||
	    r->counters[PCOUNTER_OFFCPU_LEARN] < n->off.unwound)
		pr_warn("profile: accounting mismatch: BPF emitted %" PRIu64 " samples and %" PRIu64
			" off-CPU stacks, %" PRIu64 " and %" PRIu64 " arrived\n",
			r->counters[PCOUNTER_SAMPLES], r->counters[PCOUNTER_OFFCPU_LEARN],
			n->received, n->off.unwound);
}

static int write_one(int i, FILE *f, const struct profile_data *d, const char *title)
{
	switch (i) {
	case OUT_SVG: return flamegraph_svg__write(f, d, title);
	case OUT_FOLDED: return folded__write(f, d, 0);
	case OUT_FOLDED_OFFCPU: return folded__write(f, d, 1);
	case OUT_PPROF: return pprof__write(f, d);
	default: return perfetto_profile__write(f, d);
	}
}

static int write_outputs(struct profile_run *r)
{
	const struct profile_data *d = &r->d;
	char title[256];

	snprintf(title, sizeof(title), "asyncbpf profile: %s (pid %u), %s at %u Hz",
		 d->process_name ? d->process_name : "?", d->pid, d->event, d->freq_hz);
	for (int i = 0; i < OUT_COUNT; i++) {
		int e;

		if (!r->files[i])
			continue;
		e = write_one(i, r->files[i]->f, d, title);
		if (e == -ENOSYS) {
			pr_warn("profile: this asyncbpf was built without the %s writer: %s not "
				"written\n",
				out_what[i], r->files[i]->path);
			session__output_drop(r->s, r->files[i]);
			r->files[i] = NULL;
			continue;
		}
		session__output_done(r->s, r->files[i], e);
	}
	return session__commit_outputs(r->s);
}

/* --every: the last interval's file, and what was written; EXIT_OUTPUT when any
 * interval's file could not be. */
static int write_last_interval(struct profile_run *r, bool summary)
{
	uint64_t written, failed, removed;

	profile_every__write(r->every, &r->d);
	profile_every__counts(r->every, &written, &failed, &removed);
	pr_info("profile: --every: pid %d: %" PRIu64 " profiles written to %s, %" PRIu64
		" removed past --keep/--keep-size%s\n",
		(int)session__pid(r->s), written, profile_every__dir(r->every), removed,
		summary ? "; the summary below is of the last interval" : "");
	if (failed) {
		pr_warn("profile: --every: pid %d: %" PRIu64 " intervals' profiles could NOT be "
			"written (said above as they happened)\n",
			(int)session__pid(r->s), failed);
		return EXIT_OUTPUT;
	}
	return EXIT_OK;
}

/* One line a benchmark can parse (bench/profile.sh): -v or --bench-replay. */
static void print_stats_line(const struct profile_run *r)
{
	const struct profile_counts *n = profile_consumer__counts(r->c);
	struct rusage self, kids;
	uint64_t pcs, refreshes, run_ns = 0, run_cnt = 0;
	double phase = (double)(r->ru1.ru_utime.tv_sec - r->ru0.ru_utime.tv_sec +
				r->ru1.ru_stime.tv_sec - r->ru0.ru_stime.tv_sec) +
		       (double)(r->ru1.ru_utime.tv_usec - r->ru0.ru_utime.tv_usec +
				r->ru1.ru_stime.tv_usec - r->ru0.ru_stime.tv_usec) /
			   1e6;

	char depths[256] = "";

	for (int k = 0; k < PROFILE_DEPTH_BUCKETS; k++)
		snprintf(depths + strlen(depths), sizeof(depths) - strlen(depths), "%s%" PRIu64,
			 k ? "," : "", n->depth_hist[k]);
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	profile_consumer__unwinder_stats(r->c, &pcs, &refreshes);
	profiler__run_stats(r->p, &run_ns, &run_cnt);
	fprintf(stderr,
		"asyncbpf: profile: stats samples=%" PRIu64 " cpu_s=%.6f self_cpu_s=%.6f "
		"target_cpu_s=%.6f unwind_cpu_s=%.6f walk_cpu_s=%.6f symbolize_cpu_s=%.6f "
		"cached_pcs=%" PRIu64 " refreshes=%" PRIu64 " bpf_run_ns=%" PRIu64
		" bpf_run_cnt=%" PRIu64 " depth_max=%" PRIu64 " depth_kib_log2=%s\n",
		n->received + n->off.unwound, phase,
		(double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec) +
		    (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec) / 1e6,
		(double)(kids.ru_utime.tv_sec + kids.ru_stime.tv_sec) +
		    (double)(kids.ru_utime.tv_usec + kids.ru_stime.tv_usec) / 1e6,
		(double)(n->walk_cpu_ns + n->symbolize_cpu_ns) / 1e9, (double)n->walk_cpu_ns / 1e9,
		(double)n->symbolize_cpu_ns / 1e9, pcs, refreshes, run_ns, run_cnt, n->depth_max,
		depths);
}

int profile_run__report(struct profile_run *r, bool summary)
{
	const struct profile_args *a = r->a;
	int status = r->every ? write_last_interval(r, summary) : write_outputs(r);

	if (summary)
		profile_summary__print(
		    session__launched(r->s) ? stderr : stdout, profile_consumer__counts(r->c),
		    &r->d, r->counters, a->offcpu,
		    r->cpu_start >= 0 && r->cpu_end >= r->cpu_start ? r->cpu_end - r->cpu_start
								    : -1);
	if (r->counters[PCOUNTER_DROPPED])
		pr_warn("profile: WARNING: %" PRIu64 " samples were DROPPED (ring buffer full: "
			"--ringbuf-size, or a lower -F)\n",
			r->counters[PCOUNTER_DROPPED]);
	if (a->replay_rounds)
		profile_consumer__bench_replay(r->c, &r->m, a->replay_rounds);
	return status;
}

void profile_run__free(struct profile_run *r)
{
	profile_every__close(r->every);
	ring_buffer__free(r->rb);
	profiler__free(r->p);
	profile_consumer__free(r->c);
	run_model__free(&r->m, &r->model_own);
	session__free(r->s);
}

int profile_run__open_session(struct profile_run *r)
{
	struct session_opts so = {.cmd = "profile",
				  .verb = "profiling",
				  .pid = r->a->pid,
				  .command = r->a->command,
				  .duration = r->a->duration};

	return session__open(&so, &r->s);
}

int profile_run__start(struct profile_run *r)
{
	const struct profile_args *a = r->a;
	int status;

	if ((status = analyze(r)) || (status = session__spawn(r->s)) ||
	    (status = a->every ? profile_every__open(a->pprof_dir, a->keep, a->keep_bytes,
						     (int)session__pid(r->s), &r->every)
			       : open_outputs(r)) ||
	    (status = start_profiler(r)))
		return status;
	getrusage(RUSAGE_SELF, &r->ru0);
	r->cpu_start = sysfacts__process_cpu_ns((int)session__pid(r->s));
	r->interval_start_ns = sysfacts__now_ns();
	return EXIT_OK;
}

void profile_run__hooks(struct profile_run *r, struct session_hooks *h)
{
	*h = (struct session_hooks){.exec_count = hook_execs, .ctx = r};
	if (r->a->every) { /* a pprof file per interval: the session's tick */
		h->tick = hook_interval;
		h->tick_ns = (uint64_t)(r->a->every * 1e9);
		h->tick_always = true;
	}
}

void profile_run__print_stats(const struct profile_run *r)
{
	print_stats_line(r);
}
