// SPDX-License-Identifier: GPL-2.0
/*
 * Locks over time in task mode (task_locks.h): from the locks each task's end tree
 * shows, per lock its waits (a task parked waiting for it: from the end of the task
 * poll that parked so to the start of the first poll after which it no longer waits)
 * and its holds across awaits (a guard kept while parked, the lock locked: from the
 * end of the poll that parked with it to the start of the poll that let it go).
 * Trees are seen only at task poll ends: a lock taken and released inside one task
 * poll is not seen, and durations are the parked part.
 */
#include "trace/task_locks.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hashmap.h"
#include "lib/vec.h"
#include "lib/text.h"

#define NONE		     UINT32_MAX
#define TASK_HOLDS	     4 /* locks one task is followed holding at once; more are counted */
#define TASK_LOCKS_MAX_TASKS (1u << 20) /* tasks followed (a header is reused when done) */

struct lt_open {
	uint64_t key, since;
	const struct lock_pseudo *pseudo; /* where it was first seen (a hold: kept across) */
	const struct lock_pseudo *last;	  /* a hold: the await it is kept across now */
};

struct lt_task {
	int32_t root;
	struct lt_open wait; /* key 0: not waiting */
	struct lt_open holds[TASK_HOLDS];
	uint32_t nr_holds;
};

struct lt_lock {
	uint64_t key;
	uint8_t family;
	const char *type; /* the lock's type, NULL: not known */
	uint64_t back;	  /* the key's offset in it */
	uint64_t waits, wait_ns, wait_max_ns, holds, hold_max_ns;
	uint32_t waiting, holder; /* now: tasks waiting; the task holding it (NONE) */
	uint32_t conflicts;	  /* a hold claimed while another task's was open */
	/* the longest hold: by whom, where */
	int32_t hold_root;
	const struct lock_pseudo *hold_pseudo;
	/* top --locks: the totals at its last table (task_locks__top) */
	uint64_t shown_waits, shown_wait_ns, shown_holds;
};

struct task_locks {
	const struct model *m;
	struct u64_map task_of, lock_of; /* header -> task index, key -> lock index */
	struct lt_task *tasks;
	struct lt_lock *locks;
	uint32_t nr_tasks, cap_tasks, nr_locks, cap_locks;
	uint64_t last_ns, over_holds, over_tasks;
	uint64_t dropped; /* tasks whose end was not seen (their header reused) */
};

struct task_locks *task_locks__new(const struct model *m)
{
	struct task_locks *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->m = m;
	u64_map__init(&l->task_of);
	u64_map__init(&l->lock_of);
	return l;
}

void task_locks__free(struct task_locks *l)
{
	if (!l)
		return;
	u64_map__free(&l->task_of);
	u64_map__free(&l->lock_of);
	free(l->tasks);
	free(l->locks);
	free(l);
}

static struct lt_lock *lock_for(struct task_locks *l, const struct lock_seen *s)
{
	struct lt_lock *x;
	uint64_t i;

	if (u64_map__get(&l->lock_of, s->key, &i))
		x = &l->locks[i];
	else if (vec__reserve((void **)&l->locks, &l->cap_locks, l->nr_locks + 1,
			      sizeof(*l->locks)) ||
		 u64_map__set(&l->lock_of, s->key, l->nr_locks))
		return NULL;
	else
		*(x = &l->locks[l->nr_locks++]) = (struct lt_lock){
		    .key = s->key, .family = s->family, .holder = NONE, .hold_root = -1};
	/* its name: a guard's lock type, else the waiting future's */
	if (!x->type && s->pseudo->kind == LOCK_PSEUDO_HELD && s->pseudo->guard->resource) {
		x->type = s->pseudo->guard->resource;
		x->back = s->pseudo->guard->resource_back;
	} else if (!x->type && s->pseudo->kind == LOCK_PSEUDO_WAIT && s->pseudo->future >= 0 &&
		   l->m->futures[s->pseudo->future].wait &&
		   l->m->futures[s->pseudo->future].wait->type) {
		x->type = l->m->futures[s->pseudo->future].wait->type;
		x->back = 0;
	}
	return x;
}

