// SPDX-License-Identifier: GPL-2.0
/*
 * The consumer: ring-buffer records (struct poll_record, bpf/asyncbpf.h) become
 * completed polls (struct trace_poll) for the exporters and the summary. Threads are
 * named from /proc/PID/task/TID/comm the first time one of their polls arrives.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hashmap.h"
#include "lib/sysfacts.h"
#include "lib/text_table.h"
#include "export/chrome_trace.h"
#include "export/perfetto.h"
#include "export/poll_text.h"
#include "export/trace_outputs.h"
#include "trace/probe_cost.h"
#include "trace/task_locks.h"
#include "trace/task_trees.h"
#include "trace/trace_consumer.h"
#include "trace/trace_summary.h"

struct trace_consumer {
	const struct model *m;
	const uint32_t *root_types; /* task mode: trace_plan.root_types */
	uint32_t nr_root_types;
	pid_t pid;
	struct trace_sinks out;
	struct u64_map threads;	   /* tids already named */
	struct probe_tally *tally; /* the probe cost inside each poll; NULL: not estimated */
	int (*resolve)(void *ctx, uint8_t runtime, uint64_t header, uint64_t vtable,
		       uint64_t *self);
	void *resolve_ctx;
	int write_err;		  /* first writer error (-errno) */
	struct task_trees *tasks; /* task mode: start trees waiting for their end */
	struct text_table stacks; /* task mode: await chains spelled, by chain hash */
	struct lock_table *locks; /* task mode: the lock nodes of the trees (task_locks.h) */
	uint64_t task_records, task_bad;
	bool locks_only; /* top --locks: only the trees' locks */
};

/* the BPF side's results are the consumer's, value for value */
_Static_assert((int)POLL_READY == RESULT_READY && (int)POLL_PENDING == RESULT_PENDING &&
		   (int)POLL_PANICKED == RESULT_PANICKED && (int)POLL_UNKNOWN == RESULT_UNKNOWN &&
		   (int)POLL_TRUNCATED == RESULT_TRUNCATED && (int)POLL_OPEN == RESULT_OPEN,
	       "enum poll_result and enum record_result differ");

int trace_record__decode(const void *data, size_t size, const struct model *m,
			 struct trace_poll *out)
{
	struct poll_record r;

	if (size < sizeof(r))
		return -EINVAL;
	memcpy(&r, data, sizeof(r));
	if (r.type != RECORD_POLL || r.result > RESULT_OPEN)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->start_ns = r.start_ns;
	out->end_ns = r.end_ns;
	out->pid = r.pid;
	out->tid = r.tid;
	out->poll = r.poll;
	out->future = r.poll < m->nr_polls && m->polls[r.poll].future >= 0
			  ? (uint32_t)m->polls[r.poll].future
			  : TRACE_NO_INDEX;
	out->self = r.self;
	out->parent_self = r.parent_self;
	out->parent_poll = r.depth ? r.parent_poll : TRACE_NO_INDEX;
	out->task_self = r.task_self;
	out->task_poll = r.task_poll;
	out->depth = r.depth;
	/* enum record_result has enum poll_result's order (asserted below) */
	out->result = (enum poll_result)r.result;
	out->unknown_reason = r.result == RESULT_UNKNOWN && r.unknown_reason < UNKNOWN_REASON_COUNT
				  ? r.unknown_reason
				  : UNKNOWN_NONE;
	out->await_index = r.result == RESULT_PENDING ? r.await_index : -1;
	/* never report an await point the future does not have */
	if (out->result == POLL_PENDING && out->future != TRACE_NO_INDEX &&
	    !model__has_await(m, out->future, out->await_index)) {
		out->result = POLL_UNKNOWN;
		out->unknown_reason = UNKNOWN_BAD_AWAIT;
		out->await_index = -1;
	}
	out->state_before = r.state_before;
	out->state_after = r.state_after;
	out->offcpu_ns = r.offcpu_ns <= r.end_ns - r.start_ns ? r.offcpu_ns : 0;
	out->waker_data = r.depth ? 0 : r.waker_data;
	return 0;
}

