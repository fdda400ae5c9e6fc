/* SPDX-License-Identifier: GPL-2.0 */
/*
 * asyncbpf profile: the records profile.bpf.c writes into its ring buffer, shared
 * with user space (user/unwind.h reads them). Only __u8..__u64, explicit padding.
 * Kept apart from asyncbpf.h, which the tracer owns; the type tags continue its
 * enum record_type numbering.
 */
#ifndef ASYNCBPF_PROFILE_H
#define ASYNCBPF_PROFILE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define RECORD_PROFILE_SAMPLE 16 /* struct profile_sample, on-CPU */
#define RECORD_PROFILE_OFFCPU 17 /* struct profile_sample: a target thread blocked here */
#define RECORD_PROFILE_WAKE                                                                        \
	18 /* struct profile_sample without stack: it ran again; weight = ns blocked */

/*
 * User registers x86-64 DWARF unwinding needs, indexed by DWARF register number
 * (System V psABI: rax rdx rcx rbx rsi rdi rbp rsp r8..r15, then the return address
 * column 16 which holds rip).
 */
#define PROFILE_NR_REGS 17
#define PROFILE_REG_SP	7
#define PROFILE_REG_BP	6
#define PROFILE_REG_IP	16

#define PROFILE_STACK_DEFAULT (32u << 10) /* debug tokio servers need ~16K (docs/profile.md) */
#define PROFILE_STACK_MAX     (64u << 10)

/* Why a sample carries no usable user state (flags). */
#define PROFILE_F_KERNEL_THREAD 1u /* no user registers at all */
#define PROFILE_F_STACK_FAULT	2u /* the stack copy stopped at an unreadable page */

struct profile_sample {
	__u32 type; /* RECORD_PROFILE_SAMPLE or RECORD_PROFILE_OFFCPU */
	__u32 pid;  /* tgid */
	__u32 tid;
	__u32 cpu;
	__u64 time_ns;	  /* bpf_ktime_get_ns: CLOCK_MONOTONIC */
	__u64 weight;	  /* on-CPU: 1; off-CPU: ns blocked */
	__u32 flags;	  /* PROFILE_F_* */
	__u32 stack_size; /* bytes of stack[] copied from regs[PROFILE_REG_SP] upwards */
	__u64 regs[PROFILE_NR_REGS];
	/* stack_size bytes of stack follow the header */
};

/* Per-CPU counters (profile_counters map). */
enum profile_counter {
	PCOUNTER_HITS,		 /* the program ran for the target's threads */
	PCOUNTER_SAMPLES,	 /* records emitted */
	PCOUNTER_DROPPED,	 /* ring buffer full */
	PCOUNTER_NO_REGS,	 /* no user registers (kernel thread) */
	PCOUNTER_STACK_FAULT,	 /* the stack copy was cut short by a fault */
	PCOUNTER_OFFCPU_DROPPED, /* off-CPU: switch-out state table full */
	PCOUNTER_COUNT,
};

#endif
