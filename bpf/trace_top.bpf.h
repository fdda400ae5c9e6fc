/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Part of trace.bpf.c (included once, before the probes' programs): top's state, the
 * statistics-only mode (docs/top.md): the live instances, and the statistics per task
 * type of task mode (filled by trace_task.bpf.h's task_stats_* helpers).
 */
#ifndef ASYNCBPF_TRACE_TOP_BPF_H
#define ASYNCBPF_TRACE_TOP_BPF_H

/*
 * top: the instances polled and not finished, per poll fn (started - ended in its
 * statistics): a hand-written future has no __state to tell its first poll by.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, TOP_MAX_LIVE_INSTANCES);
	__type(key, struct live_key);
	__type(value, __u8);
} live_instances SEC(".maps");

/*
 * top in task mode: per task type (task_infos' index), per CPU: task polls, their
 * times, completions, wakes, delays, blocking. The trees are not read: top needs
 * only whether the task's future is still there.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1); /* sized by user space: the task types and root types */
	__type(key, __u32);
	__type(value, struct poll_stats);
} task_stats SEC(".maps");

/* top: blocked time by row and syscall (struct block_sys_key) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, BLOCK_SYS_ENTRIES);
	__type(key, struct block_sys_key);
	__type(value, struct block_sys_value);
} block_sys SEC(".maps");

static __always_inline void block_sys_add(__u32 row, __s32 syscall, __u64 dt)
{
	struct block_sys_key k = {.row = row, .syscall = syscall};
	struct block_sys_value *v = bpf_map_lookup_elem(&block_sys, &k), zero = {};

	if (!v) {
		bpf_map_update_elem(&block_sys, &k, &zero, BPF_NOEXIST); /* or another CPU did */
		if (!(v = bpf_map_lookup_elem(&block_sys, &k))) {
			count(COUNTER_BLOCK_SYS_FULL);
			return;
		}
	}
	__sync_fetch_and_add(&v->count, 1);
	__sync_fetch_and_add(&v->ns, dt);
}

/*
 * top's LIVE: an instance enters live_instances at its first Pending and leaves at its
 * Ready or panic (or its drop: on_drop); a first poll that is also its last never
 * enters. A truncated or unknown poll says nothing of its fate.
 */
static __always_inline void live_instance(__u64 self, __u32 poll, __u8 result,
					  struct poll_stats *stats)
{
	struct live_key k = {.self = self, .poll = poll};
	__u8 one = 1;

	if (!stats || !self)
		return;
	if (result == RESULT_READY || result == RESULT_PANICKED) {
		if (!bpf_map_delete_elem(&live_instances, &k))
			__sync_fetch_and_add(&stats->ended, 1);
	} else if (result == RESULT_PENDING) {
		long e = bpf_map_update_elem(&live_instances, &k, &one, BPF_NOEXIST);

		if (!e)
			__sync_fetch_and_add(&stats->started, 1);
		else if (e != -17 /* -EEXIST: polled before */)
			count(COUNTER_LIVE_FULL);
	}
}

#endif
