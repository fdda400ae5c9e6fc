/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Part of trace.bpf.c (included once, after its maps and helpers): the probes that
 * are no poll's entry or exit. A future's drop (cancellation) and a runtime task's
 * wake-up, each one ring-buffer record.
 */
#ifndef ASYNCBPF_TRACE_EVENTS_BPF_H
#define ASYNCBPF_TRACE_EVENTS_BPF_H

/* enum task_runtime's TASK_RT_STD_WAKE (user/model/model.h; pinned there) */
#define TASK_RT_STD_WAKE_BPF 3

/*
 * The current thread's open traced polls: their number, and the innermost frame and
 * its task's root frame (NULL when no task root is traced); 0 and NULLs when it has
 * none.
 */
static __always_inline __u32 open_polls(struct poll_frame **inner, struct poll_frame **task)
{
	struct thread_stack *st =
	    bpf_task_storage_get(&trace_stacks, bpf_get_current_task_btf(), 0, 0);
	__u32 depth;

	*inner = *task = NULL;
	if (!st)
		return 0;
	depth = st->depth;
	if (depth > TRACE_MAX_DEPTH)
		depth = TRACE_MAX_DEPTH;
	if (depth) {
		*inner = &st->frames[(depth - 1) & (TRACE_MAX_DEPTH - 1)];
		if ((*inner)->task_depth < TRACE_MAX_DEPTH)
			*task = &st->frames[(*inner)->task_depth & (TRACE_MAX_DEPTH - 1)];
	}
	return depth;
}

/*
 * The argument a wake or drop probe reads (rdi at the function's first instruction):
 * where its spec says it is at this site, a register or a stack slot.
 */
static __always_inline __u64 first_arg(struct uregs *ctx, const struct poll_spec *spec)
{
	if (spec->self_kind == SPEC_SELF_STACK)
		return read_user_uint(ctx->sp + (__s64)spec->self_sp_offset, 8);
	if (spec->self_kind == SPEC_SELF_REG)
		return read_reg(ctx, spec->self_reg);
	return 0;
}

/* trace_task.bpf.h */
static __always_inline void task_stats_wake(__u64 header, __u32 rt, __u64 now);

