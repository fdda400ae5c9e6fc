/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The probe plan: which file offsets of the target get a probe, and the spec each
 * probe's cookie selects (bpf/asyncbpf.h), built from the analyzer's model and a
 * selection. Pure: unit-testable without root.
 */
#ifndef ASYNCBPF_TRACE_PLAN_H
#define ASYNCBPF_TRACE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "asyncbpf.h"
#include "model/model.h"
#include "select/selection.h"

/* What trace_plan__build adds to the polls' probes (bits). */
enum plan_extras {
	PLAN_DROPS = 1, /* drop_in_place::<F> of the selected futures: cancellation */
	PLAN_WAKES = 2, /* the runtimes' wake functions: wake-ups */
};

/* How exits are seen (docs/tracing.md, "Exit modes"). */
enum exits_mode {
	EXITS_AUTO,	 /* uretprobe when the binary cannot unwind (panic=abort), else emulated */
	EXITS_EMULATED,	 /* branch sites the kernel emulates, a uretprobe on leaf functions,
			  * `ret` where neither is safe */
	EXITS_RET,	 /* a probe on every `ret` and tail jump: single-stepped, unwind-safe */
	EXITS_URETPROBE, /* one uretprobe per poll fn: cheaper; aborts unwinding panics */
};

/* The exits a plan probes (the resolved exits_mode). */
enum plan_exits {
	PLAN_EXITS_RET,
	PLAN_EXITS_EMULATED,
	PLAN_EXITS_URETPROBE,
};

struct trace_plan {
	struct poll_spec *specs; /* specs[i] is found by cookie i */
	unsigned long *offsets;	 /* file offset of probe i */
	__u64 *cookies;		 /* i, for BPF_LINK_CREATE */
	bool *returns;		 /* probe i is a uretprobe (attached through its own link) */
	uint32_t nr, cap;
	uint32_t nr_returns;				 /* uretprobes among them */
	uint32_t nr_polls;				 /* traced poll functions */
	uint32_t nr_entries, nr_exits;			 /* probe sites of each kind */
	uint32_t nr_emulated_entries, nr_emulated_exits; /* of them, on emulated instructions */
	uint32_t nr_leaf_returns;      /* exits by uretprobe on leaf functions (emulated mode) */
	uint32_t nr_caller_exits;      /* exits in the callers (emulated mode), all emulated */
	uint32_t nr_caller_polls;      /* poll fns whose exits are all in their callers */
	uint32_t nr_tail_callee_exits; /* of nr_exits, rets of functions polls tail-jump to */
	uint32_t nr_unprobeable_exits; /* exits the kernel refuses: their polls end truncated */
	uint32_t nr_refused;	       /* sites outside their function: not probed */
	uint32_t nr_no_exit;	       /* selected polls without any probeable exit: skipped */
	uint32_t nr_no_entry;	       /* selected polls without a usable entry: skipped */
	uint32_t nr_drops;	       /* drop_in_place::<F> probes (cancellation) */
	uint32_t nr_wakes;	       /* wake function probes (wake-ups) */
	uint32_t nr_emulated_drops, nr_emulated_wakes; /* of them, on emulated instructions */
	uint32_t nr_wakes_unattributable; /* wake functions not probed: no traced task */
	bool roots_known;		  /* task roots (trace_plan__task_roots) were found */
	bool task_mode;			  /* task probes, no per-future ones (build_tasks) */
	uint32_t nr_task_types;		  /* task types whose vtable function is probed */
	uint32_t nr_task_exits, nr_task_returns; /* continuation sites; uretprobes */
	uint8_t *task_roots;			 /* by model poll: its entries are SPEC_TASK_ROOT */
	/* task mode's root polls (a block_on's future, a hand-written executor's roots):
	 * root_types[k] is the future of task_infos[m->nr_task_types + k] */
	uint32_t *root_types;
	uint32_t nr_root_types;
	uint32_t nr_roots_skipped;     /* root futures whose polls cannot all be ended: left out */
	struct plan_problem *problems; /* one per poll fn skipped or partly probed */
	uint32_t nr_problems, cap_problems;
};

