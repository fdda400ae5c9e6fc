// SPDX-License-Identifier: GPL-2.0
/*
 * Resources and deadlocks (resources.h). Everything read from the target is
 * untrusted: a pointer that cannot be read leaves the guard out (counted), a lock is
 * held only when its own state says so, and a cycle is reported only through edges
 * that are each backed by memory: a task queued on a lock (its Acquire), the lock
 * without a permit left, and exactly one task whose guard points at it.
 */
#include "stacks/resources.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hashmap.h"
#include "lib/text.h"
#include "stacks/report.h"

struct builder {
	struct res_report *r;
	const struct model *m;
	stacks_read_fn read;
	void *ctx;
	struct u64_map by_key;	 /* a lock's key -> resource index */
	struct u64_map awaitees; /* (future, state) -> 1 + the waiting future it awaits, or 0 */
	uint32_t cap_holds, cap_waits, cap_res;
};

static bool read_u64(const struct builder *b, uint64_t addr, uint64_t *v)
{
	return !b->read(b->ctx, addr, v, sizeof(*v));
}

static int grow(void **p, uint32_t *cap, uint32_t nr, size_t size)
{
	void *q;

	if (nr < *cap)
		return 0;
	q = realloc(*p, (size_t)(*cap ? *cap * 2 : 8) * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = *cap ? *cap * 2 : 8;
	return 0;
}

/*
 * The resource whose key is at key, added at its first sight with its state: tokio
 * 1.x's batch semaphore keeps its available permits shifted left by one, bit 0 saying
 * closed (tokio/src/sync/batch_semaphore.rs, PERMIT_SHIFT); async-lock's Mutex sets
 * bit 0 of its state while locked, the other bits counting starved lock operations
 * (async-lock/src/mutex.rs). Where those words are comes from the DWARF. RES_NONE
 * when out of memory.
 */
static uint32_t resource_at(struct builder *b, uint64_t key, uint8_t family, uint64_t state_offset)
{
	struct res_report *r = b->r;
	struct resource *x;
	uint64_t i, v;

	if (u64_map__get(&b->by_key, key, &i))
		return (uint32_t)i;
	if (grow((void **)&r->res, &b->cap_res, r->nr_res, sizeof(*r->res)) ||
	    u64_map__set(&b->by_key, key, r->nr_res))
		return RES_NONE;
	x = &r->res[r->nr_res];
	*x = (struct resource){.key = key, .family = family, .kind = GUARD_OTHER};
	if (family != LOCK_NONE && read_u64(b, key + state_offset, &v)) {
		x->read = true;
		if (family == LOCK_TOKIO) {
			x->available = v >> 1;
			x->locked = x->available == 0;
		} else {
			x->locked = v & 1;
		}
	}
	return r->nr_res++;
}

/* Where the way of steps leads from addr (0 when a pointer on it cannot be read). */
static uint64_t follow_steps(const struct builder *b, const struct await_step *steps, uint32_t n,
			     uint64_t addr)
{
	uint64_t cur = addr;

	for (uint32_t k = 0; k < n && k < GUARD_STEPS; k++) {
		cur += steps[k].offset;
		if (steps[k].deref && (!read_u64(b, cur, &cur) || !cur))
			return 0;
	}
	return cur;
}

static const struct future_state *state_of(const struct model *m, const struct stack_frame *f)
{
	const struct future *fut;

	if (f->state != FRAME_SUSPENDED || f->future < 0 || (uint32_t)f->future >= m->nr_futures)
		return NULL;
	fut = &m->futures[f->future];
	for (uint32_t i = 0; i < fut->nr_states; i++)
		if (fut->states[i].discr == f->discr)
			return &fut->states[i];
	return NULL;
}

static int add_holds(struct builder *b, uint32_t task, const struct task_stack *s)
{
	struct res_report *r = b->r;

	for (uint32_t k = 0; k < s->nr; k++) {
		const struct future_state *st = state_of(b->m, &s->frames[k]);

		for (uint32_t j = 0; st && j < st->nr_held; j++) {
			const struct held_guard *g = &st->held[j];
			struct res_hold *h;
			uint64_t key;

			if (grow((void **)&r->holds, &b->cap_holds, r->nr_holds, sizeof(*r->holds)))
				return -ENOMEM;
			h = &r->holds[r->nr_holds++];
			*h = (struct res_hold){.task = task,
					       .frame = k,
					       .guard = g,
					       .addr = s->frames[k].addr + g->offset,
					       .resource = RES_NONE};
			if (g->family == LOCK_NONE ||
			    !(key = follow_steps(b, g->steps, g->nr_steps, h->addr))) {
				r->unread++;
				continue;
			}
			h->resource = resource_at(b, key, g->family, g->state_offset);
			if (h->resource == RES_NONE)
				return -ENOMEM;
			struct resource *x = &r->res[h->resource];
			if (g->resource && !x->type) {
				x->type = g->resource;
				x->lock = key - g->resource_back;
			}
			if (x->kind == GUARD_OTHER || g->lock == GUARD_EXCLUSIVE)
				x->kind = g->lock;
			h->held = g->lock == GUARD_EXCLUSIVE && x->read && x->locked;
		}
	}
	return 0;
}

/* The task whose header is at header, or RES_NONE. */
static uint32_t task_of_header(const struct stk_task *tasks, uint32_t nr, uint64_t header)
{
	for (uint32_t i = 0; header && i < nr; i++)
		if (tasks[i].root.header == header && !tasks[i].inner)
			return i;
	return RES_NONE;
}

/*
 * The waiting future frame f awaits at its await, if its __awaitee is one: a wrapper
 * such as async-channel's Recv is passed over by the stack (its listener is what it
 * polls), so the state's awaitee type says it. NULL if none (or out of memory: the
 * wait is not seen).
 */
static const struct future *awaitee_wait(struct builder *b, const struct stack_frame *f,
					 uint64_t *at)
{
	const struct future_state *st = state_of(b->m, f);
	uint64_t key, v;

	if (!st || !st->awaitee_type || st->awaitee_offset == FUTURE_NO_OFFSET)
		return NULL;
	key =
	    (uint64_t)(uint32_t)f->future << 32 | (uint32_t)(st - b->m->futures[f->future].states);
	if (!u64_map__get(&b->awaitees, key, &v)) {
		v = 0;
		for (uint32_t i = 0; i < b->m->nr_futures && !v; i++)
			if (b->m->futures[i].wait_kind != WAIT_NONE && b->m->futures[i].path &&
			    !strcmp(b->m->futures[i].path, st->awaitee_type))
				v = i + 1;
		if (u64_map__set(&b->awaitees, key, v))
			return NULL;
	}
	*at = f->addr + st->awaitee_offset;
	return v ? &b->m->futures[v - 1] : NULL;
}

/* The innermost frame a task waits in (future.wait_kind), if any: a lock, a task it
 * joins, a channel or a Notify; or the waiting future a frame awaits. */
static int add_wait(struct builder *b, const struct stk_task *tasks, uint32_t nr, uint32_t task)
{
	const struct task_stack *s = &tasks[task].stack;
	struct res_report *r = b->r;
	const struct stack_frame *f = NULL;
	const struct future *fut = NULL;
	struct res_wait *w;
	uint64_t key, at = 0;
	uint8_t queued = 1;
	uint32_t k;

	for (k = s->nr; k-- > 0 && !fut;) {
		f = &s->frames[k];
		if (f->future < 0 || (uint32_t)f->future >= b->m->nr_futures)
			continue;
		if (b->m->futures[f->future].wait_kind != WAIT_NONE) {
			fut = &b->m->futures[f->future];
			at = f->addr;
		} else {
			fut = awaitee_wait(b, f, &at);
		}
		if (fut)
			break;
	}
	if (!fut || !(key = follow_steps(b, fut->wait_steps, fut->wait_nr_steps, at)))
		return 0;
	if (fut->wait_kind == WAIT_LOCK && fut->wait_queued != FUTURE_NO_OFFSET &&
	    b->read(b->ctx, at + fut->wait_queued, &queued, 1))
		return 0;
	if (grow((void **)&r->waits, &b->cap_waits, r->nr_waits, sizeof(*r->waits)))
		return -ENOMEM;
	w = &r->waits[r->nr_waits];
	*w = (struct res_wait){.task = task,
			       .frame = k,
			       .kind = fut->wait_kind,
			       .resource = RES_NONE,
			       .joins = RES_NONE,
			       .queued = queued == 1};
	if (fut->wait_kind == WAIT_JOIN) {
		w->joins = task_of_header(tasks, nr, key);
		r->nr_waits++;
		return 0;
	}
	w->resource = resource_at(
	    b, key, fut->wait_kind == WAIT_LOCK ? fut->wait_family : LOCK_NONE, fut->wait_state);
	if (w->resource == RES_NONE)
		return -ENOMEM;
	struct resource *x = &r->res[w->resource];
	x->wait_kind = fut->wait_kind;
	if (fut->wait_type && !x->type) {
		x->type = fut->wait_type;
		x->lock = key;
	}
	if (!x->via)
		x->via = fut;
	r->nr_waits++;
	return 0;
}

/* A task that can go on by itself: running now, or woken and in a run queue. */
static bool can_progress(const struct stk_task *t)
{
	return t->root.runtime != TASK_RT_DYN && (t->root.st.running || t->root.st.scheduled);
}

/* Exclusive locks two tasks' guards point at: neither claim stands. */
static void mark_ambiguous(struct res_report *r)
{
	for (uint32_t i = 0; i < r->nr_holds; i++) {
		struct res_hold *h = &r->holds[i];

		if (!h->held)
			continue;
		for (uint32_t j = 0; j < r->nr_holds; j++)
			if (r->holds[j].held && r->holds[j].resource == h->resource &&
			    r->holds[j].task != h->task)
				h->ambiguous = true;
	}
	for (uint32_t i = 0; i < r->nr_holds; i++) {
		struct res_hold *h = &r->holds[i];

		if (h->ambiguous)
			h->held = false;
		if (h->held)
			r->res[h->resource].holders++;
	}
	for (uint32_t i = 0; i < r->nr_waits; i++)
		if (r->waits[i].queued && r->waits[i].resource != RES_NONE)
			r->res[r->waits[i].resource].waiters++;
}

/* The task holding resource x (one verified guard), or RES_NONE. */
static uint32_t holder_of(const struct res_report *r, uint32_t x)
{
	for (uint32_t i = 0; i < r->nr_holds; i++)
		if (r->holds[i].held && r->holds[i].resource == x)
			return r->holds[i].task;
	return RES_NONE;
}

/* The cycle through task t of the wait-for graph (next, via) as a deadlock. */
static int add_cycle(struct res_report *r, const uint32_t *next, const uint32_t *via, uint32_t t)
{
	uint32_t n = 0, first = 0, c = t, *ct, *cr;
	struct res_deadlock *dl;

	do {
		n++;
		c = next[c];
	} while (c != t);
	for (uint32_t d = 0; d < r->nr_deadlocks; d++)
		first += r->deadlocks[d].nr;
	if ((ct = realloc(r->cycle_task, (first + n) * sizeof(*ct))))
		r->cycle_task = ct;
	if ((cr = realloc(r->cycle_res, (first + n) * sizeof(*cr))))
		r->cycle_res = cr;
	if ((dl = realloc(r->deadlocks, (r->nr_deadlocks + 1) * sizeof(*dl))))
		r->deadlocks = dl;
	if (!ct || !cr || !dl)
		return -ENOMEM;
	for (uint32_t k = 0; k < n; k++, c = next[c]) {
		r->cycle_task[first + k] = c;
		r->cycle_res[first + k] = via[c];
	}
	r->deadlocks[r->nr_deadlocks++] = (struct res_deadlock){first, n};
	return 0;
}

/*
 * The wait-for graph: a parked task queued on a lock -> the parked task holding it.
 * Each task waits for one lock and an exclusive lock has one holder, so each task has
 * at most one edge out and every cycle is found by following them.
 */
static int find_cycles(struct res_report *r, const struct stk_task *tasks, uint32_t nr)
{
	uint32_t *next = malloc((nr ? nr : 1) * sizeof(*next)),
		 *via = malloc((nr ? nr : 1) * sizeof(*via));
	uint8_t *color = calloc(nr ? nr : 1, 1);
	int e = 0;

	if (!next || !via || !color) {
		e = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < nr; i++)
		next[i] = via[i] = RES_NONE;
	for (uint32_t i = 0; i < r->nr_waits; i++) {
		const struct res_wait *w = &r->waits[i];
		/* a join: the task joined, unless it has finished */
		uint32_t h = w->resource != RES_NONE ? holder_of(r, w->resource)
			     : w->joins != RES_NONE && !tasks[w->joins].root.st.complete ? w->joins
											 : RES_NONE;

		if (!w->queued || h == RES_NONE || can_progress(&tasks[w->task]))
			continue;
		if (h == w->task) {
			r->self_waits++;
			continue;
		}
		if (can_progress(&tasks[h]))
			continue;
		next[w->task] = h;
		via[w->task] = w->resource;
	}
	for (uint32_t i = 0; i < nr && !e; i++) {
		uint32_t t = i;

		while (t != RES_NONE && color[t] == 0) {
			color[t] = 1;
			t = next[t];
		}
		if (t != RES_NONE && color[t] == 1) /* a cycle through t, new */
			e = add_cycle(r, next, via, t);
		for (t = i; t != RES_NONE && color[t] == 1; t = next[t])
			color[t] = 2;
	}
out:
	free(next);
	free(via);
	free(color);
	return e;
}

int resources__build(struct res_report *r, const struct model *m, const struct stk_task *tasks,
		     uint32_t nr, stacks_read_fn read, void *ctx)
{
	struct builder b = {.r = r, .m = m, .read = read, .ctx = ctx};
	int e = 0;

	memset(r, 0, sizeof(*r));
	u64_map__init(&b.by_key);
	u64_map__init(&b.awaitees);
	for (uint32_t i = 0; i < nr && !e; i++) {
		if (tasks[i].inner)
			continue;
		if (!(e = add_holds(&b, i, &tasks[i].stack)))
			e = add_wait(&b, tasks, nr, i);
	}
	u64_map__free(&b.by_key);
	u64_map__free(&b.awaitees);
	if (!e) {
		mark_ambiguous(r);
		e = find_cycles(r, tasks, nr);
	}
	if (e)
		resources__free(r);
	return e;
}

void resources__free(struct res_report *r)
{
	free(r->holds);
	free(r->waits);
	free(r->res);
	free(r->deadlocks);
	free(r->cycle_task);
	free(r->cycle_res);
	memset(r, 0, sizeof(*r));
}

/* ---- views ---- */

/* Where a task waits or keeps a guard, for people: the deepest frame of the program's
 * own at or above frame `upto` that is parked at an await, else the deepest one. */
static const struct stack_frame *where(const struct model *m, const struct task_stack *s,
				       uint32_t upto)
{
	const struct stack_frame *any = NULL;

	for (uint32_t k = upto + 1; k-- > 0;) {
		const struct stack_frame *f = &s->frames[k];

		if (k >= s->nr || f->state != FRAME_SUSPENDED || !f->file)
			continue;
		if (f->future >= 0 && (uint32_t)f->future < m->nr_futures &&
		    m->futures[f->future].crate_class == CRATE_USER)
			return f;
		if (!any)
			any = f;
	}
	return any;
}

static void frame_label(const struct model *m, const struct stack_frame *f, char *buf, size_t len)
{
	char name[512];

	if (f && f->future >= 0 && (uint32_t)f->future < m->nr_futures)
		future__display_name(&m->futures[f->future], name, sizeof(name));
	else
		snprintf(name, sizeof(name), "?");
	rust__abbreviate(name, buf, len, 80);
}

static void task_name(const struct model *m, const struct stk_task *t, char *buf, size_t len)
{
	frame_label(m, t->stack.nr ? &t->stack.frames[stk_stack__first_shown(m, &t->stack)] : NULL,
		    buf, len);
}

static void print_at(FILE *out, const struct stack_frame *f)
{
	if (f)
		fprintf(out, "%s:%u", path__short(f->file), f->line);
	else
		fputs("?", out);
}

static void print_lock(FILE *out, const struct model *m, const struct resource *x)
{
	char type[256];

	if (x->type) {
		rust__abbreviate(x->type, type, sizeof(type), 80);
		fprintf(out, "%s at 0x%" PRIx64, type, x->lock);
		return;
	}
	/* tokio's semaphore with no guard found to name its lock: what waits on it */
	fprintf(out, "the semaphore at 0x%" PRIx64, x->key);
	if (x->via) {
		char name[512];

		future__display_name(x->via, name, sizeof(name));
		rust__abbreviate(name, type, sizeof(type), 80);
		fprintf(out, " (awaited in %s)", type);
	}
	(void)m;
}

/* The other resources with waiters, most waited on first (ties: first seen). */
static int cmp_waiters(const void *a, const void *b, void *ctx)
{
	const struct resource *res = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (res[x].waiters != res[y].waiters)
		return res[x].waiters > res[y].waiters ? -1 : 1;
	return x < y ? -1 : x > y;
}

#define TEXT_MAX_OTHERS	 10
#define TEXT_MAX_WAITERS 3

static void print_others(FILE *out, const struct stk_snapshot *s, const struct model *m,
			 const char *bold, const char *off)
{
	const struct res_report *r = &s->res;
	uint32_t *order = malloc((r->nr_res ? r->nr_res : 1) * sizeof(*order)), n = 0;
	char name[256];

	if (!order)
		return;
	for (uint32_t i = 0; i < r->nr_res; i++)
		if (r->res[i].family == LOCK_NONE && r->res[i].waiters)
			order[n++] = i;
	qsort_r(order, n, sizeof(*order), cmp_waiters, r->res);
	if (n)
		fprintf(out, "\n%sChannels and notifications parked tasks wait on%s\n", bold, off);
	for (uint32_t j = 0; j < n && j < TEXT_MAX_OTHERS; j++) {
		const struct resource *x = &r->res[order[j]];
		uint32_t listed = 0;

		fputs("  ", out);
		print_lock(out, m, x);
		fprintf(out, ": %u waiting", x->waiters);
		for (uint32_t k = 0; k < r->nr_waits && listed <= TEXT_MAX_WAITERS; k++) {
			const struct res_wait *w = &r->waits[k];

			if (w->resource != order[j])
				continue;
			if (listed++ == TEXT_MAX_WAITERS) {
				fputs(", ...", out);
				break;
			}
			task_name(m, &s->tasks[w->task], name, sizeof(name));
			fprintf(out, "%s task %u %s at ", listed == 1 ? ":" : ",", w->task, name);
			print_at(out, where(m, &s->tasks[w->task].stack, w->frame));
		}
		fputs("\n", out);
	}
	if (n > TEXT_MAX_OTHERS)
		fprintf(out, "  ... and %u more (--json lists them all)\n", n - TEXT_MAX_OTHERS);
	free(order);
}

/* "task 3 tokio_mt::dead_a (its g1 in tokio_mt::dead_a, kept across main.rs:233)" */
static void print_holder(FILE *out, const struct stk_snapshot *s, const struct model *m,
			 const struct res_hold *h)
{
	const struct stk_task *t = &s->tasks[h->task];
	char name[256], owner[256];

	task_name(m, t, name, sizeof(name));
	frame_label(m, &t->stack.frames[h->frame], owner, sizeof(owner));
	fprintf(out, "task %u %s (its %s in %s, kept across ", h->task, name, h->guard->name,
		owner);
	print_at(out, &t->stack.frames[h->frame]);
	fputs(")", out);
}

static const struct res_hold *hold_of(const struct res_report *r, uint32_t task, uint32_t x)
{
	for (uint32_t i = 0; i < r->nr_holds; i++)
		if (r->holds[i].held && r->holds[i].task == task && r->holds[i].resource == x)
			return &r->holds[i];
	return NULL;
}

static const struct res_wait *wait_of(const struct res_report *r, uint32_t task)
{
	for (uint32_t i = 0; i < r->nr_waits; i++)
		if (r->waits[i].task == task)
			return &r->waits[i];
	return NULL;
}

/* --watch: how long every task of the cycle has stood as it is */
static double standing_s(const struct stk_snapshot *s, const struct res_deadlock *d)
{
	double least = -1;

	for (uint32_t k = 0; k < d->nr; k++) {
		double u = s->tasks[s->res.cycle_task[d->first + k]].unchanged_s;

		if (least < 0 || u < least)
			least = u;
	}
	return least < 0 ? 0 : least;
}

void resources__text(FILE *out, const struct stk_snapshot *s, const struct model *m, bool color)
{
	const struct res_report *r = &s->res;
	const char *red = color ? "\033[1;31m" : "", *bold = color ? "\033[1m" : "",
		   *off = color ? "\033[0m" : "";
	char name[256];
	uint32_t shown = 0;

	for (uint32_t d = 0; d < r->nr_deadlocks; d++) {
		const struct res_deadlock *dl = &r->deadlocks[d];

		fprintf(out, "\n%sDEADLOCK%s: %u tasks wait for each other", red, off, dl->nr);
		if (s->watching)
			fprintf(out, "   unchanged for >= %.0f s", standing_s(s, dl));
		fputs("\n", out);
		for (uint32_t k = 0; k < dl->nr; k++) {
			uint32_t t = r->cycle_task[dl->first + k], x = r->cycle_res[dl->first + k],
				 h = r->cycle_task[dl->first + (k + 1) % dl->nr];
			const struct res_wait *w = wait_of(r, t);
			const struct res_hold *hh = x != RES_NONE ? hold_of(r, h, x) : NULL;

			task_name(m, &s->tasks[t], name, sizeof(name));
			fprintf(out, "  task %u %s at ", t, name);
			print_at(out, w ? where(m, &s->tasks[t].stack, w->frame) : NULL);
			if (x == RES_NONE) {
				task_name(m, &s->tasks[h], name, sizeof(name));
				fprintf(out, " waits for task %u %s to finish (joins it)\n", h,
					name);
				continue;
			}
			fputs(" waits for ", out);
			print_lock(out, m, &r->res[x]);
			fputs("\n    held by ", out);
			if (hh)
				print_holder(out, s, m, hh);
			fputs("\n", out);
		}
	}
	for (uint32_t i = 0; i < r->nr_res; i++) {
		const struct resource *x = &r->res[i];

		if (x->family == LOCK_NONE || (!x->holders && !x->waiters))
			continue;
		if (!shown++)
			fprintf(out, "\n%sLocks held or awaited by parked tasks%s\n", bold, off);
		fputs("  ", out);
		print_lock(out, m, x);
		if (x->read)
			fprintf(out, ": %s, %u waiting\n", x->locked ? "locked" : "not locked",
				x->waiters);
		else
			fprintf(out, ": its state unreadable, %u waiting\n", x->waiters);
		for (uint32_t k = 0; k < r->nr_holds; k++)
			if (r->holds[k].held && r->holds[k].resource == i) {
				fputs("    held by ", out);
				print_holder(out, s, m, &r->holds[k]);
				fputs("\n", out);
			}
		for (uint32_t k = 0; k < r->nr_waits; k++) {
			const struct res_wait *w = &r->waits[k];

			if (w->resource != i || !w->queued)
				continue;
			task_name(m, &s->tasks[w->task], name, sizeof(name));
			fprintf(out, "    waited for by task %u %s at ", w->task, name);
			print_at(out, where(m, &s->tasks[w->task].stack, w->frame));
			fputs("\n", out);
		}
	}
	if (r->self_waits)
		fprintf(out,
			"  %u task%s wait%s for a lock that a guard slot of its own points at: a "
			"guard reassigned by that very await, or a task locking twice (not "
			"told apart: not called a deadlock)\n",
			r->self_waits, r->self_waits == 1 ? "" : "s",
			r->self_waits == 1 ? "s" : "");
	print_others(out, s, m, bold, off);
}

static cJSON *where_json(cJSON *o, const struct stack_frame *f)
{
	if (f && f->file) {
		cJSON_AddStringToObject(o, "file", f->file);
		cJSON_AddNumberToObject(o, "line", f->line);
	} else {
		cJSON_AddNullToObject(o, "file");
		cJSON_AddNullToObject(o, "line");
	}
	return o;
}

static const char *kind_name(uint8_t k)
{
	switch (k) {
	case GUARD_EXCLUSIVE: return "exclusive";
	case GUARD_SHARED: return "shared";
	case GUARD_PERMITS: return "permits";
	default: return "unknown";
	}
}

static cJSON *hold_json(const struct stk_snapshot *s, const struct model *m,
			const struct res_hold *h)
{
	const struct stk_task *t = &s->tasks[h->task];
	cJSON *o = cJSON_CreateObject();
	char name[512];

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "task", h->task);
	if (h->resource != RES_NONE)
		cJSON_AddNumberToObject(o, "resource", h->resource);
	else
		cJSON_AddNullToObject(o, "resource");
	cJSON_AddStringToObject(o, "guard", h->guard->name);
	cJSON_AddStringToObject(o, "guard_type", h->guard->type);
	frame_label(m, &t->stack.frames[h->frame], name, sizeof(name));
	cJSON_AddStringToObject(o, "frame", name);
	cJSON_AddNumberToObject(o, "frame_index", h->frame);
	where_json(o, &t->stack.frames[h->frame]);
	cJSON_AddBoolToObject(o, "held", h->held);
	cJSON_AddBoolToObject(o, "ambiguous", h->ambiguous);
	return o;
}