/* drop_in_place::<F>(*mut F) entered: record the future and its __state. */
static __always_inline void on_drop(struct uregs *ctx, const struct poll_spec *spec, __u64 now,
				    __u64 pid_tgid)
{
	struct poll_frame *inner, *task;
	struct drop_record *r;
	struct poll_stats *stats;
	__u32 poll = spec->poll;
	__u64 self = first_arg(ctx, spec);

	__u64 state = 0;

	stats = bpf_map_lookup_elem(&trace_stats, &poll);
	if ((spec->flags & SPEC_HAS_STATE) && self)
		state = read_user_uint(self + spec->state_offset, spec->state_size);
	if (stats) {
		__sync_fetch_and_add(&stats->drops, 1);
		if ((spec->flags & SPEC_HAS_STATE) && state >= STATE_SUSPEND0_VALUE &&
		    state <= spec->max_state)
			__sync_fetch_and_add(&stats->cancelled, 1);
	}
	if (stats_only) {
		struct live_key k = {.self = self, .poll = poll};

		if (stats && self && !bpf_map_delete_elem(&live_instances, &k))
			__sync_fetch_and_add(&stats->ended, 1);
		return;
	}
	r = bpf_ringbuf_reserve(&trace_events, sizeof(*r), 0);
	if (!r) {
		if (stats)
			__sync_fetch_and_add(&stats->drops_lost, 1);
		count(COUNTER_DROPPED);
		return;
	}
	r->type = RECORD_DROP;
	r->pid = pid_tgid >> 32;
	r->tid = (__u32)pid_tgid;
	r->poll = poll;
	r->future = spec->future;
	r->time_ns = now;
	r->self = self;
	r->has_state = (spec->flags & SPEC_HAS_STATE) && self;
	r->state = r->has_state ? state : 0;
	r->pad = 0;
	r->pad2 = 0;
	r->task_self = 0;
	r->dropper_self = 0;
	r->dropper_poll = ~0u;
	r->depth = open_polls(&inner, &task);
	if (inner) {
		r->task_self = task ? task->self : 0;
		r->dropper_self = inner->self;
		r->dropper_poll = inner->poll;
	}
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

/* Task mode: the waker is the task polled on this thread now (its header), if any. */
static __always_inline void waker_task(struct wake_record *r)
{
	struct thread_stack *st =
	    bpf_task_storage_get(&trace_stacks, bpf_get_current_task_btf(), 0, 0);
	__u32 n = st ? st->nr_tasks : 0;

	if (!n || n > TASK_MAX_NESTED)
		return;
	r->waker_task_self = st->tasks[(n - 1) & (TASK_MAX_NESTED - 1)].header;
	r->waker_start_ns = st->tasks[(n - 1) & (TASK_MAX_NESTED - 1)].start_ns;
	r->depth = n;
}

/* A runtime's wake function entered: the task (rdi: its header) and who woke it. */
static __always_inline void on_wake(struct uregs *ctx, const struct poll_spec *spec, __u64 now,
				    __u64 pid_tgid)
{
	struct poll_frame *inner, *task;
	struct wake_record *r;
	struct wake_type *wt;
	__u64 header = first_arg(ctx, spec), vt = 0, self = 0;
	__u32 rt = spec->future & 3;

	count(COUNTER_WAKES);
	if (task_mode) {
		/* task mode: a task is its header; user space links the wake to the task's
		 * next poll (its scheduling delay), or top's statistics do */
		self = header;
		if (stats_only) {
			task_stats_wake(header, rt, now);
			return;
		}
	} else if (rt == TASK_RT_STD_WAKE_BPF && header) {
		/* std's Wake: no header, the data is the Arc<W>; the task's next poll with
		 * a waker of that data is the one it leads to */
		bpf_map_update_elem(&wake_pending, &header, &now, BPF_NOEXIST);
	} else if (header) {
		bpf_probe_read_user(&vt, sizeof(vt), (void *)(header + header_vtable[rt]));
		wt = vt ? bpf_map_lookup_elem(&wake_types, &vt) : NULL;
		if (wt) {
			self = header + wt->future_offset;
			if (wt->boxed)
				self = read_user_uint(self, 8);
			if (self) {
				__u32 poll = wt->poll;
				struct poll_stats *stats = bpf_map_lookup_elem(&trace_stats, &poll);

				self += wt->descend;
				if (stats)
					__sync_fetch_and_add(&stats->wakes, 1);
				/* the first wake since its last poll: its delay starts here */
				bpf_map_update_elem(&wake_pending, &self, &now, BPF_NOEXIST);
			}
		} else {
			count(COUNTER_WAKE_UNKNOWN);
		}
	}
	if (stats_only)
		return;
	r = bpf_ringbuf_reserve(&trace_events, sizeof(*r), 0);
	if (!r) {
		count(COUNTER_WAKE_DROPPED);
		return;
	}
	r->type = RECORD_WAKE;
	r->pid = pid_tgid >> 32;
	r->tid = (__u32)pid_tgid;
	r->runtime = rt;
	r->by_ref = (spec->flags & SPEC_WAKE_BY_REF) != 0;
	r->time_ns = now;
	r->header = header;
	r->vtable = vt;
	r->woken_self = self;
	r->waker_self = 0;
	r->waker_task_self = 0;
	r->waker_start_ns = 0;
	r->waker_poll = ~0u;
	r->pad = 0;
	r->depth = open_polls(&inner, &task);
	if (inner) {
		r->waker_self = inner->self;
		r->waker_poll = inner->poll;
		r->waker_start_ns = inner->start_ns;
		r->waker_task_self = task ? task->self : 0;
	} else if (task_mode) {
		waker_task(r);
	}
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

#endif
