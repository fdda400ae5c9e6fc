// SPDX-License-Identifier: GPL-2.0
/*
 * The probe plan (model + selection → probe sites with specs): pure, unit-tested
 * without root. See docs/tracing.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace_plan.h"

static int plan_grow(struct trace_plan *plan)
{
	uint32_t cap = plan->cap ? plan->cap * 2 : 64;
	struct poll_spec *specs;
	unsigned long *offsets;
	__u64 *cookies;
	bool *returns;

	specs = realloc(plan->specs, cap * sizeof(*specs));
	if (!specs)
		return -ENOMEM;
	plan->specs = specs;
	offsets = realloc(plan->offsets, cap * sizeof(*offsets));
	if (!offsets)
		return -ENOMEM;
	plan->offsets = offsets;
	cookies = realloc(plan->cookies, cap * sizeof(*cookies));
	if (!cookies)
		return -ENOMEM;
	plan->cookies = cookies;
	returns = realloc(plan->returns, cap * sizeof(*returns));
	if (!returns)
		return -ENOMEM;
	plan->returns = returns;
	plan->cap = cap;
	return 0;
}

/* The site must lie inside the function the analyzer disassembled. */
static bool inside(const struct poll_fn *pf, uint64_t file_offset)
{
	return file_offset >= pf->file_offset && file_offset - pf->file_offset < pf->size;
}

static void fill_common(struct poll_spec *spec, const struct model *m, uint32_t poll)
{
	const struct poll_fn *pf = &m->polls[poll];
	const struct future *f = pf->future >= 0 && (uint32_t)pf->future < m->nr_futures
				     ? &m->futures[pf->future]
				     : NULL;

	memset(spec, 0, sizeof(*spec));
	spec->exit_cond = SPEC_COND_ALWAYS;
	spec->poll = poll;
	spec->future = f ? (uint32_t)pf->future : ~0u;
	if (f && f->has_state &&
	    (f->state_size == 1 || f->state_size == 2 || f->state_size == 4 ||
	     f->state_size == 8)) {
		spec->flags |= SPEC_HAS_STATE;
		spec->state_offset = (__u32)f->state_offset;
		spec->state_size = (__u8)f->state_size;
		/* the highest value a state of this future has: anything above is garbage */
		spec->max_state = STATE_SUSPEND0_VALUE - 1;
		for (uint32_t k = 0; k < f->nr_states; k++)
			if (f->states[k].discr > spec->max_state &&
			    f->states[k].discr <= UINT32_MAX)
				spec->max_state = (__u32)f->states[k].discr;
	}
	/* the result is decoded only where the code showed how it is returned */
	if (pf->ret.known && pf->ret.convention != RET_CONV_UNKNOWN && pf->ret.discr_size &&
	    pf->ret.discr_size <= 8 && pf->ret.discr_offset < 4096) {
		spec->flags |= SPEC_RET_KNOWN;
		if (pf->ret.in_memory)
			spec->flags |= SPEC_RET_IN_MEMORY;
		if (pf->ret.pending_has_value) {
			spec->flags |= SPEC_RET_PENDING_VALUE;
			spec->ret_pending_value = pf->ret.pending_value;
		}
		if (pf->ret.ready_has_value) {
			spec->flags |= SPEC_RET_READY_VALUE;
			spec->ret_ready_value = pf->ret.ready_value;
		}
		spec->ret_discr_offset = (__u32)pf->ret.discr_offset;
		spec->ret_discr_size = (__u8)pf->ret.discr_size;
	}
}

/* What a hit of this probe costs, by its kind and how its instruction is run. */
static enum hit_class hit_class_of(const struct poll_spec *spec)
{
	bool stepped = (spec->flags & SPEC_SINGLE_STEPPED) != 0;

	if (spec->kind & (PROBE_TASK_ENTRY | PROBE_TASK_EXIT))
		return spec->flags & SPEC_EXIT_RETURNED ? HIT_TASK_RETURN
		       : stepped			? HIT_TASK_STEPPED
							: HIT_TASK_EMULATED;
	if (spec->kind & PROBE_WAKE)
		return stepped ? HIT_WAKE_STEPPED : HIT_WAKE_EMULATED;
	if (spec->kind & PROBE_DROP)
		return stepped ? HIT_DROP_STEPPED : HIT_DROP_EMULATED;
	if (spec->kind & PROBE_ENTRY)
		return stepped ? HIT_ENTRY_STEPPED : HIT_ENTRY_EMULATED;
	if (spec->flags & SPEC_EXIT_RETURNED)
		return HIT_EXIT_RETURN;
	return stepped ? HIT_EXIT_STEPPED : HIT_EXIT_EMULATED;
}