int trace_drop__decode(const void *data, size_t size, const struct model *m, struct trace_drop *out)
{
	struct drop_record r;

	if (size < sizeof(r))
		return -EINVAL;
	memcpy(&r, data, sizeof(r));
	if (r.type != RECORD_DROP)
		return -EINVAL;
	*out = (struct trace_drop){
	    .time_ns = r.time_ns,
	    .pid = r.pid,
	    .tid = r.tid,
	    .poll = r.poll == ~0u ? TRACE_NO_INDEX : r.poll,
	    .future = r.future,
	    .self = r.self,
	    .state = r.state,
	    .task_self = r.task_self,
	    .dropper_self = r.dropper_self,
	    .dropper_poll = r.dropper_poll == ~0u ? TRACE_NO_INDEX : r.dropper_poll,
	    .depth = r.depth,
	    .has_state = r.has_state != 0,
	    .await_index = -1,
	};
	if (out->has_state)
		out->await_index = trace__await_index(m, (int32_t)r.future, r.state);
	return 0;
}

static int handle_drop(struct trace_consumer *c, const void *data, size_t size)
{
	struct trace_drop d;
	int r;

	if (trace_drop__decode(data, size, c->m, &d)) {
		c->out.summary->bad_records++;
		return 0;
	}
	trace_summary__add_drop(c->out.summary, &d);
	if (c->out.perfetto && (r = perfetto_writer__add_drop(c->out.perfetto, &d)) &&
	    !c->write_err)
		c->write_err = r;
	if (c->out.chrome && (r = chrome_trace__add_drop(c->out.chrome, &d)) && !c->write_err)
		c->write_err = r;
	return 0;
}

int trace_wake__decode(const void *data, size_t size, struct trace_wake *out)
{
	struct wake_record r;

	if (size < sizeof(r))
		return -EINVAL;
	memcpy(&r, data, sizeof(r));
	if (r.type != RECORD_WAKE)
		return -EINVAL;
	*out = (struct trace_wake){
	    .time_ns = r.time_ns,
	    .pid = r.pid,
	    .tid = r.tid,
	    .runtime = r.runtime,
	    .by_ref = r.by_ref != 0,
	    .depth = r.depth,
	    .header = r.header,
	    .vtable = r.vtable,
	    .woken_self = r.woken_self,
	    .waker_self = r.waker_self,
	    .waker_task_self = r.waker_task_self,
	    .waker_start_ns = r.waker_start_ns,
	    .waker_poll = r.waker_poll == ~0u ? TRACE_NO_INDEX : r.waker_poll,
	};
	return 0;
}

int trace_block__decode(const void *data, size_t size, const struct model *m,
			struct trace_block *out)
{
	struct block_record r;

	if (size < sizeof(r))
		return -EINVAL;
	memcpy(&r, data, sizeof(r));
	if (r.type != RECORD_BLOCK || r.end_ns < r.start_ns)
		return -EINVAL;
	*out = (struct trace_block){
	    .start_ns = r.start_ns,
	    .end_ns = r.end_ns,
	    .pid = r.pid,
	    .tid = r.tid,
	    .poll = r.poll,
	    .future = r.poll < m->nr_polls && m->polls[r.poll].future >= 0
			  ? (uint32_t)m->polls[r.poll].future
			  : TRACE_NO_INDEX,
	    .self = r.self,
	    .task_self = r.task_self,
	    .poll_start_ns = r.poll_start_ns,
	    .syscall = r.syscall,
	    .depth = r.depth,
	    .kind = r.kind <= OFFCPU_TRACER ? r.kind : OFFCPU_BLOCKED,
	};
	return 0;
}

static int handle_block(struct trace_consumer *c, const void *data, size_t size)
{
	struct trace_block b;
	int r;

	if (trace_block__decode(data, size, c->m, &b)) {
		c->out.summary->bad_records++;
		return 0;
	}
	trace_summary__add_block(c->out.summary, &b);
	if (c->out.perfetto && (r = perfetto_writer__add_block(c->out.perfetto, &b)) &&
	    !c->write_err)
		c->write_err = r;
	if (c->out.chrome && (r = chrome_trace__add_block(c->out.chrome, &b)) && !c->write_err)
		c->write_err = r;
	if (c->out.folded)
		trace_folded__add_block(c->out.folded, &b);
	return 0;
}

