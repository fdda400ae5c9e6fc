/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The analyzer's model of a Rust binary's futures: what every other module
 * (selection, exporters, later the tracer) consumes. Pure data; strings are
 * interned in the model's string pool and live as long as the model.
 */
#ifndef ASYNCBPF_MODEL_H
#define ASYNCBPF_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/strpool.h"
#include "model/locks.h"

enum future_kind {
	FUTURE_ASYNC_FN,      /* {async_fn_env#N} */
	FUTURE_ASYNC_BLOCK,   /* {async_block_env#N} */
	FUTURE_ASYNC_CLOSURE, /* {async_closure_env#N} (coroutine closure) */
	FUTURE_HANDWRITTEN,   /* a type with <T as core::future::future::Future>::poll */
};

enum state_kind {
	STATE_UNRESUMED,
	STATE_RETURNED,
	STATE_PANICKED,
	STATE_SUSPEND,
	STATE_OTHER, /* a variant name we do not recognise: reported, not guessed */
};

struct future_state {
	uint64_t discr;
	enum state_kind kind;
	uint32_t suspend_index; /* k of Suspend<k>, valid for STATE_SUSPEND */
	const char *name;	/* variant type name: "Unresumed", "Suspend0", ... */
	const char *file;
	uint32_t line;
	const char *awaitee_type; /* type name of __awaitee, NULL if none */
	/* where __awaitee lives inside the future (its variant's member offset plus its
	 * own in the variant struct) and its size: what reading a parked task's awaited
	 * future from memory needs; FUTURE_NO_OFFSET when not known */
	uint64_t awaitee_offset;
	uint64_t awaitee_size;
	struct held_guard *held; /* Suspend<k>: the guards alive across the await */
	uint32_t nr_held;
};
#define FUTURE_NO_OFFSET UINT64_MAX

enum crate_class {
	CRATE_USER,    /* the user's own crates: default selection */
	CRATE_STD,     /* std, core, alloc, proc_macro, test */
	CRATE_RUNTIME, /* async runtimes and their support crates (see crate.c) */
	CRATE_OTHER,   /* third-party dependencies */
};

enum self_location {
	SELF_LOC_UNKNOWN,
	SELF_LOC_REG,	/* in a register (DWARF x86-64 register number) */
	SELF_LOC_STACK, /* in memory at [rsp + self_sp_offset] at the site */
};

/* The cheapest place to put the entry probe: see disasm.h. */
struct entry_site {
	bool valid;
	uint64_t addr;
	uint64_t file_offset;
	bool emulated;	     /* the kernel emulates this instruction (no single-step) */
	bool first_emulated; /* the function's first instruction is one it emulates (valid or
				not: where a uretprobe's breakpoint goes) */
	char insn[64];	     /* "push rbp" */
	int32_t sp_delta;    /* rsp at the site minus rsp at function entry (<= 0) */
	enum self_location self_kind;
	uint16_t self_reg;	/* DWARF register number, SELF_LOC_REG */
	int32_t self_sp_offset; /* SELF_LOC_STACK */
};

struct future {
	const char *path;  /* full Rust path: "demo::middle::{async_fn_env#0}" */
	const char *crate; /* first path segment */
	enum crate_class crate_class;
	enum future_kind kind;
	uint64_t die_offset; /* first DIE seen for this type (global .debug_info offset) */
	uint64_t size;
	bool has_state;
	uint64_t state_offset; /* of __state inside the future */
	uint32_t state_size;
	struct future_state *states;
	uint32_t nr_states;
	const char *file; /* declaration: the Unresumed variant's line, or the poll fn's */
	uint32_t line;
	const char *drop_symbol; /* linkage name of core::ptr::drop_in_place<T>, NULL if none */
	uint64_t drop_addr;
	uint64_t drop_file_offset;    /* of drop_addr, for a uprobe; 0 if none */
	uint64_t drop_size;	      /* its code's size (the symbol's), 0 if unknown */
	struct entry_site drop_entry; /* where its probe costs least (rdi: the future) */
	int32_t poll;		      /* index of the first out-of-line poll fn, -1 if none */
	int32_t folded_into;	      /* its poll fn is this other future's: identical code the
					 compiler folded into one function (its vtable says so); -1 */
	bool inlined_only;	      /* no out-of-line poll, but inlined copies exist */
	bool is_root;		      /* nobody awaits it: a task entry point */
	bool block_on_root;	      /* a block_on polls it: its thread's root task */
	/* a future a parked task waits in (waits.c), NULL for the others */
	struct future_wait *wait;
};

