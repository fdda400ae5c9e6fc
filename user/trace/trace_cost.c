// SPDX-License-Identifier: GPL-2.0
/*
 * The tracer's own cost (trace_cost.h). Each hit stops the target's thread in the
 * kernel: the trap, the instruction emulated or single-stepped out of line (or the
 * return through a uretprobe's trampoline), and the BPF program. That time is spent
 * in the target's threads and counted as the target's CPU time by the kernel: the
 * share below is of a total that already includes it.
 */
#include "trace/trace_cost.h"

#include <inttypes.h>

_Static_assert(HIT_CLASS_COUNT == 12, "a hit class without a name in the table below");

static const struct {
	const char *probe, *how;
	unsigned kind; /* enum probe_kind of the probes of this class */
} classes[HIT_CLASS_COUNT] = {
    [HIT_ENTRY_EMULATED] = {"poll entries", "emulated", PROBE_ENTRY},
    [HIT_ENTRY_STEPPED] = {"poll entries", "single-stepped", PROBE_ENTRY},
    [HIT_EXIT_EMULATED] = {"poll exits", "emulated", PROBE_EXIT},
    [HIT_EXIT_STEPPED] = {"poll exits", "single-stepped", PROBE_EXIT},
    [HIT_EXIT_RETURN] = {"poll exits", "return probe", PROBE_EXIT},
    [HIT_WAKE_EMULATED] = {"wakes", "emulated", PROBE_WAKE},
    [HIT_WAKE_STEPPED] = {"wakes", "single-stepped", PROBE_WAKE},
    [HIT_DROP_EMULATED] = {"drops", "emulated", PROBE_DROP},
    [HIT_DROP_STEPPED] = {"drops", "single-stepped", PROBE_DROP},
    [HIT_TASK_EMULATED] = {"task polls", "emulated", PROBE_TASK_ENTRY | PROBE_TASK_EXIT},
    [HIT_TASK_STEPPED] = {"task polls", "single-stepped", PROBE_TASK_ENTRY | PROBE_TASK_EXIT},
    [HIT_TASK_RETURN] = {"task polls", "return probe", PROBE_TASK_EXIT},
};

const char *hit_class__probe(enum hit_class k)
{
	return k < HIT_CLASS_COUNT ? classes[k].probe : "?";
}

const char *hit_class__how(enum hit_class k)
{
	return k < HIT_CLASS_COUNT ? classes[k].how : "?";
}

static uint64_t per_hit(const struct tracer_cost *c, enum hit_class k, bool cpu)
{
	const struct probe_costs *p = &c->per_hit;

	if (!p->measured)
		return 0;
	switch (k) {
	case HIT_ENTRY_STEPPED:
	case HIT_EXIT_STEPPED:
	case HIT_WAKE_STEPPED:
	case HIT_DROP_STEPPED:
	case HIT_TASK_STEPPED: return cpu ? p->cpu_stepped_ns : p->stepped_ns;
	case HIT_EXIT_RETURN:
	case HIT_TASK_RETURN: return cpu ? p->cpu_returned_ns : p->returned_ns;
	default: return cpu ? p->cpu_emulated_ns : p->emulated_ns;
	}
}

uint64_t tracer_cost__per_hit(const struct tracer_cost *c, enum hit_class k)
{
	return per_hit(c, k, true);
}

uint64_t tracer_cost__stall_ns(const struct tracer_cost *c)
{
	uint64_t ns = c->tree_ns;

	for (unsigned k = 0; k < HIT_CLASS_COUNT; k++)
		ns += c->hits[k] * per_hit(c, (enum hit_class)k, false);
	return ns;
}

double tracer_cost__drift(const struct tracer_cost *c, const struct probe_costs *end)
{
	struct tracer_cost from = *c, to = *c;
	uint64_t a, b;

	if (!c->hits_known || !c->per_hit.measured || !end->measured)
		return -1;
	from.tree_ns = to.tree_ns = 0;
	to.per_hit = *end;
	a = tracer_cost__stall_ns(&from);
	b = tracer_cost__stall_ns(&to);
	if (!a)
		return -1;
	return 100.0 * (b > a ? (double)(b - a) : (double)(a - b)) / (double)a;
}

uint64_t tracer_cost__class_ns(const struct tracer_cost *c, enum hit_class k)
{
	return k < HIT_CLASS_COUNT ? c->hits[k] * tracer_cost__per_hit(c, k) : 0;
}

void tracer_cost__set_hits(struct tracer_cost *c, const __u64 *counters, const __u64 *since)
{
	for (unsigned k = 0; k < HIT_CLASS_COUNT; k++)
		c->hits[k] = counters[COUNTER_HIT0 + k] - (since ? since[COUNTER_HIT0 + k] : 0);
	c->trees = counters[COUNTER_TREES] - (since ? since[COUNTER_TREES] : 0);
	c->tree_ns = counters[COUNTER_TREE_NS] - (since ? since[COUNTER_TREE_NS] : 0);
}

uint64_t tracer_cost__total_ns(const struct tracer_cost *c)
{
	uint64_t ns = c->tree_ns; /* measured, not estimated */

	for (unsigned k = 0; k < HIT_CLASS_COUNT; k++)
		ns += tracer_cost__class_ns(c, (enum hit_class)k);
	return ns;
}

uint64_t tracer_cost__kind_ns(const struct tracer_cost *c, unsigned probe_kind)
{
	uint64_t ns = 0;

	for (unsigned k = 0; k < HIT_CLASS_COUNT; k++)
		if (classes[k].kind & probe_kind)
			ns += tracer_cost__class_ns(c, (enum hit_class)k);
	return ns;
}

