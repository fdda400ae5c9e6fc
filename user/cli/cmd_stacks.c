// SPDX-License-Identifier: GPL-2.0
/*
 * asyncbpf stacks -p PID: where every task of a live process is parked
 * (docs/stacks.md). Analyze the executable, stop the process (unless --no-pause),
 * find its tasks in its writable memory, decode each one's async stack through the
 * model, let it run again, then print the stacks grouped, biggest group first.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/commands.h"
#include "lib/exitcodes.h"
#include "lib/glob.h"
#include "lib/log.h"
#include "lib/outfile.h"
#include "lib/sysfacts.h"
#include "lib/text.h"
#include "stacks/decode.h"
#include "stacks/snapshot.h"

static const char stacks_usage[] =
    "Usage: asyncbpf stacks -p PID [PATTERN...] [--json F] [--no-pause] [-v]\n"
    "\n"
    "Print the async stack of every task of a running Rust program: where each one is\n"
    "parked, await by await, grouped by identical stacks, biggest group first. Reads\n"
    "the process from outside (ptrace access, no BPF, no probes); never writes to it.\n"
    "\n"
    "  -p, --pid PID     the process\n"
    "  PATTERN           only tasks with a future matching this glob in their stack\n"
    "      --json F      also write the tasks as JSON (docs/stacks.md); '-' = stdout\n"
    "      --no-pause    read the process while it runs (the snapshot may be torn);\n"
    "                    by default every thread is stopped for the read\n"
    "  -v, --verbose     more detail (scan statistics)\n"
    "\n"
    "Tasks are found as boxed `dyn Future`s whose type the binary's DWARF names\n"
    "(hand-written executors); tokio and async-task tasks are not found yet.\n"
    "\n"
    "Exit status: 0 read; 2 usage; 3 no such process; 4 no ptrace access;\n"
    "5 not a usable ELF; 6 no task found (or none matched); 8 the JSON could not be\n"
    "written.\n";

struct stacks_args {
	pid_t pid;
	const char *json;
	bool no_pause, verbose;
	char **patterns;
	int nr_patterns;
};

static int parse_args(int argc, char **argv, struct stacks_args *a)
{
	static const struct option opts[] = {
	    {"pid", required_argument, NULL, 'p'}, {"json", required_argument, NULL, 'J'},
	    {"no-pause", no_argument, NULL, 'N'},  {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},	   {0},
	};
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if ((r = parse_pid("stacks", optarg, &a->pid)))
				return r;
			break;
		case 'J': a->json = optarg; break;
		case 'N': a->no_pause = true; break;
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
	a->patterns = &argv[optind];
	a->nr_patterns = argc - optind;
	return EXIT_OK;
}

struct task {
	struct task_stack stack;
	uint32_t group;
};

struct snapshot_result {
	struct task *tasks;
	uint32_t nr;
	uint64_t read_ns, paused_ns;
	uint64_t not_kept; /* bytes past the copy's budget: read live afterwards */
	struct scan_stats scan;
};

/* What the copy of the target's memory may take (past it: live reads, said so). */
#define IMAGE_BUDGET (1ull << 30)

/*
 * Every task of the process, decoded: the pause (unless no_pause) lasts the copy of
 * its writable memory; the tasks are found and decoded in the copy afterwards.
 */
static int take_snapshot(const struct stacks_args *a, const struct model *m,
			 const struct vtable_index *ix, struct snapshot_result *out)
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
	if (!e && (e = snapshot__roots(m, cands, nr_cands, mem_image__read, &img, &roots, &out->nr,
				       &out->scan)))
		snprintf(err, sizeof(err), "out of memory");
	if (!e) {
		out->tasks = calloc(out->nr ? out->nr : 1, sizeof(*out->tasks));
		if (!out->tasks) {
			e = -ENOMEM;
			snprintf(err, sizeof(err), "out of memory");
		}
		for (uint32_t i = 0; out->tasks && i < out->nr; i++)
			stacks__decode(m, ix, roots[i].future, roots[i].addr, mem_image__read, &img,
				       &out->tasks[i].stack);
	}
	out->read_ns = sysfacts__now_ns() - t0;
	free(roots);
	free(cands);
	mem_image__free(&img);
	if (e) {
		pr_warn("stacks: %s\n", err);
		return e == -ESRCH || e == -ENOENT   ? EXIT_NO_INPUT
		       : e == -EPERM || e == -EACCES ? EXIT_NO_PERMISSION
		       : e == -ENOMEM		     ? EXIT_FAILURE_INTERNAL
						     : EXIT_NO_INPUT;
	}
	return EXIT_OK;
}

