// SPDX-License-Identifier: GPL-2.0
/*
 * asyncbpf check: the smallest program for each kernel feature asyncbpf uses or
 * offers. User space loads one program at a time (autoload is off for the rest),
 * fires it, and reads check_hits[] to prove it ran.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "asyncbpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Filled before load: only our own process counts (uprobes are per inode). */
const volatile __u32 target_tgid = 0;
const volatile __u64 getpid_syscall_nr = 0;

__u64 check_hits[CHECK_PROBE_COUNT] = {};
__u64 check_cookies[CHECK_COOKIE_SLOTS] = {}; /* uprobe_multi: cookie per slot */
__u64 check_last_cookie = 0;		      /* bpf_cookie: what the probe read */
__u64 check_return_value = 0;		      /* uretprobe: the probed call's result */
__u64 check_task_value = 0;		      /* task storage value after the last hit */
__u64 check_ringbuf_dropped = 0;	      /* failed bpf_ringbuf_reserve() */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} check_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} check_task_store SEC(".maps");

static __always_inline int is_target(void)
{
	return (bpf_get_current_pid_tgid() >> 32) == target_tgid;
}

static __always_inline void hit(enum check_probe probe)
{
	__sync_fetch_and_add(&check_hits[probe], 1);
}

/* Attached at entry, at a mid-function instruction and at `ret` (asyncbpf's exits). */
SEC("uprobe")
int check_uprobe(struct pt_regs *ctx)
{
	if (is_target())
		hit(CHECK_PROBE_UPROBE);
	return 0;
}

/*
 * Loaded with expected attach type BPF_TRACE_UPROBE_MULTI (set from user space:
 * libbpf 1.1 knows no "uprobe.multi" section), so bpf_get_attach_cookie() reads
 * the per-offset cookie of the multi link.
 */
SEC("uprobe")
int check_uprobe_multi(struct pt_regs *ctx)
{
	__u64 cookie;

	if (!is_target())
		return 0;
	cookie = bpf_get_attach_cookie(ctx);
	check_cookies[cookie % CHECK_COOKIE_SLOTS] = cookie;
	hit(CHECK_PROBE_UPROBE_MULTI);
	return 0;
}

SEC("uretprobe")
int check_uretprobe(struct pt_regs *ctx)
{
	if (!is_target())
		return 0;
	check_return_value = PT_REGS_RC(ctx);
	hit(CHECK_PROBE_URETPROBE);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_getpid")
int check_tracepoint(void *ctx)
{
	if (is_target())
		hit(CHECK_PROBE_TRACEPOINT);
	return 0;
}

SEC("raw_tp/sys_enter")
int BPF_PROG(check_raw_tp, struct pt_regs *regs, long id)
{
	if (is_target() && id == (long)getpid_syscall_nr)
		hit(CHECK_PROBE_RAW_TP);
	return 0;
}

/* Reads the task through BTF: tp_btf's point over a plain tracepoint. */
SEC("tp_btf/sched_switch")
int BPF_PROG(check_tp_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	if (prev->tgid == (int)target_tgid)
		hit(CHECK_PROBE_TP_BTF);
	return 0;
}

SEC("perf_event")
int check_perf_event(struct bpf_perf_event_data *ctx)
{
	if (is_target())
		hit(CHECK_PROBE_PERF_EVENT);
	return 0;
}

SEC("uprobe")
int check_ringbuf(struct pt_regs *ctx)
{
	struct check_record *record;

	if (!is_target())
		return 0;
	hit(CHECK_PROBE_RINGBUF);
	record = bpf_ringbuf_reserve(&check_events, sizeof(*record), 0);
	if (!record) {
		__sync_fetch_and_add(&check_ringbuf_dropped, 1);
		return 0;
	}
	record->type = RECORD_CHECK;
	record->tgid = target_tgid;
	record->magic = CHECK_RECORD_MAGIC;
	record->arg = PT_REGS_PARM1(ctx);
	bpf_ringbuf_submit(record, 0);
	return 0;
}

/* Per-thread state as asyncbpf keeps its async stacks: created on first use. */
SEC("uprobe")
int check_task_storage(struct pt_regs *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 *value;

	if (!is_target())
		return 0;
	value = bpf_task_storage_get(&check_task_store, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!value)
		return 0;
	*value += 1;
	check_task_value = *value;
	hit(CHECK_PROBE_TASK_STORAGE);
	return 0;
}

SEC("uprobe")
int check_bpf_cookie(struct pt_regs *ctx)
{
	if (!is_target())
		return 0;
	check_last_cookie = bpf_get_attach_cookie(ctx);
	hit(CHECK_PROBE_BPF_COOKIE);
	return 0;
}

/* Attach point (__task_pid_nr_ns, called by getpid) chosen by user space. */
SEC("kprobe")
int check_kprobe(struct pt_regs *ctx)
{
	if (is_target())
		hit(CHECK_PROBE_KPROBE);
	return 0;
}

/* Attach target set by user space with bpf_program__set_attach_target(). */
SEC("fentry")
int BPF_PROG(check_fentry)
{
	if (is_target())
		hit(CHECK_PROBE_FENTRY);
	return 0;
}