int trace_plan__add(struct trace_plan *plan, const struct poll_spec *spec, uint64_t offset,
		    bool ret)
{
	if (plan->nr == plan->cap && plan_grow(plan))
		return -ENOMEM;
	plan->specs[plan->nr] = *spec;
	plan->specs[plan->nr].flags = (spec->flags & ~SPEC_HIT_CLASS_MASK) |
				      (uint32_t)hit_class_of(spec) << SPEC_HIT_CLASS_SHIFT;
	plan->offsets[plan->nr] = (unsigned long)offset;
	plan->cookies[plan->nr] = plan->nr;
	plan->returns[plan->nr] = ret;
	plan->nr_returns += ret;
	plan->nr++;
	return 0;
}

const char *plan_problem__describe(uint32_t kind)
{
	switch (kind) {
	case PLAN_NO_EXIT: return "no exit site the kernel can probe: not traced";
	case PLAN_NO_ENTRY: return "no entry site the kernel can probe: not traced";
	case PLAN_UNPROBEABLE_EXIT:
		return "an exit the kernel cannot probe: polls leaving there end truncated";
	case PLAN_REFUSED_SITE: return "a probe site outside the function: refused";
	case PLAN_NEVER_RETURNS:
		return "never returns (no ret: it always panics or loops), so no poll of it "
		       "ends: not traced";
	case PLAN_NO_CODE: return "its machine code could not be decoded: not traced";
	}
	return "?";
}

static void plan_problem(struct trace_plan *plan, uint32_t poll, uint32_t kind,
			 uint64_t file_offset)
{
	struct plan_problem *p;

	if (plan->nr_problems == plan->cap_problems) {
		uint32_t cap = plan->cap_problems ? plan->cap_problems * 2 : 16;

		p = realloc(plan->problems, cap * sizeof(*p));
		if (!p)
			return; /* the counts still say it */
		plan->problems = p;
		plan->cap_problems = cap;
	}
	plan->problems[plan->nr_problems++] =
	    (struct plan_problem){.poll = poll, .kind = kind, .file_offset = file_offset};
}

_Static_assert(EXIT_COND_ALWAYS == SPEC_COND_ALWAYS, "exit_site.cond and poll_spec.exit_cond");

/* The exits of the mode: emulated sites where the analyzer found them safe. */
static const struct exit_site *mode_exits(const struct poll_fn *pf, enum plan_exits mode,
					  uint64_t entry_offset, uint32_t *nr)
{
	*nr = pf->nr_exits;
	if (mode != PLAN_EXITS_EMULATED || !pf->fast_exits)
		return pf->exits;
	/* a branch site on the entry's instruction cannot share its spec: keep the rets */
	for (uint32_t i = 0; i < pf->nr_fast_exits; i++)
		if (pf->fast_exits[i].file_offset == entry_offset &&
		    pf->fast_exits[i].kind == EXIT_BRANCH)
			return pf->exits;
	*nr = pf->nr_fast_exits;
	return pf->fast_exits;
}

/*
 * One uretprobe at the function's start: it fires after the `ret`. The kernel puts
 * a breakpoint on the function's first instruction for it, which traps on every
 * call whatever else is probed: the entry probe goes there too (one trap, not two),
 * self in its ABI register, and costs what that instruction costs (a `sub rsp` is
 * single-stepped: the "cheap" return probe is then no cheaper than a `ret` probe).
 */
static int plan_uretprobe(struct trace_plan *plan, const struct model *m, uint32_t poll,
			  struct poll_spec *entry, uint64_t entry_offset)
{
	const struct poll_fn *pf = &m->polls[poll];
	struct poll_spec exit;

