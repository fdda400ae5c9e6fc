// SPDX-License-Identifier: GPL-2.0
/*
 * Resources and deadlocks (resources.h). Everything read from the target is
 * untrusted: a pointer that cannot be read leaves the guard out (counted), a lock is
 * held only when its own state says so, and a cycle is proven only through edges
 * that are each backed by memory: a task queued on a lock (its Acquire), the lock
 * without a permit left, and exactly one task whose guard points at it. A lock held
 * in part (permits, read guards) gives edges to every task whose guard points at
 * it: a cycle through one is a possible deadlock, said so.
 */
#include "stacks/resources.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/walk.h"
#include "lib/hashmap.h"
#include "lib/vec.h"
#include "stacks/report.h"
#include "stacks/wait_graph.h"

struct builder {
	struct res_report *r;
	const struct model *m;
	stacks_read_fn read;
	void *ctx;
	struct u64_map by_key;	 /* a lock's key -> resource index */
	struct u64_map awaitees; /* (future, state) -> 1 + the waiting future it awaits, or 0 */
	struct u64_map headers;	 /* a task's header -> its index */
	uint32_t cap_holds, cap_waits, cap_res;
};

static bool read_u64(const struct builder *b, uint64_t addr, uint64_t *v)
{
	return !b->read(b->ctx, addr, v, sizeof(*v));
}

/*
 * The resource whose key is at key, added at its first sight with its state word
 * (where it is comes from the DWARF; what it says, lock_family__locked). RES_NONE
 * when out of memory.
 */
static uint32_t resource_at(struct builder *b, uint64_t key, uint8_t family, uint64_t state_offset)
{
	struct res_report *r = b->r;
	struct resource *x;
	uint64_t i, v;

	if (u64_map__get(&b->by_key, key, &i))
		return (uint32_t)i;
	if (vec__reserve((void **)&r->res, &b->cap_res, r->nr_res + 1, sizeof(*r->res)) ||
	    u64_map__set(&b->by_key, key, r->nr_res))
		return RES_NONE;
	x = &r->res[r->nr_res];
	*x = (struct resource){.key = key, .family = family, .kind = GUARD_OTHER};
	if (family != LOCK_NONE && read_u64(b, key + state_offset, &v)) {
		x->read = true;
		x->word = v;
		x->available = lock_family__permits(family, v);
		x->locked = lock_family__locked(family, v);
	}
	return r->nr_res++;
}

/* Where the way of steps leads from addr (0 when a pointer on it cannot be read). */
static uint64_t follow_steps(const struct builder *b, const struct await_step *steps, uint32_t n,
			     uint64_t addr)
{
	uint64_t to, ptr_at;

	return await_steps__follow(steps, n < GUARD_STEPS ? n : GUARD_STEPS, addr, b->read, b->ctx,
				   &to, &ptr_at)
		   ? to
		   : 0;
}

static const struct future_state *state_of(const struct model *m, const struct stack_frame *f)
{
	const struct future *fut;

	if (f->state != FRAME_SUSPENDED || f->future < 0 || (uint32_t)f->future >= m->nr_futures)
		return NULL;
	fut = &m->futures[f->future];
	return future__state_of(fut, f->discr);
}

/* A channel's sender kept across an await: the channel, its count of senders. */
static int add_sender(struct builder *b, struct res_hold *h, const struct held_guard *g)
{
	uint64_t key = follow_steps(b, g->steps, g->nr_steps, h->addr), v;
	struct resource *x;

	if (!key) {
		b->r->unread++;
		return 0;
	}
	if ((h->resource = resource_at(b, key, LOCK_NONE, 0)) == RES_NONE)
		return -ENOMEM;
	x = &b->r->res[h->resource];
	if (!x->type && g->resource) {
		x->type = g->resource;
		x->lock = key;
	}
	x->kind = GUARD_SENDER;
	x->sender_slots++;
	if (read_u64(b, key + g->state_offset, &v)) {
		x->senders = v;
		x->senders_read = true;
	}
	if (g->has_strong) {
		x->weak = true;
		if (read_u64(b, key + g->strong, &v)) {
			x->strong = v;
			x->strong_read = true;
		}
	}
	return 0;
}

