// SPDX-License-Identifier: GPL-2.0
/*
 * floor: the probe mechanism's cost without asyncbpf's BPF work. Builds the exact
 * probe plan `asyncbpf trace` builds for a binary and a selection (trace_plan__build:
 * the same entry and exit file offsets), attaches a program that returns 0 to all of
 * them through one uprobe_multi link, with the target's pid in the link's filter as
 * asyncbpf does, and reports how long loading, BPF_LINK_CREATE and closing the link
 * took. Exit probes follow asyncbpf's --exits rule (--exits, default auto: uretprobes
 * in a second link when the binary cannot unwind, else probes on `ret`s). See
 * bench/README.md.
 *
 *   floor [OPTIONS] [PATTERN...] -- CMD [ARGS...]   launch CMD stopped, attach, run it
 *   floor [OPTIONS] --attach-only BIN [PATTERN...]  attach to BIN (no process), detach
 *   floor [OPTIONS] -p PID [PATTERN...]             attach to a running process, detach
 *
 * With --tracer (with --attach-only or -p), the same probe plan goes through the
 * tracer's own BPF side instead (tracer__load, tracer__attach, tracer__detach from
 * user/trace/trace_loader.c, poll_probe), timed in parts: load (open, size the maps,
 * load and verify, fill the specs), filling the specs again one
 * BPF_MAP_UPDATE_ELEM per spec as the loader does and in one BPF_MAP_UPDATE_BATCH,
 * attach, detach.
 *
 * One JSON line on stderr: "floor: {...}" (or "tracer: {...}"). Exit status: CMD's in launch mode,
 * else 0; 1 internal error, 2 usage, 6 nothing to probe, 7 the kernel refused.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench_common.h"
#include "lib/launch.h"
#include "cli/commands.h"
#include "lib/exitcodes.h"
#include "floor.skel.h"
#include "lib/log.h"
#include "trace.skel.h"
#include "lib/uprobe_multi.h"

static const char usage[] =
    "Usage: floor [--count] [--all-crates] [-v] [PATTERN...] -- CMD [ARGS...]\n"
    "       floor [--count] [--all-crates] [-v] --attach-only BIN [PATTERN...]\n"
    "       floor [--count] [--all-crates] [-v] -p PID [PATTERN...]\n"
    "       (--exits auto|ret|uretprobe: exit probes as asyncbpf trace --exits, default auto;\n"
    "        --program floor_ktime|floor_task_storage|floor_fixed: one piece of\n"
    "        poll_probe's work instead of the empty program)\n"
    "       floor --tracer [--ringbuf-size N] [--all-crates] [-v] (--attach-only BIN | -p "
    "PID) [PATTERN...]\n"
    "\n"
    "Attach a BPF program that returns 0 (--count: that counts its hits) to the probe\n"
    "sites asyncbpf trace would use, through one uprobe_multi link; report load,\n"
    "attach and detach times as one JSON line on stderr.\n";

static bool verbose;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (!verbose || level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, args);
}

struct floor_args {
	bool count, all_crates, attach_only, tracer;
	pid_t pid;
	uint64_t ringbuf_size;	/* --tracer: 0 is the tracer's default */
	const char *program;	/* --program: one of floor.bpf.c's programs */
	enum bench_exits exits; /* --exits, as asyncbpf trace's */
	const char *path;	/* the binary whose plan is built */
	char **patterns, **command;
	int nr_patterns;
};

