// SPDX-License-Identifier: GPL-2.0
/*
 * asyncbpf trace -p PID | -- CMD ARGS...: attach to the selected poll functions of a
 * running process (or of a command started stopped before it runs any Rust code),
 * record every poll until Ctrl-C, --duration or the target's exit, then write the
 * Perfetto trace (and the other outputs asked for) and print the summary.
 * docs/tracing.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "analyze/panic_strategy.h"
#include "cli/commands.h"
#include "cli/trace_run.h"
#include "cli/trace_args.h"
#include "cli/trace_files.h"
#include "cli/trace_report.h"
#include "lib/exitcodes.h"
#include "lib/log.h"
#include "lib/privilege.h"
#include "lib/rb_budget.h"
#include "lib/sysfacts.h"
#include "select/selection.h"
#include "session/session.h"
#include "trace/probe_cost.h"
#include "trace/trace_consumer.h"
#include "trace/trace_plan.h"
#include "trace/task_locks.h"
#include "trace/trace_summary.h"
#include "trace/tracer.h"
#include "trace/wake_sampler.h"

/* The exit mode (docs/tracing.md, "Exit modes"). */
static enum plan_exits choose_exits(const struct trace_args *a, const char *path)
{
	char why[256];
	enum panic_strategy ps = panic_strategy__detect(path, why, sizeof(why));

	switch (a->exits) {
	case EXITS_RET: return PLAN_EXITS_RET;
	case EXITS_EMULATED: return PLAN_EXITS_EMULATED;
	case EXITS_URETPROBE:
		if (ps != PANIC_STRATEGY_ABORT)
			pr_warn(
			    "trace: WARNING: --exits=uretprobe on %s, which may unwind on panic "
			    "(%s): a panic unwinding through a traced poll will abort it "
			    "(\"failed to initiate panic\"); --exits=emulated is safe\n",
			    path, why);
		return PLAN_EXITS_URETPROBE;
	case EXITS_AUTO: break;
	}
	if (ps == PANIC_STRATEGY_ABORT) {
		pr_info("trace: %s cannot unwind: %s; exits use uretprobes (--exits=emulated to "
			"probe exit sites instead)\n",
			path, why);
		return PLAN_EXITS_URETPROBE;
	}
	pr_debug("trace: %s: %s; exits are probed on emulated branch sites\n", path, why);
	return PLAN_EXITS_EMULATED;
}

static void attach_progress(uint32_t done, uint32_t total)
{
	fprintf(stderr, "\rasyncbpf: trace: attaching %u/%u probes...", done, total);
	if (done + 1000 >= total)
		fputc('\n', stderr);
}

static int select_futures(const struct trace_args *a, const struct model *m, struct selection *s)
{
	if (selection__init(s, m)) {
		pr_warn("trace: out of memory\n");
		return EXIT_FAILURE_INTERNAL;
	}
	if (a->whitelist) {
		char err[512] = "";
		uint32_t unknown = 0;
		int e = whitelist__read(s, m, a->whitelist, &unknown, err, sizeof(err));

		if (e) {
			pr_warn("trace: %s\n", err);
			return exit_code_from_errno(e);
		}
		if (unknown)
			pr_warn("trace: %u whitelist entr%s match no future of %s: %s\n", unknown,
				unknown == 1 ? "y does" : "ies do", m->path, err);
	}
	for (int i = 0; i < a->nr_patterns; i++)
		if (!selection__add_pattern(s, m, a->patterns[i])) {
			char what[1024];
			snprintf(what, sizeof(what), "pattern '%s' matches no future of %s",
				 a->patterns[i], m->path);
			return empty_selection_status("trace", m, what,
						      " (try 'asyncbpf analyze --all-crates')");
		}
	if (!a->whitelist && !a->nr_patterns)
		selection__add_default(s, m, a->all_crates);
	if (a->expand != EXPAND_NONE)
		selection__expand(s, m, a->expand);
	if (!selection__count(s)) {
		char what[1024];
		snprintf(what, sizeof(what), "nothing selected in %s", m->path);
		return empty_selection_status(
		    "trace", m, what,
		    a->all_crates ? NULL
				  : " (no futures in your crates? try --all-crates or a pattern)");
	}
	return EXIT_OK;
}

