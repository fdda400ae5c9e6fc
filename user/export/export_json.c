// SPDX-License-Identifier: GPL-2.0
/*
 * The analyzer's model as JSON (docs/json-schema.md).
 *
 * Streamed by hand: a binary can hold tens of thousands of futures and polls, and a
 * cJSON tree of all of them would cost far more memory than the model itself. Every
 * string comes from a hostile binary, so the escaper guarantees valid JSON (RFC 8259)
 * whatever the bytes: control characters are escaped, bytes that are not well-formed
 * UTF-8 become U+FFFD.
 */
#include "export/export.h"
#include "export/export_json_parts.h"
#include "export/json_writer.h"
#include "lib/text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void jw_future_ref(struct json_writer *w, const char *key, const struct model *m,
			  int32_t index)
{
	if (index >= 0 && (uint32_t)index < m->nr_futures)
		jw_u64(w, key, (uint64_t)index);
	else
		jw_null(w, key);
}

/*
 * Which polls belong to each future, as compressed rows: the polls of future f are
 * poll_ids[first[f] .. first[f + 1]), in poll order.
 */
struct polls_by_future {
	uint32_t *first; /* nr_futures + 1 */
	uint32_t *poll_ids;
};

static int polls_by_future__build(struct polls_by_future *idx, const struct model *m)
{
	uint32_t *fill;

	idx->first = calloc((size_t)m->nr_futures + 1, sizeof(*idx->first));
	idx->poll_ids = calloc(m->nr_polls ? m->nr_polls : 1, sizeof(*idx->poll_ids));
	fill = calloc(m->nr_futures ? m->nr_futures : 1, sizeof(*fill));
	if (!idx->first || !idx->poll_ids || !fill) {
		free(fill);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < m->nr_polls; i++) {
		int32_t f = m->polls[i].future;
		if (f >= 0 && (uint32_t)f < m->nr_futures)
			idx->first[f + 1]++;
	}
	for (uint32_t f = 0; f < m->nr_futures; f++)
		idx->first[f + 1] += idx->first[f];
	for (uint32_t i = 0; i < m->nr_polls; i++) {
		int32_t f = m->polls[i].future;
		if (f >= 0 && (uint32_t)f < m->nr_futures)
			idx->poll_ids[idx->first[f] + fill[f]++] = i;
	}
	free(fill);
	return 0;
}

static void polls_by_future__free(struct polls_by_future *idx)
{
	free(idx->first);
	free(idx->poll_ids);
}

static void write_binary(struct json_writer *w, const struct model *m)
{
	jw_object(w, "binary");
	jw_string(w, "path", m->path);
	jw_string(w, "elf_path", m->elf_path);
	jw_string(w, "debuginfo_path", m->debuginfo_path);
	jw_string(w, "build_id", m->build_id);
	jw_bool(w, "pie", m->pie);
	jw_bool(w, "has_dwarf", m->has_dwarf);
	jw_bool(w, "symbols_only", m->symbols_only);
	jw_u64(w, "debug_info_size", m->debug_info_size);
	jw_object_end(w);
}