enum exit_kind {
	EXIT_RET,		/* ret */
	EXIT_TAIL_JMP,		/* direct jmp whose target is outside the function */
	EXIT_TAIL_JMP_INDIRECT, /* jmp through register/memory that is not a jump table */
	EXIT_BRANCH,		/* a jmp/jcc into the tail of a ret (an emulated exit site) */
};

#define MODEL_EXIT_KEEP_MAX 8
/* exit_site.cond: the site is an exit on every execution */
#define EXIT_COND_ALWAYS 0xff

struct exit_site {
	uint64_t addr;
	uint64_t file_offset;
	enum exit_kind kind;
	uint64_t target; /* EXIT_TAIL_JMP: the jump target; else 0 */
	bool probeable;	 /* false: the kernel refuses a uprobe here (e.g. `notrack jmp`) */
	/* emulated exit sites (docs/disasm.md, "Emulated exit sites"); for a plain exit:
	 * emulated as the instruction is, sp_delta 0, cond EXIT_COND_ALWAYS, covers = addr */
	bool emulated;	  /* the kernel emulates the instruction (no single-step) */
	int32_t sp_delta; /* rsp at the site minus rsp at function entry (<= 0) */
	uint8_t cond;	  /* x86 condition code (jcc's low nibble): an exit when it holds */
	uint64_t covers;  /* the `ret` this site stands for (its own address for a plain exit) */
	/* a state machine's __state after the poll, when the tail still writes it */
	uint8_t state_src;    /* enum exit_state_src */
	uint8_t state_reg;    /* EXIT_STATE_REG: the DWARF register the tail stores */
	uint64_t state_value; /* EXIT_STATE_CONST: the value the tail stores */
};

/*
 * A function a poll fn leaves by a direct tail jump (`jmp callee`, rsp as at the
 * poll's entry): the callee returns straight to the poll's caller, so what it
 * returns is the poll's Poll<T>, and the poll ends at the callee's `ret`s
 * (docs/analyzer.md, "Tail calls"). One per jump target, in model.tail_callees.
 */
struct tail_callee {
	uint64_t addr, size;   /* the function at the target (its symbol's bounds) */
	uint64_t file_offset;  /* of addr */
	const char *name;      /* its symbol, demangled; NULL when no symbol starts there */
	int32_t poll;	       /* the model's poll fn at addr, -1 if none */
	uint64_t *ret_offsets; /* file offsets of its `ret`s (its only exits) */
	uint32_t nr_rets;
	const char *unfollowed; /* NULL: its rets end the poll; else why they cannot */
};

/* Where an exit site finds __state's final value. */
enum exit_state_src {
	EXIT_STATE_MEMORY, /* in self's memory already (nothing after the site writes it) */
	EXIT_STATE_CONST,  /* the tail stores this constant */
	EXIT_STATE_REG,	   /* the tail stores this register, unchanged since the site */
};

/* How a poll fn returns its Poll<T> (docs/analyzer.md, "Calling conventions"). */
enum ret_convention {
	RET_CONV_UNKNOWN,   /* not determined: hand-written results are then unknown */
	RET_CONV_REGISTERS, /* rax (and rdx for bytes 8-15) */
	RET_CONV_MEMORY,    /* a hidden pointer in rdi, returned in rax; self in rsi */
};

/* Where the convention of a poll fn comes from. */
enum abi_source {
	ABI_SOURCE_NONE,    /* not analysed (no code, or not x86-64) */
	ABI_SOURCE_CODE,    /* read off the machine code */
	ABI_SOURCE_DWARF,   /* self's location at entry, as DWARF states it */
	ABI_SOURCE_SIZE,    /* a Poll<T> of at most 8 bytes: in registers, always */
	ABI_SOURCE_UNKNOWN, /* nothing conclusive: self and the result are unknown */
};

