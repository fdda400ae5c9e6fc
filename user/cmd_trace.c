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

#include "commands.h"
#include "exitcodes.h"
#include "launch.h"
#include "log.h"
#include "outfile.h"
#include "selection.h"
#include "sysfacts.h"
#include "tracer.h"

static const char trace_usage[] =
    "Usage: asyncbpf trace -p PID [PATTERN...] [OPTIONS]\n"
    "       asyncbpf trace [PATTERN...] [OPTIONS] -- CMD [ARGS...]\n"
    "       asyncbpf -p PID                  (trace with the defaults)\n"
    "\n"
    "Trace every poll of the selected futures of a running Rust program (or of CMD,\n"
    "started stopped before it runs and traced until it exits). Without patterns or a\n"
    "whitelist the selection is your own crates' futures (docs/selection.md).\n"
    "\n"
    "  -p, --pid PID          trace a running process\n"
    "  PATTERN                glob on Rust paths: 'demo::*', '*::handler'\n"
    "  -e, --expand DIR       grow the selection along the await graph: up, down, both\n"
    "  -w, --whitelist F      select from a whitelist file (asyncbpf list -o F)\n"
    "      --all-crates       default selection is every crate's futures\n"
    "  -o, --output F         Perfetto trace (default asyncbpf-PID.pftrace)\n"
    "      --chrome F         also write Chrome trace JSON\n"
    "      --folded F         also write async stacks weighted by busy time (flamegraph)\n"
    "      --dot F            also write the await graph seen, with counts (Graphviz)\n"
    "      --summary-json F   also write the summary as JSON\n"
    "      --records F        also write every poll as a JSON line (raw records)\n"
    "  -d, --duration S       stop after S seconds (default: Ctrl-C or the target's exit)\n"
    "      --ringbuf-size N   ring buffer bytes, K/M/G suffixes (default 16M)\n"
    "  -v, --verbose          all warnings and libbpf's log\n"
    "\n"
    "Exit status: 0 traced; in launch mode CMD's own status (128+N if killed by\n"
    "signal N); 2 usage; 3 no such process or command; 4 not privileged; 6 nothing\n"
    "selected; 7 a kernel feature is missing; 8 an output could not be written.\n"
    "\n"
    "Examples:\n"
    "  sudo asyncbpf -p \"$(pidof server)\"\n"
    "  sudo asyncbpf trace -p 4242 'server::handlers::*' --expand down -o h.pftrace\n"
    "  sudo asyncbpf trace --chrome run.json -- target/debug/server --port 8080\n";

static volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	(void)sig;
	exiting = 1;
}

struct trace_args {
	pid_t pid;
	char **command; /* launch mode: argv of CMD, NULL-terminated */
	char **patterns;
	int nr_patterns;
	const char *whitelist, *output, *chrome, *summary_json, *records, *folded, *dot;
	enum expand_dir expand;
	bool all_crates, verbose;
	double duration;
	uint64_t ringbuf_size;
};

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	}
	if (*end || v < 4096 || v > (1ull << 30))
		return -1;
	*out = v;
	return 0;
}

