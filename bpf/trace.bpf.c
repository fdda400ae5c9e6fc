// SPDX-License-Identifier: GPL-2.0
/*
 * asyncbpf trace: one program for every probe site of the traced poll functions.
 * The probe's bpf_cookie selects its poll_spec (user space fills trace_specs): an
 * entry pushes a frame on the thread's async stack (task storage), an exit (a `ret`
 * or a tail jump, where rsp equals rsp at entry) pops the frame with that stack
 * pointer and emits a poll_record. Frames below the current stack pointer that no
 * exit popped were skipped by an unwind (a panic caught further up, longjmp): they
 * are emitted as truncated. No uretprobes: they break Rust unwinding
 * (docs/tracing.md).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "asyncbpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Filled before load. */
const volatile __u32 target_tgid = 0;
const volatile __u32 nr_specs = 0;
/* Wake the consumer only when this much data waits (0: on every record). */
const volatile __u64 wakeup_bytes = 0;
/* top: statistics only, no record in the ring buffer (drops, wakes, polls alike) */
const volatile __u32 stats_only = 0;
/* top --locks: statistics, and task mode's trees at each task poll's end (their locks) */
const volatile __u32 stats_trees = 0;
/* wake probes are attached: a task's poll looks up when it was woken */
const volatile __u32 wakes_enabled = 0;
/* some specs are SPEC_TASK_ROOT: a frame's task is the innermost root below it, and a
 * stack without one has no task; else (a runtime the analyzer does not know) frames[0] */
const volatile __u32 roots_known = 0;
/* task mode: the wake probes key a task by its header (task_probe's programs) */
const volatile __u32 task_mode = 0;
/* core::task layout (model waker_layout): Context.waker, Waker.waker, RawWaker.data */
const volatile __u32 ctx_known = 0;
const volatile __u32 ctx_waker_off = 0, waker_raw_off = 0, raw_data_off = 0;
/* Blocking inside polls is watched (on_switch is loaded). */
const volatile __u32 block_enabled = 0;
/* Where each runtime's task header keeps its vtable pointer (enum task_runtime). */
const volatile __u32 header_vtable[4] = {};
/* And its state word, its bit that says the task finished (tokio's COMPLETE,
 * async-task's COMPLETED: the future is gone) and the one that says it is cancelled
 * (tokio's CANCELLED, async-task's CLOSED: a poll that begins with it set drops the
 * future instead of polling it); 0: no state word. */
const volatile __u32 header_state[4] = {};
const volatile __u64 done_bit[4] = {};
const volatile __u64 cancel_bit[4] = {};

/* Set by user space while sampled wake probes are attached (top: window_polls). */
__u32 wake_window = 0;
/* Set by user space once every probe is attached: half-attached sets stay silent. */
__u32 trace_ready = 0;
/* execs of the target seen (on_exec); user space stops tracing on one it did not start */
__u32 exec_count = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* sized by user space: one per probe site */
	__type(key, __u32);
	__type(value, struct poll_spec);
} trace_specs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1); /* sized by user space: one per model poll */
	__type(key, __u32);
	__type(value, struct poll_stats);
} trace_stats SEC(".maps");

struct trace_counters {
	__u64 values[COUNTER_COUNT];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct trace_counters);
} trace_counters SEC(".maps");

/* The kernel frees a thread's stack with the thread: a reused TID starts clean. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_stack);
} trace_stacks SEC(".maps");

/*
 * The run-time address of every probe site (user space fills it once the executable
 * is mapped): a thread that goes off-CPU stopped on one of them is inside the
 * tracer's probe handling (on_switch).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by user space: one per probe site */
	__type(key, __u64);
	__type(value, __u8);
} probe_addrs SEC(".maps");

/* A woken task's first traced future -> when it was woken: its scheduling delay. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u64);
} wake_pending SEC(".maps");

/* Task vtable (runtime address) -> where the task's future is: wake-ups. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by user space: one per task vtable */
	__type(key, __u64);
	__type(value, struct wake_type);
} wake_types SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* --ringbuf-size */
} trace_events SEC(".maps");