/* What the code of a poll fn shows about its convention (analyze/abi.c). */
struct poll_abi {
	enum abi_source source;
	enum ret_convention code_ret; /* the code's own verdict (unknown: inconclusive) */
	int16_t code_self;	      /* the code's verdict on self's register, -1 unknown */
	bool rule_disagrees;	      /* the size rule (an older compiler's) said otherwise */
	enum ret_convention rule_ret; /* what the size rule says */
	int16_t dwarf_self;	      /* self's register at entry per DWARF, -1 not said */
	int8_t dwarf_slot_reg;	      /* self in a slot at [this register + dwarf_slot_off] */
	int64_t dwarf_slot_off;	      /* (DW_OP_fbreg, the frame base a register); reg -1: none */
	uint32_t slot_via[2];	      /* the incoming rdi, rsi stored to that slot */
	uint32_t rets;		      /* reachable returns */
	uint32_t rets_hidden;	      /* where rax = the incoming rdi */
	uint32_t rets_direct;	      /* where rax = a constant */
	uint32_t rets_unset;	      /* where rax still holds what the caller left: no result */
	uint32_t state_via[2];	      /* __state accessed through the incoming rdi, rsi */
	uint32_t discr_match, discr_mismatch; /* constant discriminants vs DWARF's values */
};

/* Layout of core::task::poll::Poll<T> as returned by a poll fn. */
struct poll_layout {
	bool known;
	uint64_t size;
	uint64_t discr_offset;
	uint32_t discr_size;
	bool pending_has_value; /* false: Pending is the variant_part's default */
	uint64_t pending_value;
	bool ready_has_value;
	uint64_t ready_value;
	bool in_memory;			/* returned through a hidden pointer (rax at return) */
	enum ret_convention convention; /* in_memory is RET_CONV_MEMORY; unknown: neither */
};

/* How a call reaches its callee (caller_exit.call). */
enum call_kind {
	CALL_DIRECT, /* call rel32 */
	CALL_SLOT,   /* call [rip + slot]: a GOT entry holding the callee's address */
	CALL_VTABLE, /* call through a task vtable's slot (a runtime's task poll) */
};

/* What a caller exit site can read of the callee's Poll<T> (caller_exit.result). */
enum caller_result {
	CALLER_RESULT_NOT_NEEDED, /* a compiler future: __state is read through self */
	CALLER_RESULT_READABLE,	  /* the discriminant (or the hidden pointer) is in result_reg */
	CALLER_RESULT_LOST,	  /* overwritten between the return and the site */
	CALLER_RESULT_UNKNOWN,	  /* Poll<T>'s layout or convention is not known */
};

/*
 * An exit in the caller (docs/disasm.md, "Exits in the caller"): for one call of a
 * function, the first instruction after the return address that the kernel
 * emulates and that only the return from that call reaches. rsp there is rsp at
 * the callee's entry + 8.
 */
struct caller_exit {
	uint64_t call_addr;	    /* the call instruction */
	const char *caller;	    /* the function holding it (demangled), NULL if none */
	uint8_t call;		    /* enum call_kind */
	bool usable;		    /* a site was found (else why) */
	const char *why;	    /* why not usable, NULL when usable */
	uint64_t addr, file_offset; /* the site */
	char insn[48];		    /* "jne 0xaa60c" */
	uint8_t distance;	    /* instructions from the return address to the site */
	uint8_t calls;	   /* calls passed over on the way (a guard's drop through the GOT) */
	uint32_t sp_delta; /* rsp at the site minus rsp at the callee's entry (8 and up) */
	bool stepped;	   /* the site is the return address, which the kernel single-steps */
	/* the call is in a function that returns at once (a `Pin<&mut F>` poll wrapper):
	 * the site is in that function's caller (call_addr is that call's; via names
	 * the wrapper); tail_fn, tail_sp while the expansion is pending */
	const char *via;
	uint64_t via_addr; /* the wrapper's address, 0 when none */
	uint64_t tail_fn;
	uint32_t tail_sp;
	/* where the callee's rax ([0]) and rdx ([1]) are at the site: the DWARF register
	 * whose low result_bytes[k] bytes hold them; -1 when none does */
	int8_t result_reg[2];
	uint8_t result_bytes[2];
	uint8_t result; /* enum caller_result: can the poll's result be decoded there */
};

struct inline_site {
	uint64_t addr;	    /* entry pc of the inlined copy */
	const char *caller; /* demangled name of the function it is inlined into */
	const char *file;   /* call site */
	uint32_t line;
};

