// SPDX-License-Identifier: GPL-2.0
/*
 * The views of a stacks snapshot (report.h): grouping, text, JSON, folded.
 */
#include "stacks/report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lib/glob.h"
#include "lib/hashmap.h"
#include "lib/text.h"

static const char *runtime_label(uint8_t rt)
{
	switch (rt) {
	case TASK_RT_TOKIO: return "tokio 1.x";
	case TASK_RT_ASYNC_TASK: return "async-task 4.x";
	default: return "boxed dyn Future";
	}
}

static void frame_name(const struct model *m, const struct stack_frame *f, char *buf, size_t len)
{
	if (f->future >= 0 && (uint32_t)f->future < m->nr_futures)
		future__display_name(&m->futures[f->future], buf, len);
	else
		snprintf(buf, len, "dyn Future (unknown type)");
}

/* The runtime's state in one word; "" for a boxed dyn Future (no header). */
static const char *task_label(const struct task_root *r)
{
	return r->runtime == TASK_RT_DYN ? "" : task_state__label(&r->st);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	return hash__mix64(h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)));
}

static uint64_t signature(const struct stk_task *t)
{
	uint64_t h = mix(t->root.runtime, t->root.st.no_waker);

	h = mix(h, (uintptr_t)task_label(&t->root));
	for (uint32_t i = 0; i < t->stack.nr; i++) {
		const struct stack_frame *f = &t->stack.frames[i];

		h = mix(h, (uint64_t)(uint32_t)f->future);
		h = mix(h, f->state);
		h = mix(h, (uint64_t)(uint32_t)f->await_index);
	}
	return h;
}

static bool same_task_shape(const struct stk_task *x, const struct stk_task *y)
{
	if (x->root.runtime != y->root.runtime || x->stack.nr != y->stack.nr ||
	    x->root.st.no_waker != y->root.st.no_waker ||
	    strcmp(task_label(&x->root), task_label(&y->root)) != 0)
		return false;
	for (uint32_t i = 0; i < x->stack.nr; i++)
		if (x->stack.frames[i].future != y->stack.frames[i].future ||
		    x->stack.frames[i].state != y->stack.frames[i].state ||
		    x->stack.frames[i].await_index != y->stack.frames[i].await_index)
			return false;
	return true;
}

static bool wanted(const struct model *m, const struct task_stack *s, char **patterns,
		   int nr_patterns)
{
	char name[512];

	if (!nr_patterns)
		return true;
	for (uint32_t i = 0; i < s->nr; i++) {
		frame_name(m, &s->frames[i], name, sizeof(name));
		for (int k = 0; k < nr_patterns; k++)
			if (glob__match(patterns[k], name))
				return true;
	}
	return false;
}

static int cmp_group(const void *x, const void *y)
{
	const struct stk_group *a = x, *b = y;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return a->first < b->first ? -1 : a->first > b->first;
}

/* Boxed dyn Futures that are frames or tree nodes (below the root) of another task:
 * not tasks. */
int stk_snapshot__find_inner(struct stk_snapshot *s)
{
	struct u64_map frames;
	int e = 0;

	u64_map__init(&frames);
	for (uint32_t i = 0; i < s->nr && !e; i++) {
		const struct stk_task *t = &s->tasks[i];

		for (uint32_t k = 1; k < t->stack.nr && !e; k++)
			if (t->stack.frames[k].addr)
				e = u64_map__set(&frames, t->stack.frames[k].addr, 1);
		for (uint32_t k = 1; k < t->nr_tree && !e; k++)
			if (t->tree[k].addr)
				e = u64_map__set(&frames, t->tree[k].addr, 1);
	}
	if (e) {
		u64_map__free(&frames);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < s->nr; i++) {
		struct stk_task *t = &s->tasks[i];

		if (t->root.runtime == TASK_RT_DYN && u64_map__get(&frames, t->root.addr, NULL)) {
			t->inner = true;
			s->inner++;
		}
	}
	u64_map__free(&frames);
	return 0;
}

