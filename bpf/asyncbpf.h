/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the BPF programs and user space: the ABI between them. Only
 * fixed-width __u8..__u64 types and explicit padding; no bool, long or pointers.
 */
#ifndef ASYNCBPF_H
#define ASYNCBPF_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Every ring-buffer record starts with a __u32 type tag from this list. */
enum record_type {
	RECORD_CHECK = 1, /* struct check_record, from check.bpf.c */
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

#endif