/*
 * The registers of a uprobe's context: x86-64's user-visible struct pt_regs, whose
 * layout is ABI (arch/x86/include/uapi/asm/ptrace.h). Declared here without
 * vmlinux.h's preserve_access_index, so reading registers needs no CO-RE
 * relocation: every relocation makes libbpf search the kernel's BTF at load time.
 */
struct uregs {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di, orig_ax, ip, cs,
	    flags, sp, ss;
};

/* A record's share of the ring buffer: the record and its 8-byte header. */
#define RECORD_ROOM (sizeof(struct poll_record) + 8)

/* Hide a value from the compiler so that a bounds mask after it is not optimized away. */
#define opaque(x) asm volatile("" : "+r"(x))

static __always_inline void count(enum trace_counter which)
{
	__u32 zero = 0;
	struct trace_counters *c = bpf_map_lookup_elem(&trace_counters, &zero);

	if (c && which < COUNTER_COUNT)
		__sync_fetch_and_add(&c->values[which], 1);
}

static __always_inline void count_add(enum trace_counter which, __u64 v)
{
	__u32 zero = 0;
	struct trace_counters *c = bpf_map_lookup_elem(&trace_counters, &zero);

	if (c && which < COUNTER_COUNT)
		__sync_fetch_and_add(&c->values[which], v);
}

/*
 * DWARF x86-64 register numbers (the analyzer's self_reg). Read through the offset,
 * as libbpf's usdt.bpf.h does: clang folds a switch of ctx->reg loads into a variable
 * ctx offset, which the verifier refuses.
 */
static __always_inline __u64 read_reg(struct uregs *ctx, __u16 reg)
{
	__u64 v = 0;
	long off;

	switch (reg) {
	case 0: off = __builtin_offsetof(struct uregs, ax); break;
	case 1: off = __builtin_offsetof(struct uregs, dx); break;
	case 2: off = __builtin_offsetof(struct uregs, cx); break;
	case 3: off = __builtin_offsetof(struct uregs, bx); break;
	case 4: off = __builtin_offsetof(struct uregs, si); break;
	case 5: off = __builtin_offsetof(struct uregs, di); break;
	case 6: off = __builtin_offsetof(struct uregs, bp); break;
	case 7: off = __builtin_offsetof(struct uregs, sp); break;
	case 8: off = __builtin_offsetof(struct uregs, r8); break;
	case 9: off = __builtin_offsetof(struct uregs, r9); break;
	case 10: off = __builtin_offsetof(struct uregs, r10); break;
	case 11: off = __builtin_offsetof(struct uregs, r11); break;
	case 12: off = __builtin_offsetof(struct uregs, r12); break;
	case 13: off = __builtin_offsetof(struct uregs, r13); break;
	case 14: off = __builtin_offsetof(struct uregs, r14); break;
	case 15: off = __builtin_offsetof(struct uregs, r15); break;
	default: return 0;
	}
	/* the usual case, rdi, without a helper call */
	if (reg == 5)
		return ctx->di;
	bpf_probe_read_kernel(&v, sizeof(v), (void *)ctx + off);
	return v;
}

/* Zero-extended little-endian value of size 1, 2, 4 or 8 at a user address; 0 if unreadable. */
static __always_inline __u64 read_user_uint(__u64 addr, __u32 size)
{
	__u64 v = 0;

	switch (size) {
	case 1: {
		__u8 b = 0;
		bpf_probe_read_user(&b, sizeof(b), (void *)addr);
		v = b;
		break;
	}
	case 2: {
		__u16 h = 0;
		bpf_probe_read_user(&h, sizeof(h), (void *)addr);
		v = h;
		break;
	}
	case 4: {
		__u32 w = 0;
		bpf_probe_read_user(&w, sizeof(w), (void *)addr);
		v = w;
		break;
	}
	case 8: bpf_probe_read_user(&v, sizeof(v), (void *)addr); break;
	}
	return v;
}

