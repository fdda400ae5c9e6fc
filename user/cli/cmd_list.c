// SPDX-License-Identifier: GPL-2.0
/* asyncbpf list BINARY|-p PID [PATTERN...] [--expand up|down|both] [--whitelist FILE] [-o FILE] */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "lib/exitcodes.h"
#include "lib/log.h"
#include "lib/outfile.h"
#include "select/selection.h"

static const char list_usage[] =
    "Usage: asyncbpf list BINARY|-p PID [PATTERN...] [--expand up|down|both]\n"
    "                     [--whitelist FILE] [-o FILE] [--all-crates]\n"
    "\n"
    "List the traceable poll functions of the selected futures. Without patterns or a\n"
    "whitelist the selection is your own crates' futures (docs/selection.md).\n"
    "\n"
    "  PATTERN            glob on Rust paths: 'demo::*', '*::handler', '*Sleep*'\n"
    "  -p, --pid PID      list for a running process's executable\n"
    "  -e, --expand DIR   grow the selection along the await graph: up (who awaits\n"
    "                     them, to the task roots), down (what they await), both\n"
    "  -w, --whitelist F  start from a whitelist file (entries with \"trace\": true)\n"
    "  -o, --output F     write the selection as a whitelist file to edit\n"
    "      --all-crates   default selection is every crate's futures\n"
    "  -v, --verbose      all warnings\n"
    "\n"
    "Examples:\n"
    "  asyncbpf list target/debug/server 'server::handlers::*' --expand down\n"
    "  asyncbpf list target/debug/server -o wl.json && $EDITOR wl.json\n"
    "  asyncbpf list target/debug/server --whitelist wl.json\n";

static int parse_expand(const char *s, enum expand_dir *dir)
{
	if (!strcmp(s, "up"))
		*dir = EXPAND_UP;
	else if (!strcmp(s, "down"))
		*dir = EXPAND_DOWN;
	else if (!strcmp(s, "both"))
		*dir = EXPAND_BOTH;
	else
		return -1;
	return 0;
}

static void print_selection(const struct model *m, const struct selection *s)
{
	uint32_t traceable = 0, inlined = 0, none = 0;

	printf("%-18s %-12s %5s  %-6s %s\n", "ADDRESS", "FILE_OFFSET", "EXITS", "ENTRY",
	       "FUTURE / POLL FUNCTION (SOURCE)");
	for (uint32_t i = 0; i < m->nr_futures; i++) {
		const struct future *f = &m->futures[i];
		char name[512];
		if (!s->futures[i])
			continue;
		future__display_name(f, name, sizeof(name));
		bool any = false;
		for (uint32_t p = 0; p < m->nr_polls; p++) {
			const struct poll_fn *pf = &m->polls[p];
			if (pf->future != (int32_t)i || pf->inlined_only)
				continue;
			printf("0x%-16" PRIx64 " 0x%-10" PRIx64 " %5u  %-6s %s  (%s:%u)\n",
			       pf->addr, pf->file_offset, pf->nr_exits,
			       !pf->entry.valid	    ? "?"
			       : pf->entry.emulated ? "emul"
						    : "step",
			       name, pf->file ? pf->file : "?", pf->line);
			any = true;
			traceable++;
		}
		if (!any) {
			if (f->inlined_only)
				inlined++;
			else
				none++;
		}
	}
	if (inlined) {
		printf("\nSelected but inlined only (no out-of-line poll to probe):\n");
		for (uint32_t i = 0; i < m->nr_futures; i++) {
			char name[512];
			if (!s->futures[i] || !m->futures[i].inlined_only)
				continue;
			future__display_name(&m->futures[i], name, sizeof(name));
			printf("  %s  (%s:%u)\n", name,
			       m->futures[i].file ? m->futures[i].file : "?", m->futures[i].line);
		}
	}
	printf("\n%u traceable poll function%s; %u selected future%s inlined only; %u without any "
	       "poll function\n",
	       traceable, traceable == 1 ? "" : "s", inlined, inlined == 1 ? "" : "s", none);
}

struct list_args {
	struct target_spec spec;
	const char *whitelist, *output;
	enum expand_dir expand;
	bool all_crates;
	char **patterns;
	int nr_patterns;
};