static void close_wait(struct task_locks *l, struct lt_task *t, uint64_t at)
{
	uint64_t i, ns;

	if (!t->wait.key || !u64_map__get(&l->lock_of, t->wait.key, &i))
		return;
	ns = at > t->wait.since ? at - t->wait.since : 0;
	l->locks[i].waits++;
	l->locks[i].wait_ns += ns;
	if (ns > l->locks[i].wait_max_ns)
		l->locks[i].wait_max_ns = ns;
	if (l->locks[i].waiting)
		l->locks[i].waiting--;
	t->wait.key = 0;
}

static void close_hold(struct task_locks *l, struct lt_task *t, uint32_t h, uint64_t at,
		       uint32_t task)
{
	struct lt_open *o = &t->holds[h];
	uint64_t i, ns = at > o->since ? at - o->since : 0;

	if (u64_map__get(&l->lock_of, o->key, &i)) {
		struct lt_lock *x = &l->locks[i];

		x->holds++;
		if (ns >= x->hold_max_ns) {
			x->hold_max_ns = ns;
			x->hold_root = t->root;
			x->hold_pseudo = o->pseudo;
		}
		if (x->holder == task)
			x->holder = NONE;
	}
	t->holds[h] = t->holds[--t->nr_holds];
}

/* A task whose last polls were lost (its header reused by a task of another type):
 * what it had open is dropped, not counted (its end is not known). */
static void drop_task(struct task_locks *l, struct lt_task *t, uint32_t task)
{
	uint64_t i;

	if (t->wait.key && u64_map__get(&l->lock_of, t->wait.key, &i) && l->locks[i].waiting)
		l->locks[i].waiting--;
	for (uint32_t h = 0; h < t->nr_holds; h++)
		if (u64_map__get(&l->lock_of, t->holds[h].key, &i) && l->locks[i].holder == task)
			l->locks[i].holder = NONE;
	*t = (struct lt_task){.root = -1};
	l->dropped++;
}

static bool over_inner(const struct model *m, const struct lock_seen *s)
{
	int32_t f = s->pseudo ? s->pseudo->future : -1;

	return f >= 0 && (uint32_t)f < m->nr_futures && m->futures[f].wait &&
	       m->futures[f].wait->over_inner;
}

int task_locks__add(struct task_locks *l, uint64_t header, int32_t root, uint64_t start_ns,
		    uint64_t end_ns, bool completed, const struct lock_seen *seen, uint32_t nr)
{
	const struct lock_seen *wait = NULL;
	struct lt_task *t;
	uint64_t ti;
	uint32_t task;

	if (end_ns > l->last_ns)
		l->last_ns = end_ns;
	if (!u64_map__get(&l->task_of, header, &ti)) {
		if (!nr)
			return 0; /* a task never seen with a lock */
		if (l->nr_tasks >= TASK_LOCKS_MAX_TASKS) {
			l->over_tasks++;
			return 0;
		}
		if (vec__reserve((void **)&l->tasks, &l->cap_tasks, l->nr_tasks + 1,
				 sizeof(*l->tasks)) ||
		    u64_map__set(&l->task_of, header, l->nr_tasks))
			return -ENOMEM;
		ti = l->nr_tasks++;
		l->tasks[ti] = (struct lt_task){.root = -1};
	}
	task = (uint32_t)ti;
	t = &l->tasks[task];
	if (root >= 0 && t->root >= 0 && root != t->root)
		drop_task(l, t, task); /* its header another task's: its end was not seen */
	if (root >= 0)
		t->root = root;
	/* the innermost (the tree is breadth first), unless a lock method that awaits
	 * another lock first is outside it (async-lock's RwLock::write, its inner Mutex:
	 * future_wait.over_inner), as stacks takes it */
	for (uint32_t k = 0; k < nr && !completed; k++)
		if (seen[k].kind == LOCK_PSEUDO_WAIT && !seen[k].unreadable &&
		    !(wait && over_inner(l->m, wait)))
			wait = &seen[k];
	/* waits: over when the task no longer waits for that lock */
	if (t->wait.key && (!wait || wait->key != t->wait.key))
		close_wait(l, t, start_ns);
	if (wait && !t->wait.key) {
		struct lt_lock *x = lock_for(l, wait);

		if (!x)
			return -ENOMEM;
		x->waiting++;
		t->wait = (struct lt_open){wait->key, end_ns, wait->pseudo, NULL};
	}
	/* holds: released during this poll when no longer held at its end */
	for (uint32_t h = 0; h < t->nr_holds;) {
		bool still = false;

		for (uint32_t k = 0; k < nr && !completed && !still; k++)
			if ((still = seen[k].kind == LOCK_PSEUDO_HELD &&
				     seen[k].key == t->holds[h].key &&
				     task_locks__locked(&seen[k])))
				t->holds[h].last = seen[k].pseudo;
		if (still)
			h++;
		else
			close_hold(l, t, h, start_ns, task);
	}
	for (uint32_t k = 0; k < nr && !completed; k++) {
		const struct lock_seen *s = &seen[k];
		struct lt_lock *x;
		bool open = false;

		if (s->kind != LOCK_PSEUDO_HELD || !task_locks__locked(s))
			continue;
		for (uint32_t h = 0; h < t->nr_holds && !open; h++)
			open = t->holds[h].key == s->key;
		if (open)
			continue;
		if (!(x = lock_for(l, s)))
			return -ENOMEM;
		if (x->holder != NONE && x->holder != task) {
			/* another task's guard claims it too: one of the two slots is stale,
			 * and which is not known: neither hold is counted */
			struct lt_task *other = &l->tasks[x->holder];

			for (uint32_t h = 0; h < other->nr_holds; h++)
				if (other->holds[h].key == s->key) {
					other->holds[h] = other->holds[--other->nr_holds];
					break;
				}
			x->holder = NONE;
			x->conflicts++;
			continue;
		}
		if (t->nr_holds == TASK_HOLDS) {
			l->over_holds++;
			continue;
		}
		x->holder = task;
		/* from this poll's start: the lock was taken during it (it was not held at
		 * the last one's end), so the hold began no later than that, and no later
		 * than any wait another task parked with meanwhile */
		t->holds[t->nr_holds++] = (struct lt_open){s->key, start_ns, s->pseudo, s->pseudo};
	}
	if (completed) /* all let go above: its header may be a new task's next */
		t->root = -1;
	return 0;
}

