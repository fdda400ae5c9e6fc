// SPDX-License-Identifier: GPL-2.0
/*
 * The summary's blocking part (docs/tracing.md, "Blocking"): every off-CPU interval
 * of a target thread inside a traced poll, blamed on the innermost open poll; per
 * poll fn the voluntary (blocked) and involuntary (preempted) time, by syscall; per
 * poll the voluntary time it blocked its thread, for the BLOCKING warnings. Time
 * off-CPU inside the tracer's own probe handling is counted apart, as the tracer's.
 *
 * A thread's records arrive in its own time order (one ring buffer, reserved as they
 * happen): the blocks of a poll come before that poll's record, so one accumulator
 * per thread (the poll blocking now) is enough.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace_summary.h"

struct block_acc {
	uint32_t poll;
	uint64_t poll_start_ns;
	uint64_t ns;	     /* voluntary off-CPU in this poll so far */
	uint64_t longest_ns; /* its longest block */
	int32_t longest_syscall;
	bool open;
};

void trace_summary__set_blocking(struct trace_summary *s, const char *off, uint64_t threshold_ns)
{
	s->blocking_off = off;
	s->block_threshold_ns = threshold_ns;
}

static void add_syscall(struct block_summary *b, int32_t nr, uint64_t ns)
{
	for (uint32_t i = 0; i < b->nr_syscalls; i++)
		if (b->by_syscall[i].nr == nr) {
			b->by_syscall[i].count++;
			b->by_syscall[i].ns += ns;
			return;
		}
	if (b->nr_syscalls < SUMMARY_SYSCALLS) {
		b->by_syscall[b->nr_syscalls++] = (struct syscall_time){nr, 1, ns};
		return;
	}
	b->other_count++;
	b->other_ns += ns;
}

static struct block_acc *acc_of(struct trace_summary *s, uint32_t tid)
{
	uint64_t i;

	if (u64_map__get(&s->block_acc, tid, &i))
		return &s->accs[i];
	if (s->nr_accs == s->cap_accs) {
		uint32_t cap = s->cap_accs ? s->cap_accs * 2 : 16;
		struct block_acc *n = realloc(s->accs, cap * sizeof(*n));

		if (!n)
			return NULL;
		s->accs = n;
		s->cap_accs = cap;
	}
	if (u64_map__set(&s->block_acc, tid, s->nr_accs))
		return NULL;
	memset(&s->accs[s->nr_accs], 0, sizeof(s->accs[0]));
	return &s->accs[s->nr_accs++];
}

void trace_summary__add_block(struct trace_summary *s, const struct trace_block *b)
{
	struct block_summary *bs;
	struct block_acc *a;
	uint64_t ns = b->end_ns - b->start_ns;

	s->blocks++;
	if (s->task_mode) {
		summary_tasks__add_block(s, b);
		return;
	}
	if (b->poll >= s->m->nr_polls) {
		s->bad_records++;
		return;
	}
	bs = &s->polls[b->poll].block;
	if (b->kind == OFFCPU_TRACER) { /* the tracer's cost, said apart, never the poll's */
		bs->tracer++;
		bs->tracer_ns += ns;
		s->tracer_offcpu++;
		s->tracer_offcpu_ns += ns;
		return;
	}
	if (b->kind == OFFCPU_PREEMPTED) {
		bs->preempted++;
		bs->preempted_ns += ns;
		return;
	}
	bs->blocked++;
	bs->blocked_ns += ns;
	if (ns > bs->blocked_max_ns)
		bs->blocked_max_ns = ns;
	add_syscall(bs, b->syscall, ns);
	if (!(a = acc_of(s, b->tid))) {
		s->oom = true;
		return;
	}
	if (!a->open || a->poll != b->poll || a->poll_start_ns != b->poll_start_ns)
		*a = (struct block_acc){
		    .poll = b->poll, .poll_start_ns = b->poll_start_ns, .open = true};
	a->ns += ns;
	if (ns > a->longest_ns) {
		a->longest_ns = ns;
		a->longest_syscall = b->syscall;
	}
}

void summary_block__poll_done(struct trace_summary *s, const struct trace_poll *p)
{
	const struct future *f;
	struct block_summary *bs;
	struct block_acc *a;
	uint64_t i;

	if (!u64_map__get(&s->block_acc, p->tid, &i))
		return;
	a = &s->accs[i];
	if (!a->open || a->poll != p->poll || a->poll_start_ns != p->start_ns)
		return;
	a->open = false;
	bs = &s->polls[p->poll].block;
	if (a->ns > s->block_threshold_ns)
		bs->over++;
	if (a->ns <= bs->worst_ns)
		return;
	bs->worst_ns = a->ns;
	bs->worst_syscall = a->longest_syscall;
	bs->worst_tid = p->tid;
	/* where this poll resumed the future: the await it was parked at before */
	f = p->future != TRACE_NO_INDEX ? &s->m->futures[p->future] : NULL;
	bs->worst_await = f && f->has_state && p->state_before >= STATE_SUSPEND0_VALUE
			      ? (int32_t)(p->state_before - STATE_SUSPEND0_VALUE)
			      : -1;
}

void summary_block__free(struct trace_summary *s)
{
	u64_map__free(&s->block_acc);
	free(s->accs);
	s->accs = NULL;
	s->nr_accs = s->cap_accs = 0;
}