/* The command line; -1 after --help (printed), else an exit status. */
static int parse_list_args(int argc, char **argv, struct list_args *a)
{
	static const struct option opts[] = {
	    {"pid", required_argument, NULL, 'p'},
	    {"expand", required_argument, NULL, 'e'},
	    {"whitelist", required_argument, NULL, 'w'},
	    {"output", required_argument, NULL, 'o'},
	    {"all-crates", no_argument, NULL, 'a'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:e:w:o:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if ((r = parse_pid("list", optarg, &a->spec.pid)))
				return r;
			break;
		case 'e':
			if (parse_expand(optarg, &a->expand)) {
				pr_warn("list: --expand takes up, down or both, not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'w': a->whitelist = optarg; break;
		case 'o': a->output = optarg; break;
		case 'a': a->all_crates = true; break;
		case 'v': log_verbosity = 2; break;
		case 'h': fputs(list_usage, stdout); return -1;
		default: fputs(list_usage, stderr); return EXIT_USAGE;
		}
	}
	if (!a->spec.pid) {
		if (optind >= argc) {
			pr_warn("list: name one binary or one -p PID\n");
			fputs(list_usage, stderr);
			return EXIT_USAGE;
		}
		a->spec.path = argv[optind++];
	}
	a->patterns = &argv[optind];
	a->nr_patterns = argc - optind;
	return EXIT_OK;
}

/* The whitelist, the patterns or the default, expanded. An exit status. */
static int select_futures(const struct list_args *a, const struct model *m, struct selection *s)
{
	if (a->whitelist) {
		char err[512] = "";
		uint32_t unknown = 0;
		int e = whitelist__read(s, m, a->whitelist, &unknown, err, sizeof(err));
		if (e) {
			pr_warn("list: %s\n", err);
			return exit_code_from_errno(e);
		}
		if (unknown)
			pr_warn("list: %u whitelist entr%s match no future of %s: %s\n", unknown,
				unknown == 1 ? "y does" : "ies do", m->path, err);
	}
	for (int i = 0; i < a->nr_patterns; i++) {
		if (!selection__add_pattern(s, m, a->patterns[i])) {
			char what[1024];
			snprintf(what, sizeof(what), "pattern '%s' matches no future of %s",
				 a->patterns[i], m->path);
			return empty_selection_status("list", m, what,
						      " (try 'asyncbpf analyze --all-crates')");
		}
	}
	if (!a->whitelist && !a->nr_patterns)
		selection__add_default(s, m, a->all_crates);
	if (a->expand != EXPAND_NONE)
		selection__expand(s, m, a->expand);
	if (!selection__count(s)) {
		char what[1024];
		snprintf(what, sizeof(what), "nothing selected in %s", m->path);
		return empty_selection_status(
		    "list", m, what,
		    a->all_crates ? NULL
				  : " (no futures in your crates? try --all-crates or a pattern)");
	}
	return EXIT_OK;
}

/* The selection as a whitelist file (-o), written whole or not at all. */
static int write_whitelist(const struct list_args *a, const struct model *m,
			   const struct selection *s)
{
	struct outfile o;
	char err[512];

	if (outfile__open(&o, a->output, err, sizeof(err))) {
		pr_warn("list: %s\n", err);
		return EXIT_OUTPUT;
	}
	if (whitelist__write(m, s, a->all_crates, o.f)) {
		pr_warn("list: writing the whitelist %s failed\n", a->output);
		outfile__abort(&o);
		return EXIT_OUTPUT;
	}
	if (outfile__commit(&o, err, sizeof(err))) {
		pr_warn("list: %s\n", err);
		return EXIT_OUTPUT;
	}
	pr_info("list: wrote whitelist %s: set \"trace\" per future, then pass --whitelist %s\n",
		a->output, a->output);
	return EXIT_OK;
}

int cmd_list(int argc, char **argv)
{
	struct list_args a = {.expand = EXPAND_NONE};
	struct model m;
	struct selection s = {0};
	int r = parse_list_args(argc, argv, &a);

	if (r)
		return r < 0 ? EXIT_OK : r;
	r = load_model("list", &a.spec, &m);
	if (r)
		goto out;
	print_warnings("list", &m);
	if (selection__init(&s, &m)) {
		pr_warn("list: out of memory\n");
		r = EXIT_FAILURE_INTERNAL;
		goto out;
	}
	r = select_futures(&a, &m, &s);
	if (r)
		goto out;
	print_debuginfo("list", &m, NULL);
	print_selection(&m, &s);
	if (a.output)
		r = write_whitelist(&a, &m, &s);
out:
	selection__free(&s);
	model__free(&m);
	return r;
}
