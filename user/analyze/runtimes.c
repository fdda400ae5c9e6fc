// SPDX-License-Identifier: GPL-2.0
/*
 * The runtimes' task types (runtimes.h, docs/stacks.md): which future every task
 * vtable of tokio 1.x and async-task 4.x stands for, where that vtable is, and where
 * a task's future lies behind its header.
 *
 * A runtime builds one static vtable per task type (tokio: `raw::vtable::<T, S>()`,
 * async-task: `RawTask::<F, T, S>::TASK_VTABLE`). Neither has a symbol or a DWARF
 * variable, but each holds a function that is generic over the future and that the
 * DWARF does describe, with the future as a template parameter: tokio's
 * `runtime::task::raw::poll<T, S>`, async-task's `RawTask<F, T, S>::run`. The vtable
 * is then the word the dynamic loader fills with that function's address (a
 * relocation), minus the function's slot in the vtable. The member offsets come
 * from the runtimes' own types in the DWARF, never from a version table.
 */
#include "analyze/runtimes.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/crate.h"
#include "analyze/demangle.h"
#include "analyze/insn.h"
#include "analyze/target.h"
#include "analyze/block_on.h"
#include "analyze/task_cell.h"
#include "analyze/type_tree.h"

struct rt_fn {
	uint8_t runtime;
	const char *key;     /* "X" of poll<X> / run<X> (model pool) */
	const char *linkage; /* model pool */
	uint64_t addr;
	uint64_t type_die; /* the future's type DIE (this CU's, until resolved) */
	int32_t future;	   /* -1 until resolved */
	uint32_t cu;	   /* the walk's CU counter when seen */
};

struct rt_walk {
	struct rt_fn *fns;
	uint32_t nr, cap;
	uint32_t first_of_cu;
	struct u64_map by_addr;	    /* fn address -> 1 (dedupe) */
	struct u64_map cell_offset; /* interned key -> offset of T in tokio's Cell<T, S> */
	struct u64_map cell_live;   /* interned key -> index in lives + 1 (Stage's Running) */
	struct task_live *lives;
	uint32_t nr_lives, cap_lives;
	uint32_t found[TASK_RT_MAX]; /* FOUND_* bits of the layout members read */
	uint32_t waker_found;	     /* Context, Waker, RawWaker members read (bits) */
	/* the futures some block_on polls: their type DIEs (this CU's), then paths */
	uint64_t *bo_dies;
	const char **bo_paths;
	uint32_t nr_bo, cap_bo, first_bo_of_cu;
};

enum {
	FOUND_HEADER_VTABLE = 1,
	FOUND_VTABLE_FN = 2,
	FOUND_LAYOUT_INFO = 4,
	FOUND_OFFSET_F = 8,
	FOUND_HEADER_STATE = 16,
};

static const char tokio_poll[] = "_ZN5tokio7runtime4task3raw4poll17h";
static const char at_prefix[] = "_ZN10async_task3raw";

static struct rt_walk *rt_of(struct walk *w)
{
	if (!w->rt) {
		w->rt = calloc(1, sizeof(*w->rt));
		if (w->rt) {
			u64_map__init(&w->rt->by_addr);
			u64_map__init(&w->rt->cell_offset);
			u64_map__init(&w->rt->cell_live);
		}
	}
	return w->rt;
}

/* The type of template parameter `name` of die, or of the declaration it completes. */
static bool template_param(Dwarf_Die *die, const char *name, Dwarf_Die *type)
{
	Dwarf_Die cur = *die, child, spec;
	Dwarf_Attribute a;

	for (int hop = 0; hop < 3; hop++) {
		if (dwarf_child(&cur, &child) == 0)
			do {
				const char *n = dwarf_diename(&child);

				if (dwarf_tag(&child) == DW_TAG_template_type_parameter && n &&
				    strcmp(n, name) == 0)
					return die_type(&child, type);
			} while (dwarf_siblingof(&child, &child) == 0);
		if (!dwarf_formref_die(dwarf_attr(&cur, DW_AT_specification, &a), &spec) &&
		    !dwarf_formref_die(dwarf_attr(&cur, DW_AT_abstract_origin, &a), &spec))
			return false;
		cur = spec;
	}
	return false;
}

