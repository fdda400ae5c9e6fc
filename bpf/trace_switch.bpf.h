/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Part of trace.bpf.c (included once, at its end): blocking inside polls. A target
 * thread that goes off-CPU while a traced poll is open on it: blocked (voluntary),
 * preempted, or inside the tracer's own probe handling (docs/tracing.md, "Blocking").
 */
#ifndef ASYNCBPF_TRACE_SWITCH_BPF_H
#define ASYNCBPF_TRACE_SWITCH_BPF_H

/* ---- blocking inside polls (docs/tracing.md, "Blocking") ---- */

/*
 * The syscall a thread that goes off-CPU is in: its user registers as the entry code
 * saved them. In a syscall orig_ax holds its number and ax -ENOSYS until it returns
 * (arch/x86/entry: the return value is stored only at exit); an exception or
 * interrupt saves an error code or ~vector in orig_ax and the user's rax in ax. No
 * sys_enter/sys_exit programs then: every other process's syscalls cost nothing.
 */
static __always_inline __s32 current_syscall(struct task_struct *task)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	long orig_ax, ax;

	if (!regs)
		return -1;
	orig_ax = BPF_CORE_READ(regs, orig_ax);
	ax = BPF_CORE_READ(regs, ax);
	return orig_ax >= 0 && orig_ax < 4096 && ax == -38 /* -ENOSYS */ ? (__s32)orig_ax : -1;
}

/* An off-CPU interval of dt ns inside a poll (or a task poll) in its statistics. */
static __always_inline void block_stats(struct poll_stats *stats, __u8 kind, __u64 dt)
{
	if (!stats)
		return;
	__sync_fetch_and_add(&stats->blocked, 1);
	__sync_fetch_and_add(&stats->block_records, 1);
	if (kind == OFFCPU_TRACER) {
		__sync_fetch_and_add(&stats->tracer, 1);
		__sync_fetch_and_add(&stats->tracer_ns, dt);
	} else if (kind == OFFCPU_PREEMPTED) {
		__sync_fetch_and_add(&stats->preempted_ns, dt);
	} else {
		__sync_fetch_and_add(&stats->voluntary, 1);
		__sync_fetch_and_add(&stats->blocked_ns, dt);
	}
}

/* Task mode: off-CPU inside a task poll (no future frame open): blamed on the task,
 * its header in self and task_self, poll ~0; top: in its type's statistics. */