struct poll_fn {
	const char *name;	  /* demangled */
	const char *linkage_name; /* NULL when only inlined and no linkage name is known */
	const char *crate;
	enum crate_class crate_class;
	uint64_t addr, size;
	uint64_t file_offset; /* what a uprobe needs: addr mapped through the executable PT_LOAD */
	const char *file;
	uint32_t line;
	int32_t future; /* index into model.futures, -1 if unknown */
	bool inlined_only;
	struct inline_site *inline_sites;
	uint32_t nr_inline_sites;
	uint32_t nr_inline_sites_total; /* before the cap */
	struct exit_site *exits;	/* every ret and tail jump (--exits ret) */
	uint32_t nr_exits;
	/* the default exits: each ret replaced by emulated sites where that is safe */
	struct exit_site *fast_exits;
	uint32_t nr_fast_exits;
	uint32_t nr_rets_covered; /* rets replaced by emulated sites */
	/*
	 * No call and no jump out of the function (every jump table resolved): no unwind
	 * can start below its frame, so a uretprobe is safe on it (docs/disasm.md).
	 */
	bool leaf;
	struct entry_site entry;
	struct poll_layout ret;
	uint16_t self_arg_reg; /* DWARF reg holding self at the first instruction: 5 rdi, 4 rsi */
	bool self_known;       /* false: where self arrives could not be told (abi.source) */
	struct poll_abi abi;
	/*
	 * Exits in the callers (docs/disasm.md, "Exits in the caller"): one per call site.
	 * callers_known: every call is a direct call or a call through a GOT slot found in
	 * the code, and the function's address is taken nowhere else. caller_exits_ok:
	 * callers known, at least one, and every one has a usable site; else
	 * caller_exits_why says what is missing.
	 */
	bool callers_known;
	bool caller_exits_ok;
	const char *caller_exits_why;
	struct caller_exit *caller_exits;
	uint32_t nr_caller_exits;
	uint32_t nr_folded;	  /* other futures whose poll is this very function (folded code) */
	const char *disasm_error; /* NULL when disassembly succeeded */
};

#define MODEL_AWAIT_STEPS 8

struct await_edge {
	int32_t from;	      /* future index */
	int32_t to;	      /* future index, or -1 when unresolved (dyn Future, ...) */
	uint32_t await_index; /* k of Suspend<k> */
	const char *file;
	uint32_t line;
	const char *awaitee_type; /* the __awaitee type as written in DWARF */
	const char *via;	  /* wrapper chain resolved through, NULL if direct */
	/*
	 * Where `to` is, from the start of the state's __awaitee (future_state.awaitee_offset):
	 * steps[0..nr_steps) applied in order (none: the awaitee is `to`). For an edge
	 * to a `dyn Future` (to < 0, dyn): the steps reach the boxed future, and the last
	 * deref read the fat pointer's data half: its vtable is the next 8 bytes.
	 * steps_known false: the chain was longer than MODEL_AWAIT_STEPS, or not found.
	 */
	bool steps_known, dyn;
	uint8_t nr_steps;
	struct await_step steps[MODEL_AWAIT_STEPS];
};

/*
 * Future trees (docs/analyzer.md, "Future trees"): for every future type, its child
 * slots: where inside an instance a future it polls or holds lies, under which
 * condition, and of which type. A flat, index-based table: trees[i] is futures[i]'s,
 * its slots are tree_slots[first_slot .. first_slot + nr_slots), so that a walker
 * (model/future_tree.h) or a BPF program (the same table in array maps) can read a
 * task's whole tree of futures from memory.
 */
#define MODEL_TREE_SLOTS 16 /* per future type; more are cut and counted */
#define MODEL_TREE_CONDS 3  /* per slot */

enum tree_cond_kind {
	TREE_COND_IN,	  /* lo <= value <= hi (one variant's value: lo == hi) */
	TREE_COND_NOT_IN, /* value < lo or value > hi: a niche enum's untagged variant */
	/* a runtime's state word that says the task is there: not 0, at most hi (a freed
	 * task's word holds the allocator's pointer), no bit of lo (its "done" flags)
	 * set. task_type.live_conds only, never a tree slot's */
	TREE_COND_NO_BITS,
};