struct trace_consumer *trace_consumer__new(const struct model *m, pid_t pid,
					   const struct trace_sinks *sinks)
{
	struct trace_consumer *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->m = m;
	c->pid = pid;
	c->out = *sinks;
	u64_map__init(&c->threads);
	text_table__init(&c->stacks);
	return c;
}

void trace_consumer__set_locks_only(struct trace_consumer *c, bool on)
{
	c->locks_only = on;
}

void trace_consumer__set_root_types(struct trace_consumer *c, const uint32_t *roots, uint32_t nr)
{
	c->root_types = roots;
	c->nr_root_types = nr;
}

int trace_consumer__set_probe_costs(struct trace_consumer *c, const uint64_t *per_poll,
				    uint32_t nr_polls)
{
	probe_tally__free(c->tally);
	c->tally = probe_tally__new(per_poll, nr_polls);
	return c->tally ? 0 : -ENOMEM;
}

void trace_consumer__set_wake_resolver(struct trace_consumer *c,
				       int (*fn)(void *ctx, uint8_t runtime, uint64_t header,
						 uint64_t vtable, uint64_t *self),
				       void *ctx)
{
	c->resolve = fn;
	c->resolve_ctx = ctx;
}

int trace_consumer__write_err(const struct trace_consumer *c)
{
	return c->write_err;
}

static void name_thread(struct trace_consumer *c, uint32_t pid, uint32_t tid)
{
	char path[64], name[64] = "";
	uint64_t seen;
	int r;

	if (u64_map__get(&c->threads, tid, &seen))
		return;
	if (u64_map__set(&c->threads, tid, 1))
		return; /* out of memory: the thread stays unnamed */
	snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
	if (sysfacts__read_small_file(path, name, sizeof(name)) || !name[0])
		return; /* the thread is gone: its track keeps the tid only */
	if (c->out.perfetto && (r = perfetto_writer__add_thread(c->out.perfetto, tid, name)) &&
	    !c->write_err)
		c->write_err = r;
	if (c->out.chrome && (r = chrome_trace__add_thread(c->out.chrome, tid, name)) &&
	    !c->write_err)
		c->write_err = r;
}

static const char *const fate_names[] = {"pending", "ready", "ended"};

/* The model's poll index of future f, TRACE_NO_INDEX when it has none. */
static uint32_t poll_of_future(const struct model *m, int32_t f)
{
	return f >= 0 && (uint32_t)f < m->nr_futures && m->futures[f].poll >= 0
		   ? (uint32_t)m->futures[f].poll
		   : TRACE_NO_INDEX;
}

/*
 * Level k of a task poll's await chain (chain[0..n), innermost first) as a poll of
 * its future spanning the whole task poll: per-future durations are not measured
 * in task mode.
 */
static void chain_poll(const struct trace_consumer *c, const struct task_poll *tp,
		       const struct task_tree *t, const uint32_t *chain, uint32_t n, uint32_t k,
		       struct trace_poll *p)
{
	const struct task_tree_node *nd = &t->nodes[chain[k]];
	const struct task_tree_node *pa = nd->parent >= 0 ? &t->nodes[nd->parent] : NULL;

	*p = (struct trace_poll){
	    .start_ns = tp->start_ns,
	    .end_ns = tp->end_ns,
	    .pid = tp->pid,
	    .tid = tp->tid,
	    .future = nd->future >= 0 ? (uint32_t)nd->future : TRACE_NO_INDEX,
	    .poll = poll_of_future(c->m, nd->future),
	    .self = nd->addr,
	    .parent_poll = TRACE_NO_INDEX,
	    .depth = (uint16_t)(n - 1 - k),
	    .result = tp->completed ? POLL_READY
		      : tp->lost    ? POLL_TRUNCATED
				    : POLL_PENDING,
	    .await_index = -1,
	    .offcpu_ns = k == n - 1 ? tp->offcpu_ns : 0,
	    .task_self = t->nodes[0].addr,
	    .task_poll = poll_of_future(c->m, t->nodes[0].future),
	};
	if (pa) {
		p->parent_self = pa->addr;
		p->parent_poll = poll_of_future(c->m, pa->future);
	}
	if (p->result == POLL_PENDING)
		p->await_index = trace__await_index(c->m, nd->future, nd->discr);
}

