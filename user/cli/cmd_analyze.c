// SPDX-License-Identifier: GPL-2.0
/* asyncbpf analyze BINARY|-p PID [--json FILE] [--dot FILE] [--all-crates] */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "analyze/crate.h"
#include "analyze/disasm.h"
#include "lib/exitcodes.h"
#include "export/export.h"
#include "lib/log.h"
#include "lib/outfile.h"
#include "lib/text.h"

#define MODEL_STR_(x) #x
#define MODEL_STR(x)  MODEL_STR_(x)

static const char analyze_usage[] =
    "Usage: asyncbpf analyze BINARY|-p PID [--json FILE] [--dot FILE] [--all-crates] [-q] [-v]\n"
    "\n"
    "Read the target's DWARF and print its async model: every future type, its poll\n"
    "function, its await points with source lines and what each awaits.\n"
    "\n"
    "  -p, --pid PID     analyze the executable of a running process\n"
    "      --json FILE   write the full model as JSON (docs/json-schema.md); '-' = stdout\n"
    "      --dot FILE    write the await graph for Graphviz (dot -Tsvg FILE)\n"
    "      --all-crates  summarize every crate, not only your own (docs/selection.md)\n"
    "  -q, --quiet       no summary on stdout\n"
    "  -v, --verbose     all warnings, debug messages\n"
    "\n"
    "Examples:\n"
    "  asyncbpf analyze target/debug/server\n"
    "  asyncbpf analyze -p $(pidof server) --dot graph.dot && dot -Tsvg graph.dot -o graph.svg\n";

/* How the default exit mode sees this function's exits (docs/tracing.md, "Exit modes"). */
static void print_exit_cover(const struct poll_fn *p)
{
	uint32_t rets = 0, emulated = 0;

	if (p->disasm_error || !p->nr_exits)
		return;
	if (p->leaf) {
		printf(", exits: one return probe (a leaf: no call can unwind through it)");
		return;
	}
	for (uint32_t k = 0; k < p->nr_exits; k++)
		rets += p->exits[k].kind == EXIT_RET;
	for (uint32_t k = 0; k < p->nr_fast_exits; k++)
		emulated += p->fast_exits[k].emulated;
	if (!p->nr_rets_covered)
		printf(", exits: every ret single-stepped (no safe emulated site)");
	else
		printf(", exits: %u emulated site%s for %u of %u ret%s", emulated,
		       emulated == 1 ? "" : "s", p->nr_rets_covered, rets, rets == 1 ? "" : "s");
}

/* The exits in the callers (docs/disasm.md, "Exits in the caller"). */
static void print_caller_exits(const struct poll_fn *p)
{
	const struct caller_exit *x = p->nr_caller_exits ? &p->caller_exits[0] : NULL;

	if (!p->caller_exits_ok) {
		printf("    exits in the callers: not usable: %s\n",
		       p->caller_exits_why ? p->caller_exits_why : "?");
		return;
	}
	printf("    exits in the callers: %u emulated site%s, e.g. 0x%" PRIx64
	       " '%s' after the call "
	       "at 0x%" PRIx64 " in %s\n",
	       p->nr_caller_exits, p->nr_caller_exits == 1 ? "" : "s", x->addr, x->insn,
	       x->call_addr, x->caller ? x->caller : "?");
}

/* One probe pair per task poll: where each runtime's calls of a task's vtable poll
 * return (docs/disasm.md, "Task polls"). */
static void print_task_polls(const struct model *m)
{
	bool header = false;

	for (int k = TASK_RT_TOKIO; k < TASK_RT_MAX; k++) {
		const struct task_poll_summary *t = &m->task_polls[k];
		const struct caller_exit *x = NULL;

		if (!t->dispatchers)
			continue;
		if (!header)
			printf("\nTask polls (where the runtime calls a task's vtable poll):\n");
		header = true;
		for (uint32_t i = 0; i < m->nr_task_poll_exits && !x; i++)
			if (m->task_poll_exits[i].runtime == k && m->task_poll_exits[i].site.usable)
				x = &m->task_poll_exits[i].site;
		printf("  %s: %u call%s, %u with an emulated continuation", task_runtime__name(k),
		       t->calls, t->calls == 1 ? "" : "s", t->usable);
		if (x)
			printf(", e.g. 0x%" PRIx64 " '%s' after the call at 0x%" PRIx64 " in %s",
			       x->addr, x->insn, x->call_addr, x->caller ? x->caller : "?");
		printf("\n");
		if (!t->complete)
			printf("    not every task poll can be seen there: %s\n",
			       t->why ? t->why : "?");
	}
}

