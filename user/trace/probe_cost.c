// SPDX-License-Identifier: GPL-2.0
/*
 * The cost of a probe hit, measured (probe_cost.h). A traced poll's duration includes
 * the traps of every traced poll below it: each of their entry and exit probes
 * stops the thread in the kernel (an emulated instruction, a single-step out of
 * line, or a uretprobe's trampoline) and runs the tracer's program. Those costs
 * depend on the machine (a single-step costs ~11 µs on a small VM, far less on bare
 * metal), so they are measured here, each run, on asyncbpf's own probe target: the
 * same kinds of instruction, the same kind of program.
 */
#include "trace/probe_cost.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "calib.skel.h"
#include "lib/hashmap.h"
#include "lib/probe_target.h"
#include "lib/sysfacts.h"

#define MAX_ROUNDS 16

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ns per call of the probe target, `calls` calls: wall, and CPU time into *cpu. */
static uint64_t time_calls(unsigned calls, uint64_t *cpu)
{
	uint64_t t0 = sysfacts__now_ns(), c0 = thread_cpu_ns();

	probe_target__call((int)calls);
	if (cpu)
		*cpu = (thread_cpu_ns() - c0) / (calls ? calls : 1);
	return (sysfacts__now_ns() - t0) / (calls ? calls : 1);
}

/* ns per call as things stand (probes attached or not): the median of rounds, wall
 * and (into *cpu) CPU time. */
static uint64_t median_ns_per_call(unsigned calls, unsigned rounds, uint64_t *cpu)
{
	uint64_t d[MAX_ROUNDS], c[MAX_ROUNDS];

	for (unsigned r = 0; r < rounds; r++)
		d[r] = time_calls(calls, &c[r]);
	qsort(d, rounds, sizeof(d[0]), cmp_u64);
	qsort(c, rounds, sizeof(c[0]), cmp_u64);
	*cpu = c[rounds / 2];
	return d[rounds / 2];
}

int probe_costs__measure(struct probe_costs *c, unsigned calls, unsigned rounds, char *err,
			 size_t errlen)
{
	char path[4096];
	unsigned long entry, insn, ret;
	struct calib_bpf *skel;
	struct bpf_link *link;
	uint64_t base, with[3], cbase, cwith[3];
	int r;

	memset(c, 0, sizeof(*c));
	if (rounds > MAX_ROUNDS)
		rounds = MAX_ROUNDS;
	if (!rounds)
		rounds = 1;
	r = probe_target__resolve(path, sizeof(path), &entry, &insn, &ret);
	if (r) {
		snprintf(err, errlen, "cannot find asyncbpf's own probe target: %s", strerror(-r));
		return r;
	}
	skel = calib_bpf__open();
	if (!skel) {
		r = -errno;
		snprintf(err, errlen, "opening the calibration program failed: %s", strerror(-r));
		return r;
	}
	skel->rodata->calib_tgid = (__u32)getpid();
	if ((r = calib_bpf__load(skel))) {
		snprintf(err, errlen, "loading the calibration program failed: %s", strerror(-r));
		calib_bpf__destroy(skel);
		return r;
	}
	time_calls(calls, NULL); /* warm */
	base = median_ns_per_call(calls, rounds, &cbase);
	/* emulated (the entry nop), single-stepped (leal), a uretprobe (its entry nop +
	 * the return through the trampoline) */
	const struct {
		unsigned long offset;
		bool ret;
	} sites[3] = {{entry, false}, {insn, false}, {entry, true}};
	for (int i = 0; i < 3; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = sites[i].ret);

		link = bpf_program__attach_uprobe_opts(skel->progs.calib_probe, getpid(), path,
						       sites[i].offset, &opts);
		if (!link) {
			r = -errno;
			snprintf(err, errlen,
				 "attaching the calibration probe to %s+0x%lx failed: %s", path,
				 sites[i].offset, strerror(-r));
			calib_bpf__destroy(skel);
			return r;
		}
		time_calls(calls / 4 + 1, NULL); /* warm: the kernel's per-probe state */
		with[i] = median_ns_per_call(calls, rounds, &cwith[i]);
		bpf_link__destroy(link);
	}
	calib_bpf__destroy(skel);
	c->emulated_ns = with[0] > base ? with[0] - base : 0;
	c->stepped_ns = with[1] > base ? with[1] - base : 0;
	/* the uretprobe's entry breakpoint shares the tracer's entry probe when both sit
	 * on the first instruction: count its return only */
	c->returned_ns = with[2] > with[0] ? with[2] - with[0] : 0;
	c->cpu_emulated_ns = cwith[0] > cbase ? cwith[0] - cbase : 0;
	c->cpu_stepped_ns = cwith[1] > cbase ? cwith[1] - cbase : 0;
	c->cpu_returned_ns = cwith[2] > cwith[0] ? cwith[2] - cwith[0] : 0;
	c->measured = true;
	return 0;
}

