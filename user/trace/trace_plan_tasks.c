// SPDX-License-Identifier: GPL-2.0
/*
 * The probe plan of task mode (trace_plan.h, trace_plan__build_tasks; docs/tracing.md,
 * "Task mode"): one probe pair per task poll. Pure, unit-tested without root.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace_plan.h"

/* Every call of this runtime's task vtable poll has an exit site (task_exits.c). */
static bool continuations_complete(const struct model *m, uint8_t rt)
{
	const struct task_poll_summary *s = &m->task_polls[rt];

	return s->dispatchers && s->calls && s->complete;
}

/* Is a task entry probe already planned at offset? Then it serves every type. */
static bool shared_fn(struct trace_plan *plan, uint64_t offset)
{
	bool shared = false;

	for (uint32_t k = 0; k < plan->nr; k++)
		if ((plan->specs[k].kind & PROBE_TASK_ENTRY) && plan->offsets[k] == offset &&
		    !plan->returns[k]) {
			plan->specs[k].poll = ~0u;
			shared = true;
		}
	return shared;
}

static int add_entries(struct trace_plan *plan, const struct model *m, uint8_t rt, bool returns)
{
	for (uint32_t i = 0; i < m->nr_task_types; i++) {
		const struct task_type *tt = &m->task_types[i];
		struct poll_spec spec = {0};

		if (tt->runtime != rt || !tt->fn_file_offset || !tt->vtable)
			continue;
		/* a function shared by several task types (merged identical code): one probe,
		 * the type then read from the header's vtable at the exit */
		if (shared_fn(plan, tt->fn_file_offset))
			continue;
		spec.kind = PROBE_TASK_ENTRY;
		spec.poll = i; /* the task type: its task_info, without reading the vtable */
		spec.future = rt;
		spec.self_kind = SPEC_SELF_REG;
		spec.self_reg = 5; /* rdi: the header, at the function's first instruction */
		spec.exit_cond = SPEC_COND_ALWAYS;
		if (!tt->fn_emulated)
			spec.flags |= SPEC_SINGLE_STEPPED;
		if (trace_plan__add(plan, &spec, tt->fn_file_offset, false))
			return -ENOMEM;
		plan->nr_task_types++;
		plan->nr_entries++;
		plan->nr_emulated_entries += tt->fn_emulated;
		if (!returns)
			continue;
		/* tokio catches a task's panic inside Harness::poll, below this function:
		 * no unwind passes through the return address a uretprobe replaces */
		spec.kind = PROBE_TASK_EXIT;
		spec.flags = SPEC_EXIT_RETURNED;
		spec.sp_delta = 8;
		if (trace_plan__add(plan, &spec, tt->fn_file_offset, true))
			return -ENOMEM;
		plan->nr_task_returns++;
		plan->nr_exits++;
	}
	return 0;
}

static int add_exits(struct trace_plan *plan, const struct model *m, uint8_t rt)
{
	for (uint32_t i = 0; i < m->nr_task_poll_exits; i++) {
		const struct task_poll_exit *x = &m->task_poll_exits[i];
		struct poll_spec spec = {0};

		if (x->runtime != rt || !x->site.usable || !x->site.file_offset)
			continue;
		spec.kind = PROBE_TASK_EXIT;
		spec.poll = ~0u;
		spec.future = rt;
		/* the return popped the address the entry's rsp pointed at (and what the
		 * caller popped before the site) */
		spec.sp_delta = (int32_t)x->site.sp_delta;
		spec.exit_cond = SPEC_COND_ALWAYS;
		if (x->site.stepped)
			spec.flags |= SPEC_SINGLE_STEPPED;
		if (trace_plan__add(plan, &spec, x->site.file_offset, false))
			return -ENOMEM;
		plan->nr_task_exits++;
		plan->nr_exits++;
		plan->nr_emulated_exits += !x->site.stepped;
	}
	return 0;
}

