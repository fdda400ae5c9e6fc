// SPDX-License-Identifier: GPL-2.0
/*
 * The futures a parked task waits in, and the way from each to what it waits for
 * (future.wait_*; docs/stacks.md, "Resources and deadlocks"): by the waiting future's
 * crate and type path, the way itself from its DWARF type (keys.c), never assumed.
 *
 * - tokio's batch_semaphore::Acquire (every tokio lock, a bounded channel's room, a
 *   Semaphore): its `semaphore` pointer, and its `queued` flag;
 * - async-lock's Mutex::acquire_slow (async-std's and smol's Mutex), RwLock::read,
 *   write, upgradable_read, Semaphore::acquire: their `self`;
 * - a task's handle (tokio's JoinHandle, async-task's Task, async-std's JoinHandle
 *   through the Task it holds): the task's header;
 * - tokio's mpsc/broadcast `recv`, watch `changed` (their `self`), oneshot Receiver,
 *   Notified, async-channel's Recv/Send: the channel or the Notify.
 */
#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/guards.h"
#include "analyze/keys.h"

enum start {
	FROM_MEMBER, /* a member of the future (a hand-written one) */
	FROM_SELF,   /* an async fn's `self`, kept across its awaits */
	FROM_FIRST,  /* the future's first pointer (a task handle) */
	FROM_TASK,   /* a member holding an async-task `Task` inline: its first pointer */
};

/* tokio's locks: the batch semaphore each holds, named by the lock around it */
#define TOKIO_SEM                                                                                  \
	{                                                                                          \
		.suffix = "batch_semaphore::Semaphore", .named_by_holder = true                    \
	}