/* docs/json-schema.md, "debuginfo": the debug info level per crate and the program's. */
static void write_debuginfo(struct json_writer *w, const struct model *m)
{
	jw_object(w, "debuginfo");
	jw_string(w, "level", debuginfo_level__name(m->own_debuginfo));
	jw_string(w, "own_crates", m->own_crates ? m->own_crates : "");
	jw_u64(w, "unnamed_polls", m->nr_unnamed_polls);
	jw_string(w, "note", m->debuginfo_note);
	jw_string(w, "advice", m->debuginfo_advice);
	jw_array(w, "crates");
	for (uint32_t i = 0; i < m->nr_crates; i++) {
		const struct crate_debuginfo *c = &m->crates[i];
		jw_object(w, NULL);
		jw_string(w, "crate", c->crate);
		jw_string(w, "class", crate_class__name(c->crate_class));
		jw_bool(w, "own", c->own);
		jw_string(w, "level", debuginfo_level__name(c->level));
		jw_u64(w, "compile_units", c->nr_cus);
		jw_u64(w, "fns_without_dwarf", c->nr_fns_without_dwarf);
		jw_bool(w, "toolchain", c->toolchain);
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_object_end(w);
}

static void write_entry(struct json_writer *w, const struct entry_site *e)
{
	if (!e->valid) {
		jw_null(w, "entry");
		return;
	}
	/* insn is a fixed buffer filled by the disassembler: never trust its NUL */
	char insn[sizeof(e->insn) + 1];
	memcpy(insn, e->insn, sizeof(e->insn));
	insn[sizeof(e->insn)] = '\0';

	jw_object(w, "entry");
	jw_u64(w, "addr", e->addr);
	jw_u64(w, "file_offset", e->file_offset);
	jw_bool(w, "emulated", e->emulated);
	jw_string(w, "insn", insn);
	jw_i64(w, "sp_delta", e->sp_delta);
	jw_object(w, "self");
	jw_string(w, "kind", self_location__name(e->self_kind));
	if (e->self_kind == SELF_LOC_REG)
		jw_string(w, "reg", dwarf_reg__name(e->self_reg));
	else
		jw_null(w, "reg");
	if (e->self_kind == SELF_LOC_STACK)
		jw_i64(w, "sp_offset", e->self_sp_offset);
	else
		jw_null(w, "sp_offset");
	jw_object_end(w);
	jw_object_end(w);
}

/* futures[].tree: the future's node of the future-tree table and its slots */
static void write_future(struct json_writer *w, const struct model *m, uint32_t id,
			 const struct polls_by_future *idx)
{
	const struct future *f = &m->futures[id];
	char name[1024];

	future__display_name(f, name, sizeof(name));
	jw_object(w, NULL);
	jw_u64(w, "id", id);
	jw_string(w, "path", f->path);
	jw_string(w, "name", name);
	jw_string(w, "crate", f->crate);
	jw_string(w, "crate_class", crate_class__name(f->crate_class));
	jw_string(w, "kind", future_kind__name(f->kind));
	jw_u64(w, "die_offset", f->die_offset);
	jw_u64(w, "size", f->size);
	if (f->has_state) {
		jw_object(w, "state");
		jw_u64(w, "offset", f->state_offset);
		jw_u64(w, "size", f->state_size);
		jw_object_end(w);
	} else {
		jw_null(w, "state");
	}

	jw_array(w, "states");
	for (uint32_t i = 0; f->states && i < f->nr_states; i++) {
		const struct future_state *s = &f->states[i];
		jw_object(w, NULL);
		jw_u64(w, "discr", s->discr);
		jw_string(w, "kind", state_kind__name(s->kind));
		if (s->kind == STATE_SUSPEND)
			jw_u64(w, "index", s->suspend_index);
		jw_string(w, "name", s->name);
		jw_string(w, "file", s->file);
		jw_u64(w, "line", s->line);
		jw_string(w, "awaitee", s->awaitee_type);
		if (s->awaitee_offset != FUTURE_NO_OFFSET) {
			jw_u64(w, "awaitee_offset", s->awaitee_offset);
			jw_u64(w, "awaitee_size", s->awaitee_size);
		} else {
			jw_null(w, "awaitee_offset");
			jw_null(w, "awaitee_size");
		}
		jw_array(w, "holds");
		for (uint32_t k = 0; k < s->nr_held; k++) {
			const struct held_guard *g = &s->held[k];

			jw_object(w, NULL);
			jw_string(w, "name", g->name);
			jw_string(w, "type", g->type);
			jw_u64(w, "offset", g->offset);
			if (g->resource)
				jw_string(w, "resource", g->resource);
			else
				jw_null(w, "resource");
			jw_string(w, "lock", guard_lock__name(g->lock));
			jw_bool(w, "provable", g->provable);
			jw_bool(w, "all_permits", g->all_permits);
			jw_string(w, "family", lock_family__name(g->family));
			if (g->family != LOCK_NONE || g->lock == GUARD_SENDER) {
				json__write_steps(w, g->steps, g->nr_steps);
				jw_u64(w, "resource_back", g->resource_back);
				jw_u64(w, "state_offset", g->state_offset);
			} else {
				jw_null(w, "steps");
				jw_null(w, "resource_back");
				jw_null(w, "state_offset");
			}
			if (g->has_strong) /* signed: the count lies before the key */
				jw_i64(w, "strong_offset", (int64_t)g->strong);
			else
				jw_null(w, "strong_offset");
			jw_object_end(w);
		}
		jw_array_end(w);
		jw_object_end(w);
	}
	jw_array_end(w);

	if (f->wait) {
		const struct future_wait *fw = f->wait;

		jw_object(w, "wait");
		jw_string(w, "what", wait_kind__name(fw->kind));
		jw_string(w, "family", lock_family__name(fw->family));
		json__write_steps(w, fw->steps, fw->nr_steps);
		if (fw->type)
			jw_string(w, "type", fw->type);
		else
			jw_null(w, "type");
		if (fw->kind == WAIT_LOCK && fw->queued != FUTURE_NO_OFFSET)
			jw_u64(w, "queued_offset", fw->queued);
		else
			jw_null(w, "queued_offset");
		if (fw->kind == WAIT_LOCK)
			jw_u64(w, "state_offset", fw->state);
		else
			jw_null(w, "state_offset");
		jw_bool(w, "names_only", fw->names_only);
		jw_bool(w, "over_inner", fw->over_inner);
		jw_bool(w, "receives", fw->receives);
		if (fw->has_total)
			jw_u64(w, "total_offset", fw->total);
		else
			jw_null(w, "total_offset");
		if (fw->kind == WAIT_LOCK && fw->asked != FUTURE_NO_OFFSET) {
			jw_u64(w, "asked_offset", fw->asked);
			jw_u64(w, "left_offset", fw->left);
		} else {
			jw_null(w, "asked_offset");
			jw_null(w, "left_offset");
		}
		jw_object_end(w);
	} else {
		jw_null(w, "wait");
	}
	jw_string(w, "file", f->file);
	jw_u64(w, "line", f->line);
	if (f->drop_symbol) {
		jw_object(w, "drop_in_place");
		jw_string(w, "symbol", f->drop_symbol);
		jw_u64(w, "addr", f->drop_addr);
		jw_u64(w, "file_offset", f->drop_file_offset);
		write_entry(w, &f->drop_entry);
		jw_bool(w, "first_insn_emulated", f->drop_entry.first_emulated);
		jw_object_end(w);
	} else {
		jw_null(w, "drop_in_place");
	}
	if (f->poll >= 0 && (uint32_t)f->poll < m->nr_polls)
		jw_u64(w, "poll", (uint64_t)f->poll);
	else
		jw_null(w, "poll");
	jw_array(w, "polls");
	for (uint32_t k = idx->first[id]; k < idx->first[id + 1]; k++)
		jw_u64(w, NULL, idx->poll_ids[k]);
	jw_array_end(w);
	jw_bool(w, "inlined_only", f->inlined_only);
	jw_bool(w, "root", f->is_root);
	jw_bool(w, "block_on_root", f->block_on_root);
	jw_future_ref(w, "folded_into", m, f->folded_into);
	json__write_tree(w, m, id);
	jw_object_end(w);
}

static void write_vtable(struct json_writer *w, const struct model *m, uint32_t id)
{
	const struct future_vtable *v = &m->vtables[id];

	jw_object(w, NULL);
	jw_string(w, "type", v->type);
	jw_future_ref(w, "future", m, v->future);
	jw_u64(w, "addr", v->addr);
	jw_u64(w, "drop", v->drop);
	jw_u64(w, "size", v->size);
	jw_u64(w, "align", v->align);
	jw_u64(w, "poll", v->poll);
	if (v->poll_fn >= 0)
		jw_u64(w, "poll_fn", (uint64_t)v->poll_fn);
	else
		jw_null(w, "poll_fn");
	jw_object_end(w);
}

static void write_runtimes(struct json_writer *w, const struct model *m)
{
	jw_object(w, "runtimes");
	for (int k = TASK_RT_TOKIO; k < TASK_RT_MAX; k++) {
		const struct runtime_layout *l = &m->runtimes[k];

		if (!l->known) {
			jw_null(w, task_runtime__name(k));
			continue;
		}
		jw_object(w, task_runtime__name(k));
		if (k == TASK_RT_STD_WAKE) { /* no header: the Context's waker */
			jw_u64(w, "ctx_waker", m->waker_layout.ctx_waker);
			jw_u64(w, "waker_raw", m->waker_layout.waker_raw);
			jw_u64(w, "raw_data", m->waker_layout.raw_data);
			jw_object_end(w);
			continue;
		}
		jw_u64(w, "header_state", l->header_state);
		jw_u64(w, "header_vtable", l->header_vtable);
		jw_u64(w, "vtable_fn", l->vtable_fn);
		if (k == TASK_RT_ASYNC_TASK) {
			jw_u64(w, "layout_info", l->layout_info);
			jw_u64(w, "layout_offset_f", l->layout_offset_f);
		}
		jw_object_end(w);
	}
	jw_object_end(w);
}

static void write_return(struct json_writer *w, const struct poll_layout *r)
{
	if (!r->known) {
		jw_null(w, "return");
		return;
	}
	jw_object(w, "return");
	jw_u64(w, "size", r->size);
	jw_u64(w, "discr_offset", r->discr_offset);
	jw_u64(w, "discr_size", r->discr_size);
	if (r->pending_has_value)
		jw_u64(w, "pending_value", r->pending_value);
	else
		jw_null(w, "pending_value");
	if (r->ready_has_value)
		jw_u64(w, "ready_value", r->ready_value);
	else
		jw_null(w, "ready_value");
	if (r->convention == RET_CONV_UNKNOWN)
		jw_null(w, "in_memory");
	else
		jw_bool(w, "in_memory", r->in_memory);
	jw_object_end(w);
}

static void jw_reg_or_null(struct json_writer *w, const char *key, int reg)
{
	if (reg >= 0)
		jw_string(w, key, dwarf_reg__name((uint16_t)reg));
	else
		jw_null(w, key);
}

/* How self and the result were located, with the code's evidence. */
static void write_abi(struct json_writer *w, const struct poll_fn *p)
{
	const struct poll_abi *a = &p->abi;

	jw_object(w, "abi");
	jw_string(w, "source", abi_source__name(a->source));
	jw_string(w, "convention", ret_convention__name(p->ret.convention));
	jw_string(w, "code_convention", ret_convention__name(a->code_ret));
	jw_reg_or_null(w, "code_self", a->code_self);
	jw_reg_or_null(w, "dwarf_self", a->dwarf_self);
	jw_string(w, "size_rule", ret_convention__name(a->rule_ret));
	jw_bool(w, "size_rule_overridden", a->rule_disagrees);
	jw_u64(w, "rets", a->rets);
	jw_u64(w, "rets_hidden_pointer", a->rets_hidden);
	jw_u64(w, "rets_constant", a->rets_direct);
	jw_u64(w, "rets_result_unset", a->rets_unset);
	jw_u64(w, "state_via_rdi", a->state_via[0]);
	jw_u64(w, "state_via_rsi", a->state_via[1]);
	jw_u64(w, "self_slot_via_rdi", a->slot_via[0]);
	jw_u64(w, "self_slot_via_rsi", a->slot_via[1]);
	jw_u64(w, "discr_match", a->discr_match);
	jw_u64(w, "discr_mismatch", a->discr_mismatch);
	jw_object_end(w);
}

/* Where a result register of the callee is at an exit site: {"reg", "bytes"} or null. */
static void write_result_reg(struct json_writer *w, const char *key, int8_t reg, uint8_t bytes)
{
	if (reg < 0) {
		jw_null(w, key);
		return;
	}
	jw_object(w, key);
	jw_string(w, "reg", dwarf_reg__name((uint16_t)reg));
	jw_u64(w, "bytes", bytes);
	jw_object_end(w);
}

/* An exit in the caller (docs/json-schema.md, "caller_exits[]"). */
static void write_caller_exit(struct json_writer *w, const struct caller_exit *x)
{
	char insn[sizeof(x->insn) + 1];

	memcpy(insn, x->insn, sizeof(x->insn));
	insn[sizeof(x->insn)] = '\0';
	jw_u64(w, "call_addr", x->call_addr);
	jw_string(w, "call", call_kind__name(x->call));
	jw_string(w, "caller", x->caller);
	jw_string(w, "via", x->via);
	if (x->via_addr)
		jw_u64(w, "via_addr", x->via_addr);
	else
		jw_null(w, "via_addr");
	jw_bool(w, "usable", x->usable);
	jw_string(w, "why", x->usable ? NULL : x->why);
	if (x->usable) {
		jw_u64(w, "addr", x->addr);
		jw_u64(w, "file_offset", x->file_offset);
		jw_string(w, "insn", insn);
		jw_u64(w, "distance", x->distance);
		jw_u64(w, "calls_passed", x->calls);
		jw_bool(w, "stepped", x->stepped);
		jw_i64(w, "sp_delta", x->sp_delta);
	} else {
		jw_null(w, "addr");
		jw_null(w, "file_offset");
		jw_null(w, "insn");
		jw_null(w, "distance");
		jw_null(w, "calls_passed");
		jw_null(w, "stepped");
		jw_null(w, "sp_delta");
	}
	write_result_reg(w, "rax", x->usable ? x->result_reg[0] : -1, x->result_bytes[0]);
	write_result_reg(w, "rdx", x->usable ? x->result_reg[1] : -1, x->result_bytes[1]);
}

static void write_poll(struct json_writer *w, const struct model *m, uint32_t id)
{
	const struct poll_fn *p = &m->polls[id];

	jw_object(w, NULL);
	jw_u64(w, "id", id);
	jw_string(w, "name", p->name);
	jw_string(w, "linkage_name", p->linkage_name);
	jw_string(w, "crate", p->crate);
	jw_string(w, "crate_class", crate_class__name(p->crate_class));
	jw_u64(w, "addr", p->addr);
	jw_u64(w, "size", p->size);
	jw_u64(w, "file_offset", p->file_offset);
	jw_string(w, "file", p->file);
	jw_u64(w, "line", p->line);
	jw_future_ref(w, "future", m, p->future);
	jw_bool(w, "inlined_only", p->inlined_only);

	jw_array(w, "inline_sites");
	for (uint32_t i = 0; p->inline_sites && i < p->nr_inline_sites; i++) {
		const struct inline_site *s = &p->inline_sites[i];
		jw_object(w, NULL);
		jw_u64(w, "addr", s->addr);
		jw_string(w, "caller", s->caller);
		jw_string(w, "file", s->file);
		jw_u64(w, "line", s->line);
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_u64(w, "inline_sites_total",
	       p->nr_inline_sites_total > p->nr_inline_sites ? p->nr_inline_sites_total
							     : p->nr_inline_sites);

	jw_array(w, "exits");
	for (uint32_t i = 0; p->exits && i < p->nr_exits; i++) {
		const struct exit_site *x = &p->exits[i];
		jw_object(w, NULL);
		jw_u64(w, "addr", x->addr);
		jw_u64(w, "file_offset", x->file_offset);
		jw_string(w, "kind", exit_kind__name(x->kind));
		if (x->kind == EXIT_TAIL_JMP)
			jw_u64(w, "target", x->target);
		jw_bool(w, "probeable", x->probeable);
		jw_object_end(w);
	}
	jw_array_end(w);
	/* the default mode's exits: each ret replaced by emulated branch sites where safe */
	jw_array(w, "fast_exits");
	for (uint32_t i = 0; p->fast_exits && i < p->nr_fast_exits; i++) {
		const struct exit_site *x = &p->fast_exits[i];
		static const char *const src[] = {"memory", "const", "reg"};

		jw_object(w, NULL);
		jw_u64(w, "addr", x->addr);
		jw_u64(w, "file_offset", x->file_offset);
		jw_string(w, "kind", exit_kind__name(x->kind));
		jw_bool(w, "emulated", x->emulated);
		jw_bool(w, "probeable", x->probeable);
		jw_u64(w, "cond", x->cond);
		jw_i64(w, "sp_delta", x->sp_delta);
		jw_u64(w, "covers", x->covers);
		jw_string(w, "state_src", x->state_src < 3 ? src[x->state_src] : "?");
		if (x->state_src == EXIT_STATE_CONST)
			jw_u64(w, "state_value", x->state_value);
		if (x->state_src == EXIT_STATE_REG)
			jw_string(w, "state_reg", dwarf_reg__name(x->state_reg));
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_u64(w, "rets_covered", p->nr_rets_covered);
	jw_bool(w, "leaf", p->leaf);

	jw_bool(w, "callers_known", p->callers_known);
	jw_bool(w, "caller_exits_ok", p->caller_exits_ok);
	/* NULL in the model: the pass did not run (analyzer_opts.caller_exits) */
	jw_string(w, "caller_exits_why",
		  p->caller_exits_ok	? NULL
		  : p->caller_exits_why ? p->caller_exits_why
					: "not computed (the call-site index was not built)");
	jw_array(w, "caller_exits");
	for (uint32_t i = 0; p->caller_exits && i < p->nr_caller_exits; i++) {
		jw_object(w, NULL);
		write_caller_exit(w, &p->caller_exits[i]);
		jw_string(w, "result", caller_result__name(p->caller_exits[i].result));
		jw_object_end(w);
	}
	jw_array_end(w);

	write_entry(w, &p->entry);
	jw_reg_or_null(w, "self_arg_reg", p->self_known ? p->self_arg_reg : -1);
	write_return(w, &p->ret);
	write_abi(w, p);
	jw_u64(w, "folded", p->nr_folded);
	jw_string(w, "disasm_error", p->disasm_error);
	jw_object_end(w);
}

static void write_edge(struct json_writer *w, const struct model *m, uint32_t id)
{
	const struct await_edge *e = &m->edges[id];

	jw_object(w, NULL);
	jw_future_ref(w, "from", m, e->from);
	jw_future_ref(w, "to", m, e->to);
	jw_u64(w, "await_index", e->await_index);
	jw_string(w, "file", e->file);
	jw_u64(w, "line", e->line);
	jw_string(w, "awaitee_type", e->awaitee_type);
	jw_string(w, "via", e->via);
	if (e->steps_known) {
		json__write_steps(w, e->steps, e->nr_steps);
	} else {
		jw_null(w, "steps");
	}
	jw_bool(w, "dyn", e->dyn);
	jw_object_end(w);
}

int export_json__write(const struct model *m, FILE *out)
{
	struct json_writer w = {.out = out};
	struct polls_by_future idx = {0};
	int err;

	err = polls_by_future__build(&idx, m);
	if (err)
		goto cleanup;

	jw_object(&w, NULL);
	jw_string(&w, "schema", "asyncbpf-model/1");
	write_binary(&w, m);
	write_debuginfo(&w, m);
	json__write_stats(&w, m);

	jw_array(&w, "warnings");
	for (uint32_t i = 0; m->warnings && i < m->nr_warnings; i++)
		jw_string(&w, NULL, m->warnings[i].text);
	jw_array_end(&w);

	jw_array(&w, "futures");
	for (uint32_t i = 0; i < m->nr_futures && !ferror(out); i++)
		write_future(&w, m, i, &idx);
	jw_array_end(&w);

	jw_array(&w, "polls");
	for (uint32_t i = 0; i < m->nr_polls && !ferror(out); i++)
		write_poll(&w, m, i);
	jw_array_end(&w);

	jw_array(&w, "edges");
	for (uint32_t i = 0; i < m->nr_edges && !ferror(out); i++)
		write_edge(&w, m, i);
	jw_array_end(&w);

	jw_array(&w, "vtables");
	for (uint32_t i = 0; i < m->nr_vtables && !ferror(out); i++)
		write_vtable(&w, m, i);
	jw_array_end(&w);

	write_runtimes(&w, m);
	jw_array(&w, "task_types");
	for (uint32_t i = 0; i < m->nr_task_types && !ferror(out); i++)
		json__write_task_type(&w, m, i);
	jw_array_end(&w);
	jw_array(&w, "wake_fns");
	for (uint32_t i = 0; i < m->nr_wake_fns && !ferror(out); i++) {
		const struct wake_fn *f = &m->wake_fns[i];

		jw_object(&w, NULL);
		jw_string(&w, "runtime", task_runtime__name(f->runtime));
		jw_bool(&w, "by_ref", f->by_ref);
		jw_string(&w, "fn", f->name);
		jw_u64(&w, "addr", f->addr);
		jw_u64(&w, "file_offset", f->file_offset);
		write_entry(&w, &f->entry);
		jw_bool(&w, "first_insn_emulated", f->entry.first_emulated);
		jw_object_end(&w);
	}
	jw_array_end(&w);

	/* the poll fns' direct tail-jump targets: their rets end a poll that jumped there */
	jw_array(&w, "tail_callees");
	for (uint32_t i = 0; i < m->nr_tail_callees && !ferror(out); i++) {
		const struct tail_callee *c = &m->tail_callees[i];

		jw_object(&w, NULL);
		jw_u64(&w, "addr", c->addr);
		jw_u64(&w, "size", c->size);
		jw_u64(&w, "file_offset", c->file_offset);
		jw_string(&w, "fn", c->name);
		if (c->poll >= 0)
			jw_u64(&w, "poll", (uint64_t)c->poll);
		else
			jw_null(&w, "poll");
		jw_array(&w, "rets");
		for (uint32_t k = 0; k < c->nr_rets; k++)
			jw_u64(&w, NULL, c->ret_offsets[k]);
		jw_array_end(&w);
		jw_string(&w, "unfollowed", c->unfollowed);
		jw_object_end(&w);
	}
	jw_array_end(&w);

	jw_object(&w, "task_polls");
	for (int k = TASK_RT_TOKIO; k < TASK_RT_MAX; k++) {
		const struct task_poll_summary *t = &m->task_polls[k];

		if (k == TASK_RT_STD_WAKE)
			continue; /* no task vtable */
		if (!t->dispatchers) {
			jw_null(&w, task_runtime__name(k));
			continue;
		}
		jw_object(&w, task_runtime__name(k));
		jw_u64(&w, "dispatchers", t->dispatchers);
		jw_u64(&w, "calls", t->calls);
		jw_u64(&w, "usable", t->usable);
		jw_bool(&w, "complete", t->complete);
		jw_string(&w, "why", t->why);
		jw_object_end(&w);
	}
	jw_object_end(&w);
	jw_array(&w, "task_poll_exits");
	for (uint32_t i = 0; i < m->nr_task_poll_exits && !ferror(out); i++) {
		const struct task_poll_exit *x = &m->task_poll_exits[i];

		jw_object(&w, NULL);
		jw_string(&w, "runtime", task_runtime__name(x->runtime));
		jw_string(&w, "dispatcher", x->dispatcher);
		write_caller_exit(&w, &x->site);
		jw_object_end(&w);
	}
	jw_array_end(&w);

	jw_array(&w, "roots");
	for (uint32_t i = 0; i < m->nr_futures; i++)
		if (m->futures[i].is_root)
			jw_u64(&w, NULL, i);
	jw_array_end(&w);

	jw_object_end(&w);
	putc('\n', out);
	if (fflush(out) == EOF || ferror(out))
		err = -EIO;
cleanup:
	polls_by_future__free(&idx);
	return err;
}