int stk_snapshot__group(struct stk_snapshot *s, const struct model *m, char **patterns,
			int nr_patterns)
{
	struct u64_map by_sig;
	int e = 0;

	s->groups = calloc(s->nr ? s->nr : 1, sizeof(*s->groups));
	if (!s->groups)
		return -ENOMEM;
	for (uint32_t d = 0; d < s->res.nr_deadlocks; d++)
		for (uint32_t k = 0; k < s->res.deadlocks[d].nr; k++)
			s->tasks[s->res.cycle_task[s->res.deadlocks[d].first + k]].deadlock = d + 1;
	for (uint32_t i = 0; i < s->res.nr_behind; i++)
		s->tasks[s->res.behind[i].task].behind = s->res.behind[i].deadlock + 1;
	for (uint32_t i = 0; i < s->nr; i++) {
		s->tasks[i].shown =
		    !s->tasks[i].inner && wanted(m, &s->tasks[i].stack, patterns, nr_patterns);
		s->tasks[i].signature = signature(&s->tasks[i]);
		s->tasks[i].group = UINT32_MAX;
	}
	u64_map__init(&by_sig);
	for (uint32_t i = 0; i < s->nr; i++) {
		struct stk_task *t = &s->tasks[i];
		uint64_t g;

		if (!t->shown)
			continue;
		s->shown++;
		s->per_runtime[t->root.runtime < TASK_RT_MAX ? t->root.runtime : 0]++;
		/* a task in a deadlock is a group of its own: what it waits for and who
		 * holds it are its own */
		if (t->deadlock) {
			g = s->nr_groups++;
			s->groups[g] = (struct stk_group){.first = i};
		} else if (!u64_map__get(&by_sig, t->signature, &g) ||
			   !same_task_shape(&s->tasks[s->groups[g].first], t) ||
			   s->tasks[s->groups[g].first].behind != t->behind) {
			/* new (or a hash collision, or the same stack stuck behind a deadlock
			 * or not: a group of its own, found linearly) */
			for (g = 0; g < s->nr_groups; g++)
				if (!s->tasks[s->groups[g].first].deadlock &&
				    s->tasks[s->groups[g].first].behind == t->behind &&
				    same_task_shape(&s->tasks[s->groups[g].first], t))
					break;
			if (g == s->nr_groups) {
				s->groups[s->nr_groups++] = (struct stk_group){.first = i};
				if (u64_map__set(&by_sig, t->signature, g)) {
					e = -ENOMEM;
					break;
				}
			}
		}
		s->groups[g].count++;
		t->group = (uint32_t)g; /* before the sort: remapped below */
	}
	u64_map__free(&by_sig);
	if (e)
		return e;
	qsort(s->groups, s->nr_groups, sizeof(*s->groups), cmp_group);
	uint32_t *remap = calloc(s->nr_groups ? s->nr_groups : 1, sizeof(*remap));
	if (!remap)
		return -ENOMEM;
	for (uint32_t g = 0; g < s->nr_groups; g++)
		remap[s->tasks[s->groups[g].first].group] = g;
	for (uint32_t i = 0; i < s->nr; i++)
		if (s->tasks[i].shown)
			s->tasks[i].group = remap[s->tasks[i].group];
	free(remap);
	return 0;
}

/* The task's identity across snapshots: its header, or its boxed future. */
static uint64_t task_key(const struct stk_task *t)
{
	return t->root.header ? t->root.header : t->root.addr;
}

void stk_snapshot__compare(struct stk_snapshot *s, const struct stk_snapshot *prev,
			   double elapsed_s)
{
	struct u64_map before;

	s->watching = true;
	u64_map__init(&before);
	for (uint32_t i = 0; prev && i < prev->nr; i++)
		if (!prev->tasks[i].inner && u64_map__set(&before, task_key(&prev->tasks[i]), i))
			break; /* out of memory: those tasks look new */
	for (uint32_t i = 0; i < s->nr; i++) {
		struct stk_task *t = &s->tasks[i];
		uint64_t p;

		if (t->inner || !prev || !u64_map__get(&before, task_key(t), &p) ||
		    !same_task_shape(&prev->tasks[p], t))
			continue;
		t->unchanged_s = prev->tasks[p].unchanged_s + elapsed_s;
		if (!t->shown)
			continue; /* its time still counts for a deadlock it is in */
		struct stk_group *g = &s->groups[t->group];
		if (!g->stuck || t->unchanged_s < g->stuck_s)
			g->stuck_s = t->unchanged_s;
		g->stuck++;
	}
	u64_map__free(&before);
}