/* One condition of a slot: an enum variant (or a Suspend state) that must be live. */
struct tree_cond {
	uint8_t kind;	 /* enum tree_cond_kind */
	uint8_t size;	 /* of the discriminant: 1, 2, 4 or 8 bytes, little-endian, unsigned */
	uint8_t at_step; /* read it where the slot's first at_step steps lead (0: the future) */
	uint64_t offset; /* of the discriminant, from there */
	uint64_t lo, hi;
};

struct tree_slot {
	int32_t child;	     /* the child's future index; -1 for a dyn child */
	bool dyn;	     /* a `dyn Future`: the vtable names the type at run time (vtables[]) */
	int32_t await_index; /* a compiler future's: k of the Suspend<k> it belongs to; else -1 */
	uint8_t nr_conds, nr_steps;
	struct tree_cond conds[MODEL_TREE_CONDS];   /* every one must hold */
	struct await_step steps[MODEL_AWAIT_STEPS]; /* from the future to the child (dyn: to its
						       fat pointer) */
	uint32_t dyn_data, dyn_vtable; /* dyn: the fat pointer's halves, from where the steps end */
	const char *member;	       /* the members on the way: "state.Connected.future" */
};

/* One future type's node of the table. */
struct future_tree {
	bool known;	/* its layout was read (false: the DWARF has no type for it) */
	bool has_discr; /* its own state: __state, or a hand-written enum's discriminant */
	uint32_t discr_size;
	uint64_t discr_offset;
	uint64_t discr_max; /* a compiler future's largest __state (a larger one: not a live
			       future); UINT64_MAX when any value can be live */
	uint32_t first_slot, nr_slots;
	uint32_t nr_cut; /* slots found but not kept (see struct tree_stats) */
};

/* What building the trees kept and cut (each cut counted once, under its first reason). */
struct tree_stats {
	uint32_t futures;    /* with a known layout */
	uint32_t with_slots; /* of them, with at least one slot */
	uint32_t slots, dyn_slots;
	uint32_t no_layout; /* futures the DWARF describes no type of */
	uint32_t cut_slots; /* over MODEL_TREE_SLOTS of one future */
	uint32_t cut_steps; /* a chain over MODEL_AWAIT_STEPS steps */
	/* over MODEL_TREE_CONDS conditions, or one that cannot be written (a niche enum's
	 * values not contiguous, a discriminant over 8 bytes; a dyn child whose fat
	 * pointer has no vtable half) */
	uint32_t cut_conds;
	uint32_t cut_bounds; /* type trees cut short by their bounds, outside their children */
	uint32_t no_offset;  /* await points whose __awaitee offset is unknown */
};

/*
 * A `dyn Future` vtable (DWARF `<T as core::future::future::Future>::{vtable}`):
 * what a boxed future's fat pointer points at. Its words are read as the program
 * sees them (dynamic relocations applied).
 */
struct future_vtable {
	const char *type; /* T, as the vtable's name spells it */
	int32_t future;	  /* model future, -1 unknown */
	int32_t poll_fn;  /* model poll fn the poll slot points at, -1 if none known */
	uint64_t addr;	  /* link-time address of the vtable */
	uint64_t drop, size, align, poll; /* its first four words; 0 if unreadable */
};

/* The runtimes whose task headers asyncbpf can find in memory (docs/stacks.md). */
enum task_runtime {
	TASK_RT_DYN, /* a boxed `dyn Future` (hand-written executors) */
	TASK_RT_TOKIO,
	/* tokio 1.x: Header { state, queue_next, vtable, .. } */
	TASK_RT_ASYNC_TASK, /* async-task 4.x (async-std, smol): Header { state, awaiter, vtable }
			     */
	TASK_RT_STD_WAKE,   /* any executor whose wakers are std's `Wake` (Arc<W>): no header */
	TASK_RT_MAX,
};

/*
 * One task type of a runtime: the per-type vtable its task headers point at, found
 * from the vtable function that knows the future's type (tokio's
 * `runtime::task::raw::poll<T, S>`, async-task's `RawTask<F, T, S>::run`) and the
 * dynamic relocation (or data word) that stores that function's address.
 */