/* The last " → " in s, NULL if none. */
static char *strrstr_arrow(char *s)
{
	char *last = NULL;

	for (char *p = strstr(s, " → "); p; p = strstr(p + 1, " → "))
		last = p;
	return last;
}

/*
 * The chain as one text, root first: "root (main.rs:93) → child (main.rs:40) →
 * leaf", each future where it is suspended; spelled once per distinct chain (the
 * consumer's stacks table, keyed by a hash of futures and awaits). NULL on ENOMEM.
 */
static const char *chain_text(struct trace_consumer *c, const struct task_tree *t,
			      const uint32_t *chain, uint32_t n, bool pending, uint64_t *id)
{
	char buf[8192], name[1024], at[512];
	uint64_t h = hash__mix64(n);
	const char *have;
	size_t len = 0;

	for (uint32_t k = 0; k < n; k++) {
		const struct task_tree_node *nd = &t->nodes[chain[k]];
		int32_t a = pending ? trace__await_index(c->m, nd->future, nd->discr) : -1;

		h = hash__mix64(h ^ ((uint64_t)(uint32_t)nd->future << 32 | (uint32_t)a));
	}
	*id = h == UINT64_MAX ? 0 : h;
	if ((have = text_table__get(&c->stacks, *id)))
		return have;
	buf[0] = '\0';
	for (uint32_t i = n; i-- > 0 && len < sizeof(buf);) {
		const struct task_tree_node *nd = &t->nodes[chain[i]];
		int32_t a = pending ? trace__await_index(c->m, nd->future, nd->discr) : -1;
		uint32_t f = nd->future >= 0 ? (uint32_t)nd->future : TRACE_NO_INDEX;
		int r;

		poll_text__name(c->m, f, poll_of_future(c->m, nd->future), name, sizeof(name));
		if (a >= 0 && poll_text__await(c->m, f, a, at, sizeof(at)))
			r = snprintf(buf + len, sizeof(buf) - len, "%s%s (%s)",
				     i + 1 < n ? " → " : "", name, at);
		else
			r = snprintf(buf + len, sizeof(buf) - len, "%s%s", i + 1 < n ? " → " : "",
				     name);
		len += r > 0 ? (size_t)r : 0;
	}
	if (len >= sizeof(buf)) { /* cut: at the last whole level, and said */
		char *cut = buf + sizeof(buf) - sizeof(" → …");

		*cut = '\0';
		/* an arrow is there: the root's name and await fit in 1.5 KiB */
		if ((cut = strrstr_arrow(buf)))
			strcpy(cut, " → …");
	}
	return text_table__add(&c->stacks, *id, buf);
}

/*
 * A task poll to the trace writers. Perfetto and Chrome: one slice, named by the
 * task's root future, its await chain (root to the deepest future of the tree it
 * ended with, or began with when it completed) as the slice's await_stack. Folded
 * stacks and the await graph: the chain, level by level, innermost first as a
 * thread's records come.
 */
static void task_poll_to_writers(struct trace_consumer *c, const struct task_poll *tp)
{
	const struct task_tree *t = tp->end && tp->end->nr ? tp->end : tp->start;
	uint32_t chain[TASK_TREE_MAX_NODES], n = 0, deepest = 0;
	struct trace_poll p;
	int r;

	if (!t || !t->nr)
		return;
	for (uint32_t i = 1; i < t->nr; i++)
		if (t->nodes[i].depth > t->nodes[deepest].depth)
			deepest = i;
	for (int32_t i = (int32_t)deepest; i >= 0 && n < TASK_TREE_MAX_NODES;
	     i = t->nodes[i].parent)
		chain[n++] = (uint32_t)i; /* innermost first */
	if (c->out.perfetto || c->out.chrome) {
		chain_poll(c, tp, t, chain, n, n - 1, &p);
		p.task_mode = 1;
		p.await_stack =
		    chain_text(c, t, chain, n, p.result == POLL_PENDING, &p.await_stack_id);
		if (!p.await_stack && !c->write_err)
			c->write_err = -ENOMEM;
		if (c->out.perfetto && (r = perfetto_writer__add_poll(c->out.perfetto, &p)) &&
		    !c->write_err)
			c->write_err = r;
		if (c->out.chrome && (r = chrome_trace__add_poll(c->out.chrome, &p)) &&
		    !c->write_err)
			c->write_err = r;
	}
	for (uint32_t k = 0; k < n && (c->out.folded || c->out.dot); k++) {
		chain_poll(c, tp, t, chain, n, k, &p);
		if (c->out.folded)
			trace_folded__add(c->out.folded, &p);
		if (c->out.dot && (r = trace_dot__add(c->out.dot, &p)) && !c->write_err)
			c->write_err = r;
	}
}

