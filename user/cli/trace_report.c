// SPDX-License-Identifier: GPL-2.0
/*
 * What trace says about its probe plan before attaching (trace_report.h).
 */
#include "cli/trace_report.h"

#include <inttypes.h>
#include <stdio.h>

#include "lib/log.h"
#include "lib/text.h"

/* One line per poll fn that is not (fully) probed: 10 unless -v, then the counts. */
void trace_report__problems(const struct trace_plan *plan, const struct model *m)
{
	uint32_t shown = 0;

	for (uint32_t i = 0; i < plan->nr_problems; i++) {
		const struct plan_problem *p = &plan->problems[i];

		if (shown++ >= 10 && log_verbosity < 2)
			continue;
		pr_warn("trace: %s (file offset 0x%" PRIx64 "): %s\n", m->polls[p->poll].name,
			p->file_offset, plan_problem__describe(p->kind));
	}
	if (shown > 10 && log_verbosity < 2)
		pr_warn("trace: ... and %u more such sites (-v lists them all)\n", shown - 10);
	if (plan->nr_no_exit || plan->nr_no_entry || plan->nr_refused || plan->nr_unprobeable_exits)
		pr_warn("trace: skipped %u poll functions without an exit (they never return, or "
			"their code could not be decoded) and %u without an entry site; %u exits "
			"cannot be probed; refused %u sites outside their function\n",
			plan->nr_no_exit, plan->nr_no_entry, plan->nr_unprobeable_exits,
			plan->nr_refused);
}

/* Where a poll is inlined: "into CALLER at FILE:LINE" of its first inline site. */
static void inlined_where(const struct model *m, uint32_t f, char *buf, size_t len)
{
	buf[0] = '\0';
	for (uint32_t p = 0; p < m->nr_polls; p++) {
		const struct poll_fn *pf = &m->polls[p];

		if (pf->future != (int32_t)f || !pf->nr_inline_sites)
			continue;
		snprintf(buf, len, " (inlined into %.160s at %s:%u%s)",
			 pf->inline_sites[0].caller ? pf->inline_sites[0].caller : "?",
			 pf->inline_sites[0].file ? path__short(pf->inline_sites[0].file) : "?",
			 pf->inline_sites[0].line,
			 pf->nr_inline_sites_total > 1 ? ", and elsewhere" : "");
		return;
	}
}

void trace_report__inlined_only(const struct model *m, const struct selection *sel)
{
	char name[512], where[320], names[4096] = "";
	uint32_t n = 0, listed = 0, named = 0;
	size_t used = 0;

	for (uint32_t f = 0; f < m->nr_futures && f < sel->nr; f++)
		n += m->futures[f].inlined_only && sel->futures[f];
	if (!n)
		return;
	pr_warn("trace: %u selected future%s exist%s only inlined into %s callers: no poll "
		"function of %s to probe, not traced ('asyncbpf list' shows them all):\n",
		n, n == 1 ? "" : "s", n == 1 ? "s" : "", n == 1 ? "its" : "their",
		n == 1 ? "its own" : "their own");
	for (uint32_t f = 0; f < m->nr_futures && f < sel->nr; f++) {
		if (!m->futures[f].inlined_only || !sel->futures[f])
			continue;
		future__display_name(&m->futures[f], name, sizeof(name));
		if (listed < 10 || log_verbosity >= 2) { /* the first ones with where they went */
			inlined_where(m, f, where, sizeof(where));
			pr_warn("trace:   %s%s\n", name, where);
			listed++;
			continue;
		}
		int w =
		    snprintf(names + used, sizeof(names) - used, "%s%s", named ? ", " : "", name);
		if (named >= 50 || w < 0 || (size_t)w >= sizeof(names) - used)
			continue;
		used += (size_t)w;
		named++;
	}
	if (named)
		pr_warn("trace:   and %s%s\n", names,
			listed + named < n ? ", ... (-v lists them all, with where they went)"
					   : "");
}

void trace_report__nothing_probed(const struct model *m, const struct selection *sel,
				  bool all_crates)
{
	uint32_t others = 0;

	trace_report__inlined_only(m, sel);
	/* what --all-crates would find with a poll function of its own */
	for (uint32_t f = 0; !all_crates && f < m->nr_futures; f++)
		others += m->futures[f].poll >= 0 && !m->futures[f].inlined_only &&
			  (f >= sel->nr || !sel->futures[f]);
	pr_warn("trace: what would work on this build:\n");
	if (others)
		pr_warn("trace:   --all-crates: %u futures of other crates (the runtime's, "
			"libraries') have poll functions to probe; the inlined ones run inside "
			"them\n",
			others);
	pr_warn("trace:   asyncbpf profile -p PID: samples see inlined polls too (line tables), "
		"no probe on any poll\n");
	pr_warn("trace:   asyncbpf stacks -p PID: where every task is parked, await by await, "
		"read from memory (layouts only, inlining does not matter)\n");
	pr_warn("trace:   or a build that inlines less, e.g. [profile.release] opt-level = 1 "
		"with debug = true\n");
}

/* What the plan probes, and how much of it the kernel emulates (no single-step). */
void trace_report__plan(const struct trace_plan *p, enum plan_exits mode)
{
	uint32_t sites = p->nr_entries + p->nr_exits;
	uint32_t emulated = p->nr_emulated_entries + p->nr_emulated_exits;

	if (mode == PLAN_EXITS_URETPROBE) {
		pr_info("trace: %u poll functions: %u entry probes (%u emulated) and %u "
			"uretprobes (exit mode uretprobe: returns through the uprobe "
			"trampoline; a panic unwinding through it aborts the target)\n",
			p->nr_polls, p->nr_entries, p->nr_emulated_entries, p->nr_exits);
		return;
	}
	pr_info("trace: %u poll functions: %u entry and %u exit probes, %u of %u (%.0f%%) on "
		"instructions the kernel emulates, %u return probes on leaf functions, the rest "
		"single-stepped (exit mode %s)\n",
		p->nr_polls, p->nr_entries, p->nr_exits, emulated, sites,
		sites ? 100.0 * emulated / sites : 0.0, p->nr_leaf_returns,
		mode == PLAN_EXITS_RET
		    ? "ret: every `ret` and tail jump"
		    : "emulated: branch sites, a return probe on leaf functions, "
		      "`ret` where neither is safe");
	if (p->nr_caller_exits)
		pr_info("trace: %u poll functions end in their callers: %u exit probes after "
			"the calls, on instructions the kernel emulates, where their own `ret`s "
			"would be single-stepped\n",
			p->nr_caller_polls, p->nr_caller_exits);
	if (p->nr_tail_callee_exits)
		pr_info("trace: %u of the exit probes are on the `ret`s of functions poll fns "
			"tail-jump to: the poll ends there, with the callee's result (its calls "
			"from elsewhere hit them too, single-stepped)\n",
			p->nr_tail_callee_exits);
	if (p->nr_wakes)
		pr_info("trace: %u wake function probes (%u emulated): who woke each task and how "
			"long it then waited for a worker (--no-wakes: off)\n",
			p->nr_wakes, p->nr_emulated_wakes);
	if (p->nr_wakes_unattributable)
		pr_info("trace: %u wake functions not probed: no traced future is a task's root "
			"future (or the first traced one inside it), so their wakes could not be "
			"linked to a task\n",
			p->nr_wakes_unattributable);
	if (p->nr_drops)
		pr_info("trace: %u drop_in_place probes (%u emulated): futures dropped while "
			"suspended are reported cancelled (--no-cancel: off)\n",
			p->nr_drops, p->nr_emulated_drops);
}