double tracer_cost__share(const struct tracer_cost *c)
{
	if (!c->hits_known || !c->per_hit.measured || c->target_cpu_ns <= 0)
		return -1;
	return 100.0 * (double)tracer_cost__total_ns(c) / (double)c->target_cpu_ns;
}

static uint64_t stepped_ns(const struct tracer_cost *c)
{
	return tracer_cost__class_ns(c, HIT_ENTRY_STEPPED) +
	       tracer_cost__class_ns(c, HIT_EXIT_STEPPED) +
	       tracer_cost__class_ns(c, HIT_TASK_STEPPED) +
	       tracer_cost__class_ns(c, HIT_WAKE_STEPPED) +
	       tracer_cost__class_ns(c, HIT_DROP_STEPPED);
}

/* What would cost less, from what the cost was spent on. */
static void print_cheaper(const struct tracer_cost *c, FILE *out)
{
	uint64_t total = tracer_cost__total_ns(c), wake = tracer_cost__kind_ns(c, PROBE_WAKE),
		 drop = tracer_cost__kind_ns(c, PROBE_DROP), stepped = stepped_ns(c);

	fprintf(out, "  cheaper:");
	if (wake * 10 >= total)
		fprintf(out, " --no-wakes saves ~%.0f%% of it;",
			100.0 * (double)wake / (double)total);
	if (drop * 10 >= total)
		fprintf(out, " --no-cancel saves ~%.0f%%;", 100.0 * (double)drop / (double)total);
	bool tasks =
	    c->hits[HIT_TASK_EMULATED] || c->hits[HIT_TASK_STEPPED] || c->hits[HIT_TASK_RETURN];

	if (stepped * 2 >= total && tasks)
		fprintf(out,
			" %.0f%% is single-stepped probes: this build's task-poll functions "
			"start with an instruction the kernel cannot emulate (an optimized "
			"build's start with a jmp or push, which it does);",
			100.0 * (double)stepped / (double)total);
	else if (stepped * 2 >= total)
		fprintf(out,
			" %.0f%% is single-stepped probes: fewer futures (a pattern, or "
			"`asyncbpf list` to see what is selected);",
			100.0 * (double)stepped / (double)total);
	/* per-future probes: task mode probes each task poll once instead */
	if (!tasks)
		fprintf(out,
			" task mode (no patterns or --deep, or --tasks) probes each task "
			"poll once%s;",
			c->stats_only ? "" : " and reads its futures from memory");
	fprintf(out, " `asyncbpf profile -p PID` samples the async stacks with no probe at "
		     "all (~1%% at 99 Hz)\n");
}

void tracer_cost__print(const struct tracer_cost *c, FILE *out)
{
	uint64_t total;
	double share;
	bool any = false;

	if (!c->hits_known) {
		fprintf(out,
			"the tracer's own cost: unknown (the BPF counters could not be read)\n");
		return;
	}
	fprintf(out,
		"\nthe tracer's own cost (probe hits x the cost of one, measured at start):\n");
	for (unsigned k = 0; k < HIT_CLASS_COUNT; k++) {
		if (!c->hits[k])
			continue;
		if (!any)
			fprintf(out, "  %-13s %-15s %12s %9s %10s\n", "probes", "how", "hits",
				"ns/hit", "ms");
		any = true;
		fprintf(out, "  %-13s %-15s %12" PRIu64, classes[k].probe, classes[k].how,
			c->hits[k]);
		if (c->per_hit.measured)
			fprintf(out, " %9" PRIu64 " %10.1f",
				tracer_cost__per_hit(c, (enum hit_class)k),
				(double)tracer_cost__class_ns(c, (enum hit_class)k) / 1e6);
		fputs("\n", out);
	}
	if (c->trees)
		fprintf(out, "  %-13s %-15s %12" PRIu64 " %9" PRIu64 " %10.1f\n", "task trees",
			"read in BPF", c->trees, c->tree_ns / c->trees, (double)c->tree_ns / 1e6);
	if (!any)
		fprintf(out, "  no probe hit\n");
	if (!c->per_hit.measured) {
		fprintf(out, "  the cost of a hit was not measured: no estimate of the CPU time\n");
		return;
	}
	total = tracer_cost__total_ns(c);
	share = tracer_cost__share(c);
	fprintf(out, "  total ~%.1f ms of the target's CPU time", (double)total / 1e6);
	if (share >= 0)
		fprintf(out, ": %.1f%% of the %.1f ms it used over %.1f s", share,
			(double)c->target_cpu_ns / 1e6, (double)c->duration_ns / 1e9);
	else
		fprintf(out, " (the target's own CPU time over the run is not known)");
	fputs("\n", out);
	if (tracer_cost__stall_ns(c) > total + total / 10)
		fprintf(out,
			"  (its threads stalled ~%.1f ms in all, wall clock: the rest of a trap's "
			"time is not charged to them, e.g. a hypervisor's)\n",
			(double)tracer_cost__stall_ns(c) / 1e6);
	if (c->offcpu)
		fprintf(out,
			"  and %.1f ms off-CPU inside the probes' handling (%" PRIu64
			" times): the tracer's, not counted as blocking or preemption\n",
			(double)c->offcpu_ns / 1e6, c->offcpu);
	if (share >= TRACER_COST_WARN_PERCENT) {
		fprintf(out,
			"WARNING: tracing took ~%.0f%% of the target's CPU time: its polls ran "
			"slower than untraced, and a loaded service served less\n",
			share);
		print_cheaper(c, out);
	}
}