static const struct {
	const char *crate, *prefix, *contains;
	enum wait_kind kind;
	enum start start;
	const char *member;
	struct key_kind key;
	bool names_only;	 /* future_wait.names_only */
	enum lock_family family; /* a lock's (WAIT_LOCK) */
	bool over_inner;	 /* future_wait.over_inner */
	bool receives;		 /* future_wait.receives */
} waits[] = {
    {.crate = "tokio",
     .prefix = "tokio::sync::batch_semaphore::Acquire",
     .kind = WAIT_LOCK,
     .start = FROM_MEMBER,
     .member = "semaphore",
     .key = TOKIO_SEM,
     .family = LOCK_TOKIO},
    {.crate = "async_lock",
     .prefix = "async_lock::mutex::",
     .contains = "::acquire_slow::{async_fn_env",
     .kind = WAIT_LOCK,
     .start = FROM_SELF,
     .member = "self",
     .key = {.prefix = "async_lock::mutex::Mutex<"},
     .family = LOCK_ASYNC_LOCK},
    /* async-lock's RwLock::read/write/upgradable_read: on its readers or writer (an
     * EventListener), or first on its inner Mutex, which is the RwLock's too */
    {.crate = "async_lock",
     .prefix = "async_lock::rwlock::",
     .contains = "::{async_fn_env",
     .kind = WAIT_LOCK,
     .start = FROM_SELF,
     .member = "self",
     .key = {.prefix = "async_lock::rwlock::RwLock<"},
     .family = LOCK_ASYNC_RWLOCK,
     .over_inner = true},
    {.crate = "async_lock",
     .prefix = "async_lock::semaphore::",
     .contains = "::{async_fn_env",
     .kind = WAIT_LOCK,
     .start = FROM_SELF,
     .member = "self",
     .key = {.exact = "async_lock::semaphore::Semaphore"},
     .family = LOCK_ASYNC_SEMAPHORE},
    /* futures-util's Mutex::lock / lock_owned: its `mutex` (an Option of a reference
     * or an Arc); parked only once its waker is registered (wait_key set) */
    {.crate = "futures_util",
     .prefix = "futures_util::lock::mutex::MutexLockFuture<",
     .kind = WAIT_LOCK,
     .start = FROM_MEMBER,
     .member = "mutex",
     .key = {.prefix = "futures_util::lock::mutex::Mutex<"},
     .family = LOCK_FUTURES},
    {.crate = "futures_util",
     .prefix = "futures_util::lock::mutex::OwnedMutexLockFuture<",
     .kind = WAIT_LOCK,
     .start = FROM_MEMBER,
     .member = "mutex",
     .key = {.prefix = "futures_util::lock::mutex::Mutex<"},
     .family = LOCK_FUTURES},
    {.crate = "tokio",
     .prefix = "tokio::runtime::task::join::JoinHandle<",
     .kind = WAIT_JOIN,
     .start = FROM_FIRST},
    {.crate = "async_task",
     .prefix = "async_task::task::Task<",
     .kind = WAIT_JOIN,
     .start = FROM_FIRST},
    /* async-std's JoinHandle { handle: Option<async_global_executor::Task<T>>, .. },
     * which holds async-task's Task */
    {.crate = "async_std",
     .prefix = "async_std::task::join_handle::JoinHandle<",
     .kind = WAIT_JOIN,
     .start = FROM_TASK,
     .member = "handle",
     .key = {.prefix = "async_task::task::Task<"}},
    {.crate = "tokio",
     .prefix = "tokio::sync::mpsc::",
     .contains = "::recv::{async_fn_env",
     .kind = WAIT_CHANNEL,
     .start = FROM_SELF,
     .member = "self",
     .key = {.prefix = "tokio::sync::mpsc::chan::Chan<"},
     .receives = true},
    {.crate = "tokio",
     .prefix = "tokio::sync::broadcast::",
     .contains = "::recv::{async_fn_env",
     .kind = WAIT_CHANNEL,
     .start = FROM_SELF,
     .member = "self",
     .key = {.prefix = "tokio::sync::broadcast::Shared<"}},
    {.crate = "tokio",
     .prefix = "tokio::sync::watch::",
     .contains = "::changed::{async_fn_env",
     .kind = WAIT_CHANNEL,
     .start = FROM_SELF,
     .member = "self",
     .key = {.prefix = "tokio::sync::watch::Shared<"}},
    {.crate = "tokio",
     .prefix = "tokio::sync::oneshot::Receiver<",
     .kind = WAIT_CHANNEL,
     .start = FROM_MEMBER,
     .member = "inner",
     .key = {.prefix = "tokio::sync::oneshot::Inner<"}},
    {.crate = "tokio",
     .prefix = "tokio::sync::notify::Notified",
     .kind = WAIT_NOTIFY,
     .start = FROM_MEMBER,
     .member = "notify",
     .key = {.exact = "tokio::sync::notify::Notify"}},
    {.crate = "async_channel",
     .prefix = "async_channel::Recv<",
     .kind = WAIT_CHANNEL,
     .start = FROM_MEMBER,
     .member = "receiver",
     .key = {.prefix = "async_channel::Channel<"},
     .receives = true},
    {.crate = "async_channel",
     .prefix = "async_channel::Send<",
     .kind = WAIT_CHANNEL,
     .start = FROM_MEMBER,
     .member = "sender",
     .key = {.prefix = "async_channel::Channel<"}},
    /* tokio's lock methods that await an Acquire: their `self` names the lock (a
     * RwLock's guards point at its semaphore, not at it) */
    {.crate = "tokio",
     .prefix = "tokio::sync::rwlock::",
     .contains = "::{async_fn_env",
     .kind = WAIT_LOCK,
     .start = FROM_SELF,
     .member = "self",
     .key = TOKIO_SEM,
     .names_only = true,
     .family = LOCK_TOKIO},
    {.crate = "tokio",
     .prefix = "tokio::sync::mutex::",
     .contains = "::{async_fn_env",
     .kind = WAIT_LOCK,
     .start = FROM_SELF,
     .member = "self",
     .key = TOKIO_SEM,
     .names_only = true,
     .family = LOCK_TOKIO},
    {.crate = "tokio",
     .prefix = "tokio::sync::semaphore::",
     .contains = "::{async_fn_env",
     .kind = WAIT_LOCK,
     .start = FROM_SELF,
     .member = "self",
     .key = TOKIO_SEM,
     .names_only = true,
     .family = LOCK_TOKIO},
};

/* The offset of the first pointer inside a struct, through members held inline
 * (`JoinHandle { raw: RawTask { ptr: NonNull { pointer } } }`). */
static bool first_pointer(Dwarf_Die *t, int depth, uint64_t *off, uint32_t *visits)
{
	Dwarf_Die m, mt;

	if (depth > 4 || dwarf_child(t, &m) != 0)
		return false;
	do {
		uint64_t at, in;

		if (++*visits > KEYS_BUDGET)
			return false; /* hostile types: bounded as keys.c's searches are */
		if (dwarf_tag(&m) != DW_TAG_member || !member_offset(&m, &at) || !die_type(&m, &mt))
			continue;
		if (dwarf_tag(&mt) == DW_TAG_pointer_type) {
			*off = at;
			return true;
		}
		if (dwarf_tag(&mt) == DW_TAG_structure_type &&
		    first_pointer(&mt, depth + 1, &in, visits)) {
			*off = at + in;
			return true;
		}
	} while (dwarf_siblingof(&m, &m) == 0);
	return false;
}

/* tokio's Acquire { node: Waiter { state: AtomicUsize, .. }, num_permits: u32, .. }:
 * where the permits asked for and those still owed are (future_wait.asked, .left);
 * left unset unless both are found with the sizes they are read at. */