static void print_future(const struct model *m, uint32_t i)
{
	const struct future *f = &m->futures[i];
	char name[512];

	future__display_name(f, name, sizeof(name));
	printf("  %s  [%s]  %s:%u\n", name, future_kind__name(f->kind), path__short(f->file),
	       f->line);
	if (f->poll >= 0) {
		const struct poll_fn *p = &m->polls[f->poll];
		printf("    poll 0x%" PRIx64 " (%" PRIu64 " bytes, file offset 0x%" PRIx64
		       "), %u exit%s",
		       p->addr, p->size, p->file_offset, p->nr_exits, p->nr_exits == 1 ? "" : "s");
		if (p->entry.valid)
			printf(", entry probe at +0x%" PRIx64 " '%s' (%s)", p->entry.addr - p->addr,
			       p->entry.insn, p->entry.emulated ? "emulated" : "single-stepped");
		print_exit_cover(p);
		if (p->disasm_error)
			printf(", disassembly failed: %s", p->disasm_error);
		printf("\n");
		if (m->callsites.built)
			print_caller_exits(p);
		if (p->nr_inline_sites_total)
			printf("    also inlined at %u site%s (those polls are not seen by a probe "
			       "on this function)\n",
			       p->nr_inline_sites_total, p->nr_inline_sites_total == 1 ? "" : "s");
	} else if (f->inlined_only) {
		printf("    poll inlined only: no out-of-line copy to probe\n");
	} else if (f->kind == FUTURE_HANDWRITTEN || f->nr_states) {
		printf("    no poll function in this binary\n");
	}
	for (uint32_t s = 0; s < f->nr_states; s++) {
		const struct future_state *st = &f->states[s];
		if (st->kind != STATE_SUSPEND)
			continue;
		bool any = false;
		for (uint32_t e = 0; e < m->nr_edges; e++) {
			const struct await_edge *ed = &m->edges[e];
			if (ed->from != (int32_t)i || ed->await_index != st->suspend_index)
				continue;
			char to[512];
			if (ed->to >= 0)
				future__display_name(&m->futures[ed->to], to, sizeof(to));
			else
				snprintf(to, sizeof(to), "%s (dynamic: resolved at run time)",
					 ed->awaitee_type ? ed->awaitee_type : "?");
			printf("    await %u  %s:%u  -> %s\n", st->suspend_index,
			       path__short(st->file), st->line, to);
			any = true;
		}
		if (!any)
			printf("    await %u  %s:%u  -> %s\n", st->suspend_index,
			       path__short(st->file), st->line,
			       st->awaitee_type ? st->awaitee_type : "?");
	}
}

/* Line tables only: polls inlined into callers known by their bare name, shown where
 * they are (into which function, at which line), since nothing else names them. */
static void print_unnamed(const struct model *m, bool all_crates)
{
	char crate[256];
	uint32_t shown = 0;

	for (uint32_t i = 0; i < m->nr_polls; i++) {
		const struct poll_fn *p = &m->polls[i];
		if (p->future >= 0 || !p->name || p->name[0] != '{' || !p->nr_inline_sites)
			continue;
		rust_path__crate(p->inline_sites[0].caller, crate, sizeof(crate));
		if (!all_crates && crate__classify(crate) != CRATE_USER)
			continue;
		if (!shown++)
			printf("\nInlined, without a name (line tables only name no inlined "
			       "function's path):\n");
		printf("  %s  inlined at %u site%s, e.g. into %s at %s:%u\n", p->name,
		       p->nr_inline_sites_total, p->nr_inline_sites_total == 1 ? "" : "s",
		       p->inline_sites[0].caller ? p->inline_sites[0].caller : "?",
		       path__short(p->inline_sites[0].file), p->inline_sites[0].line);
	}
}

