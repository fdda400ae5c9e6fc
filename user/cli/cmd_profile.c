// SPDX-License-Identifier: GPL-2.0
/*
 * asyncbpf profile -p PID | -- CMD ARGS...: sample the target's threads N times a
 * second (no probe on any poll), unwind each sample with DWARF CFI, project it onto
 * its async stack and write a flame graph (SVG, folded, pprof, Perfetto); print the
 * top async stacks and what was lost. docs/profile.md.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "cli/commands.h"
#include "lib/rb_budget.h"
#include "lib/exitcodes.h"
#include "lib/hashmap.h"
#include "lib/launch.h"
#include "lib/privilege.h"
#include "lib/log.h"
#include "lib/outfile.h"
#include "export/profile_export.h"
#include "profile/profile_consumer.h"
#include "profile/profile_project.h"
#include "profile/profiler.h"
#include "lib/sysfacts.h"
#include "profile/unwind.h"

static const char profile_usage[] =
    "Usage: asyncbpf profile -p PID [OPTIONS]\n"
    "       asyncbpf profile [OPTIONS] -- CMD [ARGS...]\n"
    "\n"
    "Sample a running Rust program (or CMD, started before it runs and profiled until\n"
    "it exits) N times a second on every CPU, unwind each sample with DWARF CFI and\n"
    "show it as its async stack: [runtime] → task future → ... → innermost polled\n"
    "future → the functions it was running. No probe on any poll: cheap enough to\n"
    "leave on.\n"
    "\n"
    "  -p, --pid PID          profile a running process\n"
    "  -F, --freq HZ          samples per second per CPU (default 99, max 10000)\n"
    "  -d, --duration S       stop after S seconds (default: Ctrl-C or the target's exit)\n"
    "  -o, --output F         SVG flame graph (default asyncbpf-profile-PID.svg)\n"
    "      --svg F            the same as -o\n"
    "      --folded F         also write folded stacks (flamegraph.pl, inferno, speedscope)\n"
    "      --pprof F          also write a pprof profile (go tool pprof, Pyroscope, Parca)\n"
    "      --perfetto F       also write the samples per thread as a Perfetto trace\n"
    "      --stack-size N     bytes of user stack copied per sample, K suffix (default 32K,\n"
    "                         max 64K); deeper stacks are cut short (counted)\n"
    "      --off-cpu          also record where threads block, and for how long (kept\n"
    "                         apart from on-CPU samples in every output)\n"
    "      --folded-offcpu F  with --off-cpu: folded off-CPU stacks, weight = ns blocked\n"
    "      --ringbuf-size N   ring buffer bytes, K/M suffixes (default 16M)\n"
    "  -v, --verbose          libbpf's log, unwinding statistics\n"
    "\n"
    "Exit status: 0 profiled; in launch mode CMD's own status (128+N if killed by\n"
    "signal N); 2 usage; 3 no such process or command; 4 not privileged; 7 sampling\n"
    "is not available; 8 an output could not be written.\n"
    "\n"
    "Examples:\n"
    "  sudo asyncbpf profile -p \"$(pidof server)\" -d 30\n"
    "  sudo asyncbpf profile -F 999 --folded out.folded -- target/release/server\n";

static volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	(void)sig;
	exiting = 1;
}

struct profile_args {
	pid_t pid;
	char **command;
	uint32_t freq;
	double duration;
	const char *svg, *folded, *folded_offcpu, *pprof, *perfetto;
	uint64_t stack_size, ringbuf_size;
	bool offcpu, verbose;
	uint32_t replay_rounds; /* --bench-replay N (bench/profile.sh) */
};