static cJSON *wait_json(const struct stk_snapshot *s, const struct model *m,
			const struct res_wait *w)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "task", w->task);
	cJSON_AddStringToObject(o, "what", wait_kind__name(w->kind));
	if (w->resource != RES_NONE)
		cJSON_AddNumberToObject(o, "resource", w->resource);
	else
		cJSON_AddNullToObject(o, "resource");
	if (w->joins != RES_NONE)
		cJSON_AddNumberToObject(o, "joins", w->joins);
	else
		cJSON_AddNullToObject(o, "joins");
	cJSON_AddBoolToObject(o, "queued", w->queued);
	return where_json(o, where(m, &s->tasks[w->task].stack, w->frame));
}

void resources__json(cJSON *root, const struct stk_snapshot *s, const struct model *m)
{
	const struct res_report *r = &s->res;
	cJSON *res = cJSON_AddArrayToObject(root, "resources"),
	      *dls = cJSON_AddArrayToObject(root, "deadlocks");

	for (uint32_t i = 0; res && i < r->nr_res; i++) {
		const struct resource *x = &r->res[i];
		cJSON *o = cJSON_CreateObject(), *hs, *ws;

		if (!o)
			break;
		cJSON_AddNumberToObject(o, "id", i);
		if (x->type) {
			cJSON_AddStringToObject(o, "type", x->type);
			cJSON_AddNumberToObject(o, "addr", (double)x->lock);
		} else {
			cJSON_AddNullToObject(o, "type");
			cJSON_AddNullToObject(o, "addr");
		}
		cJSON_AddNumberToObject(o, "key", (double)x->key);
		cJSON_AddStringToObject(
		    o, "what", x->family != LOCK_NONE ? "lock" : wait_kind__name(x->wait_kind));
		cJSON_AddStringToObject(o, "family", lock_family__name(x->family));
		cJSON_AddStringToObject(o, "kind", kind_name(x->kind));
		if (x->read) {
			cJSON_AddBoolToObject(o, "locked", x->locked);
			if (x->family == LOCK_TOKIO)
				cJSON_AddNumberToObject(o, "available_permits",
							(double)x->available);
			else
				cJSON_AddNullToObject(o, "available_permits");
		} else {
			cJSON_AddNullToObject(o, "locked");
			cJSON_AddNullToObject(o, "available_permits");
		}
		hs = cJSON_AddArrayToObject(o, "holders");
		for (uint32_t k = 0; hs && k < r->nr_holds; k++)
			if (r->holds[k].resource == i)
				cJSON_AddItemToArray(hs, hold_json(s, m, &r->holds[k]));
		ws = cJSON_AddArrayToObject(o, "waiters");
		for (uint32_t k = 0; ws && k < r->nr_waits; k++)
			if (r->waits[k].resource == i)
				cJSON_AddItemToArray(ws, wait_json(s, m, &r->waits[k]));
		cJSON_AddItemToArray(res, o);
	}
	for (uint32_t d = 0; dls && d < r->nr_deadlocks; d++) {
		const struct res_deadlock *dl = &r->deadlocks[d];
		cJSON *o = cJSON_CreateObject(), *edges;

		if (!o)
			break;
		cJSON_AddNumberToObject(o, "unchanged_s", standing_s(s, dl));
		edges = cJSON_AddArrayToObject(o, "edges");
		for (uint32_t k = 0; edges && k < dl->nr; k++) {
			uint32_t t = r->cycle_task[dl->first + k], x = r->cycle_res[dl->first + k],
				 h = r->cycle_task[dl->first + (k + 1) % dl->nr];
			const struct res_wait *w = wait_of(r, t);
			const struct res_hold *hh = x != RES_NONE ? hold_of(r, h, x) : NULL;
			cJSON *e = w ? wait_json(s, m, w) : NULL;

			if (!e)
				break;
			if (x == RES_NONE)
				cJSON_AddNullToObject(e, "held_by");
			else
				cJSON_AddNumberToObject(e, "held_by", h);
			if (hh)
				cJSON_AddItemToObject(e, "holder", hold_json(s, m, hh));
			cJSON_AddItemToArray(edges, e);
		}
		cJSON_AddItemToArray(dls, o);
	}
	cJSON_AddNumberToObject(root, "self_waits", r->self_waits);
	cJSON_AddNumberToObject(root, "guards_unread", r->unread);
}

