// SPDX-License-Identifier: GPL-2.0
/*
 * Folded stacks and the dynamic await graph from completed polls (trace_outputs.h,
 * docs/tracing.md "Outputs").
 *
 * Folded: a thread's polls nest strictly, and a poll's record is made when it
 * returns, so a thread's records arrive innermost first and everything that arrives
 * between two depth-0 records belongs to the second one. Each thread keeps those
 * records (at most TRACE_FOLDED_MAX_PENDING) until its depth-0 poll arrives; each
 * arriving record adopts the waiting records one level deeper whose parent it is
 * (parent_self and parent_poll), which gives its self time (duration minus the
 * direct children's) and, once the depth-0 poll is there, every record's stack.
 * Stacks are kept as a tree (one node per distinct stack), so memory grows with the
 * number of distinct stacks, not with the number of polls.
 */
#include "export/trace_outputs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hashmap.h"
#include "lib/vec.h"
#include "lib/syscalls.h"
#include "lib/text.h"

#define NONE UINT32_MAX

/* ---- frame names (shared) ---- */

/* Frame ids: futures, then polls of unknown futures, then these. */
enum {
	FRAME_UNKNOWN_POLL, /* poll index outside the model */
	FRAME_LOST,	    /* root of polls whose parent never arrived (dropped, truncated) */
	FRAME_INCOMPLETE,   /* root of polls whose depth-0 poll had not returned at the end */
	NR_SPECIAL_FRAMES,
};

/* Off-CPU leaves of the folded stacks, after the special frames: [preempted],
 * [blocked] (not in a syscall), [asyncbpf probe] (the tracer's own cost: time the
 * thread was off-CPU inside a probe's handling), [blocked:SYSCALL] for syscalls
 * 0..511. */
#define NR_BLOCK_FRAMES (3 + 512)

static uint32_t block_frame(const struct model *m, const struct trace_block *b)
{
	uint32_t k = b->kind == OFFCPU_PREEMPTED ? 0
		     : b->kind == OFFCPU_TRACER	 ? 2
		     : b->syscall < 0 || b->syscall >= NR_BLOCK_FRAMES - 3
			 ? 1
			 : 3 + (uint32_t)b->syscall;

	return m->nr_futures + m->nr_polls + NR_SPECIAL_FRAMES + k;
}

static uint32_t frame_of(const struct model *m, const struct trace_poll *p)
{
	if (p->future != TRACE_NO_INDEX && p->future < m->nr_futures)
		return p->future;
	if (p->poll < m->nr_polls) {
		int32_t fut = m->polls[p->poll].future;
		if (fut >= 0 && (uint32_t)fut < m->nr_futures)
			return (uint32_t)fut;
		return m->nr_futures + p->poll;
	}
	return m->nr_futures + m->nr_polls + FRAME_UNKNOWN_POLL;
}

static uint32_t frame_of_poll(const struct model *m, uint32_t poll)
{
	struct trace_poll p = {.poll = poll, .future = TRACE_NO_INDEX};

	return frame_of(m, &p);
}

/* The name shown for a frame: the future's display name, else the poll fn's. */
static void frame_display_name(const struct model *m, uint32_t frame, char *buf, size_t len)
{
	static const char *const special[NR_SPECIAL_FRAMES] = {
	    "[unknown poll]", "[parent not traced]", "[incomplete]"};
	const char *name = NULL;

	if (frame < m->nr_futures) {
		future__display_name(&m->futures[frame], buf, len);
		if (buf[0])
			return;
	} else if (frame - m->nr_futures < m->nr_polls) {
		name = m->polls[frame - m->nr_futures].name;
	} else if (frame - m->nr_futures - m->nr_polls < NR_SPECIAL_FRAMES) {
		name = special[frame - m->nr_futures - m->nr_polls];
	} else if (frame - m->nr_futures - m->nr_polls - NR_SPECIAL_FRAMES < NR_BLOCK_FRAMES) {
		uint32_t k = frame - m->nr_futures - m->nr_polls - NR_SPECIAL_FRAMES;

		if (k == 0)
			snprintf(buf, len, "[preempted]");
		else if (k == 1)
			snprintf(buf, len, "[blocked]");
		else if (k == 2)
			snprintf(buf, len, "[asyncbpf probe]");
		else
			snprintf(buf, len, "[blocked:%s]", syscall__name((int)k - 3));
		return;
	}
	snprintf(buf, len, "%s", name && name[0] ? name : "?");
}

