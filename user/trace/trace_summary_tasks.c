// SPDX-License-Identifier: GPL-2.0
/*
 * The summary of task mode (docs/tracing.md, "Task mode"): per future type, what the
 * task polls' trees said of it (polls, first polls, Ready, ended, pending at the end
 * with its await); per task type (its root future), its task polls' durations and
 * its tasks (by header: distinct while alive, completed when its future is gone).
 * Bounded: live instances and live tasks are capped like the rest of the summary.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lib/syscalls.h"
#include "lib/text.h"
#include "trace/task_locks.h"
#include "trace/trace_summary.h"

static struct task_mode_summary *tm_of(struct trace_summary *s)
{
	struct task_mode_summary *t = s->tm;

	if (t)
		return t;
	if (!(t = calloc(1, sizeof(*t))))
		return NULL;
	t->futures = calloc(s->m->nr_futures ? s->m->nr_futures : 1, sizeof(*t->futures));
	t->roots = calloc(s->m->nr_futures ? s->m->nr_futures : 1, sizeof(*t->roots));
	if (!t->futures || !t->roots) {
		free(t->futures);
		free(t->roots);
		free(t);
		return NULL;
	}
	key_map__init(&t->pending);
	key_map__init(&t->live_tasks);
	key_map__init(&t->woken);
	key_map__init(&t->woken_by);
	key_map__init(&t->blocking);
	s->tm = t;
	return t;
}

/* (future, addr) pending at await k now, or no longer pending. */
static void note_pending(struct task_mode_summary *t, const struct task_future_event *e,
			 bool pending)
{
	uint64_t v;

	if (!pending) {
		key_map__delete(&t->pending, (uint32_t)e->future, e->addr);
		return;
	}
	if (!key_map__get(&t->pending, (uint32_t)e->future, e->addr, &v) &&
	    t->pending.nr_used >= TRACE_SUMMARY_MAX_INSTANCES) {
		t->untracked_instances++;
		return;
	}
	/* the await index + 1 (0: none) */
	if (key_map__set(&t->pending, (uint32_t)e->future, e->addr, (uint64_t)(e->await_index + 1)))
		t->oom = true;
}

void summary_tasks__add_wake(struct trace_summary *s, const struct trace_wake *w)
{
	struct task_mode_summary *t = tm_of(s);
	uint64_t v;

	if (!t) {
		s->oom = true;
		return;
	}
	if (!w->header) {
		s->wakes_unknown++;
		return;
	}
	/* the first wake since its last poll starts the delay */
	if (key_map__get(&t->woken, 0, w->header, &v))
		return;
	if (t->woken.nr_used >= TRACE_SUMMARY_MAX_TASKS ||
	    key_map__set(&t->woken, 0, w->header, w->time_ns) ||
	    key_map__set(&t->woken_by, 0, w->header, w->waker_task_self))
		t->wakes_unlinked++;
}

void summary_tasks__add_block(struct trace_summary *s, const struct trace_block *b)
{
	struct task_mode_summary *t = tm_of(s);
	struct task_block *k;
	uint64_t i, ns = b->end_ns > b->start_ns ? b->end_ns - b->start_ns : 0;

	if (!t) {
		s->oom = true;
		return;
	}
	if (!key_map__get(&t->blocking, b->tid, b->self, &i)) {
		if (t->nr_blocks == t->cap_blocks) {
			uint32_t cap = t->cap_blocks ? t->cap_blocks * 2 : 16;
			struct task_block *n = realloc(t->blocks, cap * sizeof(*n));

			if (!n) {
				t->oom = true;
				return;
			}
			t->blocks = n;
			t->cap_blocks = cap;
		}
		i = t->nr_blocks++;
		memset(&t->blocks[i], 0, sizeof(t->blocks[i]));
		if (key_map__set(&t->blocking, b->tid, b->self, i)) {
			t->nr_blocks--;
			t->oom = true;
			return;
		}
	}
	k = &t->blocks[i];
	if (b->kind == OFFCPU_TRACER) {
		k->tracer_ns += ns;
		s->tracer_offcpu++;
		s->tracer_offcpu_ns += ns;
	} else if (b->kind == OFFCPU_PREEMPTED) {
		k->preempted_ns += ns;
	} else {
		k->blocked++;
		k->blocked_ns += ns;
		if (ns > k->longest_ns) {
			k->longest_ns = ns;
			k->longest_syscall = b->syscall;
		}
	}
}