/* Analyze the target, select, and build the probe plan. An exit status. */
/*
 * Task mode: the runtimes' task polls, their trees read in the kernel. Asked for
 * (--tasks): whatever it leaves out is said. The default (by_default): only when it
 * leaves no task out; else FALLBACK and the per-future probes, saying why.
 */
#define FALLBACK (-1)
static int plan_task_probes(struct trace_run *r, bool by_default)
{
	char err[1024] = "";
	int n;

	/* the trees are read with the futures' layouts: without them, what --deep says
	 * of a binary with too little debug info (and its exit status) is the answer */
	if (by_default && r->m.own_debuginfo <= DEBUGINFO_LINE_TABLES && r->m.debuginfo_note)
		return FALLBACK;
	if (!by_default && (r->a->nr_patterns || r->a->whitelist || r->a->all_crates))
		pr_warn("trace: task mode reads whole tasks: the selection (patterns, "
			"--whitelist, --all-crates) is not used; --deep traces the selection\n");
	if (!by_default)
		print_debuginfo("trace", &r->m,
				"task mode reads the futures' layouts from the DWARF: without "
				"them a task's tree is its root future only");
	n = trace_plan__build_tasks(&r->plan, &r->m, !r->a->no_wakes, err, sizeof(err));
	if (n < 0) {
		pr_warn("trace: out of memory\n");
		return EXIT_FAILURE_INTERNAL;
	}
	if (by_default && (!n || err[0] || r->plan.nr_roots_skipped)) {
		pr_info("trace: per-future probes (the default where task mode would leave tasks "
			"out: %s)\n",
			err[0] ? err
			: n    ? "root futures whose polls cannot all be ended"
			       : "no task poll to probe");
		trace_plan__free(&r->plan);
		return FALLBACK;
	}
	if (err[0])
		pr_warn("trace: task mode: %s\n", err);
	if (!n) {
		pr_warn("trace: task mode: nothing to probe in %s: no runtime task type (tokio, "
			"async-task) whose task polls can be seen, and no root future (a "
			"block_on's, a hand-written executor's) whose polls can all be ended; "
			"trace without --tasks probes futures instead\n",
			r->m.path);
		return EXIT_NO_MATCH;
	}
	if (selection__init(&r->sel, &r->m)) {
		pr_warn("trace: out of memory\n");
		return EXIT_FAILURE_INTERNAL;
	}
	pr_info("trace: task mode%s: %u task types and %u root futures (%u left out: their "
		"polls cannot all be ended), %u task-poll exit sites (%u on instructions the "
		"kernel emulates), %u return probes; %s\n",
		by_default ? " (the default; --deep probes every poll of your futures)" : "",
		r->plan.nr_task_types, r->plan.nr_root_types, r->plan.nr_roots_skipped,
		r->plan.nr_task_exits, r->plan.nr_emulated_exits, r->plan.nr_task_returns,
		r->a->top ? "one row per task type, its statistics summed in the kernel"
			  : "each task poll reads its tree of futures");
	return EXIT_OK;
}

/* Nothing asks for per-future probes: no pattern, whitelist, crate or exit choice. */
static bool task_mode_by_default(const struct trace_args *a)
{
	return !a->deep && !a->nr_patterns && !a->whitelist && !a->all_crates &&
	       a->exits == EXITS_AUTO && a->expand == EXPAND_NONE;
}