static void acquire_permits(Dwarf_Die *acquire, struct future_wait *f)
{
	uint64_t node, state, asked;
	Dwarf_Die nt, st, at;
	Dwarf_Word size;

	if (!keys__member(acquire, "num_permits", &asked, &at) ||
	    dwarf_aggregate_size(&at, &size) != 0 || size != 4 ||
	    !keys__member(acquire, "node", &node, &nt) ||
	    !keys__member(&nt, "state", &state, &st) || dwarf_aggregate_size(&st, &size) != 0 ||
	    size != 8)
		return;
	f->asked = asked;
	f->left = node + state;
}

/* tokio's RwLock { mr: u32, s: Semaphore, .. }: the permits it was made with
 * (future_wait.total); a Mutex and a Semaphore keep no such count. */
static void lock_total(struct key_path *p, struct future_wait *f)
{
	Dwarf_Die t;
	Dwarf_Word size;
	uint64_t off;

	if (p->by_holder && keys__member(&p->holder, "mr", &off, &t) &&
	    dwarf_aggregate_size(&t, &size) == 0 && size == 4) {
		f->has_total = true;
		f->total = off;
	}
}

static int known(const struct future *f)
{
	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++)
		if (!strcmp(f->crate, waits[i].crate) && starts_with(f->path, waits[i].prefix) &&
		    (!waits[i].contains || strstr(f->path, waits[i].contains)))
			return (int)i;
	return -1;
}

/* The way from a future (its type die) to what entry k says it waits for, into fw. */
static bool way(struct walk *w, struct future_wait *f, Dwarf_Die *die, int k)
{
	struct key_path p = {0};
	uint32_t visits = 0;
	Dwarf_Die mt;
	uint64_t off;

	switch (waits[k].start) {
	case FROM_FIRST:
		if (!first_pointer(die, 0, &off, &visits))
			return false;
		f->nr_steps = 1;
		f->steps[0] = (struct await_step){off, true};
		return true;
	case FROM_SELF:
		if (!keys__env_member(die, waits[k].member, &off, &mt))
			return false;
		break;
	case FROM_MEMBER:
	case FROM_TASK:
		if (!keys__member(die, waits[k].member, &off, &mt))
			return false;
		break;
	}
	if (!keys__from_member(w, off, &mt, &waits[k].key, &p))
		return false;
	if (waits[k].start == FROM_TASK) {
		/* the Task found inline: on through its pointer to the task's header */
		uint64_t in;

		if (!first_pointer(&p.key, 0, &in, &visits) || p.nr_steps >= GUARD_STEPS)
			return false;
		if (!p.steps[p.nr_steps - 1].deref)
			p.steps[p.nr_steps - 1].offset += in;
		else
			p.steps[p.nr_steps++] = (struct await_step){in, false};
		p.steps[p.nr_steps - 1].deref = true;
		p.name = NULL;
	}
	f->nr_steps = p.nr_steps;
	memcpy(f->steps, p.steps, sizeof(f->steps));
	f->type = p.name ? strpool__intern(&w->m->strings, p.name) : NULL;
	f->back = p.back;
	if (waits[k].names_only) {
		/* only a name for the lock its Acquire waits on: useless without one */
		f->names_only = true;
		f->family = LOCK_TOKIO;
		f->queued = f->asked = f->left = FUTURE_NO_OFFSET;
		lock_total(&p, f);
		return f->type && guards__state_word(&p.key, f->family, &f->state);
	}
	if (waits[k].kind != WAIT_LOCK)
		return true;
	/* a lock: its family, where the key says it is held */
	f->family = waits[k].family;
	f->over_inner = waits[k].over_inner;
	f->queued = f->asked = f->left = FUTURE_NO_OFFSET;
	if (f->family == LOCK_TOKIO && !keys__member(die, "queued", &f->queued, NULL))
		return false;
	if (f->family == LOCK_TOKIO)
		acquire_permits(die, f);
	return guards__state_word(&p.key, f->family, &f->state);
}

int waits__find(struct walk *w)
{
	for (uint32_t i = 0; i < w->m->nr_futures; i++) {
		struct future *f = &w->m->futures[i];
		struct future_wait fw = {0};
		Dwarf_Die die;
		int k;

		if (!f->crate || !f->path || !f->die_offset || (k = known(f)) < 0 ||
		    !dwarf_offdie(w->dw, f->die_offset, &die) || !way(w, &fw, &die, k))
			continue;
		fw.kind = waits[k].kind;
		fw.receives = waits[k].receives;
		if (!(f->wait = malloc(sizeof(*f->wait))))
			return -ENOMEM;
		*f->wait = fw;
	}
	return 0;
}