static int add_holds(struct builder *b, uint32_t task, const struct task_stack *s)
{
	struct res_report *r = b->r;
	int e;

	for (uint32_t k = 0; k < s->nr; k++) {
		const struct future_state *st = state_of(b->m, &s->frames[k]);

		for (uint32_t j = 0; st && j < st->nr_held; j++) {
			const struct held_guard *g = &st->held[j];
			struct res_hold *h;
			uint64_t key;

			if (vec__reserve((void **)&r->holds, &b->cap_holds, r->nr_holds + 1,
					 sizeof(*r->holds)))
				return -ENOMEM;
			h = &r->holds[r->nr_holds++];
			*h = (struct res_hold){.task = task,
					       .frame = k,
					       .guard = g,
					       .addr = s->frames[k].addr + g->offset,
					       .resource = RES_NONE};
			if (g->lock == GUARD_SENDER) {
				if ((e = add_sender(b, h, g)))
					return e;
				continue;
			}
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
			x->shared_claims += g->lock == GUARD_SHARED;
			x->permit_claims += g->lock == GUARD_PERMITS;
			x->all_claims += g->all_permits;
			x->claims++;
			h->held = g->provable && x->read && lock_family__held(x->family, x->word);
		}
	}
	return 0;
}

/* tokio's spawn_blocking tasks (its worker threads among them) run a closure for
 * good: no await, so no guard slot that a running one could have changed. */
static bool blocking_task(const struct model *m, const struct stk_task *t)
{
	int32_t f = t->stack.nr ? t->stack.frames[0].future : -1;

	return f >= 0 && (uint32_t)f < m->nr_futures && m->futures[f].path &&
	       starts_with(m->futures[f].path, "tokio::runtime::blocking::task::BlockingTask<");
}

/* The task whose header is at header, or RES_NONE. */
static uint32_t task_of_header(const struct builder *b, uint64_t header)
{
	uint64_t i;

	return u64_map__get(&b->headers, header, &i) ? (uint32_t)i : RES_NONE;
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
			if (b->m->futures[i].wait && !b->m->futures[i].wait->names_only &&
			    b->m->futures[i].path &&
			    !strcmp(b->m->futures[i].path, st->awaitee_type))
				v = i + 1;
		if (u64_map__set(&b->awaitees, key, v))
			return NULL;
	}
	*at = f->addr + st->awaitee_offset;
	return v ? &b->m->futures[v - 1] : NULL;
}

/*
 * A lock known by its key only (tokio's semaphore: a RwLock's guards point at it, not
 * at the lock) named by the lock method the waiting frame k is, or was awaited from
 * (a few frames out: Mutex::lock -> acquire -> Acquire), when that method's `self`
 * leads to the same key.
 */
static bool name_by_method(const struct builder *b, const struct task_stack *s, uint32_t k,
			   uint64_t key, struct resource *x)
{
	for (uint32_t j = k + 1, n = 0; j-- > 0 && n < 4; n++) { /* k itself, 3 out */
		const struct stack_frame *f = &s->frames[j];
		const struct future_wait *fw;

		if (f->future < 0 || (uint32_t)f->future >= b->m->nr_futures ||
		    !(fw = b->m->futures[f->future].wait) || !fw->names_only)
			continue;
		if (follow_steps(b, fw->steps, fw->nr_steps, f->addr) == key) {
			uint32_t total;

			x->type = fw->type;
			x->lock = key - fw->back;
			if (fw->has_total &&
			    !b->read(b->ctx, x->lock + fw->total, &total, sizeof(total)))
				x->total = total;
		}
		return true;
	}
	return false;
}