static int parse_args(int argc, char **argv, struct trace_args *a)
{
	static const struct option opts[] = {
	    {"pid", required_argument, NULL, 'p'},
	    {"expand", required_argument, NULL, 'e'},
	    {"whitelist", required_argument, NULL, 'w'},
	    {"output", required_argument, NULL, 'o'},
	    {"chrome", required_argument, NULL, 'C'},
	    {"summary-json", required_argument, NULL, 'S'},
	    {"records", required_argument, NULL, 'r'},
	    {"folded", required_argument, NULL, 'F'},
	    {"dot", required_argument, NULL, 'D'},
	    {"duration", required_argument, NULL, 'd'},
	    {"ringbuf-size", required_argument, NULL, 'R'},
	    {"all-crates", no_argument, NULL, 'a'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	int c, r, nopt = argc;
	char *end;

	/* everything after "--" is the command: getopt must not permute it */
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			nopt = i;
			a->command = &argv[i + 1];
			break;
		}
	optind = 1;
	while ((c = getopt_long(nopt, argv, "p:e:w:o:d:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if ((r = parse_pid("trace", optarg, &a->pid)))
				return r;
			break;
		case 'e':
			if (!strcmp(optarg, "up"))
				a->expand = EXPAND_UP;
			else if (!strcmp(optarg, "down"))
				a->expand = EXPAND_DOWN;
			else if (!strcmp(optarg, "both"))
				a->expand = EXPAND_BOTH;
			else {
				pr_warn("trace: --expand takes up, down or both, not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'w': a->whitelist = optarg; break;
		case 'o': a->output = optarg; break;
		case 'C': a->chrome = optarg; break;
		case 'S': a->summary_json = optarg; break;
		case 'r': a->records = optarg; break;
		case 'F': a->folded = optarg; break;
		case 'D': a->dot = optarg; break;
		case 'd':
			errno = 0;
			a->duration = strtod(optarg, &end);
			if (errno || *end || !(a->duration > 0) || a->duration > 1e9) {
				pr_warn("trace: --duration takes positive seconds, not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'R':
			if (parse_size(optarg, &a->ringbuf_size)) {
				pr_warn("trace: --ringbuf-size takes 4K to 1G bytes, not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'a': a->all_crates = true; break;
		case 'v':
			a->verbose = true;
			log_verbosity = 2;
			break;
		case 'h': fputs(trace_usage, stdout); return -1;
		default: fputs(trace_usage, stderr); return EXIT_USAGE;
		}
	}
	a->patterns = &argv[optind];
	a->nr_patterns = nopt - optind;
	if (a->command && !a->command[0]) {
		pr_warn("trace: nothing after '--': name the command to launch\n");
		return EXIT_USAGE;
	}
	if (!a->pid == !a->command) {
		pr_warn("trace: give one of -p PID or -- CMD [ARGS...]\n%s", trace_usage);
		return EXIT_USAGE;
	}
	return EXIT_OK;
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

struct outputs {
	struct outfile perfetto_file, chrome_file, records_file, folded_file, dot_file;
	struct perfetto_writer *perfetto;
	struct chrome_trace *chrome;
	struct trace_folded *folded;
	struct trace_dot *dot;
	bool have_chrome, have_records;
};

static int open_outputs(struct outputs *o, const struct trace_args *a, const char *output,
			const struct model *m, pid_t pid)
{
	char err[512], comm[64] = "", path[64];

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (a->command) /* the child has not exec'd yet: name it after the command */
		snprintf(comm, sizeof(comm), "%s",
			 strrchr(m->path, '/') ? strrchr(m->path, '/') + 1 : m->path);
	else
		sysfacts__read_small_file(path, comm, sizeof(comm));
	if (outfile__open(&o->perfetto_file, output, err, sizeof(err))) {
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
			pr_info("trace: wrote %s (open it in ui.perfetto.dev)\n", output);
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

/* Poll the ring buffer (its epoll fd) and the target's pidfd until told to stop. */
static void trace_loop(struct ring_buffer *rb, int pidfd, double duration, uint64_t start,
		       const struct trace_summary *sum)
{
	struct pollfd fds[2] = {
	    {.fd = ring_buffer__epoll_fd(rb), .events = POLLIN},
	    {.fd = pidfd, .events = POLLIN},
	};
	bool tty = isatty(STDERR_FILENO) && log_verbosity >= 1;
	uint64_t last_status = start, last_records = 0;

	while (!exiting) {
		int n = poll(fds, 2, 100);

		if (n < 0 && errno != EINTR)
			break;
		/* NO_WAKEUP records only show up by polling: consume every round */
		ring_buffer__consume(rb);
		if (n > 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			pr_info("trace: the target exited\n");
			break;
		}
		uint64_t now = now_ns();
		if (duration > 0 && (double)(now - start) >= duration * 1e9)
			break;
		if (tty && now - last_status >= 1000000000ull) {
			fprintf(stderr, "\rasyncbpf: %" PRIu64 " polls, %.0f/s   ", sum->records,
				(double)(sum->records - last_records) * 1e9 /
				    (double)(now - last_status));
			last_status = now;
			last_records = sum->records;
		}
	}
	if (tty && last_records)
		fputc('\n', stderr);
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
	struct poll_stats *stats = NULL;
	__u64 counters[COUNTER_COUNT] = {0};
	char err[1024] = "", exe[PATH_MAX], proc_exe[64], output[PATH_MAX];
	pid_t pid = a->pid, child = 0;
	int pidfd = -1, go_fd = -1, status, r;
	uint64_t start, attach_ns, detach_ns;
	bool model_loaded = false;
	struct sigaction sa = {.sa_handler = on_signal};

	t.multi_fd = -1;
	if (a->command) {
		r = resolve_command(a->command[0], exe, sizeof(exe));
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
	}

	status = load_model("trace", &spec, &m);
	model_loaded = true;
	if (status)
		goto out;
	print_warnings("trace", &m);
	status = select_futures(a, &m, &sel);
	if (status)
		goto out;
	r = trace_plan__build(&plan, &m, &sel, err, sizeof(err));
	if (r) {
		pr_warn("trace: %s\n", err);
		status = r == -ENOENT ? EXIT_NO_MATCH : EXIT_FAILURE_INTERNAL;
		goto out;
	}
	pr_info("trace: %u poll functions: %u entry and %u exit probes (exits on `ret` and tail "
		"jumps, single-stepped; no uretprobes)\n",
		plan.nr_polls, plan.nr_entries, plan.nr_exits);
	if (plan.nr_unprobeable_exits)
		pr_warn("trace: %u exit sites the kernel cannot probe: polls leaving through them "
			"show up as truncated\n",
			plan.nr_unprobeable_exits);
	if (plan.nr_no_exit || plan.nr_no_entry || plan.nr_refused)
		pr_warn("trace: skipped %u poll functions without probeable exits, %u without an "
			"entry site; refused %u sites outside their function\n",
			plan.nr_no_exit, plan.nr_no_entry, plan.nr_refused);

	if (a->command) {
		child = launch_stopped("trace", exe, a->command, &go_fd);
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
		snprintf(proc_exe, sizeof(proc_exe), "/proc/%d/exe", (int)pid);
		topts.path = proc_exe;
	}
	topts.pid = pid;
	topts.ringbuf_size = a->ringbuf_size;
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

	attach_ns = now_ns();
	r = tracer__load(&t, &plan, &m, &topts, err, sizeof(err));
	if (!r)
		r = tracer__attach(&t, &plan, &topts, err, sizeof(err));
	if (r) {
		pr_warn("trace: %s\n", err);
		status = r == -ESRCH		       ? EXIT_NO_INPUT
			 : r == -EPERM || r == -EACCES ? EXIT_NO_PERMISSION
						       : EXIT_KERNEL;
		goto out;
	}
	rb = ring_buffer__new(tracer__ringbuf_fd(&t), trace_consumer__handle, &consumer, NULL);
	if (!rb) {
		pr_warn("trace: cannot set up the ring buffer consumer: %s\n", strerror(errno));
		status = EXIT_KERNEL;
		goto out;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	tracer__set_ready(&t, true);
	pr_info("trace: attached %" PRIu64 " probes to %s (pid %d) in %.1f ms through %s; "
		"Ctrl-C stops\n",
		t.probes_attached, topts.path, (int)pid, (double)(now_ns() - attach_ns) / 1e6,
		t.multi ? "one uprobe_multi link" : "perf-event links");
	if (go_fd >= 0) {
		if (write(go_fd, "g", 1) != 1)
			pr_warn("trace: cannot start the command: %s\n", strerror(errno));
		close(go_fd);
		go_fd = -1;
	}

	start = now_ns();
	trace_loop(rb, pidfd, a->duration, start, &sum);
	/* a second Ctrl-C from here on ends asyncbpf at once (the kernel drops the links) */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);

	detach_ns = now_ns();
	tracer__detach(&t);
	pr_info("trace: detached %" PRIu64 " probes in %.1f ms\n", t.probes_attached,
		(double)(now_ns() - detach_ns) / 1e6);
	ring_buffer__consume(rb); /* what arrived before the links were gone */

	stats = calloc(t.nr_polls, sizeof(*stats));
	if (stats && !tracer__read_stats(&t, stats, counters)) {
		for (uint32_t p = 0; p < t.nr_polls; p++) {
			totals.totals.dropped += stats[p].dropped;
			totals.totals.truncated += stats[p].truncated;
			totals.bpf_records += stats[p].records;
		}
	} else {
		pr_warn("trace: cannot read the BPF statistics\n");
	}
	totals.totals.polls = sum.records;
	totals.totals.probes_attached = t.probes_attached;
	totals.totals.probes_failed = t.probes_failed;
	totals.totals.duration_ns = now_ns() - start;
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

		if (!exiting && a->duration <= 0)
			pr_debug("trace: collecting %s's exit status\n", exe);
		else
			pr_info("trace: tracing stopped; waiting for %s (pid %d) to exit\n", exe,
				(int)child);
		child_status = wait_child(child);
		child = 0;
		/* launch mode answers with the command's status unless our outputs failed */
		if (status == EXIT_OK)
			status = child_status;
	}
out:
	if (go_fd >= 0)
		close(go_fd); /* EOF: the child exits without running the command */
	if (child)
		wait_child(child);
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
	return status;
}

int cmd_trace(int argc, char **argv)
{
	struct trace_args a = {0};
	int r = parse_args(argc, argv, &a);

	if (r)
		return r < 0 ? EXIT_OK : r;
	if (!privileged()) {
		explain_privilege("trace");
		return EXIT_NO_PERMISSION;
	}
	return trace(&a);
}