static bool same_stack(const struct task_stack *x, const struct task_stack *y)
{
	if (x->nr != y->nr)
		return false;
	for (uint32_t i = 0; i < x->nr; i++)
		if (x->frames[i].future != y->frames[i].future ||
		    x->frames[i].state != y->frames[i].state ||
		    x->frames[i].await_index != y->frames[i].await_index)
			return false;
	return true;
}

static void frame_name(const struct model *m, const struct stack_frame *f, char *buf, size_t len)
{
	if (f->future >= 0 && (uint32_t)f->future < m->nr_futures)
		future__display_name(&m->futures[f->future], buf, len);
	else
		snprintf(buf, len, "dyn Future (unknown type)");
}

static bool wanted(const struct stacks_args *a, const struct model *m, const struct task_stack *s)
{
	char name[512];

	if (!a->nr_patterns)
		return true;
	for (uint32_t i = 0; i < s->nr; i++) {
		frame_name(m, &s->frames[i], name, sizeof(name));
		for (int k = 0; k < a->nr_patterns; k++)
			if (glob__match(a->patterns[k], name))
				return true;
	}
	return false;
}

struct group {
	uint32_t first; /* task index */
	uint32_t count;
};

static int cmp_group(const void *x, const void *y)
{
	const struct group *a = x, *b = y;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return a->first < b->first ? -1 : a->first > b->first;
}

static const char *frame_what(const struct stack_frame *f)
{
	switch (f->state) {
	case FRAME_OPAQUE: return "(a hand-written future: what it waits on is its own)";
	case FRAME_UNRESUMED: return "(not started)";
	case FRAME_RETURNED: return "(returned)";
	case FRAME_PANICKED: return "(panicked)";
	case FRAME_BAD_STATE: return "(memory does not hold a valid state: not decoded)";
	case FRAME_UNREADABLE: return "(its memory cannot be read)";
	case FRAME_UNKNOWN_DYN: return "(a boxed dyn Future of a type the DWARF does not name)";
	}
	return "";
}

static void print_stack(const struct model *m, const struct task_stack *s)
{
	char name[512], next[512];

	for (uint32_t i = 0; i < s->nr; i++) {
		const struct stack_frame *f = &s->frames[i];

		frame_name(m, f, name, sizeof(name));
		if (f->state == FRAME_SUSPENDED) {
			char at[600];

			snprintf(at, sizeof(at), "%s:%u", f->file ? path__short(f->file) : "?",
				 f->line);
			if (i + 1 < s->nr)
				frame_name(m, &s->frames[i + 1], next, sizeof(next));
			printf("  %-40s %-28s awaiting %s%s\n", name, at,
			       i + 1 < s->nr ? next : "(a future the DWARF does not describe)",
			       f->branches ? " (and other futures: join/select)" : "");
		} else {
			printf("  %-40s %s\n", name, frame_what(f));
		}
	}
	if (s->cycle)
		printf("  (cut: a future met again further down: corrupt memory)\n");
	if (s->too_deep)
		printf("  (cut at %d frames)\n", STACKS_MAX_FRAMES);
}

static int print_groups(const struct stacks_args *a, const struct model *m,
			struct snapshot_result *r, uint32_t *shown)
{
	struct group *g = calloc(r->nr ? r->nr : 1, sizeof(*g));
	uint32_t nr = 0;