struct task_type {
	uint8_t runtime;	 /* enum task_runtime */
	int32_t future;		 /* the task's root future (model index) */
	const char *fn;		 /* linkage name of that vtable function */
	uint64_t fn_addr;	 /* its link-time address */
	uint64_t fn_file_offset; /* of fn_addr, for a uprobe (task mode); 0 if none */
	bool fn_emulated;	 /* the kernel emulates its first instruction (jmp, push) */
	uint64_t vtable;	 /* link-time address of the vtable; 0 if none was found */
	uint32_t nr_vtables;	 /* vtables found for it (codegen units may repeat one) */
	/* the future from the task header: tokio, from `Cell<T, S>` in the DWARF;
	 * FUTURE_NO_OFFSET: read at run time (async-task keeps it in the vtable's
	 * `layout_info`) or unknown */
	uint64_t future_offset;
	bool boxed; /* the task holds a Pin<Box<future>>: one pointer more to the future */
	/*
	 * When the future is still there (tokio: `Stage<T>`'s `Running` variant; after it
	 * returned Ready tokio replaces it with `Finished(output)`): every condition must
	 * hold, each a discriminant at live_conds[i].offset from the future (negative: a
	 * tag before it) read as in a tree slot. nr_live_conds 0: nothing to check.
	 */
	uint8_t nr_live_conds;
	struct task_live_cond {
		int64_t offset;
		uint8_t kind, size; /* enum tree_cond_kind; 1, 2, 4 or 8 */
		uint64_t lo, hi;
	} live_conds[MODEL_TREE_CONDS];
	bool live_cut; /* the Stage's conditions could not all be written: not checked */
	/*
	 * tokio: when the future is gone, how the poll ended it, from the same Stage<T>:
	 * `Finished(_)` (finished_conds: else Consumed, the output already dropped) and
	 * `Finished(Err(JoinError { repr: Cancelled, .. }))` (cancelled_conds: the poll
	 * dropped the future for an abort), relative to the future's address as
	 * live_conds. nr 0: not found (a cancel landing inside a poll stays unsure).
	 */
	uint8_t nr_finished_conds, nr_cancelled_conds;
	struct task_live_cond finished_conds[MODEL_TREE_CONDS];
	struct task_live_cond cancelled_conds[MODEL_TREE_CONDS];
};

/*
 * A runtime's wake function: tokio's `runtime::task::waker::wake_by_val/_by_ref`
 * (one each), async-task's `RawTask<F, T, S>::wake/wake_by_ref` (one per task type).
 * Its first argument (rdi) is the task's header. trace probes them (wake-ups).
 */
struct wake_fn {
	uint8_t runtime; /* enum task_runtime */
	bool by_ref;
	const char *name; /* linkage name */
	uint64_t addr, file_offset;
	uint64_t size;		 /* its code's size, 0 if unknown */
	struct entry_site entry; /* where its probe costs least (rdi: the header) */
};

/* Where the runtimes keep what the stacks need: member offsets from the DWARF. */
struct runtime_layout {
	bool known;		  /* the offsets below were all found */
	bool assumed;		  /* no DWARF: tokio 1.x's usual header layout, taken on trust */
	uint32_t header_state;	  /* Header.state: the task's state word */
	uint32_t header_vtable;	  /* Header.vtable */
	uint32_t vtable_fn;	  /* the vtable function's slot (tokio poll, async-task run) */
	uint32_t layout_info;	  /* async-task: TaskVTable.layout_info */
	uint32_t layout_offset_f; /* async-task: TaskLayout.offset_f */
};

/*
 * A task poll's exit (docs/disasm.md, "Task polls"): a call of a task's vtable poll
 * function (tokio's `(vtable.poll)(ptr)` in RawTask::poll, async-task's
 * Runnable::run, which tail-jumps through the vtable's run slot) and its
 * continuation; rsp there is rsp at the vtable function's entry + 8.
 */
struct task_poll_exit {
	uint8_t runtime;	/* enum task_runtime */
	const char *dispatcher; /* RawTask::poll / Runnable::run (demangled) */
	struct caller_exit site;
};

/* Per runtime: what was found of its task-poll calls. */
struct task_poll_summary {
	uint32_t dispatchers; /* copies of the dispatcher in the code (inlined or not) */
	uint32_t calls;	      /* task_poll_exits of this runtime */
	uint32_t usable;      /* of them with a usable site */
	/* every copy's vtable call was found, every caller of an out-of-line copy that
	 * tail-jumps is known, and every call has a usable site; else why says the first
	 * thing that is missing or unusable */
	bool complete;
	const char *why;
};