void task_locks__finish(struct task_locks *l, uint64_t end_ns)
{
	if (end_ns > l->last_ns)
		l->last_ns = end_ns;
}

/* What is still open at `at`, per lock (one pass over the tasks): the longest wait,
 * how long the last holder has held it, whether it is held. NULL: no memory. */
struct lt_open_at {
	uint64_t wait_max, hold_ns;
	uint32_t holding;
};

static struct lt_open_at *open_at(const struct task_locks *l, uint64_t at)
{
	struct lt_open_at *o = calloc(l->nr_locks ? l->nr_locks : 1, sizeof(*o));
	uint64_t i;

	for (uint32_t k = 0; o && k < l->nr_tasks; k++) {
		const struct lt_task *t = &l->tasks[k];

		if (t->wait.key && u64_map__get(&l->lock_of, t->wait.key, &i) &&
		    at > t->wait.since && at - t->wait.since > o[i].wait_max)
			o[i].wait_max = at - t->wait.since;
		for (uint32_t h = 0; h < t->nr_holds; h++)
			if (u64_map__get(&l->lock_of, t->holds[h].key, &i)) {
				o[i].holding++;
				if (at > t->holds[h].since)
					o[i].hold_ns = at - t->holds[h].since;
			}
	}
	return o;
}

static int cmp_locks(const void *a, const void *b)
{
	const struct lt_lock *x = a, *y = b;

	if (x->wait_ns != y->wait_ns)
		return x->wait_ns > y->wait_ns ? -1 : 1;
	if (x->holds != y->holds)
		return x->holds > y->holds ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

/* The locks in report order (a sorted copy; NULL when out of memory or none). */
static struct lt_lock *sorted(const struct task_locks *l, uint32_t **index)
{
	struct lt_lock *v = malloc((l->nr_locks ? l->nr_locks : 1) * sizeof(*v));

	*index = malloc((l->nr_locks ? l->nr_locks : 1) * sizeof(**index));
	if (!v || !*index) {
		free(v);
		free(*index);
		*index = NULL;
		return NULL;
	}
	memcpy(v, l->locks, l->nr_locks * sizeof(*v));
	qsort(v, l->nr_locks, sizeof(*v), cmp_locks);
	for (uint32_t i = 0; i < l->nr_locks; i++) {
		uint64_t k;

		u64_map__get(&l->lock_of, v[i].key, &k);
		(*index)[i] = (uint32_t)k;
	}
	return v;
}

/* What the tables leave out: tasks and holds past the bounds, tasks whose end was
 * not seen. */
static void print_left_out(const struct task_locks *l, FILE *out, const char *indent)
{
	if (l->over_tasks || l->over_holds)
		fprintf(out,
			"%snot followed: %" PRIu64 " tasks past %u, %" PRIu64
			" holds past %u a task\n",
			indent, l->over_tasks, TASK_LOCKS_MAX_TASKS, l->over_holds, TASK_HOLDS);
	if (l->dropped)
		fprintf(out,
			"%s%" PRIu64 " tasks' last polls not seen (their header reused by a task "
			"of another type): the waits and holds they had open dropped, uncounted\n",
			indent, l->dropped);
}

static void lock_name(const struct lt_lock *x, char *buf, size_t len)
{
	char type[256];

	if (x->type) {
		rust__abbreviate(x->type, type, sizeof(type), 60);
		snprintf(buf, len, "%s at 0x%" PRIx64, type, x->key - x->back);
	} else {
		snprintf(buf, len, "the lock of semaphore 0x%" PRIx64, x->key);
	}
}

static void short_future_name(const struct model *m, int32_t f, char *buf, size_t len)
{
	char name[512];

	future__display_name(&m->futures[f], name, sizeof(name));
	rust__abbreviate(name, buf, len, 60);
}

/*
 * Who held it: "tokio_mt::contend_task (its g, kept across src/main.rs:410)"; the task
 * by its root future, unless that is a runtime's or std's wrapper (async-executor's
 * spawn block, async-std's SupportTaskLocals): then by the future keeping the guard;
 * "(its g in OWNER, ...)" when the guard is a deeper future's.
 */
static void holder_name(const struct model *m, const struct lt_lock *x, char *buf, size_t len)
{
	char who[256] = "?", owner[256] = "";
	const struct lock_pseudo *p = x->hold_pseudo;
	const struct future_state *st = NULL;
	int32_t root =
	    x->hold_root >= 0 && (uint32_t)x->hold_root < m->nr_futures ? x->hold_root : -1;
	int32_t keeper =
	    p && p->future >= 0 && (uint32_t)p->future < m->nr_futures ? p->future : -1;

	if (keeper >= 0 && p->state < m->futures[keeper].nr_states)
		st = &m->futures[keeper].states[p->state];
	if (keeper >= 0 && (root < 0 || m->futures[root].crate_class == CRATE_RUNTIME ||
			    m->futures[root].crate_class == CRATE_STD))
		root = keeper;
	if (root >= 0)
		short_future_name(m, root, who, sizeof(who));
	if (keeper >= 0 && keeper != root) {
		memcpy(owner, " in ", 4);
		short_future_name(m, keeper, owner + 4, sizeof(owner) - 4);
	}
	if (p && p->guard && st && st->file)
		snprintf(buf, len, "%s (its %s%s, kept across %s:%u)", who, p->guard->name, owner,
			 path__short(st->file), st->line);
	else
		snprintf(buf, len, "%s", who);
}

void task_locks__print(const struct task_locks *l, FILE *out)
{
	struct lt_open_at *open;
	uint32_t *index;
	struct lt_lock *v;
	char name[320], who[640];

	if (!l || !l->nr_locks || !(v = sorted(l, &index)))
		return;
	if (!(open = open_at(l, l->last_ns))) {
		free(v);
		free(index);
		return;
	}
	fprintf(out, "\nLocks (from each task's tree at the end of its polls: waits while "
		     "parked, holds across awaits)\n");
	fprintf(out, "  %-58s %7s %11s %11s %7s %11s\n", "LOCK", "WAITS", "WAITED", "MAX WAIT",
		"HOLDS", "MAX HOLD");
	for (uint32_t i = 0; i < l->nr_locks; i++) {
		uint64_t open_wait = open[index[i]].wait_max;
		uint32_t holding = open[index[i]].holding;

		lock_name(&v[i], name, sizeof(name));
		fprintf(out, "  %-58s %7" PRIu64 " %9.3f ms %8.3f ms %7" PRIu64 " %8.3f ms\n", name,
			v[i].waits, (double)v[i].wait_ns / 1e6, (double)v[i].wait_max_ns / 1e6,
			v[i].holds, (double)v[i].hold_max_ns / 1e6);
		if (v[i].holds) {
			holder_name(l->m, &v[i], who, sizeof(who));
			fprintf(out, "      longest hold: %s\n", who);
		}
		if (v[i].waiting || holding)
			fprintf(out, "      at the end: %u waiting (the longest for %.3f ms), %s\n",
				v[i].waiting, (double)open_wait / 1e6,
				holding ? "held" : "not held");
		if (v[i].conflicts)
			fprintf(out,
				"      %u times two tasks' guards claimed it at once: one slot was "
				"stale, not known which (neither counted as a hold)\n",
				v[i].conflicts);
	}
	print_left_out(l, out, "      ");
	free(open);
	free(v);
	free(index);
}

/* top --locks: a lock's row of one table */
struct top_lock_row {
	uint32_t lock;
	uint64_t waits, wait_ns, holds; /* ended in the interval */
	uint64_t longest;		/* the longest wait still open now */
	bool held;
};

static int cmp_top_rows(const void *a, const void *b)
{
	const struct top_lock_row *x = a, *y = b;

	if (x->longest != y->longest) /* the waiters parked longest first */
		return x->longest > y->longest ? -1 : 1;
	if (x->wait_ns != y->wait_ns)
		return x->wait_ns > y->wait_ns ? -1 : 1;
	if (x->holds != y->holds)
		return x->holds > y->holds ? -1 : 1;
	return (x->lock > y->lock) - (x->lock < y->lock);
}

/* "held 12.3 ms by tokio_mt::dead_a (its g1, kept across src/main.rs:277)" */
static void holder_now(const struct task_locks *l, const struct lt_lock *x, uint64_t now, char *buf,
		       size_t len)
{
	const struct lt_task *t = x->holder != NONE ? &l->tasks[x->holder] : NULL;
	struct lt_lock who = {.hold_root = -1};
	char name[640];

	for (uint32_t h = 0; t && h < t->nr_holds; h++)
		if (t->holds[h].key == x->key) {
			who.hold_root = t->root;
			who.hold_pseudo = t->holds[h].last;
			holder_name(l->m, &who, name, sizeof(name));
			snprintf(buf, len, "held %.3f ms by %s",
				 now > t->holds[h].since ? (double)(now - t->holds[h].since) / 1e6
							 : 0.0,
				 name);
			return;
		}
	snprintf(buf, len,
		 "holder not seen (a guard taken before top attached and not polled "
		 "since, one kept outside a task's futures, or a thread's)");
}

void task_locks__top(struct task_locks *l, uint64_t now_ns, double dt, FILE *out, int max_rows)
{
	struct top_lock_row *rows;
	struct lt_open_at *open;
	uint32_t n = 0;
	char name[320], who[900];

	fprintf(out, "\n%7s %11s %8s %11s %8s  %s\n", "WAITING", "LONGEST_MS", "WAITS/S",
		"AVG_WAIT_MS", "HOLDS/S",
		"LOCK (--locks: each task's tree at the end of its polls)");
	if (!l || !l->nr_locks) {
		fprintf(out, "  (no task has waited for or held a lock across an await)\n");
		return;
	}
	rows = calloc(l->nr_locks, sizeof(*rows));
	open = open_at(l, now_ns);
	if (!rows || !open) {
		fprintf(out, "  (out of memory)\n");
		free(rows);
		free(open);
		return;
	}
	for (uint32_t i = 0; i < l->nr_locks; i++) {
		struct lt_lock *x = &l->locks[i];
		struct top_lock_row r = {.lock = i,
					 .waits = x->waits - x->shown_waits,
					 .wait_ns = x->wait_ns - x->shown_wait_ns,
					 .holds = x->holds - x->shown_holds,
					 .longest = x->waiting ? open[i].wait_max : 0,
					 .held = open[i].holding > 0};

		x->shown_waits = x->waits;
		x->shown_wait_ns = x->wait_ns;
		x->shown_holds = x->holds;
		if (x->waiting || r.held || r.waits || r.holds)
			rows[n++] = r;
	}
	qsort(rows, n, sizeof(*rows), cmp_top_rows);
	if (!n)
		fprintf(out, "  (no task waited for or held a lock in this interval)\n");
	for (uint32_t k = 0; k < n && (max_rows <= 0 || k < (uint32_t)max_rows); k++) {
		const struct lt_lock *x = &l->locks[rows[k].lock];
		char avg[32] = "-";

		if (rows[k].waits)
			snprintf(avg, sizeof(avg), "%.3f",
				 (double)rows[k].wait_ns / (double)rows[k].waits / 1e6);
		lock_name(x, name, sizeof(name));
		fprintf(out, "%7u %11.3f %8.1f %11s %8.1f  %s\n", x->waiting,
			(double)rows[k].longest / 1e6, dt > 0 ? (double)rows[k].waits / dt : 0.0,
			avg, dt > 0 ? (double)rows[k].holds / dt : 0.0, name);
		if (rows[k].held || x->waiting)
			holder_now(l, x, now_ns, who, sizeof(who));
		else
			snprintf(who, sizeof(who), "not held now");
		fprintf(out, "%50s%s\n", "", who);
	}
	if (max_rows > 0 && n > (uint32_t)max_rows)
		fprintf(out, "  ... %u more locks\n", n - (uint32_t)max_rows);
	print_left_out(l, out, "  ");
	free(rows);
	free(open);
}

int task_locks__json(const struct task_locks *l, cJSON *parent)
{
	cJSON *arr = cJSON_AddArrayToObject(parent, "locks");
	struct lt_open_at *open;
	uint32_t *index;
	struct lt_lock *v;
	char who[640];

	if (!arr)
		return -ENOMEM;
	if (!l || !l->nr_locks)
		return 0;
	if (!(v = sorted(l, &index)))
		return -ENOMEM;
	if (!(open = open_at(l, l->last_ns))) {
		free(v);
		free(index);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < l->nr_locks; i++) {
		cJSON *o = cJSON_CreateObject(), *h;
		uint64_t open_wait = open[index[i]].wait_max, open_hold = open[index[i]].hold_ns;
		uint32_t holding = open[index[i]].holding;

		if (!o)
			break;
		cJSON_AddNumberToObject(o, "key", (double)v[i].key);
		if (v[i].type) {
			cJSON_AddStringToObject(o, "type", v[i].type);
			cJSON_AddNumberToObject(o, "addr", (double)(v[i].key - v[i].back));
		} else {
			cJSON_AddNullToObject(o, "type");
			cJSON_AddNullToObject(o, "addr");
		}
		cJSON_AddStringToObject(o, "family", lock_family__name(v[i].family));
		cJSON_AddNumberToObject(o, "waits", (double)v[i].waits);
		cJSON_AddNumberToObject(o, "wait_ns", (double)v[i].wait_ns);
		cJSON_AddNumberToObject(o, "wait_max_ns", (double)v[i].wait_max_ns);
		cJSON_AddNumberToObject(o, "waiting_at_end", v[i].waiting);
		cJSON_AddNumberToObject(o, "open_wait_ns", (double)open_wait);
		cJSON_AddNumberToObject(o, "holds", (double)v[i].holds);
		cJSON_AddNumberToObject(o, "hold_max_ns", (double)v[i].hold_max_ns);
		cJSON_AddBoolToObject(o, "held_at_end", holding > 0);
		cJSON_AddNumberToObject(o, "open_hold_ns", (double)open_hold);
		cJSON_AddNumberToObject(o, "conflicts", v[i].conflicts);
		if (v[i].holds && (h = cJSON_AddObjectToObject(o, "longest_hold"))) {
			const struct lock_pseudo *p = v[i].hold_pseudo;

			holder_name(l->m, &v[i], who, sizeof(who));
			cJSON_AddStringToObject(h, "by", who);
			cJSON_AddStringToObject(h, "guard", p && p->guard ? p->guard->name : "?");
			if (p && p->future >= 0 && p->state < l->m->futures[p->future].nr_states) {
				const struct future_state *st =
				    &l->m->futures[p->future].states[p->state];

				cJSON_AddStringToObject(h, "file", st->file ? st->file : "");
				cJSON_AddNumberToObject(h, "line", st->line);
			}
		}
		cJSON_AddItemToArray(arr, o);
	}
	free(open);
	free(v);
	free(index);
	return 0;
}
