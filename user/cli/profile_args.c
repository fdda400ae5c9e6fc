// SPDX-License-Identifier: GPL-2.0
/* asyncbpf profile's command line (profile_args.h, docs/profile.md). */
#include "cli/profile_args.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/profile_every.h"
#include "lib/exitcodes.h"
#include "lib/log.h"
#include "profile/profiler.h"

const char profile_usage[] =
    "Usage: asyncbpf profile -p PID [OPTIONS]\n"
    "       asyncbpf profile [OPTIONS] -- CMD [ARGS...]\n"
    "       asyncbpf profile -p PID,PID... | --exe PATH|NAME --every S --pprof-dir DIR\n"
    "\n"
    "Sample a running Rust program (or CMD, started before it runs and profiled until\n"
    "it exits) N times a second on every CPU, unwind each sample with DWARF CFI and\n"
    "show it as its async stack: [runtime] → task future → ... → innermost polled\n"
    "future → the functions it was running. No probe on any poll: cheap enough to\n"
    "leave on.\n"
    "\n"
    "  -p, --pid PID          profile a running process (several: a comma list or -p\n"
    "                         again, with --every: each process's own files)\n"
    "      --exe PATH|NAME    with --every: every process running that executable\n"
    "                         (or one of that name), attached as they start, let go\n"
    "                         as they exit; one analysis per binary\n"
    "  -F, --freq HZ          samples per second per CPU (default 99, max 10000)\n"
    "  -d, --duration S       stop after S seconds (default: Ctrl-C or the target's exit)\n"
    "  -o, --output F         SVG flame graph (default asyncbpf-profile-PID.svg)\n"
    "      --svg F            the same as -o\n"
    "      --folded F         also write folded stacks (flamegraph.pl, inferno, speedscope)\n"
    "      --pprof F          also write a pprof profile (go tool pprof, Pyroscope, Parca)\n"
    "      --perfetto F       also write the samples per thread as a Perfetto trace\n"
    "      --stack-size N     at most N bytes of user stack copied per sample (the stack's\n"
    "                         depth when less), K suffix (default 128K, max 256K); deeper\n"
    "                         stacks are cut short (counted, [stack cut short])\n"
    "      --off-cpu          also record where threads block, and for how long (kept\n"
    "                         apart from on-CPU samples in every output)\n"
    "      --folded-offcpu F  with --off-cpu: folded off-CPU stacks, weight = ns blocked\n"
    "      --ringbuf-size N   ring buffer bytes, K/M suffixes (default 16M; --off-cpu:\n"
    "                         another 8 times as large (at most 1G) for stacks the\n"
    "                         kernel could not walk)\n"
    "      --every S          continuous profiling: one pprof file per S seconds\n"
    "                         (at least 1) into --pprof-dir, named by the time\n"
    "      --pprof-dir DIR    where --every writes (made when missing)\n"
    "      --keep N           --every: keep the newest N files (default 1440; 0: all)\n"
    "      --keep-size SIZE   --every: and at most SIZE bytes of them, K/M/G suffixes\n"
    "  -v, --verbose          libbpf's log, unwinding statistics\n"
    "\n"
    "Exit status: 0 profiled; in launch mode CMD's own status (128+N if killed by\n"
    "signal N); 2 usage; 3 no such process or command; 4 not privileged; 7 sampling\n"
    "is not available; 8 an output could not be written (with --every: an\n"
    "interval's file, or --pprof-dir).\n"
    "\n"
    "Examples:\n"
    "  sudo asyncbpf profile -p \"$(pidof server)\" -d 30\n"
    "  sudo asyncbpf profile -F 999 --folded out.folded -- target/release/server\n"
    "  sudo asyncbpf profile -p \"$(pidof server)\" --every 60 --pprof-dir /var/lib/prof\n";