/* The future trees (docs/analyzer.md, "Future trees"): what was laid out, what cut. */
static void print_tree_stats(const struct model *m)
{
	const struct tree_stats *t = &m->tree_stats;
	const struct {
		uint32_t n;
		const char *what;
	} cuts[] = {
	    {t->cut_slots, "slots over " MODEL_STR(MODEL_TREE_SLOTS) " per future"},
	    {t->cut_steps, "slots over " MODEL_STR(MODEL_AWAIT_STEPS) " steps"},
	    {t->cut_conds, "slots under a condition that cannot be written"},
	    {t->cut_bounds, "type trees at the walk's bounds"},
	    {t->no_offset, "await points without an __awaitee offset"},
	};
	const char *sep = "; cut: ";

	printf("  future trees: %u of %u futures laid out, %u of them holding futures "
	       "(%u child slots, %u dyn)",
	       t->futures, m->nr_futures, t->with_slots, t->slots, t->dyn_slots);
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
		if (cuts[i].n) {
			printf("%s%u %s", sep, cuts[i].n, cuts[i].what);
			sep = ", ";
		}
	printf("%s\n", sep[0] == ';' ? ", nothing cut" : "");
}

static void print_summary(const struct model *m, bool all_crates)
{
	uint32_t kinds[4] = {0}, out_of_line = 0, inlined = 0, roots = 0, unresolved = 0;

	for (uint32_t i = 0; i < m->nr_futures; i++) {
		kinds[m->futures[i].kind]++;
		roots += m->futures[i].is_root && m->futures[i].nr_states;
	}
	for (uint32_t i = 0; i < m->nr_polls; i++) {
		if (m->polls[i].inlined_only)
			inlined++;
		else
			out_of_line++;
	}
	for (uint32_t i = 0; i < m->nr_edges; i++)
		unresolved += m->edges[i].to < 0;

	printf("%s: %s%s\n", m->path, m->pie ? "PIE executable" : "executable",
	       m->build_id ? "" : " (no build-id)");
	if (m->build_id)
		printf("  build-id %s\n", m->build_id);
	if (m->has_dwarf)
		printf("  DWARF from %s (%" PRIu64 " bytes of .debug_info, %" PRIu64
		       " compile units, %" PRIu64 " DIEs)\n",
		       m->debuginfo_path ? m->debuginfo_path : m->elf_path, m->debug_info_size,
		       m->nr_cus, m->nr_dies);
	else
		printf("  no DWARF: symbol names only (see warnings)\n");
	printf("  debug info of your crates%s%s%s: %s\n", m->own_crates[0] ? " (" : "",
	       m->own_crates, m->own_crates[0] ? ")" : "", debuginfo_level__name(m->own_debuginfo));
	printf("  %u futures: %u async fn, %u async block, %u async closure, %u hand-written\n",
	       m->nr_futures, kinds[FUTURE_ASYNC_FN], kinds[FUTURE_ASYNC_BLOCK],
	       kinds[FUTURE_ASYNC_CLOSURE], kinds[FUTURE_HANDWRITTEN]);
	printf("  %u poll functions: %u out of line (traceable), %u inlined only\n", m->nr_polls,
	       out_of_line, inlined);
	printf("  %u await edges (%u dynamic), %u task roots\n", m->nr_edges, unresolved, roots);
	if (m->has_dwarf)
		print_tree_stats(m);

	uint32_t shown = 0;
	printf("\n%s:\n", all_crates ? "All futures" : "Your async code");
	for (uint32_t i = 0; i < m->nr_futures; i++) {
		const struct future *f = &m->futures[i];
		if (!all_crates && f->crate_class != CRATE_USER)
			continue;
		if (f->kind == FUTURE_HANDWRITTEN && f->poll < 0 && !f->inlined_only && !all_crates)
			continue;
		print_future(m, i);
		shown++;
	}
	if (!shown)
		printf("  (none found%s)\n",
		       all_crates ? "" : "; --all-crates shows futures of every crate");

	print_unnamed(m, all_crates);
	uint32_t nr_inl = 0;
	for (uint32_t i = 0; i < m->nr_futures; i++)
		if (m->futures[i].inlined_only &&
		    (all_crates || m->futures[i].crate_class == CRATE_USER))
			nr_inl++;
	if (nr_inl) {
		printf("\nInlined only (no out-of-line poll: a probe cannot see these polls):\n");
		for (uint32_t i = 0; i < m->nr_futures; i++) {
			const struct future *f = &m->futures[i];
			if (!f->inlined_only || (!all_crates && f->crate_class != CRATE_USER))
				continue;
			char name[512];
			future__display_name(f, name, sizeof(name));
			uint32_t sites = 0;
			const char *caller = NULL;
			for (uint32_t p = 0; p < m->nr_polls; p++)
				if (m->polls[p].future == (int32_t)i) {
					sites += m->polls[p].nr_inline_sites_total;
					if (!caller && m->polls[p].nr_inline_sites)
						caller = m->polls[p].inline_sites[0].caller;
				}
			printf("  %s  inlined at %u site%s%s%s\n", name, sites,
			       sites == 1 ? "" : "s", caller ? ", e.g. into " : "",
			       caller ? caller : "");
		}
	}
	print_task_polls(m);
}