/*
 * A block_on of any executor (tokio's Runtime/Handle/CurrentThread::block_on,
 * futures' executor::block_on, async-io's and async-std's, pollster's): every type
 * parameter of it is remembered; those that are futures of the model are the roots
 * it polls (runtimes__link): a thread's root task, though no runtime task header
 * holds it.
 */
static int on_block_on(struct rt_walk *rt, Dwarf_Die *die)
{
	Dwarf_Die cur = *die, child, spec, type;
	Dwarf_Attribute a;

	for (int hop = 0; hop < 3; hop++) {
		if (dwarf_child(&cur, &child) == 0)
			do {
				if (dwarf_tag(&child) != DW_TAG_template_type_parameter ||
				    !die_type(&child, &type))
					continue;
				if (rt->nr_bo == rt->cap_bo) {
					uint32_t cap = rt->cap_bo ? rt->cap_bo * 2 : 16;
					uint64_t *n = realloc(rt->bo_dies, cap * sizeof(*n));
					const char **p;

					if (!n)
						return -ENOMEM;
					rt->bo_dies = n;
					if (!(p = realloc(rt->bo_paths, cap * sizeof(*p))))
						return -ENOMEM;
					rt->bo_paths = p;
					rt->cap_bo = cap;
				}
				rt->bo_paths[rt->nr_bo] = NULL;
				rt->bo_dies[rt->nr_bo++] = dwarf_dieoffset(&type);
			} while (dwarf_siblingof(&child, &child) == 0);
		if (!dwarf_formref_die(dwarf_attr(&cur, DW_AT_specification, &a), &spec) &&
		    !dwarf_formref_die(dwarf_attr(&cur, DW_AT_abstract_origin, &a), &spec))
			return 0;
		cur = spec;
	}
	return 0;
}

/* "X" of "name<X>", interned in the model's pool; NULL if not of that shape. */
static const char *generic_args(struct walk *w, const char *name)
{
	const char *open = name ? strchr(name, '<') : NULL;
	const char *close = name ? strrchr(name, '>') : NULL;

	if (!open || !close || close <= open + 1)
		return NULL;
	return strpool__intern_len(&w->m->strings, open + 1, (size_t)(close - open - 1));
}

/* The runtimes' wake functions, by linkage name (their first argument is the header). */
static bool is_wake_fn(const char *ln, uint8_t *runtime, bool *by_ref)
{
	if (starts_with(ln, "_ZN5tokio7runtime4task5waker11wake_by_val17h") ||
	    starts_with(ln, "_ZN5tokio7runtime4task5waker11wake_by_ref17h")) {
		*runtime = TASK_RT_TOKIO;
		*by_ref = strstr(ln, "wake_by_ref") != NULL;
		return true;
	}
	if (starts_with(ln, "_ZN5alloc4task9raw_waker4wake17h") ||
	    starts_with(ln, "_ZN5alloc4task9raw_waker11wake_by_ref17h")) {
		*runtime = TASK_RT_STD_WAKE; /* std's Wake: the data is the Arc<W>'s */
		*by_ref = strstr(ln, "wake_by_ref") != NULL;
		return true;
	}
	if (starts_with(ln, at_prefix) && strstr(ln, "RawTask$LT$") &&
	    (strstr(ln, "$GT$4wake17h") || strstr(ln, "$GT$11wake_by_ref17h"))) {
		*runtime = TASK_RT_ASYNC_TASK;
		*by_ref = strstr(ln, "wake_by_ref") != NULL;
		return true;
	}
	return false;
}