/* A task poll of task mode, with what its trees say: the outputs' (task_trees.h). */
static void on_task_poll(void *ctx, const struct task_poll *tp)
{
	struct trace_consumer *c = ctx;

	name_thread(c, tp->pid, tp->tid);
	trace_summary__add_task_poll(c->out.summary, tp);
	task_poll_to_writers(c, tp);
	if (!c->out.records)
		return;
	fprintf(c->out.records,
		"{\"task_poll\":{\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64 ",\"pid\":%" PRIu32
		",\"tid\":%" PRIu32 ",\"header\":%" PRIu64 ",\"type\":%" PRId64 ",\"root\":%" PRId32
		",\"completed\":%s,\"lost\":%s"
		",\"cut\":%s,\"nested\":%u,\"offcpu_ns\":%" PRIu64 ",\"futures\":[",
		tp->start_ns, tp->end_ns, tp->pid, tp->tid, tp->header,
		tp->info == UINT32_MAX ? (int64_t)-1 : (int64_t)tp->info, tp->root,
		tp->completed ? "true" : "false", tp->lost ? "true" : "false",
		tp->cut ? "true" : "false", (unsigned)tp->nested, tp->offcpu_ns);
	for (uint32_t i = 0; i < tp->nr_events; i++) {
		const struct task_future_event *e = &tp->events[i];

		fprintf(c->out.records,
			"%s{\"future\":%" PRId32 ",\"self\":%" PRIu64 ",\"depth\":%u"
			",\"started\":%s,\"fate\":\"%s\",\"await_index\":%" PRId32
			",\"state\":%" PRIu64 "}",
			i ? "," : "", e->future, e->addr, e->depth, e->started ? "true" : "false",
			fate_names[e->fate < 3 ? e->fate : 2], e->await_index, e->discr);
	}
	fputs("]}}\n", c->out.records);
}

static int handle_task_tree(struct trace_consumer *c, const void *data, size_t size)
{
	struct task_tree t;

	c->task_records++;
	if (task_tree__decode(data, size, &t)) {
		c->out.summary->bad_records++;
		return 0;
	}
	if (!c->locks_only && !c->tasks &&
	    !(c->tasks = task_trees__new(c->m, c->root_types, c->nr_root_types)))
		return 0;
	if (!c->locks && (c->locks = calloc(1, sizeof(*c->locks))) &&
	    lock_table__build(c->locks, c->m)) {
		free(c->locks);
		c->locks = NULL;
	}
	if (!c->locks) {
		/* no table (out of memory): its lock nodes still go, unread */
		struct lock_table none = {.m = c->m, .nr_pseudo = UINT32_MAX - c->m->nr_futures};

		task_locks__strip(&none, &t, NULL, 0);
	} else if (c->locks->nr_pseudo) {
		/* the lock nodes out of the tree before anything else reads it */
		struct lock_seen seen[TASK_LOCKS_SEEN];
		uint32_t n = task_locks__strip(c->locks, &t, seen, TASK_LOCKS_SEEN);

		/* a tree not read, cut, or of an unknown type says nothing sure of the
		 * task's locks: what was open stays open */
		if (t.phase == TASK_PHASE_END &&
		    !(t.flags & (TASK_TREE_NOT_READ | TASK_TREE_UNKNOWN_TYPE | TASK_TREE_CUT)) &&
		    summary_tasks__add_locks(c->out.summary, t.header,
					     t.nr ? t.nodes[0].future : -1, t.start_ns, t.end_ns,
					     (t.flags & TASK_TREE_GONE) != 0, seen, n))
			c->task_bad++;
	}
	if (c->locks_only) /* top --locks: its statistics are the kernel's */
		return 0;
	if (task_trees__add(c->tasks, &t, on_task_poll, c))
		c->task_bad++;
	return 0;
}