void stk_snapshot__free(struct stk_snapshot *s)
{
	for (uint32_t i = 0; s->tasks && i < s->nr; i++)
		free(s->tasks[i].tree);
	free(s->tasks);
	free(s->groups);
	resources__free(&s->res);
	s->tasks = NULL;
	s->groups = NULL;
	s->nr = s->nr_groups = 0;
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
	case FRAME_TYPE_ONLY: return "(no DWARF types: the task's type only, not where it waits)";
	}
	return "";
}

static void print_stack(FILE *out, const struct model *m, const struct task_stack *s)
{
	char name[512], next[512];
	uint32_t i = stacks__first_shown(m, s);

	for (; i < s->nr; i++) {
		const struct stack_frame *f = &s->frames[i];

		frame_name(m, f, name, sizeof(name));
		if (f->state == FRAME_SUSPENDED) {
			char at[600];
			bool leaf = i + 2 == s->nr && s->frames[i + 1].state == FRAME_OPAQUE;

			snprintf(at, sizeof(at), "%s:%u", f->file ? path__short(f->file) : "?",
				 f->line);
			if (i + 1 < s->nr)
				frame_name(m, &s->frames[i + 1], next, sizeof(next));
			fprintf(out, "  %-40s %-28s awaiting %s%s\n", name, at,
				i + 1 < s->nr ? next : "(a future the DWARF does not describe)",
				f->branches ? " (and other futures: join/select)" : "");
			if (leaf) /* a runtime's leaf future: said on this line */
				break;
		} else {
			fprintf(out, "  %-40s %s\n", name, frame_what(f));
		}
	}
	if (s->cycle)
		fprintf(out, "  (cut: a future met again further down: corrupt memory)\n");
	if (s->too_deep)
		fprintf(out, "  (cut at %d frames)\n", STACKS_MAX_FRAMES);
}

/* --tree: a node's discriminant, when its layout has one and it was read */
static bool node_discr(const struct model *m, const struct tree_walk_node *n, uint64_t *v)
{
	if (n->future < 0 || (uint32_t)n->future >= m->nr_trees || !m->trees[n->future].has_discr ||
	    (n->flags & TREE_NODE_UNREADABLE))
		return false;
	*v = n->discr;
	return true;
}

static const char *node_what(uint8_t flags)
{
	return flags & TREE_NODE_UNKNOWN_DYN  ? " (a dyn Future of a type the DWARF does not name)"
	       : flags & TREE_NODE_NO_LAYOUT  ? " (no layout: what it holds is not known)"
	       : flags & TREE_NODE_BAD_STATE  ? " (memory does not hold a valid state)"
	       : flags & TREE_NODE_UNREADABLE ? " (its memory cannot be read)"
	       : flags & TREE_NODE_DEPTH      ? " (cut: too deep)"
					      : "";
}

/* One node of a tree and, below it, its children (bounded: STACKS_TREE_DEPTH). */
static void print_subtree(FILE *out, const struct model *m, const struct stk_task *t, uint32_t i,
			  int depth)
{
	const struct tree_walk_node *n = &t->tree[i];
	const char *member = n->slot >= 0 && (uint32_t)n->slot < m->nr_tree_slots
				 ? m->tree_slots[n->slot].member
				 : "";
	char name[512], shown[128];
	uint64_t discr;

	if (n->future >= 0 && (uint32_t)n->future < m->nr_futures)
		future__display_name(&m->futures[n->future], name, sizeof(name));
	else
		snprintf(name, sizeof(name), "dyn Future");
	rust__abbreviate(name, shown, sizeof(shown), 100);
	fprintf(out, "    %*s%s%s%s", 2 * depth, "", member, *member ? ": " : "", shown);
	if (node_discr(m, n, &discr) && n->future >= 0 && m->futures[n->future].has_state)
		for (uint32_t k = 0; k < m->futures[n->future].nr_states; k++) {
			const struct future_state *st = &m->futures[n->future].states[k];

			if (st->discr != discr)
				continue;
			if (st->kind == STATE_SUSPEND)
				fprintf(out, "  %s:%u", path__short(st->file), st->line);
			else
				fprintf(out, " (%s)", state_kind__name(st->kind));
		}
	fprintf(out, "%s\n", node_what(n->flags));
	for (uint32_t j = i + 1; j < t->nr_tree && depth < STACKS_TREE_DEPTH; j++)
		if (t->tree[j].parent == (int32_t)i)
			print_subtree(out, m, t, j, depth + 1);
}