/*
 * floor(log2(v)), 0 for v <= 1: the histogram bucket of a duration. Branch-free
 * ((c - v) >> 63 is v > c for v < 2^63): branches here would multiply the
 * verifier's paths by the number of buckets.
 */
static __always_inline __u64 gt_bit(__u64 v, __u64 c)
{
	__u64 d = c - v;

	opaque(d); /* else clang turns it back into a compare and branch */
	return d >> 63;
}

static __always_inline __u32 log2_u64(__u64 v)
{
	__u64 r, shift;

	v &= ~(1ULL << 63);
	r = gt_bit(v, 0xffffffffULL) << 5;
	v >>= r;
	shift = gt_bit(v, 0xffff) << 4;
	v >>= shift;
	r |= shift;
	shift = gt_bit(v, 0xff) << 3;
	v >>= shift;
	r |= shift;
	shift = gt_bit(v, 0xf) << 2;
	v >>= shift;
	r |= shift;
	shift = gt_bit(v, 0x3) << 1;
	v >>= shift;
	r |= shift;
	r |= (v >> 1) & 1;
	return (__u32)r;
}

#include "trace_top.bpf.h"

/* Emit frames[index] as completed with `result`; counts records, emitted, dropped. */
static __always_inline void emit(struct thread_stack *st, __u32 index, __u64 now, __u8 result,
				 __u8 why, __s32 await_index, __u64 state_after, __u64 pid_tgid,
				 __u8 stepped)
{
	struct poll_record *r;
	struct poll_frame *f, *parent;
	__u64 avail;
	struct poll_stats *stats;
	__u32 poll;

	if (index >= TRACE_MAX_DEPTH)
		return;
	f = &st->frames[index];
	poll = f->poll;
	stats = bpf_map_lookup_elem(&trace_stats, &poll);
	if (stats) {
		__u32 bucket = log2_u64(now - f->start_ns) & (TRACE_HIST_BUCKETS - 1);

		__sync_fetch_and_add(&stats->records, 1);
		__sync_fetch_and_add(&stats->busy_ns, now - f->start_ns);
		__sync_fetch_and_add(&stats->hist[bucket], 1);
		if (result == RESULT_TRUNCATED)
			__sync_fetch_and_add(&stats->truncated, 1);
		if (result == RESULT_READY)
			__sync_fetch_and_add(&stats->ready, 1);
		if (result == RESULT_PANICKED)
			__sync_fetch_and_add(&stats->panicked, 1);
		if (stats_only && result == RESULT_PENDING) /* top --prometheus reads it */
			__sync_fetch_and_add(&stats->pending, 1);
		if (stepped) /* the share of exits that cost a single-step, by frequency */
			__sync_fetch_and_add(&stats->stepped_exits, 1);
	}
	if (stats_only) {
		if (stats && wake_window)
			__sync_fetch_and_add(&stats->window_polls, 1);
		live_instance(f->self, poll, result, stats);
		return;
	}
	r = bpf_ringbuf_reserve(&trace_events, sizeof(*r), 0);
	if (!r) {
		if (stats)
			__sync_fetch_and_add(&stats->dropped, 1);
		count(COUNTER_DROPPED);
		return;
	}
	r->type = RECORD_POLL;
	r->pid = pid_tgid >> 32;
	r->tid = (__u32)pid_tgid;
	r->poll = poll;
	r->start_ns = f->start_ns;
	r->end_ns = now;
	r->self = f->self;
	if (index > 0) {
		parent = &st->frames[(index - 1) & (TRACE_MAX_DEPTH - 1)];
		r->parent_self = parent->self;
		r->parent_poll = parent->poll;
	} else {
		r->parent_self = 0;
		r->parent_poll = ~0u;
	}
	if (f->task_depth < TRACE_MAX_DEPTH) {
		struct poll_frame *task = &st->frames[f->task_depth & (TRACE_MAX_DEPTH - 1)];

		r->task_self = task->self;
		r->task_poll = task->poll;
	} else {
		r->task_self = 0;
		r->task_poll = ~0u;
	}
	r->depth = index;
	r->result = result;
	r->unknown_reason = result == RESULT_UNKNOWN ? why : UNKNOWN_NONE;
	r->await_index = await_index;
	r->state_before = f->state;
	r->state_after = state_after;
	r->offcpu_ns = st->offcpu_ns - f->offcpu_at_entry;
	r->waker_data = f->waker_data;
	if (stats)
		__sync_fetch_and_add(&stats->emitted, 1);
	/*
	 * Wake the consumer by data threshold, not per record, and only on the record that
	 * crosses it: forcing a wake-up (an irq_work) on every record past it would slow
	 * the traced threads down instead of letting a slow consumer drop (counted). The
	 * consumer drains everything when woken, and polls every 100 ms anyway.
	 */
	avail = bpf_ringbuf_query(&trace_events, BPF_RB_AVAIL_DATA); /* includes this record */
	bpf_ringbuf_submit(r, avail >= wakeup_bytes && avail < wakeup_bytes + RECORD_ROOM
				  ? BPF_RB_FORCE_WAKEUP
				  : BPF_RB_NO_WAKEUP);
}