static int parse_bytes(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if (*end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_args(int argc, char **argv, struct profile_args *a)
{
	static const struct option opts[] = {
	    {"pid", required_argument, NULL, 'p'},
	    {"freq", required_argument, NULL, 'F'},
	    {"duration", required_argument, NULL, 'd'},
	    {"output", required_argument, NULL, 'o'},
	    {"svg", required_argument, NULL, 'o'},
	    {"folded", required_argument, NULL, 'f'},
	    {"folded-offcpu", required_argument, NULL, 'Z'},
	    {"pprof", required_argument, NULL, 'P'},
	    {"perfetto", required_argument, NULL, 'T'},
	    {"stack-size", required_argument, NULL, 'S'},
	    {"ringbuf-size", required_argument, NULL, 'R'},
	    {"off-cpu", no_argument, NULL, 'O'},
	    {"bench-replay", required_argument, NULL, 'B'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	int c, r, nopt = argc;
	char *end;
	unsigned long v;

	a->freq = PROFILE_DEFAULT_FREQ;
	a->stack_size = PROFILE_STACK_DEFAULT;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			nopt = i;
			a->command = &argv[i + 1];
			break;
		}
	optind = 1;
	while ((c = getopt_long(nopt, argv, "p:F:d:o:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if ((r = parse_pid("profile", optarg, &a->pid)))
				return r;
			break;
		case 'F':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || *optarg == '-' || v < 1 || v > PROFILE_MAX_FREQ) {
				pr_warn("profile: -F takes 1 to %d samples per second, not '%s'\n",
					PROFILE_MAX_FREQ, optarg);
				return EXIT_USAGE;
			}
			a->freq = (uint32_t)v;
			break;
		case 'd':
			errno = 0;
			a->duration = strtod(optarg, &end);
			if (errno || *end || !(a->duration > 0) || a->duration > 1e9) {
				pr_warn("profile: --duration takes positive seconds, not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'o': a->svg = optarg; break;
		case 'f': a->folded = optarg; break;
		case 'Z': a->folded_offcpu = optarg; break;
		case 'P': a->pprof = optarg; break;
		case 'T': a->perfetto = optarg; break;
		case 'S':
			if (parse_bytes(optarg, 64, PROFILE_STACK_MAX, &a->stack_size)) {
				pr_warn(
				    "profile: --stack-size takes 64 to %u bytes (K suffix), not "
				    "'%s'\n",
				    PROFILE_STACK_MAX, optarg);
				return EXIT_USAGE;
			}
			break;
		case 'R':
			if (parse_bytes(optarg, 4096, 1u << 30, &a->ringbuf_size)) {
				pr_warn("profile: --ringbuf-size takes 4K to 1G bytes, not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'O': a->offcpu = true; break;
		case 'B':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || *optarg == '-' || v < 1 || v > 1000) {
				pr_warn(
				    "profile: --bench-replay takes 1 to 1000 rounds, not '%s'\n",
				    optarg);
				return EXIT_USAGE;
			}
			a->replay_rounds = (uint32_t)v;
			break;
		case 'v':
			a->verbose = true;
			log_verbosity = 2;
			break;
		case 'h': fputs(profile_usage, stdout); return -1;
		default: fputs(profile_usage, stderr); return EXIT_USAGE;
		}
	}
	if (optind < nopt) {
		pr_warn("profile: unexpected argument '%s' (a command goes after '--')\n",
			argv[optind]);
		return EXIT_USAGE;
	}
	if (a->folded_offcpu && !a->offcpu) {
		pr_warn("profile: --folded-offcpu needs --off-cpu\n");
		return EXIT_USAGE;
	}
	if (a->command && !a->command[0]) {
		pr_warn("profile: nothing after '--': name the command to launch\n");
		return EXIT_USAGE;
	}
	if (!a->pid == !a->command) {
		pr_warn("profile: give one of -p PID or -- CMD [ARGS...]\n%s", profile_usage);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* ---- outputs ---- */

enum { OUT_SVG, OUT_FOLDED, OUT_FOLDED_OFFCPU, OUT_PPROF, OUT_PERFETTO, OUT_COUNT };

struct outputs {
	struct outfile files[OUT_COUNT];
	const char *paths[OUT_COUNT];
	bool open[OUT_COUNT];
};

static int open_outputs(struct outputs *o)
{
	char err[512];

	for (int i = 0; i < OUT_COUNT; i++) {
		if (!o->paths[i])
			continue;
		if (outfile__open(&o->files[i], o->paths[i], err, sizeof(err))) {
			pr_warn("profile: %s\n", err);
			return EXIT_OUTPUT;
		}
		o->open[i] = true;
	}
	return EXIT_OK;
}

static int write_outputs(struct outputs *o, const struct profile_data *d)
{
	static const char *const what[OUT_COUNT] = {"SVG flame graph", "folded stacks",
						    "folded off-CPU stacks", "pprof profile",
						    "Perfetto trace"};
	char err[512], title[256];
	int status = EXIT_OK;

	snprintf(title, sizeof(title), "asyncbpf profile: %s (pid %u), %s at %u Hz",
		 d->process_name ? d->process_name : "?", d->pid, d->event, d->freq_hz);
	for (int i = 0; i < OUT_COUNT; i++) {
		int r;

		if (!o->open[i])
			continue;
		switch (i) {
		case OUT_SVG: r = flamegraph_svg__write(o->files[i].f, d, title); break;
		case OUT_FOLDED: r = folded__write(o->files[i].f, d, 0); break;
		case OUT_FOLDED_OFFCPU: r = folded__write(o->files[i].f, d, 1); break;
		case OUT_PPROF: r = pprof__write(o->files[i].f, d); break;
		default: r = perfetto_profile__write(o->files[i].f, d); break;
		}
		o->open[i] = false;
		if (r == -ENOSYS) {
			pr_warn("profile: this asyncbpf was built without the %s writer: %s not "
				"written\n",
				what[i], o->paths[i]);
			outfile__abort(&o->files[i]);
			continue;
		}
		if (r || outfile__commit(&o->files[i], err, sizeof(err))) {
			if (r)
				pr_warn("profile: writing the %s %s failed: %s\n", what[i],
					o->paths[i], strerror(-r));
			else
				pr_warn("profile: %s\n", err);
			outfile__abort(&o->files[i]);
			status = EXIT_OUTPUT;
			continue;
		}
		pr_info("profile: wrote %s (%s)\n", o->paths[i], what[i]);
	}
	return status;
}

static void free_outputs(struct outputs *o)
{
	for (int i = 0; i < OUT_COUNT; i++)
		if (o->open[i])
			outfile__abort(&o->files[i]);
}

/* ---- summary ---- */

static const struct profile_data *sort_data;

static int by_weight(const void *a, const void *b)
{
	uint64_t wa = sort_data->stacks[*(const size_t *)a].weight;
	uint64_t wb = sort_data->stacks[*(const size_t *)b].weight;

	return wa < wb ? 1 : wa > wb ? -1 : 0;
}

static void print_top(FILE *out, const struct profile_data *d, bool offcpu, size_t top)
{
	size_t *idx = calloc(d->nstacks ? d->nstacks : 1, sizeof(*idx)), n = 0;
	uint64_t total = 0;
	char text[1024];

	if (!idx)
		return;
	for (size_t i = 0; i < d->nstacks; i++)
		if (d->stacks[i].offcpu == offcpu && d->stacks[i].weight) {
			idx[n++] = i;
			total += d->stacks[i].weight;
		}
	sort_data = d;
	qsort(idx, n, sizeof(*idx), by_weight);
	fprintf(out, "%s (%s):\n",
		offcpu ? "Top async stacks, off-CPU" : "Top async stacks, on-CPU",
		offcpu ? "time blocked" : "samples");
	for (size_t i = 0; i < n && i < top; i++) {
		const struct pstack *s = &d->stacks[idx[i]];

		projector__stack_text(s, text, sizeof(text));
		if (offcpu)
			fprintf(out, "  %5.1f%% %10.3f ms  %s\n",
				100.0 * (double)s->weight / (double)total, (double)s->weight / 1e6,
				text[0] ? text : s->frames[0]->name);
		else
			fprintf(out, "  %5.1f%% %8" PRIu64 "  %s\n",
				100.0 * (double)s->weight / (double)total, s->weight,
				text[0] ? text : s->frames[0]->name);
	}
	if (!n)
		fprintf(out, "  (no samples)\n");
	free(idx);
}

static void print_summary(FILE *out, const struct consumer *c, const struct profile_data *d,
			  const uint64_t *counters, bool offcpu, int64_t target_cpu_ns)
{
	char reasons[512] = "", cpu[64] = "";

	for (int r = 1; r < UNWIND_REASON_COUNT; r++)
		if (c->reasons[r])
			sysfacts__add_fact(reasons, sizeof(reasons), "%s %" PRIu64,
					   unwind_reason__name((enum unwind_reason)r),
					   c->reasons[r]);
	/* what the samples should add up to: each one stands for 1/freq s of the target's CPU */
	if (target_cpu_ns >= 0)
		snprintf(cpu, sizeof(cpu), " (target CPU time %.2f s)",
			 (double)target_cpu_ns / 1e9);
	fprintf(out,
		"asyncbpf profile: pid %u (%s), %s at %u Hz, %.1f s%s: %" PRIu64
		" samples, %" PRIu64 " dropped (ring buffer full), %" PRIu64
		" failed to unwind, %" PRIu64 " unwound partially%s%s%s\n",
		d->pid, d->process_name ? d->process_name : "?", d->event, d->freq_hz,
		(double)(d->end_ns - d->start_ns) / 1e9, cpu, c->received,
		counters[PCOUNTER_DROPPED], c->failed, c->partial, reasons[0] ? " (" : "", reasons,
		reasons[0] ? ")" : "");
	if (offcpu)
		fprintf(out,
			"off-CPU: %" PRIu64 " times a thread blocked, %" PRIu64
			" wake-ups whose block was not recorded\n",
			c->offcpu_records, c->unknown_waits);
	print_top(out, d, false, 10);
	if (offcpu)
		print_top(out, d, true, 10);
}

/* ---- the command ---- */

/*
 * The program the model describes, to notice an exec: its device and inode, and
 * whether /proc/PID/exe has been seen to be it (launch mode: not before the child's
 * own exec).
 */
struct exe_watch {
	pid_t pid;
	dev_t dev;
	ino_t ino;
	bool seen;
};

/* True when the target, once seen running the analyzed file, now runs another. */
static bool exec_happened(struct exe_watch *w)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)w->pid);
	if (stat(path, &st))
		return false; /* exiting: the pidfd says so */
	if (st.st_dev == w->dev && st.st_ino == w->ino) {
		w->seen = true;
		return false;
	}
	return w->seen;
}

static void profile_loop(struct ring_buffer *rb, struct rb_budget *budget, int pidfd,
			 double duration, uint64_t start, struct exe_watch *exe)
{
	struct pollfd fds[2] = {
	    {.fd = ring_buffer__epoll_fd(rb), .events = POLLIN},
	    {.fd = pidfd, .events = POLLIN},
	};

	while (!exiting) {
		int n = poll(fds, pidfd >= 0 ? 2 : 1, 100);

		if (n < 0 && errno != EINTR)
			break;
		/* in rounds: a flood of records must not hide the stop conditions */
		rb_budget__consume(rb, budget, RB_BUDGET_ROUND);
		if (n > 0 && pidfd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			pr_info("profile: the target exited\n");
			break;
		}
		if (duration > 0 && (double)(now_ns() - start) >= duration * 1e9)
			break;
		if (exec_happened(exe)) {
			/* like the tracer: the model is the old program's, its polls are gone */
			pr_warn("profile: the target (pid %d) executed another program: profiling "
				"stopped (the samples taken before are kept)\n",
				(int)exe->pid);
			break;
		}
	}
}

static int profile(const struct profile_args *a)
{
	struct target_spec spec = {0};
	struct model m;
	struct profiler prof = {0};
	struct profiler_opts popts = {0};
	struct outputs out = {0};
	struct consumer *c = NULL;
	struct profile_data d = {0};
	struct ring_buffer *rb = NULL;
	struct rb_budget budget = {0};
	int64_t cpu_start = -1, cpu_end = -1;
	uint64_t counters[PCOUNTER_COUNT] = {0}, start = 0;
	char err[1024] = "", exe[PATH_MAX], svg[PATH_MAX], comm[64] = "", path[64];
	pid_t pid = a->pid, child = 0;
	int pidfd = -1, go_fd = -1, status, r;
	bool model_loaded = false;
	struct sigaction sa = {.sa_handler = on_signal};
	struct rusage ru0, ru1;
	struct exe_watch exe_watch = {0};
	struct stat exe_st;

	if (a->command) {
		r = launch__resolve(a->command[0], exe, sizeof(exe));
		if (r) {
			pr_warn("profile: cannot run '%s': %s\n", a->command[0],
				r == -ENOENT ? "not found (in PATH)" : strerror(-r));
			return r == -EACCES ? EXIT_NO_PERMISSION : EXIT_NO_INPUT;
		}
		spec.path = exe;
	} else {
		/* a pidfd pins the process: a reused PID cannot be mistaken for it */
		pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (pidfd < 0) {
			r = errno;
			pr_warn("profile: cannot open process %d: %s\n", (int)pid,
				r == ESRCH ? "no such process (check the PID with 'ps')"
					   : strerror(r));
			return exit_code_from_errno(r);
		}
		spec.pid = pid;
	}
	/* the model names the polls; without DWARF the analyzer falls back to symbols */
	status = load_model("profile", &spec, &m);
	model_loaded = true;
	if (status)
		goto out;
	print_warnings("profile", &m);
	/* the file the model is of: /proc/PID/exe now, or the command to launch */
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (!stat(a->command ? exe : path, &exe_st)) {
		exe_watch.dev = exe_st.st_dev;
		exe_watch.ino = exe_st.st_ino;
		exe_watch.seen = !a->command;
	}

	if (a->command) {
		child = launch__start_stopped("profile", exe, a->command, &go_fd);
		if (child < 0) {
			pr_warn("profile: cannot start %s: %s\n", exe, strerror(-child));
			status = EXIT_FAILURE_INTERNAL;
			child = 0;
			goto out;
		}
		pid = child;
		exe_watch.pid = pid;
		pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		snprintf(comm, sizeof(comm), "%.63s",
			 strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe);
	} else {
		exe_watch.pid = pid;
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
		sysfacts__read_small_file(path, comm, sizeof(comm));
	}
	if (a->svg)
		snprintf(svg, sizeof(svg), "%s", a->svg);
	else
		snprintf(svg, sizeof(svg), "asyncbpf-profile-%d.svg", (int)pid);
	out.paths[OUT_SVG] = svg;
	out.paths[OUT_FOLDED] = a->folded;
	out.paths[OUT_FOLDED_OFFCPU] = a->folded_offcpu;
	out.paths[OUT_PPROF] = a->pprof;
	out.paths[OUT_PERFETTO] = a->perfetto;
	status = open_outputs(&out);
	if (status)
		goto out;

	c = calloc(1, sizeof(*c));
	if (!c || !(c->proj = projector__new(&m, true))) {
		pr_warn("profile: out of memory\n");
		status = EXIT_FAILURE_INTERNAL;
		goto out;
	}
	c->pid = pid;
	if (a->replay_rounds) {
		c->keep = 2000;
		c->kept = calloc(c->keep, sizeof(*c->kept));
		c->kept_size = calloc(c->keep, sizeof(*c->kept_size));
		if (!c->kept || !c->kept_size)
			c->keep = 0;
	}
	u64_map__init(&c->threads);
	u64_map__init(&c->blocked);
	if (!a->command) {
		/* read the mappings now, so a failure is reported before sampling */
		c->unwinder = unwinder__new(pid, &c->unwinder_err, err, sizeof(err));
		c->last_refresh = now_ns();
		if (!c->unwinder) {
			pr_warn("profile: %s\n", err);
			status = exit_code_from_errno(c->unwinder_err);
			goto out;
		}
	}

	popts.pid = pid;
	popts.freq_hz = a->freq;
	popts.stack_size = (uint32_t)a->stack_size;
	popts.ringbuf_size = a->ringbuf_size;
	popts.offcpu = a->offcpu;
	popts.verbose = a->verbose;
	r = profiler__load(&prof, &popts, err, sizeof(err));
	if (!r && a->replay_rounds && profiler__enable_run_stats(&prof))
		pr_warn("profile: cannot enable BPF run-time statistics\n");
	if (!r)
		r = profiler__attach(&prof, &popts, err, sizeof(err));
	if (r) {
		pr_warn("profile: %s\n", err);
		status = r == -EPERM || r == -EACCES ? EXIT_NO_PERMISSION : EXIT_KERNEL;
		goto out;
	}
	budget = (struct rb_budget){.fn = consumer__handle, .ctx = c};
	rb = ring_buffer__new(profiler__ringbuf_fd(&prof), rb_budget__sample, &budget, NULL);
	if (!rb) {
		pr_warn("profile: cannot set up the ring buffer consumer: %s\n", strerror(errno));
		status = EXIT_KERNEL;
		goto out;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	pr_info("profile: sampling pid %d (%s) with %s at %u Hz on %d CPUs, %" PRIu64
		" bytes of stack per sample%s; Ctrl-C stops\n",
		(int)pid, comm, prof.event, a->freq, prof.nr_attached, a->stack_size,
		a->offcpu ? ", off-CPU too" : "");
	getrusage(RUSAGE_SELF, &ru0);
	start = now_ns();
	cpu_start = sysfacts__process_cpu_ns((int)pid);
	if (go_fd >= 0 && (r = launch__go(&go_fd)))
		pr_warn("profile: cannot start the command: %s\n", strerror(-r));
	profile_loop(rb, &budget, pidfd, a->duration, start, &exe_watch);
	cpu_end = sysfacts__process_cpu_ns((int)pid); /* a zombie still says: not reaped yet */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	profiler__detach(&prof);
	rb_budget__drain(rb, &budget,
			 RB_BUDGET_ROUND); /* what arrived before the events were gone */
	getrusage(RUSAGE_SELF, &ru1);
	if (profiler__read_counters(&prof, counters))
		pr_warn("profile: cannot read the BPF counters\n");

	d.pid = (uint32_t)pid;
	d.process_name = comm[0] ? comm : NULL;
	d.event = prof.event;
	d.freq_hz = a->freq;
	d.period_ns = 1000000000ull / a->freq;
	d.start_ns = start;
	d.end_ns = now_ns();
	d.dropped = counters[PCOUNTER_DROPPED];
	d.unwind_failed = c->failed;
	d.threads = c->names;
	d.nthreads = c->nr_names;
	projector__fill(c->proj, &d);
	if (c->error)
		pr_warn("profile: out of memory: some samples are missing from the outputs\n");
	if (c->bad_records)
		pr_warn("profile: %" PRIu64 " malformed ring buffer records ignored\n",
			c->bad_records);
	if (!c->unwinder && c->received)
		pr_warn("profile: could not read the target's mappings, nothing was unwound: %s\n",
			c->err);
	if (counters[PCOUNTER_SAMPLES] + counters[PCOUNTER_DROPPED] <
	    c->received + c->offcpu_records)
		pr_warn("profile: accounting mismatch: BPF emitted %" PRIu64 " records, %" PRIu64
			" arrived\n",
			counters[PCOUNTER_SAMPLES], c->received + c->offcpu_records);
	status = write_outputs(&out, &d);
	print_summary(a->command ? stderr : stdout, c, &d, counters, a->offcpu,
		      cpu_start >= 0 && cpu_end >= cpu_start ? cpu_end - cpu_start : -1);
	if (counters[PCOUNTER_DROPPED])
		pr_warn("profile: WARNING: %" PRIu64 " samples were DROPPED (ring buffer full: "
			"--ringbuf-size, or a lower -F)\n",
			counters[PCOUNTER_DROPPED]);
	if (a->replay_rounds)
		consumer__bench_replay(c, &m, a->replay_rounds);
	if (child) {
		int child_status;

		if (exiting || a->duration > 0)
			pr_info("profile: profiling stopped; waiting for %s (pid %d) to exit\n",
				exe, (int)child);
		child_status = launch__wait(child);
		child = 0;
		if (status == EXIT_OK)
			status = child_status;
	}
	if (a->verbose || a->replay_rounds) {
		/* one line a benchmark can parse (bench/profile.sh) */
		struct rusage self, kids;
		uint64_t pcs = 0, refreshes = 0, run_ns = 0, run_cnt = 0;
		double phase = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec +
					ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
			       (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec +
					ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) /
				   1e6;

		getrusage(RUSAGE_SELF, &self);
		getrusage(RUSAGE_CHILDREN, &kids);
		if (c->unwinder)
			unwinder__stats(c->unwinder, &pcs, &refreshes);
		profiler__run_stats(&prof, &run_ns, &run_cnt);
		fprintf(stderr,
			"asyncbpf: profile: stats samples=%" PRIu64 " cpu_s=%.6f self_cpu_s=%.6f "
			"target_cpu_s=%.6f unwind_cpu_s=%.6f cached_pcs=%" PRIu64
			" refreshes=%" PRIu64 " bpf_run_ns=%" PRIu64 " bpf_run_cnt=%" PRIu64 "\n",
			c->received + c->offcpu_records, phase,
			(double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec) +
			    (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec) / 1e6,
			(double)(kids.ru_utime.tv_sec + kids.ru_stime.tv_sec) +
			    (double)(kids.ru_utime.tv_usec + kids.ru_stime.tv_usec) / 1e6,
			(double)c->unwind_cpu_ns / 1e9, pcs, refreshes, run_ns, run_cnt);
	}
out:
	if (go_fd >= 0)
		close(go_fd); /* EOF: the child exits without running the command */
	if (child)
		launch__wait(child);
	ring_buffer__free(rb);
	profiler__free(&prof);
	free_outputs(&out);
	if (c) {
		consumer__free(c);
		free(c);
	}
	if (model_loaded)
		model__free(&m);
	if (pidfd >= 0)
		close(pidfd);
	return status;
}

int cmd_profile(int argc, char **argv)
{
	struct profile_args a = {0};
	int r = parse_args(argc, argv, &a);

	if (r)
		return r < 0 ? EXIT_OK : r;
	if (!privilege__bpf_ok()) {
		privilege__explain("profile");
		return EXIT_NO_PERMISSION;
	}
	return profile(&a);
}
