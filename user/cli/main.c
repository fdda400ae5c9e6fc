// SPDX-License-Identifier: GPL-2.0
/* asyncbpf: trace Rust async programs with eBPF. Subcommand dispatch. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "lib/exitcodes.h"
#include "lib/log.h"

#define ASYNCBPF_VERSION "0.1.0"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} commands[] = {
    {"analyze", cmd_analyze, "read a binary's DWARF: futures, polls, await points, await graph"},
    {"list", cmd_list, "list traceable poll functions; select, expand, write/read whitelists"},
    {"check", cmd_check, "probe this kernel for every BPF feature asyncbpf uses (root)"},
    {"trace", cmd_trace, "trace the polls of a running process or a command (root)"},
    {"profile", cmd_profile, "sample a process or a command: async-aware flame graphs (root)"},
    {"stacks", cmd_stacks, "where every task of a running process is parked, await by await"},
    {"top", cmd_top, "a live table of the busiest futures: polls, blocking, wakes (root)"},
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: asyncbpf COMMAND [OPTIONS]\n\nCommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].help);
	fprintf(out,
		"  -p PID   the same as 'trace -p PID': task mode (every task's polls and its\n"
		"           futures' await points), write asyncbpf-PID.pftrace, print a summary\n");
	fprintf(out, "\nRun 'asyncbpf COMMAND --help' for a command's options.\n"
		     "Exit statuses are documented in docs/exit-codes.md.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("asyncbpf %s\n", ASYNCBPF_VERSION);
		return EXIT_OK;
	}
	/* the everyday form: asyncbpf -p PID [trace options] */
	if (!strcmp(argv[1], "-p") || !strcmp(argv[1], "--pid") || !strncmp(argv[1], "--pid=", 6))
		return cmd_trace(argc, argv);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	pr_warn("unknown command '%s'\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