/*
 * What pop_one needs; nothing here changes from one iteration to the next, and the
 * depth being popped lives in st->depth (map memory, an unknown to the verifier):
 * bpf_loop's callback is then verified in one pass instead of one per depth.
 */
struct pop_ctx {
	struct thread_stack *st;
	__u64 sp, now, pid_tgid;
	__u8 inclusive; /* also pop a frame whose sp equals sp */
	__u8 all;	/* pop everything (thread exit) with all_result */
	__u8 all_result;
};

static long pop_one(__u64 i, void *data)
{
	struct pop_ctx *c = data;
	struct thread_stack *st = c->st;
	struct poll_frame *f;
	__u32 depth, top;

	if (!st)
		return 1;
	depth = st->depth;
	if (depth == 0 || depth > TRACE_MAX_DEPTH)
		return 1;
	top = (depth - 1) & (TRACE_MAX_DEPTH - 1);
	f = &st->frames[top];
	if (!c->all && (f->sp > c->sp || (!c->inclusive && f->sp == c->sp)))
		return 1;
	emit(st, top, c->now, c->all ? c->all_result : RESULT_TRUNCATED, UNKNOWN_NONE, -1, f->state,
	     c->pid_tgid, 0);
	st->depth = depth - 1;
	return 0;
}

/*
 * Emit and pop the frames on top whose entry stack pointer is below `sp` (strictly,
 * or also equal with `inclusive`): an unwind skipped their exits. Returns the new
 * depth. bpf_loop keeps the verifier's work independent of TRACE_MAX_DEPTH.
 */
static __always_inline __u32 pop_stale(struct thread_stack *st, __u32 depth, __u64 sp,
				       int inclusive, __u64 now, __u64 pid_tgid)
{
	struct pop_ctx c = {
	    .st = st,
	    .sp = sp,
	    .now = now,
	    .pid_tgid = pid_tgid,
	    .inclusive = inclusive,
	};

	if (depth == 0 || st->frames[(depth - 1) & (TRACE_MAX_DEPTH - 1)].sp > sp)
		return depth; /* the usual case: nothing stale, no loop */
	st->depth = depth;
	bpf_loop(TRACE_MAX_DEPTH, pop_one, &c, 0);
	depth = st->depth;
	return depth > TRACE_MAX_DEPTH ? TRACE_MAX_DEPTH : depth;
}

