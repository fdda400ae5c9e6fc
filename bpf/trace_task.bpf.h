/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Part of trace.bpf.c (included once): task mode (docs/tracing.md, "Task mode"). A
 * probe on each runtime's task vtable function (the header in rdi) and one at the
 * exit of its call; at both the task's future tree is read from memory with the
 * analyzer's table (the walk of user/model/future_tree.c, the reference: breadth
 * first, conditions and derefs per slot, a (future, address) pair kept once, bounded
 * nodes and depth) and sent as one task_tree_record.
 */
#ifndef ASYNCBPF_TRACE_TASK_BPF_H
#define ASYNCBPF_TRACE_TASK_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* sized by user space: the model's futures */
	__type(key, __u32);
	__type(value, struct tree_node_spec);
} tree_nodes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* sized by user space: the model's tree slots */
	__type(key, __u32);
	__type(value, struct tree_slot_spec);
} tree_slots SEC(".maps");

/* A dyn Future's vtable (run-time address) -> its future type. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by user space */
	__type(key, __u64);
	__type(value, __u32);
} dyn_vtables SEC(".maps");

/* A task header's vtable (run-time address) -> its task type (task_info.type). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by user space: the model's task types */
	__type(key, __u64);
	__type(value, __u32);
} task_vtables SEC(".maps");

/* A task type (the model's task_types index) -> how to read its tree. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* sized by user space: the model's task types */
	__type(key, __u32);
	__type(value, struct task_info);
} task_infos SEC(".maps");

/* The record being built (too big for the stack), per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct task_tree_record);
} task_scratch SEC(".maps");

/*
 * Copies of the task's bytes (per CPU), so that most reads of a walk are not one
 * bpf_probe_read_user each: that helper costs about as much as a walk step, more
 * where the kernel's usercopy hardening looks the destination up (BPF's private
 * stacks are per-CPU memory). Region 0: the header through the end of its root
 * future (or a boxed root), read once per walk; most of a tree lives inline there.
 * Region 1: a future outside it (behind a Box or a dyn pointer), read when the walk
 * reaches it, with the futures it holds inline.
 */
struct task_cache {
	/* bumped by each walk: a walk that finds it changed at its end was preempted by
	 * another on this CPU, which overwrote the buffers (then it sends no tree) */
	__u64 gen;
	__u64 base[2], len[2];
	__u8 root[TASK_TREE_CACHE];
	__u8 node[TASK_NODE_CACHE];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct task_cache);
} task_cache SEC(".maps");

static __always_inline struct task_cache *cache_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&task_cache, &zero);
}

/* Copy [base, base + len) into region 0, at most its size (none if the copy fails:
 * reads then go to memory). */
static __always_inline void cache_fill_root(struct task_cache *tc, __u64 base, __u64 len)
{
	if (!tc)
		return;
	if (len > TASK_TREE_CACHE)
		len = TASK_TREE_CACHE;
	tc->base[0] = base;
	tc->len[0] = 0;
	tc->len[1] = 0;
	if (len > 0 && len <= TASK_TREE_CACHE && !bpf_probe_read_user(tc->root, len, (void *)base))
		tc->len[0] = len;
}

static __always_inline int cache_has(const struct task_cache *tc, __u64 addr)
{
	return (addr >= tc->base[0] && addr - tc->base[0] < tc->len[0]) ||
	       (addr >= tc->base[1] && addr - tc->base[1] < tc->len[1]);
}

/* A future at addr of size bytes, outside the copies: into region 1. */
static __always_inline void cache_fill_node(struct task_cache *tc, __u64 addr, __u64 len)
{
	if (!tc || !len || cache_has(tc, addr))
		return;
	if (len > TASK_NODE_CACHE)
		len = TASK_NODE_CACHE;
	tc->base[1] = addr;
	tc->len[1] = 0;
	if (len > 0 && len <= TASK_NODE_CACHE && !bpf_probe_read_user(tc->node, len, (void *)addr))
		tc->len[1] = len;
}

