// SPDX-License-Identifier: GPL-2.0
/*
 * asyncbpf stacks -p PID: where every task of a live process is parked
 * (docs/stacks.md). Analyze the executable, stop the process (unless --no-pause),
 * find its tasks in its writable memory, decode each one's async stack through the
 * model, let it run again, then print the stacks grouped, biggest group first.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "lib/exitcodes.h"
#include "lib/log.h"
#include "lib/outfile.h"
#include "lib/procmaps.h"
#include "lib/sysfacts.h"
#include "stacks/decode.h"
#include "stacks/report.h"
#include "stacks/snapshot.h"

static const char stacks_usage[] =
    "Usage: asyncbpf stacks -p PID [PATTERN...] [--json F] [--folded F] [--tree]\n"
    "                       [--watch S [--count N]] [--no-pause] [-v]\n"
    "\n"
    "Print the async stack of every task of a running Rust program: where each one is\n"
    "parked, await by await, grouped by identical stacks, biggest group first. Reads\n"
    "the process from outside (ptrace access, no BPF, no probes); never writes to it.\n"
    "\n"
    "  -p, --pid PID     the process\n"
    "  PATTERN           only tasks with a future matching this glob in their stack\n"
    "      --json F      also write the tasks as JSON (docs/stacks.md); '-' = stdout\n"
    "      --folded F    also write the stacks weighted by their tasks, one line each\n"
    "                    (flamegraph.pl / inferno input): where the tasks wait\n"
    "      --tree        also read each task's whole tree of futures (every future\n"
    "                    it holds: both sides of a join, a wrapper's inner futures)\n"
    "      --watch S     a snapshot every S seconds until Ctrl-C, saying which tasks\n"
    "                    did not change since the last one (stuck); the files hold\n"
    "                    the last snapshot\n"
    "      --count N     with --watch: stop after N snapshots\n"
    "      --no-pause    read the process while it runs (the snapshot may be torn);\n"
    "                    by default every thread is stopped for the read\n"
    "  -v, --verbose     more detail (scan statistics)\n"
    "\n"
    "Tasks are found by their runtime's task header (tokio 1.x; async-task 4.x, the\n"
    "tasks of async-std, smol and async-executor) or as boxed `dyn Future`s whose type\n"
    "the binary's DWARF names (hand-written executors).\n"
    "\n"
    "Exit status: 0 read; 2 usage; 3 no such process; 4 no ptrace access;\n"
    "5 not a usable ELF, or no DWARF types (built below `debug = true`); 6 no task\n"
    "found (or none matched); 8 a file could not be written.\n";

struct stacks_args {
	pid_t pid;
	const char *json, *folded;
	double watch_s;
	long count;
	bool no_pause, verbose, tree;
	char **patterns;
	int nr_patterns;
};

static int parse_args(int argc, char **argv, struct stacks_args *a)
{
	static const struct option opts[] = {
	    {"pid", required_argument, NULL, 'p'},    {"json", required_argument, NULL, 'J'},
	    {"folded", required_argument, NULL, 'F'}, {"watch", required_argument, NULL, 'W'},
	    {"count", required_argument, NULL, 'C'},  {"no-pause", no_argument, NULL, 'N'},
	    {"tree", no_argument, NULL, 'T'},	      {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},	      {0},
	};
	int c, r;
	uint64_t n;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if ((r = parse_pid("stacks", optarg, &a->pid)))
				return r;
			break;
		case 'J': a->json = optarg; break;
		case 'F': a->folded = optarg; break;
		case 'W':
			if (args__parse_seconds(optarg, &a->watch_s) || a->watch_s < 0.01) {
				pr_warn("stacks: --watch wants seconds (at least 0.01), not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'C':
			if (args__parse_uint(optarg, 1, LONG_MAX, &n)) {
				pr_warn(
				    "stacks: --count wants a number of snapshots >= 1, not '%s'\n",
				    optarg);
				return EXIT_USAGE;
			}
			a->count = (long)n;
			break;
		case 'N': a->no_pause = true; break;
		case 'T': a->tree = true; break;
		case 'v':
			a->verbose = true;
			log_verbosity = 2;
			break;
		case 'h': fputs(stacks_usage, stdout); return -1;
		default: fputs(stacks_usage, stderr); return EXIT_USAGE;
		}
	}
	if (!a->pid) {
		pr_warn("stacks: give -p PID\n%s", stacks_usage);
		return EXIT_USAGE;
	}
	if (a->count && !a->watch_s) {
		pr_warn("stacks: --count goes with --watch\n");
		return EXIT_USAGE;
	}
	a->patterns = &argv[optind];
	a->nr_patterns = argc - optind;
	return EXIT_OK;
}

/* What the copy of the target's memory may take (past it: live reads, said so). */
#define IMAGE_BUDGET (1ull << 30)
/* --tree: the futures kept per task */
#define STACKS_TREE_NODES 64