static __always_inline void poll_entry(struct uregs *ctx, const struct poll_spec *spec,
				       __u32 spec_index, __u64 now, __u64 pid_tgid)
{
	struct thread_stack *st;
	struct poll_frame *f;
	__u64 sp = ctx->sp - (__s64)spec->sp_delta; /* rsp at function entry */
	__u64 self = 0, state = 0;
	__u32 depth, poll = spec->poll;

	if (spec->self_kind == SPEC_SELF_REG)
		self = read_reg(ctx, spec->self_reg);
	else if (spec->self_kind == SPEC_SELF_STACK)
		self = read_user_uint(ctx->sp + (__s64)spec->self_sp_offset, 8);
	if ((spec->flags & SPEC_HAS_STATE) && self)
		state = read_user_uint(self + spec->state_offset, spec->state_size);

	st = bpf_task_storage_get(&trace_stacks, bpf_get_current_task_btf(), 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st) {
		count(COUNTER_NO_STORAGE);
		return;
	}
	st->pid_tgid = pid_tgid; /* whose stack: for user space's tracer__dump_open */
	depth = st->depth;
	if (depth > TRACE_MAX_DEPTH)
		depth = TRACE_MAX_DEPTH;
	/* A live caller's frame is above ours: anything at or below our sp is stale. */
	depth = pop_stale(st, depth, sp, 1, now, pid_tgid);
	if (depth >= TRACE_MAX_DEPTH ||
	    ((spec->flags & SPEC_URETPROBE_EXITS) && depth >= TRACE_URETPROBE_MAX_DEPTH)) {
		st->depth = depth;
		count(COUNTER_STACK_OVERFLOW);
		return;
	}
	opaque(depth); /* keep the mask: the verifier lost depth's bounds in the loop */
	f = &st->frames[depth & (TRACE_MAX_DEPTH - 1)];
	f->spec = spec_index;
	f->poll = poll;
	f->self = self;
	f->sp = sp;
	f->start_ns = now;
	f->state = state;
	f->offcpu_at_entry = st->offcpu_ns;
	f->waker_data = 0;
	f->pad = 0;
	f->pad2 = 0;
	/* its task: itself if it is a task's root, else its awaiter's */
	bool root = (spec->flags & SPEC_TASK_ROOT) || (!roots_known && depth == 0);
	if (root)
		f->task_depth = depth;
	else if (depth)
		f->task_depth = st->frames[(depth - 1) & (TRACE_MAX_DEPTH - 1)].task_depth;
	else
		f->task_depth = FRAME_NO_TASK;
	st->depth = depth + 1;
	/* a task's poll after a wake: its scheduling delay, in its poll fn's statistics;
	 * the task by its future (runtimes) or by its waker's data (std's Wake) */
	if (root && wakes_enabled && self) {
		__u64 key = self, data = 0, *woken = bpf_map_lookup_elem(&wake_pending, &key);
		bool by_data = false;

		if (ctx_known && spec->ctx_reg) {
			/* rsi, or rdx behind a hidden return pointer: both loads, then select
			 * (a ctx offset chosen at run time is refused) */
			__u64 si = ctx->si, dx = ctx->dx, cx, w = 0;

			asm volatile("" : "+r"(si), "+r"(dx));
			cx = spec->ctx_reg == 4 + 1 ? si : dx;

			if (cx)
				w = read_user_uint(cx + ctx_waker_off, 8);
			if (w)
				data = read_user_uint(w + waker_raw_off + raw_data_off, 8);
			f->waker_data = data;
		}
		if (!woken && data) {
			key = data;
			woken = bpf_map_lookup_elem(&wake_pending, &key);
			by_data = true;
		}
		if (woken) {
			struct poll_stats *stats = bpf_map_lookup_elem(&trace_stats, &poll);

			if (stats && now >= *woken) {
				__sync_fetch_and_add(&stats->delay_hist[log2_u64(now - *woken) &
									(TRACE_HIST_BUCKETS - 1)],
						     1);
				if (stats_only) /* top --prometheus: the histogram's _sum */
					__sync_fetch_and_add(&stats->delay_ns, now - *woken);
			}
			if (stats && by_data) /* std's Wake: the task is known only now */
				__sync_fetch_and_add(&stats->wakes, 1);
			bpf_map_delete_elem(&wake_pending, &key);
		}
	}
	/* no statistics here: the exit's record counts the poll (one map lookup per poll) */
}