/* The call-site index behind the caller exits: what it decoded and what it could not. */
struct callsite_stats {
	bool built;
	uint32_t functions, undecoded;
	uint64_t bytes, insns, calls, undecoded_bytes;
};

struct model_warning {
	const char *text;
};

/*
 * How much DWARF a crate has (docs/analyzer.md, "Debug info levels"), lowest first:
 * what Cargo's `debug` setting makes rustc emit.
 */
enum debuginfo_level {
	DEBUGINFO_NONE,	       /* no compile unit: symbol names only (debug = false) */
	DEBUGINFO_LINE_TABLES, /* functions by bare name, inline tree, lines (line-tables-only) */
	DEBUGINFO_LIMITED,     /* + namespaces and linkage names, no types (debug = "limited", 1) */
	DEBUGINFO_FULL,	       /* + types: layouts, states, await points (debug = true, 2) */
};

/* The DWARF of one crate of the binary. */
struct crate_debuginfo {
	const char *crate; /* "" for compile units of no known crate (C, assembly) */
	enum crate_class crate_class;
	enum debuginfo_level level; /* the best of its compile units; NONE without any */
	uint32_t nr_cus;
	uint32_t nr_fns_without_dwarf; /* its function symbols no compile unit covers */
	bool toolchain;		       /* a compile unit built from the Rust toolchain's
					  sources (std, core, alloc, what std vendors) */
	bool own;		       /* one of the program's own crates (user class, with code) */
};

struct model {
	/* the input */
	const char *path;	    /* what the user named */
	const char *elf_path;	    /* the file actually read */
	const char *debuginfo_path; /* where DWARF came from, NULL if none */
	const char *build_id;	    /* hex, NULL if none */
	bool pie;
	bool has_dwarf;
	bool symbols_only; /* fell back to symbol names: no states, no awaits */
	uint64_t debug_info_size;

	struct future *futures;
	uint32_t nr_futures, cap_futures;
	struct poll_fn *polls;
	uint32_t nr_polls, cap_polls;
	struct await_edge *edges;
	uint32_t nr_edges, cap_edges;
	struct future_vtable *vtables;
	uint32_t nr_vtables, cap_vtables;
	struct task_type *task_types;
	uint32_t nr_task_types, cap_task_types;
	struct wake_fn *wake_fns;
	uint32_t nr_wake_fns, cap_wake_fns;
	/* the poll fns' direct tail-jump targets, sorted by addr */
	struct tail_callee *tail_callees;
	uint32_t nr_tail_callees, cap_tail_callees;
	/* future trees: trees[i] for futures[i], i < nr_trees (0 until built), and slots */
	struct future_tree *trees;
	uint32_t nr_trees;
	struct tree_slot *tree_slots;
	uint32_t nr_tree_slots, cap_tree_slots;
	struct tree_stats tree_stats;
	struct runtime_layout runtimes[TASK_RT_MAX];
	/* core::task: where a poll's Context keeps its waker's data pointer (wake-ups of
	 * executors without a known task header: matched by that pointer) */
	struct {
		bool known;
		uint32_t ctx_waker; /* Context.waker (a &Waker) */
		uint32_t waker_raw; /* Waker.waker (the RawWaker) */
		uint32_t raw_data;  /* RawWaker.data */
	} waker_layout;
	struct task_poll_exit *task_poll_exits;
	uint32_t nr_task_poll_exits, cap_task_poll_exits;
	struct task_poll_summary task_polls[TASK_RT_MAX];
	struct callsite_stats callsites;
	struct model_warning *warnings;
	uint32_t nr_warnings, cap_warnings;

	/* debug info levels: per crate, and the program's own crates' (the lowest of
	 * theirs: what every command can count on); debuginfo_note says what that level
	 * loses and what to rebuild with, NULL at DEBUGINFO_FULL */
	struct crate_debuginfo *crates;
	uint32_t nr_crates, cap_crates;
	enum debuginfo_level own_debuginfo;
	const char *own_crates; /* "tokio_mt" or "a, b, c": the crates at that level */
	const char *debuginfo_note;
	const char *debuginfo_advice; /* the Cargo setting to rebuild with, NULL at full */
	uint32_t nr_unnamed_polls;    /* polls known by a bare `{async_fn#N}` only (line
					 tables: inlined copies have no path) */