/* The innermost frame a task waits in (future.wait), if any: a lock, a task it
 * joins, a channel or a Notify; or the waiting future a frame awaits. */
static int add_wait(struct builder *b, const struct stk_task *tasks, uint32_t task)
{
	const struct task_stack *s = &tasks[task].stack;
	struct res_report *r = b->r;
	const struct stack_frame *f = NULL;
	const struct future *fut = NULL;
	const struct future_wait *fw;
	struct res_wait *w;
	uint64_t key, at = 0;
	uint8_t queued = 1;
	uint32_t k;

	for (k = s->nr; k-- > 0 && !fut;) {
		f = &s->frames[k];
		if (f->future < 0 || (uint32_t)f->future >= b->m->nr_futures)
			continue;
		if (b->m->futures[f->future].wait && !b->m->futures[f->future].wait->names_only) {
			fut = &b->m->futures[f->future];
			at = f->addr;
		} else {
			/* (a lock method: the Acquire it awaits, if the stack passed over it) */
			fut = awaitee_wait(b, f, &at);
		}
		if (fut)
			break;
	}
	/* a lock method awaiting another lock first (async-lock's RwLock::write its
	 * inner Mutex) a few frames out: the task waits on the method's lock */
	for (uint32_t j = k, n = 0; fut && j-- > 0 && n < 3; n++) {
		const struct stack_frame *o = &s->frames[j];
		const struct future_wait *ow;

		if (o->future < 0 || (uint32_t)o->future >= b->m->nr_futures ||
		    !(ow = b->m->futures[o->future].wait) || !ow->over_inner)
			continue;
		fut = &b->m->futures[o->future];
		at = o->addr;
		k = j;
		break;
	}
	if (!fut || !(fw = fut->wait) || !(key = follow_steps(b, fw->steps, fw->nr_steps, at)))
		return 0;
	if (fw->kind == WAIT_LOCK && fw->queued != FUTURE_NO_OFFSET &&
	    b->read(b->ctx, at + fw->queued, &queued, 1)) {
		/* not seen as a wait, but it may have been given permits: its lock's
		 * write guards are not proven */
		uint32_t i = resource_at(b, key, fw->family, fw->state);

		if (i == RES_NONE)
			return -ENOMEM;
		r->res[i].given = true;
		r->res[i].given_unknown = true;
		return 0;
	}
	/* tokio: a queued Acquire is given the permits it asked for as they come free,
	 * before it runs again: fewer left than asked, and it holds some (unknown counts:
	 * taken as given, which proves nothing) */
	uint64_t left = 0;
	uint32_t asked = 0;
	bool tokio_queued = fw->kind == WAIT_LOCK && fw->family == LOCK_TOKIO && queued == 1;
	bool unknown = tokio_queued && (fw->asked == FUTURE_NO_OFFSET ||
					b->read(b->ctx, at + fw->asked, &asked, sizeof(asked)) ||
					b->read(b->ctx, at + fw->left, &left, sizeof(left)));
	bool given = tokio_queued && (unknown || left < asked);
	if (vec__reserve((void **)&r->waits, &b->cap_waits, r->nr_waits + 1, sizeof(*r->waits)))
		return -ENOMEM;
	w = &r->waits[r->nr_waits];
	*w = (struct res_wait){.task = task,
			       .frame = k,
			       .kind = fw->kind,
			       .resource = RES_NONE,
			       .joins = RES_NONE,
			       .queued = queued == 1};
	if (fw->kind == WAIT_JOIN) {
		w->joins = task_of_header(b, key);
		r->nr_waits++;
		return 0;
	}
	w->resource =
	    resource_at(b, key, fw->kind == WAIT_LOCK ? fw->family : LOCK_NONE, fw->state);
	if (w->resource == RES_NONE)
		return -ENOMEM;
	struct resource *x = &r->res[w->resource];
	x->wait_kind = fw->kind;
	x->given |= given;
	x->given_unknown |= unknown;
	if (given && !unknown)
		x->given_permits += asked - left;
	if (fw->type && !x->type) {
		x->type = fw->type;
		x->lock = key;
	}
	if ((!x->type || (!x->total && !x->named)) && name_by_method(b, s, k, key, x))
		x->named = true;
	if (!x->via)
		x->via = fut;
	w->given = given;
	/* a join!, select! or timeout on the way to it: another branch may end the wait */
	for (uint32_t j = 0; j <= k && j < s->nr; j++)
		w->alternatives |= s->frames[j].branches > 0;
	w->receives = fw->receives;
	r->nr_waits++;
	return 0;
}