/* Why a selected poll fn is not (fully) probed: reported per symbol. */
enum plan_problem_kind {
	PLAN_NO_EXIT,	       /* no probeable exit site: skipped */
	PLAN_NO_ENTRY,	       /* no probeable entry site: skipped */
	PLAN_UNPROBEABLE_EXIT, /* an exit the kernel refuses: polls leaving there end truncated */
	PLAN_REFUSED_SITE,     /* a site outside the function: not probed */
	PLAN_NEVER_RETURNS,    /* no ret at all (always panics or loops): skipped */
	PLAN_NO_CODE,	       /* its code could not be disassembled: skipped */
};

struct plan_problem {
	uint32_t poll; /* model index */
	uint32_t kind; /* enum plan_problem_kind */
	uint64_t file_offset;
};

/* "no probeable exit", ...: for messages. */
const char *plan_problem__describe(uint32_t kind);

/*
 * One entry probe per selected future's out-of-line poll fns (the analyzer's entry
 * site, else the function's first instruction) and one exit probe per probeable exit
 * site. Only addresses the analyzer found inside the function are used. Returns 0,
 * -ENOMEM, or -ENOENT when nothing selected can be probed (err says why).
 */
int trace_plan__build(struct trace_plan *plan, const struct model *m, const struct selection *s,
		      enum plan_exits mode, unsigned extras, char *err, size_t errlen);
void trace_plan__free(struct trace_plan *plan);
/*
 * The entry probe of poll fn `poll` (the analyzer's entry site, else its first
 * instruction, self where the analyzer says) and its file offset. false: no
 * probeable instruction.
 */
bool trace_plan__place_entry(const struct model *m, uint32_t poll, struct poll_spec *entry,
			     uint64_t *offset);
/* Can every return of pf be seen after its calls, the result read as at a ret? */
bool trace_plan__caller_exits_fit(const struct poll_fn *pf, const struct poll_spec *entry);
/* One probe site more (its hit class set from its kind and flags). 0 or -ENOMEM. */
int trace_plan__add(struct trace_plan *plan, const struct poll_spec *spec, uint64_t offset,
		    bool ret);

/*
 * Task mode (docs/tracing.md, "Task mode"): a probe on each task type's vtable
 * function (tokio's raw::poll<T, S>, async-task's RawTask::run) and the task polls'
 * exits: the continuations of their calls where every call has one, else (tokio,
 * which catches a task's panic below that function) a uretprobe on it. A runtime
 * whose task polls cannot all be ended is left out and said in err. Returns the task
 * types probed (0: none; err says why), or -ENOMEM.
 */
int trace_plan__build_tasks(struct trace_plan *plan, const struct model *m, bool wakes, char *err,
			    size_t errlen);
/*
 * How far inside a task's root future f its first traced future lies (traced[] by
 * model future): while the root is not traced (a runtime's wrapper: async-executor's
 * spawn block, async-std's SupportTaskLocals), its one await, through the model's
 * edge steps (no pointer on the way). UINT32_MAX: not found; else *traced is set.
 */
/*
 * Which poll fns' depth-0 polls are a task's root (roots[m->nr_polls]): the futures of
 * the runtimes' task types (or the first traced one inside a runtime's wrapper) and
 * the futures a block_on polls. false (roots all 0) when the model knows no task
 * type and no block_on: a hand-written executor, whose tasks are then its outermost
 * traced frames. -ENOMEM is false too, with *oom set.
 */
bool trace_plan__task_roots(const struct trace_plan *plan, const struct model *m, uint8_t *roots,
			    bool *oom);

uint32_t trace_plan__task_descend(const struct model *m, const uint8_t *traced, int32_t f,
				  int32_t *traced_out);

#endif