int profile_args__parse(int argc, char **argv, struct profile_args *a)
{
	static const struct option opts[] = {
	    {"pid", required_argument, NULL, 'p'},
	    {"exe", required_argument, NULL, 'X'},
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
	    {"every", required_argument, NULL, 'E'},
	    {"pprof-dir", required_argument, NULL, 'D'},
	    {"keep", required_argument, NULL, 'K'},
	    {"keep-size", required_argument, NULL, 'Y'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	int c, r, nopt = args__split_command(argc, argv, &a->command);
	uint64_t v;
	bool keep_given = false;

	a->freq = PROFILE_DEFAULT_FREQ;
	a->stack_size = PROFILE_STACK_DEFAULT;
	optind = 1;
	while ((c = getopt_long(nopt, argv, "p:F:d:o:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if ((r = args__parse_pids("profile", optarg, a->pids, &a->nr_pids,
						  PROFILE_MAX_PIDS)))
				return r;
			a->pid = a->pids[0];
			break;
		case 'X': a->exe = optarg; break;
		case 'F':
			if (args__parse_uint(optarg, 1, PROFILE_MAX_FREQ, &v)) {
				pr_warn("profile: -F takes 1 to %d samples per second, not '%s'\n",
					PROFILE_MAX_FREQ, optarg);
				return EXIT_USAGE;
			}
			a->freq = (uint32_t)v;
			break;
		case 'd':
			if (args__parse_seconds(optarg, &a->duration)) {
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
			if (args__parse_size(optarg, 64, PROFILE_STACK_MAX, &a->stack_size)) {
				pr_warn(
				    "profile: --stack-size takes 64 to %u bytes (K suffix), not "
				    "'%s'\n",
				    PROFILE_STACK_MAX, optarg);
				return EXIT_USAGE;
			}
			break;
		case 'R':
			if (args__parse_size(optarg, 4096, 1u << 30, &a->ringbuf_size)) {
				pr_warn("profile: --ringbuf-size takes 4K to 1G bytes, not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'O': a->offcpu = true; break;
		case 'B':
			if (args__parse_uint(optarg, 1, 1000, &v)) {
				pr_warn(
				    "profile: --bench-replay takes 1 to 1000 rounds, not '%s'\n",
				    optarg);
				return EXIT_USAGE;
			}
			a->replay_rounds = (uint32_t)v;
			break;
		case 'E':
			if (args__parse_seconds(optarg, &a->every) || a->every < 1) {
				pr_warn("profile: --every takes seconds, at least 1, not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'D': a->pprof_dir = optarg; break;
		case 'K':
			if (args__parse_uint(optarg, 0, 1000000, &v)) {
				pr_warn(
				    "profile: --keep takes a number of files (0: all), not '%s'\n",
				    optarg);
				return EXIT_USAGE;
			}
			a->keep = (uint32_t)v;
			keep_given = true;
			break;
		case 'Y':
			if (args__parse_size(optarg, 4096, UINT64_MAX / 2, &a->keep_bytes)) {
				pr_warn("profile: --keep-size takes bytes, at least 4K, K/M/G "
					"suffixes, not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
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
	if (!keep_given)
		a->keep = PROFILE_EVERY_KEEP;
	if (!a->every != !a->pprof_dir) {
		pr_warn("profile: --every S and --pprof-dir DIR go together: one pprof file per "
			"S seconds into DIR\n");
		return EXIT_USAGE;
	}
	if ((keep_given || a->keep_bytes) && !a->every) {
		pr_warn("profile: --keep and --keep-size limit what --every writes: give --every "
			"and --pprof-dir too\n");
		return EXIT_USAGE;
	}
	if (a->every && (a->svg || a->folded || a->folded_offcpu || a->pprof || a->perfetto)) {
		pr_warn("profile: with --every the profiles are one per interval in --pprof-dir; "
			"-o, --folded, --pprof and --perfetto cover a whole run: run without "
			"--every for them\n");
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
	if ((a->pid != 0) + (a->exe != NULL) + (a->command != NULL) != 1) {
		pr_warn("profile: give one of -p PID[,PID...], --exe PATH|NAME or -- CMD "
			"[ARGS...]\n%s",
			profile_usage);
		return EXIT_USAGE;
	}
	if ((a->nr_pids > 1 || a->exe) && !a->every) {
		pr_warn("profile: several processes (%s) are profiled with --every S --pprof-dir "
			"DIR, each process's files its own; one profile of one process: one -p\n",
			a->exe ? "--exe" : "-p A,B");
		return EXIT_USAGE;
	}
	if ((a->nr_pids > 1 || a->exe) && a->replay_rounds) {
		pr_warn("profile: --bench-replay measures one process: one -p\n");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}
