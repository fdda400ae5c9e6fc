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