static void print_tree(FILE *out, const struct model *m, const struct stk_task *t, uint32_t count)
{
	const struct tree_walk_stats *st = &t->tree_stats;

	fprintf(out, "  future tree%s:\n", count > 1 ? " (of the first of them)" : "");
	print_subtree(out, m, t, 0, 0);
	if (st->cut_nodes || st->cut_depth)
		fprintf(out, "    (cut: %u futures past the %u kept, %u at the depth bound)\n",
			st->cut_nodes, t->nr_tree, st->cut_depth);
}

static void print_thousands(FILE *out, uint64_t v)
{
	if (v >= 1000) {
		print_thousands(out, v / 1000);
		fprintf(out, ",%03" PRIu64, v % 1000);
	} else {
		fprintf(out, "%" PRIu64, v);
	}
}

static void print_header(FILE *out, const struct stk_snapshot *s)
{
	const char *sep = "";

	print_thousands(out, s->shown);
	fprintf(out, " task%s in pid %d (", s->shown == 1 ? "" : "s", (int)s->pid);
	for (int k = 0; k < TASK_RT_MAX; k++)
		if (s->per_runtime[k]) {
			fprintf(out, "%s%s: %u", sep, runtime_label((uint8_t)k), s->per_runtime[k]);
			if (k == TASK_RT_TOKIO && s->tokio_workers)
				fprintf(out, " on %u worker%s", s->tokio_workers,
					s->tokio_workers == 1 ? "" : "s");
			sep = ", ";
		}
	fprintf(out, "%s), read in %.1f ms", *sep ? "" : "none found", (double)s->read_ns / 1e6);
	if (!s->paused)
		fprintf(out, " while it ran (not paused: the snapshot may be torn)\n");
	else
		fprintf(out, " (paused %.1f ms)\n", (double)s->paused_ns / 1e6);
	if (s->not_kept)
		fprintf(out,
			"(%.0f MiB of its memory past the copy's budget were read after it ran "
			"again: those stacks may be torn)\n",
			(double)s->not_kept / (1 << 20));
}

void stk_report__text(FILE *out, const struct stk_snapshot *s, const struct model *m, bool color)
{
	const char *bold = color ? "\033[1m" : "", *red = color ? "\033[1;31m" : "",
		   *off = color ? "\033[0m" : "";

	print_header(out, s);
	for (uint32_t g = 0; g < s->nr_groups; g++) {
		const struct stk_task *t = &s->tasks[s->groups[g].first];
		const char *label = task_label(&t->root);
		bool parked = !*label || strcmp(label, "parked") == 0;

		fputs("\n", out);
		fputs(bold, out);
		print_thousands(out, s->groups[g].count);
		fprintf(out, " task%s %s", s->groups[g].count == 1 ? "" : "s",
			parked ? "parked at" : label);
		fputs(off, out);
		if (!parked)
			fprintf(out, "%s", t->stack.nr ? ", at" : "");
		if (t->root.st.no_waker)
			fprintf(out, "   %sNO WAKER%s (nothing can wake %s)", red, off,
				s->groups[g].count == 1 ? "it" : "them");
		if (t->deadlock)
			fprintf(out, "   %s%sDEADLOCK%s (task %u, below)", red,
				s->res.deadlocks[t->deadlock - 1].proven ? "" : "POSSIBLE ", off,
				s->groups[g].first);
		if (t->behind)
			fprintf(out,
				"   %sbehind the %sDEADLOCK of task %u%s (stuck while it stands)",
				red, s->res.deadlocks[t->behind - 1].proven ? "" : "POSSIBLE ",
				s->res.cycle_task[s->res.deadlocks[t->behind - 1].first], off);
		if (s->watching && s->groups[g].stuck)
			fprintf(out, "   %u unchanged for >= %.0f s", s->groups[g].stuck,
				s->groups[g].stuck_s);
		fputs("\n", out);
		print_stack(out, m, &t->stack);
		if (t->nr_tree)
			print_tree(out, m, t, s->groups[g].count);
	}
	resources__text(out, s, m, color);
}

