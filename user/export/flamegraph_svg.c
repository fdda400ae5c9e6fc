// SPDX-License-Identifier: GPL-2.0
/*
 * SVG flame graph, written here rather than by flamegraph.pl or inferno: no Perl or
 * Rust tool at run time, and the graph knows our frames' kinds and origins.
 *
 * Stacks are merged by prefix: frames with the same name at the same depth under
 * the same (merged) parent are one box, as wide as the sum of their weights. On-CPU
 * and off-CPU stacks are never mixed: each present kind is a graph of its own (root
 * at the bottom, children sorted by name), on-CPU first. A box narrower than
 * MIN_WIDTH_PX is left out with everything above it and counted in the subtitle, so
 * the output is bounded by the drawing's resolution, not by the profile. Text comes
 * from traced binaries: xml__write_text() escapes it, names are cut at
 * NAME_MAX_BYTES. Layout and colors: docs/profile-formats.md.
 */
#include "export/profile_export.h"
#include "lib/text.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "export/flamegraph_svg_script.h"
#include "lib/hashmap.h"

#define WIDTH	       1200
#define PAD	       10
#define FRAME_WIDTH    (WIDTH - 2 * PAD)
#define FRAME_HEIGHT   16
#define HEADER_HEIGHT  96 /* title, subtitle, legend */
#define GRAPH_HEADING  24 /* the graph's heading line */
#define GRAPH_GAP      16
#define CHAR_WIDTH     7.08 /* 12px monospace: as the script's CHAR_W */
#define MIN_WIDTH_PX   0.3
#define NAME_MAX_BYTES 2000
#define FILE_MAX_BYTES 512
#define NO_NODE	       UINT32_MAX

struct node {
	const struct pframe *frame; /* the first frame merged into this box */
	uint64_t weight, samples;
	uint32_t parent, first_child, next_sibling, hash_next;
	uint32_t depth; /* root frames: 0; the virtual root above them: UINT32_MAX */
};

struct tree {
	struct node *nodes; /* [0] is the virtual root: the graph's total */
	uint32_t nnodes, cap;
	uint32_t max_depth;
	struct u64_map by_hash; /* hash(parent, name) -> first node id */
	bool offcpu;
};

struct flamegraph {
	FILE *out;
	const struct profile_data *p;
	struct tree trees[2]; /* on-CPU, off-CPU */
	uint64_t omitted;     /* boxes too narrow to draw */
	uint32_t *order;      /* scratch: node ids */
	uint32_t *stack;      /* scratch: the drawing's DFS stack */
	uint64_t *offsets;    /* scratch: by node id, weight left of the box */
};

static uint64_t hash_name(uint32_t parent, const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ parent;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h == UINT64_MAX ? 0 : h;
}

static int tree_add_node(struct tree *t, uint32_t parent, const struct pframe *f)
{
	if (t->nnodes == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 256;
		struct node *n = cap <= t->cap ? NULL : realloc(t->nodes, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->nodes = n;
		t->cap = cap;
	}
	uint32_t depth = parent ? t->nodes[parent].depth + 1 : 0;
	t->nodes[t->nnodes] = (struct node){.frame = f,
					    .parent = parent,
					    .depth = depth,
					    .first_child = NO_NODE,
					    .next_sibling = NO_NODE,
					    .hash_next = NO_NODE};
	if (parent && depth > t->max_depth)
		t->max_depth = depth;
	t->nnodes++;
	return 0;
}

/* The child of parent named like f, created when missing. NO_NODE on ENOMEM. */
static uint32_t tree_child(struct tree *t, uint32_t parent, const struct pframe *f)
{
	const char *name = f->name ? f->name : "";
	uint64_t h = hash_name(parent, name), first;
	uint32_t id;

	if (u64_map__get(&t->by_hash, h, &first)) {
		for (id = (uint32_t)first; id != NO_NODE; id = t->nodes[id].hash_next)
			if (t->nodes[id].parent == parent &&
			    !strcmp(t->nodes[id].frame->name ? t->nodes[id].frame->name : "", name))
				return id;
	} else {
		first = NO_NODE;
	}
	if (t->nnodes >= NO_NODE - 1 || tree_add_node(t, parent, f))
		return NO_NODE;
	id = t->nnodes - 1;
	t->nodes[id].hash_next = (uint32_t)first;
	if (u64_map__set(&t->by_hash, h, id))
		return NO_NODE;
	return id;
}

static int tree_build(struct tree *t, const struct profile_data *p, bool offcpu)
{
	t->offcpu = offcpu;
	u64_map__init(&t->by_hash);
	if (tree_add_node(t, 0, NULL))
		return -ENOMEM;
	t->nodes[0].depth = UINT32_MAX;
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct pstack *s = &p->stacks[i];
		uint32_t cur = 0;

		if (s->offcpu != offcpu)
			continue;
		t->nodes[0].weight += s->weight;
		t->nodes[0].samples += s->samples;
		for (uint32_t d = 0; d < s->nframes; d++) {
			cur = tree_child(t, cur, s->frames[d]);
			if (cur == NO_NODE)
				return -ENOMEM;
			t->nodes[cur].weight += s->weight;
			t->nodes[cur].samples += s->samples;
		}
	}
	return 0;
}

