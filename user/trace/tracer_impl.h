/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tracer's state (tracer.h keeps it opaque), shared by the two files that
 * implement it: trace_loader.c (load, attach, detach) and tracer_read.c (reading back
 * the statistics, the counters and the stacks still open at stop). Nothing else
 * includes this.
 */
#ifndef ASYNCBPF_TRACER_IMPL_H
#define ASYNCBPF_TRACER_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "trace.skel.h"
#include "trace/tracer.h"
#include "trace/task_locks.h"

struct tracer {
	struct tracer_opts o;
	struct trace_bpf *skel;
	int multi_fd;			   /* the uprobe_multi link, or -1 */
	int multi_ret_fd;		   /* the uprobe_multi link of the uretprobes, or -1 */
	struct bpf_link **links;	   /* fallback: one perf-event link per probe */
	struct bpf_link *exec_link;	   /* on_exec, NULL when exec cannot be watched */
	struct bpf_link *thread_exit_link; /* on_thread_exit, NULL when not watched */
	struct bpf_link *block_link;	   /* on_switch */
	char blocking_off[160];		   /* why blocking is not watched; "" when it is */
	const struct model *m;		   /* the target's (tracer__load's) */
	struct lock_table locks;	   /* task mode's tree table with its lock slots */
	uint8_t *traced;		   /* by future: the plan probes its poll's entry */
	uint32_t nr_wake_types;		   /* task types wake_types can hold */
	bool wakes_filled;		   /* wake_types holds them (the exe's bias known) */
	unsigned long *site_offsets;	   /* every probe site's file offset (the plan's) */
	uint32_t nr_sites;
	bool sites_filled;	  /* probe_addrs holds their run-time addresses */
	bool task_mode;		  /* task_infos and dyn_vtables to fill once mapped */
	struct bpf_program *prog; /* the probes' program: poll_probe, or task_probe */
	bool tasks_filled;
	uint32_t blocked_at_stop; /* threads off-CPU inside a poll at the end */
	uint32_t nr_links;
	uint32_t nr_polls;	/* the model's, sizes trace_stats */
	uint32_t nr_task_stats; /* task types and root types: task_stats (top, task mode) */
	uint64_t probes_attached, probes_failed;
	bool multi; /* attached through uprobe_multi */
};

#endif