/* --tree: a task's tree as JSON: its nodes breadth first, with their parents */
static void tree_json(cJSON *o, const struct model *m, const struct stk_task *t)
{
	cJSON *tree = cJSON_AddObjectToObject(o, "tree"), *nodes;
	char name[512];
	uint64_t discr;

	if (!tree || !(nodes = cJSON_AddArrayToObject(tree, "nodes")))
		return;
	for (uint32_t i = 0; i < t->nr_tree; i++) {
		const struct tree_walk_node *n = &t->tree[i];
		cJSON *no = cJSON_CreateObject(), *flags;

		if (!no)
			break;
		if (n->future >= 0 && (uint32_t)n->future < m->nr_futures)
			future__display_name(&m->futures[n->future], name, sizeof(name));
		cJSON_AddItemToObject(
		    no, "future", n->future >= 0 ? cJSON_CreateString(name) : cJSON_CreateNull());
		cJSON_AddItemToObject(no, "parent",
				      n->parent >= 0 ? cJSON_CreateNumber(n->parent)
						     : cJSON_CreateNull());
		cJSON_AddItemToObject(no, "member",
				      n->slot >= 0 && (uint32_t)n->slot < m->nr_tree_slots
					  ? cJSON_CreateString(m->tree_slots[n->slot].member)
					  : cJSON_CreateNull());
		cJSON_AddNumberToObject(no, "addr", (double)n->addr);
		cJSON_AddItemToObject(no, "discr",
				      node_discr(m, n, &discr) ? cJSON_CreateNumber((double)discr)
							       : cJSON_CreateNull());
		if ((flags = cJSON_AddArrayToObject(no, "flags"))) {
			static const char *const names[] = {"no_layout", "bad_state", "unreadable",
							    "unknown_dyn", "depth"};
			_Static_assert(TREE_NODE_NO_LAYOUT == 1 && TREE_NODE_DEPTH == 1 << 4,
				       "names[] follows enum tree_node_flag");

			for (unsigned k = 0; k < sizeof(names) / sizeof(names[0]); k++)
				if (n->flags & (1u << k))
					cJSON_AddItemToArray(flags, cJSON_CreateString(names[k]));
		}
		cJSON_AddItemToArray(nodes, no);
	}
	cJSON_AddNumberToObject(tree, "cut_nodes", t->tree_stats.cut_nodes);
	cJSON_AddNumberToObject(tree, "cut_depth", t->tree_stats.cut_depth);
	cJSON_AddNumberToObject(tree, "repeats", t->tree_stats.repeats);
	cJSON_AddNumberToObject(tree, "unreadable", t->tree_stats.unreadable);
}

static cJSON *task_json(const struct model *m, const struct stk_snapshot *snap, uint32_t id,
			const struct stk_task *t)
{
	cJSON *o = cJSON_CreateObject(), *frames, *rs;
	const struct task_stack *s = &t->stack;
	char name[512];

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "id", id);
	cJSON_AddStringToObject(o, "runtime", task_runtime__name(t->root.runtime));
	cJSON_AddStringToObject(o, "state",
				t->root.runtime != TASK_RT_DYN ? task_label(&t->root)
				: s->nr ? frame_state__name(s->frames[0].state)
					: "?");
	cJSON_AddBoolToObject(o, "no_waker", t->root.st.no_waker);
	if (t->root.runtime != TASK_RT_DYN && (rs = cJSON_AddObjectToObject(o, "runtime_state"))) {
		cJSON_AddNumberToObject(rs, "header", (double)t->root.header);
		cJSON_AddNumberToObject(rs, "word", (double)t->root.state);
		cJSON_AddBoolToObject(rs, "running", t->root.st.running);
		cJSON_AddBoolToObject(rs, "scheduled", t->root.st.scheduled);
		cJSON_AddBoolToObject(rs, "complete", t->root.st.complete);
		cJSON_AddBoolToObject(rs, "cancelled", t->root.st.closed);
		cJSON_AddBoolToObject(rs, "handle", t->root.st.handle);
		cJSON_AddNumberToObject(rs, "refs", (double)t->root.st.refs);
	}
	cJSON_AddBoolToObject(o, "cut", s->cycle || s->too_deep);
	cJSON_AddNumberToObject(o, "unchanged_s", t->unchanged_s);
	frames = cJSON_AddArrayToObject(o, "frames");
	for (uint32_t i = 0; frames && i < s->nr; i++) {
		const struct stack_frame *f = &s->frames[i];
		cJSON *fo = cJSON_CreateObject();

		if (!fo)
			break;
		frame_name(m, f, name, sizeof(name));
		cJSON_AddStringToObject(fo, "future", name);
		if (f->state == FRAME_SUSPENDED && f->file) {
			cJSON_AddStringToObject(fo, "file", f->file);
			cJSON_AddNumberToObject(fo, "line", f->line);
			cJSON_AddNumberToObject(fo, "await_index", f->await_index);
		} else {
			cJSON_AddNullToObject(fo, "file");
			cJSON_AddNullToObject(fo, "line");
			cJSON_AddNullToObject(fo, "await_index");
		}
		cJSON_AddStringToObject(fo, "state", frame_state__name(f->state));
		cJSON_AddStringToObject(fo, "crate_class",
					f->future >= 0 && (uint32_t)f->future < m->nr_futures
					    ? crate_class__name(m->futures[f->future].crate_class)
					    : "unknown");
		cJSON_AddNumberToObject(fo, "addr", (double)f->addr);
		cJSON_AddItemToArray(frames, fo);
	}
	if (t->tree)
		tree_json(o, m, t);
	resources__task_json(o, snap, m, id);
	return o;
}

