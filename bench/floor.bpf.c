// SPDX-License-Identifier: GPL-2.0
/*
 * The mechanism's floor (bench/floor.c): the same probe sites as asyncbpf trace,
 * through one uprobe_multi link, with programs that do nothing. floor_empty is the
 * floor; floor_count counts its hits so a test can see the probes fire.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

__u64 floor_hits = 0;

SEC("uprobe")
int floor_empty(struct pt_regs *ctx)
{
	return 0;
}

SEC("uprobe")
int floor_count(struct pt_regs *ctx)
{
	__sync_fetch_and_add(&floor_hits, 1);
	return 0;
}

/*
 * Pieces of poll_probe's work, one each, to tell what its run time is made of
 * (floor --program NAME with kernel.bpf_stats_enabled=1): a clock read, a task
 * storage lookup-or-create, and the two together with the cookie and a per-CPU
 * counter, the fixed part every poll_probe run pays.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} floor_storage SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} floor_counter SEC(".maps");

__u64 floor_sink = 0;

SEC("uprobe")
int floor_ktime(struct pt_regs *ctx)
{
	floor_sink = bpf_ktime_get_ns();
	return 0;
}

SEC("uprobe")
int floor_task_storage(struct pt_regs *ctx)
{
	__u64 *v = bpf_task_storage_get(&floor_storage, bpf_get_current_task_btf(), 0,
					BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (v)
		*v += 1;
	return 0;
}

SEC("uprobe")
int floor_fixed(struct pt_regs *ctx)
{
	__u32 zero = 0;
	__u64 *c, *v, now = bpf_ktime_get_ns();

	if ((bpf_get_current_pid_tgid() >> 32) == 0)
		return 0;
	c = bpf_map_lookup_elem(&floor_counter, &zero);
	if (c)
		__sync_fetch_and_add(c, 1);
	v = bpf_task_storage_get(&floor_storage, bpf_get_current_task_btf(), 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (v)
		*v = now + bpf_get_attach_cookie(ctx);
	return 0;
}