/* 8 bytes at addr (little-endian), from a copy when they are all in it. */
static __always_inline __u64 read_u64(const struct task_cache *tc, __u64 addr)
{
	__u64 v = 0, off;

	if (tc && addr >= tc->base[0]) {
		off = addr - tc->base[0];
		if (off + 8 <= tc->len[0] && off <= TASK_TREE_CACHE - 8) {
			__builtin_memcpy(&v, &tc->root[off], sizeof(v));
			return v;
		}
	}
	if (tc && addr >= tc->base[1]) {
		off = addr - tc->base[1];
		if (off + 8 <= tc->len[1] && off <= TASK_NODE_CACHE - 8) {
			__builtin_memcpy(&v, &tc->node[off], sizeof(v));
			return v;
		}
	}
	bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

/* A little-endian unsigned discriminant of size 1, 2, 4 or 8: one read, masked (no
 * branch per size: the verifier walks every branch of every step). */
static __always_inline __u64 read_discr(const struct task_cache *tc, __u64 addr, __u8 size)
{
	__u64 v = read_u64(tc, addr);

	return size >= 8 ? v : v & ((1ULL << ((size & 7) * 8)) - 1);
}

static __always_inline int cond_holds_at(const struct task_cache *tc, __u64 base,
					 const struct tree_cond_spec *c)
{
	__u64 v = read_discr(tc, base + c->offset, c->size);
	int in = v >= c->lo && v <= c->hi;

	return c->kind ? !in : in;
}

/*
 * Where slot s of a future at addr leads (future_tree__follow): 1 with *to and, for a
 * dyn child, *child from its vtable; 0 when a condition does not hold, a pointer is
 * null, or a dyn vtable is unknown (*unknown_dyn set).
 */
static __always_inline int follow(const struct task_cache *tc, const struct tree_slot_spec *s,
				  __u64 addr, __u64 *to, __s32 *child, int *unknown_dyn)
{
	__u64 a = addr;

	*child = s->child;
	for (int i = 0; i <= TASK_TREE_STEPS; i++) {
		for (int k = 0; k < TASK_TREE_CONDS; k++)
			if (k < s->nr_conds && s->conds[k].at_step == i &&
			    !cond_holds_at(tc, a, &s->conds[k]))
				return 0;
		if (i >= s->nr_steps || i >= TASK_TREE_STEPS)
			break;
		a += s->steps[i].offset;
		if (s->steps[i].deref) {
			a = read_u64(tc, a);
			if (!a)
				return 0;
		}
	}
	if (s->dyn) {
		__u64 vt = read_u64(tc, a + s->dyn_vtable);
		__u32 *f = vt ? bpf_map_lookup_elem(&dyn_vtables, &vt) : NULL;

		a = read_u64(tc, a + s->dyn_data);
		if (!a)
			return 0;
		if (!f) {
			*unknown_dyn = 1;
			*child = -1;
		} else {
			*child = (__s32)*f;
		}
	}
	*to = a;
	return 1;
}

struct walk_ctx {
	struct task_tree_record *r;
	struct task_cache *tc; /* this CPU's copies (NULL: every read goes to memory) */
	__u32 node;	       /* expanding nodes[node] */
	__u32 slot;	       /* its next slot; 0: read its discriminant first */
};

/* One step of the walk: a node's discriminant, or one of its slots. */
static long walk_step(__u64 i, void *data)
{
	struct walk_ctx *c = data;
	struct task_tree_record *r = c->r;
	struct task_cache *tc = c->tc; /* looked up once per walk, not once per step */
	struct task_tree_node *n, *k;
	const struct tree_node_spec *ns;
	const struct tree_slot_spec *ss;
	__u32 idx, nr = r->nr_nodes, key, cur;
	__u64 to = 0;
	__s32 child = -1;
	int unknown_dyn = 0;

	if (c->node >= nr || c->node >= TASK_TREE_MAX_NODES)
		return 1;
	n = &r->nodes[c->node & (TASK_TREE_MAX_NODES - 1)];
	key = (__u32)n->future;
	ns = n->future >= 0 ? bpf_map_lookup_elem(&tree_nodes, &key) : NULL;
	if (c->slot == 0) {
		if (!ns || !ns->known) {
			n->flags |= n->future >= 0 ? TASK_NODE_NO_LAYOUT : 0;
			goto next_node;
		}
		/* its bytes at once, unless it is inline in what was copied */
		cache_fill_node(tc, n->addr, ns->size);
		if (ns->resource) {
			/* a lock's state word: from the copy only (a failed read would be
			 * 0, "locked" to tokio), all 8 bytes of it; no children, so no
			 * depth check: it takes no level */
			if (!tc || !cache_has(tc, n->addr + ns->discr_offset) ||
			    !cache_has(tc, n->addr + ns->discr_offset + 7))
				n->flags |= TASK_NODE_UNREADABLE;
			else
				n->discr = read_u64(tc, n->addr + ns->discr_offset);
			goto next_node;
		}
		if (ns->has_discr) {
			n->discr = read_discr(tc, n->addr + ns->discr_offset, ns->discr_size);
			if (n->discr > ns->discr_max) {
				n->flags |= TASK_NODE_BAD_STATE;
				goto next_node;
			}
		}
		if (n->depth >= TASK_TREE_MAX_DEPTH) {
			n->flags |= TASK_NODE_DEPTH;
			r->cut_depth++;
			goto next_node;
		}
	}
	if (!ns || c->slot >= ns->nr_slots)
		goto next_node;
	idx = ns->first_slot + c->slot;
	cur = c->node;
	c->slot++;
	/* the node's last slot: the next step expands the next node (one step fewer) */
	if (c->slot >= ns->nr_slots) {
		c->node++;
		c->slot = 0;
	}
	ss = bpf_map_lookup_elem(&tree_slots, &idx);
	if (!ss || !follow(tc, ss, n->addr, &to, &child, &unknown_dyn))
		return 0;
	/* a (future, address) pair kept once: cycles, two slots reaching one future */
	for (__u32 j = 0; j < TASK_TREE_MAX_NODES; j++) {
		if (j >= nr)
			break;
		if (r->nodes[j].addr == to && r->nodes[j].future == child)
			return 0;
	}
	if (nr >= TASK_TREE_MAX_NODES) {
		r->cut_nodes++;
		return 0;
	}
	k = &r->nodes[nr & (TASK_TREE_MAX_NODES - 1)];
	k->addr = to;
	k->discr = 0;
	k->future = child;
	k->parent = (__s8)cur;
	k->depth = n->depth + 1;
	k->flags = unknown_dyn ? TASK_NODE_UNKNOWN_DYN : 0;
	k->slot = (__u8)(idx - ns->first_slot);
	r->nr_nodes = nr + 1;
	return 0;
next_node:
	c->node++;
	c->slot = 0;
	return 0;
}

/* The task type a header's vtable names (task_vtables), ~0 if none. */
static __always_inline __u32 task_type_of(__u64 header, __u32 rt)
{
	__u64 vt = 0;
	__u32 *t;

	bpf_probe_read_user(&vt, sizeof(vt), (void *)(header + header_vtable[rt & 3]));
	t = vt ? bpf_map_lookup_elem(&task_vtables, &vt) : NULL;
	return t ? *t : ~0u;
}

/* Do all nr of a task type's conditions hold at the future's address? */
static __always_inline int task_conds_hold(const struct task_cache *tc, const struct task_cond *c,
					   __u32 nr, __u64 fut)
{
	for (int k = 0; k < TASK_TREE_CONDS; k++) {
		__u64 v, in;

		if (k >= nr)
			break;
		v = read_discr(tc, fut + (__s64)c[k].offset, c[k].size);
		if (c[k].kind == 2) { /* TREE_COND_NO_BITS: a runtime's state word */
			if (!v || v > c[k].hi || (v & c[k].lo))
				return 0;
			continue;
		}
		in = v >= c[k].lo && v <= c[k].hi;
		if (c[k].kind ? in : !in)
			return 0;
	}
	return 1;
}

/* Is the task's future there (task_info.live)? Out of the header's bytes. */
static __always_inline int task_future_live(const struct task_cache *tc, const struct task_info *ti,
					    __u64 fut)
{
	return task_conds_hold(tc, ti->live, ti->nr_live, fut);
}

/*
 * What the header says as a task poll begins (TASK_START_*): its future already gone
 * (the runtime polls a task it finished: a wake that came meanwhile), or its cancel
 * flag set (tokio's abort, async-task's cancel: the poll drops the future instead of
 * polling it). Its end alone cannot tell these from a poll that finished the future.
 */
static __always_inline __u32 task_start_flags(__u64 header, __u32 rt, __u32 type)
{
	struct task_info *ti;
	__u64 w = 0;

	rt &= 3;
	if (!done_bit[rt]) { /* no state word (a block_on's root): its own __state */
		ti = type != ~0u ? bpf_map_lookup_elem(&task_infos, &type) : NULL;
		if (!ti || !ti->known)
			return 0;
		return task_future_live(NULL, ti, header + ti->future_offset) ? 0 : TASK_START_GONE;
	}
	/* one read: the runtime's word says both. Finished first: a task aborted while
	 * its last poll returned Ready keeps the cancel flag after it; a cancelled one
	 * still has its future, which this poll drops */
	if (bpf_probe_read_user(&w, sizeof(w), (void *)(header + header_state[rt])))
		return 0;
	if (w & done_bit[rt])
		return TASK_START_GONE;
	return (w & cancel_bit[rt]) ? TASK_START_CANCEL : 0;
}

/*
 * A poll that ended the task's future, begun without the cancel flag: did a cancel
 * land during it (TASK_TREE_CANCELLED_IN_POLL), or can that not be told
 * (TASK_TREE_END_UNSURE)? 0: it returned Ready. The runtime's state word again, then
 * what it left: tokio's Stage (Finished(Err(Cancelled)), or Consumed: the output
 * dropped), async-task's COMPLETED (a cancelled run leaves CLOSED without it).
 */
static __always_inline __u32 task_end_flags(__u64 header, const struct task_info *ti)
{
	__u64 w = 0, fut = header + ti->future_offset;
	__u32 rt = ti->runtime & 3;

	if (!cancel_bit[rt])
		return 0;
	/* a word past 2^32 is no live task's: freed (glibc's free-list pointer) by the
	 * poll's end, as is most often a detached task that returned: taken for Ready,
	 * as a task whose header no longer names its type (docs/tracing.md) */
	if (bpf_probe_read_user(&w, sizeof(w), (void *)(header + header_state[rt])) || !w ||
	    w > 0xffffffffull)
		return 0;
	if (!(w & cancel_bit[rt]))
		return 0;
	if (rt != 1) /* async-task (not tokio, TASK_RT_TOKIO): its own bits say it */
		return (w & done_bit[rt]) ? 0 : TASK_TREE_CANCELLED_IN_POLL;
	if (!ti->nr_finished)
		return TASK_TREE_END_UNSURE;
	if (task_conds_hold(NULL, ti->cancelled, ti->nr_cancelled, fut))
		return TASK_TREE_CANCELLED_IN_POLL;
	return task_conds_hold(NULL, ti->finished, ti->nr_finished, fut) ? 0 : TASK_TREE_END_UNSURE;
}

/*
 * The task's tree into this CPU's scratch record (phase, times filled by the caller).
 * A global function: the verifier checks it once, not at each call. 0, or -1 without
 * a scratch record.
 */
__noinline int fill_task_tree(__u64 header, __u32 rt, __u32 type)
{
	__u32 zero = 0;
	struct task_tree_record *r = bpf_map_lookup_elem(&task_scratch, &zero);
	struct task_cache *tc = cache_get();
	struct task_info *ti = NULL;
	struct walk_ctx c = {};
	__u64 fut;

	if (!r)
		return -1;
	r->type = RECORD_TASK_TREE;
	r->nr_nodes = 0;
	r->flags = 0;
	r->header = header;
	r->info = ~0u;
	r->cut_nodes = 0;
	r->cut_depth = 0;
	/* the type its entry probe was planned for; else (a function several types
	 * share) the one its header's vtable names */
	if (type == ~0u)
		type = task_type_of(header, rt);
	if (type != ~0u)
		ti = bpf_map_lookup_elem(&task_infos, &type);
	if (!ti || !ti->known) {
		r->flags |= TASK_TREE_UNKNOWN_TYPE;
		return 0;
	}
	r->info = ti->type;
	fut = header + ti->future_offset;
	/* the header through the end of an inline root, or the pointer to a boxed one */
	cache_fill_root(tc, header, (__u64)ti->future_offset + (ti->boxed ? 8 : ti->root_size));
	if (!task_future_live(tc, ti, fut)) {
		r->flags |= TASK_TREE_GONE;
		return 0;
	}
	if (ti->boxed) {
		fut = read_u64(tc, fut);
		cache_fill_root(tc, fut, ti->root_size);
	}
	if (!fut) {
		r->flags |= TASK_TREE_GONE;
		return 0;
	}
	r->nodes[0].addr = fut;
	r->nodes[0].discr = 0;
	r->nodes[0].future = (__s32)ti->root_future;
	r->nodes[0].parent = -1;
	r->nodes[0].depth = 0;
	r->nodes[0].flags = 0;
	r->nodes[0].slot = 0;
	r->nr_nodes = 1;
	c.r = r;
	c.tc = tc;
	bpf_loop(TASK_TREE_MAX_NODES * (TASK_TREE_SLOTS + 1), walk_step, &c, 0);
	if (r->cut_nodes || r->cut_depth)
		r->flags |= TASK_TREE_CUT;
	return 0;
}

static __always_inline struct task_tree_record *read_task_tree(__u64 header, __u32 rt, __u32 type)
{
	__u32 zero = 0;

	if (fill_task_tree(header, rt, type))
		return NULL;
	return bpf_map_lookup_elem(&task_scratch, &zero);
}

/*
 * A record without nodes, built on the stack (the per-CPU record may be another
 * poll's): a task poll whose exit was never seen (LOST), or whose tree was not read.
 */
static __always_inline void send_head(__u64 header, __u8 phase, __u8 flags, __u64 pid_tgid,
				      __u64 start, __u64 end, __u64 offcpu, __u32 nested)
{
	__u64 buf[(TASK_TREE_RECORD_HEAD + 7) / 8] = {};
	struct task_tree_record *r = (void *)buf;

	r->type = RECORD_TASK_TREE;
	r->pid = pid_tgid >> 32;
	r->tid = (__u32)pid_tgid;
	r->phase = phase;
	r->flags = flags;
	r->nested = nested;
	r->header = header;
	r->start_ns = start;
	r->end_ns = end;
	r->offcpu_ns = offcpu;
	r->info = ~0u;
	if (stats_only && !stats_trees)
		return;
	if (bpf_ringbuf_output(&trace_events, buf, TASK_TREE_RECORD_HEAD, BPF_RB_NO_WAKEUP))
		count(COUNTER_TASK_DROPPED);
}

/*
 * The tree built in this CPU's record, copied into the ring buffer, and sent only if
 * no other walk used the per-CPU buffers meanwhile (tc->gen still gen after the copy:
 * the reserved copy is this program's own).
 */
static __always_inline void send_tree(struct task_tree_record *r, __u8 phase, __u8 at,
				      __u64 pid_tgid, __u64 start, __u64 end, __u64 offcpu,
				      __u32 nested, const struct task_cache *tc, __u64 gen)
{
	struct bpf_dynptr d;
	__u64 size, header = r->header;
	__u32 n;

	r->pid = pid_tgid >> 32;
	r->tid = (__u32)pid_tgid;
	r->phase = phase;
	r->start_ns = start;
	r->end_ns = end;
	r->offcpu_ns = offcpu;
	r->nested = nested;
	r->flags |= at;
	if (stats_only && !stats_trees)
		return;
	n = r->nr_nodes;
	if (n > TASK_TREE_MAX_NODES)
		n = TASK_TREE_MAX_NODES;
	size = TASK_TREE_RECORD_HEAD + (__u64)n * sizeof(struct task_tree_node);
	if (size > sizeof(*r))
		size = sizeof(*r);
	if (bpf_ringbuf_reserve_dynptr(&trace_events, size, 0, &d)) {
		bpf_ringbuf_discard_dynptr(&d, 0);
		count(COUNTER_TASK_DROPPED);
		return;
	}
	if (bpf_dynptr_write(&d, 0, r, size, 0) || tc->gen != gen) {
		bpf_ringbuf_discard_dynptr(&d, 0);
		count(COUNTER_TREE_NOT_READ);
		send_head(header, phase, TASK_TREE_NOT_READ | at, pid_tgid, start, end, offcpu,
			  nested);
		return;
	}
	bpf_ringbuf_submit_dynptr(&d, BPF_RB_NO_WAKEUP);
}

/* A task poll whose exit was never seen: no tree, its start is the user's to pair. */
static __always_inline void send_lost(const struct task_frame *t, __u64 pid_tgid, __u64 now,
				      __u64 offcpu, __u32 nested)
{
	send_head(t->header, TASK_PHASE_LOST, 0, pid_tgid, t->start_ns, now, offcpu, nested);
}

/*
 * top in task mode (stats only): a task poll counted in its type's statistics, and
 * whether its future finished (tokio replaces it after Ready; a root's __state is
 * Returned): LIVE counts the tasks polled, Pending, and not finished. No tree.
 */
static __always_inline void task_stats_exit(const struct task_frame *t, __u64 now)
{
	__u32 type = t->info;
	struct poll_stats *s = bpf_map_lookup_elem(&task_stats, &type);
	struct task_info *ti = bpf_map_lookup_elem(&task_infos, &type);
	struct live_key k = {.self = t->header, .poll = type};
	__u8 one = 1;
	long e;

	if (!s)
		return;
	__sync_fetch_and_add(&s->records, 1);
	__sync_fetch_and_add(&s->busy_ns, now - t->start_ns);
	__sync_fetch_and_add(&s->hist[log2_u64(now - t->start_ns) & (TRACE_HIST_BUCKETS - 1)], 1);
	if (wake_window)
		__sync_fetch_and_add(&s->window_polls, 1);
	if (!ti || !ti->known)
		return;
	if (t->at_start & TASK_START_GONE)
		return; /* a poll of a task finished before: neither Ready nor Pending */
	if (!task_future_live(NULL, ti, t->header + ti->future_offset)) {
		/* the poll finished it: Ready, or dropped it (cancelled when it began, or
		 * while it ran) */
		__u32 end = t->at_start & TASK_START_CANCEL ? TASK_TREE_CANCELLED_IN_POLL
							    : task_end_flags(t->header, ti);
		if (end & TASK_TREE_CANCELLED_IN_POLL)
			__sync_fetch_and_add(&s->cancelled, 1);
		else if (end & TASK_TREE_END_UNSURE)
			count(COUNTER_TASK_END_UNSURE);
		else
			__sync_fetch_and_add(&s->ready, 1);
		if (!bpf_map_delete_elem(&live_instances, &k))
			__sync_fetch_and_add(&s->ended, 1);
		return;
	}
	__sync_fetch_and_add(&s->pending, 1);
	/* most pending polls are of a task seen before: a lookup takes no lock, an
	 * update that finds the key takes its bucket's */
	if (bpf_map_lookup_elem(&live_instances, &k))
		return;
	e = bpf_map_update_elem(&live_instances, &k, &one, BPF_NOEXIST);
	if (!e)
		__sync_fetch_and_add(&s->started, 1);
	else if (e != -17 /* -EEXIST: polled before */)
		count(COUNTER_LIVE_FULL);
}

/* top in task mode: a wake of a task (its header), counted for its type; its next
 * poll's start ends its scheduling delay (task_stats_delay). */
static __always_inline void task_stats_wake(__u64 header, __u32 rt, __u64 now)
{
	__u32 type = header ? task_type_of(header, rt) : ~0u;
	struct poll_stats *s = bpf_map_lookup_elem(&task_stats, &type);

	if (!s) {
		count(COUNTER_WAKE_UNKNOWN);
		return;
	}
	__sync_fetch_and_add(&s->wakes, 1);
	bpf_map_update_elem(&wake_pending, &header, &now, BPF_NOEXIST);
}

static __always_inline void task_stats_delay(__u64 header, __u32 type, __u64 now)
{
	__u64 key = header, *woken = bpf_map_lookup_elem(&wake_pending, &key);
	struct poll_stats *s;

	if (!woken)
		return;
	s = bpf_map_lookup_elem(&task_stats, &type);
	if (s && now >= *woken) {
		__sync_fetch_and_add(
		    &s->delay_hist[log2_u64(now - *woken) & (TRACE_HIST_BUCKETS - 1)], 1);
		__sync_fetch_and_add(&s->delay_ns, now - *woken);
	}
	bpf_map_delete_elem(&wake_pending, &key);
}

/* The runtime's task vtable function entered: header in rdi (or where the spec says). */
static __always_inline void task_entry(struct uregs *ctx, const struct poll_spec *spec, __u64 now,
				       __u64 pid_tgid)
{
	struct thread_stack *st = bpf_task_storage_get(&trace_stacks, bpf_get_current_task_btf(), 0,
						       BPF_LOCAL_STORAGE_GET_F_CREATE);
	__u64 header = first_arg(ctx, spec), sp = ctx->sp - (__s64)spec->sp_delta;
	struct task_frame *t;
	__u32 n, slot;

	if (!st) {
		count(COUNTER_NO_STORAGE);
		return;
	}
	st->pid_tgid = pid_tgid;
	n = st->nr_tasks;
	/* task polls whose exit an unwind skipped: at or below our stack pointer (their
	 * start trees were sent; these say they ended unseen) */
	for (int k = 0; k < TASK_MAX_NESTED; k++) {
		if (n == 0 || n > TASK_MAX_NESTED ||
		    st->tasks[(n - 1) & (TASK_MAX_NESTED - 1)].sp > sp)
			break;
		t = &st->tasks[(n - 1) & (TASK_MAX_NESTED - 1)];
		send_lost(t, pid_tgid, now, st->offcpu_ns - t->offcpu_at_entry, n - 1);
		n--;
	}
	if (n >= TASK_MAX_NESTED) {
		st->nr_tasks = n;
		count(COUNTER_STACK_OVERFLOW);
		return;
	}
	if (n && (spec->flags & SPEC_TASK_ROOT)) {
		/* a root poll inside a task poll: one of that task's futures, in its tree */
		st->nr_tasks = n;
		return;
	}
	slot = n;
	barrier_var(slot); /* keep the mask: the compiler knows n < 4 here, the verifier not */
	t = &st->tasks[slot & (TASK_MAX_NESTED - 1)];
	t->header = header;
	t->sp = sp;
	t->start_ns = now;
	t->offcpu_at_entry = st->offcpu_ns;
	t->info = spec->poll; /* its task type, ~0 when the function is shared */
	st->nr_tasks = n + 1;
	/* the runtime's word needs no type (spec->future: the runtime) */
	t->at_start = task_start_flags(header, spec->future, t->info);
	if (stats_only) { /* top: its type now (blocking counts on it), its delay */
		if (t->info == ~0u)
			t->info = task_type_of(header, spec->future);
		if (wakes_enabled)
			task_stats_delay(header, t->info, now);
		return;
	}
	/* no tree here: a task's tree changes only while it is polled, so the tree its
	 * last poll ended with is the one this poll starts with (user space keeps it) */
}

/* A task poll returned (the continuation of its call, or its uretprobe). */
static __always_inline void task_exit(struct uregs *ctx, const struct poll_spec *spec, __u64 now,
				      __u64 pid_tgid)
{
	struct thread_stack *st =
	    bpf_task_storage_get(&trace_stacks, bpf_get_current_task_btf(), 0, 0);
	__u64 sp = ctx->sp - (__s64)spec->sp_delta, gen;
	struct task_tree_record *r;
	struct task_cache *tc;
	struct task_frame *t;
	__u32 n, at;

	if (!st || !(n = st->nr_tasks) || n > TASK_MAX_NESTED) {
		if (!(spec->flags & SPEC_TASK_ROOT))
			count(COUNTER_UNMATCHED_EXIT);
		return;
	}
	t = &st->tasks[(n - 1) & (TASK_MAX_NESTED - 1)];
	if (t->sp != sp) {
		/* a root poll's exit whose entry was inside a task poll ends nothing */
		if (!(spec->flags & SPEC_TASK_ROOT))
			count(COUNTER_UNMATCHED_EXIT);
		return;
	}
	st->nr_tasks = n - 1;
	if (stats_only) {
		task_stats_exit(t, now);
		if (!stats_trees) /* top --locks reads the tree too, for its locks */
			return;
	}
	tc = cache_get();
	if (!tc)
		return;
	gen = tc->gen + 1;
	tc->gen = gen;
	r = read_task_tree(t->header, spec->future, t->info);
	at = t->at_start;
	if (r && (r->flags & TASK_TREE_GONE) && !(at & (TASK_START_GONE | TASK_START_CANCEL))) {
		/* the type read_task_tree read it as */
		__u32 type = t->info != ~0u ? t->info : task_type_of(t->header, spec->future);
		struct task_info *ti = type != ~0u ? bpf_map_lookup_elem(&task_infos, &type) : NULL;

		if (ti && ti->known)
			at |= task_end_flags(t->header, ti);
	}
	if (r)
		send_tree(r, TASK_PHASE_END, (__u8)at, pid_tgid, t->start_ns, now,
			  st->offcpu_ns - t->offcpu_at_entry, n - 1, tc, gen);
	/* the tree's walk is the part of this program a hit's measured cost leaves out */
	count(COUNTER_TREES);
	count_add(COUNTER_TREE_NS, bpf_ktime_get_ns() - now);
}

#endif