static int write_output(const char *path, const char *what, const struct model *m,
			int (*writer)(const struct model *, FILE *))
{
	struct outfile o;
	char err[512];

	if (outfile__open(&o, path, err, sizeof(err))) {
		pr_warn("analyze: %s: %s\n", what, err);
		return EXIT_OUTPUT;
	}
	if (writer(m, o.f)) {
		pr_warn("analyze: writing the %s to %s failed\n", what, path);
		outfile__abort(&o);
		return EXIT_OUTPUT;
	}
	if (outfile__commit(&o, err, sizeof(err))) {
		pr_warn("analyze: %s: %s\n", what, err);
		return EXIT_OUTPUT;
	}
	return EXIT_OK;
}

static int dot_all(const struct model *m, FILE *out)
{
	return export_dot__write(m, NULL, out);
}

int cmd_analyze(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"pid", required_argument, NULL, 'p'}, {"json", required_argument, NULL, 'j'},
	    {"dot", required_argument, NULL, 'd'}, {"all-crates", no_argument, NULL, 'a'},
	    {"quiet", no_argument, NULL, 'q'},	   {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},	   {0},
	};
	struct target_spec spec = {0};
	const char *json = NULL, *dot = NULL;
	bool all_crates = false, quiet = false;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:qvh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if ((r = parse_pid("analyze", optarg, &spec.pid)))
				return r;
			break;
		case 'j': json = optarg; break;
		case 'd': dot = optarg; break;
		case 'a': all_crates = true; break;
		case 'q': quiet = true; break;
		case 'v': log_verbosity = 2; break;
		case 'h': fputs(analyze_usage, stdout); return EXIT_OK;
		default: fputs(analyze_usage, stderr); return EXIT_USAGE;
		}
	}
	if (optind < argc)
		spec.path = argv[optind++];
	if (optind < argc || (!spec.path) == (!spec.pid)) {
		pr_warn("analyze: name one binary or one -p PID\n");
		fputs(analyze_usage, stderr);
		return EXIT_USAGE;
	}
	if (json && dot && !strcmp(json, "-") && !strcmp(dot, "-")) {
		pr_warn("analyze: --json and --dot cannot both write to stdout\n");
		return EXIT_USAGE;
	}

	struct model m;
	r = load_model_caller_exits("analyze", &spec, &m);
	if (r) {
		model__free(&m);
		return r;
	}
	print_warnings("analyze", &m);
	print_debuginfo("analyze", &m, NULL);
	bool stdout_used = (json && !strcmp(json, "-")) || (dot && !strcmp(dot, "-"));
	if (!quiet && !stdout_used)
		print_summary(&m, all_crates);
	if (json && (r = write_output(json, "JSON model", &m, export_json__write)))
		goto out;
	if (dot && (r = write_output(dot, "await graph", &m, dot_all)))
		goto out;
out:
	model__free(&m);
	return r;
}
