/* SPDX-License-Identifier: GPL-2.0 */
/* Subcommands and what they share: resolving the target and analyzing it. */
#ifndef ASYNCBPF_COMMANDS_H
#define ASYNCBPF_COMMANDS_H

#include <stdbool.h>
#include <sys/types.h>

#include "model/model.h"

int cmd_analyze(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_check(int argc, char **argv);
/* asyncbpf trace; also `asyncbpf -p PID ...` (argv[0] is then "asyncbpf"). */
int cmd_trace(int argc, char **argv);
/* asyncbpf profile: sampling, async-aware flame graphs (docs/profile.md). */
int cmd_profile(int argc, char **argv);
int cmd_stacks(int argc, char **argv);
int cmd_top(int argc, char **argv);
struct trace_args;
/* The tracer's run (cmd_trace.c), as trace or as top (a->top). An exit status. */
int trace__run(const struct trace_args *a);

struct target_spec {
	const char *path; /* a binary, or NULL with pid */
	pid_t pid;
};

/* Parse "-p PID" values: returns 0 or prints why and returns EXIT_USAGE. */
int parse_pid(const char *cmd, const char *s, pid_t *pid);

/*
 * Open and analyze the target into m (model__init'ed here). Prints warnings and
 * errors itself. Returns an exit status (EXIT_OK on success).
 */
int load_model(const char *cmd, const struct target_spec *spec, struct model *m);
/* The same, with the exits in the callers and the task polls' exits too (they decode
 * the whole executable: docs/disasm.md, "Exits in the caller"). */
int load_model_caller_exits(const char *cmd, const struct target_spec *spec, struct model *m);

/* Print model warnings to stderr (a summary line beyond the first few). */
void print_warnings(const char *cmd, const struct model *m);

/*
 * Below full DWARF for the program's own crates: say what is missing and what to
 * rebuild with, then what it means for this command (`consequence`, may be NULL).
 * docs/analyzer.md, "Debug info levels".
 */
void print_debuginfo(const char *cmd, const struct model *m, const char *consequence);

/*
 * Nothing selected or matched (`what` says so: "nothing selected in BIN"). When the
 * program's crates have no DWARF or line tables only, the missing debuginfo is why
 * (futures cannot be named): says so, returns EXIT_BAD_INPUT; else prints `what`
 * and `hint` (what to try, may be NULL) and returns EXIT_NO_MATCH.
 */
int empty_selection_status(const char *cmd, const struct model *m, const char *what,
			   const char *hint);

#endif