int trace_consumer__handle(void *ctx, void *data, size_t size)
{
	struct trace_consumer *c = ctx;
	struct trace_poll p;
	int r;

	if (size >= sizeof(__u32) && *(const __u32 *)data == RECORD_TASK_TREE)
		return handle_task_tree(c, data, size);
	if (size >= sizeof(__u32) && *(const __u32 *)data == RECORD_BLOCK)
		return handle_block(c, data, size);
	if (size >= sizeof(__u32) && *(const __u32 *)data == RECORD_DROP)
		return handle_drop(c, data, size);
	if (size >= sizeof(__u32) && *(const __u32 *)data == RECORD_WAKE) {
		struct trace_wake w;

		if (trace_wake__decode(data, size, &w)) {
			c->out.summary->bad_records++;
		} else {
			if (!w.woken_self && w.header && w.runtime != TASK_RT_STD_WAKE &&
			    c->resolve)
				c->resolve(c->resolve_ctx, w.runtime, w.header, w.vtable,
					   &w.woken_self);
			trace_summary__add_wake(c->out.summary, &w);
		}
		return 0;
	}
	if (trace_record__decode(data, size, c->m, &p)) {
		c->out.summary->bad_records++;
		return 0;
	}
	name_thread(c, p.pid, p.tid);
	if (c->tally)
		p.probe_ns = probe_tally__add(c->tally, &p);
	if (c->out.records)
		fprintf(c->out.records,
			"{\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64 ",\"pid\":%" PRIu32
			",\"tid\":%" PRIu32 ",\"poll\":%" PRIu32 ",\"future\":%" PRId64
			",\"self\":%" PRIu64 ",\"parent_self\":%" PRIu64 ",\"parent_poll\":%" PRId64
			",\"task_self\":%" PRIu64 ",\"task_poll\":%" PRIu32 ",\"depth\":%u"
			",\"result\":%d,\"unknown_reason\":%u,\"await_index\":%" PRId32
			",\"state_before\":%" PRIu64 ",\"state_after\":%" PRIu64
			",\"probe_ns\":%" PRIu64 ",\"offcpu_ns\":%" PRIu64 "}\n",
			p.start_ns, p.end_ns, p.pid, p.tid, p.poll,
			p.future == TRACE_NO_INDEX ? (int64_t)-1 : (int64_t)p.future, p.self,
			p.parent_self,
			p.parent_poll == TRACE_NO_INDEX ? (int64_t)-1 : (int64_t)p.parent_poll,
			p.task_self, p.task_poll, (unsigned)p.depth, (int)p.result,
			(unsigned)p.unknown_reason, p.await_index, p.state_before, p.state_after,
			p.probe_ns, p.offcpu_ns);
	/* a task poll that a traced wake led to: an arrow from the wake to it */
	struct trace_wake w;
	if ((p.wake_flow = summary_wake__poll(c->out.summary, &p, &w))) {
		if (c->out.perfetto &&
		    (r = perfetto_writer__add_wake(c->out.perfetto, &w, p.wake_flow)) &&
		    !c->write_err)
			c->write_err = r;
		if (c->out.chrome && (r = chrome_trace__add_wake(c->out.chrome, &w, p.wake_flow)) &&
		    !c->write_err)
			c->write_err = r;
	}
	trace_summary__add(c->out.summary, &p);
	if (c->out.perfetto && (r = perfetto_writer__add_poll(c->out.perfetto, &p)) &&
	    !c->write_err)
		c->write_err = r;
	if (c->out.chrome && (r = chrome_trace__add_poll(c->out.chrome, &p)) && !c->write_err)
		c->write_err = r;
	/* folded: a poll it cannot keep is counted there (trace_folded__dropped) */
	if (c->out.folded)
		trace_folded__add(c->out.folded, &p);
	if (c->out.dot && (r = trace_dot__add(c->out.dot, &p)) && !c->write_err)
		c->write_err = r;
	return 0;
}

void trace_consumer__free(struct trace_consumer *c)
{
	if (!c)
		return;
	u64_map__free(&c->threads);
	probe_tally__free(c->tally);
	task_trees__free(c->tasks);
	text_table__free(&c->stacks);
	if (c->locks)
		lock_table__free(c->locks);
	free(c->locks);
	free(c);
}
