// SPDX-License-Identifier: GPL-2.0
/*
 * The await graph for Graphviz. One cluster per crate, one node per future (id
 * f<index>), one edge per await point. Unresolved awaits (dyn Future, ...) point to
 * one ellipse per awaitee type (id u<n>). Output order depends only on the model, so
 * two runs over one binary give identical files.
 *
 * Strings come from a hostile binary: labels are escaped so that the file always
 * parses and renders with `dot` without warnings (see dot_write_text).
 */
#include "export/export.h"
#include "lib/text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Rust types can be kilobytes long: cap what a label shows. */
#define LABEL_MAX_BYTES	  160
#define TOOLTIP_MAX_BYTES 1000

enum draw_mode {
	DRAW_NONE = 0,
	DRAW_NORMAL,
	DRAW_NEIGHBOUR, /* not selected, but next to a selected future: greyed */
};

struct node_order {
	const char *crate;
	uint32_t future;
};

static const char *crate_name(const char *crate)
{
	return crate && crate[0] ? crate : "(unknown crate)";
}

static int node_order__cmp(const void *a, const void *b)
{
	const struct node_order *x = a, *y = b;
	int c = strcmp(crate_name(x->crate), crate_name(y->crate));

	if (c)
		return c;
	return x->future < y->future ? -1 : x->future > y->future;
}

struct placeholder_order {
	const char *type;
	uint32_t edge;
};