static int plan_probes(struct trace_run *r)
{
	const struct trace_args *a = r->a;
	struct target_spec spec = {0};
	char err[1024] = "";
	enum plan_exits mode;
	int status, e;

	if (session__launched(r->s))
		spec.path = session__exe(r->s);
	else
		spec.pid = session__pid(r->s);
	/* task mode ends task polls in their callers, and so do the emulated exits of
	 * poll fns whose own exits would be single-stepped: both need the call-site index */
	if (!r->model_own.borrowed) {
		status = a->tasks || a->exits == EXITS_AUTO || a->exits == EXITS_EMULATED
			     ? load_model_caller_exits("trace", &spec, &r->m)
			     : load_model("trace", &spec, &r->m);
		r->model_own.loaded = true;
		if (status)
			return status;
		r->model_own.ok = true;
	}
	if ((status = session__check_exe(r->s)))
		return status;
	if (!r->model_own.borrowed)
		print_warnings("trace", &r->m);
	/* top --locks reads task mode's trees: task mode, as with --tasks */
	if (a->tasks || a->locks || task_mode_by_default(a)) {
		status = plan_task_probes(r, !a->tasks && !a->locks);
		if (status != FALLBACK)
			return status;
	}
	if ((status = select_futures(a, &r->m, &r->sel)))
		return status;
	print_debuginfo(
	    a->top ? "top" : "trace", &r->m,
	    a->top ? "without layouts the results of polls are unknown: polls/s, busy %, poll "
		     "times and blocked time are measured; live instances and cancellations, "
		     "which need results and states, are not"
		   : "without layouts every poll's result (Ready/Pending) and await point is "
		     "recorded as unknown (reason no_layout), and a drop cannot be told a "
		     "cancellation; poll counts, durations, nesting and blocking are measured");
	mode = choose_exits(a, r->m.path);
	if ((e = trace_plan__build(&r->plan, &r->m, &r->sel, mode,
				   (a->no_cancel ? 0 : PLAN_DROPS) | (a->no_wakes ? 0 : PLAN_WAKES),
				   err, sizeof(err)))) {
		pr_warn("trace: %s\n", err);
		if (e == -ENOENT)
			trace_report__nothing_probed(&r->m, &r->sel, a->all_crates);
		return e == -ENOENT ? EXIT_NO_MATCH : EXIT_FAILURE_INTERNAL;
	}
	if (a->max_probes && r->plan.nr > a->max_probes) {
		pr_warn(
		    "trace: the selection needs %u probes, more than the limit of %lu: narrow it "
		    "(patterns, --whitelist) or raise the limit with --max-probes %u (0: no "
		    "limit); every probe hit costs the target a trap\n",
		    r->plan.nr, a->max_probes, r->plan.nr);
		return EXIT_USAGE;
	}
	trace_report__plan(&r->plan, mode);
	trace_report__problems(&r->plan, &r->m);
	trace_report__inlined_only(&r->m, &r->sel);
	return EXIT_OK;
}

/*
 * What a probe hit costs here, measured on asyncbpf itself before anything is attached
 * to the target, so that a poll's duration can leave out its traced children's probes
 * (docs/tracing.md, "Probe cost"). A failure only costs that correction.
 */
static int measure_probe_costs(struct trace_run *r)
{
	struct probe_costs c;
	char err[512] = "";
	uint64_t *per_poll;
	int e = probe_costs__measure(&c, 400, 5, err, sizeof(err));

	if (e) {
		pr_warn("trace: WARNING: %s: durations will include the probes of traced polls "
			"inside them\n",
			err);
		return EXIT_OK;
	}
	per_poll = calloc(r->m.nr_polls ? r->m.nr_polls : 1, sizeof(*per_poll));
	if (!per_poll)
		return EXIT_FAILURE_INTERNAL;
	probe_costs__per_poll(&c, &r->plan, r->m.nr_polls, per_poll);
	e = trace_consumer__set_probe_costs(r->consumer, per_poll, r->m.nr_polls);
	free(per_poll);
	if (e)
		return EXIT_FAILURE_INTERNAL;
	trace_summary__set_probe_costs(&r->sum, &c);
	pr_debug("trace: probe cost per hit: emulated %" PRIu64 " ns, single-stepped %" PRIu64
		 " ns, return %" PRIu64 " ns\n",
		 c.emulated_ns, c.stepped_ns, c.returned_ns);
	return EXIT_OK;
}

/*
 * The same measurement after detaching, when durations were corrected with the first:
 * on a VM a hit's cost moves with the host's load (a single-step 5-8 µs here from one
 * run to the next), and the summary says by how much it moved. A failure only costs
 * that statement.
 */
static void measure_probe_costs_again(struct trace_run *r)
{
	struct probe_costs c;
	char err[512] = "";

	if (!r->sum.costs.measured || !r->sum.probe_adjusted)
		return;
	if (probe_costs__measure(&c, 400, 5, err, sizeof(err))) {
		pr_warn("trace: WARNING: measuring the probe cost again after detaching: %s\n",
			err);
		return;
	}
	trace_summary__set_probe_costs_end(&r->sum, &c);
}