static int snapshot_status(int e)
{
	return e == -ESRCH || e == -ENOENT   ? EXIT_NO_INPUT
	       : e == -EPERM || e == -EACCES ? EXIT_NO_PERMISSION
	       : e == -ENOMEM		     ? EXIT_FAILURE_INTERNAL
					     : EXIT_NO_INPUT;
}

/* tokio's worker threads: named "tokio-runtime-worker" (comm keeps 15 bytes) */
static uint32_t count_tokio_workers(pid_t pid)
{
	char path[64], comm[32];
	struct dirent *d;
	uint32_t n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(dir = opendir(path)))
		return 0;
	while ((d = readdir(dir))) {
		char p[300];
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/proc/%d/task/%s/comm", (int)pid, d->d_name);
		if (!(f = fopen(p, "re")))
			continue;
		if (fgets(comm, sizeof(comm), f) && strncmp(comm, "tokio-runtime-w", 15) == 0)
			n++;
		fclose(f);
	}
	closedir(dir);
	return n;
}

/*
 * Every task of the process, decoded: the pause (unless no_pause) lasts the copy of
 * its writable memory; the tasks are found and decoded in the copy afterwards.
 */
static int take_snapshot(const struct stacks_args *a, const struct model *m,
			 const struct vtable_index *ix, struct stk_snapshot *out)
{
	struct mem_image img = {.pid = a->pid, .budget = IMAGE_BUDGET};
	struct candidate *cands = NULL;
	struct task_root *roots = NULL;
	struct pause pause = {0};
	uint32_t nr_cands = 0;
	char err[512] = "";
	sigset_t block, old;
	uint64_t t0 = sysfacts__now_ns(), t1;
	int e = 0;

	out->pid = a->pid;
	out->paused = !a->no_pause;
	/* Ctrl-C while the threads are stopped waits until they run again */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	if (!a->no_pause)
		e = pause__stop(a->pid, &pause, err, sizeof(err));
	t1 = sysfacts__now_ns();
	if (!e)
		e = snapshot__copy(a->pid, ix, &img, &cands, &nr_cands, &out->scan, err,
				   sizeof(err));
	if (!a->no_pause) {
		pause__resume(&pause);
		out->paused_ns = sysfacts__now_ns() - t1;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	out->not_kept = img.not_kept;
	if (!e && (e = snapshot__roots(m, ix, cands, nr_cands, mem_image__read, &img, &roots,
				       &out->nr, &out->scan)))
		snprintf(err, sizeof(err), "out of memory");
	if (!e) {
		out->tasks = calloc(out->nr ? out->nr : 1, sizeof(*out->tasks));
		if (!out->tasks) {
			e = -ENOMEM;
			snprintf(err, sizeof(err), "out of memory");
		}
		for (uint32_t i = 0; out->tasks && i < out->nr; i++) {
			struct stk_task *t = &out->tasks[i];

			t->root = roots[i];
			if (roots[i].addr)
				stacks__decode(m, ix, roots[i].future, roots[i].addr,
					       mem_image__read, &img, &t->stack);
			else if (!roots[i].st.complete && !roots[i].st.closed)
				t->stack =
				    (struct task_stack){.frames = {{.future = roots[i].future,
								    .state = FRAME_TYPE_ONLY,
								    .await_index = -1}},
							.nr = 1};
			if (!roots[i].addr || !a->tree)
				continue;
			if (!(t->tree = malloc(STACKS_TREE_NODES * sizeof(*t->tree)))) {
				e = -ENOMEM;
				snprintf(err, sizeof(err), "out of memory");
				break;
			}
			t->nr_tree =
			    stacks__tree(m, ix, roots[i].future, roots[i].addr, mem_image__read,
					 &img, t->tree, STACKS_TREE_NODES, &t->tree_stats);
		}
	}
	/* the locks: read while the copy of the target's memory is kept */
	if (!e &&
	    ((e = stk_snapshot__find_inner(out)) ||
	     (e = resources__build(&out->res, m, out->tasks, out->nr, mem_image__read, &img))))
		snprintf(err, sizeof(err), "out of memory");
	out->read_ns = sysfacts__now_ns() - t0;
	out->tokio_workers = count_tokio_workers(a->pid);
	free(roots);
	free(cands);
	mem_image__free(&img);
	if (e) {
		pr_warn("stacks: %s\n", err);
		return snapshot_status(e);
	}
	return EXIT_OK;
}

/* Write text (a whole document) to path through a safe output file. */
static int write_file(const char *path, const char *what, const char *text,
		      int (*fn)(FILE *, const struct stk_snapshot *, const struct model *),
		      const struct stk_snapshot *s, const struct model *m)
{
	struct outfile o;
	char err[512];

	if (outfile__open(&o, path, err, sizeof(err))) {
		pr_warn("stacks: %s\n", err);
		return EXIT_OUTPUT;
	}
	if ((text ? fprintf(o.f, "%s\n", text) < 0 : fn(o.f, s, m) != 0) || ferror(o.f)) {
		pr_warn("stacks: writing the %s to %s failed: %s\n", what, path, strerror(errno));
		outfile__abort(&o);
		return EXIT_OUTPUT;
	}
	if (outfile__commit(&o, err, sizeof(err))) {
		pr_warn("stacks: %s\n", err);
		return EXIT_OUTPUT;
	}
	return EXIT_OK;
}

static int write_outputs(const struct stacks_args *a, const struct model *m,
			 const struct stk_snapshot *s)
{
	int status = EXIT_OK;

	if (a->json) {
		char *text = stk_report__json(s, m);

		if (!text) {
			pr_warn("stacks: out of memory writing the JSON\n");
			return EXIT_FAILURE_INTERNAL;
		}
		status = write_file(a->json, "JSON", text, NULL, s, m);
		cJSON_free(text);
	}
	if (!status && a->folded)
		status = write_file(a->folded, "folded stacks", NULL, stk_report__folded, s, m);
	return status;
}

static volatile sig_atomic_t stop_watch;

static void on_stop(int sig)
{
	(void)sig;
	stop_watch = 1;
}

/* Sleep s seconds, or less if a stop signal comes. */
static void watch_sleep(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};

	while (!stop_watch && nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* One snapshot (or, with --watch, one every watch_s seconds): shown, then written. */
static int run(const struct stacks_args *a, const struct model *m, const struct vtable_index *ix)
{
	struct stk_snapshot prev = {0}, cur;
	struct sigaction sa = {.sa_handler = on_stop};
	uint64_t last = 0;
	long n = 0;
	int status = EXIT_OK;
	bool color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");

	if (a->watch_s) {
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	for (;;) {
		uint64_t now = sysfacts__now_ns();

		memset(&cur, 0, sizeof(cur));
		if ((status = take_snapshot(a, m, ix, &cur)))
			break;
		if (stk_snapshot__group(&cur, m, a->patterns, a->nr_patterns)) {
			pr_warn("stacks: out of memory\n");
			status = EXIT_FAILURE_INTERNAL;
			break;
		}
		if (a->watch_s)
			stk_snapshot__compare(&cur, n ? &prev : NULL,
					      n ? (double)(now - last) / 1e9 : 0);
		if (n)
			printf("\n");
		stk_report__text(stdout, &cur, m, color);
		fflush(stdout);
		if (a->verbose)
			pr_info("stacks: scanned %u mappings (%" PRIu64 " bytes, %u unreadable): "
				"%u vtable words, %u of them not a live task, %u copies of one "
				"found already, %u futures inside another task\n",
				cur.scan.mappings, cur.scan.bytes, cur.scan.unreadable,
				cur.scan.candidates, cur.scan.rejected, cur.scan.duplicates,
				cur.inner);
		if ((status = write_outputs(a, m, &cur)))
			break;
		stk_snapshot__free(&prev);
		prev = cur;
		memset(&cur, 0, sizeof(cur));
		last = now;
		n++;
		if (!a->watch_s || stop_watch || (a->count && n >= a->count))
			break;
		watch_sleep(a->watch_s);
		if (stop_watch)
			break;
	}
	if (!status && !prev.shown) {
		pr_warn("stacks: no task found in pid %d%s\n", (int)a->pid,
			a->nr_patterns ? " matching the patterns" : "");
		status = EXIT_NO_MATCH;
	}
	stk_snapshot__free(&cur);
	stk_snapshot__free(&prev);
	return status;
}

/* Say what the model lets `stacks` find, or why nothing. */
static int explain_index(const struct model *m, const struct vtable_index *ix)
{
	uint32_t lost = 0;

	for (uint32_t i = 0; i < m->nr_task_types; i++)
		lost += !m->task_types[i].vtable;
	if (lost)
		pr_info("stacks: %u task type%s of %s with no vtable found (not listed)\n", lost,
			lost == 1 ? "" : "s", m->path);
	if (ix->nr && m->runtimes[TASK_RT_TOKIO].assumed && m->symbols_only)
		pr_info("stacks: %s has symbols but no DWARF: tokio's tasks are listed by their "
			"future's type and state only, not where they wait; the task header "
			"layout is tokio 1.x's, assumed (docs/stacks.md)\n",
			m->path);
	else if (ix->nr && m->runtimes[TASK_RT_TOKIO].assumed && m->own_debuginfo < DEBUGINFO_FULL)
		print_debuginfo("stacks", m,
				"tokio's tasks are listed by their future's type and state only, "
				"not where they wait; the task header layout is tokio 1.x's, "
				"assumed (docs/stacks.md)");
	else if (ix->nr && m->runtimes[TASK_RT_TOKIO].assumed)
		pr_info("stacks: tokio's DWARF in %s has no types: its tasks are listed by their "
			"future's type and state only, not where they wait; the task header "
			"layout is tokio 1.x's, assumed (docs/stacks.md)\n",
			m->path);
	if (ix->nr)
		return EXIT_OK;
	if (m->symbols_only) {
		pr_warn("stacks: %s has symbols but no DWARF and no tokio task type: the task "
			"layouts and future types of async-task and of boxed dyn Futures are in "
			"the DWARF, so no task can be read (install or point at its debuginfo; "
			"docs/stacks.md)\n",
			m->path);
		return EXIT_BAD_INPUT;
	}
	if (m->own_debuginfo < DEBUGINFO_FULL && m->debuginfo_note) {
		pr_warn(
		    "stacks: no task of %s can be read: the task types and future layouts "
		    "stacks reads (boxed `dyn Future` vtables, async-task's and tokio's task "
		    "types, `__state`, awaitees) are DWARF types, and %s; %s (docs/analyzer.md, "
		    "\"Debug info levels\")\n",
		    m->path, m->debuginfo_note, m->debuginfo_advice);
		return EXIT_BAD_INPUT;
	}
	pr_warn("stacks: %s holds no task vtable asyncbpf knows: no tokio 1.x or "
		"async-task 4.x task type, no `dyn Future` vtable of a future in its "
		"DWARF (docs/stacks.md, \"Runtimes\")\n",
		m->path);
	return EXIT_NO_MATCH;
}

int cmd_stacks(int argc, char **argv)
{
	struct stacks_args a = {0};
	struct target_spec spec = {0};
	struct vtable_index ix = {0};
	struct model m;
	uint64_t bias = 0;
	int status = parse_args(argc, argv, &a), e;

	if (status)
		return status < 0 ? EXIT_OK : status;
	spec.pid = a.pid;
	status = load_model("stacks", &spec, &m);
	if (status)
		goto out_model;
	print_warnings("stacks", &m);
	if ((e = proc__load_bias(a.pid, m.pie, &bias))) {
		pr_warn("stacks: cannot find where pid %d's executable is mapped: %s\n", (int)a.pid,
			strerror(-e));
		status = e == -EACCES || e == -EPERM ? EXIT_NO_PERMISSION : EXIT_NO_INPUT;
		goto out_model;
	}
	if (vtable_index__init(&ix, &m, bias)) {
		status = EXIT_FAILURE_INTERNAL;
		goto out;
	}
	if (!(status = explain_index(&m, &ix)))
		status = run(&a, &m, &ix);
out:
	vtable_index__free(&ix);
out_model:
	model__free(&m);
	return status;
}
