/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the BPF programs and user space: the ABI between them, every record
 * type and value both sides read (the tracer's, `check`'s and the profiler's). Only
 * fixed-width __u8..__u64 types and explicit padding; no bool, long or pointers.
 * The _Static_asserts at the end pin sizes and values: a change to the layout must
 * change them too, on purpose.
 */
#ifndef ASYNCBPF_H
#define ASYNCBPF_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Every ring-buffer record starts with a __u32 type tag from this list. */
enum record_type {
	RECORD_CHECK = 1,	    /* struct check_record, from check.bpf.c */
	RECORD_POLL = 2,	    /* struct poll_record, from trace.bpf.c */
	RECORD_BLOCK = 3,	    /* struct block_record: a thread off-CPU inside a poll */
	RECORD_DROP = 4,	    /* struct drop_record: a traced future dropped */
	RECORD_WAKE = 5,	    /* struct wake_record: a runtime task woken */
	RECORD_TASK_TREE = 6,	    /* struct task_tree_record: a task's future tree at a poll's
				       start or end (task mode) */
	RECORD_PROFILE_SAMPLE = 16, /* struct profile_sample, on-CPU, from profile.bpf.c */
	/* struct profile_sample on the off-CPU ring buffer: a target thread blocked where
	 * the kernel could not unwind (a pc without an unwind rule yet); weight = the
	 * key its time is summed under (OFFCPU_KEY_LEARN | an id) */
	RECORD_PROFILE_OFFCPU = 17,
};

/*
 * asyncbpf check: one program per kernel feature; each counts its hits in
 * check_hits[probe] so user space sees the probe fire, not only attach.
 */
enum check_probe {
	CHECK_PROBE_UPROBE,
	CHECK_PROBE_UPROBE_MULTI,
	CHECK_PROBE_URETPROBE,
	CHECK_PROBE_TRACEPOINT,
	CHECK_PROBE_RAW_TP,
	CHECK_PROBE_TP_BTF,
	CHECK_PROBE_PERF_EVENT,
	CHECK_PROBE_RINGBUF,
	CHECK_PROBE_TASK_STORAGE,
	CHECK_PROBE_BPF_COOKIE,
	CHECK_PROBE_KPROBE,
	CHECK_PROBE_FENTRY,
	CHECK_PROBE_COUNT,
};

/* Cookies seen through one uprobe_multi link: slot = cookie % this. */
#define CHECK_COOKIE_SLOTS 4

#define CHECK_RECORD_MAGIC 0xa5b9c0de5eedULL

struct check_record {
	__u32 type; /* RECORD_CHECK */
	__u32 tgid;
	__u64 magic; /* CHECK_RECORD_MAGIC */
	__u64 arg;   /* first argument of the probed call */
};

/* ---- asyncbpf trace (trace.bpf.c): specs, per-thread stacks, records ---- */

/*
 * Frames kept per thread (a power of two); deeper polls are counted
 * (COUNTER_STACK_OVERFLOW), not traced.
 */
#define TRACE_MAX_DEPTH 128

/* poll_stats.hist[i] counts polls lasting [2^i, 2^(i+1)) ns; hist[0] also 0 ns. */
#define TRACE_HIST_BUCKETS 64

/* What a probe site does: a spec's kind (both for a function that is one tail jump). */
enum probe_kind {
	PROBE_ENTRY = 1,
	PROBE_EXIT = 2,
	PROBE_DROP = 4,	       /* core::ptr::drop_in_place::<F>'s entry: a future dropped */
	PROBE_WAKE = 8,	       /* a runtime's wake function: a task woken (spec.future: runtime) */
	PROBE_TASK_ENTRY = 16, /* a task vtable function's entry (spec.future: runtime) */
	PROBE_TASK_EXIT = 32,  /* a task poll's exit: the continuation of its call, or the
				* vtable function's uretprobe (SPEC_EXIT_RETURNED) */
};

/* Where `self` is at an entry site (enum self_location in user/model.h). */
enum spec_self {
	SPEC_SELF_UNKNOWN = 0,
	SPEC_SELF_REG = 1,   /* DWARF x86-64 register self_reg */
	SPEC_SELF_STACK = 2, /* the 8 bytes at [rsp + self_sp_offset] */
};

enum spec_flags {
	SPEC_HAS_STATE = 1,	    /* a compiler future: __state at self + state_offset */
	SPEC_RET_KNOWN = 2,	    /* Poll<T> return layout known (hand-written futures) */
	SPEC_RET_IN_MEMORY = 4,	    /* Poll<T> returned through the buffer rax points to */
	SPEC_RET_PENDING_VALUE = 8, /* ret_pending_value is the Pending discriminant */
	SPEC_RET_READY_VALUE = 16,  /* ret_ready_value is the Ready discriminant */
	SPEC_EXIT_RETURNED = 32,    /* a uretprobe: rsp is rsp at entry + 8 (the ret is done) */
	SPEC_URETPROBE_EXITS = 64,  /* an entry whose exit is a uretprobe: mind the nesting limit */
	/* an exit site before the tail's store to __state: its final value is ... */
	SPEC_STATE_CONST = 128,	   /* ... the constant state_value */
	SPEC_STATE_REG = 256,	   /* ... the low state_size bytes of register self_reg */
	SPEC_SINGLE_STEPPED = 512, /* a site on an instruction the kernel single-steps */
	SPEC_WAKE_BY_REF = 1024,   /* a wake probe on wake_by_ref (the waker is kept) */
	SPEC_TASK_ROOT = 2048,	   /* an entry of a task's root future: its frame is the task */
	/* tail calls (docs/tracing.md, "Tail calls"): an entry whose poll fn may end in a
	 * function it tail-jumps to; a `ret` of such a callee, which ends the frame at its
	 * rsp if that frame's entry says so (the callee also runs for other callers); an
	 * exit at a tail jump that is not followed: the Poll<T> is not computed yet */
	SPEC_TAIL_CALLS = 4096,
	SPEC_EXIT_TAIL_CALLEE = 8192,
	SPEC_EXIT_TAIL_CALL = 16384,
};

/*
 * What a probe hit costs the target, by the kind of probe and how the kernel runs
 * its instruction (emulated, single-stepped out of line, a uretprobe's return): the
 * plan puts a site's class in its spec's flags (SPEC_HIT_CLASS), poll_probe counts
 * every hit in trace_counters[COUNTER_HIT0 + class]. The tracer's own cost is these
 * counts times the per-hit costs measured at start (docs/tracing.md, "Probe cost").
 */
enum hit_class {
	HIT_ENTRY_EMULATED,
	HIT_ENTRY_STEPPED,
	HIT_EXIT_EMULATED, /* also a conditional exit site that did not exit this time */
	HIT_EXIT_STEPPED,
	HIT_EXIT_RETURN, /* a uretprobe's return (its entry is the entry probe's hit) */
	HIT_WAKE_EMULATED,
	HIT_WAKE_STEPPED,
	HIT_DROP_EMULATED,
	HIT_DROP_STEPPED,
	HIT_TASK_EMULATED, /* task mode: a task poll's entry or exit */
	HIT_TASK_STEPPED,
	HIT_TASK_RETURN,
	HIT_CLASS_COUNT,
};
#define SPEC_HIT_CLASS_SHIFT 16
#define SPEC_HIT_CLASS_MASK  (0xfu << SPEC_HIT_CLASS_SHIFT)

/*
 * The kernel installs at most this many pending uretprobes per thread
 * (MAX_URETPROBE_DEPTH) and silently omits deeper ones: in uretprobe mode a frame
 * deeper than this would never see its exit, so it is not pushed (stack_overflow).
 */
#define TRACE_URETPROBE_MAX_DEPTH 64

/* One probe site, found by its bpf_cookie (the index in the trace_specs array). */
/* poll_spec.exit_cond of a site that is an exit on every execution */
#define SPEC_COND_ALWAYS 0xff

struct poll_spec {
	__u32 poll;	/* index into the model's polls */
	__u32 future;	/* index into the model's futures, ~0 if unknown */
	__u8 kind;	/* enum probe_kind bits */
	__u8 self_kind; /* enum spec_self */
	__u16 self_reg; /* DWARF register number */
	__s32 sp_delta; /* rsp at the site minus rsp at function entry (<= 0; a uretprobe: 8) */
	__s32 self_sp_offset;
	__u32 flags; /* enum spec_flags */
	__u32 state_offset;
	__u8 state_size; /* 1, 2, 4 or 8 */
	__u8 ret_discr_size;
	__u8 exit_cond; /* an exit site: x86 condition code it exits under, or SPEC_COND_ALWAYS */
	__u8 ctx_reg;	/* an entry at the function's start: the Context's DWARF register + 1; 0 */
	__u32 ret_discr_offset;
	__u32 max_state; /* SPEC_HAS_STATE: the highest __state value a state has */
	__u64 ret_pending_value;
	__u64 ret_ready_value; /* SPEC_STATE_CONST exits: the state_value (futures with __state
				* never use the return fields) */
};

/* top's live instances (live_instances map): a future instance by its poll fn */
struct live_key {
	__u64 self;
	__u32 poll;
	__u32 pad;
};
#define TOP_MAX_LIVE_INSTANCES (1u << 18)

/* Values of poll_record.result (enum poll_result in user/trace_event.h, same order). */
enum record_result {
	RESULT_READY = 0,
	RESULT_PENDING = 1,
	RESULT_PANICKED = 2,
	RESULT_UNKNOWN = 3,
	RESULT_TRUNCATED = 4,
	RESULT_OPEN = 5, /* still on the stack when tracing stopped (tracer__dump_open) */
};

/* Why a result is RESULT_UNKNOWN (poll_record.unknown_reason). */
enum unknown_reason {
	UNKNOWN_NONE = 0,
	UNKNOWN_NO_SELF = 1,   /* where self arrives is not known (the analyzer's abi: unknown) */
	UNKNOWN_NO_LAYOUT = 2, /* hand-written: Poll<T>'s layout or return convention unknown */
	UNKNOWN_BAD_STATE = 3, /* __state after the poll is no state the future has */
	UNKNOWN_BAD_DISCR = 4, /* the returned discriminant is neither Pending's nor Ready's */
	UNKNOWN_BAD_AWAIT = 5, /* (user space) Suspend k of a k the future has no await for */
	UNKNOWN_TAIL_CALL = 6, /* it left by a tail jump not followed: the callee's result */
	UNKNOWN_REASON_COUNT,
};

/* rustc's coroutine states (docs/design.md): 0 Unresumed, 1 Returned, 2 Panicked, 3+k Suspend k */
#define STATE_RETURNED_VALUE 1
#define STATE_PANICKED_VALUE 2
#define STATE_SUSPEND0_VALUE 3

struct poll_frame {
	__u32 spec; /* the entry spec */
	__u32 poll;
	__u64 self;
	__u64 sp; /* rsp at function entry: it points at the return address */
	__u64 start_ns;
	__u64 state;	       /* __state at entry */
	__u64 offcpu_at_entry; /* thread_stack.offcpu_ns when it was entered */
	__u64 waker_data;      /* a task's root: its Context's waker data (std-wake matching) */
	__u16 task_depth;      /* the frame of its task (the innermost task root at or below
				* it), FRAME_NO_TASK: none traced */
	__u16 pad;
	__u32 pad2;
};
#define FRAME_NO_TASK 0xffff

/*
 * Task mode (docs/tracing.md, "Task mode"): one probe pair per task poll, on the
 * runtime's task vtable function (tokio's raw::poll<T, S>, async-task's RawTask::run)
 * and at its exit in the caller; at both the BPF program reads the task's future tree
 * from memory with the analyzer's layouts (model future_tree: tree_nodes, tree_slots).
 */
#define TASK_TREE_MAX_NODES 32 /* per tree read; more are cut, counted */
#define TASK_TREE_MAX_DEPTH 16
#define TASK_MAX_NESTED                                                                            \
	4		     /* task polls open at once on a thread (a task polled in a            \
			      * task's poll: tokio's block_in_place, a nested runtime) */
#define TASK_TREE_CONDS 3    /* MODEL_TREE_CONDS */
#define TASK_TREE_SLOTS 16   /* MODEL_TREE_SLOTS: slots of one future */
#define TASK_TREE_STEPS 8    /* MODEL_AWAIT_STEPS */
#define TASK_TREE_CACHE 2048 /* bytes of a task copied at once (a power of two) */
#define TASK_NODE_CACHE 512  /* ... and of a future outside it (a power of two) */

/* A task poll open on a thread. */
struct task_frame {
	__u64 header;
	__u64 sp; /* rsp at the vtable function's entry (its return address) */
	__u64 start_ns;
	__u64 offcpu_at_entry;
	__u32 at_start; /* TASK_START_*: what the header said when the poll began */
	__u32 info;	/* task type: index of its vtable's task_info */
};

/* One future type's node of the tree table (model.trees[i]). */
struct tree_node_spec {
	/* resource: a lock's key (user/trace/task_locks.h): its state word must be read
	 * from a copy, else the node says unreadable */
	__u8 known, has_discr, discr_size, resource;
	__u32 first_slot;
	__u32 nr_slots;
	__u32 discr_offset;
	__u64 discr_max;
	__u32 size; /* the future's size in bytes */
	__u32 pad2;
};

struct tree_cond_spec {
	__u8 kind, size, at_step, pad; /* enum tree_cond_kind: 0 in, 1 not in */
	__u32 offset;
	__u64 lo, hi;
};

struct tree_step_spec {
	__u32 offset;
	__u8 deref;
	__u8 pad[3];
};

/* One slot of the tree table (model.tree_slots[i]). */
struct tree_slot_spec {
	__s32 child; /* future index; -1: a dyn Future (dyn_vtables names it) */
	__u8 dyn, nr_conds, nr_steps, pad;
	__u32 dyn_data, dyn_vtable;
	__u32 pad2;
	struct tree_cond_spec conds[TASK_TREE_CONDS];
	struct tree_step_spec steps[TASK_TREE_STEPS];
};

/* A task type, by its header's vtable (run-time address): where its future is, and
 * when it is there (task_type.live_conds). */
struct task_info {
	__u32 root_future; /* model future index */
	__u32 future_offset;
	__u32 type;			     /* model task_types index */
	__u8 boxed, nr_live, runtime, known; /* known: 0 in a task type's empty slot */
	__u32 root_size; /* the root future's size: how much of it to copy at once */
	/* tokio, when the future is gone: how the poll ended it (task_type.finished_conds,
	 * cancelled_conds; 0: unknown) */
	__u8 nr_finished, nr_cancelled, pad2[2];
	struct task_cond {
		__s32 offset;
		__u8 kind, size, pad[2]; /* kind: 0 in, 1 not in, 2 no bits (tree_cond_kind) */
		__u64 lo, hi;
	} live[TASK_TREE_CONDS], finished[TASK_TREE_CONDS], cancelled[TASK_TREE_CONDS];
};

/* task_tree_node.flags (model/future_tree.h's tree_node_flag, the same values) */
#define TASK_NODE_NO_LAYOUT   1
#define TASK_NODE_BAD_STATE   2
#define TASK_NODE_UNREADABLE  4
#define TASK_NODE_UNKNOWN_DYN 8
#define TASK_NODE_DEPTH	      16

struct task_tree_node {
	__u64 addr;
	__u64 discr;
	__s32 future;
	__s8 parent;		 /* index of its parent node, -1 for the root */
	__u8 depth, flags, slot; /* slot: its index among the parent's slots */
};

enum task_tree_phase {
	TASK_PHASE_START = 0, /* the tree at the poll's entry */
	TASK_PHASE_END = 1,   /* the tree when it returned */
	TASK_PHASE_LOST = 2,  /* the poll's exit was never seen (an unwind): no tree */
};

/* task_tree_record.flags */
#define TASK_TREE_GONE                                                                             \
	1			 /* the future is no longer there (returned Ready: live            \
				  * conditions fail) */
#define TASK_TREE_UNKNOWN_TYPE 2 /* the header's vtable is no task type known: no tree */
#define TASK_TREE_CUT	       4 /* nodes or depth cut: cut_nodes / cut_depth say how many */
/* the tree was not read: another task poll on the same CPU used the per-CPU buffers
 * while this one was preempted (a kernel that preempts BPF programs) */
#define TASK_TREE_NOT_READ 8
/* task_frame.at_start carried to the end record: the future was not there when the
 * poll began (a poll of a finished task), the runtime's cancel flag was set then */
#define TASK_TREE_GONE_AT_START 16
#define TASK_TREE_CANCELLING	32
/* read at the end of a poll that ended the future with the cancel flag set (a cancel
 * that landed during the poll): the poll dropped the future (tokio's Stage holds
 * JoinError::Cancelled, async-task's state is CLOSED without COMPLETED) ... */
#define TASK_TREE_CANCELLED_IN_POLL 64
/* ... or that could not be told from a Ready (tokio's output already dropped, a
 * Stage whose layout was not found, an async-task task already freed) */
#define TASK_TREE_END_UNSURE 128
/* task_frame.at_start, read at a task poll's entry: the record's own bits, sent as
 * they are */
#define TASK_START_GONE	  TASK_TREE_GONE_AT_START
#define TASK_START_CANCEL TASK_TREE_CANCELLING

struct task_tree_record {
	__u32 type; /* RECORD_TASK_TREE */
	__u32 pid;
	__u32 tid;
	__u8 phase; /* enum task_tree_phase */
	__u8 nr_nodes;
	__u8 flags;
	__u8 nested; /* task polls already open on the thread below this one */
	__u64 header;
	__u64 start_ns; /* the task poll's entry */
	__u64 end_ns;	/* its exit (TASK_PHASE_END, _LOST), else start_ns */
	__u64 offcpu_ns;
	__u32 info; /* task_info.type, ~0 unknown */
	__u16 cut_nodes, cut_depth;
	struct task_tree_node nodes[TASK_TREE_MAX_NODES];
};
#define TASK_TREE_RECORD_HEAD                                                                      \
	(sizeof(struct task_tree_record) - TASK_TREE_MAX_NODES * sizeof(struct task_tree_node))

/* A thread's logical async stack, in task storage: each frame knows its task's frame
 * (the innermost task root below it; without known roots, frames[0]). */
struct thread_stack {
	__u32 depth;
	__u32 pad;
	__u64 pid_tgid; /* the thread's, set at each entry (tracer__dump_open reads it) */
	/* off-CPU inside polls (on_switch; docs/tracing.md, "Blocking") */
	__u64 offcpu_ns; /* total, while a poll was open: frames subtract their entry's */
	__u64 off_start; /* it went off-CPU inside a poll at this time; 0: it runs */
	__s32 pad3;
	__s32 off_sys; /* the syscall it went off-CPU in; -1 none */
	__u8 off_kind; /* enum offcpu_kind of that switch */
	__u8 pad2[3];
	__u32 nr_tasks; /* task polls open (task mode) */
	struct task_frame tasks[TASK_MAX_NESTED];
	struct poll_frame frames[TRACE_MAX_DEPTH];
};

/* One completed (or truncated) poll. */
struct poll_record {
	__u32 type; /* RECORD_POLL */
	__u32 pid;
	__u32 tid;
	__u32 poll;
	__u64 start_ns, end_ns;
	__u64 self;
	__u64 parent_self; /* the frame below, 0 at depth 0 */
	__u64 task_self;   /* its task's root frame's self; 0: no task root traced */
	__u32 parent_poll; /* ~0 at depth 0 */
	__u32 task_poll;   /* that frame's poll fn; ~0: none */
	__u16 depth;
	__u8 result;	     /* enum record_result */
	__u8 unknown_reason; /* enum unknown_reason, for RESULT_UNKNOWN */
	__s32 await_index;   /* RESULT_PENDING of a compiler future: k of Suspend k; else -1 */
	__u64 state_before, state_after;
	__u64 offcpu_ns;  /* of end - start, the time its thread was off-CPU (blocking on) */
	__u64 waker_data; /* depth 0: the data of the waker it was polled with, 0 unknown */
};

/*
 * Why a thread went off-CPU inside a poll (block_record.kind). The kernel's own rule
 * for its voluntary switch count (nvcsw in /proc/PID/status): not a preemption and
 * the thread no longer runnable. Time off-CPU while the thread is inside the
 * tracer's probe handling (stopped on one of its breakpoints, single-stepping an
 * instruction out of line, returning through a uretprobe's trampoline) is the
 * tracer's, whatever the kind of switch: never the program's.
 */
enum offcpu_kind {
	OFFCPU_BLOCKED = 0,   /* voluntary: it waited in the kernel (a syscall, a fault) */
	OFFCPU_PREEMPTED = 1, /* involuntary: runnable all along, another thread ran */
	OFFCPU_TRACER = 2,    /* inside the tracer's own probe handling */
};

/*
 * A target thread went off-CPU while a traced poll was open and has now run again:
 * the interval, blamed on the innermost open poll (poll, depth, poll_start_ns).
 */
struct block_record {
	__u32 type; /* RECORD_BLOCK */
	__u32 pid;
	__u32 tid;
	__u32 poll;
	__u64 start_ns, end_ns;
	__u64 self;
	__u64 task_self;
	__u64 poll_start_ns; /* the innermost open poll's start: which poll it was */
	__s32 syscall;	     /* the syscall it blocked in; -1: none (a page fault, ...) */
	__u16 depth;
	__u8 kind; /* enum offcpu_kind */
	__u8 pad;
};

/*
 * A selected future dropped (drop_in_place::<F> entered): its __state then says
 * whether it was cancelled (suspended at an await) or not (unresumed, returned).
 */
struct drop_record {
	__u32 type; /* RECORD_DROP */
	__u32 pid;
	__u32 tid;
	__u32 poll;   /* the future's poll fn (its spec's), ~0 if none */
	__u32 future; /* model index */
	__u16 depth;  /* open traced polls on the thread (the dropper's depth) */
	__u8 has_state;
	__u8 pad;
	__u64 time_ns;
	__u64 self;	    /* the future dropped */
	__u64 state;	    /* its __state at the drop (has_state) */
	__u64 task_self;    /* the thread's outermost open traced poll's self, 0 if none */
	__u64 dropper_self; /* the innermost open traced poll's self (who dropped it), 0 */
	__u32 dropper_poll; /* its poll fn, ~0 if none */
	__u32 pad2;
};

/*
 * The woken task's future, by its header's vtable (wake_types map; user space fills
 * it from the model's task types and, for async-task, the vtables' layout_info).
 */
struct wake_type {
	__u32 future_offset; /* from the header */
	__u32 descend;	     /* then this far in: the first traced future the root awaits */
	__u32 poll;	     /* that future's poll fn (its statistics count the wake) */
	__u8 boxed;	     /* a Pin<Box<F>>: one more pointer (before descend) */
	__u8 pad[3];
};

/* A runtime task woken (its wake function entered). */
struct wake_record {
	__u32 type; /* RECORD_WAKE */
	__u32 pid;
	__u32 tid;
	__u8 runtime; /* enum task_runtime (user/model/model.h) */
	__u8 by_ref;
	__u16 depth; /* open traced polls on the waking thread */
	__u64 time_ns;
	__u64 header;	  /* the task's header */
	__u64 woken_self; /* its root future (as its depth-0 poll's self); 0: unknown type */
	__u64 waker_self; /* the innermost open traced poll on the waking thread, 0: none */
	__u64 waker_task_self;
	__u64 waker_start_ns; /* that poll's start */
	__u32 waker_poll;     /* its poll fn, ~0 if none */
	__u32 pad;
	__u64 vtable; /* the header's vtable as read then (a runtime's task): user space
		       * resolves a type wake_types did not hold yet from it */
};

/* Per poll function, per CPU: records = emitted + dropped, always. */
struct poll_stats {
	__u64 stepped_exits; /* of records: completed on a single-stepped exit probe */
	__u64 records;	     /* records the BPF side tried to emit (completed + truncated) */
	__u64 emitted;	     /* submitted to the ring buffer */
	__u64 dropped;	     /* the ring buffer was full */
	__u64 truncated;     /* of records: frames found stale (unwound) */
	__u64 busy_ns;	     /* sum of end - start over records */
	__u64 hist[TRACE_HIST_BUCKETS]; /* log2 histogram of end - start over records */
	__u64 blocked;			/* off-CPU intervals inside it (blocking on) */
	__u64 blocked_ns;		/* of them, voluntary (blocked) time */
	__u64 preempted_ns;		/* of them, involuntary (preempted) time */
	__u64 voluntary;		/* of them, voluntary switches */
	__u64 tracer;			/* of them, inside the tracer's probe handling */
	__u64 tracer_ns;		/* and their time: the tracer's, not the poll's */
	__u64 block_records;		/* RECORD_BLOCK the BPF side tried to emit */
	__u64 block_dropped;		/* of them, lost to a full ring buffer */
	__u64 drops;			/* drop_in_place::<F> of its future (cancellation on) */
	__u64 drops_lost;		/* of them, lost to a full ring buffer */
	/* for `top` (stats only, no records), and counted in trace too */
	__u64 started;	 /* top: instances first polled (Pending) since attach (live_instances) */
	__u64 ready;	 /* records that returned Ready */
	__u64 panicked;	 /* records that panicked */
	__u64 cancelled; /* drops while suspended at an await */
	__u64 wakes;	 /* wakes of a task whose first traced future this is */
	__u64 ended;	 /* top: of the started, those that returned Ready, panicked, were
			  * dropped: live = started - ended */
	__u64 delay_hist[TRACE_HIST_BUCKETS]; /* wake -> its next poll's start, log2 ns */
	/* top with sampled wakes: of records, those while the wake probes were attached
	 * (wakes / window_polls is the wakes per poll of the sample) */
	__u64 window_polls;
	/* top (stats only): the delays' sum (delay_hist's), and the records that
	 * returned Pending (task mode: the task's future still there) */
	__u64 delay_ns;
	__u64 pending;
};

/*
 * top (stats only): voluntary off-CPU time inside polls by syscall, per row (a poll
 * fn's statistics index, or a task type's with BLOCK_SYS_TASK set): block_sys's key.
 */
#define BLOCK_SYS_TASK	  0x80000000u
#define BLOCK_SYS_ENTRIES 8192
struct block_sys_key {
	__u32 row;
	__s32 syscall; /* -1: none (a page fault, ...) */
};
struct block_sys_value {
	__u64 count, ns;
};

/* Global counters (trace_counters, per CPU). */
enum trace_counter {
	COUNTER_HITS,		/* probe hits of the target while ready */
	COUNTER_STACK_OVERFLOW, /* entries past TRACE_MAX_DEPTH, not traced */
	COUNTER_UNMATCHED_EXIT, /* exits with no frame at that stack pointer (entry before attach)
				 */
	COUNTER_NO_STORAGE,	/* task storage could not be created */
	COUNTER_BAD_SPEC,	/* a cookie out of range */
	COUNTER_DROPPED,	/* records lost to a full ring buffer (all poll fns) */
	COUNTER_SWITCHES,	/* context switches of target threads inside a poll (blocking) */
	COUNTER_BLOCK_DROPPED,	/* block records lost to a full ring buffer */
	COUNTER_WAKES,		/* wake function hits */
	COUNTER_WAKE_DROPPED,	/* wake records lost to a full ring buffer */
	COUNTER_WAKE_UNKNOWN,	/* wakes of a task whose vtable is not in wake_types */
	COUNTER_LIVE_FULL,	/* top: an instance not tracked, live_instances was full */
	COUNTER_TASK_DROPPED,	/* task tree records lost to a full ring buffer */
	COUNTER_TREES,		/* task polls ended: their trees read (task_exit) */
	COUNTER_TREE_NS,	/* time in task_exit's BPF work (ns): beyond a hit's fixed cost */
	COUNTER_HIT0,		/* probe hits by enum hit_class, HIT_CLASS_COUNT of them */
	/* after the hit classes: COUNTER_HIT0 + class keeps exact bounds (HIT0 = 15) */
	COUNTER_TREE_NOT_READ = COUNTER_HIT0 + HIT_CLASS_COUNT, /* trees whose per-CPU
								 * buffers another poll used */
	COUNTER_BLOCK_SYS_FULL,	 /* top: blocked time not split by syscall (block_sys full) */
	COUNTER_TASK_END_UNSURE, /* top: a task poll ended its future with the cancel flag
				  * set, Ready or cancelled not told (TASK_TREE_END_UNSURE) */
	COUNTER_COUNT,
};

/* ---- asyncbpf profile (profile.bpf.c; user/profile/ reads these) ---- */

/*
 * User registers x86-64 DWARF unwinding needs, indexed by DWARF register number
 * (System V psABI: rax rdx rcx rbx rsi rdi rbp rsp r8..r15, then the return address
 * column 16 which holds rip).
 */
#define PROFILE_NR_REGS 17
#define PROFILE_REG_SP	7
#define PROFILE_REG_BP	6
#define PROFILE_REG_IP	16

/* at most; a sample copies its stack's depth when less. Debug hyper servers go 61K
 * deep (docs/profile.md, "Stack copy size") */
#define PROFILE_STACK_DEFAULT (128u << 10)
#define PROFILE_STACK_MAX     (256u << 10)
/* x86-64 System V: the 128 bytes below sp that signal handlers leave alone */
#define PROFILE_RED_ZONE 128u

/* What a sample's stack copy holds (flags). */
#define PROFILE_F_KERNEL_THREAD 1u /* no user registers at all */
#define PROFILE_F_STACK_FAULT	2u /* the stack copy stopped at an unreadable page */
#define PROFILE_F_STACK_TOP	4u /* the copy reached the top of the thread's stack */
#define PROFILE_F_STACK_CAPPED	8u /* the copy stopped at --stack-size, short of the top */

struct profile_sample {
	__u32 type; /* RECORD_PROFILE_SAMPLE or RECORD_PROFILE_OFFCPU */
	__u32 pid;  /* tgid */
	__u32 tid;
	__u32 cpu;
	__u64 time_ns; /* bpf_ktime_get_ns: CLOCK_MONOTONIC */
	__u64 weight;  /* on-CPU: 1; off-CPU: ns blocked */
	__u32 flags;   /* PROFILE_F_* */
	/* bytes of stack[]: copied from regs[PROFILE_REG_SP] - below_sp upwards */
	__u32 stack_size;
	/* bytes from regs[PROFILE_REG_SP] to the end of the stack's mapping (the top of
	 * the thread's stack), 0 when unknown; saturates at UINT32_MAX */
	__u32 stack_depth;
	/* bytes of stack[] below sp (at most PROFILE_RED_ZONE): the red zone, where
	 * leaf functions keep data and an epilogue's popped registers still lie while
	 * its CFI says they are saved there (LLVM emits no rule change after a pop) */
	__u32 below_sp;
	__u64 regs[PROFILE_NR_REGS];
	/* stack_size bytes of stack follow the header */
};

/*
 * Off-CPU time is summed in the kernel (profile.bpf.c): when a target thread blocks,
 * the program walks its user stack with unwind rules user space learned from the
 * DWARF CFI of earlier unwinds (one rule per pc, in unwind_rules), hashes the pcs
 * into a key, keeps the pcs once (offcpu_stacks) and adds the blocked time to the
 * key's sums (offcpu_times) when the thread runs again. A pc without a rule sends
 * the thread's stack to user space once (RECORD_PROFILE_OFFCPU), which unwinds it
 * with libdw, sums that block under its own key and adds the rules it used.
 */
#define OFFCPU_MAX_FRAMES     128
#define OFFCPU_KEY_INITIAL    (1ull << 63) /* unwind_rules key: pc of the innermost frame */
#define OFFCPU_KEY_LEARN      (1ull << 63) /* offcpu_times key: a block user space unwound */
#define OFFCPU_KEY_LOST	      0ull	   /* pending: the block's stack was lost */
#define UNWIND_RULE_CFA_SP    7		   /* DWARF register numbers (x86-64) */
#define UNWIND_RULE_CFA_BP    6
#define UNWIND_RULE_BP_SAME   0 /* the caller's rbp is this frame's */
#define UNWIND_RULE_BP_AT_CFA 1 /* saved at CFA + bp_offset */
#define UNWIND_RULE_END	      1 /* flags: the outermost frame, the stack is whole */
#define UNWIND_RULE_CUT	      2 /* flags: the unwind that taught this stopped here early */

/* How to find the caller's frame from a frame at a pc: the x86-64 CFI rules we use. */
struct unwind_rule {
	__s32 cfa_offset; /* CFA = cfa_reg + cfa_offset; the return address at CFA - 8 */
	__u8 cfa_reg;	  /* UNWIND_RULE_CFA_SP or _BP */
	__u8 bp_rule;	  /* UNWIND_RULE_BP_* */
	__u8 flags;	  /* UNWIND_RULE_END, UNWIND_RULE_CUT */
	__u8 pad;
	__s32 bp_offset;
	__u32 pad2;
};

#define OFFCPU_STACK_CUT 1u /* flags: the walk stopped early (a CUT rule, too deep) */

/* offcpu_stacks value: the pcs of one off-CPU stack, innermost first (return addresses
 * as found: the call is at pc - 1 from pcs[1] on). */
struct offcpu_stack {
	__u32 nr;
	__u32 flags;
	__u64 pcs[OFFCPU_MAX_FRAMES];
};

/* offcpu_times value: blocks with this key, and their time off-CPU. */
struct offcpu_time {
	__u64 count;
	__u64 ns;
};

/* Per-CPU counters (profile_counters map). */
enum profile_counter {
	PCOUNTER_HITS,		 /* the program ran for the target's threads */
	PCOUNTER_SAMPLES,	 /* records emitted */
	PCOUNTER_DROPPED,	 /* ring buffer full */
	PCOUNTER_NO_REGS,	 /* no user registers (kernel thread) */
	PCOUNTER_STACK_FAULT,	 /* the stack copy was cut short by a fault */
	PCOUNTER_NO_TOP,	 /* the top of the thread's stack could not be found */
	PCOUNTER_OFFCPU_BLOCKS,	 /* off-CPU: target threads that blocked */
	PCOUNTER_OFFCPU_LEARN,	 /* ... whose stack went to user space (a pc without a rule) */
	PCOUNTER_OFFCPU_LOST,	 /* ... lost: a map or the off-CPU ring buffer was full */
	PCOUNTER_OFFCPU_LOST_NS, /* time blocked of the lost ones, when it was measured */
	PCOUNTER_OFFCPU_UNENDED, /* ... whose switch-in was not seen: lost, time unknown */
	PCOUNTER_COUNT,
};

/* ---- the layout, pinned ---- */

_Static_assert(sizeof(struct check_record) == 24, "struct check_record changed");
_Static_assert(sizeof(struct poll_spec) == 56, "struct poll_spec changed");
_Static_assert(sizeof(struct poll_frame) == 64, "struct poll_frame changed");
_Static_assert(sizeof(struct task_frame) == 40, "struct task_frame changed");
_Static_assert(sizeof(struct tree_slot_spec) == 24 + 24 * TASK_TREE_CONDS + 8 * TASK_TREE_STEPS,
	       "struct tree_slot_spec changed");
_Static_assert(sizeof(struct task_tree_node) == 24, "struct task_tree_node changed");
_Static_assert(sizeof(struct task_tree_record) == 56 + 24 * TASK_TREE_MAX_NODES,
	       "struct task_tree_record changed");
_Static_assert(sizeof(struct thread_stack) == 48 + 40 * TASK_MAX_NESTED + 64 * TRACE_MAX_DEPTH,
	       "struct thread_stack changed");
_Static_assert(sizeof(struct poll_record) == 104, "struct poll_record changed");
_Static_assert(sizeof(struct block_record) == 64, "struct block_record changed");
_Static_assert(sizeof(struct drop_record) == 72, "struct drop_record changed");
_Static_assert(sizeof(struct wake_record) == 80, "struct wake_record changed");
_Static_assert(sizeof(struct wake_type) == 16, "struct wake_type changed");
_Static_assert(__builtin_offsetof(struct poll_record, result) == 66, "poll_record.result moved");
_Static_assert(sizeof(struct poll_stats) % sizeof(__u64) == 0,
	       "struct poll_stats: only __u64 members (user space sums them word by word)");
_Static_assert(sizeof(struct poll_stats) == 200 + 16 * TRACE_HIST_BUCKETS,
	       "struct poll_stats changed");
_Static_assert(sizeof(struct profile_sample) == 48 + 8 * PROFILE_NR_REGS,
	       "struct profile_sample changed");
_Static_assert(sizeof(struct unwind_rule) == 16, "struct unwind_rule changed");
_Static_assert(sizeof(struct block_sys_key) == 8 && sizeof(struct block_sys_value) == 16,
	       "struct block_sys_* changed");
_Static_assert(sizeof(struct offcpu_stack) == 8 + 8 * OFFCPU_MAX_FRAMES,
	       "struct offcpu_stack changed");
_Static_assert(RESULT_READY == 0 && RESULT_PENDING == 1 && RESULT_PANICKED == 2 &&
		   RESULT_UNKNOWN == 3 && RESULT_TRUNCATED == 4 && RESULT_OPEN == 5,
	       "enum record_result renumbered (user space maps it onto enum poll_result)");
_Static_assert(UNKNOWN_REASON_COUNT == 7, "enum unknown_reason changed");

#endif