char *stk_report__json(const struct stk_snapshot *s, const struct model *m)
{
	cJSON *root = cJSON_CreateObject(), *tasks, *scan, *rt;
	char *text;

	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "schema", "asyncbpf-stacks/1");
	cJSON_AddNumberToObject(root, "pid", s->pid);
	cJSON_AddBoolToObject(root, "paused", s->paused);
	cJSON_AddNumberToObject(root, "paused_us", (double)(s->paused_ns / 1000));
	cJSON_AddNumberToObject(root, "read_us", (double)(s->read_ns / 1000));
	cJSON_AddNumberToObject(root, "tokio_workers", s->tokio_workers);
	if ((rt = cJSON_AddObjectToObject(root, "runtimes")))
		for (int k = 0; k < TASK_RT_MAX; k++)
			cJSON_AddNumberToObject(rt, task_runtime__name(k), s->per_runtime[k]);
	if ((scan = cJSON_AddObjectToObject(root, "scan"))) {
		cJSON_AddNumberToObject(scan, "bytes", (double)s->scan.bytes);
		cJSON_AddNumberToObject(scan, "mappings", s->scan.mappings);
		cJSON_AddNumberToObject(scan, "unreadable_mappings", s->scan.unreadable);
		cJSON_AddNumberToObject(scan, "candidates", s->scan.candidates);
		cJSON_AddNumberToObject(scan, "rejected", s->scan.rejected);
		cJSON_AddNumberToObject(scan, "duplicates", s->scan.duplicates);
		cJSON_AddNumberToObject(scan, "bad_layout", s->scan.bad_layout);
		cJSON_AddNumberToObject(scan, "on_stack_headers", s->scan.on_stack);
		cJSON_AddNumberToObject(scan, "inner_futures", s->inner);
		cJSON_AddNumberToObject(scan, "not_copied_bytes", (double)s->not_kept);
	}
	tasks = cJSON_AddArrayToObject(root, "tasks");
	for (uint32_t i = 0; tasks && i < s->nr; i++)
		if (s->tasks[i].shown)
			cJSON_AddItemToArray(tasks, task_json(m, s, i, &s->tasks[i]));
	resources__json(root, s, m);
	text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return text;
}

/* A frame as a folded-stack name: no ';' (the separator), no newline. */
static void folded_frame(FILE *out, const struct model *m, const struct stack_frame *f)
{
	char name[512];

	frame_name(m, f, name, sizeof(name));
	for (char *p = name; *p; p++)
		if (*p == ';' || *p == '\n')
			*p = ' ';
	fputs(name, out);
	if (f->state == FRAME_SUSPENDED && f->file)
		fprintf(out, " (%s:%u)", path__short(f->file), f->line);
}

int stk_report__folded(FILE *out, const struct stk_snapshot *s, const struct model *m)
{
	for (uint32_t g = 0; g < s->nr_groups; g++) {
		const struct stk_task *t = &s->tasks[s->groups[g].first];
		const char *label = task_label(&t->root);

		fputs(runtime_label(t->root.runtime), out);
		for (uint32_t i = stacks__first_shown(m, &t->stack); i < t->stack.nr; i++) {
			fputc(';', out);
			folded_frame(out, m, &t->stack.frames[i]);
		}
		if (*label && strcmp(label, "parked") != 0)
			fprintf(out, ";[%s]", label);
		if (t->root.st.no_waker)
			fputs(";[no waker]", out);
		if (t->deadlock)
			resources__folded(out, s, m, s->groups[g].first);
		fprintf(out, " %u\n", s->groups[g].count);
	}
	return ferror(out) ? -EIO : 0;
}