	*shown = 0;
	if (!g)
		return EXIT_FAILURE_INTERNAL;
	for (uint32_t i = 0; i < r->nr; i++) {
		uint32_t k;

		if (!wanted(a, m, &r->tasks[i].stack)) {
			r->tasks[i].group = UINT32_MAX;
			continue;
		}
		for (k = 0; k < nr; k++)
			if (same_stack(&r->tasks[g[k].first].stack, &r->tasks[i].stack))
				break;
		if (k == nr)
			g[nr++] = (struct group){.first = i};
		g[k].count++;
		(*shown)++;
	}
	qsort(g, nr, sizeof(*g), cmp_group);
	printf("%u task%s in pid %d, read in %.1f ms", *shown, *shown == 1 ? "" : "s", (int)a->pid,
	       (double)r->read_ns / 1e6);
	if (a->no_pause)
		printf(" while it ran (not paused: the snapshot may be torn)\n");
	else
		printf(" (paused %.1f ms)\n", (double)r->paused_ns / 1e6);
	if (r->not_kept)
		printf("(%.0f MiB of its memory past the copy's budget were read after it ran "
		       "again: those stacks may be torn)\n",
		       (double)r->not_kept / (1 << 20));
	for (uint32_t k = 0; k < nr; k++) {
		const struct task_stack *s = &r->tasks[g[k].first].stack;

		printf("\n%u task%s %s\n", g[k].count, g[k].count == 1 ? "" : "s",
		       s->nr && s->frames[s->nr - 1].state != FRAME_SUSPENDED &&
			       s->frames[s->nr - 1].state != FRAME_OPAQUE && s->nr == 1
			   ? "not parked"
			   : "parked at");
		print_stack(m, s);
	}
	free(g);
	return EXIT_OK;
}

static cJSON *task_json(const struct model *m, uint32_t id, const struct task_stack *s)
{
	cJSON *t = cJSON_CreateObject(), *frames;
	char name[512];

	if (!t)
		return NULL;
	cJSON_AddNumberToObject(t, "id", id);
	cJSON_AddStringToObject(t, "runtime", "dyn-boxed");
	cJSON_AddStringToObject(t, "state", s->nr ? frame_state__name(s->frames[0].state) : "?");
	cJSON_AddBoolToObject(t, "cut", s->cycle || s->too_deep);
	frames = cJSON_AddArrayToObject(t, "frames");
	for (uint32_t i = 0; frames && i < s->nr; i++) {
		const struct stack_frame *f = &s->frames[i];
		cJSON *o = cJSON_CreateObject();

		if (!o)
			break;
		frame_name(m, f, name, sizeof(name));
		cJSON_AddStringToObject(o, "future", name);
		if (f->state == FRAME_SUSPENDED && f->file) {
			cJSON_AddStringToObject(o, "file", f->file);
			cJSON_AddNumberToObject(o, "line", f->line);
			cJSON_AddNumberToObject(o, "await_index", f->await_index);
		} else {
			cJSON_AddNullToObject(o, "file");
			cJSON_AddNullToObject(o, "line");
			cJSON_AddNullToObject(o, "await_index");
		}
		cJSON_AddStringToObject(o, "state", frame_state__name(f->state));
		cJSON_AddNumberToObject(o, "addr", (double)f->addr);
		cJSON_AddItemToArray(frames, o);
	}
	return t;
}