static int resolve_woken(void *ctx, uint8_t runtime, uint64_t header, uint64_t vtable,
			 uint64_t *self)
{
	return tracer__resolve_woken(ctx, runtime, header, vtable, self);
}

/* The share of the time the wake probes are attached (--wake-sample, its default). */
static double wake_fraction(const struct trace_run *r)
{
	if (r->a->wake_sample > 0)
		return r->a->wake_sample;
	return r->plan.task_mode ? WAKE_SAMPLE_DEFAULT : 1;
}

/* top: polls while the sampled wake probes are attached count as window_polls */
static void top_wake_window(void *ctx, bool attached)
{
	tracer__set_wake_window(ctx, attached);
}

/* The consumer, the BPF side loaded and attached, the ring buffer. An exit status. */
static int start_tracer(struct trace_run *r)
{
	const struct trace_args *a = r->a;
	struct tracer_opts o = {
	    .pid = session__pid(r->s),
	    .attach = a->attach,
	    .progress = isatty(STDERR_FILENO) ? attach_progress : NULL,
	    .path = session__probe_path(r->s),
	    .name = session__exe(r->s),
	    .ringbuf_size = a->ringbuf_size,
	    .verbose = a->verbose,
	    .blocking = !a->no_blocking,
	    .stats_only = a->top,
	    .stats_trees = a->top && a->locks,
	    .wakes_apart = r->plan.nr_wakes && wake_fraction(r) < 1,
	};
	struct trace_sinks sinks;
	char err[1024] = "";
	uint64_t load_ns, attach_ns;
	int e;

	if (trace_summary__init(&r->sum, &r->m)) {
		pr_warn("trace: out of memory\n");
		return EXIT_FAILURE_INTERNAL;
	}
	trace_files__sinks(&r->files, &r->sum, &sinks);
	r->consumer = trace_consumer__new(&r->m, o.pid, &sinks);
	r->t = tracer__new(&o);
	if (!r->consumer || !r->t || measure_probe_costs(r)) {
		pr_warn("trace: out of memory\n");
		return EXIT_FAILURE_INTERNAL;
	}
	load_ns = sysfacts__now_ns();
	e = tracer__load(r->t, &r->plan, &r->m, err, sizeof(err));
	attach_ns = sysfacts__now_ns();
	if (!e)
		e = tracer__attach(r->t, &r->plan, err, sizeof(err));
	if (e) {
		pr_warn("trace: %s\n", err);
		return e == -ESRCH		     ? EXIT_NO_INPUT
		       : e == -EPERM || e == -EACCES ? EXIT_NO_PERMISSION
						     : EXIT_KERNEL;
	}
	if (tracer__wakes_apart(r->t)) {
		r->ws = wake_sampler__new(tracer__prog_fd(r->t), o.path, o.pid, &r->plan,
					  wake_fraction(r), WAKE_SAMPLE_PERIOD_NS);
		if (!r->ws) {
			pr_warn("trace: out of memory\n");
			return EXIT_FAILURE_INTERNAL;
		}
		if (a->top)
			wake_sampler__on_toggle(r->ws, top_wake_window, r->t);
	}
	r->budget = (struct rb_budget){.fn = trace_consumer__handle, .ctx = r->consumer};
	r->rb = ring_buffer__new(tracer__ringbuf_fd(r->t), rb_budget__sample, &r->budget, NULL);
	if (!r->rb) {
		pr_warn("trace: cannot set up the ring buffer consumer: %s\n", strerror(errno));
		return EXIT_KERNEL;
	}
	tracer__set_ready(r->t, true);
	r->attached_ns = sysfacts__now_ns();
	r->cpu_start = sysfacts__process_cpu_ns((int)o.pid);
	r->switches_start =
	    !sysfacts__process_switches((int)o.pid, &r->voluntary_start, &r->involuntary_start);
	pr_info("trace: attached %" PRIu64 " probes to %s (pid %d) in %.1f ms through %s "
		"(BPF load and verification %.1f ms); Ctrl-C stops\n",
		tracer__probes_attached(r->t), session__exe(r->s), (int)o.pid,
		(double)(sysfacts__now_ns() - attach_ns) / 1e6, tracer__links(r->t),
		(double)(attach_ns - load_ns) / 1e6);
	/* a task is a runtime's task: its root future (docs/tracing.md, "Tasks") */
	if (r->plan.roots_known && trace_summary__set_task_roots(&r->sum, r->plan.task_roots)) {
		pr_warn("trace: out of memory\n");
		return EXIT_FAILURE_INTERNAL;
	}
	const char *off = tracer__blocking_off(r->t);
	trace_summary__set_blocking(&r->sum, off, (uint64_t)(a->block_threshold * 1e9));
	trace_summary__set_cancel(&r->sum, r->plan.nr_drops > 0);
	trace_summary__set_wakes(&r->sum, r->plan.nr_wakes > 0);
	r->sum.task_mode = r->plan.task_mode;
	trace_consumer__set_wake_resolver(r->consumer, resolve_woken, r->t);
	trace_consumer__set_root_types(r->consumer, r->plan.root_types, r->plan.nr_root_types);
	trace_consumer__set_locks_only(r->consumer, r->a->top);
	tracer__fill_wake_types(r->t); /* -p: now; launch mode: once the command exec'd */
	if (off && !a->no_blocking)
		pr_warn("trace: blocking inside polls is not watched: %s\n", off);
	return EXIT_OK;
}

