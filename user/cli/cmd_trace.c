// SPDX-License-Identifier: GPL-2.0
/*
 * asyncbpf trace -p PID | -- CMD ARGS...: attach to the selected poll functions of a
 * running process (or of a command started stopped before it runs any Rust code),
 * record every poll until Ctrl-C, --duration or the target's exit, then write the
 * Perfetto trace (and Chrome JSON) and print the summary. docs/tracing.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "cli/commands.h"
#include "lib/rb_budget.h"
#include "lib/exitcodes.h"
#include "lib/launch.h"
#include "lib/log.h"
#include "lib/outfile.h"
#include "analyze/panic_strategy.h"
#include "lib/privilege.h"
#include "select/selection.h"
#include "lib/sysfacts.h"
#include "cli/trace_args.h"
#include "trace/tracer.h"

static volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	(void)sig;
	exiting = 1;
}

/* The exit mode (docs/tracing.md, "Exit modes"): true for uretprobes. */
static bool choose_exits(const struct trace_args *a, const char *path)
{
	char why[256];
	enum panic_strategy ps = panic_strategy__detect(path, why, sizeof(why));

	switch (a->exits) {
	case EXITS_RET: return false;
	case EXITS_URETPROBE:
		if (ps != PANIC_STRATEGY_ABORT)
			pr_warn(
			    "trace: WARNING: --exits=uretprobe on %s, which may unwind on panic "
			    "(%s): a panic unwinding through a traced poll will abort it "
			    "(\"failed to initiate panic\"); --exits=ret is safe\n",
			    path, why);
		return true;
	case EXITS_AUTO: break;
	}
	if (ps == PANIC_STRATEGY_ABORT) {
		pr_info("trace: %s cannot unwind: %s; exits use uretprobes (--exits=ret to "
			"probe every `ret` instead)\n",
			path, why);
		return true;
	}
	pr_debug("trace: %s: %s; exits are probed on `ret` instructions\n", path, why);
	return false;
}

/* One line per poll fn that is not (fully) probed: 10 unless -v, then the counts. */
static void report_plan_problems(const struct trace_plan *plan, const struct model *m)
{
	uint32_t shown = 0;

	for (uint32_t i = 0; i < plan->nr_problems; i++) {
		const struct plan_problem *p = &plan->problems[i];

		if (shown++ >= 10 && log_verbosity < 2)
			continue;
		pr_warn("trace: %s (file offset 0x%" PRIx64 "): %s\n", m->polls[p->poll].name,
			p->file_offset, plan_problem__describe(p->kind));
	}
	if (shown > 10 && log_verbosity < 2)
		pr_warn("trace: ... and %u more such sites (-v lists them all)\n", shown - 10);
	if (plan->nr_no_exit || plan->nr_no_entry || plan->nr_refused || plan->nr_unprobeable_exits)
		pr_warn("trace: skipped %u poll functions without an exit (they never return, or "
			"their code could not be decoded) and %u without an entry site; %u exits "
			"cannot be probed; refused %u sites outside their function\n",
			plan->nr_no_exit, plan->nr_no_entry, plan->nr_unprobeable_exits,
			plan->nr_refused);
}

/* A target in a container: say which pid it knows itself by (outputs use host pids). */
static void report_pid_namespace(pid_t pid)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *first, *last;

		if (strncmp(line, "NSpid:", 6))
			continue;
		line[strcspn(line, "\n")] = 0;
		first = strchr(line, '\t');
		last = strrchr(line, '\t');
		if (first && last != first)
			pr_info("trace: pid %d is pid %s in its PID namespace; outputs use host "
				"pids\n",
				(int)pid, last + 1);
		break;
	}
	fclose(f);
}