void resources__task_json(cJSON *task, const struct stk_snapshot *s, const struct model *m,
			  uint32_t id)
{
	const struct res_report *r = &s->res;
	const struct res_wait *w = wait_of(r, id);
	cJSON *holds = cJSON_AddArrayToObject(task, "holds");

	for (uint32_t k = 0; holds && k < r->nr_holds; k++)
		if (r->holds[k].task == id)
			cJSON_AddItemToArray(holds, hold_json(s, m, &r->holds[k]));
	if (w && w->queued)
		cJSON_AddItemToObject(task, "waits_on", wait_json(s, m, w));
	else
		cJSON_AddNullToObject(task, "waits_on");
}

/* A name in a folded line: no ';' (the separator) and no newline. */
static void folded_name(FILE *out, const char *s)
{
	for (; *s; s++)
		fputc(*s == ';' || *s == '\n' ? ' ' : *s, out);
}

void resources__folded(FILE *out, const struct stk_snapshot *s, const struct model *m,
		       uint32_t task)
{
	const struct res_report *r = &s->res;
	char name[256];

	(void)m;
	for (uint32_t d = 0; d < r->nr_deadlocks; d++) {
		const struct res_deadlock *dl = &r->deadlocks[d];

		for (uint32_t k = 0; k < dl->nr; k++) {
			uint32_t x = r->cycle_res[dl->first + k];

			if (r->cycle_task[dl->first + k] != task)
				continue;
			fputs(";[deadlock: waits for ", out);
			if (x == RES_NONE) {
				fprintf(out, "task %u to finish]",
					r->cycle_task[dl->first + (k + 1) % dl->nr]);
				return;
			}
			if (r->res[x].type) {
				rust__abbreviate(r->res[x].type, name, sizeof(name), 80);
				folded_name(out, name);
				fprintf(out, " at 0x%" PRIx64, r->res[x].lock);
			} else {
				fprintf(out, "the lock of semaphore 0x%" PRIx64, r->res[x].key);
			}
			fprintf(out, " held by task %u]",
				r->cycle_task[dl->first + (k + 1) % dl->nr]);
			return;
		}
	}
}