/* ---- the stop loop's hooks ---- */

static uint64_t hook_pulse(void *ctx, uint64_t now)
{
	struct trace_run *r = ctx;

	return wake_sampler__pulse(r->ws, now);
}

static uint32_t hook_execs(void *ctx)
{
	const struct trace_run *r = ctx;
	uint32_t n = tracer__exec_count(r->t);

	if (n) /* the launched command runs its own image: its vtables are mapped */
		tracer__fill_wake_types(r->t);
	return n;
}

/* launch mode: the command stopped at its exec, nothing of it run yet */
static void hook_exec_stopped(void *ctx)
{
	struct trace_run *r = ctx;

	tracer__fill_wake_types(r->t);
}

static bool hook_full(void *ctx)
{
	struct trace_run *r = ctx;

	if (r->a->top)
		return top_run__keys(r);
	return trace_files__full(&r->files);
}

/* The live status line (a terminal only): rates over the last second, drops loudly. */
static void hook_status(void *ctx, uint64_t now, uint64_t start)
{
	struct trace_run *r = ctx;
	uint64_t last = r->last_status_ns ? r->last_status_ns : start;
	double dt = (double)(now - last) / 1e9;
	__u64 c[COUNTER_COUNT];

	if (tracer__read_counters(r->t, c))
		return;
	fprintf(stderr,
		"\r\033[Kasyncbpf: %.0f s  %" PRIu64 " polls  %.0f polls/s  %.0f probe hits/s  "
		"%" PRIu64 " probes  %s%" PRIu64 " dropped%s",
		(double)(now - start) / 1e9, r->sum.records,
		(double)(r->sum.records - r->last_records) / dt,
		(double)(c[COUNTER_HITS] - r->last_hits) / dt, tracer__probes_attached(r->t),
		c[COUNTER_DROPPED] ? "\033[1m" : "", (uint64_t)c[COUNTER_DROPPED],
		c[COUNTER_DROPPED] ? "\033[0m" : "");
	r->last_status_ns = now;
	r->last_records = r->sum.records;
	r->last_hits = c[COUNTER_HITS];
	r->status_printed = true;
}