static const struct tree *sort_tree; /* qsort has no context argument in C11 */

static int compare_siblings(const void *a, const void *b)
{
	const struct node *x = &sort_tree->nodes[*(const uint32_t *)a];
	const struct node *y = &sort_tree->nodes[*(const uint32_t *)b];

	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	return strcmp(x->frame->name ? x->frame->name : "", y->frame->name ? y->frame->name : "");
}

/* Links each node's children, sorted by name (the drawing's left-to-right order). */
static void tree_link_sorted(struct tree *t, uint32_t *order)
{
	for (uint32_t i = 1; i < t->nnodes; i++)
		order[i - 1] = i;
	sort_tree = t;
	qsort(order, t->nnodes - 1, sizeof(*order), compare_siblings);
	sort_tree = NULL;
	for (uint32_t i = t->nnodes - 1; i-- > 0;) { /* prepend in reverse: sorted lists */
		struct node *n = &t->nodes[order[i]];
		n->next_sibling = t->nodes[n->parent].first_child;
		t->nodes[n->parent].first_child = order[i];
	}
}

/* ---- colors: hue by origin, futures saturated and darker, synthetic frames grey ---- */

/* h in degrees (0..720), s and l in 0..1: CSS Color 3's HSL (section 4.2.4) */
static void hsl_to_rgb(double h, double s, double l, int rgb[3])
{
	double hp = (h >= 360 ? h - 360 : h) / 60, hp_mod2 = hp - 2 * (int)(hp / 2);
	double c = (1 - fabs(2 * l - 1)) * s, x = c * (1 - fabs(hp_mod2 - 1)), m = l - c / 2;
	double r = 0, g = 0, b = 0;

	switch ((int)hp) {
	case 0: r = c, g = x; break;
	case 1: r = x, g = c; break;
	case 2: g = c, b = x; break;
	case 3: g = x, b = c; break;
	case 4: r = x, b = c; break;
	default: r = c, b = x; break;
	}
	rgb[0] = (int)((r + m) * 255 + 0.5);
	rgb[1] = (int)((g + m) * 255 + 0.5);
	rgb[2] = (int)((b + m) * 255 + 0.5);
}

/* vary: 0..1, a per-name shade so neighbours stand apart (0 for the legend) */
static void frame_color(uint8_t kind, uint8_t origin, double vary, int rgb[3])
{
	static const double hue[] = {[PORIGIN_USER] = 18,
				     [PORIGIN_RUNTIME] = 205,
				     [PORIGIN_STD] = 95,
				     [PORIGIN_OTHER] = 275};

	if (kind == PFRAME_RUNTIME || kind == PFRAME_SPECIAL) {
		int v = 185 + (int)(vary * 25);
		rgb[0] = rgb[1] = rgb[2] = v;
		return;
	}
	double h = hue[origin <= PORIGIN_OTHER ? origin : PORIGIN_OTHER];
	if (kind == PFRAME_FUTURE)
		hsl_to_rgb(h + 10 * vary, 0.80, 0.50 + 0.08 * vary, rgb);
	else
		hsl_to_rgb(h + 10 * vary, 0.55, 0.72 + 0.08 * vary, rgb);
}