/* This task poll's off-CPU time onto its root's row; its BLOCKING accounting. */
static void fold_blocks(struct trace_summary *s, struct task_mode_summary *t,
			struct task_root_summary *r, const struct task_poll *p)
{
	uint64_t i;
	struct task_block *k;

	if (!key_map__get(&t->blocking, p->tid, p->header, &i) || i >= t->nr_blocks)
		return;
	k = &t->blocks[i];
	key_map__delete(&t->blocking, p->tid, p->header);
	r->blocked += k->blocked;
	r->blocked_ns += k->blocked_ns;
	r->preempted_ns += k->preempted_ns;
	r->tracer_ns += k->tracer_ns;
	if (k->blocked_ns > s->block_threshold_ns)
		r->over++;
	if (k->blocked_ns > r->worst_ns) {
		r->worst_ns = k->blocked_ns;
		r->worst_syscall = k->longest_syscall;
	}
	/* the slot is reused: the last one moves into it */
	if (i != t->nr_blocks - 1) {
		uint64_t j;

		t->blocks[i] = t->blocks[t->nr_blocks - 1];
		for (size_t x = 0; x < t->blocking.nr_slots; x++) {
			struct key_map_slot *sl = &t->blocking.slots[x];

			if (sl->poll != UINT32_MAX && sl->value == t->nr_blocks - 1) {
				sl->value = i;
				break;
			}
		}
		(void)j;
	}
	t->nr_blocks--;
}

/* The wake that led to this task poll: its delay, on the task's root's row. */
static void link_wake(struct task_mode_summary *t, struct task_root_summary *r,
		      const struct task_poll *p)
{
	uint64_t at, by = 0;

	if (!key_map__get(&t->woken, 0, p->header, &at) || at > p->start_ns)
		return;
	key_map__get(&t->woken_by, 0, p->header, &by);
	key_map__delete(&t->woken, 0, p->header);
	key_map__delete(&t->woken_by, 0, p->header);
	r->wakes++;
	if (by == p->header) {
		r->self_wakes++; /* yield_now: no delay worth counting */
		return;
	}
	if (u64_vec__push(&r->delays, p->start_ns - at))
		t->oom = true;
}

/* A compiler future seen Pending at its await k: counted by await (bounded). */
static void count_parked(struct task_mode_summary *t, struct task_future_summary *f, int32_t k)
{
	if (k < 0 || k >= 4096)
		return;
	if ((uint32_t)k >= f->nr_parked) {
		uint64_t *v = realloc(f->parked, ((size_t)k + 1) * sizeof(*v));

		if (!v) {
			t->oom = true;
			return;
		}
		memset(v + f->nr_parked, 0, ((size_t)k + 1 - f->nr_parked) * sizeof(*v));
		f->parked = v;
		f->nr_parked = (uint32_t)k + 1;
	}
	f->parked[k]++;
}

void trace_summary__add_task_poll(struct trace_summary *s, const struct task_poll *p)
{
	struct task_mode_summary *t = tm_of(s);
	uint64_t d = p->end_ns > p->start_ns ? p->end_ns - p->start_ns : 0, seen;

	if (!t) {
		s->oom = true;
		return;
	}
	t->task_polls++;
	if (p->finished) { /* a finished task's poll: no task, no future */
		t->finished_polls++;
		return;
	}
	if (p->concurrent) { /* the other thread's poll says what happened */
		t->concurrent_polls++;
		return;
	}
	t->lost += p->lost;
	t->not_read += p->not_read;
	t->cut += p->cut;
	if (p->root >= 0 && (uint32_t)p->root < s->m->nr_futures) {
		struct task_root_summary *r = &t->roots[p->root];

		r->polls++;
		r->busy_ns += d;
		link_wake(t, r, p);
		fold_blocks(s, t, r, p);
		r->offcpu_ns += p->offcpu_ns;
		if (u64_vec__push(&r->durations, d))
			t->oom = true;
		/* a task is its header while its future lives; a header live under another
		 * root is a new task in the memory of one that ended unseen (dropped
		 * without a last poll, a block_on's future on a reused stack slot) */
		bool live = key_map__get(&t->live_tasks, 0, p->header, &seen);

		if (!live || seen != (uint64_t)p->root) {
			if (live || t->live_tasks.nr_used < TRACE_SUMMARY_MAX_TASKS) {
				r->tasks++;
				if (key_map__set(&t->live_tasks, 0, p->header, (uint64_t)p->root))
					t->oom = true;
			} else {
				t->untracked_tasks++;
			}
		}
		if (p->completed) {
			r->completed++;
			r->cancelled += p->cancelled;
			r->unsure += p->unsure;
			key_map__delete(&t->live_tasks, 0, p->header);
		}
	} else {
		t->unknown_task_polls++;
	}
	for (uint32_t i = 0; i < p->nr_events; i++) {
		const struct task_future_event *e = &p->events[i];
		struct task_future_summary *f;

		if (e->future < 0 || (uint32_t)e->future >= s->m->nr_futures) {
			t->unknown_dyn++;
			continue;
		}
		f = &t->futures[e->future];
		f->polls++;
		f->started += e->started;
		if (e->fate == TASK_FUTURE_READY)
			f->ready++;
		else if (e->fate == TASK_FUTURE_ENDED)
			f->ended++;
		else {
			f->pending++;
			count_parked(t, f, e->await_index);
		}
		f->went_back += e->went_back;
		note_pending(t, e, e->fate == TASK_FUTURE_PENDING);
	}
}

