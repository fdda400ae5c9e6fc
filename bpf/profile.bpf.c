// SPDX-License-Identifier: GPL-2.0
/*
 * asyncbpf profile: a perf_event program on a sampling event (cpu-clock, or
 * hardware cycles when the machine has them), one event per CPU, filtered to the
 * target's threads here. Each sample copies the interrupted thread's *user*
 * registers (from task_pt_regs, so a sample taken in a syscall still unwinds from
 * where user space called the kernel) and the top of its user stack into the ring
 * buffer; user space unwinds it with DWARF CFI (user/unwind.c), so binaries
 * without frame pointers unwind too. No probe on any poll. docs/profile.md.
 *
 * Optional off-CPU: tp_btf/sched_switch emits the user state of a target thread
 * when it blocks, and the blocked time when it runs again (user space pairs them).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "asyncbpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 target_tgid;
const volatile __u32 stack_size = PROFILE_STACK_DEFAULT;
const volatile __u32 offcpu_enabled;

#define PAGE 4096u

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

/* off-CPU: when each target thread went to sleep (tid -> ns). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} offcpu_start SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&profile_counters, &which);

	if (v)
		*v += 1; /* per-CPU: no atomics needed */
}

/*
 * Copy up to `want` bytes of user stack from sp, page by page: a fault can only
 * happen at a page boundary, so the copy stops at the first unreadable page (the
 * top of a thread's stack) instead of failing whole. Returns the bytes copied.
 */
static __always_inline __u32 copy_stack(__u8 *to, __u64 sp, __u64 want, __u32 *flags)
{
	__u64 off = 0; /* 64-bit: no zero-extension copies that lose the verifier's bounds */

	for (int i = 0; i < PROFILE_STACK_MAX / PAGE + 1; i++) {
		__u64 chunk, room;

		if (off >= want)
			break;
		chunk = PAGE - ((sp + off) & (PAGE - 1));
		room = want - off;
		if (chunk > room)
			chunk = room;
		if (chunk > PAGE)
			chunk = PAGE;
		if (bpf_probe_read_user(to + off, chunk, (void *)(sp + off))) {
			*flags |= PROFILE_F_STACK_FAULT;
			break;
		}
		off += chunk;
	}
	return (__u32)off;
}

/* Registers of user space as it was when it entered the kernel or was interrupted. */
static __always_inline int user_regs(struct task_struct *task, __u64 *regs)
{
	struct pt_regs *r;

	if (task->flags & 0x00200000 /* PF_KTHREAD */)
		return -1;
	r = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!r)
		return -1;
	regs[0] = BPF_CORE_READ(r, ax);
	regs[1] = BPF_CORE_READ(r, dx);
	regs[2] = BPF_CORE_READ(r, cx);
	regs[3] = BPF_CORE_READ(r, bx);
	regs[4] = BPF_CORE_READ(r, si);
	regs[5] = BPF_CORE_READ(r, di);
	regs[6] = BPF_CORE_READ(r, bp);
	regs[7] = BPF_CORE_READ(r, sp);
	regs[8] = BPF_CORE_READ(r, r8);
	regs[9] = BPF_CORE_READ(r, r9);
	regs[10] = BPF_CORE_READ(r, r10);
	regs[11] = BPF_CORE_READ(r, r11);
	regs[12] = BPF_CORE_READ(r, r12);
	regs[13] = BPF_CORE_READ(r, r13);
	regs[14] = BPF_CORE_READ(r, r14);
	regs[15] = BPF_CORE_READ(r, r15);
	regs[16] = BPF_CORE_READ(r, ip);
	return 0;
}

/*
 * One record: header + `stack_size` bytes reserved in the ring buffer (stack_size is
 * read-only data, a constant to the verifier), the stack copied straight into it:
 * no scratch buffer, no second copy. The verifier cannot relate a chunk's offset to
 * its length (off < want, chunk <= PAGE, separately), so a PAGE of slack follows;
 * bytes past hdr.stack_size are not meaningful.
 */
static __always_inline int emit(struct task_struct *task, __u32 type, __u64 weight)
{
	struct profile_sample *r;
	__u32 flags = 0, size = 0;

	r = bpf_ringbuf_reserve(&profile_events, sizeof(*r) + stack_size + PAGE, 0);
	if (!r) {
		count(PCOUNTER_DROPPED);
		return 0;
	}
	r->type = type;
	r->pid = task->tgid;
	r->tid = task->pid;
	r->cpu = bpf_get_smp_processor_id();
	r->time_ns = bpf_ktime_get_ns();
	r->weight = weight;
	if (user_regs(task, r->regs)) {
		flags |= PROFILE_F_KERNEL_THREAD;
		count(PCOUNTER_NO_REGS);
	} else {
		size = copy_stack((__u8 *)(r + 1), r->regs[PROFILE_REG_SP], stack_size, &flags);
		if (flags & PROFILE_F_STACK_FAULT)
			count(PCOUNTER_STACK_FAULT);
	}
	r->flags = flags;
	r->stack_size = size;
	bpf_ringbuf_submit(r, 0);
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
	return emit(task, RECORD_PROFILE_SAMPLE, 1);
}

/*
 * A target thread that blocks (prev, not runnable) emits its user state now, with
 * weight 0; when it is switched in again a RECORD_PROFILE_WAKE record (no stack, weight
 * = ns blocked) follows, which user space adds to that thread's last switch-out stack.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(profile_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now, *start;
	__u32 tid;

	if (!offcpu_enabled)
		return 0;
	if (prev->tgid == (int)target_tgid && !preempt && prev->__state != 0) {
		tid = prev->pid;
		now = bpf_ktime_get_ns();
		if (bpf_map_update_elem(&offcpu_start, &tid, &now, BPF_ANY))
			count(PCOUNTER_OFFCPU_DROPPED);
		else
			emit(prev, RECORD_PROFILE_OFFCPU, 0);
	}
	if (next->tgid == (int)target_tgid) {
		struct profile_sample *r;

		tid = next->pid;
		start = bpf_map_lookup_elem(&offcpu_start, &tid);
		if (!start)
			return 0;
		now = bpf_ktime_get_ns() - *start;
		bpf_map_delete_elem(&offcpu_start, &tid);
		r = bpf_ringbuf_reserve(&profile_events, sizeof(*r), 0);
		if (!r) {
			count(PCOUNTER_DROPPED);
			return 0;
		}
		__builtin_memset(r, 0, sizeof(*r));
		r->type = RECORD_PROFILE_WAKE;
		r->pid = next->tgid;
		r->tid = tid;
		r->cpu = bpf_get_smp_processor_id();
		r->time_ns = bpf_ktime_get_ns();
		r->weight = now;
		bpf_ringbuf_submit(r, 0);
	}
	return 0;
}