/* Ready/Pending of a hand-written future from its Poll<T> return value. */
static __always_inline __u8 result_from_return(struct uregs *ctx, const struct poll_spec *spec,
					       __u8 *why)
{
	__u32 off = spec->ret_discr_offset, size = spec->ret_discr_size;
	__u64 v;

	*why = UNKNOWN_NO_LAYOUT;
	if (!(spec->flags & SPEC_RET_KNOWN) || !size || size > 8)
		return RESULT_UNKNOWN;
	if (spec->flags & SPEC_RET_IN_MEMORY) {
		v = read_user_uint(ctx->ax + off, size);
	} else {
		if (off % 8 + size > 8 || off >= 16)
			return RESULT_UNKNOWN;
		/* both loads, then select: a conditional ctx offset is refused */
		__u64 ax = ctx->ax, dx = ctx->dx;

		asm volatile("" : "+r"(ax), "+r"(dx));
		v = off < 8 ? ax : dx;
		v >>= (off % 8) * 8;
		if (size < 8)
			v &= (1ULL << (size * 8)) - 1;
	}
	*why = UNKNOWN_BAD_DISCR;
	if ((spec->flags & SPEC_RET_PENDING_VALUE) && v == spec->ret_pending_value)
		return RESULT_PENDING;
	if ((spec->flags & SPEC_RET_READY_VALUE) && v == spec->ret_ready_value)
		return RESULT_READY;
	/* the variant without a discriminant value is "everything else" */
	if (spec->flags & SPEC_RET_PENDING_VALUE && !(spec->flags & SPEC_RET_READY_VALUE))
		return RESULT_READY;
	if (spec->flags & SPEC_RET_READY_VALUE && !(spec->flags & SPEC_RET_PENDING_VALUE))
		return RESULT_PENDING;
	return RESULT_UNKNOWN;
}

/*
 * Does x86 condition code cc (a jcc opcode's low nibble) hold for these flags? A
 * conditional exit site is an exit only then: the probe runs before the kernel
 * emulates the jump, with the flags the jump tests.
 */
static __always_inline int cond_holds(__u64 flags, __u8 cc)
{
	__u64 cf = flags & 1, pf = (flags >> 2) & 1, zf = (flags >> 6) & 1, sf = (flags >> 7) & 1,
	      of = (flags >> 11) & 1, r;

	switch ((cc >> 1) & 7) {
	case 0: r = of; break;		    /* jo */
	case 1: r = cf; break;		    /* jb */
	case 2: r = zf; break;		    /* je */
	case 3: r = cf | zf; break;	    /* jbe */
	case 4: r = sf; break;		    /* js */
	case 5: r = pf; break;		    /* jp */
	case 6: r = sf ^ of; break;	    /* jl */
	default: r = zf | (sf ^ of); break; /* jle */
	}
	return (int)(r ^ (cc & 1)); /* odd codes are the negations */
}