/* ---- folded stacks ---- */

struct pending {
	struct trace_poll p;
	uint32_t block;	      /* an off-CPU leaf: its frame; NONE for a poll */
	uint64_t children_ns; /* sum of the direct children's durations */
	uint32_t parent;      /* index of the parent in the thread's pending list, or NONE */
	uint32_t node;	      /* stack node, while flushing */
};

struct thread_pending {
	struct pending *v;
	uint32_t n, cap;
};

struct stack_node {
	uint32_t frame, parent; /* parent NONE: a root frame */
	uint64_t self_ns;
};

struct trace_folded {
	const struct model *m;
	struct u64_map thread_index; /* tid -> index into threads */
	struct thread_pending *threads;
	uint32_t nr_threads, cap_threads;
	struct u64_map child_index; /* (parent node + 1) << 32 | frame -> node */
	struct stack_node *nodes;
	uint32_t nr_nodes, cap_nodes;
	char **names; /* by frame id, made when first written */
	uint64_t dropped;
};

/* less the probes of traced polls inside it: their traps are not the parent's time */
static uint64_t duration(const struct trace_poll *p)
{
	return trace_poll__busy_ns(p);
}

struct trace_folded *trace_folded__new(const struct model *m)
{
	struct trace_folded *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->m = m;
	u64_map__init(&f->thread_index);
	u64_map__init(&f->child_index);
	f->names = calloc((size_t)m->nr_futures + m->nr_polls + NR_SPECIAL_FRAMES + NR_BLOCK_FRAMES,
			  sizeof(*f->names));
	if (!f->names) {
		trace_folded__free(f);
		return NULL;
	}
	return f;
}

uint64_t trace_folded__dropped(const struct trace_folded *f)
{
	return f->dropped;
}

static int stack_child(struct trace_folded *f, uint32_t parent, uint32_t frame, uint32_t *out)
{
	uint64_t key = ((uint64_t)(parent == NONE ? 0 : parent + 1) << 32) | frame, v;

	if (u64_map__get(&f->child_index, key, &v)) {
		*out = (uint32_t)v;
		return 0;
	}
	if (f->nr_nodes == NONE - 1 ||
	    vec__reserve((void **)&f->nodes, &f->cap_nodes, f->nr_nodes + 1, sizeof(*f->nodes)) ||
	    u64_map__set(&f->child_index, key, f->nr_nodes))
		return -ENOMEM;
	f->nodes[f->nr_nodes] = (struct stack_node){frame, parent, 0};
	*out = f->nr_nodes++;
	return 0;
}

/*
 * Every waiting record of t into the stack tree. The list is in arrival order, so a
 * parent comes after its children: walk it backwards. Records without a parent and
 * other than a depth-0 root hang under the orphan frame.
 */
static int flush(struct trace_folded *f, struct thread_pending *t, uint32_t orphan_frame)
{
	uint32_t orphan_node = NONE;
	int err = 0;

	for (uint32_t i = t->n; i-- > 0;) {
		struct pending *e = &t->v[i];
		uint64_t dur = duration(&e->p);
		uint32_t parent = NONE;

		if (e->parent != NONE) {
			parent = t->v[e->parent].node;
		} else if (e->p.depth != 0 || orphan_frame == FRAME_INCOMPLETE) {
			if (orphan_node == NONE &&
			    stack_child(f, NONE, f->m->nr_futures + f->m->nr_polls + orphan_frame,
					&orphan_node)) {
				err = -ENOMEM;
				break;
			}
			parent = orphan_node;
		}
		if (stack_child(f, parent, e->block != NONE ? e->block : frame_of(f->m, &e->p),
				&e->node)) {
			err = -ENOMEM;
			break;
		}
		f->nodes[e->node].self_ns += dur > e->children_ns ? dur - e->children_ns : 0;
	}
	if (err)
		f->dropped += t->n;
	t->n = 0;
	return err;
}