void probe_costs__per_poll(const struct probe_costs *c, const struct trace_plan *plan,
			   uint32_t nr_polls, uint64_t *out)
{
	uint64_t *exit_ns = calloc(nr_polls ? nr_polls : 1, sizeof(*exit_ns));
	uint32_t *exits = calloc(nr_polls ? nr_polls : 1, sizeof(*exits));

	memset(out, 0, nr_polls * sizeof(*out));
	if (!c->measured || !exit_ns || !exits)
		goto out;
	for (uint32_t i = 0; i < plan->nr; i++) {
		const struct poll_spec *s = &plan->specs[i];
		uint64_t ns = s->flags & SPEC_EXIT_RETURNED    ? c->returned_ns
			      : s->flags & SPEC_SINGLE_STEPPED ? c->stepped_ns
							       : c->emulated_ns;

		if (s->poll >= nr_polls)
			continue;
		if (s->kind & PROBE_ENTRY) {
			out[s->poll] += ns; /* a shared entry and exit is one hit */
		} else if (s->kind & PROBE_EXIT) {
			exit_ns[s->poll] += ns;
			exits[s->poll]++;
		}
	}
	for (uint32_t p = 0; p < nr_polls; p++)
		if (exits[p])
			out[p] += exit_ns[p] / exits[p];
out:
	free(exit_ns);
	free(exits);
}

/* One thread's sums by depth: acc[d] is what the polls completed at depth d since the
 * last poll at depth d - 1 completed cost a poll at depth d - 1 (their probes and
 * their descendants'). */
#define TALLY_DEPTHS (TRACE_MAX_DEPTH + 2)

struct probe_tally {
	uint64_t *per_poll;
	uint32_t nr_polls;
	struct u64_map index; /* tid -> thread index + 1 */
	uint64_t (*acc)[TALLY_DEPTHS];
	uint32_t nr, cap;
};

struct probe_tally *probe_tally__new(const uint64_t *per_poll, uint32_t nr_polls)
{
	struct probe_tally *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->per_poll = calloc(nr_polls ? nr_polls : 1, sizeof(*t->per_poll));
	if (!t->per_poll) {
		free(t);
		return NULL;
	}
	memcpy(t->per_poll, per_poll, nr_polls * sizeof(*per_poll));
	t->nr_polls = nr_polls;
	u64_map__init(&t->index);
	return t;
}

static uint64_t *thread_acc(struct probe_tally *t, uint32_t tid)
{
	uint64_t i;

	if (u64_map__get(&t->index, tid, &i))
		return t->acc[i - 1];
	if (t->nr == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 16;
		void *n = realloc(t->acc, cap * sizeof(*t->acc));

		if (!n)
			return NULL;
		t->acc = n;
		t->cap = cap;
	}
	if (u64_map__set(&t->index, tid, t->nr + 1))
		return NULL;
	memset(t->acc[t->nr], 0, sizeof(t->acc[t->nr]));
	return t->acc[t->nr++];
}

uint64_t probe_tally__add(struct probe_tally *t, const struct trace_poll *p)
{
	uint32_t d = p->depth < TALLY_DEPTHS - 2 ? p->depth : TALLY_DEPTHS - 2;
	uint64_t *acc = thread_acc(t, p->tid), below;

	if (!acc)
		return 0;
	below = acc[d + 1];
	/* everything deeper completed inside p: what a lost record left there is stale */
	memset(&acc[d + 1], 0, (TALLY_DEPTHS - d - 1) * sizeof(*acc));
	acc[d] += below + (p->poll < t->nr_polls ? t->per_poll[p->poll] : 0);
	return below;
}

void probe_tally__free(struct probe_tally *t)
{
	if (!t)
		return;
	u64_map__free(&t->index);
	free(t->acc);
	free(t->per_poll);
	free(t);
}