static int add_wake_fn(struct walk *w, const char *ln, uint64_t addr, uint64_t size,
		       uint8_t runtime, bool by_ref)
{
	struct wake_fn *f;

	for (uint32_t i = 0; i < w->m->nr_wake_fns; i++)
		if (w->m->wake_fns[i].addr == addr)
			return 0;
	if (!(f = model__add_wake_fn(w->m)))
		return -ENOMEM;
	f->runtime = runtime;
	f->by_ref = by_ref;
	f->addr = addr;
	f->size = size;
	f->name = strpool__intern(&w->m->strings, ln);
	if (target__file_offset(w->t, addr, &f->file_offset))
		f->file_offset = 0;
	return f->name ? 0 : -ENOMEM;
}

int runtimes__on_function(struct walk *w, Dwarf_Die *die, uint64_t addr, uint64_t size)
{
	const char *ln = die_linkage_name(die), *param;
	uint8_t runtime;
	bool by_ref;
	struct rt_walk *rt;
	Dwarf_Die type;

	if (!ln) /* line tables only: no linkage name in DWARF, the symbol has it */
		ln = walk__symbol_at(w, addr);
	if (!ln || ln[0] != '_')
		return 0;
	if (is_wake_fn(ln, &runtime, &by_ref))
		return add_wake_fn(w, ln, addr, size, runtime, by_ref);
	if (strstr(ln, "8block_on")) /* legacy and v0 manglings spell the segment so */
		return (rt = rt_of(w)) ? on_block_on(rt, die) : -ENOMEM;
	if (starts_with(ln, tokio_poll)) {
		runtime = TASK_RT_TOKIO;
		param = "T";
	} else if (starts_with(ln, at_prefix) && strstr(ln, "RawTask$LT$") &&
		   strstr(ln, "$GT$3run17h")) {
		runtime = TASK_RT_ASYNC_TASK;
		param = "F";
	} else {
		return 0;
	}
	if (!(rt = rt_of(w)))
		return -ENOMEM;
	if (u64_map__get(&rt->by_addr, addr, NULL) || !template_param(die, param, &type))
		return 0;
	if (rt->nr == rt->cap) {
		uint32_t cap = rt->cap ? rt->cap * 2 : 32;
		struct rt_fn *n = realloc(rt->fns, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		rt->fns = n;
		rt->cap = cap;
	}
	rt->fns[rt->nr] = (struct rt_fn){
	    .runtime = runtime,
	    .key = generic_args(w, die_name(die)),
	    .linkage = strpool__intern(&w->m->strings, ln),
	    .addr = addr,
	    .type_die = dwarf_dieoffset(&type),
	    .future = -1,
	};
	if (!rt->fns[rt->nr].linkage || u64_map__set(&rt->by_addr, addr, 1))
		return -ENOMEM;
	rt->nr++;
	return 0;
}

static bool member_named(Dwarf_Die *st, const char *name, uint64_t *off)
{
	Dwarf_Die child;

	if (dwarf_child(st, &child) != 0)
		return false;
	do {
		const char *n = dwarf_diename(&child);

		if (dwarf_tag(&child) == DW_TAG_member && n && strcmp(n, name) == 0)
			return member_offset(&child, off);
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

static void layout_member(struct rt_walk *rt, enum task_runtime r, Dwarf_Die *st, const char *name,
			  uint32_t bit, uint32_t *dst)
{
	uint64_t off;

	if (!(rt->found[r] & bit) && member_named(st, name, &off) && off < 4096) {
		*dst = (uint32_t)off;
		rt->found[r] |= bit;
	}
}

/*
 * Where a member of type `want` lies inside the struct st (through nested structs,
 * unions and enum variants, never through a pointer), depth-first.
 */
static bool find_member_of_type(Dwarf_Die *st, uint64_t want, uint64_t base, int depth,
				uint64_t *off)
{
	Dwarf_Die child;

	if (depth > 8 || dwarf_child(st, &child) != 0)
		return false;
	do {
		int tag = dwarf_tag(&child);
		Dwarf_Die type;
		uint64_t o = 0;

		if (tag == DW_TAG_variant_part || tag == DW_TAG_variant) {
			if (find_member_of_type(&child, want, base, depth + 1, off))
				return true;
			continue;
		}
		if (tag != DW_TAG_member || !die_type(&child, &type))
			continue;
		if (!member_offset(&child, &o))
			o = 0; /* a union's members */
		if (dwarf_dieoffset(&type) == want) {
			*off = base + o;
			return true;
		}
		tag = dwarf_tag(&type);
		if ((tag == DW_TAG_structure_type || tag == DW_TAG_union_type) &&
		    find_member_of_type(&type, want, base + o, depth + 1, off))
			return true;
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* Cell<T, S>'s conditions (task_cell.c), kept under key; 0 or -ENOMEM. */
static int cell_live(struct walk *w, struct rt_walk *rt, const char *key, Dwarf_Die *cell,
		     Dwarf_Die *t)
{
	struct task_live live;
	int r = task_cell__read(w, cell, t, &live);

	if (r <= 0)
		return r;
	if (rt->nr_lives == rt->cap_lives) {
		uint32_t cap = rt->cap_lives ? rt->cap_lives * 2 : 16;
		struct task_live *n = realloc(rt->lives, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		rt->lives = n;
		rt->cap_lives = cap;
	}
	rt->lives[rt->nr_lives++] = live;
	return u64_map__set(&rt->cell_live, (uintptr_t)key, rt->nr_lives);
}

int runtimes__on_struct(struct walk *w, Dwarf_Die *die, const char *path, const char *name)
{
	struct rt_walk *rt;
	struct runtime_layout *tk = &w->m->runtimes[TASK_RT_TOKIO];
	struct runtime_layout *at = &w->m->runtimes[TASK_RT_ASYNC_TASK];

	if (strcmp(path, "core::task::wake") == 0) {
		uint64_t off;
		const char *member = !strcmp(name, "Context")	 ? "waker"
				     : !strcmp(name, "Waker")	 ? "waker"
				     : !strcmp(name, "RawWaker") ? "data"
								 : NULL;
		uint32_t *dst = !strcmp(name, "Context") ? &w->m->waker_layout.ctx_waker
				: !strcmp(name, "Waker") ? &w->m->waker_layout.waker_raw
							 : &w->m->waker_layout.raw_data;
		if (!(rt = rt_of(w)))
			return -ENOMEM;
		if (member && member_named(die, member, &off) && off < 4096) {
			*dst = (uint32_t)off;
			rt->waker_found |= !strcmp(name, "Context") ? 1
					   : !strcmp(name, "Waker") ? 2
								    : 4;
		}
		return 0;
	}
	if (!starts_with(path, "tokio::runtime::task") && !starts_with(path, "async_task::"))
		return 0;
	if (!(rt = rt_of(w)))
		return -ENOMEM;
	if (strcmp(path, "tokio::runtime::task::core") == 0) {
		if (strcmp(name, "Header") == 0) {
			layout_member(rt, TASK_RT_TOKIO, die, "vtable", FOUND_HEADER_VTABLE,
				      &tk->header_vtable);
			layout_member(rt, TASK_RT_TOKIO, die, "state", FOUND_HEADER_STATE,
				      &tk->header_state);
		}
		if (starts_with(name, "Cell<")) {
			const char *key = generic_args(w, name);
			Dwarf_Die t;
			uint64_t off;

			if (key && !u64_map__get(&rt->cell_offset, (uintptr_t)key, NULL) &&
			    template_param(die, "T", &t) &&
			    find_member_of_type(die, dwarf_dieoffset(&t), 0, 0, &off)) {
				if (u64_map__set(&rt->cell_offset, (uintptr_t)key, off) ||
				    cell_live(w, rt, key, die, &t))
					return -ENOMEM;
			}
		}
	} else if (strcmp(path, "tokio::runtime::task::raw") == 0 && strcmp(name, "Vtable") == 0) {
		layout_member(rt, TASK_RT_TOKIO, die, "poll", FOUND_VTABLE_FN, &tk->vtable_fn);
	} else if (strcmp(path, "async_task::header") == 0 && starts_with(name, "Header")) {
		layout_member(rt, TASK_RT_ASYNC_TASK, die, "vtable", FOUND_HEADER_VTABLE,
			      &at->header_vtable);
		layout_member(rt, TASK_RT_ASYNC_TASK, die, "state", FOUND_HEADER_STATE,
			      &at->header_state);
	} else if (strcmp(path, "async_task::raw") == 0 && strcmp(name, "TaskVTable") == 0) {
		layout_member(rt, TASK_RT_ASYNC_TASK, die, "run", FOUND_VTABLE_FN, &at->vtable_fn);
		layout_member(rt, TASK_RT_ASYNC_TASK, die, "layout_info", FOUND_LAYOUT_INFO,
			      &at->layout_info);
	} else if (strcmp(path, "async_task::raw") == 0 && strcmp(name, "TaskLayout") == 0) {
		layout_member(rt, TASK_RT_ASYNC_TASK, die, "offset_f", FOUND_OFFSET_F,
			      &at->layout_offset_f);
	}
	return 0;
}

int runtimes__end_cu(struct walk *w)
{
	struct rt_walk *rt = w->rt;

	if (!rt)
		return 0;
	for (uint32_t i = rt->first_bo_of_cu; i < rt->nr_bo; i++) {
		const char *path = walk__type_path(w, rt->bo_dies[i]); /* this CU's pool */

		if (path && !(rt->bo_paths[i] = strpool__intern(&w->m->strings, path)))
			return -ENOMEM;
	}
	rt->first_bo_of_cu = rt->nr_bo;
	for (uint32_t i = rt->first_of_cu; i < rt->nr; i++) {
		struct rt_fn *f = &rt->fns[i];
		const char *path = walk__type_path(w, f->type_die);
		Dwarf_Die type;
		bool is_env;

		if (!path)
			continue; /* not a named type: no future to report */
		enum future_kind kind = future_kind__from_name(path, &is_env);
		uint64_t size = dwarf_offdie(w->dw, f->type_die, &type) ? die_bytesize(&type) : 0;
		f->future = walk__get_future(w, path, kind, f->type_die, size);
		if (f->future < 0)
			return -ENOMEM;
	}
	rt->first_of_cu = rt->nr;
	return 0;
}

struct link_ctx {
	struct target *t;
	struct model *m;
	struct rt_walk *rt;
	struct u64_map fn_by_addr; /* fn address -> index in rt->fns */
	struct u64_map typed;	   /* rt->fns index -> 1 once it has a task type */
};

static int add_type(struct link_ctx *c, const struct rt_fn *f, uint64_t vtable)
{
	struct task_type *t = model__add_task_type(c->m);
	int32_t inner = runtime__boxed_future(c->m, f->future);
	uint64_t off;

	if (!t)
		return -ENOMEM;
	t->runtime = f->runtime;
	t->future = inner >= 0 ? inner : f->future;
	t->boxed = inner >= 0;
	t->fn = f->linkage;
	t->fn_addr = f->addr;
	t->vtable = vtable;
	t->nr_vtables = vtable ? 1 : 0;
	if (f->runtime == TASK_RT_TOKIO && f->key &&
	    u64_map__get(&c->rt->cell_offset, (uintptr_t)f->key, &off))
		t->future_offset = off;
	if (f->runtime == TASK_RT_TOKIO && f->key &&
	    u64_map__get(&c->rt->cell_live, (uintptr_t)f->key, &off) && off) {
		const struct task_live *l = &c->rt->lives[off - 1];

		t->nr_live_conds = l->nr;
		memcpy(t->live_conds, l->conds, sizeof(t->live_conds));
		t->live_cut = l->cut;
		t->nr_finished_conds = l->nr_finished;
		memcpy(t->finished_conds, l->finished, sizeof(t->finished_conds));
		t->nr_cancelled_conds = l->nr_cancelled;
		memcpy(t->cancelled_conds, l->cancelled, sizeof(t->cancelled_conds));
	}
	/* async-task keeps the future's offset in the vtable's layout_info, a static
	 * TaskLayout: read it from the file (the pointer through its relocation) */
	const struct runtime_layout *l = &c->m->runtimes[TASK_RT_ASYNC_TASK];
	uint64_t info;
	const uint8_t *b;
	if (f->runtime == TASK_RT_ASYNC_TASK && vtable && l->known &&
	    !target__pointer(c->t, vtable + l->layout_info, &info) && info &&
	    !target__data(c->t, info + l->layout_offset_f, 8, &b)) {
		memcpy(&off, b, 8);
		if (off >= 8 && off < (1u << 20))
			t->future_offset = off;
	}
	/* async-task keeps no tag beside the future (its output takes the future's
	 * place): the future is there while the header's state has neither COMPLETED nor
	 * CLOSED, read from the future's address back to the header's state word. A run
	 * that ends a detached task frees it: its word is then the allocator's (glibc
	 * puts its free-list pointer there), which no live task's is: 0 (no reference,
	 * no handle: it would have been freed) or a count of references past 2^24 */
	if (f->runtime == TASK_RT_ASYNC_TASK && l->known && t->future_offset != FUTURE_NO_OFFSET) {
		t->nr_live_conds = 1;
		t->live_conds[0] = (struct task_live_cond){
		    .offset = (int64_t)l->header_state - (int64_t)t->future_offset,
		    .kind = TREE_COND_NO_BITS,
		    .size = 8,
		    /* a run that ends with either has dropped the future */
		    .lo = task_runtime__done_bit(TASK_RT_ASYNC_TASK) |
			  task_runtime__cancel_bit(TASK_RT_ASYNC_TASK),
		    .hi = (1ull << 32) - 1, /* references from bit 8: fewer than 2^24 */
		};
	}
	return 0;
}

static int on_vtable_word(void *ctx, uint64_t at, uint64_t value)
{
	struct link_ctx *c = ctx;
	uint64_t i;

	if (!u64_map__get(&c->fn_by_addr, value, &i))
		return 0;
	const struct rt_fn *f = &c->rt->fns[i];
	const struct runtime_layout *l = &c->m->runtimes[f->runtime];

	if (at < l->vtable_fn)
		return 0;
	if (u64_map__set(&c->typed, i, 1))
		return -ENOMEM;
	return add_type(c, f, at - l->vtable_fn);
}

int runtimes__link(struct walk *w)
{
	struct rt_walk *rt = w->rt;
	struct link_ctx c = {.t = w->t, .m = w->m, .rt = rt};
	int r = 0;

	if (!rt)
		return 0;
	for (int k = 0; k < TASK_RT_MAX; k++) {
		uint32_t need = FOUND_HEADER_VTABLE | FOUND_VTABLE_FN | FOUND_HEADER_STATE;

		if (k == TASK_RT_ASYNC_TASK)
			need |= FOUND_LAYOUT_INFO | FOUND_OFFSET_F;
		w->m->runtimes[k].known =
		    k != TASK_RT_DYN && k != TASK_RT_STD_WAKE && (rt->found[k] & need) == need;
		if (!w->m->runtimes[k].known)
			w->m->runtimes[k].assumed = false;
	}
	w->m->waker_layout.known = rt->waker_found == 7;
	w->m->runtimes[TASK_RT_STD_WAKE].known = w->m->waker_layout.known;
	u64_map__init(&c.fn_by_addr);
	u64_map__init(&c.typed);
	for (uint32_t i = 0; i < rt->nr; i++)
		if (rt->fns[i].future >= 0 && w->m->runtimes[rt->fns[i].runtime].known &&
		    u64_map__set(&c.fn_by_addr, rt->fns[i].addr, i)) {
			r = -ENOMEM;
			goto out;
		}
	if ((r = target__words_holding(w->t, &c.fn_by_addr, on_vtable_word, &c)))
		goto out;
	block_on__mark_roots(w->m, rt->bo_paths, rt->nr_bo);
	/* the ones without a vtable are kept too: `analyze` says so */
	for (uint32_t i = 0; i < rt->nr; i++)
		if (rt->fns[i].future >= 0 && !u64_map__get(&c.typed, i, NULL) &&
		    (r = add_type(&c, &rt->fns[i], 0)))
			goto out;
out:
	u64_map__free(&c.fn_by_addr);
	u64_map__free(&c.typed);
	return r;
}

/*
 * Without DWARF for the runtime (none, or no types: line tables, limited; see
 * debuginfo.h): tokio's task types, and every runtime's wake functions, by their
 * symbols. Every
 * `tokio::runtime::task::raw::poll` symbol is one task type's; the future it polls
 * is the first poll fn its calls reach (breadth first through direct calls, past
 * `Pin<P>` and `&mut F`: the harness, the core and the stage closure lie between).
 * The header layout cannot be read: tokio 1.x's (state at 0, vtable at 16, poll
 * first in the vtable) is taken and said so; the future's offset in the cell stays
 * unknown, so such tasks are listed by type, without a stack.
 */
#define SYM_BFS_MAX   4096
#define SYM_BFS_DEPTH 12

/* A poll fn that is not the task's future: a pointer wrapper's, or a closure of the
 * runtime or std (symbols cannot tell a closure from an async fn; the runtime's own
 * harness closures lie on the way, a program's async fns do not). */
static bool not_the_future(const char *name)
{
	char crate[256];
	size_t n = strlen(name);

	if (starts_with(name, "<core::pin::Pin<") || starts_with(name, "<&mut ") ||
	    starts_with(name, "<alloc::boxed::Box<"))
		return true;
	if (n < 13 || strcmp(name + n - 13, "::{{closure}}") != 0)
		return false;
	rust_path__crate(name, crate, sizeof(crate));
	return crate__classify(crate) == CRATE_STD || crate__classify(crate) == CRATE_RUNTIME;
}

static int32_t polled_future(struct walk *w, const struct u64_map *sizes, uint64_t start)
{
	uint64_t queue[SYM_BFS_MAX], depth[SYM_BFS_MAX], size, pidx;
	struct u64_map seen;
	uint32_t head = 0, tail = 0;
	int32_t found = -1;

	u64_map__init(&seen);
	queue[tail] = start;
	depth[tail++] = 0;
	if (u64_map__set(&seen, start, 1))
		goto out;
	while (head < tail && found < 0) {
		uint64_t fn = queue[head], d = depth[head++];
		const uint8_t *code;
		struct insn_seq seq = {0};
		char err[128];

		if (fn != start && u64_map__get(&w->poll_by_addr, fn, &pidx)) {
			const struct poll_fn *p = &w->m->polls[pidx];

			if (!not_the_future(p->name)) {
				const char *path =
				    p->future >= 0 ? w->m->futures[p->future].path : p->name;
				bool env;

				found = p->future >= 0
					    ? p->future
					    : walk__get_future(w, path,
							       future_kind__from_name(path, &env),
							       0, 0);
				goto out;
			}
		}
		if (d >= SYM_BFS_DEPTH || !u64_map__get(sizes, fn, &size) ||
		    target__code(w->t, fn, size, &code) ||
		    insn__decode(code, size, fn, &seq, err, sizeof(err)))
			continue;
		for (uint32_t i = 0; i < seq.nr && tail < SYM_BFS_MAX; i++) {
			const struct insn *in = &seq.insns[i];
			uint64_t to = 0;

			if ((in->flow == INSN_FLOW_CALL || in->flow == INSN_FLOW_JMP) && in->target)
				to = in->target;
			/* a function whose address is taken (`lea f(%rip)`): catch_unwind
			 * calls the harness's closure through a pointer */
			for (uint8_t k = 0; !to && k < in->nr_ops; k++)
				if (in->ops[k].type == INSN_OP_MEM &&
				    in->ops[k].base == DWARF_REG_RIP && in->ops[k].index < 0 &&
				    u64_map__get(sizes,
						 in->addr + in->size + (uint64_t)in->ops[k].value,
						 NULL))
					to = in->addr + in->size + (uint64_t)in->ops[k].value;
			if (!to || (to >= fn && to < fn + size) || u64_map__get(&seen, to, NULL))
				continue;
			if (u64_map__set(&seen, to, 1))
				break;
			queue[tail] = to;
			depth[tail++] = d + 1;
		}
		insn_seq__free(&seq);
	}
	/* its future's poll was inlined into the harness: the type cannot be named */
	found = walk__get_future(w, "tokio task (no DWARF types, its poll inlined: type unknown)",
				 FUTURE_HANDWRITTEN, 0, 0);
out:
	u64_map__free(&seen);
	return found;
}

int runtimes__link_symbols(struct walk *w)
{
	int n = dwfl_module_getsymtab(w->t->module);
	struct u64_map sizes;
	struct rt_walk *rt = rt_of(w);
	int r = 0;

	if (!rt || n <= 0)
		return rt ? 0 : -ENOMEM;
	u64_map__init(&sizes);
	for (int i = 1; i < n && !r; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name =
		    dwfl_module_getsym_info(w->t->module, i, &sym, &addr, NULL, NULL, NULL);

		if (!name || GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_size ||
		    sym.st_shndx == SHN_UNDEF)
			continue;
		addr -= w->t->bias;
		if (u64_map__set(&sizes, addr, sym.st_size)) {
			r = -ENOMEM;
			break;
		}
		uint8_t wake_rt;
		bool by_ref;
		if (is_wake_fn(name, &wake_rt, &by_ref)) {
			r = add_wake_fn(w, name, addr, sym.st_size, wake_rt, by_ref);
			continue;
		}
		if (!starts_with(name, tokio_poll) || u64_map__get(&rt->by_addr, addr, NULL))
			continue;
		if (rt->nr == rt->cap) {
			uint32_t cap = rt->cap ? rt->cap * 2 : 32;
			struct rt_fn *nf = realloc(rt->fns, cap * sizeof(*nf));

			if (!nf) {
				r = -ENOMEM;
				break;
			}
			rt->fns = nf;
			rt->cap = cap;
		}
		rt->fns[rt->nr] = (struct rt_fn){.runtime = TASK_RT_TOKIO,
						 .linkage = strpool__intern(&w->m->strings, name),
						 .addr = addr,
						 .future = -1};
		if (!rt->fns[rt->nr].linkage || u64_map__set(&rt->by_addr, addr, 1))
			r = -ENOMEM;
		else
			rt->nr++;
	}
	for (uint32_t i = 0; i < rt->nr && !r; i++) {
		rt->fns[i].future = polled_future(w, &sizes, rt->fns[i].addr);
		if (rt->fns[i].future == -ENOMEM)
			r = -ENOMEM;
	}
	u64_map__free(&sizes);
	if (r || !rt->nr)
		return r;
	w->m->runtimes[TASK_RT_TOKIO] = (struct runtime_layout){
	    .assumed = true, .header_state = 0, .header_vtable = 16, .vtable_fn = 0};
	rt->found[TASK_RT_TOKIO] = FOUND_HEADER_STATE | FOUND_HEADER_VTABLE | FOUND_VTABLE_FN;
	return 0;
}

bool runtimes__found(const struct walk *w)
{
	return w->rt && w->rt->nr;
}

void runtimes__free(struct walk *w)
{
	if (!w->rt)
		return;
	free(w->rt->fns);
	free(w->rt->bo_dies);
	free(w->rt->bo_paths);
	u64_map__free(&w->rt->by_addr);
	u64_map__free(&w->rt->cell_offset);
	u64_map__free(&w->rt->cell_live);
	free(w->rt->lives);
	free(w->rt);
	w->rt = NULL;
}