static __always_inline void poll_exit(struct uregs *ctx, const struct poll_spec *spec, __u64 now,
				      __u64 pid_tgid)
{
	struct thread_stack *st;
	struct poll_frame *f;
	/* rsp at entry: a `ret`/tail-jump probe sees it (sp_delta 0), a branch site rsp
	 * below it, a uretprobe (sp_delta 8) rsp after the ret popped it */
	__u64 sp = ctx->sp - (__s64)spec->sp_delta, state = 0;
	__u32 depth, top;
	__s32 await_index = -1;
	__u8 result, why = UNKNOWN_NONE;

	/* a tail callee's ret: the callee runs for other callers too, which end nothing */
	bool callee = spec->flags & SPEC_EXIT_TAIL_CALLEE;
	const struct poll_spec *layout = spec;

	if (spec->exit_cond != SPEC_COND_ALWAYS && !cond_holds(ctx->flags, spec->exit_cond))
		return; /* this execution stays in the function */
	st = bpf_task_storage_get(&trace_stacks, bpf_get_current_task_btf(), 0, 0);
	if (!st) {
		if (!callee)
			count(COUNTER_UNMATCHED_EXIT);
		return;
	}
	depth = st->depth;
	if (depth > TRACE_MAX_DEPTH)
		depth = TRACE_MAX_DEPTH;
	depth = pop_stale(st, depth, sp, 0, now, pid_tgid);
	if (depth == 0) {
		st->depth = 0;
		if (!callee)
			count(COUNTER_UNMATCHED_EXIT);
		return;
	}
	top = (depth - 1) & (TRACE_MAX_DEPTH - 1);
	f = &st->frames[top];
	if (callee) {
		/* only a poll that tail-jumped here returns at its own entry's rsp; its
		 * entry spec has the Poll<T> layout */
		__u32 entry = f->spec;

		layout = f->sp == sp ? bpf_map_lookup_elem(&trace_specs, &entry) : NULL;
		if (!layout || !(layout->flags & SPEC_TAIL_CALLS)) {
			st->depth = depth;
			return;
		}
	} else if (f->sp != sp || f->poll != spec->poll) {
		/* entered before we attached, or past the depth limit */
		st->depth = depth;
		count(COUNTER_UNMATCHED_EXIT);
		return;
	}
	if (spec->flags & SPEC_HAS_STATE) {
		/* a branch site before the tail stores __state: the value it will store */
		if (spec->flags & SPEC_STATE_CONST)
			state = spec->ret_ready_value;
		else if (spec->flags & SPEC_STATE_REG)
			state =
			    read_reg(ctx, spec->self_reg) &
			    (spec->state_size >= 8 ? ~0ULL
						   : (1ULL << ((spec->state_size & 7) * 8)) - 1);
		else if (f->self)
			state = read_user_uint(f->self + spec->state_offset, spec->state_size);
		if (!f->self) {
			result = RESULT_UNKNOWN;
			why = UNKNOWN_NO_SELF;
		} else if (state == STATE_RETURNED_VALUE) {
			result = RESULT_READY;
		} else if (state == STATE_PANICKED_VALUE) {
			result = RESULT_PANICKED;
		} else if (state >= STATE_SUSPEND0_VALUE && state <= spec->max_state) {
			result = RESULT_PENDING;
			await_index = state - STATE_SUSPEND0_VALUE;
		} else {
			/* Unresumed after a poll, or past the future's last state: no value
			 * this future can hold (a wrong self would read such garbage) */
			result = RESULT_UNKNOWN;
			why = UNKNOWN_BAD_STATE;
		}
	} else if (spec->flags & SPEC_EXIT_TAIL_CALL) {
		result = RESULT_UNKNOWN; /* rax is not the result yet: the callee computes it */
		why = UNKNOWN_TAIL_CALL;
	} else {
		result = result_from_return(ctx, layout, &why);
	}
	emit(st, top, now, result, why, await_index, state, pid_tgid,
	     (spec->flags & SPEC_SINGLE_STEPPED) != 0);
	st->depth = depth - 1;
}

#include "trace_events.bpf.h"
#include "trace_task.bpf.h"

/*
 * What both probe programs do first: the target's hit, once tracing is ready, its
 * time, its spec by cookie, and its hit class counted (the tracer's own cost at the end).
 * NULL: not ours, or a bad cookie (counted).
 */
static __always_inline struct poll_spec *probe_spec(void *ctx, __u64 pid_tgid, __u64 *now,
						    __u32 *index)
{
	struct poll_spec *spec;

	if ((pid_tgid >> 32) != target_tgid || !*(volatile __u32 *)&trace_ready)
		return NULL;
	*now = bpf_ktime_get_ns();
	count(COUNTER_HITS);
	*index = (__u32)bpf_get_attach_cookie(ctx);
	spec = *index < nr_specs ? bpf_map_lookup_elem(&trace_specs, index) : NULL;
	if (!spec) {
		count(COUNTER_BAD_SPEC);
		return NULL;
	}
	count(COUNTER_HIT0 +
	      ((spec->flags & SPEC_HIT_CLASS_MASK) >> SPEC_HIT_CLASS_SHIFT) % HIT_CLASS_COUNT);
	return spec;
}

