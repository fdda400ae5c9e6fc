// SPDX-License-Identifier: GPL-2.0
/*
 * asyncbpf top -p PID: a live table of the selected futures (docs/top.md), built
 * from the tracer's BPF statistics maps only: the same probes as `trace` in a
 * stats-only mode (no per-poll record in the ring buffer), read every interval.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/top_fleet.h"
#include "cli/trace_args.h"
#include "export/prometheus.h"
#include "lib/exitcodes.h"
#include "lib/log.h"
#include "lib/privilege.h"
#include "trace/top.h"

static const char top_usage[] =
    "Usage: asyncbpf top -p PID[,PID...] [PATTERN...] [OPTIONS]\n"
    "       asyncbpf top --exe PATH|NAME [PATTERN...] [OPTIONS]\n"
    "       asyncbpf top [PATTERN...] [OPTIONS] -- CMD [ARGS...]\n"
    "\n"
    "A live table of a running Rust program's tasks or futures, refreshed every\n"
    "interval: polls/s, busy % of a CPU, p50/p99 poll time, time blocked in syscalls\n"
    "inside polls, wakes/s, the scheduling delay's p99 (wake to poll), and the\n"
    "instances live (started, not finished). Built from statistics summed in the\n"
    "kernel: no per-poll records (docs/top.md; --locks: the task trees too).\n"
    "Without patterns or --deep: task mode, one row per task type (a runtime's task\n"
    "or a block_on root), one probe pair per task poll, wake probes attached 10% of\n"
    "the time; DONE/S counts tasks finished. With patterns or --deep: one row per\n"
    "future's poll fn, every poll probed; CANCEL/S counts cancellations.\n"
    "\n"
    "  -p, --pid PID[,PID...]  the process; several (a comma list, or -p again): a\n"
    "                       table for each, one --prometheus page with a pid label\n"
    "      --exe PATH|NAME  every process running that executable (or one of that\n"
    "                       name), attached as they start and let go as they exit;\n"
    "                       metrics summed per executable: a restart continues them\n"
    "  PATTERN              glob on Rust paths (default: your own crates' futures)\n"
    "  -i, --interval S     seconds between tables (default 1)\n"
    "  -d, --duration S     stop after S seconds (default: Ctrl-C, q, or the target's exit)\n"
    "  -b, --batch          plain tables one after another (like top -b), no keys\n"
    "  -n, --count N        stop after N tables\n"
    "  -s, --sort KEY       busy (default), polls, p99, blocked, wakes, delay, cancelled\n"
    "                       (done), live; on a terminal the keys b p 9 B w d c l switch,\n"
    "                       q quits\n"
    "      --tasks          task mode even where it leaves tasks out\n"
    "      --deep           per-future rows: every poll of the selected futures\n"
    "      --locks          task mode (as --tasks), and a second table of the locks\n"
    "                       tasks wait for and hold across awaits, from each task's\n"
    "                       tree read at the end of its polls and sent to top (costs\n"
    "                       more: docs/top.md, \"Locks\")\n"
    "      --all-crates     every crate's futures (per-future rows)\n"
    "      --wake-sample PCT  wake probes attached PCT% of each second (task mode\n"
    "                       default 10; 100: every wake)\n"
    "      --no-blocking, --no-wakes, --no-cancel   leave that part out\n"
    "      --prometheus [ADDR:]PORT  serve the statistics as Prometheus metrics on\n"
    "                       http://ADDR:PORT/metrics (default address 127.0.0.1; any\n"
    "                       other only when given; PORT 0: a free one, printed)\n"
    "      --prometheus-top N  futures with series of their own (default 50), the\n"
    "                       rest summed as future=\"other\" (docs/metrics.md)\n"
    "  -q, --quiet          no tables: only the --prometheus endpoint\n"
    "  -v, --verbose        more detail\n"
    "\n"
    "Exit status: 0 ran; 2 usage; 3 no such process, command or --exe file; 4 not\n"
    "privileged; 6 nothing selected; 7 a kernel feature is missing; 8 the\n"
    "--prometheus address could not be listened on.\n";

static int parse(int argc, char **argv, struct trace_args *a)
{
	static const struct option opts[] = {
	    {"pid", required_argument, NULL, 'p'},
	    {"exe", required_argument, NULL, 'E'},
	    {"interval", required_argument, NULL, 'i'},
	    {"duration", required_argument, NULL, 'd'},
	    {"batch", no_argument, NULL, 'b'},
	    {"count", required_argument, NULL, 'n'},
	    {"sort", required_argument, NULL, 's'},
	    {"all-crates", no_argument, NULL, 'a'},
	    {"no-blocking", no_argument, NULL, 'B'},
	    {"no-wakes", no_argument, NULL, 'W'},
	    {"no-cancel", no_argument, NULL, 'K'},
	    {"tasks", no_argument, NULL, 'Q'},
	    {"deep", no_argument, NULL, 'J'},
	    {"locks", no_argument, NULL, 'L'},
	    {"wake-sample", required_argument, NULL, 'P'},
	    {"prometheus", required_argument, NULL, 'M'},
	    {"prometheus-top", required_argument, NULL, 'N'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	int c, r, nopt = args__split_command(argc, argv, &a->command);
	uint64_t n;

	a->top = true;
	a->interval = 1.0;
	a->max_probes = TRACE_DEFAULT_MAX_PROBES;
	a->block_threshold = 0.001;
	a->prom_top = PROM_DEFAULT_TOP;
	optind = 1;
	while ((c = getopt_long(nopt, argv, "p:i:d:bn:s:qvh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if ((r = args__parse_pids("top", optarg, a->pids, &a->nr_pids,
						  TOP_MAX_PIDS)))
				return r;
			a->pid = a->pids[0];
			break;
		case 'E': a->exe = optarg; break;
		case 'i':
			if (args__parse_seconds(optarg, &a->interval) || a->interval < 0.05) {
				pr_warn("top: --interval takes seconds, at least 0.05, not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'd':
			if (args__parse_seconds(optarg, &a->duration)) {
				pr_warn("top: --duration takes positive seconds, not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'b': a->batch = true; break;
		case 'n':
			if (args__parse_uint(optarg, 1, LONG_MAX, &n)) {
				pr_warn("top: --count takes a number of tables >= 1, not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			a->count = (long)n;
			break;
		case 's':
			if ((a->sort = top_key__parse(optarg)) < 0) {
				pr_warn(
				    "top: --sort takes busy, polls, p99, blocked, wakes, delay, "
				    "cancelled (done) or live, not '%s'\n",
				    optarg);
				return EXIT_USAGE;
			}
			break;
		case 'a': a->all_crates = true; break;
		case 'B': a->no_blocking = true; break;
		case 'W': a->no_wakes = true; break;
		case 'K': a->no_cancel = true; break;
		case 'Q': a->tasks = true; break;
		case 'J': a->deep = true; break;
		case 'L': a->locks = true; break;
		case 'P':
			if ((r = trace_args__wake_sample("top", optarg, &a->wake_sample)))
				return r;
			break;
		case 'M': a->prometheus = optarg; break;
		case 'N':
			if (args__parse_uint(optarg, 1, PROM_MAX_TOP, &n)) {
				pr_warn(
				    "top: --prometheus-top takes a number of futures from 1 to %d, "
				    "not '%s'\n",
				    PROM_MAX_TOP, optarg);
				return EXIT_USAGE;
			}
			a->prom_top = (unsigned)n;
			break;
		case 'q': a->quiet = true; break;
		case 'v':
			a->verbose = true;
			log_verbosity = 2;
			break;
		case 'h': fputs(top_usage, stdout); return -1;
		default: fputs(top_usage, stderr); return EXIT_USAGE;
		}
	}
	a->patterns = &argv[optind];
	a->nr_patterns = nopt - optind;
	if (a->command && !a->command[0]) {
		pr_warn("top: nothing after '--': name the command to launch\n");
		return EXIT_USAGE;
	}
	if ((a->pid != 0) + (a->exe != NULL) + (a->command != NULL) != 1) {
		pr_warn("top: give one of -p PID[,PID...], --exe PATH|NAME or -- CMD [ARGS...]\n%s",
			top_usage);
		return EXIT_USAGE;
	}
	if (a->tasks && a->deep) {
		pr_warn("top: --tasks and --deep contradict each other: task mode shows task "
			"types, --deep every poll of the selected futures\n");
		return EXIT_USAGE;
	}
	if (a->locks && a->deep) {
		pr_warn("top: --locks reads task mode's trees; --deep leaves task mode\n");
		return EXIT_USAGE;
	}
	if (a->locks && !a->tasks && (a->nr_patterns || a->all_crates)) {
		pr_warn("top: --locks reads task mode's trees, and patterns or --all-crates select "
			"per-future rows: drop them, or add --tasks (task mode, whole tasks)\n");
		return EXIT_USAGE;
	}
	if (a->locks && a->quiet) {
		pr_warn("top: --locks adds a table; --quiet prints none\n");
		return EXIT_USAGE;
	}
	if (a->quiet && !a->prometheus) {
		pr_warn("top: --quiet leaves only the --prometheus endpoint: give --prometheus "
			"[ADDR:]PORT too\n");
		return EXIT_USAGE;
	}
	if (a->wake_sample > 0 && a->no_wakes) {
		pr_warn("top: --wake-sample and --no-wakes contradict each other\n");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

int cmd_top(int argc, char **argv)
{
	struct trace_args a = {0};
	int r = parse(argc, argv, &a);

	if (r)
		return r < 0 ? EXIT_OK : r;
	if (!privilege__bpf_ok()) {
		privilege__explain("top");
		return EXIT_NO_PERMISSION;
	}
	if (a.nr_pids > 1 || a.exe)
		return top_fleet__run(&a);
	return trace__run(&a);
}
