// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/analyzer.h"
#include "cli/commands.h"
#include "lib/exitcodes.h"
#include "lib/log.h"
#include "analyze/target.h"

int parse_pid(const char *cmd, const char *s, pid_t *pid)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX) {
		pr_warn("%s: invalid PID '%s': expected a positive process ID\n", cmd, s);
		return EXIT_USAGE;
	}
	*pid = (pid_t)v;
	return EXIT_OK;
}

void print_warnings(const char *cmd, const struct model *m)
{
	uint32_t shown = log_verbosity >= 2 ? m->nr_warnings : 5;
	for (uint32_t i = 0; i < m->nr_warnings && i < shown; i++)
		pr_warn("%s: warning: %s\n", cmd, m->warnings[i].text);
	if (m->nr_warnings > shown)
		pr_warn("%s: %u more warnings (-v shows all; --json lists them)\n", cmd,
			m->nr_warnings - shown);
}

static int load(const char *cmd, const struct target_spec *spec, bool caller_exits, struct model *m)
{
	struct target t;
	struct target_opts topts = {.search_debuginfo = true};
	struct analyzer_opts aopts = {.progress = isatty(STDERR_FILENO) && log_verbosity >= 1,
				      .caller_exits = caller_exits};
	char err[1024] = "";
	int r;

	model__init(m);
	if (spec->path)
		r = target__open_path(&t, spec->path, &topts, err, sizeof(err));
	else
		r = target__open_pid(&t, spec->pid, &topts, err, sizeof(err));
	if (r) {
		pr_warn("%s: %s\n", cmd, err);
		target__close(&t);
		return exit_code_from_errno(r);
	}
	/* only worth a progress line when there is a lot to read */
	aopts.progress = aopts.progress && t.debug_info_size > (16u << 20);
	r = analyzer__analyze(&t, &aopts, m, err, sizeof(err));
	target__close(&t);
	if (r) {
		pr_warn("%s: %s\n", cmd, err);
		return exit_code_from_errno(r);
	}
	return EXIT_OK;
}

void print_debuginfo(const char *cmd, const struct model *m, const char *consequence)
{
	if (m->own_debuginfo == DEBUGINFO_FULL || !m->debuginfo_note)
		return;
	pr_warn("%s: warning: %s; %s (docs/analyzer.md, \"Debug info levels\")\n", cmd,
		m->debuginfo_note, m->debuginfo_advice ? m->debuginfo_advice : "");
	if (consequence)
		pr_warn("%s: %s\n", cmd, consequence);
}

int empty_selection_status(const char *cmd, const struct model *m, const char *what,
			   const char *hint)
{
	if (m->own_debuginfo > DEBUGINFO_LINE_TABLES || !m->debuginfo_note) {
		pr_warn("%s: %s%s\n", cmd, what, hint ? hint : "");
		return EXIT_NO_MATCH;
	}
	pr_warn("%s: %s: %s; %s (docs/analyzer.md, \"Debug info levels\")\n", cmd, what,
		m->debuginfo_note, m->debuginfo_advice ? m->debuginfo_advice : "");
	return EXIT_BAD_INPUT;
}

int load_model(const char *cmd, const struct target_spec *spec, struct model *m)
{
	return load(cmd, spec, false, m);
}

int load_model_caller_exits(const char *cmd, const struct target_spec *spec, struct model *m)
{
	return load(cmd, spec, true, m);
}
