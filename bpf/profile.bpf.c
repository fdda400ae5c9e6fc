// SPDX-License-Identifier: GPL-2.0
/*
 * asyncbpf profile: a perf_event program on a sampling event (cpu-clock, or
 * hardware cycles when the machine has them), one event per CPU, filtered to the
 * target's threads here. Each sample copies the interrupted thread's *user*
 * registers (from task_pt_regs, so a sample taken in a syscall still unwinds from
 * where user space called the kernel) and its user stack, from sp to the top of
 * the thread's stack (at most --stack-size), into the ring buffer; user space
 * unwinds it with DWARF CFI (user/profile/unwind.c), so binaries without frame
 * pointers unwind too. No probe on any poll. docs/profile.md.
 *
 * Optional off-CPU: tp_btf/sched_switch sums the time target threads spend blocked
 * per user stack, here in the kernel: the stack is walked with unwind rules user
 * space learned from its own DWARF unwinds; only a stack with a pc not learned yet
 * goes to user space, on a ring buffer of its own.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "asyncbpf.h"

#define UNWIND_READ(dst, addr) bpf_probe_read_user((dst), 8, (void *)(addr))
#include "unwind_step.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 target_tgid;
const volatile __u32 stack_size = PROFILE_STACK_DEFAULT;
const volatile __u32 offcpu_enabled;
/* wake the consumer only past this much unread data (it polls every 100 ms anyway) */
const volatile __u64 wake_bytes = 1 << 20;

#define PAGE	   4096u
#define WAKE_FIRST 64 /* records that wake the consumer whatever the ring holds */
#define PF_KTHREAD 0x00200000
#define PF_EXITING 0x00000004
/* a cached stack top is trusted for a sp at most this far below it */
#define STACK_REACH (64ull << 20)

__u64 records_emitted; /* both ring buffers: the first WAKE_FIRST wake the consumer */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by user space before load */
} profile_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PCOUNTER_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} profile_counters SEC(".maps");

/* The top of each thread's stack (the end of the mapping holding its sp), found once. */
struct stack_bounds {
	__u64 top;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct stack_bounds);
} thread_stacks SEC(".maps");

/* ---- off-CPU (--off-cpu): summed here, per stack (asyncbpf.h, docs/profile.md) ---- */

/* The blocks user space unwinds itself (a pc without a rule); resized before load. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} offcpu_events SEC(".maps");

/* pc (| OFFCPU_KEY_INITIAL for the innermost frame) -> rule; filled by user space */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct unwind_rule);
} unwind_rules SEC(".maps");

/* stack key -> its pcs, kept at the stack's first block */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct offcpu_stack);
} offcpu_stacks SEC(".maps");

/* stack key (or OFFCPU_KEY_LEARN | id) -> blocks and ns off-CPU */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u64);
	__type(value, struct offcpu_time);
} offcpu_times SEC(".maps");

/* a blocked target thread: since when, under which key (tid -> pending) */
struct offcpu_pending {
	__u64 start_ns;
	__u64 key;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct offcpu_pending);
} offcpu_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_stack);
} offcpu_scratch SEC(".maps");

/* ids of the blocks sent to user space: per CPU, the CPU in the top bits */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} offcpu_learn_seq SEC(".maps");

static __always_inline void count_n(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&profile_counters, &which);

	if (v)
		*v += n; /* per-CPU: no atomics needed */
}

static __always_inline void count(__u32 which)
{
	count_n(which, 1);
}

/* Registers of user space as it was when it entered the kernel or was interrupted. */
static __always_inline int user_regs(struct task_struct *task, __u64 *regs)
{
	struct pt_regs *r;

	if (task->flags & PF_KTHREAD)
		return -1;
	r = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!r)
		return -1;
	/* loads through the BTF pointer: no helper call per register */
	regs[0] = r->ax;
	regs[1] = r->dx;
	regs[2] = r->cx;
	regs[3] = r->bx;
	regs[4] = r->si;
	regs[5] = r->di;
	regs[6] = r->bp;
	regs[7] = r->sp;
	regs[8] = r->r8;
	regs[9] = r->r9;
	regs[10] = r->r10;
	regs[11] = r->r11;
	regs[12] = r->r12;
	regs[13] = r->r13;
	regs[14] = r->r14;
	regs[15] = r->r15;
	regs[16] = r->ip;
	return 0;
}

static long vma_end(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	(void)task;
	*(__u64 *)data = vma->vm_end;
	return 0;
}