	if (entry_offset != pf->file_offset) {
		entry_offset = pf->file_offset;
		entry->sp_delta = 0;
		entry->self_kind = pf->self_known ? SPEC_SELF_REG : SPEC_SELF_UNKNOWN;
		entry->self_reg = pf->self_arg_reg;
		entry->ctx_reg = pf->self_arg_reg == 5	 ? 4 + 1 /* rsi */
				 : pf->self_arg_reg == 4 ? 1 + 1 /* rdx */
							 : 0;
		entry->flags &= ~SPEC_SINGLE_STEPPED;
		if (!pf->entry.first_emulated)
			entry->flags |= SPEC_SINGLE_STEPPED;
	}
	fill_common(&exit, m, poll);
	exit.kind = PROBE_EXIT;
	exit.flags |= SPEC_EXIT_RETURNED;
	exit.sp_delta = 8; /* the ret popped the return address */
	entry->flags |= SPEC_URETPROBE_EXITS;
	if (trace_plan__add(plan, &exit, pf->file_offset, true) ||
	    trace_plan__add(plan, entry, entry_offset, false))
		return -ENOMEM;
	plan->nr_entries++;
	plan->nr_exits++;
	plan->nr_polls++;
	return 0;
}

/* Is poll fn p traced: its future (or one folded into its code) selected? */
static bool poll_wanted(const struct model *m, const struct selection *s, uint32_t p)
{
	const struct poll_fn *pf = &m->polls[p];
	bool wanted = pf->future >= 0 && (uint32_t)pf->future < s->nr && s->futures[pf->future];

	/* a future whose poll was folded into this function is traced through it */
	for (uint32_t f = 0; !wanted && pf->nr_folded && f < m->nr_futures && f < s->nr; f++)
		wanted = s->futures[f] && m->futures[f].folded_into == pf->future &&
			 m->futures[f].poll == (int32_t)p;
	return wanted && !pf->inlined_only && pf->future >= 0 && pf->size;
}

/*
 * A tail jump out of a poll fn whose result is its return value (docs/tracing.md,
 * "Tail calls"): the callee computes the Poll<T>, so the poll ends at the callee's
 * rets. Followed when the analyzer found them and the callee is not a traced poll
 * fn itself (its own entry would end the frame as stale). Returns the callee, NULL.
 */
static const struct tail_callee *followed_callee(const struct model *m, const struct selection *s,
						 const struct exit_site *x)
{
	const struct tail_callee *c =
	    x->kind == EXIT_TAIL_JMP ? model__tail_callee(m, x->target) : NULL;

	if (!c || c->unfollowed || !c->nr_rets || !c->size)
		return NULL;
	if (c->poll >= 0 && (uint32_t)c->poll < m->nr_polls && poll_wanted(m, s, (uint32_t)c->poll))
		return NULL;
	return c;
}

/* One exit probe per ret of a followed callee, shared by every poll jumping there. */
static int plan_callee(struct trace_plan *plan, uint32_t poll, const struct tail_callee *c)
{
	for (uint32_t k = 0; k < c->nr_rets; k++) {
		uint64_t off = c->ret_offsets[k];
		struct poll_spec spec = {0};
		bool planned = false;

		if (off < c->file_offset || off - c->file_offset >= c->size) {
			plan->nr_refused++;
			plan_problem(plan, poll, PLAN_REFUSED_SITE, off);
			continue;
		}
		for (uint32_t i = 0; i < plan->nr && !planned; i++)
			planned = plan->offsets[i] == off &&
				  (plan->specs[i].flags & SPEC_EXIT_TAIL_CALLEE);
		if (planned)
			continue;
		spec.kind = PROBE_EXIT;
		spec.poll = poll; /* the first poll jumping there; BPF reads the frame's */
		spec.future = ~0u;
		spec.exit_cond = SPEC_COND_ALWAYS;
		spec.flags = SPEC_EXIT_TAIL_CALLEE | SPEC_SINGLE_STEPPED;
		if (trace_plan__add(plan, &spec, off, false))
			return -ENOMEM;
		plan->nr_exits++;
		plan->nr_tail_callee_exits++;
	}
	return 0;
}