SEC("uprobe")
int poll_probe(void *ctx)
{
	struct uregs *regs = ctx;
	__u64 pid_tgid = bpf_get_current_pid_tgid(), now = 0;
	struct poll_spec *spec;
	__u32 index = 0;

	if (!(spec = probe_spec(ctx, pid_tgid, &now, &index)))
		return 0;
	if (spec->kind & PROBE_ENTRY)
		poll_entry(regs, spec, index, now, pid_tgid);
	if (spec->kind & PROBE_EXIT)
		poll_exit(regs, spec, now, pid_tgid);
	if (spec->kind & PROBE_DROP)
		on_drop(regs, spec, now, pid_tgid);
	if (spec->kind & PROBE_WAKE)
		on_wake(regs, spec, now, pid_tgid);
	return 0;
}

/*
 * Task mode's program (bpf/trace_task.bpf.h): its probes only, a program of its own so
 * that the per-future tracer's verification and run time do not carry the tree walk.
 */
SEC("uprobe")
int task_probe(void *ctx)
{
	struct uregs *regs = ctx;
	__u64 pid_tgid = bpf_get_current_pid_tgid(), now = 0;
	struct poll_spec *spec;
	__u32 index = 0;

	if (!(spec = probe_spec(ctx, pid_tgid, &now, &index)))
		return 0;
	if (spec->kind & PROBE_TASK_ENTRY)
		task_entry(regs, spec, now, pid_tgid);
	if (spec->kind & PROBE_TASK_EXIT)
		task_exit(regs, spec, now, pid_tgid);
	if (spec->kind & PROBE_WAKE)
		on_wake(regs, spec, now, pid_tgid);
	return 0;
}

/*
 * The two programs below are raw tracepoints, not tp_btf, and nothing here uses
 * CO-RE: then libbpf never reads the kernel's BTF, which costs 50-150 ms of 4 KiB
 * reads of /sys/kernel/btf/vmlinux on this kind of VM, and the load takes ~10 ms.
 * Frames still open when tracing stops are read from user space (tracer__dump_open).
 */

/*
 * The target replaced its image: its new code has no probes (or, the same file
 * again, probes on a process whose async stacks are gone). User space stops.
 */
SEC("raw_tp/sched_process_exec")
int on_exec(void *ctx)
{
	/* the exec'ing task is current, and its tgid survives the exec */
	if ((bpf_get_current_pid_tgid() >> 32) == target_tgid)
		__sync_fetch_and_add(&exec_count, 1);
	return 0;
}

/*
 * A thread of the target exits: frames still on its stack never get their exit (a
 * panic unwound them and the thread polled nothing afterwards, or the process is
 * exiting while they run). Emit them as truncated before the kernel frees the stack.
 */
SEC("raw_tp/sched_process_exit")
int on_thread_exit(void *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(); /* the exiting task is current */
	struct thread_stack *st;
	struct pop_ctx c = {};

	if ((pid_tgid >> 32) != target_tgid || !*(volatile __u32 *)&trace_ready)
		return 0;
	st = bpf_task_storage_get(&trace_stacks, bpf_get_current_task_btf(), 0, 0);
	if (!st || !st->depth)
		return 0;
	c.st = st;
	c.now = bpf_ktime_get_ns();
	c.pid_tgid = pid_tgid;
	c.all = 1;
	c.all_result = RESULT_TRUNCATED;
	bpf_loop(TRACE_MAX_DEPTH, pop_one, &c, 0);
	return 0;
}

#include "trace_switch.bpf.h"