static const char *origin_name(uint8_t origin)
{
	switch (origin) {
	case PORIGIN_USER: return "user code";
	case PORIGIN_RUNTIME: return "runtime";
	case PORIGIN_STD: return "std";
	}
	return "other";
}

static const char *kind_name(uint8_t kind)
{
	switch (kind) {
	case PFRAME_FUTURE: return "future";
	case PFRAME_FUNCTION: return "function";
	case PFRAME_RUNTIME: return "executor (synthetic)";
	}
	return "synthetic";
}

/* ---- drawing ---- */

/* Byte length of the longest prefix of name with at most chars characters. */
static size_t prefix_bytes(const char *name, size_t chars)
{
	const unsigned char *s = (const unsigned char *)name;
	size_t i = 0, n = strlen(name);

	while (i < n && chars--) {
		size_t len = utf8__sequence_length(s + i, n - i);
		i += len ? len : 1;
	}
	return i;
}

/* Characters in name, each byte that is not UTF-8 one (it is shown as U+FFFD). */
static size_t count_chars(const char *name)
{
	const unsigned char *s = (const unsigned char *)name;
	size_t chars = 0, i = 0, n = strlen(name);

	while (i < n) {
		size_t len = utf8__sequence_length(s + i, n - i);
		i += len ? len : 1;
		chars++;
	}
	return chars;
}

static void draw_box(struct flamegraph *fg, const struct tree *t, const struct node *n, double x,
		     double w, double y)
{
	FILE *out = fg->out;
	const struct pframe *f = n->frame;
	const char *name = f->name ? f->name : "";
	double pct =
	    t->nodes[0].weight ? 100.0 * (double)n->weight / (double)t->nodes[0].weight : 0;
	int rgb[3];

	frame_color(f->kind, f->origin, (double)(hash_name(0, name) % 1000) / 1000.0, rgb);
	fprintf(out, "<g class=\"f\" data-d=\"%" PRIu32 "\" data-w=\"%" PRIu64 "\"><title>",
		n->depth, n->weight);
	xml__write_text(out, name, NAME_MAX_BYTES);
	if (f->file) {
		fputc('\n', out);
		xml__write_text(out, f->file, FILE_MAX_BYTES);
		if (f->line)
			fprintf(out, ":%" PRIu32, f->line);
	}
	if (t->offcpu)
		fprintf(out, "\n%.3f ms off-CPU, %" PRIu64 " switches (%.2f%%)",
			(double)n->weight / 1e6, n->samples, pct);
	else
		fprintf(out, "\n%" PRIu64 " samples (%.2f%%)", n->samples, pct);
	fprintf(out, "\n%s, %s</title>", origin_name(f->origin), kind_name(f->kind));
	fprintf(out,
		"<rect x=\"%.3f\" y=\"%.1f\" width=\"%.3f\" height=\"%d\" rx=\"2\" "
		"fill=\"rgb(%d,%d,%d)\"/>",
		x, y, w, FRAME_HEIGHT - 1, rgb[0], rgb[1], rgb[2]);
	/* as much of the name as fits, "..." marking the cut (the script redoes it on zoom) */
	fprintf(out, "<text x=\"%.3f\" y=\"%.1f\">", x + 3, y + FRAME_HEIGHT - 4.5);
	size_t fit = w > 6 ? (size_t)((w - 6) / CHAR_WIDTH) : 0, chars = count_chars(name);
	if (fit >= 3)
		xml__write_text(out, name,
				chars <= fit ? NAME_MAX_BYTES : prefix_bytes(name, fit - 3));
	fputs("</text></g>\n", out);
}

static uint32_t graph_height(const struct tree *t)
{
	return GRAPH_HEADING + (t->max_depth + 1) * FRAME_HEIGHT + GRAPH_GAP;
}