bool trace_plan__place_entry(const struct model *m, uint32_t poll, struct poll_spec *entry,
			     uint64_t *offset)
{
	const struct poll_fn *pf = &m->polls[poll];

	fill_common(entry, m, poll);
	entry->kind = PROBE_ENTRY;
	entry->ctx_reg = 0;
	if (pf->entry.valid && inside(pf, pf->entry.file_offset) && pf->entry.sp_delta <= 0) {
		*offset = pf->entry.file_offset;
		entry->sp_delta = pf->entry.sp_delta;
		if (pf->entry.self_kind == SELF_LOC_REG) {
			entry->self_kind = SPEC_SELF_REG;
			entry->self_reg = pf->entry.self_reg;
		} else if (pf->entry.self_kind == SELF_LOC_STACK) {
			entry->self_kind = SPEC_SELF_STACK;
			entry->self_sp_offset = pf->entry.self_sp_offset;
		}
	} else if (!pf->entry.valid && !pf->disasm_error) {
		return false;
	} else {
		/* first instruction: self in its argument register, if that is known */
		*offset = pf->file_offset;
		if (pf->self_known) {
			entry->self_kind = SPEC_SELF_REG;
			entry->self_reg = pf->self_arg_reg;
		}
	}
	if (!(pf->entry.valid && pf->entry.emulated && *offset == pf->entry.file_offset))
		entry->flags |= SPEC_SINGLE_STEPPED; /* for the probe-cost estimate */
	/* at the function's first instruction the arguments are where the ABI put them:
	 * the Context follows self (rsi, or rdx behind a hidden return pointer) */
	if (*offset == pf->file_offset && pf->self_known)
		entry->ctx_reg = pf->self_arg_reg == 5	 ? 4 + 1 /* rsi */
				 : pf->self_arg_reg == 4 ? 1 + 1 /* rdx */
							 : 0;
	return true;
}

/* Are the callee's own exits in this mode all on instructions the kernel emulates? */
static bool own_exits_emulated(const struct poll_fn *pf, enum plan_exits mode,
			       uint64_t entry_offset)
{
	uint32_t nr;
	const struct exit_site *xs = mode_exits(pf, mode, entry_offset, &nr);

	for (uint32_t i = 0; i < nr; i++)
		if (!xs[i].emulated)
			return false;
	return nr > 0;
}

/*
 * Can every return of this poll fn be seen in its callers (docs/tracing.md, "Exits
 * in the caller")? The analyzer found every call and, after each, the first
 * instruction the kernel emulates that only that return reaches (rsp: the entry's +
 * 8). The result must be readable there as at a `ret`: a compiler future's __state
 * through self, or a hand-written one's rax and rdx untouched. A poll fn that may
 * leave by a tail jump is left to its own exits (its tail callee's entry would meet
 * the frame first).
 */
bool trace_plan__caller_exits_fit(const struct poll_fn *pf, const struct poll_spec *entry)
{
	if (!pf->caller_exits_ok || !pf->nr_caller_exits)
		return false;
	for (uint32_t i = 0; i < pf->nr_exits; i++)
		if (pf->exits[i].kind != EXIT_RET)
			return false;
	for (uint32_t i = 0; i < pf->nr_caller_exits; i++) {
		const struct caller_exit *x = &pf->caller_exits[i];

		if (!x->usable || !x->file_offset)
			return false;
		if (entry->flags & SPEC_HAS_STATE)
			continue;
		if (x->result != CALLER_RESULT_READABLE || !(entry->flags & SPEC_RET_KNOWN) ||
		    x->result_reg[0] != 0 || x->result_bytes[0] < 8 || x->result_reg[1] != 1 ||
		    x->result_bytes[1] < 8)
			return false; /* DWARF 0 rax, 1 rdx: where result_from_return reads */
	}
	return true;
}

static int plan_caller_exits(struct trace_plan *plan, const struct model *m, uint32_t poll)
{
	const struct poll_fn *pf = &m->polls[poll];

	for (uint32_t i = 0; i < pf->nr_caller_exits; i++) {
		struct poll_spec exit;

		fill_common(&exit, m, poll);
		exit.kind = PROBE_EXIT;
		/* the callee's ret popped the return address (and a wrapper that returned
		 * at once popped its own: caller_exits.c) */
		exit.sp_delta = (int32_t)pf->caller_exits[i].sp_delta;
		if (trace_plan__add(plan, &exit, pf->caller_exits[i].file_offset, false))
			return -ENOMEM;
	}
	plan->nr_exits += pf->nr_caller_exits;
	plan->nr_emulated_exits += pf->nr_caller_exits;
	plan->nr_caller_exits += pf->nr_caller_exits;
	plan->nr_caller_polls++;
	return 0;
}