/* The wake functions of the runtimes probed: a wake keyed by the task's header. */
static int add_wakes(struct trace_plan *plan, const struct model *m, const bool *probed)
{
	for (uint32_t i = 0; i < m->nr_wake_fns; i++) {
		const struct wake_fn *f = &m->wake_fns[i];
		const struct entry_site *e = &f->entry;
		struct poll_spec spec = {0};
		uint64_t offset = f->file_offset;

		if (!f->file_offset || f->runtime >= TASK_RT_MAX || !probed[f->runtime])
			continue;
		spec.kind = PROBE_WAKE;
		spec.poll = ~0u;
		spec.future = f->runtime;
		spec.flags = f->by_ref ? SPEC_WAKE_BY_REF : 0;
		spec.self_kind = SPEC_SELF_REG;
		spec.self_reg = 5; /* rdi: the header */
		spec.exit_cond = SPEC_COND_ALWAYS;
		/* the cheapest instruction that still has the header, as the poll entries */
		if (e->valid && e->emulated && e->file_offset && e->sp_delta <= 0 &&
		    (e->self_kind == SELF_LOC_REG || e->self_kind == SELF_LOC_STACK)) {
			offset = e->file_offset;
			spec.self_kind =
			    e->self_kind == SELF_LOC_REG ? SPEC_SELF_REG : SPEC_SELF_STACK;
			spec.self_reg = e->self_reg;
			spec.self_sp_offset = e->self_sp_offset;
		} else if (!e->first_emulated) {
			spec.flags |= SPEC_SINGLE_STEPPED;
		}
		if (trace_plan__add(plan, &spec, offset, false))
			return -ENOMEM;
		plan->nr_wakes++;
		plan->nr_emulated_wakes += !(spec.flags & SPEC_SINGLE_STEPPED);
	}
	return 0;
}

/*
 * A root poll as a task poll: a future no runtime task holds, polled by its executor
 * itself (a block_on's future; with no runtime's task types, the roots of a
 * hand-written executor). Its entry is the poll fn's entry probe, the "header" its
 * self; its exits must see the tree final: the caller sites, else its `ret`s (single-
 * stepped). One with a tail jump and no caller sites (the poll is not over there), or
 * whose poll fn other futures share, is left out and counted.
 */
static int add_root(struct trace_plan *plan, const struct model *m, uint32_t f)
{
	const struct future *fu = &m->futures[f];
	const struct poll_fn *pf;
	struct poll_spec entry, exit;
	uint64_t offset;
	uint32_t *types, index = m->nr_task_types + plan->nr_root_types;
	bool callers;

	if (fu->poll < 0 || (uint32_t)fu->poll >= m->nr_polls)
		return 0;
	pf = &m->polls[fu->poll];
	if (pf->inlined_only || !pf->size || !pf->nr_exits || pf->nr_folded ||
	    !trace_plan__place_entry(m, (uint32_t)fu->poll, &entry, &offset) ||
	    entry.self_kind == SPEC_SELF_UNKNOWN)
		goto skip;
	for (uint32_t g = 0; g < m->nr_futures; g++)
		if (g != f && m->futures[g].poll == fu->poll)
			goto skip; /* its code serves several futures: which one is not known */
	callers = trace_plan__caller_exits_fit(pf, &entry);
	for (uint32_t i = 0; !callers && i < pf->nr_exits; i++)
		if (pf->exits[i].kind != EXIT_RET || !pf->exits[i].probeable)
			goto skip;
	if (!(types = realloc(plan->root_types, (plan->nr_root_types + 1) * sizeof(*types))))
		return -ENOMEM;
	plan->root_types = types;
	types[plan->nr_root_types++] = f;
	entry.kind = PROBE_TASK_ENTRY;
	entry.poll = index; /* its task_info */
	entry.future = TASK_RT_DYN;
	/* SPEC_TASK_ROOT: a root poll inside a task poll is a future of that task */
	entry.flags = (entry.flags & SPEC_SINGLE_STEPPED) | SPEC_TASK_ROOT;
	entry.exit_cond = SPEC_COND_ALWAYS;
	if (trace_plan__add(plan, &entry, offset, false))
		return -ENOMEM;
	plan->nr_entries++;
	plan->nr_emulated_entries += !(entry.flags & SPEC_SINGLE_STEPPED);
	for (uint32_t i = 0; i < (callers ? pf->nr_caller_exits : pf->nr_exits); i++) {
		exit = (struct poll_spec){.kind = PROBE_TASK_EXIT,
					  .poll = ~0u,
					  .future = TASK_RT_DYN,
					  .flags = SPEC_TASK_ROOT,
					  .exit_cond = SPEC_COND_ALWAYS};
		/* after the return rsp is the entry's + 8 (more past a wrapper); at the ret,
		 * the entry's */
		exit.sp_delta = callers ? (int32_t)pf->caller_exits[i].sp_delta : 0;
		if (!callers && !pf->exits[i].emulated)
			exit.flags |= SPEC_SINGLE_STEPPED;
		if (trace_plan__add(plan, &exit,
				    callers ? pf->caller_exits[i].file_offset
					    : pf->exits[i].file_offset,
				    false))
			return -ENOMEM;
		plan->nr_task_exits++;
		plan->nr_exits++;
		plan->nr_emulated_exits += !(exit.flags & SPEC_SINGLE_STEPPED);
	}
	return 0;
skip:
	plan->nr_roots_skipped++;
	return 0;
}

