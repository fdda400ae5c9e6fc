// SPDX-License-Identifier: GPL-2.0
/*
 * Synthetic producer for the consumer benchmark (bench/consumer_bench.c): a
 * BPF_PROG_TYPE_SYSCALL program, run with BPF_PROG_TEST_RUN, that writes `count` real
 * struct poll_records into a ring buffer the size of the tracer's default, with the
 * tracer's wake-up policy (no wake-up until a quarter of the buffer waits). Pairs of
 * records: a depth-1 poll, then the depth-0 task poll it ran in, as a thread's
 * records arrive. Every failed reserve is counted.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "asyncbpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u64 wakeup_bytes = 0;
/*
 * 0: the tracer's rule, a forced wake-up for every record while wakeup_bytes wait;
 * 1: the proposed one, a forced wake-up only for the record that crosses wakeup_bytes.
 */
const volatile __u32 wakeup_on_crossing = 0;

__u64 produced = 0;    /* records attempted */
__u64 dropped = 0;     /* of those, failed reserves */
__s64 loop_result = 0; /* bpf_loop's last return: iterations, or -errno */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* set by user space */
} bench_events SEC(".maps");

/* The test run's context (ctx_in). */
struct produce_args {
	__u64 count; /* 64 bits: bpf_loop reads the whole register (a __u32 field's
		      * neighbour ends up in the upper half otherwise) */
	__u32 pid, tid;
	__u32 task_poll, child_poll;
	__u64 seq; /* sequence number of the first record */
};

static long emit_one(__u64 i, void *data)
{
	struct produce_args *a = data;
	__u64 seq = a->seq + i, now = bpf_ktime_get_ns();
	__u64 instance = 0x7f0000001000ull + (seq / 2 % 64) * 0x100;
	struct poll_record *r;
	int child = !(seq & 1);

	produced++;
	r = bpf_ringbuf_reserve(&bench_events, sizeof(*r), 0);
	if (!r) {
		dropped++;
		return 0;
	}
	r->type = RECORD_POLL;
	r->pid = a->pid;
	r->tid = a->tid;
	r->poll = child ? a->child_poll : a->task_poll;
	r->start_ns = now - (child ? 500 : 1000);
	r->end_ns = now;
	r->self = child ? instance + 0x40 : instance;
	r->parent_self = child ? instance : 0;
	r->parent_poll = child ? a->task_poll : ~0u;
	r->task_self = instance;
	r->task_poll = a->task_poll;
	r->depth = child;
	r->result = child ? RESULT_READY : RESULT_PENDING;
	r->unknown_reason = 0;
	r->await_index = child ? -1 : 0;
	r->state_before = child ? 0 : 3;
	r->state_after = child ? 1 : 3;
	__u64 avail = bpf_ringbuf_query(&bench_events, BPF_RB_AVAIL_DATA);
	__u64 flags = avail < wakeup_bytes ? BPF_RB_NO_WAKEUP : BPF_RB_FORCE_WAKEUP;

	/* avail includes this record (reserved): it crossed if avail minus it was below */
	if (wakeup_on_crossing && avail >= wakeup_bytes && avail - sizeof(*r) - 8 >= wakeup_bytes)
		flags = BPF_RB_NO_WAKEUP;
	bpf_ringbuf_submit(r, flags);
	return 0;
}

SEC("syscall")
int produce(struct produce_args *args)
{
	struct produce_args a = *args;

	loop_result = bpf_loop(a.count, emit_one, &a, 0);
	return 0;
}