	/* walk statistics */
	uint64_t nr_cus, nr_dies, nr_cu_errors;
	uint64_t nr_limits_hit; /* bounds that cut a walk short (depth, count) */
	/* calling conventions of out-of-line polls: read off the code, taken from DWARF,
	 * from the size, unknown; and how often the code overrode the size rule */
	uint32_t nr_abi_code, nr_abi_dwarf, nr_abi_size, nr_abi_unknown, nr_abi_rule_overridden;
	/* rets of every poll fn kept on their own probe, by enum exit_keep (analyze/exit_sites.h)
	 */
	uint32_t exits_kept[MODEL_EXIT_KEEP_MAX];

	struct strpool strings;
};

void model__init(struct model *m);
void model__free(struct model *m);

/* Append helpers: return the new element (zeroed) or NULL on ENOMEM. */
struct future *model__add_future(struct model *m);
struct poll_fn *model__add_poll(struct model *m);
struct await_edge *model__add_edge(struct model *m);
struct future_vtable *model__add_vtable(struct model *m);
struct task_type *model__add_task_type(struct model *m);
struct wake_fn *model__add_wake_fn(struct model *m);
struct crate_debuginfo *model__add_crate(struct model *m);
struct tail_callee *model__add_tail_callee(struct model *m);
/* The tail callee at addr (model.tail_callees is sorted), or NULL. */
const struct tail_callee *model__tail_callee(const struct model *m, uint64_t addr);
struct task_poll_exit *model__add_task_poll_exit(struct model *m);
struct tree_slot *model__add_tree_slot(struct model *m);
void model__warn(struct model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int32_t model__find_future(const struct model *m, const char *path);
/* Does future f have await point k (a Suspend k state)? True for a future without
 * states (nothing to check against). */
bool model__has_await(const struct model *m, uint32_t f, int32_t k);
const char *future_kind__name(enum future_kind k);
const char *state_kind__name(enum state_kind k);
const char *exit_kind__name(enum exit_kind k);
const char *crate_class__name(enum crate_class c);
/* The state of fut whose discriminant is discr, or NULL (a value it does not have). */
const struct future_state *future__state_of(const struct future *fut, uint64_t discr);
/* "none", "line-tables-only", "limited", "full": Cargo's names for the `debug` values */
const char *debuginfo_level__name(enum debuginfo_level l);
const char *task_runtime__name(enum task_runtime r);	 /* "tokio", "async-task", "dyn" */
const char *tree_cond_kind__name(enum tree_cond_kind k); /* "in", "not_in", "no_bits" */
/* The bit of a task header's state word that says the task is cancelled (the
 * runtimes' own constants: tokio's CANCELLED, async-task's CLOSED); 0 for a runtime
 * without a state word. */
uint64_t task_runtime__cancel_bit(enum task_runtime r);
/* The bit that says the task finished: its future is gone (tokio's COMPLETE,
 * async-task's COMPLETED); 0 for a runtime without a state word. */
uint64_t task_runtime__done_bit(enum task_runtime r);
const char *self_location__name(enum self_location l);
const char *ret_convention__name(enum ret_convention c);
const char *abi_source__name(enum abi_source s);
const char *call_kind__name(enum call_kind k);	       /* "direct", "slot", "vtable" */
const char *caller_result__name(enum caller_result r); /* "not_needed", "readable", ... */
/* Name of an x86-64 DWARF register number ("rdi"; 16 is "rip"), or "?" */
const char *dwarf_reg__name(uint16_t dwarf_reg);

/* The last "::" segment of a Rust path outside generic arguments, tuples and arrays:
 * "{async_fn_env#0}<a::B>" for "x::f::{async_fn_env#0}<a::B>". */
const char *rust_path__last_segment(const char *path);

/*
 * Human name of a future: "demo::middle" for demo::middle::{async_fn_env#0},
 * "demo::generic<u32>" for demo::generic::{async_fn_env#0}<u32>; blocks and
 * closures keep their {async_block#N} segment; hand-written futures their type path.
 * Truncates to len; always NUL-terminates.
 */
void future__display_name(const struct future *f, char *buf, size_t len);

/* After futures/polls/edges are filled: link polls, mark roots. Idempotent. */
void model__finish(struct model *m);

#endif