static int write_json(const struct stacks_args *a, const struct model *m,
		      const struct snapshot_result *r)
{
	cJSON *root = cJSON_CreateObject(), *tasks, *scan;
	struct outfile o;
	char err[512], *text = NULL;
	int status = EXIT_OUTPUT;

	if (!root)
		return EXIT_FAILURE_INTERNAL;
	cJSON_AddStringToObject(root, "schema", "asyncbpf-stacks/1");
	cJSON_AddNumberToObject(root, "pid", a->pid);
	cJSON_AddBoolToObject(root, "paused", !a->no_pause);
	cJSON_AddNumberToObject(root, "paused_us", (double)(r->paused_ns / 1000));
	cJSON_AddNumberToObject(root, "read_us", (double)(r->read_ns / 1000));
	scan = cJSON_AddObjectToObject(root, "scan");
	if (scan) {
		cJSON_AddNumberToObject(scan, "bytes", (double)r->scan.bytes);
		cJSON_AddNumberToObject(scan, "mappings", r->scan.mappings);
		cJSON_AddNumberToObject(scan, "unreadable_mappings", r->scan.unreadable);
		cJSON_AddNumberToObject(scan, "candidates", r->scan.candidates);
		cJSON_AddNumberToObject(scan, "rejected", r->scan.rejected);
		cJSON_AddNumberToObject(scan, "duplicates", r->scan.duplicates);
		cJSON_AddNumberToObject(scan, "not_copied_bytes", (double)r->not_kept);
	}
	tasks = cJSON_AddArrayToObject(root, "tasks");
	for (uint32_t i = 0; tasks && i < r->nr; i++)
		if (r->tasks[i].group != UINT32_MAX)
			cJSON_AddItemToArray(tasks, task_json(m, i, &r->tasks[i].stack));
	text = cJSON_PrintUnformatted(root);
	if (!text) {
		pr_warn("stacks: out of memory writing the JSON\n");
		status = EXIT_FAILURE_INTERNAL;
	} else if (outfile__open(&o, a->json, err, sizeof(err))) {
		pr_warn("stacks: %s\n", err);
	} else if (fprintf(o.f, "%s\n", text) < 0) {
		pr_warn("stacks: writing %s failed: %s\n", a->json, strerror(errno));
		outfile__abort(&o);
	} else if (outfile__commit(&o, err, sizeof(err))) {
		pr_warn("stacks: %s\n", err);
	} else {
		status = EXIT_OK;
	}
	cJSON_free(text);
	cJSON_Delete(root);
	return status;
}

int cmd_stacks(int argc, char **argv)
{
	struct stacks_args a = {0};
	struct target_spec spec = {0};
	struct vtable_index ix = {0};
	struct snapshot_result r = {0};
	struct model m;
	uint64_t bias = 0;
	uint32_t shown = 0;
	int status = parse_args(argc, argv, &a), e;

	if (status)
		return status < 0 ? EXIT_OK : status;
	spec.pid = a.pid;
	status = load_model("stacks", &spec, &m);
	if (status)
		goto out_model;
	print_warnings("stacks", &m);
	if ((e = snapshot__bias(a.pid, m.pie, &bias))) {
		pr_warn("stacks: cannot find where pid %d's executable is mapped: %s\n", (int)a.pid,
			strerror(-e));
		status = e == -EACCES || e == -EPERM ? EXIT_NO_PERMISSION : EXIT_NO_INPUT;
		goto out_model;
	}
	if (vtable_index__init(&ix, &m, bias)) {
		status = EXIT_FAILURE_INTERNAL;
		goto out;
	}
	if (!ix.nr) {
		pr_warn(
		    "stacks: %s names no `dyn Future` vtable of a future in its DWARF: no task "
		    "can be found this way (tokio and async-task tasks are not supported yet)\n",
		    m.path);
		status = EXIT_NO_MATCH;
		goto out;
	}
	if ((status = take_snapshot(&a, &m, &ix, &r)))
		goto out;
	if ((status = print_groups(&a, &m, &r, &shown)))
		goto out;
	if (a.verbose)
		pr_info("stacks: scanned %u mappings (%" PRIu64 " bytes, %u unreadable): %u vtable "
			"words, %u of them not a live future, %u copies of one found already\n",
			r.scan.mappings, r.scan.bytes, r.scan.unreadable, r.scan.candidates,
			r.scan.rejected, r.scan.duplicates);
	if (a.json && (status = write_json(&a, &m, &r)))
		goto out;
	if (!shown) {
		pr_warn("stacks: no task found in pid %d%s\n", (int)a.pid,
			a.nr_patterns ? " matching the patterns" : "");
		status = EXIT_NO_MATCH;
	}
out:
	free(r.tasks);
	vtable_index__free(&ix);
out_model:
	model__free(&m);
	return status;
}
