// SPDX-License-Identifier: GPL-2.0
/*
 * Task polls' exits (task_exits.h). In a dispatcher's code, the call through the
 * task vtable is the one whose target comes from the task header's vtable pointer
 * (a load at Header.vtable), at the vtable's poll/run slot: `mov rax, [r14 +
 * 0x10]; call [rax]` (tokio, release, inlined into the scheduler's run_task),
 * `mov rax, [rax + 0x10]; mov rax, [rax]; call rax` (tokio, debug), `mov rax,
 * [rdi]; jmp [rax + 0x28]` (async-task's Runnable::run, a tail call: its callers'
 * calls are then the task polls). The offsets come from the DWARF (runtimes.c);
 * nothing here knows a runtime's version.
 */
#include "analyze/task_exits.h"

#include <capstone/capstone.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/caller_exits.h"
#include "analyze/demangle.h"

#define TASK_MAX_DISPATCH  65536u /* copies of the dispatchers kept */
#define TASK_MAX_RANGES	   64	  /* address ranges of one inlined copy */
#define TASK_MAX_TRANSFERS 16	  /* vtable calls in one copy */
#define TASK_MAX_EXITS	   65536u /* task_poll_exits kept */

struct dispatch {
	uint8_t runtime;
	bool out_of_line; /* the dispatcher's own function, else an inlined copy */
	uint64_t start, end;
	const char *name; /* demangled (model pool) */
};

struct task_walk {
	struct dispatch *v;
	uint32_t nr, cap;
	bool truncated;
	struct u64_map origins; /* abstract DIE offset -> runtime + 1, or 0 */
};

static struct task_walk *tw_of(struct walk *w)
{
	if (!w->tasks && (w->tasks = calloc(1, sizeof(*w->tasks))))
		u64_map__init(&w->tasks->origins);
	return w->tasks;
}

/* tokio's RawTask::poll, async-task's Runnable::run (legacy mangling). */
static int dispatcher_runtime(const char *ln)
{
	size_t n = ln ? strlen(ln) : 0;

	if (starts_with(ln, "_ZN5tokio7runtime4task3raw7RawTask4poll17h"))
		return TASK_RT_TOKIO;
	/* ...8runnable...Runnable...3run17h<16 hex digits>E */
	if (starts_with(ln, "_ZN10async_task8runnable") && strstr(ln, "Runnable") && n > 24 &&
	    !memcmp(ln + n - 24, "3run17h", 7) && ln[n - 1] == 'E')
		return TASK_RT_ASYNC_TASK;
	return -1;
}