/* Is the file held by fd still the executable of process pid? */
static bool same_executable(int fd, pid_t pid)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	return !fstat(fd, &a) && !stat(path, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Selected futures whose polls exist only inlined: named, since they cannot be probed. */
static void report_inlined_only(const struct model *m, const struct selection *sel)
{
	char names[4096] = "";
	uint32_t n = 0, listed = 0;
	size_t used = 0;

	for (uint32_t f = 0; f < m->nr_futures && f < sel->nr; f++) {
		char name[512];
		int w;

		if (!m->futures[f].inlined_only || !sel->futures[f])
			continue;
		n++;
		if (listed >= 50 && log_verbosity < 2)
			continue;
		future__display_name(&m->futures[f], name, sizeof(name));
		w = snprintf(names + used, sizeof(names) - used, "%s%s", listed ? ", " : "", name);
		if (w < 0 || (size_t)w >= sizeof(names) - used)
			break;
		used += (size_t)w;
		listed++;
	}
	if (!n)
		return;
	pr_warn("trace: %u selected future%s exist only inlined into their callers and cannot be "
		"probed (not traced; 'asyncbpf list' shows where): %s%s\n",
		n, n == 1 ? "" : "s", names, listed < n ? ", ..." : "");
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
			pr_warn(
			    "trace: pattern '%s' matches no future of %s (try 'asyncbpf analyze "
			    "--all-crates')\n",
			    a->patterns[i], m->path);
			return EXIT_NO_MATCH;
		}
	if (!a->whitelist && !a->nr_patterns)
		selection__add_default(s, m, a->all_crates);
	if (a->expand != EXPAND_NONE)
		selection__expand(s, m, a->expand);
	if (!selection__count(s)) {
		pr_warn("trace: nothing selected in %s%s\n", m->path,
			a->all_crates
			    ? ""
			    : " (no futures in your crates? try --all-crates or a pattern)");
		return EXIT_NO_MATCH;
	}
	return EXIT_OK;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* --ring: the Perfetto trace in files BASE.1, BASE.2, ..., the newest `keep` kept */
struct ring_files {
	const char *base;
	unsigned long keep, index; /* index: the current file's number */
	struct outfile *cur;
};

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

struct outputs {
	struct outfile perfetto_file, chrome_file, records_file, folded_file, dot_file;
	struct ring_files ring;
	struct perfetto_writer *perfetto;
	struct chrome_trace *chrome;
	struct trace_folded *folded;
	struct trace_dot *dot;
	bool have_chrome, have_records;
};

static int open_outputs(struct outputs *o, const struct trace_args *a, const char *output,
			const struct model *m, pid_t pid)
{
	char err[512], comm[64] = "", path[64], path_ring[PATH_MAX];

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (a->command) /* the child has not exec'd yet: name it after the command */
		snprintf(comm, sizeof(comm), "%s",
			 strrchr(m->path, '/') ? strrchr(m->path, '/') + 1 : m->path);
	else
		sysfacts__read_small_file(path, comm, sizeof(comm));
	o->ring = (struct ring_files){
	    .base = output, .keep = a->ring, .index = 1, .cur = &o->perfetto_file};
	if (a->ring && ring_file_path(&o->ring, 1, path_ring, sizeof(path_ring))) {
		pr_warn("trace: --ring: the file name %s.1 is too long\n", output);
		return EXIT_OUTPUT;
	}
	if (outfile__open(&o->perfetto_file, a->ring ? path_ring : output, err, sizeof(err))) {
		pr_warn("trace: %s\n", err);
		return EXIT_OUTPUT;
	}
	if (a->chrome) {
		if (outfile__open(&o->chrome_file, a->chrome, err, sizeof(err))) {
			pr_warn("trace: %s\n", err);
			return EXIT_OUTPUT;
		}
		o->have_chrome = true;
	}
	if (a->records) {
		if (outfile__open(&o->records_file, a->records, err, sizeof(err))) {
			pr_warn("trace: %s\n", err);
			return EXIT_OUTPUT;
		}
		o->have_records = true;
	}
	if (a->folded) {
		if (outfile__open(&o->folded_file, a->folded, err, sizeof(err))) {
			pr_warn("trace: %s\n", err);
			return EXIT_OUTPUT;
		}
		if (!(o->folded = trace_folded__new(m))) {
			pr_warn("trace: out of memory\n");
			return EXIT_FAILURE_INTERNAL;
		}
	}
	if (a->dot) {
		if (outfile__open(&o->dot_file, a->dot, err, sizeof(err))) {
			pr_warn("trace: %s\n", err);
			return EXIT_OUTPUT;
		}
		if (!(o->dot = trace_dot__new(m))) {
			pr_warn("trace: out of memory\n");
			return EXIT_FAILURE_INTERNAL;
		}
	}
	o->perfetto =
	    perfetto_writer__new(o->perfetto_file.f, m, (uint32_t)pid, comm[0] ? comm : NULL);
	if (o->have_chrome)
		o->chrome =
		    chrome_trace__new(o->chrome_file.f, m, (uint32_t)pid, comm[0] ? comm : NULL);
	if (!o->perfetto || (o->have_chrome && !o->chrome)) {
		pr_warn("trace: out of memory\n");
		return EXIT_FAILURE_INTERNAL;
	}
	perfetto_writer__set_task_tracks(o->perfetto, a->task_tracks);
	perfetto_writer__set_limit(o->perfetto, a->ring ? a->max_size / a->ring : a->max_size,
				   a->ring ? ring_next_file : NULL, &o->ring);
	return EXIT_OK;
}

/* Finish and commit the outputs; EXIT_OK or EXIT_OUTPUT. */
static int close_outputs(struct outputs *o, const struct trace_totals *t, const char *output)
{
	char err[512];
	int status = EXIT_OK, r;

	if (o->perfetto) {
		r = perfetto_writer__finish(o->perfetto, t);
		if (r == 0 && !outfile__commit(&o->perfetto_file, err, sizeof(err))) {
			if (o->ring.keep && o->ring.index > 1)
				pr_info("trace: wrote %s.%lu to %s.%lu, the newest %lu of %lu "
					"files (each a trace of its own: open one in "
					"ui.perfetto.dev)\n",
					output,
					o->ring.index > o->ring.keep
					    ? o->ring.index - o->ring.keep + 1
					    : 1,
					output, o->ring.index,
					o->ring.index < o->ring.keep ? o->ring.index : o->ring.keep,
					o->ring.index);
			else
				pr_info("trace: wrote %s (open it in ui.perfetto.dev)\n",
					o->perfetto_file.path);
			if (perfetto_writer__refused(o->perfetto))
				pr_warn("trace: %" PRIu64 " polls after the Perfetto trace reached "
					"--max-size are not in it (the summary counts them)\n",
					perfetto_writer__refused(o->perfetto));
		} else {
			pr_warn("trace: %s\n", r ? "writing the Perfetto trace failed" : err);
			outfile__abort(&o->perfetto_file);
			status = EXIT_OUTPUT;
		}
	}
	if (o->chrome) {
		r = chrome_trace__finish(o->chrome, t);
		if (r == 0 && !outfile__commit(&o->chrome_file, err, sizeof(err))) {
			pr_info("trace: wrote %s\n", o->chrome_file.path);
		} else {
			pr_warn("trace: %s\n", r ? "writing the Chrome trace failed" : err);
			outfile__abort(&o->chrome_file);
			status = EXIT_OUTPUT;
		}
	}
	if (o->have_records) {
		if (!outfile__commit(&o->records_file, err, sizeof(err))) {
			pr_info("trace: wrote %s\n", o->records_file.path);
		} else {
			pr_warn("trace: %s\n", err);
			status = EXIT_OUTPUT;
		}
	}
	if (o->folded) {
		if (trace_folded__dropped(o->folded))
			pr_warn("trace: the folded stacks miss %" PRIu64 " polls (more than %u "
				"waiting for their task's poll on one thread, or out of memory)\n",
				trace_folded__dropped(o->folded), TRACE_FOLDED_MAX_PENDING);
		r = trace_folded__write(o->folded, o->folded_file.f);
		if (r == 0 && !outfile__commit(&o->folded_file, err, sizeof(err))) {
			pr_info("trace: wrote %s\n", o->folded_file.path);
		} else {
			pr_warn("trace: %s\n", r ? "writing the folded stacks failed" : err);
			outfile__abort(&o->folded_file);
			status = EXIT_OUTPUT;
		}
	}
	if (o->dot) {
		r = trace_dot__write(o->dot, o->dot_file.f);
		if (r == 0 && !outfile__commit(&o->dot_file, err, sizeof(err))) {
			pr_info("trace: wrote %s\n", o->dot_file.path);
		} else {
			pr_warn("trace: %s\n", r ? "writing the await graph failed" : err);
			outfile__abort(&o->dot_file);
			status = EXIT_OUTPUT;
		}
	}
	return status;
}

static void free_outputs(struct outputs *o)
{
	perfetto_writer__free(o->perfetto);
	chrome_trace__free(o->chrome);
	trace_folded__free(o->folded);
	trace_dot__free(o->dot);
	o->perfetto = NULL;
	o->chrome = NULL;
	o->folded = NULL;
	o->dot = NULL;
	outfile__abort(&o->perfetto_file);
	outfile__abort(&o->folded_file);
	outfile__abort(&o->dot_file);
	outfile__abort(&o->chrome_file);
	outfile__abort(&o->records_file);
}

static int write_summary_json(const char *path, struct trace_summary *s,
			      const struct trace_run_totals *t)
{
	struct outfile o;
	char err[512];

	if (outfile__open(&o, path, err, sizeof(err))) {
		pr_warn("trace: %s\n", err);
		return EXIT_OUTPUT;
	}
	if (trace_summary__write_json(s, t, o.f)) {
		pr_warn("trace: writing the summary %s failed\n", path);
		outfile__abort(&o);
		return EXIT_OUTPUT;
	}
	if (outfile__commit(&o, err, sizeof(err))) {
		pr_warn("trace: %s\n", err);
		return EXIT_OUTPUT;
	}
	return EXIT_OK;
}

/* Why trace_loop returned. */
enum stop_reason { STOP_SIGNAL, STOP_DURATION, STOP_EXIT, STOP_EXEC, STOP_ERROR, STOP_MAX_SIZE };

/* The live status line (a terminal only): rates over the last second, drops loudly. */
static void print_status(const struct tracer *t, const struct trace_summary *sum, uint64_t now,
			 uint64_t start, uint64_t *last_ns, uint64_t *last_records,
			 uint64_t *last_hits)
{
	__u64 c[COUNTER_COUNT];
	double dt = (double)(now - *last_ns) / 1e9;

	if (tracer__read_counters(t, c))
		return;
	fprintf(stderr,
		"\r\033[Kasyncbpf: %.0f s  %" PRIu64 " polls  %.0f polls/s  %.0f probe hits/s  "
		"%" PRIu64 " probes  %s%" PRIu64 " dropped%s",
		(double)(now - start) / 1e9, sum->records,
		(double)(sum->records - *last_records) / dt,
		(double)(c[COUNTER_HITS] - *last_hits) / dt, t->probes_attached,
		c[COUNTER_DROPPED] ? "\033[1m" : "", (uint64_t)c[COUNTER_DROPPED],
		c[COUNTER_DROPPED] ? "\033[0m" : "");
	*last_ns = now;
	*last_records = sum->records;
	*last_hits = c[COUNTER_HITS];
}

/*
 * Poll the ring buffer (its epoll fd) and the target's pidfd until told to stop:
 * a signal, --duration, the target's exit, or an exec it did beyond `execs_expected`
 * (launch mode: the launch itself).
 */
static enum stop_reason trace_loop(struct ring_buffer *rb, struct rb_budget *budget, int pidfd,
				   double duration, uint64_t start, const struct trace_summary *sum,
				   const struct tracer *t, uint32_t execs_expected,
				   const struct perfetto_writer *pw)
{
	struct pollfd fds[2] = {
	    {.fd = ring_buffer__epoll_fd(rb), .events = POLLIN},
	    {.fd = pidfd, .events = POLLIN},
	};
	bool tty = isatty(STDERR_FILENO) && log_verbosity >= 1;
	uint64_t last_status = start, last_records = 0, last_hits = 0;
	enum stop_reason why = STOP_SIGNAL;
	bool printed = false;

	while (!exiting) {
		int n = poll(fds, 2, 100);

		if (n < 0 && errno != EINTR) {
			why = STOP_ERROR;
			break;
		}
		/* NO_WAKEUP records only show up by polling: consume every round */
		rb_budget__consume(rb, budget, RB_BUDGET_ROUND);
		if (n > 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			why = STOP_EXIT;
			break;
		}
		if (tracer__exec_count(t) > execs_expected) {
			why = STOP_EXEC;
			break;
		}
		if (perfetto_writer__full(pw)) {
			why = STOP_MAX_SIZE;
			break;
		}
		uint64_t now = now_ns();
		if (duration > 0 && (double)(now - start) >= duration * 1e9) {
			why = STOP_DURATION;
			break;
		}
		if (tty && now - last_status >= 1000000000ull) {
			print_status(t, sum, now, start, &last_status, &last_records, &last_hits);
			printed = true;
		}
	}
	if (tty && printed)
		fputc('\n', stderr);
	return why;
}

static int trace(const struct trace_args *a)
{
	struct target_spec spec = {0};
	struct model m;
	struct selection sel = {0};
	struct trace_plan plan = {0};
	struct tracer t = {0};
	struct tracer_opts topts = {0};
	struct outputs out = {0};
	struct trace_summary sum = {0};
	struct trace_consumer consumer = {0};
	struct trace_run_totals totals = {0};
	struct ring_buffer *rb = NULL;
	struct rb_budget budget = {0};
	struct poll_stats *stats = NULL;
	__u64 counters[COUNTER_COUNT] = {0};
	char err[1024] = "", exe[PATH_MAX], proc_exe[64], output[PATH_MAX];
	pid_t pid = a->pid, child = 0;
	int pidfd = -1, go_fd = -1, exe_fd = -1, status, r;
	uint64_t start, load_ns, attach_ns, detach_ns;
	bool model_loaded = false, uretprobes;
	enum stop_reason why;
	struct sigaction sa = {.sa_handler = on_signal};

	t.multi_fd = -1;
	t.multi_ret_fd = -1;
	if (a->command) {
		r = launch__resolve(a->command[0], exe, sizeof(exe));
		if (r) {
			pr_warn("trace: cannot run '%s': %s\n", a->command[0],
				r == -ENOENT ? "not found (in PATH)" : strerror(-r));
			return r == -EACCES ? EXIT_NO_PERMISSION : EXIT_NO_INPUT;
		}
		spec.path = exe;
	} else {
		/* a pidfd pins the process: a reused PID cannot be mistaken for it */
		pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (pidfd < 0) {
			r = errno;
			pr_warn("trace: cannot open process %d: %s\n", (int)pid,
				r == ESRCH ? "no such process" : strerror(r));
			return exit_code_from_errno(r);
		}
		spec.pid = pid;
		report_pid_namespace(pid);
		/* hold the executable: probes go on the file that was analyzed */
		snprintf(proc_exe, sizeof(proc_exe), "/proc/%d/exe", (int)pid);
		exe_fd = open(proc_exe, O_RDONLY | O_CLOEXEC);
		/* its path, for messages */
		ssize_t n = readlink(proc_exe, exe, sizeof(exe) - 1);
		if (n > 0)
			exe[n] = '\0';
		else
			snprintf(exe, sizeof(exe), "%s", proc_exe);
	}

	status = load_model("trace", &spec, &m);
	model_loaded = true;
	if (status)
		goto out;
	if (!a->command && (exe_fd < 0 || !same_executable(exe_fd, pid))) {
		pr_warn("trace: process %d executed another program while it was being analyzed: "
			"run asyncbpf again\n",
			(int)pid);
		status = EXIT_NO_INPUT;
		goto out;
	}
	print_warnings("trace", &m);
	status = select_futures(a, &m, &sel);
	if (status)
		goto out;
	uretprobes = choose_exits(a, m.path);
	r = trace_plan__build(&plan, &m, &sel, uretprobes, err, sizeof(err));
	if (r) {
		pr_warn("trace: %s\n", err);
		status = r == -ENOENT ? EXIT_NO_MATCH : EXIT_FAILURE_INTERNAL;
		goto out;
	}
	if (a->max_probes && plan.nr > a->max_probes) {
		pr_warn(
		    "trace: the selection needs %u probes, more than the limit of %lu: narrow it "
		    "(patterns, --whitelist) or raise the limit with --max-probes %u (0: no "
		    "limit); every probe hit costs the target a trap\n",
		    plan.nr, a->max_probes, plan.nr);
		status = EXIT_USAGE;
		goto out;
	}
	if (uretprobes)
		pr_info("trace: %u poll functions: %u entry probes and %u uretprobes (exit mode "
			"uretprobe: returns through the uprobe trampoline, cheaper than a "
			"single-stepped `ret`)\n",
			plan.nr_polls, plan.nr_entries, plan.nr_exits);
	else
		pr_info("trace: %u poll functions: %u entry and %u exit probes (exit mode ret: "
			"probes on `ret` and tail jumps, single-stepped, the expensive class; safe "
			"with panics; no uretprobes)\n",
			plan.nr_polls, plan.nr_entries, plan.nr_exits);
	report_plan_problems(&plan, &m);
	report_inlined_only(&m, &sel);
	if (a->command) {
		child = launch__start_stopped("trace", exe, a->command, &go_fd);
		if (child < 0) {
			pr_warn("trace: cannot start %s: %s\n", exe, strerror(-child));
			status = EXIT_FAILURE_INTERNAL;
			child = 0;
			goto out;
		}
		pid = child;
		pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		topts.path = exe;
	} else {
		/* the analyzed file, even if the process execs before we attach */
		snprintf(proc_exe, sizeof(proc_exe), "/proc/self/fd/%d", exe_fd);
		topts.path = proc_exe;
	}
	topts.name = exe;
	topts.pid = pid;
	topts.ringbuf_size = a->ringbuf_size;
	topts.attach = a->attach;
	topts.progress = isatty(STDERR_FILENO) ? attach_progress : NULL;
	topts.verbose = a->verbose;
	if (a->output)
		snprintf(output, sizeof(output), "%s", a->output);
	else
		snprintf(output, sizeof(output), "asyncbpf-%d.pftrace", (int)pid);

	status = open_outputs(&out, a, output, &m, pid);
	if (status)
		goto out;
	if (trace_summary__init(&sum, &m) ||
	    trace_consumer__init(&consumer, &m, pid, out.perfetto, out.chrome, &sum)) {
		pr_warn("trace: out of memory\n");
		status = EXIT_FAILURE_INTERNAL;
		goto out;
	}
	consumer.records = out.have_records ? out.records_file.f : NULL;
	consumer.folded = out.folded;
	consumer.dot = out.dot;

	load_ns = now_ns();
	r = tracer__load(&t, &plan, &m, &topts, err, sizeof(err));
	attach_ns = now_ns();
	if (!r)
		r = tracer__attach(&t, &plan, &topts, err, sizeof(err));
	if (r) {
		pr_warn("trace: %s\n", err);
		status = r == -ESRCH		       ? EXIT_NO_INPUT
			 : r == -EPERM || r == -EACCES ? EXIT_NO_PERMISSION
						       : EXIT_KERNEL;
		goto out;
	}
	budget = (struct rb_budget){.fn = trace_consumer__handle, .ctx = &consumer};
	rb = ring_buffer__new(tracer__ringbuf_fd(&t), rb_budget__sample, &budget, NULL);
	if (!rb) {
		pr_warn("trace: cannot set up the ring buffer consumer: %s\n", strerror(errno));
		status = EXIT_KERNEL;
		goto out;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	tracer__set_ready(&t, true);
	pr_info("trace: attached %" PRIu64 " probes to %s (pid %d) in %.1f ms through %s "
		"(BPF load and verification %.1f ms); Ctrl-C stops\n",
		t.probes_attached, exe, (int)pid, (double)(now_ns() - attach_ns) / 1e6,
		t.multi ? (t.multi_ret_fd >= 0 ? "two uprobe_multi links" : "one uprobe_multi link")
			: "perf-event links",
		(double)(attach_ns - load_ns) / 1e6);
	if (go_fd >= 0 && (r = launch__go(&go_fd)))
		pr_warn("trace: cannot start the command: %s\n", strerror(-r));

	start = now_ns();
	/* an exec before on_exec was attached is seen here */
	if (!a->command && !same_executable(exe_fd, pid))
		why = STOP_EXEC;
	else
		why = trace_loop(rb, &budget, pidfd, a->duration, start, &sum, &t,
				 a->command ? 1 : 0, out.perfetto);
	switch (why) {
	case STOP_EXIT: pr_info("trace: the target exited\n"); break;
	case STOP_EXEC:
		pr_info("trace: the target (pid %d) executed another program: its new image is "
			"not traced; stopping\n",
			(int)pid);
		break;
	case STOP_ERROR: pr_warn("trace: waiting for events failed: %s\n", strerror(errno)); break;
	case STOP_MAX_SIZE:
		pr_warn("trace: the Perfetto trace reached --max-size (%.1f MiB): tracing stopped "
			"(a larger --max-size, or --ring K to keep the newest data instead)\n",
			(double)a->max_size / (1 << 20));
		break;
	case STOP_SIGNAL:
	case STOP_DURATION: break;
	}
	/* a second Ctrl-C from here on ends asyncbpf at once (the kernel drops the links) */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);

	detach_ns = now_ns();
	tracer__detach(&t);
	pr_info("trace: detached %" PRIu64 " probes in %.1f ms\n", t.probes_attached,
		(double)(now_ns() - detach_ns) / 1e6);
	rb_budget__drain(rb, &budget,
			 RB_BUDGET_ROUND); /* what arrived before the links were gone */

	stats = calloc(t.nr_polls, sizeof(*stats));
	if (stats && !tracer__read_stats(&t, stats, counters)) {
		uint32_t open_polls = 0;

		/* polls still running (or blocked) now: after every other record, as "running" */
		if (tracer__dump_open(&t, pid, stats, trace_consumer__handle, &consumer,
				      &open_polls, err, sizeof(err)))
			pr_warn("trace: %s\n", err);
		for (uint32_t p = 0; p < t.nr_polls; p++) {
			totals.totals.dropped += stats[p].dropped;
			totals.totals.truncated += stats[p].truncated;
			totals.bpf_records += stats[p].records;
		}
		if (trace_summary__set_bpf_stats(&sum, stats, t.nr_polls))
			pr_warn("trace: out of memory: the summary ignores the BPF histograms\n");
	} else {
		pr_warn("trace: cannot read the BPF statistics\n");
	}
	totals.totals.polls = sum.records;
	totals.totals.probes_attached = t.probes_attached;
	totals.totals.probes_failed = t.probes_failed;
	totals.totals.duration_ns = detach_ns - start; /* tracing ends where detaching begins */
	totals.unprobeable_exits = plan.nr_unprobeable_exits;
	totals.unmatched_exits = counters[COUNTER_UNMATCHED_EXIT];
	totals.stack_overflow = counters[COUNTER_STACK_OVERFLOW];
	totals.no_storage = counters[COUNTER_NO_STORAGE];
	totals.hits = counters[COUNTER_HITS];
	if (totals.bpf_records != totals.totals.polls + totals.totals.dropped)
		pr_warn("trace: accounting mismatch: BPF made %" PRIu64 " records, %" PRIu64
			" arrived, %" PRIu64 " dropped\n",
			totals.bpf_records, totals.totals.polls, totals.totals.dropped);

	status = close_outputs(&out, &totals.totals, output);
	if (consumer.write_err)
		pr_warn("trace: a trace writer lost data: %s\n", strerror(-consumer.write_err));
	trace_summary__print(&sum, &totals, a->command ? stderr : stdout);
	if (a->summary_json && write_summary_json(a->summary_json, &sum, &totals))
		status = EXIT_OUTPUT;
	if (totals.totals.dropped)
		pr_warn("trace: WARNING: %" PRIu64 " records were DROPPED (ring buffer full)\n",
			totals.totals.dropped);
	if (child) {
		int child_status;

		if (why == STOP_EXIT)
			pr_debug("trace: collecting %s's exit status\n", exe);
		else
			pr_info("trace: tracing stopped; waiting for %s (pid %d) to exit\n", exe,
				(int)child);
		child_status = launch__wait(child);
		child = 0;
		/* launch mode answers with the command's status unless our outputs failed */
		if (status == EXIT_OK)
			status = child_status;
	}
out:
	if (go_fd >= 0)
		close(go_fd); /* EOF: the child exits without running the command */
	if (child)
		launch__wait(child);
	ring_buffer__free(rb);
	tracer__free(&t);
	free(stats);
	trace_consumer__free(&consumer);
	free_outputs(&out);
	if (sum.polls)
		trace_summary__free(&sum);
	trace_plan__free(&plan);
	selection__free(&sel);
	if (model_loaded)
		model__free(&m);
	if (pidfd >= 0)
		close(pidfd);
	if (exe_fd >= 0)
		close(exe_fd);
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
	return trace(&a);
}
