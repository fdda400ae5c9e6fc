// SPDX-License-Identifier: GPL-2.0
/* asyncbpf profile's summary: profile_summary.h. */
#include "profile/profile_summary.h"

#include <inttypes.h>
#include <stdlib.h>

#include "lib/sysfacts.h"
#include "profile/profile_project.h"

static const struct profile_data *sort_data;

static int by_weight(const void *a, const void *b)
{
	uint64_t wa = sort_data->stacks[*(const size_t *)a].weight;
	uint64_t wb = sort_data->stacks[*(const size_t *)b].weight;

	return wa < wb ? 1 : wa > wb ? -1 : 0;
}

static void print_top(FILE *out, const struct profile_data *d, bool offcpu, size_t top)
{
	size_t *idx = calloc(d->nstacks ? d->nstacks : 1, sizeof(*idx)), n = 0;
	uint64_t total = 0;
	char text[1024];

	if (!idx)
		return;
	for (size_t i = 0; i < d->nstacks; i++)
		if (d->stacks[i].offcpu == offcpu && d->stacks[i].weight) {
			idx[n++] = i;
			total += d->stacks[i].weight;
		}
	sort_data = d;
	qsort(idx, n, sizeof(*idx), by_weight);
	fprintf(out, "%s (%s):\n",
		offcpu ? "Top async stacks, off-CPU" : "Top async stacks, on-CPU",
		offcpu ? "time blocked" : "samples");
	for (size_t i = 0; i < n && i < top; i++) {
		const struct pstack *s = &d->stacks[idx[i]];

		projector__stack_text(s, text, sizeof(text));
		if (offcpu)
			fprintf(out, "  %5.1f%% %10.3f ms  %s\n",
				100.0 * (double)s->weight / (double)total, (double)s->weight / 1e6,
				text[0] ? text : s->frames[0]->name);
		else
			fprintf(out, "  %5.1f%% %8" PRIu64 "  %s\n",
				100.0 * (double)s->weight / (double)total, s->weight,
				text[0] ? text : s->frames[0]->name);
	}
	if (!n)
		fprintf(out, "  (no samples)\n");
	free(idx);
}

void profile_summary__print(FILE *out, const struct profile_counts *c, const struct profile_data *d,
			    const uint64_t *counters, bool offcpu, int64_t target_cpu_ns)
{
	char reasons[512] = "", cpu[64] = "";

	for (int r = 1; r < UNWIND_REASON_COUNT; r++)
		if (c->reasons[r])
			sysfacts__add_fact(reasons, sizeof(reasons), "%s %" PRIu64,
					   unwind_reason__name((enum unwind_reason)r),
					   c->reasons[r]);
	/* what the samples should add up to: each one stands for 1/freq s of the target's CPU */
	if (target_cpu_ns >= 0)
		snprintf(cpu, sizeof(cpu), " (target CPU time %.2f s)",
			 (double)target_cpu_ns / 1e9);
	fprintf(out,
		"asyncbpf profile: pid %u (%s), %s at %u Hz, %.1f s%s: %" PRIu64
		" samples, %" PRIu64 " dropped (ring buffer full), %" PRIu64
		" failed to unwind, %" PRIu64 " unwound partially%s%s%s, %" PRIu64
		" cut short by the %u KiB stack copy\n",
		d->pid, d->process_name ? d->process_name : "?", d->event, d->freq_hz,
		(double)(d->end_ns - d->start_ns) / 1e9, cpu, c->received,
		counters[PCOUNTER_DROPPED], c->failed, c->partial, reasons[0] ? " (" : "", reasons,
		reasons[0] ? ")" : "", d->cut_short, d->stack_size >> 10);
	if (d->cut_short)
		fprintf(out,
			"  %.1f%% of the samples were cut short: the stack copy ended before the "
			"task's root future, so their stacks start at [stack cut short]; the "
			"deepest stack seen was %" PRIu64 " KiB: --stack-size %" PRIu64
			"K keeps it whole\n",
			c->received ? 100.0 * (double)d->cut_short / (double)c->received : 0.0,
			(c->depth_max + 1023) >> 10, ((c->depth_max + 1023) >> 10) + 4);
	/* every block is summed, lost, or still going on at the end */
	if (offcpu)
		fprintf(
		    out,
		    "off-CPU: %" PRIu64 " blocks: %" PRIu64
		    " summed in the kernel per stack (%.3f ms blocked), %" PRIu64
		    " lost (%.3f ms; a kernel table or the off-CPU ring buffer was full), %" PRIu64
		    " still blocked at the end (not counted); %" PRIu64
		    " stacks sent to user space to unwind first, %" PRIu64
		    " unwind rules learned%s\n",
		    counters[PCOUNTER_OFFCPU_BLOCKS], c->off.blocks - c->off.unknown,
		    (double)(c->off.ns - c->off.unknown_ns) / 1e6, d->offcpu_lost,
		    (double)d->offcpu_lost_ns / 1e6, c->off.blocked_at_stop, c->off.unwound,
		    c->off.rules, c->off.rules_failed ? " (some refused: the table is full)" : "");
	print_top(out, d, false, 10);
	if (offcpu)
		print_top(out, d, true, 10);
}