static int add_dispatch(struct walk *w, int runtime, bool out_of_line, uint64_t start, uint64_t end,
			const char *linkage)
{
	struct task_walk *tw = tw_of(w);

	if (!tw)
		return -ENOMEM;
	if (!start || end <= start)
		return 0;
	if (tw->nr == TASK_MAX_DISPATCH) {
		tw->truncated = true;
		return 0;
	}
	if (tw->nr == tw->cap) {
		uint32_t cap = tw->cap ? tw->cap * 2 : 16;
		struct dispatch *n = realloc(tw->v, (size_t)cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		tw->v = n;
		tw->cap = cap;
	}
	tw->v[tw->nr] = (struct dispatch){
	    .runtime = (uint8_t)runtime,
	    .out_of_line = out_of_line,
	    .start = start,
	    .end = end,
	    .name = symbol__demangle(&w->m->strings, linkage),
	};
	if (!tw->v[tw->nr].name)
		return -ENOMEM;
	tw->nr++;
	return 0;
}

int task_exits__on_function(struct walk *w, Dwarf_Die *die, uint64_t addr, uint64_t size)
{
	const char *ln = die_linkage_name(die);
	int rt = dispatcher_runtime(ln);

	return rt < 0 ? 0 : add_dispatch(w, rt, true, addr, addr + size, ln);
}

int task_exits__on_inlined(struct walk *w, Dwarf_Die *die, Dwarf_Die *origin)
{
	struct task_walk *tw = tw_of(w);
	uint64_t off = dwarf_dieoffset(origin), v;
	Dwarf_Addr base, start, end;
	ptrdiff_t o;
	int n = 0, e = 0;

	if (!tw)
		return -ENOMEM;
	if (!u64_map__get(&tw->origins, off, &v)) {
		v = (uint64_t)(dispatcher_runtime(die_linkage_name(origin)) + 1);
		if (u64_map__set(&tw->origins, off, v))
			return -ENOMEM;
	}
	if (!v)
		return 0;
	for (o = dwarf_ranges(die, 0, &base, &start, &end); o > 0 && !e && n < TASK_MAX_RANGES;
	     o = dwarf_ranges(die, o, &base, &start, &end), n++)
		e = add_dispatch(w, (int)v - 1, false, start, end, die_linkage_name(origin));
	return e;
}

enum { TAG_NONE, TAG_VTABLE, TAG_FN };

struct transfer {
	uint64_t addr;
	uint8_t size;
	bool call; /* else a tail jump */
};

/* A register operand holding the vtable's function, or [vtable + slot]. */
static bool through_vtable(const struct insn *in, const uint8_t tag[INSN_NR_GPRS], uint32_t slot)
{
	const struct insn_op *op = &in->ops[0];

	if (in->nr_ops != 1)
		return false;
	if (op->type == INSN_OP_REG)
		return insn__gpr64(op) >= 0 && tag[op->reg] == TAG_FN;
	return op->type == INSN_OP_MEM && op->base >= 0 && op->base < INSN_NR_GPRS &&
	       op->index < 0 && !op->segment && op->value == (int64_t)slot &&
	       tag[op->base] == TAG_VTABLE;
}

/* What a register holds after `in`: a load from the header's vtable member, a load
 * of the slot from that vtable, a copy; anything else forgets. */
static void track(uint8_t tag[INSN_NR_GPRS], const struct insn *in, const struct runtime_layout *l)
{
	static const int clobbered[] = {0, 1, 2, 4, 5, 8, 9, 10, 11};
	const struct insn_op *op0 = &in->ops[0], *op1 = &in->ops[1];
	int dst = in->nr_ops == 2 ? insn__gpr64(op0) : -1, src;
	uint8_t t = TAG_NONE;

	if (dst >= 0 && in->id == X86_INS_MOV && op1->type == INSN_OP_MEM && op1->size == 8 &&
	    op1->base >= 0 && op1->base < INSN_NR_GPRS && op1->index < 0 && !op1->segment) {
		if (tag[op1->base] == TAG_VTABLE && op1->value == (int64_t)l->vtable_fn)
			t = TAG_FN;
		else if (op1->value == (int64_t)l->header_vtable)
			t = TAG_VTABLE;
	} else if (dst >= 0 && in->id == X86_INS_MOV && (src = insn__gpr64(op1)) >= 0) {
		t = tag[src];
	}
	for (int r = 0; r < INSN_NR_GPRS; r++)
		if (!in->regs_known || (in->gpr_written & (1u << r)))
			tag[r] = TAG_NONE;
	if (in->flow == INSN_FLOW_CALL)
		for (size_t k = 0; k < sizeof(clobbered) / sizeof(clobbered[0]); k++)
			tag[clobbered[k]] = TAG_NONE;
	if (dst >= 0)
		tag[dst] = t;
}

/* The calls and tail jumps through the task vtable in [d->start, d->end) of g. */
static uint32_t find_transfers(const struct cfg *g, const struct dispatch *d,
			       const struct runtime_layout *l, struct transfer *out)
{
	uint8_t tag[INSN_NR_GPRS] = {0};
	uint32_t n = 0;
	int64_t i = insn_seq__find(&g->seq, d->start);

	for (; i >= 0 && (uint32_t)i < g->seq.nr && n < TASK_MAX_TRANSFERS; i++) {
		const struct insn *in = cfg__insn(g, (uint32_t)i);

		if (in->addr >= d->end)
			break;
		if ((in->flow == INSN_FLOW_CALL || in->flow == INSN_FLOW_JMP_INDIRECT) &&
		    through_vtable(in, tag, l->vtable_fn))
			out[n++] =
			    (struct transfer){in->addr, in->size, in->flow == INSN_FLOW_CALL};
		track(tag, in, l);
	}
	return n;
}

struct pass {
	struct walk *w;
	struct call_site_ctx ctx;
	struct u64_map seen; /* call sites already reported */
};

static void note_why(struct model *m, int rt, const char *why)
{
	m->task_polls[rt].complete = false;
	if (!m->task_polls[rt].why)
		m->task_polls[rt].why = why;
}

static int add_exit(struct pass *p, const struct dispatch *d, const struct callsite *cs,
		    enum call_kind kind)
{
	struct model *m = p->w->m;
	struct task_poll_exit *x;
	int r;

	if (u64_map__get(&p->seen, cs->addr, NULL))
		return 0;
	if (m->nr_task_poll_exits == TASK_MAX_EXITS) {
		note_why(m, d->runtime, "more task-poll calls than the analyzer keeps");
		return 0;
	}
	if (u64_map__set(&p->seen, cs->addr, 1) || !(x = model__add_task_poll_exit(m)))
		return -ENOMEM;
	x->runtime = d->runtime;
	x->dispatcher = d->name;
	/* async-task's run may unwind (no uretprobe there): a single-stepped exit at the
	 * return address beats no task mode; tokio's have a uretprobe instead */
	p->ctx.stepped_ok = d->runtime == TASK_RT_ASYNC_TASK;
	r = call_site_ctx__exit(&p->ctx, cs, kind, &x->site, NULL);
	p->ctx.stepped_ok = false;
	if (r)
		return r;
	m->task_polls[d->runtime].calls++;
	if (x->site.usable) {
		m->task_polls[d->runtime].usable++;
	} else {
		const char *why = strpool__printf(&m->strings, "the call at 0x%" PRIx64 ": %s",
						  cs->addr, x->site.why);
		if (!why)
			return -ENOMEM;
		note_why(m, d->runtime, why);
	}
	return 0;
}

/* An out-of-line dispatcher that tail-jumps through the vtable: its callers' calls. */
static int through_callers(struct pass *p, const struct dispatch *d)
{
	struct model *m = p->w->m;
	struct callsite *calls = NULL;
	uint32_t nr = 0;
	char why[256];
	bool known;
	int r = 0;

	if (callsites__callers(p->w->calls, d->start, &calls, &nr, &known, why, sizeof(why)))
		return -ENOMEM;
	if (!known) {
		const char *s =
		    strpool__printf(&m->strings, "%s at 0x%" PRIx64 ": %s", d->name, d->start, why);
		if (!s)
			r = -ENOMEM;
		else
			note_why(m, d->runtime, s);
	}
	for (uint32_t k = 0; k < nr && !r; k++)
		r = add_exit(p, d, &calls[k],
			     calls[k].kind == CALLSITE_SLOT ? CALL_SLOT : CALL_DIRECT);
	free(calls);
	return r;
}

static int one_dispatch(struct pass *p, const struct dispatch *d)
{
	struct model *m = p->w->m;
	const struct runtime_layout *l = &m->runtimes[d->runtime];
	int32_t fn = callsites__fn_at(p->w->calls, d->start);
	struct transfer tr[TASK_MAX_TRANSFERS];
	uint32_t n;
	int err;
	const struct cfg *g;

	m->task_polls[d->runtime].dispatchers++;
	if (!l->known) {
		note_why(
		    m, d->runtime,
		    "the runtime's Header.vtable and vtable slot offsets are not in the DWARF");
		return 0;
	}
	g = fn >= 0 ? call_site_ctx__cfg(&p->ctx, fn, &err) : NULL;
	if (fn >= 0 && err)
		return err;
	if (!g) {
		note_why(m, d->runtime,
			 fn < 0 ? "a copy of the dispatcher lies outside any function symbol"
				: p->ctx.g_why);
		return 0;
	}
	const char *g_name = p->ctx.g_name;

	n = find_transfers(g, d, l, tr);
	if (!n) {
		const char *why = strpool__printf(&m->strings,
						  "no call through the task vtable in the copy of "
						  "%s at 0x%" PRIx64,
						  d->name, d->start);
		if (!why)
			return -ENOMEM;
		note_why(m, d->runtime, why);
	}
	for (uint32_t k = 0; k < n; k++) {
		struct callsite cs = {.addr = tr[k].addr, .fn = fn, .size = tr[k].size};
		int r;

		if (tr[k].call) {
			r = add_exit(p, d, &cs, CALL_VTABLE);
		} else if (d->out_of_line) {
			r = through_callers(p, d);
		} else {
			const char *why = strpool__printf(
			    &m->strings,
			    "a tail call through the task vtable at 0x%" PRIx64 " in %s",
			    tr[k].addr, g_name);
			r = why ? 0 : -ENOMEM;
			if (why)
				note_why(m, d->runtime, why);
		}
		if (r)
			return r;
	}
	return 0;
}

static int cmp_dispatch(const void *a, const void *b)
{
	const struct dispatch *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

int task_exits__find(struct walk *w)
{
	struct task_walk *tw = w->tasks;
	struct model *m = w->m;
	struct pass p = {.w = w};
	struct u64_map starts;
	int r = 0;

	if (!tw || !tw->nr || !w->calls)
		return 0;
	for (int k = 0; k < TASK_RT_MAX; k++)
		m->task_polls[k].complete = true;
	qsort(tw->v, tw->nr, sizeof(*tw->v), cmp_dispatch);
	u64_map__init(&starts);
	for (uint32_t i = 0; i < tw->nr && !r; i++)
		if (tw->v[i].out_of_line)
			r = u64_map__set(&starts, tw->v[i].start, 1) ? -ENOMEM : 0;
	if (!r)
		r = callsites__find_holders(w->calls, w->t, &starts);
	u64_map__free(&starts);
	u64_map__init(&p.seen);
	call_site_ctx__init(&p.ctx, w->t, m, w->calls);
	for (uint32_t i = 0; i < tw->nr && !r; i++) {
		/* the same range twice (two DIEs describing one copy) counts once */
		if (i && tw->v[i].start == tw->v[i - 1].start && tw->v[i].end == tw->v[i - 1].end)
			continue;
		r = one_dispatch(&p, &tw->v[i]);
	}
	call_site_ctx__free(&p.ctx);
	u64_map__free(&p.seen);
	if (tw->truncated)
		for (int k = 0; k < TASK_RT_MAX; k++)
			if (m->task_polls[k].dispatchers)
				note_why(m, k,
					 "more copies of the dispatchers than the analyzer keeps");
	return r;
}

void task_exits__free(struct walk *w)
{
	if (!w->tasks)
		return;
	free(w->tasks->v);
	u64_map__free(&w->tasks->origins);
	free(w->tasks);
	w->tasks = NULL;
}