/*
 * The top of the stack sp is on: the end of its mapping (bpf_find_vma, 5.17), looked
 * up once per thread and kept in task storage. 0 when it cannot be found now (the
 * mm's lock taken, ...): the copy then goes on to --stack-size or the first fault.
 */
static __always_inline __u64 stack_top(struct task_struct *task, __u64 sp)
{
	struct stack_bounds *b;
	__u64 top = 0;

	b = bpf_task_storage_get(&thread_stacks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (b && b->top > sp && b->top - sp <= STACK_REACH)
		return b->top;
	if (bpf_find_vma(task, sp, vma_end, &top, 0) || top <= sp) {
		count(PCOUNTER_NO_TOP);
		return 0;
	}
	if (b)
		b->top = top;
	return top;
}

/*
 * How much of the red zone below sp to copy: all of it when its lowest byte is on
 * sp's page or readable (a thread's stack is mapped whole below sp but for the main
 * thread's, which grows), else the part on sp's page.
 */
static __always_inline __u64 red_zone(__u64 sp)
{
	__u64 probe;

	if ((sp & (PAGE - 1)) >= PROFILE_RED_ZONE ||
	    !bpf_probe_read_user(&probe, sizeof(probe), (void *)(sp - PROFILE_RED_ZONE)))
		return PROFILE_RED_ZONE;
	return sp & (PAGE - 1);
}

/*
 * Copy `want` bytes of user stack from `from` (sp less the red zone) into the record, page by page:
 * a fault can only happen at a page boundary, so the copy stops at the first unreadable page
 * instead of failing whole. Each chunk is written through a PAGE-long window of the
 * record (the verifier cannot relate a variable offset to a variable length), hence
 * the PAGE of slack the record is reserved with. Returns the bytes copied.
 */
static __always_inline __u32 copy_stack(struct bpf_dynptr *rec, __u64 from, __u64 want,
					__u32 *flags)
{
	__u64 off = 0; /* 64-bit: no zero-extension copies that lose the verifier's bounds */

	for (int i = 0; i < PROFILE_STACK_MAX / PAGE + 2; i++) {
		__u64 chunk, room;
		void *to;

		if (off >= want)
			break;
		chunk = PAGE - ((from + off) & (PAGE - 1));
		room = want - off;
		if (chunk > room)
			chunk = room;
		if (chunk > PAGE)
			chunk = PAGE;
		to = bpf_dynptr_data(rec, sizeof(struct profile_sample) + off, PAGE);
		if (!to)
			break;
		if (bpf_probe_read_user(to, chunk, (void *)(from + off))) {
			*flags |= PROFILE_F_STACK_FAULT;
			break;
		}
		off += chunk;
	}
	return (__u32)off;
}

/*
 * One record: header + as much of the stack as the thread has above sp (to the top
 * of its stack), at most `cap` bytes; the ring buffer holds only that (a dynptr
 * reservation of variable size, 5.19). The consumer is woken only when unread data
 * piles up: a wake-up per sample (an irq_work, a self-IPI under a hypervisor) cost
 * more than the rest of the program (docs/profile.md, "Performance").
 */
static __always_inline int emit(void *ringbuf, struct task_struct *task, __u32 type, __u64 weight,
				__u32 cap)
{
	struct profile_sample *r;
	struct bpf_dynptr rec;
	__u64 regs[PROFILE_NR_REGS], top = 0, want = 0, sp = 0, below = 0;
	__u32 flags = 0, size = 0, depth = 0;
	bool have_regs = !user_regs(task, regs);

	if (have_regs) {
		sp = regs[PROFILE_REG_SP];
		top = stack_top(task, sp);
		want = cap;
		if (top) {
			depth = top - sp > 0xffffffffull ? 0xffffffffu : (__u32)(top - sp);
			if (top - sp <= cap)
				want = top - sp;
			else
				flags |= PROFILE_F_STACK_CAPPED;
		}
		if (want > PROFILE_STACK_MAX)
			want = PROFILE_STACK_MAX;
		below = red_zone(sp);
		if (below > PROFILE_RED_ZONE) /* for the verifier */
			below = PROFILE_RED_ZONE;
		want += below;
	} else {
		flags |= PROFILE_F_KERNEL_THREAD;
		count(PCOUNTER_NO_REGS);
	}
	if (bpf_ringbuf_reserve_dynptr(ringbuf, sizeof(*r) + want + PAGE, 0, &rec)) {
		bpf_ringbuf_discard_dynptr(&rec, 0);
		if (type == RECORD_PROFILE_SAMPLE)
			count(PCOUNTER_DROPPED);
		return -1;
	}
	r = bpf_dynptr_data(&rec, 0, sizeof(*r));
	if (!r) {
		bpf_ringbuf_discard_dynptr(&rec, 0);
		return -1;
	}
	r->type = type;
	r->pid = task->tgid;
	r->tid = task->pid;
	r->cpu = bpf_get_smp_processor_id();
	r->time_ns = bpf_ktime_get_ns();
	r->weight = weight;
	r->stack_depth = depth;
	r->below_sp = (__u32)below;
	if (have_regs) {
		__builtin_memcpy(r->regs, regs, sizeof(regs));
		size = copy_stack(&rec, sp - below, want, &flags);
		if (flags & PROFILE_F_STACK_FAULT)
			count(PCOUNTER_STACK_FAULT);
		else if (top && size == top - sp + below)
			flags |= PROFILE_F_STACK_TOP;
		else if (!top && size == want)
			flags |= PROFILE_F_STACK_CAPPED;
	} else {
		__builtin_memset(r->regs, 0, sizeof(r->regs));
	}
	r->flags = flags;
	r->stack_size = size;
	/* the first records wake it at once: it reads the target's mappings then, while
	 * the target lives (a short-lived command may be gone 100 ms later); so does a
	 * stack to learn from (the sooner learned, the fewer sent) */
	bpf_ringbuf_submit_dynptr(&rec, __sync_fetch_and_add(&records_emitted, 1) < WAKE_FIRST ||
						type == RECORD_PROFILE_OFFCPU ||
						bpf_ringbuf_query(ringbuf, BPF_RB_AVAIL_DATA) >=
						    wake_bytes
					    ? BPF_RB_FORCE_WAKEUP
					    : BPF_RB_NO_WAKEUP);
	if (type == RECORD_PROFILE_SAMPLE)
		count(PCOUNTER_SAMPLES);
	return 0;
}

/* execs of the target seen; user space stops on one it did not start (launch mode's) */
__u32 exec_count;

SEC("raw_tp/sched_process_exec")
int profile_exec(void *ctx)
{
	/* the exec'ing task is current, and its tgid survives the exec */
	if ((bpf_get_current_pid_tgid() >> 32) == target_tgid)
		__sync_fetch_and_add(&exec_count, 1);
	return 0;
}

SEC("perf_event")
int profile_sample(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task;

	(void)ctx;
	if ((bpf_get_current_pid_tgid() >> 32) != target_tgid)
		return 0;
	count(PCOUNTER_HITS);
	task = bpf_get_current_task_btf();
	emit(&profile_events, task, RECORD_PROFILE_SAMPLE, 1, stack_size);
	return 0;
}

/* ---- off-CPU ---- */

enum walk_status { WALK_ON, WALK_DONE, WALK_CUT, WALK_MISS };

struct walk {
	struct unwind_regs f;
	__u64 hash;
	__u32 n, status;
	struct offcpu_stack *st;
};

/* One frame of the walk: record pc, apply its rule to find the caller (bpf_loop). */
static long walk_step(__u32 i, void *data)
{
	struct walk *w = data;
	struct unwind_rule *r;
	__u64 key = w->f.pc | (i ? 0 : OFFCPU_KEY_INITIAL);

	if (w->n >= OFFCPU_MAX_FRAMES) {
		w->status = WALK_CUT;
		return 1;
	}
	w->st->pcs[w->n & (OFFCPU_MAX_FRAMES - 1)] = w->f.pc;
	w->n++;
	w->hash = (w->hash ^ w->f.pc) * 0x100000001b3ull; /* FNV-1a over the pcs */
	r = bpf_map_lookup_elem(&unwind_rules, &key);
	if (!r) {
		w->status = WALK_MISS;
		return 1;
	}
	switch (unwind_step(r, &w->f)) {
	case UNWIND_STEP_CALLER: return 0;
	case UNWIND_STEP_END: w->status = WALK_DONE; return 1;
	case UNWIND_STEP_CUT: w->status = WALK_CUT; return 1;
	default: w->status = WALK_MISS; return 1;
	}
}

/*
 * The key prev's time off-CPU is summed under: its stack's, walked here with the
 * learned rules and kept at its first block; or, when a pc has no rule, a key of its
 * own, its stack sent to user space to unwind (and learn from). OFFCPU_KEY_LOST
 * when the stack could not be kept.
 */
static __always_inline __u64 offcpu_key(struct task_struct *prev)
{
	struct pt_regs *regs;
	struct walk w = {.hash = 0xcbf29ce484222325ull};
	__u32 zero = 0;
	__u64 *seq, key;
	long e;

	if (prev->flags & PF_KTHREAD)
		return OFFCPU_KEY_LOST;
	regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	w.st = bpf_map_lookup_elem(&offcpu_scratch, &zero);
	if (!regs || !w.st)
		return OFFCPU_KEY_LOST;
	w.f.sp = regs->sp;
	w.f.bp = regs->bp;
	w.f.pc = regs->ip;
	bpf_loop(OFFCPU_MAX_FRAMES + 1, walk_step, &w, 0);
	if (w.status == WALK_DONE || w.status == WALK_CUT) {
		key = (w.hash ^ w.n) & ~OFFCPU_KEY_LEARN;
		if (key == OFFCPU_KEY_LOST)
			key = 1;
		w.st->nr = w.n;
		w.st->flags = w.status == WALK_CUT ? OFFCPU_STACK_CUT : 0;
		e = bpf_map_update_elem(&offcpu_stacks, &key, w.st, BPF_NOEXIST);
		return e && e != -17 /* EEXIST */ ? OFFCPU_KEY_LOST : key;
	}
	/* user space unwinds this one: a key of its own, carried in the record */
	seq = bpf_map_lookup_elem(&offcpu_learn_seq, &zero);
	if (!seq)
		return OFFCPU_KEY_LOST;
	key = OFFCPU_KEY_LEARN | ((__u64)bpf_get_smp_processor_id() << 40) | ++*seq;
	if (emit(&offcpu_events, prev, RECORD_PROFILE_OFFCPU, key, stack_size))
		return OFFCPU_KEY_LOST;
	count(PCOUNTER_OFFCPU_LEARN);
	return key;
}

static __always_inline void offcpu_add(__u64 key, __u64 ns)
{
	struct offcpu_time *t, one = {.count = 1, .ns = ns};

	if (key != OFFCPU_KEY_LOST) {
		t = bpf_map_lookup_elem(&offcpu_times, &key);
		if (t) {
			__sync_fetch_and_add(&t->count, 1);
			__sync_fetch_and_add(&t->ns, ns);
			return;
		}
		if (!bpf_map_update_elem(&offcpu_times, &key, &one, BPF_NOEXIST))
			return;
		t = bpf_map_lookup_elem(&offcpu_times, &key); /* another CPU added it first */
		if (t) {
			__sync_fetch_and_add(&t->count, 1);
			__sync_fetch_and_add(&t->ns, ns);
			return;
		}
	}
	count(PCOUNTER_OFFCPU_LOST);
	count_n(PCOUNTER_OFFCPU_LOST_NS, ns);
}

/*
 * A target thread that blocks (prev, not runnable; a preemption is not a block)
 * gets its key now; when it is switched in again its time off-CPU is added to that
 * key's sums. Nothing goes through the ring buffer unless a stack is new to the
 * rules: on-CPU samples never wait behind context switches.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(profile_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct offcpu_pending *p, pend;
	__u32 tid;

	if (!offcpu_enabled)
		return 0;
	/* a block: not a preemption (still runnable), not a thread's last switch. The
	 * thread cannot run again before this switch is over (its on_cpu holds a
	 * wake-up back), so the walk below cannot race its switch-in */
	if (prev->tgid == (int)target_tgid && !preempt && prev->__state != 0 &&
	    !(prev->flags & PF_EXITING)) {
		count(PCOUNTER_OFFCPU_BLOCKS);
		tid = prev->pid;
		/* a block whose switch-in the program never saw: lost (rare: ~1 in 10,000) */
		if (bpf_map_lookup_elem(&offcpu_start, &tid))
			count(PCOUNTER_OFFCPU_UNENDED);
		pend.start_ns = bpf_ktime_get_ns();
		pend.key = offcpu_key(prev);
		if (bpf_map_update_elem(&offcpu_start, &tid, &pend, BPF_ANY))
			count(PCOUNTER_OFFCPU_LOST);
	}
	if (next->tgid == (int)target_tgid) {
		tid = next->pid;
		p = bpf_map_lookup_elem(&offcpu_start, &tid);
		if (!p)
			return 0;
		pend = *p;
		bpf_map_delete_elem(&offcpu_start, &tid);
		offcpu_add(pend.key, bpf_ktime_get_ns() - pend.start_ns);
	}
	return 0;
}