/* One graph: heading, then the boxes depth first (iteratively: stacks can be deep). */
static void draw_graph(struct flamegraph *fg, struct tree *t, int index, double top)
{
	FILE *out = fg->out;
	const struct node *root = &t->nodes[0];
	double scale = root->weight ? (double)FRAME_WIDTH / (double)root->weight : 0;
	double bottom = top + GRAPH_HEADING + (double)t->max_depth * FRAME_HEIGHT;
	uint32_t depth = 0;

	fprintf(out, "<g class=\"graph\" id=\"graph%d\" data-x=\"%d\" data-width=\"%d\">\n", index,
		PAD, FRAME_WIDTH);
	fprintf(out, "<text class=\"heading\" x=\"%d\" y=\"%.1f\">", PAD, top + 15);
	if (t->offcpu)
		fprintf(out, "Off-CPU: time blocked, %.3f ms in %" PRIu64 " switches</text>\n",
			(double)root->weight / 1e6, root->samples);
	else
		fprintf(out, "On-CPU: %" PRIu64 " samples</text>\n", root->samples);
	fprintf(out, "<text class=\"matched\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\"></text>\n",
		WIDTH - PAD, top + 15);

	/* a box's offset (weight to its left) is its parent's plus its elder siblings' */
	uint64_t acc = 0;
	for (uint32_t c = root->first_child; c != NO_NODE; c = t->nodes[c].next_sibling) {
		fg->offsets[c] = acc;
		acc += t->nodes[c].weight;
		fg->stack[depth++] = c;
	}
	while (depth) {
		uint32_t id = fg->stack[--depth];
		const struct node *n = &t->nodes[id];
		double w = (double)n->weight * scale;

		if (w < MIN_WIDTH_PX) {
			fg->omitted++; /* its children are narrower still: counted, not drawn */
			uint32_t mark = depth;
			for (uint32_t c = n->first_child; c != NO_NODE;
			     c = t->nodes[c].next_sibling)
				fg->stack[depth++] = c;
			while (depth > mark) {
				const struct node *m = &t->nodes[fg->stack[--depth]];
				fg->omitted++;
				for (uint32_t c = m->first_child; c != NO_NODE;
				     c = t->nodes[c].next_sibling)
					fg->stack[depth++] = c;
			}
			continue;
		}
		draw_box(fg, t, n, PAD + (double)fg->offsets[id] * scale, w,
			 bottom - (double)n->depth * FRAME_HEIGHT);
		acc = fg->offsets[id];
		for (uint32_t c = n->first_child; c != NO_NODE; c = t->nodes[c].next_sibling) {
			fg->offsets[c] = acc;
			acc += t->nodes[c].weight;
			fg->stack[depth++] = c;
		}
	}
	fputs("</g>\n", out);
}

static void draw_legend(FILE *out, double y)
{
	double x = PAD;
	int rgb[3];

	for (uint8_t origin = PORIGIN_USER; origin <= PORIGIN_OTHER; origin++) {
		for (uint8_t kind = PFRAME_FUTURE; kind <= PFRAME_FUNCTION; kind++) {
			frame_color(kind, origin, 0, rgb);
			fprintf(out,
				"<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" "
				"fill=\"rgb(%d,%d,%d)\"/><text class=\"legend\" x=\"%.0f\" "
				"y=\"%.0f\">%s %s</text>\n",
				x, y - 10, rgb[0], rgb[1], rgb[2], x + 16, y, origin_name(origin),
				kind == PFRAME_FUTURE ? "future" : "function");
			x += 132;
		}
	}
	frame_color(PFRAME_SPECIAL, PORIGIN_OTHER, 0, rgb);
	fprintf(out,
		"<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"rgb(%d,%d,%d)\"/>"
		"<text class=\"legend\" x=\"%.0f\" y=\"%.0f\">synthetic</text>\n",
		x, y - 10, rgb[0], rgb[1], rgb[2], x + 16, y);
}

static void draw_subtitle(struct flamegraph *fg)
{
	const struct profile_data *p = fg->p;
	FILE *out = fg->out;
	double seconds = p->end_ns > p->start_ns ? (double)(p->end_ns - p->start_ns) / 1e9 : 0;

	fprintf(out, "<text class=\"subtitle\" x=\"%d\" y=\"48\" text-anchor=\"middle\">",
		WIDTH / 2);
	xml__write_text(out, p->process_name ? p->process_name : "?", 256);
	fprintf(out, " (pid %" PRIu32 ") · ", p->pid);
	xml__write_text(out, p->event ? p->event : "?", 64);
	fprintf(out,
		" at %" PRIu32 " Hz · %" PRIu64 " on-CPU samples · %" PRIu64
		" off-CPU switches · %.3f s · %" PRIu64 " dropped · %" PRIu64
		" unwind failed · %" PRIu64 " cut short by the %" PRIu32 " KiB stack copy",
		p->freq_hz, fg->trees[0].nodes[0].samples, fg->trees[1].nodes[0].samples, seconds,
		p->dropped, p->unwind_failed, p->cut_short, p->stack_size >> 10);
	if (fg->trees[1].nodes[0].samples || p->offcpu_lost)
		fprintf(out, " · %" PRIu64 " off-CPU blocks lost (%.3f ms)", p->offcpu_lost,
			(double)p->offcpu_lost_ns / 1e6);
	fprintf(out, " · %" PRIu64 " frames omitted (narrower than %.1f px)</text>\n", fg->omitted,
		MIN_WIDTH_PX);
}

