// SPDX-License-Identifier: GPL-2.0
/* asyncbpf trace's command line (trace_args.h, docs/tracing.md). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "lib/exitcodes.h"
#include "lib/log.h"
#include "cli/trace_args.h"

const char trace_usage[] =
    "Usage: asyncbpf trace -p PID [PATTERN...] [OPTIONS]\n"
    "       asyncbpf trace [PATTERN...] [OPTIONS] -- CMD [ARGS...]\n"
    "       asyncbpf -p PID                  (trace with the defaults)\n"
    "\n"
    "Trace a running Rust program (or CMD, started stopped before it runs and traced\n"
    "until it exits). Without patterns, a whitelist or --deep: task mode, one probe\n"
    "pair per task poll with each task's tree of futures read from memory (the\n"
    "per-future probes where task mode would leave tasks out). With patterns, a\n"
    "whitelist or --deep: every poll of the selected futures, your own crates' by\n"
    "default (docs/selection.md).\n"
    "\n"
    "  -p, --pid PID          trace a running process\n"
    "  PATTERN                glob on Rust paths: 'demo::*', '*::handler'\n"
    "  -e, --expand DIR       grow the selection along the await graph: up, down, both\n"
    "  -w, --whitelist F      select from a whitelist file (asyncbpf list -o F)\n"
    "      --all-crates       default selection is every crate's futures\n"
    "      --tasks            task mode even with patterns, or where it leaves tasks\n"
    "                         out (docs/tracing.md, Task mode)\n"
    "      --deep             per-future probes on the selected futures' polls: each\n"
    "                         poll's duration, result and await point\n"
    "  -o, --output F         Perfetto trace (default asyncbpf-PID.pftrace)\n"
    "      --task-tracks      Perfetto: also a track per task with its polls (~+30 bytes\n"
    "                         per task poll); else a flow links a task's polls\n"
    "      --chrome F         also write Chrome trace JSON\n"
    "      --folded F         also write async stacks weighted by busy time (flamegraph)\n"
    "      --dot F            also write the await graph seen, with counts (Graphviz)\n"
    "      --summary-json F   also write the summary as JSON\n"
    "      --max-size N       Perfetto trace size limit, K/M/G suffixes (default 1G;\n"
    "                         0: none); tracing stops there, or with --ring ...\n"
    "      --ring K           ...keep the newest data in K files F.1, F.2, ... of\n"
    "                         N/K bytes each, deleting the oldest\n"
    "      --records F        also write every poll as a JSON line (raw records)\n"
    "  -d, --duration S       stop after S seconds (default: Ctrl-C or the target's exit)\n"
    "      --ringbuf-size N   ring buffer bytes, K/M/G suffixes (default 16M)\n"
    "      --exits MODE       how poll exits are seen: auto (default: emulated, or\n"
    "                         uretprobe for a panic=abort binary), emulated (branch\n"
    "                         sites the kernel emulates, `ret` where none is safe),\n"
    "                         ret (every `ret`/tail jump, single-stepped: the\n"
    "                         reference), uretprobe (aborts a target whose panic\n"
    "                         unwinds through a poll)\n"
    "      --attach MODE      auto (default), multi (uprobe_multi only), perf (one\n"
    "                         perf-event link per probe, as on kernels before 6.6)\n"
    "      --max-probes N     refuse more than N probes (default 20000; 0: no limit)\n"
    "      --no-wakes         do not probe the runtimes' wake functions (who woke a\n"
    "                         task, its scheduling delay: on by default)\n"
    "      --wake-sample PCT  wake probes attached PCT%% of each second (default 10 in\n"
    "                         task mode, 100 otherwise): delays from a sample of the\n"
    "                         wakes at a fraction of the cost\n"
    "      --no-cancel        do not probe drop_in_place of the selected futures\n"
    "                         (cancellations: on by default)\n"
    "      --no-blocking      do not watch the target's threads go off-CPU inside polls\n"
    "                         (blocking syscalls, preemption: on by default)\n"
    "      --block-threshold S  warn (BLOCKING) about a future that blocked its thread\n"
    "                         longer than S seconds in one poll (default 0.001)\n"
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

/* The index of s in names[n], or -1. */
static int choice(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

/* A count in [min, max] (no sign, no suffix): 0 or -1. */
static int parse_count(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno || *end || end == s || s[0] == '-' || *out < min || *out > max ? -1 : 0;
}

/* The options that choose one of a few words: --expand, --exits, --attach. */
static int parse_word_option(int c, const char *arg, struct trace_args *a)
{
	static const char *const expand[] = {"up", "down", "both"};
	static const char *const exits[] = {"auto", "emulated", "ret", "uretprobe"};
	static const char *const attach[] = {"auto", "multi", "perf"};
	int k;

	switch (c) {
	case 'e':
		if ((k = choice(arg, expand, 3)) < 0) {
			pr_warn("trace: --expand takes up, down or both, not '%s'\n", arg);
			return EXIT_USAGE;
		}
		a->expand = (enum expand_dir[]){EXPAND_UP, EXPAND_DOWN, EXPAND_BOTH}[k];
		return EXIT_OK;
	case 'X':
		if ((k = choice(arg, exits, 4)) < 0) {
			pr_warn("trace: --exits takes auto, emulated, ret or uretprobe, not '%s'\n",
				arg);
			return EXIT_USAGE;
		}
		a->exits =
		    (enum exits_mode[]){EXITS_AUTO, EXITS_EMULATED, EXITS_RET, EXITS_URETPROBE}[k];
		return EXIT_OK;
	default: /* 'A' */
		if ((k = choice(arg, attach, 3)) < 0) {
			pr_warn("trace: --attach takes auto, multi or perf, not '%s'\n", arg);
			return EXIT_USAGE;
		}
		a->attach = (enum attach_mode[]){ATTACH_AUTO, ATTACH_MULTI, ATTACH_PERF}[k];
		return EXIT_OK;
	}
}

/* The options that take a number: sizes, seconds, counts. */
static int parse_number_option(int c, const char *arg, struct trace_args *a)
{
	switch (c) {
	case 'd':
		if (args__parse_seconds(arg, &a->duration)) {
			pr_warn("trace: --duration takes positive seconds, not '%s'\n", arg);
			return EXIT_USAGE;
		}
		return EXIT_OK;
	case 'R':
		if (args__parse_size(arg, 4096, 1ull << 30, &a->ringbuf_size)) {
			pr_warn("trace: --ringbuf-size takes 4K to 1G bytes, not '%s'\n", arg);
			return EXIT_USAGE;
		}
		return EXIT_OK;
	case 'P': return trace_args__wake_sample("trace", arg, &a->wake_sample);
	case 'M':
		if (parse_count(arg, 0, ULONG_MAX, &a->max_probes)) {
			pr_warn("trace: --max-probes takes a number (0: no limit), not '%s'\n",
				arg);
			return EXIT_USAGE;
		}
		return EXIT_OK;
	case 'Z':
		if (!strcmp(arg, "0")) {
			a->max_size = 0;
		} else if (args__parse_size(arg, 64u << 10, TRACE_MAX_MAX_SIZE, &a->max_size)) {
			pr_warn("trace: --max-size takes 64K to 1T bytes (K/M/G suffixes) or 0 (no "
				"limit), not '%s'\n",
				arg);
			return EXIT_USAGE;
		}
		return EXIT_OK;
	default: /* 'G' */
		if (parse_count(arg, 2, 1000, &a->ring)) {
			pr_warn("trace: --ring takes 2 to 1000 files, not '%s'\n", arg);
			return EXIT_USAGE;
		}
		return EXIT_OK;
	}
}

int trace_args__wake_sample(const char *cmd, const char *arg, double *fraction)
{
	char *end;
	double pct = strtod(arg, &end);

	if (end == arg || *end || !(pct >= 1 && pct <= 100)) {
		pr_warn("%s: --wake-sample takes a percentage from 1 to 100, not '%s'\n", cmd, arg);
		return EXIT_USAGE;
	}
	*fraction = pct / 100;
	return EXIT_OK;
}

/* One option; -1 after --help (printed), else an exit status. */
static int parse_option(int c, const char *arg, struct trace_args *a)
{
	switch (c) {
	case 'p': return parse_pid("trace", arg, &a->pid);
	case 'e':
	case 'X':
	case 'A': return parse_word_option(c, arg, a);
	case 'd':
	case 'R':
	case 'M':
	case 'P':
	case 'Z':
	case 'G': return parse_number_option(c, arg, a);
	case 'w': a->whitelist = arg; break;
	case 'o': a->output = arg; break;
	case 'C': a->chrome = arg; break;
	case 'S': a->summary_json = arg; break;
	case 'r': a->records = arg; break;
	case 'F': a->folded = arg; break;
	case 'D': a->dot = arg; break;
	case 'T': a->task_tracks = true; break;
	case 'B': a->no_blocking = true; break;
	case 'K': a->no_cancel = true; break;
	case 'W': a->no_wakes = true; break;
	case 'Q': a->tasks = true; break;
	case 'J': a->deep = true; break;
	case 'b':
		if (args__parse_seconds(arg, &a->block_threshold)) {
			pr_warn("trace: --block-threshold takes positive seconds, not '%s'\n", arg);
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
	return EXIT_OK;
}

/* What the options say together. An exit status. */
static int check_combination(const struct trace_args *a)
{
	if (a->command && !a->command[0]) {
		pr_warn("trace: nothing after '--': name the command to launch\n");
		return EXIT_USAGE;
	}
	if (!a->pid == !a->command) {
		pr_warn("trace: give one of -p PID or -- CMD [ARGS...]\n%s", trace_usage);
		return EXIT_USAGE;
	}
	if (a->tasks && a->deep) {
		pr_warn("trace: --tasks and --deep contradict each other: task mode probes task "
			"polls, --deep every poll of the selected futures\n");
		return EXIT_USAGE;
	}
	if (a->wake_sample > 0 && a->no_wakes) {
		pr_warn("trace: --wake-sample and --no-wakes contradict each other\n");
		return EXIT_USAGE;
	}
	if (a->ring && (!a->max_size || a->max_size / a->ring < (64u << 10))) {
		pr_warn("trace: --ring %lu needs --max-size of at least 64K per file\n", a->ring);
		return EXIT_USAGE;
	}
	if (a->ring && (a->chrome || a->records || (a->output && !strcmp(a->output, "-")))) {
		pr_warn("trace: --ring rotates the Perfetto trace only: it cannot be used with "
			"--chrome, --records or -o -\n");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

int trace_args__parse(int argc, char **argv, struct trace_args *a)
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
	    {"exits", required_argument, NULL, 'X'},
	    {"attach", required_argument, NULL, 'A'},
	    {"max-probes", required_argument, NULL, 'M'},
	    {"max-size", required_argument, NULL, 'Z'},
	    {"ring", required_argument, NULL, 'G'},
	    {"task-tracks", no_argument, NULL, 'T'},
	    {"no-blocking", no_argument, NULL, 'B'},
	    {"no-cancel", no_argument, NULL, 'K'},
	    {"no-wakes", no_argument, NULL, 'W'},
	    {"wake-sample", required_argument, NULL, 'P'},
	    {"tasks", no_argument, NULL, 'Q'},
	    {"deep", no_argument, NULL, 'J'},
	    {"block-threshold", required_argument, NULL, 'b'},
	    {"all-crates", no_argument, NULL, 'a'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	/* everything after "--" is the command: getopt must not permute it */
	int c, r, nopt = args__split_command(argc, argv, &a->command);

	a->max_probes = TRACE_DEFAULT_MAX_PROBES;
	a->max_size = TRACE_DEFAULT_MAX_SIZE;
	a->block_threshold = 0.001;
	optind = 1;
	while ((c = getopt_long(nopt, argv, "p:e:w:o:d:vh", opts, NULL)) != -1)
		if ((r = parse_option(c, optarg, a)))
			return r;
	a->patterns = &argv[optind];
	a->nr_patterns = nopt - optind;
	return check_combination(a);
}
