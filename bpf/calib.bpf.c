// SPDX-License-Identifier: GPL-2.0
/*
 * What one probe hit costs on this machine (user/trace/probe_cost.c): a program that
 * does what every hit of the tracer's poll_probe does before its own work (the
 * process check, a clock read, the thread's task storage), attached by asyncbpf to
 * its own lib/probe_target.c with the instruction classes the tracer uses.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 calib_tgid = 0;

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} calib_last SEC(".maps");

SEC("uprobe")
int calib_probe(void *ctx)
{
	__u64 *last;

	if ((bpf_get_current_pid_tgid() >> 32) != calib_tgid)
		return 0;
	last = bpf_task_storage_get(&calib_last, bpf_get_current_task_btf(), 0,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (last)
		*last = bpf_ktime_get_ns();
	return 0;
}