/* Detach, drain, read the statistics and the polls still open; fill the totals. */
void trace_run__stop(struct trace_run *r)
{
	struct trace_run_totals *t = &r->totals;
	uint32_t nr_polls = tracer__nr_polls(r->t), open_polls = 0;
	struct poll_stats *stats = calloc(nr_polls, sizeof(*stats));
	__u64 counters[COUNTER_COUNT] = {0};
	char err[1024] = "";

	uint64_t vol = 0, invol = 0;
	int64_t cpu_end = sysfacts__process_cpu_ns((int)session__pid(r->s));
	bool switches =
	    r->switches_start && !sysfacts__process_switches((int)session__pid(r->s), &vol, &invol);

	r->detach_ns = sysfacts__now_ns();
	if (r->ws) {
		wake_sampler__stop(r->ws, r->detach_ns);
		wake_sampler__stats(r->ws, &r->sum.wake_sample);
		r->sum.wakes_sampled = true;
	}
	tracer__detach(r->t);
	pr_info("trace: detached %" PRIu64 " probes in %.1f ms\n", tracer__probes_attached(r->t),
		(double)(sysfacts__now_ns() - r->detach_ns) / 1e6);
	/* what arrived before the links were gone */
	rb_budget__drain(r->rb, &r->budget, RB_BUDGET_ROUND);
	bool counters_read = stats && !tracer__read_stats(r->t, stats, counters);
	if (counters_read) {
		/* polls still running (or blocked) now: after every other record, as "running" */
		if (tracer__dump_open(r->t, stats, trace_consumer__handle, r->consumer, &open_polls,
				      err, sizeof(err)))
			pr_warn("trace: %s\n", err);
		r->sum.blocked_at_stop = tracer__blocked_at_stop(r->t);
		for (uint32_t p = 0; p < nr_polls; p++) {
			t->totals.dropped += stats[p].dropped;
			t->totals.truncated += stats[p].truncated;
			t->bpf_records += stats[p].records;
		}
		if (trace_summary__set_bpf_stats(&r->sum, stats, nr_polls))
			pr_warn("trace: out of memory: the summary ignores the BPF histograms\n");
	} else {
		pr_warn("trace: cannot read the BPF statistics\n");
	}
	free(stats);
	measure_probe_costs_again(r);
	t->totals.polls = r->sum.records;
	t->totals.probes_attached = tracer__probes_attached(r->t);
	t->totals.probes_failed = tracer__probes_failed(r->t);
	/* tracing ends where detaching begins */
	t->totals.duration_ns =
	    r->detach_ns - (session__start_ns(r->s) ? session__start_ns(r->s) : r->attached_ns);
	t->unprobeable_exits = r->plan.nr_unprobeable_exits;
	t->unmatched_exits = counters[COUNTER_UNMATCHED_EXIT];
	t->stack_overflow = counters[COUNTER_STACK_OVERFLOW];
	t->no_storage = counters[COUNTER_NO_STORAGE];
	t->hits = counters[COUNTER_HITS];
	t->task_trees = counters[COUNTER_TREES];
	t->task_dropped = counters[COUNTER_TASK_DROPPED];
	/* the tracer's own cost: its hits by class at the cost measured at start */
	t->cost.hits_known = counters_read;
	tracer_cost__set_hits(&t->cost, counters, NULL);
	t->cost.per_hit = r->sum.costs;
	t->cost.target_cpu_ns =
	    r->cpu_start >= 0 && cpu_end >= r->cpu_start ? cpu_end - r->cpu_start : -1;
	t->cost.offcpu = r->sum.tracer_offcpu;
	t->cost.offcpu_ns = r->sum.tracer_offcpu_ns;
	t->cost.duration_ns = t->totals.duration_ns;
	t->cost.stats_only = r->a->top && !r->a->locks;
	t->kernel_voluntary =
	    switches && vol >= r->voluntary_start ? (int64_t)(vol - r->voluntary_start) : -1;
	t->kernel_involuntary = switches && invol >= r->involuntary_start
				    ? (int64_t)(invol - r->involuntary_start)
				    : -1;
	if (!r->a->top && t->bpf_records != t->totals.polls + t->totals.dropped)
		pr_warn("trace: accounting mismatch: BPF made %" PRIu64 " records, %" PRIu64
			" arrived, %" PRIu64 " dropped\n",
			t->bpf_records, t->totals.polls, t->totals.dropped);
}