static int plan_poll(struct trace_plan *plan, const struct model *m, const struct selection *s,
		     uint32_t poll, enum plan_exits mode)
{
	const struct poll_fn *pf = &m->polls[poll];
	const struct exit_site *xs;
	uint32_t nr_xs;
	struct poll_spec entry;
	uint64_t entry_offset;
	uint32_t exits = 0, first = plan->nr;
	bool shared = false, followed = false;

	if (!trace_plan__place_entry(m, poll, &entry, &entry_offset)) {
		/* the analyzer found no probeable instruction at all */
		plan->nr_no_entry++;
		plan_problem(plan, poll, PLAN_NO_ENTRY, pf->file_offset);
		return 0;
	}
	/* a leaf cannot be unwound through: its return probe is safe, and cheap */
	if (mode == PLAN_EXITS_URETPROBE || (mode == PLAN_EXITS_EMULATED && pf->leaf)) {
		if (plan_uretprobe(plan, m, poll, &entry, entry_offset))
			return -ENOMEM;
		plan->nr_leaf_returns += mode == PLAN_EXITS_EMULATED;
		plan->nr_emulated_entries +=
		    !(plan->specs[plan->nr - 1].flags & SPEC_SINGLE_STEPPED);
		return 0;
	}
	/* exits in the callers, where the callee's own would be single-stepped */
	if (mode == PLAN_EXITS_EMULATED && !pf->disasm_error && pf->nr_exits &&
	    trace_plan__caller_exits_fit(pf, &entry) &&
	    !own_exits_emulated(pf, mode, entry_offset)) {
		if (plan_caller_exits(plan, m, poll) ||
		    trace_plan__add(plan, &entry, entry_offset, false))
			return -ENOMEM;
		plan->nr_entries++;
		plan->nr_emulated_entries += pf->entry.valid && pf->entry.emulated;
		plan->nr_polls++;
		return 0;
	}
	if (pf->disasm_error || !pf->nr_exits) { /* no exit sites: polls would never end */
		plan->nr_no_exit++;
		plan_problem(plan, poll, pf->disasm_error ? PLAN_NO_CODE : PLAN_NEVER_RETURNS,
			     pf->file_offset);
		return 0;
	}
	xs = mode_exits(pf, mode, entry_offset, &nr_xs);
	for (uint32_t i = 0; i < nr_xs; i++) {
		const struct exit_site *x = &xs[i];
		struct poll_spec exit;

		if (!x->probeable) {
			plan->nr_unprobeable_exits++;
			plan_problem(plan, poll, PLAN_UNPROBEABLE_EXIT, x->file_offset);
			continue;
		}
		if (!inside(pf, x->file_offset)) {
			plan->nr_refused++;
			plan_problem(plan, poll, PLAN_REFUSED_SITE, x->file_offset);
			continue;
		}
		/* a tail jump hands the result to the callee: end the poll at its rets */
		const struct tail_callee *callee =
		    entry.flags & SPEC_HAS_STATE ? NULL : followed_callee(m, s, x);
		if (callee) {
			if (plan_callee(plan, poll, callee))
				return -ENOMEM;
			followed = true;
			continue;
		}
		/* where the result is the return value, at a tail jump it is not there yet */
		bool tail = (x->kind == EXIT_TAIL_JMP || x->kind == EXIT_TAIL_JMP_INDIRECT) &&
			    !(entry.flags & SPEC_HAS_STATE);
		if (x->file_offset == entry_offset) {
			/* a function that is one tail jump: enter and leave at once */
			shared = true;
			entry.exit_cond = x->kind == EXIT_TAIL_JMP ? x->cond : SPEC_COND_ALWAYS;
			entry.flags |= tail ? SPEC_EXIT_TAIL_CALL : 0;
			continue;
		}
		fill_common(&exit, m, poll);
		exit.kind = PROBE_EXIT;
		/* plain exits (ret, tail jumps) run at the entry's rsp; a conditional tail
		 * jump (jcc) and a branch site are exits only when their condition holds */
		exit.sp_delta = x->kind == EXIT_BRANCH ? x->sp_delta : 0;
		exit.exit_cond =
		    x->kind == EXIT_BRANCH || x->kind == EXIT_TAIL_JMP ? x->cond : SPEC_COND_ALWAYS;
		exit.flags |= tail ? SPEC_EXIT_TAIL_CALL : 0;
		if (!x->emulated)
			exit.flags |= SPEC_SINGLE_STEPPED; /* counted per poll fn: stepped_exits */
		if ((exit.flags & SPEC_HAS_STATE) && x->state_src == EXIT_STATE_CONST) {
			exit.flags |= SPEC_STATE_CONST;
			exit.ret_ready_value = x->state_value;
		} else if ((exit.flags & SPEC_HAS_STATE) && x->state_src == EXIT_STATE_REG) {
			exit.flags |= SPEC_STATE_REG;
			exit.self_reg = x->state_reg;
		} else if (x->state_src != EXIT_STATE_MEMORY) {
			continue; /* cannot happen: the analyzer reads state only with __state */
		}
		if (trace_plan__add(plan, &exit, x->file_offset, false))
			return -ENOMEM;
		plan->nr_emulated_exits += x->emulated;
		exits++;
	}
	if (!exits && !shared && !followed) {
		plan->nr = first;
		plan->nr_no_exit++;
		plan_problem(plan, poll, PLAN_NO_EXIT, pf->file_offset);
		return 0;
	}
	if (shared)
		entry.kind |= PROBE_EXIT;
	if (followed)
		entry.flags |= SPEC_TAIL_CALLS;
	if (trace_plan__add(plan, &entry, entry_offset, false))
		return -ENOMEM;
	plan->nr_entries++;
	plan->nr_emulated_entries += pf->entry.valid && pf->entry.emulated;
	plan->nr_exits += exits + shared;
	plan->nr_polls++;
	return 0;
}