static int awaitee_type__cmp(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static int placeholder_order__cmp(const void *a, const void *b)
{
	const struct placeholder_order *x = a, *y = b;
	int c = awaitee_type__cmp(x->type, y->type);

	if (c)
		return c;
	return x->edge < y->edge ? -1 : x->edge > y->edge;
}

static bool future_valid(const struct model *m, int32_t index)
{
	return index >= 0 && (uint32_t)index < m->nr_futures;
}

/* Which futures to draw: see export.h. */
static void choose_futures(const struct model *m, const bool *selected, uint8_t *draw)
{
	if (!selected) {
		for (uint32_t i = 0; i < m->nr_edges; i++) {
			const struct await_edge *e = &m->edges[i];
			if (future_valid(m, e->from))
				draw[e->from] = DRAW_NORMAL;
			if (future_valid(m, e->to))
				draw[e->to] = DRAW_NORMAL;
		}
		for (uint32_t i = 0; i < m->nr_polls; i++)
			if (future_valid(m, m->polls[i].future))
				draw[m->polls[i].future] = DRAW_NORMAL;
		for (uint32_t i = 0; i < m->nr_futures; i++)
			if (m->futures[i].poll >= 0 || m->futures[i].inlined_only)
				draw[i] = DRAW_NORMAL;
		return;
	}
	for (uint32_t i = 0; i < m->nr_futures; i++)
		if (selected[i])
			draw[i] = DRAW_NORMAL;
	for (uint32_t i = 0; i < m->nr_edges; i++) {
		const struct await_edge *e = &m->edges[i];
		if (!future_valid(m, e->from) || !future_valid(m, e->to))
			continue;
		if (selected[e->from] && !draw[e->to])
			draw[e->to] = DRAW_NEIGHBOUR;
		if (selected[e->to] && !draw[e->from])
			draw[e->from] = DRAW_NEIGHBOUR;
	}
}

static bool edge_drawn(const struct model *m, const bool *selected, const uint8_t *draw,
		       const struct await_edge *e)
{
	if (!future_valid(m, e->from))
		return false;
	if (!selected) /* the ends of every edge are drawn */
		return draw[e->from] != DRAW_NONE;
	if (selected[e->from])
		return true;
	return future_valid(m, e->to) && selected[e->to];
}

static void write_cluster_style(FILE *out, enum crate_class class)
{
	switch (class) {
	case CRATE_USER:
		fputs("\t\tstyle=filled; fillcolor=\"#e4eefc\"; color=\"#6f8fbf\";\n", out);
		break;
	case CRATE_STD:
	case CRATE_RUNTIME:
		fputs("\t\tstyle=filled; fillcolor=\"#ececec\"; color=\"#a0a0a0\";\n", out);
		break;
	case CRATE_OTHER:
	default: fputs("\t\tstyle=filled; fillcolor=\"#fbf6e6\"; color=\"#c0b080\";\n", out); break;
	}
}

static void write_node(FILE *out, const struct model *m, uint32_t id, enum draw_mode mode)
{
	const struct future *f = &m->futures[id];
	char name[LABEL_MAX_BYTES * 2];

	future__display_name(f, name, sizeof(name));
	fprintf(out, "\t\tf%" PRIu32 " [label=\"", id);
	dot__write_text(out, name, LABEL_MAX_BYTES);
	if (f->file && f->file[0]) {
		fputs("\\n", out);
		dot__write_text(out, path__short(f->file), LABEL_MAX_BYTES);
		if (f->line)
			fprintf(out, ":%" PRIu32, f->line);
	}
	fputs("\", tooltip=\"", out);
	dot__write_text(out, f->path, TOOLTIP_MAX_BYTES);
	fputc('"', out);
	/* dashed: only inlined copies exist; dotted: no poll code at all (type only) */
	if (f->poll < 0 && f->inlined_only)
		fputs(", style=\"filled,dashed\"", out);
	else if (f->poll < 0)
		fputs(", style=\"filled,dotted\"", out);
	if (f->is_root)
		fputs(", peripheries=2", out);
	if (mode == DRAW_NEIGHBOUR)
		fputs(", color=gray60, fontcolor=gray45, fillcolor=gray96", out);
	fputs("];\n", out);
}

static int write_clusters(FILE *out, const struct model *m, const uint8_t *draw)
{
	struct node_order *order;
	uint32_t n = 0, cluster = 0;

	order = calloc(m->nr_futures ? m->nr_futures : 1, sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->nr_futures; i++)
		if (draw[i])
			order[n++] = (struct node_order){m->futures[i].crate, i};
	qsort(order, n, sizeof(*order), node_order__cmp);

	for (uint32_t i = 0; i < n; i++) {
		const char *crate = crate_name(order[i].crate);
		bool first = i == 0 || strcmp(crate, crate_name(order[i - 1].crate)) != 0;
		bool last = i + 1 == n || strcmp(crate, crate_name(order[i + 1].crate)) != 0;

		if (first) {
			fprintf(out, "\tsubgraph cluster_%" PRIu32 " {\n\t\tlabel=\"", cluster++);
			dot__write_text(out, crate, LABEL_MAX_BYTES);
			fputs("\";\n", out);
			write_cluster_style(out, m->futures[order[i].future].crate_class);
		}
		write_node(out, m, order[i].future, draw[order[i].future]);
		if (last)
			fputs("\t}\n", out);
	}
	free(order);
	return 0;
}

static void write_edge(FILE *out, const bool *selected, const struct await_edge *e,
		       int64_t placeholder)
{
	fprintf(out, "\tf%" PRId32 " -> ", e->from);
	if (placeholder >= 0)
		fprintf(out, "u%" PRId64, placeholder);
	else
		fprintf(out, "f%" PRId32, e->to);
	fprintf(out, " [label=\"await %" PRIu32, e->await_index);
	if (e->line)
		fprintf(out, "\\nline %" PRIu32, e->line);
	fputc('"', out);
	if (e->via) {
		fputs(", tooltip=\"via ", out);
		dot__write_text(out, e->via, TOOLTIP_MAX_BYTES);
		fputc('"', out);
	}
	/* an edge to or from a greyed neighbour is greyed too */
	if (selected && !(selected[e->from] && (placeholder >= 0 || selected[e->to])))
		fputs(", color=gray60, fontcolor=gray45", out);
	if (placeholder >= 0)
		fputs(", style=dashed", out);
	fputs("];\n", out);
}

int export_dot__write(const struct model *m, const bool *selected, FILE *out)
{
	uint8_t *draw = NULL;
	struct placeholder_order *unresolved = NULL;
	int64_t *placeholder_of_edge = NULL; /* -1: the edge has a resolved target */
	uint32_t nr_unresolved = 0;
	int64_t nr_placeholders = 0;
	int err = -ENOMEM;

	draw = calloc(m->nr_futures ? m->nr_futures : 1, sizeof(*draw));
	unresolved = calloc(m->nr_edges ? m->nr_edges : 1, sizeof(*unresolved));
	placeholder_of_edge = calloc(m->nr_edges ? m->nr_edges : 1, sizeof(*placeholder_of_edge));
	if (!draw || !unresolved || !placeholder_of_edge)
		goto cleanup;

	choose_futures(m, selected, draw);

	/* one placeholder per distinct unresolved awaitee type, ordered by type */
	for (uint32_t i = 0; i < m->nr_edges; i++) {
		const struct await_edge *e = &m->edges[i];
		placeholder_of_edge[i] = -1;
		if (future_valid(m, e->to) || !edge_drawn(m, selected, draw, e))
			continue;
		unresolved[nr_unresolved++] = (struct placeholder_order){e->awaitee_type, i};
	}
	qsort(unresolved, nr_unresolved, sizeof(*unresolved), placeholder_order__cmp);
	for (uint32_t i = 0; i < nr_unresolved; i++) {
		if (i > 0 && awaitee_type__cmp(unresolved[i].type, unresolved[i - 1].type))
			nr_placeholders++;
		placeholder_of_edge[unresolved[i].edge] = nr_placeholders;
	}

	fputs("digraph asyncbpf {\n", out);
	/* newrank: Graphviz's default ranking fails ("trouble in init_rank") on some
	 * graphs whose edges cross the crate clusters (async_std_app's, 2026-11-27) */
	fputs("\tgraph [newrank=true, rankdir=LR, labelloc=t, fontname=\"Helvetica\", fontsize=12, "
	      "label=\"",
	      out);
	dot__write_text(out, m->path ? m->path : "", TOOLTIP_MAX_BYTES);
	fputs("\"];\n", out);
	fputs("\tnode [shape=box, style=filled, fillcolor=white, fontname=\"Helvetica\", "
	      "fontsize=10];\n",
	      out);
	fputs("\tedge [fontname=\"Helvetica\", fontsize=9];\n", out);

	err = write_clusters(out, m, draw);
	if (err)
		goto cleanup;

	for (uint32_t i = 0; i < nr_unresolved; i++) {
		int64_t id = placeholder_of_edge[unresolved[i].edge];
		if (i > 0 && id == placeholder_of_edge[unresolved[i - 1].edge])
			continue;
		fprintf(out, "\tu%" PRId64 " [shape=ellipse, style=dashed, label=\"", id);
		dot__write_text(out, unresolved[i].type ? unresolved[i].type : "(unknown awaitee)",
				LABEL_MAX_BYTES);
		fputs("\", tooltip=\"", out);
		dot__write_text(out, unresolved[i].type, TOOLTIP_MAX_BYTES);
		fputs("\"];\n", out);
	}

	for (uint32_t i = 0; i < m->nr_edges && !ferror(out); i++) {
		const struct await_edge *e = &m->edges[i];
		if (!edge_drawn(m, selected, draw, e))
			continue;
		write_edge(out, selected, e, placeholder_of_edge[i]);
	}
	fputs("}\n", out);
	err = 0;
	if (fflush(out) == EOF || ferror(out))
		err = -EIO;
cleanup:
	free(draw);
	free(unresolved);
	free(placeholder_of_edge);
	return err;
}
