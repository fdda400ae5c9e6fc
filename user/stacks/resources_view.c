// SPDX-License-Identifier: GPL-2.0
/*
 * The views of resources.c's report (resources.h): the deadlocks and locks in the
 * text, `resources` / `deadlocks` and each task's `holds` / `waits_on` in the JSON,
 * a deadlocked task's folded line.
 */
#include "stacks/resources.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/text.h"
#include "stacks/report.h"

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
	frame_label(m, t->stack.nr ? &t->stack.frames[stacks__first_shown(m, &t->stack)] : NULL,
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

/* The k-th hold (which 0) or wait (which 1) of resource x. */
static uint32_t ref_of(const struct res_report *r, const struct resource *x, int which, uint32_t k)
{
	return (which ? r->by_res_waits : r->by_res_holds)[x->first_ref[which] + k];
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
#define TEXT_MAX_LOCKS	 20
#define TEXT_MAX_BEHIND	 5 /* tasks behind a deadlock listed in the text */
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
		for (uint32_t k = 0; k < x->nr_refs[1] && listed <= TEXT_MAX_WAITERS; k++) {
			const struct res_wait *w = &r->waits[ref_of(r, x, 1, k)];

			if (!w->queued)
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

/*
 * The first of n elements of `size` bytes from base whose task is at least `task`:
 * holds and waits are in task order (resources.c adds them task by task) and both
 * begin with their task, so one binary search serves both.
 */
static uint32_t first_of_task(const void *base, size_t size, uint32_t n, uint32_t task)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2, t;

		memcpy(&t, (const char *)base + (size_t)mid * size, sizeof(t));
		if (t < task)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint32_t first_hold(const struct res_report *r, uint32_t task)
{
	return first_of_task(r->holds, sizeof(*r->holds), r->nr_holds, task);
}

/* Task's hold of lock x: the one proven, or (a lock held in part) its guard slot. */
static const struct res_hold *hold_of(const struct res_report *r, uint32_t task, uint32_t x)
{
	bool claimed = resources__claimed(&r->res[x]);
	const struct res_hold *slot = NULL;

	for (uint32_t i = first_hold(r, task); i < r->nr_holds && r->holds[i].task == task; i++) {
		if (r->holds[i].resource != x)
			continue;
		if (r->holds[i].held)
			return &r->holds[i];
		if (claimed && !slot)
			slot = &r->holds[i];
	}
	return slot;
}

/* What a guard slot on a lock held in part is. */
static const char *claim_kind(const struct res_hold *h)
{
	switch (h->guard->lock) {
	case GUARD_PERMITS: return "a Semaphore permit";
	case GUARD_SHARED: return "a read guard";
	default: return "a guard";
	}
}

/* The lock of a possible deadlock's edge, said for what it is not proven. */
static void print_unproven(FILE *out, const struct stk_snapshot *s, const struct model *m,
			   const struct res_deadlock *dl)
{
	const struct res_report *r = &s->res;

	for (uint32_t k = 0; k < dl->nr; k++) {
		uint32_t xi = r->cycle_res[dl->first + k], slots, j;
		const struct resource *x;

		if (xi == RES_NONE || resources__proven(&r->res[xi]))
			continue;
		for (j = 0; j < k && r->cycle_res[dl->first + j] != xi; j++)
			;
		if (j < k)
			continue; /* said for an edge before */
		x = &r->res[xi];
		slots = x->kind == GUARD_SENDER ? x->sender_slots : x->nr_refs[0];
		fputs("  not proven: ", out);
		print_lock(out, m, x);
		if (x->kind == GUARD_SENDER) {
			fprintf(
			    out,
			    ": it counts %" PRIu64
			    " sender%s, as many as the sender slots pointing "
			    "at it, each kept by a task deadlocked too; but a stale slot (a sender "
			    "moved or dropped before the await) and a sender kept out of sight (in "
			    "a struct, a thread, a weak sender upgraded) count alike\n",
			    x->senders, x->senders == 1 ? "" : "s");
			continue;
		}
		fprintf(out,
			" is held in part (%s): its state says that some hold it, not which; %s "
			"pointing at it %s kept by %s deadlocked too, but a guard `stacks` cannot "
			"see (a thread's, one kept outside a task's futures, one a running task "
			"took)%s would end it\n",
			x->permit_claims ? "by permits" : "by readers",
			slots == 1 ? "the only guard slot" : "every guard slot",
			slots == 1 ? "is" : "are", slots == 1 ? "a task" : "tasks",
			x->permit_claims && x->family == LOCK_TOKIO ? " or add_permits" : "");
	}
}

/* A task's wait (at most one). */
static const struct res_wait *wait_of(const struct res_report *r, uint32_t task)
{
	uint32_t i = first_of_task(r->waits, sizeof(*r->waits), r->nr_waits, task);

	return i < r->nr_waits && r->waits[i].task == task ? &r->waits[i] : NULL;
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

/* The tasks stuck behind deadlock d: "  2 more tasks wait behind it: ..." */
static void print_behind(FILE *out, const struct stk_snapshot *s, const struct model *m, uint32_t d)
{
	const struct res_report *r = &s->res;
	uint32_t n = 0, shown = 0;
	char name[256];

	for (uint32_t i = 0; i < r->nr_behind; i++)
		n += r->behind[i].deadlock == d;
	if (!n)
		return;
	fprintf(out, "  %u more task%s wait%s behind it (stuck while it stands):\n", n,
		n == 1 ? "" : "s", n == 1 ? "s" : "");
	for (uint32_t i = 0; i < r->nr_behind && shown < TEXT_MAX_BEHIND; i++) {
		const struct res_behind *b = &r->behind[i];
		const struct res_wait *w = wait_of(r, b->task);

		if (b->deadlock != d)
			continue;
		shown++;
		task_name(m, &s->tasks[b->task], name, sizeof(name));
		fprintf(out, "    task %u %s at ", b->task, name);
		print_at(out, w ? where(m, &s->tasks[b->task].stack, w->frame) : NULL);
		task_name(m, &s->tasks[b->next], name, sizeof(name));
		if (b->res == RES_NONE) {
			fprintf(out, " joins task %u %s\n", b->next, name);
			continue;
		}
		fputs(r->res[b->res].kind == GUARD_SENDER ? " waits for a message on "
							  : " waits for ",
		      out);
		print_lock(out, m, &r->res[b->res]);
		fprintf(out, " (task %u %s)\n", b->next, name);
	}
	if (n > shown)
		fprintf(out, "    ... and %u more (--json lists them all)\n", n - shown);
}

void resources__text(FILE *out, const struct stk_snapshot *s, const struct model *m, bool color)
{
	const struct res_report *r = &s->res;
	const char *red = color ? "\033[1;31m" : "", *bold = color ? "\033[1m" : "",
		   *off = color ? "\033[0m" : "";
	char name[256];
	uint32_t shown = 0, more = 0;

	for (uint32_t d = 0; d < r->nr_deadlocks; d++) {
		const struct res_deadlock *dl = &r->deadlocks[d];

		fprintf(out, "\n%s%sDEADLOCK%s: %u tasks wait for each other", red,
			dl->proven ? "" : "POSSIBLE ", off, dl->nr);
		if (s->watching)
			fprintf(out, "   unchanged for >= %.0f s", standing_s(s, dl));
		fputs("\n", out);
		if (!s->paused)
			fputs("  (read with --no-pause: each task's memory at another instant, a "
			      "cycle "
			      "may be torn; a snapshot with the pause confirms it)\n",
			      out);
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
			if (r->res[x].kind == GUARD_SENDER) {
				fputs(" waits for a message on ", out);
				print_lock(out, m, &r->res[x]);
				fputs(r->res[x].sender_slots == 1
					  ? "\n    whose only sender is kept by "
					  : "\n    whose every sender is kept by a task as stuck, "
					    "among "
					    "them ",
				      out);
			} else {
				fputs(" waits for ", out);
				print_lock(out, m, &r->res[x]);
				fputs("\n    held by ", out);
			}
			if (hh)
				print_holder(out, s, m, hh);
			if (hh && !hh->held)
				fprintf(out, " (%s)", claim_kind(hh));
			fputs("\n", out);
		}
		if (!dl->proven)
			print_unproven(out, s, m, dl);
		print_behind(out, s, m, d);
	}
	for (uint32_t i = 0; i < r->nr_res; i++) {
		const struct resource *x = &r->res[i];

		if (x->family == LOCK_NONE || (!x->holders && !x->waiters))
			continue;
		if (shown == TEXT_MAX_LOCKS) {
			more++;
			continue;
		}
		if (!shown++)
			fprintf(out, "\n%sLocks held or awaited by parked tasks%s\n", bold, off);
		fputs("  ", out);
		print_lock(out, m, x);
		if (x->read)
			fprintf(out, ": %s, %u waiting\n", x->locked ? "locked" : "not locked",
				x->waiters);
		else
			fprintf(out, ": its state unreadable, %u waiting\n", x->waiters);
		for (uint32_t k = 0; k < x->nr_refs[0]; k++) {
			const struct res_hold *h = &r->holds[ref_of(r, x, 0, k)];

			if (!h->held && !resources__claimed(x))
				continue;
			fputs(h->held ? "    held by " : "    a guard slot of ", out);
			print_holder(out, s, m, h);
			if (!h->held)
				fprintf(out, " (%s, not proven held)", claim_kind(h));
			fputs("\n", out);
		}
		for (uint32_t k = 0; k < x->nr_refs[1]; k++) {
			const struct res_wait *w = &r->waits[ref_of(r, x, 1, k)];

			if (!w->queued)
				continue;
			task_name(m, &s->tasks[w->task], name, sizeof(name));
			fprintf(out, "    waited for by task %u %s at ", w->task, name);
			print_at(out, where(m, &s->tasks[w->task].stack, w->frame));
			fputs("\n", out);
		}
	}
	if (more)
		fprintf(out, "  ... and %u more (--json lists them all)\n", more);
	if (r->self_waits)
		fprintf(out,
			"  %u task%s wait%s for a lock (or a message) that a guard (or sender) "
			"slot of its own points at: a guard reassigned by that very await, a "
			"task locking twice, or receiving what only it could send (not told "
			"apart: not called a deadlock)\n",
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
	cJSON_AddBoolToObject(o, "alternatives", w->alternatives);
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
		cJSON_AddStringToObject(o, "kind", guard_lock__name(x->kind));
		if (x->read) {
			cJSON_AddBoolToObject(o, "locked", x->locked);
			if (x->family == LOCK_TOKIO || x->family == LOCK_ASYNC_SEMAPHORE)
				cJSON_AddNumberToObject(o, "available_permits",
							(double)x->available);
			else
				cJSON_AddNullToObject(o, "available_permits");
		} else {
			cJSON_AddNullToObject(o, "locked");
			cJSON_AddNullToObject(o, "available_permits");
		}
		if (x->total)
			cJSON_AddNumberToObject(o, "total_permits", (double)x->total);
		else
			cJSON_AddNullToObject(o, "total_permits");
		cJSON_AddBoolToObject(o, "permits_add_up", x->counted && x->kind != GUARD_SENDER);
		if (x->kind == GUARD_SENDER && x->senders_read)
			cJSON_AddNumberToObject(o, "senders", (double)x->senders);
		else
			cJSON_AddNullToObject(o, "senders");
		cJSON_AddBoolToObject(o, "senders_add_up", x->counted && x->kind == GUARD_SENDER);
		hs = cJSON_AddArrayToObject(o, "holders");
		for (uint32_t k = 0; hs && k < x->nr_refs[0]; k++)
			cJSON_AddItemToArray(hs, hold_json(s, m, &r->holds[ref_of(r, x, 0, k)]));
		ws = cJSON_AddArrayToObject(o, "waiters");
		for (uint32_t k = 0; ws && k < x->nr_refs[1]; k++)
			cJSON_AddItemToArray(ws, wait_json(s, m, &r->waits[ref_of(r, x, 1, k)]));
		cJSON_AddItemToArray(res, o);
	}
	for (uint32_t d = 0; dls && d < r->nr_deadlocks; d++) {
		const struct res_deadlock *dl = &r->deadlocks[d];
		cJSON *o = cJSON_CreateObject(), *edges, *behind;

		if (!o)
			break;
		cJSON_AddNumberToObject(o, "unchanged_s", standing_s(s, dl));
		cJSON_AddBoolToObject(o, "proven", dl->proven);
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
			cJSON_AddBoolToObject(e, "proven",
					      x == RES_NONE || resources__proven(&r->res[x]));
			if (hh)
				cJSON_AddItemToObject(e, "holder", hold_json(s, m, hh));
			cJSON_AddItemToArray(edges, e);
		}
		behind = cJSON_AddArrayToObject(o, "behind");
		for (uint32_t i = 0; behind && i < r->nr_behind; i++) {
			const struct res_behind *b = &r->behind[i];
			const struct res_wait *w = wait_of(r, b->task);
			cJSON *e = b->deadlock == d && w ? wait_json(s, m, w) : NULL;

			if (!e)
				continue;
			cJSON_AddNumberToObject(e, "waits_for", b->next);
			cJSON_AddItemToArray(behind, e);
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

	for (uint32_t k = first_hold(r, id); holds && k < r->nr_holds && r->holds[k].task == id;
	     k++)
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
			fprintf(out, ";[%sdeadlock: waits for %s", dl->proven ? "" : "possible ",
				x != RES_NONE && r->res[x].kind == GUARD_SENDER ? "a message on "
										: "");
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
			fprintf(out,
				r->res[x].kind == GUARD_SENDER ? " sent to by task %u]"
							       : " held by task %u]",
				r->cycle_task[dl->first + (k + 1) % dl->nr]);
			return;
		}
	}
}