int summary_tasks__add_locks(struct trace_summary *s, uint64_t header, int32_t root,
			     uint64_t start_ns, uint64_t end_ns, bool completed,
			     const struct lock_seen *seen, uint32_t nr)
{
	if (!s->locks && !nr)
		return 0;
	if (!s->locks && !(s->locks = task_locks__new(s->m)))
		return -ENOMEM;
	return task_locks__add(s->locks, header, root, start_ns, end_ns, completed, seen, nr);
}

void summary_tasks__free(struct trace_summary *s)
{
	struct task_mode_summary *t = s->tm;

	task_locks__free(s->locks);
	s->locks = NULL;
	if (!t)
		return;
	for (uint32_t i = 0; i < s->m->nr_futures; i++) {
		free(t->futures[i].parked);
		free(t->roots[i].durations.v);
		free(t->roots[i].delays.v);
	}
	free(t->roots);
	free(t->futures);
	key_map__free(&t->pending);
	key_map__free(&t->live_tasks);
	key_map__free(&t->woken);
	key_map__free(&t->woken_by);
	key_map__free(&t->blocking);
	free(t->blocks);
	free(t);
	s->tm = NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* qsort wants a valid pointer even for nothing to sort (an empty vector's is NULL) */
static void sort_u64(uint64_t *v, size_t n)
{
	if (n)
		qsort(v, n, sizeof(*v), cmp_u64);
}

static void future_name(const struct model *m, uint32_t f, char *buf, size_t len)
{
	char full[4096];

	future__display_name(&m->futures[f], full, sizeof(full));
	rust__abbreviate(full, buf, len, 100);
}

/* Pending at the end, grouped by future and await: counted from the pending map. */
/* Futures pending when tracing stopped, by future and await point. */
struct pending_at {
	uint32_t future;
	int32_t await_index; /* -1: not an async fn's await */
	uint64_t count;
};

static int cmp_pending_at(const void *x, const void *y)
{
	const struct pending_at *a = x, *b = y;

	if (a->future != b->future)
		return a->future < b->future ? -1 : 1;
	return a->await_index < b->await_index ? -1 : a->await_index > b->await_index;
}

/* The distinct (future, await) pairs of t->pending, sorted; NULL if none or no memory. */
static struct pending_at *pending_groups(const struct trace_summary *s,
					 const struct task_mode_summary *t, uint32_t *nr)
{
	struct pending_at *v = NULL;
	uint32_t n = 0, cap = 0;

	for (size_t i = 0; i < t->pending.nr_slots; i++) {
		const struct key_map_slot *k = &t->pending.slots[i];
		int32_t a = (int32_t)k->value - 1;
		uint32_t j;

		if (k->poll == UINT32_MAX || k->poll >= s->m->nr_futures)
			continue;
		for (j = 0; j < n && (v[j].future != k->poll || v[j].await_index != a); j++)
			;
		if (j == n) {
			if (n == cap) {
				struct pending_at *g;

				cap = cap ? cap * 2 : 16;
				g = realloc(v, cap * sizeof(*v));
				if (!g) {
					free(v);
					*nr = 0;
					return NULL;
				}
				v = g;
			}
			v[n++] = (struct pending_at){.future = k->poll, .await_index = a};
		}
		v[j].count++;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_pending_at);
	*nr = n;
	return v;
}

/* Where future f's await k is (its Suspend<k> state's line), NULL if unknown. */
static const struct future_state *await_state(const struct model *m, uint32_t f, int32_t k)
{
	const struct future *fu = &m->futures[f];

	for (uint32_t i = 0; k >= 0 && i < fu->nr_states; i++)
		if (fu->states[i].kind == STATE_SUSPEND &&
		    fu->states[i].suspend_index == (uint32_t)k)
			return &fu->states[i];
	return NULL;
}

/* "main.rs:72 +2": the await line f was most often seen Pending at (its file's last
 * component), and how many other awaits it was seen at; "-" if none. */
static void parked_most(const struct model *m, uint32_t f, const struct task_future_summary *x,
			char *buf, size_t len)
{
	uint32_t best = 0, others = 0;
	const struct future_state *st;
	const char *file;

	for (uint32_t k = 0; k < x->nr_parked; k++) {
		if (x->parked[k] > x->parked[best])
			best = k;
		others += x->parked[k] != 0;
	}
	if (!x->nr_parked || !x->parked[best] || !(st = await_state(m, f, (int32_t)best)) ||
	    !st->file)
		return;
	file = strrchr(st->file, '/') ? strrchr(st->file, '/') + 1 : st->file;
	snprintf(buf, len, others > 1 ? "%s:%u +%u" : "%s:%u", file, st->line, others - 1);
}

static void print_pending(const struct trace_summary *s, const struct task_mode_summary *t,
			  FILE *out)
{
	uint32_t n;
	struct pending_at *v = pending_groups(s, t, &n);
	char name[256];

	if (!n) {
		fprintf(out, "\nno future pending in the trees when tracing stopped\n");
		return;
	}
	fprintf(out, "\nfutures pending when tracing stopped (their task's last poll's tree):\n");
	for (uint32_t i = 0; i < n; i++) {
		const struct future_state *st = await_state(s->m, v[i].future, v[i].await_index);

		future_name(s->m, v[i].future, name, sizeof(name));
		fprintf(out, "  %" PRIu64 " x %s", v[i].count, name);
		if (st && st->file)
			fprintf(out, " at %s:%u", st->file, st->line);
		fputc('\n', out);
	}
	free(v);
}

/* Off-CPU inside task polls, per task type; BLOCKING past the threshold in one poll. */
static void print_blocking(const struct trace_summary *s, const struct task_mode_summary *t,
			   FILE *out)
{
	char name[256];
	bool header = false;

	if (s->blocking_off) {
		fprintf(out, "\nblocking inside task polls: %s\n", s->blocking_off);
		return;
	}
	for (uint32_t f = 0; f < s->m->nr_futures; f++) {
		const struct task_root_summary *r = &t->roots[f];

		if (!r->blocked && !r->preempted_ns)
			continue;
		if (!header)
			fprintf(out, "\noff-CPU inside task polls:\n  %8s %10s %10s  %s\n",
				"blocked", "total ms", "preempt ms", "task");
		header = true;
		future_name(s->m, f, name, sizeof(name));
		fprintf(out, "  %8" PRIu64 " %10.1f %10.1f  %s\n", r->blocked,
			(double)r->blocked_ns / 1e6, (double)r->preempted_ns / 1e6, name);
	}
	if (!header)
		fprintf(out, "\nblocking inside task polls: watched; no task poll blocked its "
			     "thread\n");
	for (uint32_t f = 0; f < s->m->nr_futures; f++) {
		const struct task_root_summary *r = &t->roots[f];

		if (!r->over)
			continue;
		future_name(s->m, f, name, sizeof(name));
		fprintf(
		    out,
		    "BLOCKING: a task of %s blocked its thread %.1f ms in one poll (%s); %" PRIu64
		    " poll%s over %.1f ms\n",
		    name, (double)r->worst_ns / 1e6,
		    r->worst_syscall < 0 ? "not in a syscall" : syscall__name(r->worst_syscall),
		    r->over, r->over == 1 ? "" : "s", (double)s->block_threshold_ns / 1e6);
	}
}

void summary_tasks__print(struct trace_summary *s, FILE *out)
{
	struct task_mode_summary *t = s->tm;
	char name[256], ready[32];
	bool any_back = false;

	if (!t) {
		fprintf(out, "task mode: no task poll completed\n");
		return;
	}
	fprintf(out,
		"task mode: %" PRIu64 " task polls; each future as the tasks' trees saw it "
		"(per-future poll times: trace without --tasks, or asyncbpf profile)\n",
		t->task_polls);
	fprintf(out, "%9s %9s %9s %9s %9s  %-24s %s\n", "POLLS", "STARTED", "READY", "ENDED",
		"PENDING", "PARKED_AT (MOST)", "FUTURE");
	for (uint32_t f = 0; f < s->m->nr_futures; f++) {
		const struct task_future_summary *x = &t->futures[f];
		char at[64] = "-";

		if (!x->polls)
			continue;
		future_name(s->m, f, name, sizeof(name));
		snprintf(ready, sizeof(ready), "%s%" PRIu64, x->went_back ? ">=" : "", x->ready);
		parked_most(s->m, f, x, at, sizeof(at));
		fprintf(out, "%9" PRIu64 " %9" PRIu64 " %9s %9" PRIu64 " %9" PRIu64 "  %-24s %s\n",
			x->polls, x->started, ready, x->ended, x->pending, at, name);
		any_back |= x->went_back != 0;
	}
	if (any_back)
		fprintf(out, "  >=: seen back at an earlier await of its own, as a future awaited "
			     "in a loop is when the next one takes its place within one task "
			     "poll; those Readys were not seen (tracing without --tasks counts "
			     "every one)\n");
	fprintf(out, "  READY counts the Readies the trees saw: an instance that finished and "
		     "was replaced by a new one at the same place and await within one task "
		     "poll looks parked throughout, and is not counted (--deep counts every "
		     "poll where a poll fn exists)\n");
	fprintf(out, "\n%9s %9s %9s %9s %10s %10s %10s %10s %9s %10s %10s  %s\n", "TASKS",
		"COMPLETED", "CANCELLED", "POLLS", "BUSY_MS", "P50_US", "P99_US", "MAX_US", "WAKES",
		"DELAY50_US", "DELAY99_US", "TASK (ROOT FUTURE)");
	for (uint32_t f = 0; f < s->m->nr_futures; f++) {
		struct task_root_summary *r = &t->roots[f];
		uint64_t n = r->durations.nr;

		if (!r->polls)
			continue;
		sort_u64(r->durations.v, n);
		sort_u64(r->delays.v, r->delays.nr);
		future_name(s->m, f, name, sizeof(name));
		fprintf(out,
			"%9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64
			" %10.3f %10.1f %10.1f %10.1f %9" PRIu64 " %10.1f %10.1f  %s\n",
			r->tasks, r->completed, r->cancelled, r->polls, (double)r->busy_ns / 1e6,
			(double)u64_vec__percentile(r->durations.v, n, 50) / 1e3,
			(double)u64_vec__percentile(r->durations.v, n, 99) / 1e3,
			n ? (double)r->durations.v[n - 1] / 1e3 : 0.0, r->wakes,
			(double)u64_vec__percentile(r->delays.v, r->delays.nr, 50) / 1e3,
			(double)u64_vec__percentile(r->delays.v, r->delays.nr, 99) / 1e3, name);
	}
}

void summary_tasks__print_more(struct trace_summary *s, FILE *out)
{
	struct task_mode_summary *t = s->tm;

	if (!t) /* no task poll completed: summary_tasks__print said so */
		return;
	print_blocking(s, t, out);
	print_pending(s, t, out);
	task_locks__print(s->locks, out);
	if (t->concurrent_polls)
		fprintf(out,
			"%" PRIu64 " task polls overlapped another thread's poll of the same task "
			"(the runtime polled it again before this poll's exit was seen): what "
			"changed between them is counted as one change, so STARTED and READY may "
			"be short by up to that many\n",
			t->concurrent_polls);
	if (t->finished_polls)
		fprintf(out,
			"%" PRIu64 " task polls found their task finished already (the runtime "
			"polled a task woken after its end): counted apart, in no row\n",
			t->finished_polls);
	uint64_t unsure = 0;

	for (uint32_t f = 0; f < s->m->nr_futures; f++)
		unsure += t->roots[f].unsure;
	if (unsure)
		fprintf(out,
			"NOTE: %" PRIu64
			" tasks ended with a cancel pending that could not be told "
			"Ready or cancelled (docs/tracing.md, \"Task mode\"): in COMPLETED, not in "
			"CANCELLED, their root future ended, not Ready (end_unsure in the JSON)\n",
			unsure);
	if (t->lost || t->cut || t->unknown_task_polls || t->untracked_tasks ||
	    t->untracked_instances || t->not_read)
		fprintf(out,
			"WARNING: task polls whose exit was never seen %" PRIu64
			", trees cut at their bounds %" PRIu64 ", trees not read (another task "
			"poll on the CPU used the buffers while this one was preempted) %" PRIu64
			", task polls of an unknown task type %" PRIu64 ", tasks past the cap "
			"%" PRIu64 ", instances past the cap %" PRIu64 "\n",
			t->lost, t->cut, t->not_read, t->unknown_task_polls, t->untracked_tasks,
			t->untracked_instances);
}

void summary_tasks__print_totals(const struct trace_summary *s, const struct trace_run_totals *t,
				 FILE *out)
{
	const struct task_mode_summary *tm = s->tm;

	fprintf(out,
		"\ntask trees %" PRIu64 " (read in BPF), %" PRIu64 " paired, dropped %" PRIu64
		" (ring buffer full), probes attached %" PRIu64 ", probes failed %" PRIu64
		", duration %.3f s\n",
		t->task_trees, tm ? tm->task_polls : 0, t->task_dropped, t->totals.probes_attached,
		t->totals.probes_failed, (double)t->totals.duration_ns / 1e9);
	if (t->task_dropped)
		fprintf(out,
			"WARNING: %" PRIu64 " task trees DROPPED (ring buffer full): those task "
			"polls are missing and the next poll of each such task is diffed against "
			"an older tree; raise --ringbuf-size\n",
			t->task_dropped);
}

static void add_u64(cJSON *o, const char *key, uint64_t v)
{
	cJSON_AddNumberToObject(o, key, (double)v);
}

static cJSON *add_object(cJSON *arr)
{
	cJSON *o = cJSON_CreateObject();

	if (o && !cJSON_AddItemToArray(arr, o)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* "parked_at": [{"await": k, "file", "line", "count"}], the awaits f was seen Pending
 * at, most first. */
static void json_parked(const struct model *m, uint32_t f, const struct task_future_summary *x,
			cJSON *e)
{
	cJSON *arr = cJSON_AddArrayToObject(e, "parked_at"), *a;
	bool *done = x->nr_parked ? calloc(x->nr_parked, sizeof(*done)) : NULL;

	for (uint32_t n = 0; arr && done && n < x->nr_parked; n++) {
		uint32_t best = UINT32_MAX;
		const struct future_state *st;

		for (uint32_t k = 0; k < x->nr_parked; k++)
			if (!done[k] && x->parked[k] &&
			    (best == UINT32_MAX || x->parked[k] > x->parked[best]))
				best = k;
		if (best == UINT32_MAX || !(a = add_object(arr)))
			break;
		done[best] = true;
		st = await_state(m, f, (int32_t)best);
		add_u64(a, "await", best);
		if (st && st->file) {
			cJSON_AddStringToObject(a, "file", st->file);
			add_u64(a, "line", st->line);
		}
		add_u64(a, "count", x->parked[best]);
	}
	free(done);
}

int summary_tasks__json(struct trace_summary *s, cJSON *root)
{
	struct task_mode_summary *t = s->tm;
	cJSON *o = cJSON_AddObjectToObject(root, "task_mode"), *arr;
	char name[1024];
	struct pending_at *groups;
	uint32_t nr_groups;

	if (!o)
		return -ENOMEM;
	add_u64(o, "task_polls", t ? t->task_polls : 0);
	if (!t)
		return 0;
	add_u64(o, "lost", t->lost);
	add_u64(o, "not_read", t->not_read);
	add_u64(o, "finished_polls", t->finished_polls);
	add_u64(o, "concurrent_polls", t->concurrent_polls);
	add_u64(o, "cut", t->cut);
	add_u64(o, "unknown_task_polls", t->unknown_task_polls);
	add_u64(o, "unknown_dyn", t->unknown_dyn);
	add_u64(o, "untracked_tasks", t->untracked_tasks);
	add_u64(o, "untracked_instances", t->untracked_instances);
	add_u64(o, "wakes_unlinked", t->wakes_unlinked);
	if (task_locks__json(s->locks, o))
		return -ENOMEM;
	if ((arr = cJSON_AddArrayToObject(o, "futures")))
		for (uint32_t f = 0; f < s->m->nr_futures; f++) {
			const struct task_future_summary *x = &t->futures[f];
			cJSON *e;

			if (!x->polls || !(e = add_object(arr)))
				continue;
			future__display_name(&s->m->futures[f], name, sizeof(name));
			cJSON_AddStringToObject(e, "name", name);
			cJSON_AddStringToObject(e, "path", s->m->futures[f].path);
			add_u64(e, "future", f);
			add_u64(e, "polls", x->polls);
			add_u64(e, "started", x->started);
			add_u64(e, "went_back", x->went_back);
			add_u64(e, "ready", x->ready);
			add_u64(e, "ended", x->ended);
			add_u64(e, "pending", x->pending);
			json_parked(s->m, f, x, e);
		}
	if ((arr = cJSON_AddArrayToObject(o, "tasks")))
		for (uint32_t f = 0; f < s->m->nr_futures; f++) {
			struct task_root_summary *r = &t->roots[f];
			uint64_t n = r->durations.nr, nd = r->delays.nr;
			cJSON *e;

			if (!r->polls || !(e = add_object(arr)))
				continue;
			sort_u64(r->durations.v, n);
			sort_u64(r->delays.v, nd);
			future__display_name(&s->m->futures[f], name, sizeof(name));
			cJSON_AddStringToObject(e, "name", name);
			add_u64(e, "root", f);
			add_u64(e, "tasks", r->tasks);
			add_u64(e, "completed", r->completed);
			add_u64(e, "cancelled", r->cancelled);
			add_u64(e, "end_unsure", r->unsure);
			add_u64(e, "polls", r->polls);
			add_u64(e, "busy_ns", r->busy_ns);
			add_u64(e, "offcpu_ns", r->offcpu_ns);
			add_u64(e, "p50_ns", u64_vec__percentile(r->durations.v, n, 50));
			add_u64(e, "p99_ns", u64_vec__percentile(r->durations.v, n, 99));
			add_u64(e, "max_ns", n ? r->durations.v[n - 1] : 0);
			add_u64(e, "wakes", r->wakes);
			add_u64(e, "self_wakes", r->self_wakes);
			add_u64(e, "delay_p50_ns", u64_vec__percentile(r->delays.v, nd, 50));
			add_u64(e, "delay_p99_ns", u64_vec__percentile(r->delays.v, nd, 99));
			add_u64(e, "delay_max_ns", nd ? r->delays.v[nd - 1] : 0);
			add_u64(e, "blocked", r->blocked);
			add_u64(e, "blocked_ns", r->blocked_ns);
			add_u64(e, "preempted_ns", r->preempted_ns);
			add_u64(e, "tracer_ns", r->tracer_ns);
			add_u64(e, "polls_over_threshold", r->over);
		}
	groups = pending_groups(s, t, &nr_groups);
	if (nr_groups && !groups)
		return -ENOMEM;
	if ((arr = cJSON_AddArrayToObject(o, "pending_at_end")))
		for (uint32_t i = 0; i < nr_groups; i++) {
			const struct future_state *st =
			    await_state(s->m, groups[i].future, groups[i].await_index);
			cJSON *e;

			if (!(e = add_object(arr)))
				continue;
			future__display_name(&s->m->futures[groups[i].future], name, sizeof(name));
			cJSON_AddStringToObject(e, "name", name);
			add_u64(e, "future", groups[i].future);
			add_u64(e, "count", groups[i].count);
			if (groups[i].await_index >= 0)
				add_u64(e, "await", (uint64_t)groups[i].await_index);
			else
				cJSON_AddNullToObject(e, "await");
			if (st && st->file) {
				cJSON_AddStringToObject(e, "file", st->file);
				add_u64(e, "line", st->line);
			} else {
				cJSON_AddNullToObject(e, "file");
				cJSON_AddNullToObject(e, "line");
			}
		}
	free(groups);
	return 0;
}