/*
 * resource.counted: a tokio lock whose count of permits is known (a RwLock's `mr`):
 * the permits available, those given to queued waiters and those its guard slots
 * take (one a read guard, all a write guard) add up to it. A stale slot would count
 * permits no one holds; a waiter whose counts cannot be read, or a Semaphore permit
 * (its count is not read), proves nothing. async-lock's RwLock and channels count
 * their readers and senders themselves.
 */
static bool permits_add_up(const struct resource *x, uint32_t running)
{
	uint64_t sum;

	if (running)
		return false;	     /* a guard taken since its task last parked is not seen */
	if (x->kind == GUARD_SENDER) /* a channel: every sender a slot's */
		return x->senders_read && x->sender_slots && x->senders == x->sender_slots &&
		       (!x->weak || (x->strong_read && x->strong == x->senders + 1));
	/* async-lock's RwLock counts its readers: as many as the read slots on it (its
	 * write slots are proven apart: by its writer bit alone) */
	if (x->family == LOCK_ASYNC_RWLOCK)
		return x->read && x->shared_claims &&
		       lock_family__readers(x->family, x->word) == x->shared_claims;

	if (x->family != LOCK_TOKIO || !x->read || !x->total || x->given_unknown || !x->claims ||
	    x->claims != x->shared_claims + x->all_claims || x->permit_claims)
		return false;
	sum =
	    x->available + x->given_permits + x->shared_claims + (uint64_t)x->all_claims * x->total;
	return sum == x->total;
}

/*
 * A guard that takes every permit of its lock (a tokio RwLock's write side) holds it
 * when none is left and no queued waiter was given any: then guards hold every
 * permit, and only one that takes them all can, unless readers do (one each: 2^29
 * of them by default, but `RwLock::with_max_readers(n)` can make that a few), so no
 * read guard may claim the lock either: a slot of each kind, one is stale, and
 * which is not known. Then exclusive locks two tasks' guards point at: neither
 * claim stands (one slot is stale). Then each lock's holder, its counts, and the
 * holds and waits grouped by resource (by_res_*: a counting sort, linear in tasks).
 */