static __always_inline void emit_task_block(struct thread_stack *st, __u64 now, __u32 tgid,
					    __u32 tid, __u64 dt)
{
	__u32 n = st->nr_tasks, type;
	struct task_frame *t;
	struct block_record *r;

	if (!n || n > TASK_MAX_NESTED)
		return;
	t = &st->tasks[(n - 1) & (TASK_MAX_NESTED - 1)];
	if (stats_only) {
		type = t->info;
		block_stats(bpf_map_lookup_elem(&task_stats, &type), st->off_kind, dt);
		if (st->off_kind == OFFCPU_BLOCKED)
			block_sys_add(type | BLOCK_SYS_TASK, st->off_sys, dt);
		return;
	}
	r = bpf_ringbuf_reserve(&trace_events, sizeof(*r), 0);
	if (!r) {
		count(COUNTER_BLOCK_DROPPED);
		return;
	}
	r->type = RECORD_BLOCK;
	r->pid = tgid;
	r->tid = tid;
	r->poll = ~0u;
	r->start_ns = st->off_start;
	r->end_ns = now;
	r->self = t->header;
	r->task_self = t->header;
	r->poll_start_ns = t->start_ns;
	r->syscall = st->off_sys;
	r->depth = 0;
	r->kind = st->off_kind;
	r->pad = 0;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

static __always_inline void emit_block(struct thread_stack *st, __u64 now, __u32 tgid, __u32 tid)
{
	struct block_record *r;
	struct poll_frame *f;
	struct poll_stats *stats;
	__u32 depth = st->depth, top, poll;
	__u64 dt = now - st->off_start;

	if (depth == 0 && st->nr_tasks)
		return emit_task_block(st, now, tgid, tid, dt);
	if (depth == 0 || depth > TRACE_MAX_DEPTH)
		return;
	top = (depth - 1) & (TRACE_MAX_DEPTH - 1);
	f = &st->frames[top];
	poll = f->poll;
	stats = bpf_map_lookup_elem(&trace_stats, &poll);
	block_stats(stats, st->off_kind, dt);
	if (stats_only) {
		if (st->off_kind == OFFCPU_BLOCKED)
			block_sys_add(poll, st->off_sys, dt);
		return;
	}
	r = bpf_ringbuf_reserve(&trace_events, sizeof(*r), 0);
	if (!r) {
		if (stats)
			__sync_fetch_and_add(&stats->block_dropped, 1);
		count(COUNTER_BLOCK_DROPPED);
		return;
	}
	r->type = RECORD_BLOCK;
	r->pid = tgid;
	r->tid = tid;
	r->poll = poll;
	r->start_ns = st->off_start;
	r->end_ns = now;
	r->self = f->self;
	r->task_self = f->task_depth < TRACE_MAX_DEPTH
			   ? st->frames[f->task_depth & (TRACE_MAX_DEPTH - 1)].self
			   : 0;
	r->poll_start_ns = f->start_ns;
	r->syscall = st->off_sys;
	r->depth = top;
	r->kind = st->off_kind;
	r->pad = 0;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

/* the uprobes' XOL area is one page (kernel/events/uprobes.c, xol_add_vma) */
#define PAGE_BYTES 4096

/*
 * Why prev goes off-CPU (enum offcpu_kind). Inside the tracer's probe handling: the
 * kernel is single-stepping one of its probed instructions out of line (the uprobe
 * task state says so), or the thread's user ip is in the uprobes' XOL page (an
 * instruction copied there, or the uretprobe trampoline), or it stopped on one of
 * the tracer's breakpoints (ip is the probe site + 1, the int3's length) and its
 * handling has not moved it on yet. Else the kernel's rule for its voluntary switch
 * count: a switch that is no preemption, of a thread that is no longer runnable, is
 * voluntary; a preemption, or a runnable thread calling schedule() (the return to
 * user mode from a trap or an interrupt passes preempt = false), is involuntary.
 */
static __always_inline __u8 offcpu_kind(bool preempt, struct task_struct *prev)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	struct uprobe_task *ut = BPF_CORE_READ(prev, utask);
	__u64 ip = regs ? BPF_CORE_READ(regs, ip) : 0, xol, site;

	if (ut && BPF_CORE_READ(ut, state) != UTASK_RUNNING)
		return OFFCPU_TRACER;
	xol = BPF_CORE_READ(prev, mm, uprobes_state.xol_area, vaddr);
	if (xol && ip >= xol && ip - xol < PAGE_BYTES)
		return OFFCPU_TRACER;
	site = ip - 1;
	if (ip && bpf_map_lookup_elem(&probe_addrs, &site))
		return OFFCPU_TRACER;
	if (preempt || BPF_CORE_READ(prev, __state) == 0 /* TASK_RUNNING */)
		return OFFCPU_PREEMPTED;
	return OFFCPU_BLOCKED;
}

/*
 * A context switch. Out: a target thread with a poll open goes off-CPU (remember
 * when, in which syscall, and why: blocked, preempted, or inside the tracer's probe
 * handling). In: such a thread runs again (the interval is added to its off-CPU
 * total, which each poll's record subtracts from its duration, and blamed on the
 * innermost open poll with a block_record). Every other switch on the machine costs
 * two tgid loads and compares.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct thread_stack *st;
	__u64 now;

	if (prev->tgid != target_tgid && next->tgid != target_tgid)
		return 0;
	if (!*(volatile __u32 *)&trace_ready)
		return 0;
	now = bpf_ktime_get_ns();
	if (prev->tgid == target_tgid) {
		st = bpf_task_storage_get(&trace_stacks, prev, 0, 0);
		if (st && (st->depth || st->nr_tasks)) {
			st->off_start = now;
			st->off_kind = offcpu_kind(preempt, prev);
			st->off_sys = current_syscall(prev);
			count(COUNTER_SWITCHES);
		}
	}
	if (next->tgid == target_tgid) {
		st = bpf_task_storage_get(&trace_stacks, next, 0, 0);
		if (st && st->off_start) {
			if (now > st->off_start) {
				st->offcpu_ns += now - st->off_start;
				emit_block(st, now, next->tgid, next->pid);
			}
			st->off_start = 0;
		}
	}
	return 0;
}

#endif