static void draw(struct flamegraph *fg, const char *title)
{
	FILE *out = fg->out;
	double height = HEADER_HEIGHT, top;
	bool any = false;

	for (int i = 0; i < 2; i++)
		if (fg->trees[i].nodes[0].first_child != NO_NODE)
			height += graph_height(&fg->trees[i]);
	if (fg->trees[0].nodes[0].first_child == NO_NODE &&
	    fg->trees[1].nodes[0].first_child == NO_NODE)
		height += 40;

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
		     "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" ");
	fprintf(out, "width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d %.0f\">\n", WIDTH, height,
		WIDTH, height);
	fprintf(out, "<style type=\"text/css\"><![CDATA[\n%s]]></style>\n", flamegraph_svg_style);
	fprintf(out, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n",
		flamegraph_svg_script);
	fprintf(out,
		"<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%.0f\" fill=\"rgb(250,250,245)\"/>\n",
		WIDTH, height);
	fprintf(out, "<text class=\"title\" x=\"%d\" y=\"26\" text-anchor=\"middle\">", WIDTH / 2);
	xml__write_text(out, title ? title : "asyncbpf profile", 512);
	fputs("</text>\n", out);
	fprintf(out,
		"<text class=\"button\" id=\"reset-zoom\" x=\"%d\" y=\"26\" "
		"style=\"opacity:0.3\">Reset Zoom</text>\n",
		PAD);
	fprintf(out,
		"<text class=\"button\" id=\"search\" x=\"%d\" y=\"26\" "
		"text-anchor=\"end\">Search</text>\n",
		WIDTH - PAD);
	draw_legend(out, 74);

	top = HEADER_HEIGHT;
	for (int i = 0; i < 2; i++) {
		struct tree *t = &fg->trees[i];
		if (t->nodes[0].first_child == NO_NODE)
			continue;
		draw_graph(fg, t, i, top);
		top += graph_height(t);
		any = true;
	}
	if (!any)
		fprintf(out, "<text class=\"heading\" x=\"%d\" y=\"%d\">No samples.</text>\n", PAD,
			HEADER_HEIGHT + 20);
	draw_subtitle(fg); /* last: it counts the boxes left out */
	fputs("</svg>\n", out);
}

int flamegraph_svg__write(FILE *out, const struct profile_data *p, const char *title)
{
	struct flamegraph fg = {.out = out, .p = p};
	uint32_t most = 0;
	int err = 0;

	for (int i = 0; i < 2 && !err; i++)
		err = tree_build(&fg.trees[i], p, i == 1);
	for (int i = 0; i < 2 && !err; i++)
		if (fg.trees[i].nnodes > most)
			most = fg.trees[i].nnodes;
	if (!err) {
		fg.order = malloc(most * sizeof(*fg.order));
		fg.stack = malloc(most * sizeof(*fg.stack));
		fg.offsets = malloc(most * sizeof(*fg.offsets));
		if (!fg.order || !fg.stack || !fg.offsets)
			err = -ENOMEM;
	}
	for (int i = 0; i < 2 && !err; i++)
		tree_link_sorted(&fg.trees[i], fg.order);
	if (!err)
		draw(&fg, title);
	/* every write went through stdio: one check of the stream covers them all */
	if (!err && (fflush(out) || ferror(out)))
		err = -EIO;

	for (int i = 0; i < 2; i++) {
		free(fg.trees[i].nodes);
		u64_map__free(&fg.trees[i].by_hash);
	}
	free(fg.order);
	free(fg.stack);
	free(fg.offsets);
	return err;
}