int trace_folded__add(struct trace_folded *f, const struct trace_poll *p)
{
	struct thread_pending *t;
	struct pending *e;
	uint64_t index;

	if (!u64_map__get(&f->thread_index, p->tid, &index)) {
		if (vec__reserve((void **)&f->threads, &f->cap_threads, f->nr_threads + 1,
				 sizeof(*f->threads)) ||
		    u64_map__set(&f->thread_index, p->tid, f->nr_threads))
			goto drop;
		index = f->nr_threads++;
		f->threads[index] = (struct thread_pending){0};
	}
	t = &f->threads[index];
	/* a depth-0 poll always gets in: it ends the list */
	if ((p->depth && t->n >= TRACE_FOLDED_MAX_PENDING) ||
	    vec__reserve((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)))
		goto drop;
	e = &t->v[t->n];
	*e = (struct pending){.p = *p, .block = NONE, .parent = NONE, .node = NONE};
	for (uint32_t i = 0; i < t->n; i++) {
		struct pending *c = &t->v[i];

		if (c->parent == NONE && c->p.depth == p->depth + 1 &&
		    c->p.parent_self == p->self && c->p.parent_poll == p->poll) {
			c->parent = t->n;
			e->children_ns += duration(&c->p);
		}
	}
	t->n++;
	if (p->depth == 0)
		return flush(f, t, FRAME_LOST);
	return 0;
drop:
	f->dropped++;
	return -ENOMEM;
}

int trace_folded__add_block(struct trace_folded *f, const struct trace_block *b)
{
	struct thread_pending *t;
	uint64_t index;

	if (!u64_map__get(&f->thread_index, b->tid, &index)) {
		if (vec__reserve((void **)&f->threads, &f->cap_threads, f->nr_threads + 1,
				 sizeof(*f->threads)) ||
		    u64_map__set(&f->thread_index, b->tid, f->nr_threads))
			goto drop;
		index = f->nr_threads++;
		f->threads[index] = (struct thread_pending){0};
	}
	t = &f->threads[index];
	if (t->n >= TRACE_FOLDED_MAX_PENDING ||
	    vec__reserve((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)))
		goto drop;
	/* a child of the poll it is blamed on, which claims it when its record comes */
	t->v[t->n++] = (struct pending){.p = {.start_ns = b->start_ns,
					      .end_ns = b->end_ns,
					      .pid = b->pid,
					      .tid = b->tid,
					      .poll = b->poll,
					      .future = TRACE_NO_INDEX,
					      .parent_self = b->self,
					      .parent_poll = b->poll,
					      .depth = (uint16_t)(b->depth + 1)},
					.block = block_frame(f->m, b),
					.parent = NONE,
					.node = NONE};
	return 0;
drop:
	f->dropped++;
	return -ENOMEM;
}