/*
 * A wake or drop probe reads its argument from rdi: on the function's first
 * instruction, or on the first instruction of its entry block that the kernel
 * emulates where the analyzer tracked the argument (in a register or a stack slot),
 * as poll entries are placed. Where the function's code was not analysed, the first
 * instruction, counted as single-stepped unless the analyzer said it is emulated.
 */
static void cheap_site(const struct entry_site *e, struct poll_spec *spec, uint64_t *offset)
{
	if (e->valid && e->emulated && e->file_offset && e->sp_delta <= 0 &&
	    (e->self_kind == SELF_LOC_REG || e->self_kind == SELF_LOC_STACK)) {
		*offset = e->file_offset;
		if (e->self_kind == SELF_LOC_REG) {
			spec->self_kind = SPEC_SELF_REG;
			spec->self_reg = e->self_reg;
		} else {
			spec->self_kind = SPEC_SELF_STACK;
			spec->self_sp_offset = e->self_sp_offset;
		}
		return;
	}
	if (!e->first_emulated)
		spec->flags |= SPEC_SINGLE_STEPPED;
}

/*
 * Cancellation: a probe on drop_in_place::<F> of every selected future that has an
 * out-of-line one (a release build inlines many: those drops are not seen). The
 * spec carries the future's __state layout; self arrives in rdi (*mut F).
 */
static int plan_drops(struct trace_plan *plan, const struct model *m, const struct selection *s)
{
	for (uint32_t f = 0; f < m->nr_futures && f < s->nr; f++) {
		const struct future *fu = &m->futures[f];
		struct poll_spec spec;
		uint64_t offset;

		if (!s->futures[f] || !fu->drop_file_offset)
			continue;
		if (fu->poll >= 0 && (uint32_t)fu->poll < m->nr_polls)
			fill_common(&spec, m, (uint32_t)fu->poll);
		else
			memset(&spec, 0, sizeof(spec));
		spec.flags &= SPEC_HAS_STATE; /* nothing about returns: it is no poll */
		spec.kind = PROBE_DROP;
		spec.future = f;
		spec.poll = fu->poll >= 0 ? (uint32_t)fu->poll : ~0u;
		spec.self_kind = SPEC_SELF_REG;
		spec.self_reg = 5; /* rdi */
		spec.exit_cond = SPEC_COND_ALWAYS;
		offset = fu->drop_file_offset;
		cheap_site(&fu->drop_entry, &spec, &offset);
		if (fu->has_state && !(spec.flags & SPEC_HAS_STATE) &&
		    (fu->state_size == 1 || fu->state_size == 2 || fu->state_size == 4 ||
		     fu->state_size == 8)) {
			spec.flags |= SPEC_HAS_STATE;
			spec.state_offset = (__u32)fu->state_offset;
			spec.state_size = (__u8)fu->state_size;
		}
		if (trace_plan__add(plan, &spec, offset, false))
			return -ENOMEM;
		plan->nr_drops++;
		plan->nr_emulated_drops += !(spec.flags & SPEC_SINGLE_STEPPED);
	}
	return 0;
}

/*
 * How far inside a task's root future its first traced future lies: while the root
 * is not traced (a runtime's wrapper: async-executor's spawn block, async-std's
 * SupportTaskLocals), its one await, through the model's edge steps (no pointer on
 * the way). UINT32_MAX: not found (the wake is then not linked to a poll).
 */