/* Outputs, the summary, the warnings that must be seen last. An exit status. */
static int report(struct trace_run *r)
{
	int status;

	/* waits and holds still open stood until the probes were detached */
	if (r->sum.locks)
		task_locks__finish(r->sum.locks, r->detach_ns);
	status = trace_files__close(&r->files, r->s, &r->sum, &r->totals);

	if (trace_consumer__write_err(r->consumer))
		pr_warn("trace: a trace writer lost data: %s\n",
			strerror(-trace_consumer__write_err(r->consumer)));
	trace_summary__print(&r->sum, &r->totals, session__launched(r->s) ? stderr : stdout);
	if (r->totals.totals.dropped)
		pr_warn("trace: WARNING: %" PRIu64 " records were DROPPED (ring buffer full)\n",
			r->totals.totals.dropped);
	return status;
}

void trace_run__free(struct trace_run *r)
{
	top_prom__stop(r->prom);
	free(r->top_prev);
	ring_buffer__free(r->rb);
	wake_sampler__free(r->ws);
	tracer__free(r->t);
	trace_consumer__free(r->consumer);
	trace_files__free(&r->files);
	if (r->sum.polls)
		trace_summary__free(&r->sum);
	trace_plan__free(&r->plan);
	selection__free(&r->sel);
	run_model__free(&r->m, &r->model_own);
	session__free(r->s);
}

int trace_run__open_session(struct trace_run *r)
{
	struct session_opts so = {.cmd = r->a->top ? "top" : "trace",
				  .verb = "tracing",
				  .pid = r->a->pid,
				  .duration = r->a->duration};

	r->cpu_start = -1;
	r->top_key = r->a->sort;
	return session__open(&so, &r->s);
}

int trace_run__start(struct trace_run *r)
{
	int status = plan_probes(r);

	return status ? status : start_tracer(r);
}

int trace__run(const struct trace_args *a)
{
	struct session_opts so = {.cmd = a->top ? "top" : "trace",
				  .verb = "tracing",
				  .pid = a->pid,
				  .command = a->command,
				  .duration = a->duration};
	struct trace_run r = {.a = a, .cpu_start = -1};
	struct session_hooks hooks = {.exec_count = hook_execs,
				      .should_stop = hook_full,
				      .tick = hook_status,
				      .pulse = hook_pulse,
				      .exec_stopped = hook_exec_stopped,
				      .ctx = &r};
	struct termios saved;
	bool keys = false;

	r.top_key = a->sort;
	if (a->top) {
		log__alias("trace", "top"); /* the tracer's messages speak as top */
		hooks.tick = top_run__tick;
		hooks.tick_always = true;
		hooks.tick_ns = (uint64_t)(a->interval * 1e9);
	}
	enum session_stop why;
	int status;

	if ((a->prometheus && (status = top_prom__start(a->prometheus, a->prom_top, &r.prom))) ||
	    (status = session__open(&so, &r.s)) || (status = plan_probes(&r)) ||
	    (status = session__spawn(r.s)) ||
	    (!a->top && (status = trace_files__open(&r.files, r.s, a, &r.m))) ||
	    (status = start_tracer(&r)))
		goto out;
	keys = a->top && !a->batch && top_run__raw_keys(&saved);
	if (a->top)
		top_run__tick(&r, sysfacts__now_ns(), sysfacts__now_ns()); /* the baseline */
	why = session__run(r.s, r.rb, &r.budget, &hooks);
	if (keys)
		top_run__restore_keys(&saved);
	if (a->top) {
		trace_run__stop(&r);
		tracer_cost__print(&r.totals.cost, stderr); /* what watching cost */
		status = session__finish(r.s, EXIT_OK);
		goto out;
	}
	if (r.status_printed)
		fputc('\n', stderr);
	if (why == SESSION_STOP_HOOK)
		pr_warn("trace: the Perfetto trace reached --max-size (%.1f MiB): tracing stopped "
			"(a larger --max-size, or --ring K to keep the newest data instead)\n",
			(double)a->max_size / (1 << 20));
	trace_run__stop(&r);
	status = report(&r);
	status = session__finish(r.s, status);
out:
	trace_run__free(&r);
	return status;
}

int cmd_trace(int argc, char **argv)
{
	struct trace_args a = {0};
	int r = trace_args__parse(argc, argv, &a);

	if (r)
		return r < 0 ? EXIT_OK : r;
	if (!privilege__bpf_ok()) {
		privilege__explain("trace");
		return EXIT_NO_PERMISSION;
	}
	return trace__run(&a);
}