static int add_roots(struct trace_plan *plan, const struct model *m)
{
	/* a hand-written executor's tasks are the futures nothing awaits */
	bool executor = !plan->nr_task_types && m->runtimes[TASK_RT_STD_WAKE].known;

	for (uint32_t f = 0; f < m->nr_futures; f++) {
		const struct future *fu = &m->futures[f];

		if ((fu->block_on_root || (executor && fu->is_root)) && add_root(plan, m, f))
			return -ENOMEM;
	}
	return 0;
}

int trace_plan__build_tasks(struct trace_plan *plan, const struct model *m, bool wakes, char *err,
			    size_t errlen)
{
	bool probed[TASK_RT_MAX] = {0};
	static const uint8_t runtimes[] = {TASK_RT_TOKIO, TASK_RT_ASYNC_TASK};
	size_t used = 0;

	memset(plan, 0, sizeof(*plan));
	plan->task_mode = true;
	if (err && errlen)
		err[0] = '\0';
	for (size_t k = 0; k < sizeof(runtimes); k++) {
		uint8_t rt = runtimes[k];
		bool any = false, complete = continuations_complete(m, rt);

		for (uint32_t i = 0; i < m->nr_task_types && !any; i++)
			any = m->task_types[i].runtime == rt && m->task_types[i].fn_file_offset &&
			      m->task_types[i].vtable;
		if (!any || !m->runtimes[rt].known)
			continue;
		if (!complete && rt != TASK_RT_TOKIO) {
			/* an unwind may pass through async-task's run: no uretprobe there */
			if (err && used < errlen)
				used += (size_t)snprintf(
				    err + used, errlen - used,
				    "%s%s: %s, and a uretprobe is unsafe there (a task's panic "
				    "unwinds through its run function)",
				    used ? "; " : "", task_runtime__name((enum task_runtime)rt),
				    m->task_polls[rt].why
					? m->task_polls[rt].why
					: "not every task poll call has an exit site");
			continue;
		}
		if (add_entries(plan, m, rt, !complete) || (complete && add_exits(plan, m, rt)))
			return -ENOMEM;
		probed[rt] = true;
	}
	if (wakes && plan->nr_task_types && add_wakes(plan, m, probed))
		return -ENOMEM;
	if (add_roots(plan, m))
		return -ENOMEM;
	if (!plan->nr_task_types && !plan->nr_root_types && err && !used)
		snprintf(err, errlen,
			 "no runtime task type with a vtable function to probe, and no root "
			 "future whose polls can all be ended");
	return (int)(plan->nr_task_types + plan->nr_root_types);
}