uint32_t trace_plan__task_descend(const struct model *m, const uint8_t *traced_futures, int32_t f,
				  int32_t *traced)
{
	uint64_t off = 0;

	for (int depth = 0; depth < 8 && f >= 0 && (uint32_t)f < m->nr_futures; depth++) {
		const struct future *fu = &m->futures[f];
		const struct future_state *st = NULL;
		const struct await_edge *e = NULL;
		uint32_t suspends = 0;

		if (traced_futures && traced_futures[f]) {
			*traced = f;
			return off <= UINT32_MAX ? (uint32_t)off : UINT32_MAX;
		}
		for (uint32_t k = 0; k < fu->nr_states; k++)
			if (fu->states[k].kind == STATE_SUSPEND) {
				st = &fu->states[k];
				suspends++;
			}
		if (suspends != 1 || st->awaitee_offset == FUTURE_NO_OFFSET)
			return UINT32_MAX;
		/* the edge of that await to a traced future, else to a compiler future (a
		 * wrapper's inner one rather than the wrapper) */
		for (uint32_t i = 0; i < m->nr_edges; i++) {
			const struct await_edge *c = &m->edges[i];

			if (c->from != f || c->await_index != st->suspend_index || c->to < 0 ||
			    !c->steps_known)
				continue;
			int score = (traced_futures && traced_futures[c->to]) * 4 +
				    m->futures[c->to].has_state * 2 + (c->via != NULL);
			int best = !e ? -1
				      : (traced_futures && traced_futures[e->to]) * 4 +
					    m->futures[e->to].has_state * 2 + (e->via != NULL);
			if (score > best)
				e = c;
		}
		if (!e)
			return UINT32_MAX;
		off += st->awaitee_offset;
		for (uint8_t k = 0; k < e->nr_steps; k++) {
			if (e->steps[k].deref)
				return UINT32_MAX;
			off += e->steps[k].offset;
		}
		f = e->to;
	}
	return UINT32_MAX;
}

/*
 * Can a wake of this runtime's tasks be linked to a traced poll? A task type of it
 * whose future the BPF side can find from the header (tracer__fill_wake_types) and
 * that is, or leads to, a traced future; std's Wake: a traced poll that reads the
 * waker of its Context at entry. Else its wake probes would fire on every wake for
 * nothing the outputs can show: they are not attached.
 */
static bool wakes_attributable(const struct trace_plan *plan, const struct model *m,
			       const uint8_t *traced, uint8_t runtime)
{
	if (runtime == TASK_RT_STD_WAKE) {
		for (uint32_t i = 0; m->waker_layout.known && i < plan->nr; i++)
			if ((plan->specs[i].kind & PROBE_ENTRY) && plan->specs[i].ctx_reg)
				return true;
		return false;
	}
	for (uint32_t i = 0; traced && i < m->nr_task_types; i++) {
		const struct task_type *tt = &m->task_types[i];
		int32_t found = -1;

		if (tt->runtime != runtime || !tt->vtable ||
		    tt->future_offset == FUTURE_NO_OFFSET || tt->future_offset > UINT32_MAX)
			continue;
		if (trace_plan__task_descend(m, traced, tt->future, &found) != UINT32_MAX &&
		    found >= 0)
			return true;
	}
	return false;
}

/* The futures the plan probes the polls of (traced[m->nr_futures]; malloc'd). */
static uint8_t *traced_futures(const struct trace_plan *plan, const struct model *m)
{
	uint8_t *traced = calloc(m->nr_futures ? m->nr_futures : 1, 1);

	for (uint32_t i = 0; traced && i < plan->nr; i++)
		if ((plan->specs[i].kind & PROBE_ENTRY) && plan->specs[i].future < m->nr_futures)
			traced[plan->specs[i].future] = 1;
	return traced;
}

bool trace_plan__task_roots(const struct trace_plan *plan, const struct model *m, uint8_t *roots,
			    bool *oom)
{
	uint8_t *traced, *root_future;
	bool any = false;

	*oom = false;
	memset(roots, 0, m->nr_polls);
	for (uint32_t f = 0; f < m->nr_futures; f++)
		any |= m->futures[f].block_on_root;
	if (!any && !m->nr_task_types)
		return false;
	traced = traced_futures(plan, m);
	root_future = calloc(m->nr_futures ? m->nr_futures : 1, 1);
	if (!traced || !root_future) {
		free(traced);
		free(root_future);
		*oom = true;
		return false;
	}
	for (uint32_t f = 0; f < m->nr_futures; f++)
		root_future[f] = m->futures[f].block_on_root;
	for (uint32_t i = 0; i < m->nr_task_types; i++) {
		const struct task_type *tt = &m->task_types[i];
		int32_t found = -1;

		if (tt->future >= 0 && (uint32_t)tt->future < m->nr_futures)
			root_future[tt->future] = 1;
		if (trace_plan__task_descend(m, traced, tt->future, &found) != UINT32_MAX &&
		    found >= 0)
			root_future[found] = 1;
	}
	for (uint32_t p = 0; p < m->nr_polls; p++)
		roots[p] = m->polls[p].future >= 0 &&
			   (uint32_t)m->polls[p].future < m->nr_futures &&
			   root_future[m->polls[p].future];
	free(traced);
	free(root_future);
	return true;
}