/* A frame name as folded text: no ';' (the separator), no control characters, UTF-8. */
static char *folded_name(const struct model *m, uint32_t frame)
{
	char raw[512];
	size_t n, i = 0, o = 0;
	char *s;

	frame_display_name(m, frame, raw, sizeof(raw));
	n = strlen(raw);
	s = malloc(n * 3 + 1); /* each bad byte becomes 3 (U+FFFD) */
	if (!s)
		return NULL;
	while (i < n) {
		unsigned char c = (unsigned char)raw[i];
		size_t len = c < 0x80 ? 1 : utf8__sequence_length((unsigned char *)raw + i, n - i);

		if (!len) {
			memcpy(s + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		if (c == ';')
			s[o++] = ',';
		else if (c < 0x20 || c == 0x7f)
			s[o++] = '?';
		else {
			memcpy(s + o, raw + i, len);
			o += len;
		}
		i += len;
	}
	s[o] = 0;
	return s;
}

int trace_folded__write(struct trace_folded *f, FILE *out)
{
	uint32_t *path = NULL, cap = 0;
	int err = 0;

	for (uint32_t t = 0; t < f->nr_threads; t++)
		if (f->threads[t].n && flush(f, &f->threads[t], FRAME_INCOMPLETE))
			err = -ENOMEM;
	for (uint32_t i = 0; i < f->nr_nodes && !err; i++) {
		uint64_t us = (f->nodes[i].self_ns + 500) / 1000;
		uint32_t depth = 0;

		if (!us)
			continue;
		for (uint32_t n = i; n != NONE; n = f->nodes[n].parent) {
			if (vec__reserve((void **)&path, &cap, depth + 1, sizeof(*path))) {
				err = -ENOMEM;
				break;
			}
			path[depth++] = f->nodes[n].frame;
		}
		while (!err && depth-- > 0) {
			uint32_t frame = path[depth];

			if (!f->names[frame] && !(f->names[frame] = folded_name(f->m, frame))) {
				err = -ENOMEM;
				break;
			}
			fputs(f->names[frame], out);
			fputc(depth ? ';' : ' ', out);
		}
		if (!err)
			fprintf(out, "%" PRIu64 "\n", us);
	}
	free(path);
	if (!err && (fflush(out) == EOF || ferror(out)))
		err = -EIO;
	return err;
}

void trace_folded__free(struct trace_folded *f)
{
	if (!f)
		return;
	for (uint32_t t = 0; t < f->nr_threads; t++)
		free(f->threads[t].v);
	free(f->threads);
	if (f->names)
		for (size_t i = 0; i < (size_t)f->m->nr_futures + f->m->nr_polls +
					   NR_SPECIAL_FRAMES + NR_BLOCK_FRAMES;
		     i++)
			free(f->names[i]);
	free(f->names);
	free(f->nodes);
	u64_map__free(&f->thread_index);
	u64_map__free(&f->child_index);
	free(f);
}

/* ---- the dynamic await graph ---- */

/* What `asyncbpf analyze --dot` caps labels at (export_dot.c). */
#define LABEL_MAX_BYTES	  160
#define TOOLTIP_MAX_BYTES 1000

struct dot_node {
	uint64_t polls;
	uint64_t counts[POLL_RESULT_COUNT]; /* by enum poll_result */
	bool task;			    /* polled at depth 0 */
};

struct dot_edge {
	uint32_t from, to; /* frames */
	uint64_t polls;
};

struct trace_dot {
	const struct model *m;
	struct dot_node *nodes;	   /* by frame id */
	struct u64_map edge_index; /* from << 32 | to -> index into edges */
	struct dot_edge *edges;
	uint32_t nr_edges, cap_edges;
};

static uint32_t nr_frames(const struct model *m)
{
	return m->nr_futures + m->nr_polls + NR_SPECIAL_FRAMES;
}

struct trace_dot *trace_dot__new(const struct model *m)
{
	struct trace_dot *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->m = m;
	u64_map__init(&d->edge_index);
	d->nodes = calloc(nr_frames(m), sizeof(*d->nodes));
	if (!d->nodes) {
		trace_dot__free(d);
		return NULL;
	}
	return d;
}

int trace_dot__add(struct trace_dot *d, const struct trace_poll *p)
{
	uint32_t to = frame_of(d->m, p), from;
	struct dot_node *n = &d->nodes[to];
	uint64_t key, index;

	n->polls++;
	if ((unsigned)p->result < POLL_RESULT_COUNT)
		n->counts[p->result]++;
	if (p->depth == 0)
		n->task = true;
	if (p->parent_poll == TRACE_NO_INDEX)
		return 0;
	from = frame_of_poll(d->m, p->parent_poll);
	key = (uint64_t)from << 32 | to;
	if (!u64_map__get(&d->edge_index, key, &index)) {
		if (vec__reserve((void **)&d->edges, &d->cap_edges, d->nr_edges + 1,
				 sizeof(*d->edges)) ||
		    u64_map__set(&d->edge_index, key, d->nr_edges))
			return -ENOMEM;
		index = d->nr_edges++;
		d->edges[index] = (struct dot_edge){from, to, 0};
	}
	d->edges[index].polls++;
	return 0;
}

static void write_node_id(FILE *out, const struct model *m, uint32_t frame)
{
	if (frame < m->nr_futures)
		fprintf(out, "f%" PRIu32, frame);
	else if (frame - m->nr_futures < m->nr_polls)
		fprintf(out, "p%" PRIu32, frame - m->nr_futures);
	else
		fprintf(out, "x%" PRIu32, frame - m->nr_futures - m->nr_polls);
}

static void write_dot_node(FILE *out, const struct model *m, uint32_t frame,
			   const struct dot_node *n)
{
	static const char *const extra[POLL_RESULT_COUNT] = {[POLL_PANICKED] = "panicked",
							     [POLL_UNKNOWN] = "unknown",
							     [POLL_TRUNCATED] = "truncated",
							     [POLL_OPEN] = "running at stop"};
	char name[LABEL_MAX_BYTES * 2];
	const char *file = NULL, *path = NULL;
	uint32_t line = 0;

	frame_display_name(m, frame, name, sizeof(name));
	if (frame < m->nr_futures) {
		file = m->futures[frame].file;
		line = m->futures[frame].line;
		path = m->futures[frame].path;
	} else if (frame - m->nr_futures < m->nr_polls) {
		file = m->polls[frame - m->nr_futures].file;
		line = m->polls[frame - m->nr_futures].line;
		path = m->polls[frame - m->nr_futures].name;
	}
	fputc('\t', out);
	write_node_id(out, m, frame);
	fputs(" [label=\"", out);
	dot__write_text(out, name, LABEL_MAX_BYTES);
	if (file && file[0]) {
		fputs("\\n", out);
		dot__write_text(out, path__short(file), LABEL_MAX_BYTES);
		if (line)
			fprintf(out, ":%" PRIu32, line);
	}
	fprintf(out, "\\npolls %" PRIu64 ", ready %" PRIu64 ", pending %" PRIu64, n->polls,
		n->counts[POLL_READY], n->counts[POLL_PENDING]);
	for (int r = POLL_PANICKED; r < POLL_RESULT_COUNT; r++)
		if (n->counts[r])
			fprintf(out, ", %s %" PRIu64, extra[r], n->counts[r]);
	fputs("\", tooltip=\"", out);
	dot__write_text(out, path ? path : name, TOOLTIP_MAX_BYTES);
	fputc('"', out);
	if (n->task)
		fputs(", peripheries=2", out);
	if (frame >= m->nr_futures)
		fputs(", style=\"filled,dashed\"", out);
	fputs("];\n", out);
}

static int edge_cmp(const void *a, const void *b)
{
	const struct dot_edge *x = a, *y = b;

	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	return x->to < y->to ? -1 : x->to > y->to;
}

int trace_dot__write(struct trace_dot *d, FILE *out)
{
	const struct model *m = d->m;
	bool *shown = calloc(nr_frames(m), sizeof(*shown));

	if (!shown)
		return -ENOMEM;
	fputs("digraph asyncbpf_trace {\n", out);
	/* newrank: Graphviz's default ranking fails ("trouble in init_rank") on some
	 * graphs whose edges cross the crate clusters (async_std_app's, 2026-11-27) */
	fputs("\tgraph [newrank=true, rankdir=LR, labelloc=t, fontname=\"Helvetica\", fontsize=12, "
	      "label=\"",
	      out);
	dot__write_text(out, m->path ? m->path : "", TOOLTIP_MAX_BYTES);
	fputs(" (traced)\"];\n", out);
	fputs("\tnode [shape=box, style=filled, fillcolor=white, fontname=\"Helvetica\", "
	      "fontsize=10];\n",
	      out);
	fputs("\tedge [fontname=\"Helvetica\", fontsize=9];\n", out);
	/* nodes: every frame polled, and every awaiter (even one never seen returning) */
	for (uint32_t i = 0; i < d->nr_edges; i++)
		shown[d->edges[i].from] = true;
	for (uint32_t i = 0; i < nr_frames(m); i++)
		if (d->nodes[i].polls || shown[i])
			write_dot_node(out, m, i, &d->nodes[i]);
	qsort(d->edges, d->nr_edges, sizeof(*d->edges), edge_cmp);
	for (uint32_t i = 0; i < d->nr_edges; i++)
		u64_map__set(&d->edge_index, (uint64_t)d->edges[i].from << 32 | d->edges[i].to, i);
	for (uint32_t i = 0; i < d->nr_edges && !ferror(out); i++) {
		fputc('\t', out);
		write_node_id(out, m, d->edges[i].from);
		fputs(" -> ", out);
		write_node_id(out, m, d->edges[i].to);
		fprintf(out, " [label=\"%" PRIu64 " poll%s\"];\n", d->edges[i].polls,
			d->edges[i].polls == 1 ? "" : "s");
	}
	fputs("}\n", out);
	free(shown);
	if (fflush(out) == EOF || ferror(out))
		return -EIO;
	return 0;
}

void trace_dot__free(struct trace_dot *d)
{
	if (!d)
		return;
	free(d->nodes);
	free(d->edges);
	u64_map__free(&d->edge_index);
	free(d);
}