static int index_resources(struct res_report *r)
{
	bool *several = calloc(r->nr_res ? r->nr_res : 1, sizeof(bool));

	if (!several)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->nr_res; i++)
		r->res[i].counted = permits_add_up(&r->res[i], r->running);
	for (uint32_t i = 0; i < r->nr_holds; i++) {
		struct res_hold *h = &r->holds[i];
		const struct resource *x;

		if (h->held || h->resource == RES_NONE)
			continue;
		x = &r->res[h->resource];
		if (x->counted &&
		    (x->family != LOCK_ASYNC_RWLOCK || h->guard->lock == GUARD_SHARED))
			h->held = true;
		else if (h->guard->all_permits)
			h->held = x->read && x->locked && !x->given && !x->shared_claims;
	}
	for (uint32_t i = 0; i < r->nr_res; i++)
		r->res[i].holder = RES_NONE;
	for (uint32_t i = 0; i < r->nr_holds; i++) {
		uint32_t xi = r->holds[i].resource;
		struct resource *x;

		if (!r->holds[i].held)
			continue;
		x = &r->res[xi];
		if (x->holder == RES_NONE && !several[xi])
			x->holder = r->holds[i].task;
		else if (x->holder != r->holds[i].task && x->counted)
			several[xi] = true; /* readers: each holds it */
		else if (x->holder != r->holds[i].task)
			x->ambiguous = true;
	}
	for (uint32_t i = 0; i < r->nr_res; i++)
		if (several[i])
			r->res[i].holder = RES_NONE;
	free(several);
	for (uint32_t i = 0; i < r->nr_holds; i++) {
		struct res_hold *h = &r->holds[i];

		if (h->resource == RES_NONE)
			continue;
		if (h->held && r->res[h->resource].ambiguous) {
			h->ambiguous = true;
			h->held = false;
		}
		r->res[h->resource].holders += h->held;
		r->res[h->resource].nr_refs[0]++;
	}
	for (uint32_t i = 0; i < r->nr_res; i++)
		if (r->res[i].ambiguous)
			r->res[i].holder = RES_NONE;
	for (uint32_t i = 0; i < r->nr_waits; i++)
		if (r->waits[i].resource != RES_NONE) {
			r->res[r->waits[i].resource].waiters += r->waits[i].queued;
			r->res[r->waits[i].resource].nr_refs[1]++;
		}
	r->by_res_holds = malloc((r->nr_holds ? r->nr_holds : 1) * sizeof(uint32_t));
	r->by_res_waits = malloc((r->nr_waits ? r->nr_waits : 1) * sizeof(uint32_t));
	if (!r->by_res_holds || !r->by_res_waits)
		return -ENOMEM;
	for (uint32_t i = 0, at[2] = {0, 0}; i < r->nr_res; i++)
		for (int k = 0; k < 2; k++) {
			r->res[i].first_ref[k] = at[k];
			at[k] += r->res[i].nr_refs[k];
			r->res[i].nr_refs[k] = 0;
		}
	for (uint32_t i = 0; i < r->nr_holds; i++) {
		struct resource *x;

		if (r->holds[i].resource == RES_NONE)
			continue;
		x = &r->res[r->holds[i].resource];
		r->by_res_holds[x->first_ref[0] + x->nr_refs[0]++] = i;
	}
	for (uint32_t i = 0; i < r->nr_waits; i++) {
		struct resource *x;

		if (r->waits[i].resource == RES_NONE)
			continue;
		x = &r->res[r->waits[i].resource];
		r->by_res_waits[x->first_ref[1] + x->nr_refs[1]++] = i;
	}
	return 0;
}

int resources__build(struct res_report *r, const struct model *m, const struct stk_task *tasks,
		     uint32_t nr, stacks_read_fn read, void *ctx)
{
	struct builder b = {.r = r, .m = m, .read = read, .ctx = ctx};
	int e = 0;

	memset(r, 0, sizeof(*r));
	u64_map__init(&b.by_key);
	u64_map__init(&b.awaitees);
	u64_map__init(&b.headers);
	for (uint32_t i = 0; i < nr && !e; i++) {
		if (tasks[i].root.header && !tasks[i].inner)
			e = u64_map__set(&b.headers, tasks[i].root.header, i);
		r->running +=
		    !tasks[i].inner && tasks[i].root.st.running && !blocking_task(m, &tasks[i]);
	}
	for (uint32_t i = 0; i < nr && !e; i++) {
		if (tasks[i].inner)
			continue;
		if (!(e = add_holds(&b, i, &tasks[i].stack)))
			e = add_wait(&b, tasks, i);
	}
	u64_map__free(&b.by_key);
	u64_map__free(&b.awaitees);
	u64_map__free(&b.headers);
	if (!e) {
		if (!(e = index_resources(r)))
			e = wait_graph__cycles(r, tasks, nr);
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
	free(r->behind);
	free(r->cycle_res);
	free(r->by_res_holds);
	free(r->by_res_waits);
	memset(r, 0, sizeof(*r));
}
