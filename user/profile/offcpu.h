/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The user-space half of off-CPU profiling (--off-cpu; bpf/asyncbpf.h, "Off-CPU time
 * is summed in the kernel"). The kernel sums blocked time per stack, walking stacks
 * with unwind rules it is taught here: each stack it could not walk arrives once as
 * a record, which the consumer walks with libdw (unwinder__walk); offcpu__learn then
 * teaches the kernel that walk's rules at once (before any symbolization, the slow
 * part) and keeps its pcs under the record's key. At the end offcpu__collect reads
 * the kernel's sums and projects each key's stack, symbolized once. docs/profile.md.
 */
#ifndef ASYNCBPF_OFFCPU_H
#define ASYNCBPF_OFFCPU_H

#include <stdint.h>

#include "profile/profile_project.h"
#include "profile/unwind.h"

/* What off-CPU profiling counted, for the summary. */
struct offcpu_counts {
	uint64_t blocks, ns;	      /* blocks summed in the kernel, and their time */
	uint64_t kernel_stacks;	      /* distinct stacks the kernel walked */
	uint64_t unwound;	      /* blocks whose stack user space walked (no rule yet) */
	uint64_t rules, rules_failed; /* rules taught; refused (the table full) */
	uint64_t unknown, unknown_ns; /* summed under a key whose stack never arrived */
	uint64_t blocked_at_stop;     /* threads still blocked at the end: not summed */
};

struct offcpu_learner;

/* rules_fd: the unwind_rules map (-1: teach nothing). NULL: out of memory. */
struct offcpu_learner *offcpu__new(int rules_fd);
void offcpu__free(struct offcpu_learner *l);
/*
 * After unwinder__walk() of a record of the off-CPU ring buffer (key = its weight):
 * teach the kernel the walk's rules and keep its pcs for the end. 0 or -ENOMEM.
 */
int offcpu__learn(struct offcpu_learner *l, struct unwinder *u, uint64_t key,
		  struct offcpu_counts *n);
/*
 * At the end, after the last record: every key of the kernel's sums (times_fd) into
 * p, its stack from the walks kept here or from the kernel's (stacks_fd), symbolized
 * with u (NULL: none could be, they are all counted unknown); counts the threads
 * still blocked (pending_fd). scratch: room for one unwind. 0 or -errno. Called
 * again (profile --every), it adds what grew under each key since the last call.
 */
int offcpu__collect(struct offcpu_learner *l, struct unwinder *u, struct projector *p, int times_fd,
		    int stacks_fd, int pending_fd, struct unwind_result *scratch,
		    struct offcpu_counts *n);

/* The walks' projected stacks forgotten: the next collect goes to a new projector. */
void offcpu__forget_stacks(struct offcpu_learner *l);

#endif