static int parse(int argc, char **argv, struct floor_args *a)
{
	static const struct option opts[] = {
	    {"count", no_argument, NULL, 'c'},
	    {"all-crates", no_argument, NULL, 'a'},
	    {"attach-only", no_argument, NULL, 'A'},
	    {"pid", required_argument, NULL, 'p'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {"tracer", no_argument, NULL, 'T'},
	    {"ringbuf-size", required_argument, NULL, 'R'},
	    {"program", required_argument, NULL, 'P'},
	    {"exits", required_argument, NULL, 'E'},
	    {0},
	};
	int c, nopt = argc;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			nopt = i;
			a->command = &argv[i + 1];
			break;
		}
	while ((c = getopt_long(nopt, argv, "p:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'c': a->count = true; break;
		case 'a': a->all_crates = true; break;
		case 'A': a->attach_only = true; break;
		case 'T': a->tracer = true; break;
		case 'R': a->ringbuf_size = strtoull(optarg, NULL, 0); break;
		case 'P': a->program = optarg; break;
		case 'E':
			if (!strcmp(optarg, "auto"))
				a->exits = BENCH_EXITS_AUTO;
			else if (!strcmp(optarg, "ret"))
				a->exits = BENCH_EXITS_RET;
			else if (!strcmp(optarg, "uretprobe"))
				a->exits = BENCH_EXITS_URETPROBE;
			else {
				fprintf(stderr, "floor: --exits takes auto, ret or uretprobe\n");
				return EXIT_USAGE;
			}
			break;
		case 'p':
			if (parse_pid("floor", optarg, &a->pid))
				return EXIT_USAGE;
			break;
		case 'v': verbose = true; break;
		case 'h': fputs(usage, stdout); exit(0);
		default: fputs(usage, stderr); return EXIT_USAGE;
		}
	}
	a->patterns = &argv[optind];
	a->nr_patterns = nopt - optind;
	if (a->attach_only) {
		if (a->command || a->pid || a->nr_patterns < 1) {
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
		a->path = a->patterns[0];
		a->patterns++;
		a->nr_patterns--;
	} else if (a->pid > 0) {
		if (a->command) {
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
	} else if (!a->command || !a->command[0] || a->tracer) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	} else {
		a->path = a->command[0];
	}
	return EXIT_OK;
}

/* Time the tracer's own load, spec fill, attach and detach for this plan. */
static int time_tracer(const struct floor_args *a, const struct model *m,
		       const struct trace_plan *plan)
{
	struct tracer *t;
	struct tracer_opts o = {
	    .pid = a->pid, .path = a->path, .ringbuf_size = a->ringbuf_size, .verbose = verbose};
	char err[512] = "";
	uint64_t t0, t1, t2, t3, t4, t5, t6, t7;
	__u32 *keys = NULL, count = plan->nr, verified_insns = 0;
	int fd, r, status = EXIT_OK;
	LIBBPF_OPTS(bpf_map_batch_opts, bopts);

	t = tracer__new(&o);
	if (!t)
		return EXIT_FAILURE_INTERNAL;
	t0 = bench__now_ns();
	r = tracer__load(t, plan, m, err, sizeof(err));
	t1 = bench__now_ns();
	if (r) {
		fprintf(stderr, "floor: tracer__load: %s\n", err);
		status = EXIT_KERNEL;
		goto out;
	}
	fd = tracer__specs_fd(t);
	for (__u32 i = 0; i < plan->nr; i++)
		if (bpf_map_update_elem(fd, &i, &plan->specs[i], BPF_ANY)) {
			fprintf(stderr, "floor: refilling the specs: %s\n", strerror(errno));
			status = EXIT_KERNEL;
			goto out;
		}
	t2 = bench__now_ns();
	keys = calloc(plan->nr, sizeof(*keys));
	if (!keys) {
		status = EXIT_FAILURE_INTERNAL;
		goto out;
	}
	for (__u32 i = 0; i < plan->nr; i++)
		keys[i] = i;
	t3 = bench__now_ns();
	if (bpf_map_update_batch(fd, keys, plan->specs, &count, &bopts)) {
		fprintf(stderr, "floor: BPF_MAP_UPDATE_BATCH of the specs: %s\n", strerror(errno));
		status = EXIT_KERNEL;
		goto out;
	}
	t4 = bench__now_ns();
	r = tracer__attach(t, plan, err, sizeof(err));
	t5 = bench__now_ns();
	if (r) {
		fprintf(stderr, "floor: tracer__attach: %s\n", err);
		status = EXIT_KERNEL;
		goto out;
	}
	{
		struct bpf_prog_info info = {0};
		__u32 len = sizeof(info);

		if (!bpf_obj_get_info_by_fd(tracer__prog_fd(t), &info, &len))
			verified_insns = info.verified_insns;
	}
	t6 = bench__now_ns();
	tracer__detach(t);
	t7 = bench__now_ns();
	fprintf(stderr,
		"tracer: {\"probes\":%u,\"entries\":%u,\"exits\":%u,\"polls\":%u,"
		"\"multi\":%s,\"load_ms\":%.3f,\"fill_ms\":%.3f,\"fill_batch_ms\":%.3f,"
		"\"attach_ms\":%.3f,\"detach_ms\":%.3f,\"verified_insns\":%u}\n",
		plan->nr, plan->nr_entries, plan->nr_exits, plan->nr_polls,
		strstr(tracer__links(t), "multi") ? "true" : "false", (double)(t1 - t0) / 1e6,
		(double)(t2 - t1) / 1e6, (double)(t4 - t3) / 1e6, (double)(t5 - t4) / 1e6,
		(double)(t7 - t6) / 1e6, verified_insns);
out:
	free(keys);
	tracer__free(t);
	return status;
}

int main(int argc, char **argv)
{
	struct floor_args a = {0};
	struct model m;
	struct trace_plan plan = {0};
	struct floor_bpf *skel = NULL;
	struct bpf_program *prog;
	char proc_exe[64], exe[PATH_MAX];
	uint64_t t0, t_loaded, t_attach, t_attached, t_detached = 0, t_closed = 0;
	int status, links[2] = {-1, -1}, go_fd = -1, held_fd = -1, child_status = 0, r;
	pid_t child = 0;
	uint64_t run_time_ns = 0, run_cnt = 0;

	status = parse(argc, argv, &a);
	if (status)
		return status;
	log_verbosity = verbose ? 2 : 0;
	libbpf_set_print(libbpf_print);
	if (a.pid > 0) {
		snprintf(proc_exe, sizeof(proc_exe), "/proc/%d/exe", (int)a.pid);
		a.path = proc_exe;
	}
	if (a.command && !realpath(a.path, exe)) {
		fprintf(stderr, "floor: %s: %s\n", a.path, strerror(errno));
		return EXIT_NO_INPUT;
	}
	if (a.command)
		a.path = exe;
	status = bench__plan(a.path, a.patterns, a.nr_patterns, a.all_crates, a.exits, &m, &plan);
	if (status)
		return status;

	if (a.tracer) {
		status = time_tracer(&a, &m, &plan);
		goto out;
	}
	t0 = bench__now_ns();
	skel = floor_bpf__open();
	if (!skel) {
		fprintf(stderr, "floor: opening the BPF object failed: %s\n", strerror(errno));
		status = EXIT_KERNEL;
		goto out;
	}
	bpf_object__for_each_program(prog, skel->obj) bpf_program__set_expected_attach_type(
	    prog, (enum bpf_attach_type)UPROBE_MULTI_ATTACH_TYPE);
	r = floor_bpf__load(skel);
	if (r) {
		fprintf(stderr, "floor: loading the BPF programs failed: %s\n", strerror(-r));
		status = EXIT_KERNEL;
		goto out;
	}
	t_loaded = bench__now_ns();
	prog = a.count ? skel->progs.floor_count : skel->progs.floor_empty;
	if (a.program && !(prog = bpf_object__find_program_by_name(skel->obj, a.program))) {
		fprintf(stderr, "floor: no program '%s' in floor.bpf.c\n", a.program);
		status = EXIT_USAGE;
		goto out;
	}
	if (a.command) {
		child = launch__start_stopped("floor", a.path, a.command, &go_fd, &held_fd);
		if (child < 0) {
			fprintf(stderr, "floor: cannot start %s: %s\n", a.path, strerror(-child));
			child = 0;
			status = EXIT_FAILURE_INTERNAL;
			goto out;
		}
	}
	t_attach = bench__now_ns();
	r = bench__attach(bpf_program__fd(prog), a.path, &plan, child ? child : a.pid, links);
	t_attached = bench__now_ns();
	if (r) {
		fprintf(stderr,
			"floor: BPF_LINK_CREATE(BPF_TRACE_UPROBE_MULTI) of %u probes in %s "
			"failed: %s\n",
			plan.nr, a.path, strerror(-r));
		status = EXIT_KERNEL;
		goto out;
	}
	if (child) {
		if ((r = launch__go(&go_fd, &held_fd, child, &child_status)) < 0) {
			fprintf(stderr, "floor: cannot start the command: %s\n", strerror(-r));
			status = EXIT_FAILURE_INTERNAL;
			goto out;
		}
		if (r == LAUNCH_HELD)
			launch__release(child); /* nothing to fill: let it run */
		if (r != LAUNCH_EXITED)
			child_status = launch__wait(child);
		child = 0;
	}
	{
		/* the counters kernel.bpf_stats_enabled=1 keeps (0 when it is off) */
		struct bpf_prog_info info = {0};
		__u32 len = sizeof(info);

		if (!bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len)) {
			run_time_ns = info.run_time_ns;
			run_cnt = info.run_cnt;
		}
	}
	t_detached = bench__now_ns();
	for (int i = 0; i < 2; i++) {
		if (links[i] >= 0)
			close(links[i]);
		links[i] = -1;
	}
	t_closed = bench__now_ns();
	fprintf(stderr,
		"floor: {\"probes\":%u,\"entries\":%u,\"exits\":%u,\"uretprobes\":%u,\"polls\":%u,"
		"\"program\":\"%s\",\"load_ms\":%.3f,\"attach_ms\":%.3f,\"detach_ms\":%.3f,"
		"\"hits\":%" PRIu64 ",\"run_time_ns\":%" PRIu64 ",\"run_cnt\":%" PRIu64
		",\"status\":%d}\n",
		plan.nr, plan.nr_entries, plan.nr_exits, plan.nr_returns, plan.nr_polls,
		bpf_program__name(prog), (double)(t_loaded - t0) / 1e6,
		(double)(t_attached - t_attach) / 1e6, (double)(t_closed - t_detached) / 1e6,
		a.count ? (uint64_t)skel->bss->floor_hits : 0, run_time_ns, run_cnt, child_status);
	status = a.command ? child_status : EXIT_OK;
out:
	for (int i = 0; i < 2; i++)
		if (links[i] >= 0)
			close(links[i]);
	if (go_fd >= 0)
		close(go_fd); /* the child exits 127 without running the command */
	if (held_fd >= 0)
		close(held_fd);
	if (child)
		launch__wait(child);
	floor_bpf__destroy(skel);
	trace_plan__free(&plan);
	model__free(&m);
	return status;
}