/* Wake-ups: a probe on every wake function of the runtimes the model knows, when its
 * wakes can be linked to a traced task. */
static int plan_wakes(struct trace_plan *plan, const struct model *m)
{
	uint8_t *traced = traced_futures(plan, m);
	bool ok[TASK_RT_MAX];

	if (!traced)
		return -ENOMEM;
	for (uint8_t rt = 0; rt < TASK_RT_MAX; rt++)
		ok[rt] = wakes_attributable(plan, m, traced, rt);
	free(traced);
	for (uint32_t i = 0; i < m->nr_wake_fns; i++) {
		const struct wake_fn *f = &m->wake_fns[i];
		struct poll_spec spec = {0};
		uint64_t offset;

		if (!f->file_offset || f->runtime >= TASK_RT_MAX || !m->runtimes[f->runtime].known)
			continue;
		if (!ok[f->runtime]) {
			plan->nr_wakes_unattributable++;
			continue;
		}
		spec.kind = PROBE_WAKE;
		spec.poll = ~0u;
		spec.future = f->runtime;
		spec.flags = f->by_ref ? SPEC_WAKE_BY_REF : 0;
		spec.self_kind = SPEC_SELF_REG;
		spec.self_reg = 5; /* rdi: the header */
		spec.exit_cond = SPEC_COND_ALWAYS;
		offset = f->file_offset;
		cheap_site(&f->entry, &spec, &offset);
		if (trace_plan__add(plan, &spec, offset, false))
			return -ENOMEM;
		plan->nr_wakes++;
		plan->nr_emulated_wakes += !(spec.flags & SPEC_SINGLE_STEPPED);
	}
	return 0;
}

int trace_plan__build(struct trace_plan *plan, const struct model *m, const struct selection *s,
		      enum plan_exits mode, unsigned extras, char *err, size_t errlen)
{
	memset(plan, 0, sizeof(*plan));
	for (uint32_t p = 0; p < m->nr_polls; p++) {
		if (!poll_wanted(m, s, p))
			continue;
		if (plan_poll(plan, m, s, p, mode)) {
			snprintf(err, errlen, "out of memory building the probe plan");
			return -ENOMEM;
		}
	}
	/* a task is a runtime's task: the entries of its root futures say so */
	bool oom = !(plan->task_roots = calloc(m->nr_polls ? m->nr_polls : 1, 1));
	if (!oom)
		plan->roots_known = trace_plan__task_roots(plan, m, plan->task_roots, &oom);
	for (uint32_t i = 0; plan->roots_known && i < plan->nr; i++)
		if ((plan->specs[i].kind & PROBE_ENTRY) && plan->specs[i].poll < m->nr_polls &&
		    plan->task_roots[plan->specs[i].poll])
			plan->specs[i].flags |= SPEC_TASK_ROOT;
	if (oom || (plan->nr && (((extras & PLAN_DROPS) && plan_drops(plan, m, s)) ||
				 ((extras & PLAN_WAKES) && plan_wakes(plan, m))))) {
		snprintf(err, errlen, "out of memory building the probe plan");
		return -ENOMEM;
	}
	if (!plan->nr) {
		snprintf(err, errlen,
			 "no selected future has an out-of-line poll function with probeable "
			 "entry and exit sites (%u without exits, %u without entry)",
			 plan->nr_no_exit, plan->nr_no_entry);
		return -ENOENT;
	}
	return 0;
}

void trace_plan__free(struct trace_plan *plan)
{
	free(plan->specs);
	free(plan->offsets);
	free(plan->cookies);
	free(plan->returns);
	free(plan->problems);
	free(plan->task_roots);
	free(plan->root_types);
	memset(plan, 0, sizeof(*plan));
}

/* ---- BPF lifecycle ---- */
