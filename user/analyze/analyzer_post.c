// SPDX-License-Identifier: GPL-2.0
/*
 * The analyzer's work around the DWARF walk: type paths across compile units,
 * Poll<T> return layouts, the symbol-name fallback for binaries without DWARF,
 * crate classes, drop glue, and disassembly of every out-of-line poll fn.
 */
#include <dwarf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/exit_sites.h"
#include "analyze/analyzer_post.h"
#include "analyze/demangle.h"
#include "analyze/abi.h"
#include "analyze/cfg.h"
#include "analyze/disasm.h"
#include "analyze/flow.h"
#include "analyze/crate.h"
#include "analyze/debuginfo.h"

enum abi_class { ABI_ZST, ABI_SCALAR, ABI_SCALAR_PAIR, ABI_AGGREGATE };

/*
 * rustc's ABI class of a type, as far as DWARF shows it: integers, floats, pointers
 * and C-like enums are scalars; a struct is the class of its only non-empty field,
 * or a scalar pair of two scalar fields (&str, (u32, u32)); anything else (enums
 * with data, arrays, three fields) is an aggregate. Bounded depth.
 */
static enum abi_class abi_class_of(Dwarf_Die *type, int depth)
{
	Dwarf_Die t = *type, child, mt;
	enum abi_class fields[2];
	int n = 0;

	for (int i = 0; i < 8; i++) {
		int tag = dwarf_tag(&t);
		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type &&
		    tag != DW_TAG_volatile_type)
			break;
		if (!die_type(&t, &t))
			return ABI_AGGREGATE;
	}
	if (die_bytesize(&t) == 0 && dwarf_tag(&t) != DW_TAG_pointer_type)
		return ABI_ZST;
	switch (dwarf_tag(&t)) {
	case DW_TAG_base_type:
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_enumeration_type: return ABI_SCALAR;
	case DW_TAG_structure_type: break;
	default: return ABI_AGGREGATE;
	}
	if (depth >= 4 || dwarf_child(&t, &child) != 0)
		return ABI_AGGREGATE;
	do {
		int tag = dwarf_tag(&child);
		if (tag == DW_TAG_variant_part)
			return ABI_AGGREGATE; /* an enum with data */
		if (tag != DW_TAG_member || !die_type(&child, &mt))
			continue;
		enum abi_class c = abi_class_of(&mt, depth + 1);
		if (c == ABI_ZST)
			continue;
		if (n == 2)
			return ABI_AGGREGATE;
		fields[n++] = c;
	} while (dwarf_siblingof(&child, &child) == 0);
	if (n == 0)
		return ABI_ZST;
	if (n == 1)
		return fields[0];
	return fields[0] == ABI_SCALAR && fields[1] == ABI_SCALAR ? ABI_SCALAR_PAIR : ABI_AGGREGATE;
}

/* The payload type T of Poll<T>'s Ready variant (member "Ready" -> struct -> __0). */
static bool ready_payload(Dwarf_Die *ready_member, Dwarf_Die *payload)
{
	Dwarf_Die st, child;

	if (!die_type(ready_member, &st) || dwarf_child(&st, &child) != 0)
		return false;
	do {
		if (dwarf_tag(&child) == DW_TAG_member)
			return die_type(&child, payload);
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/*
 * Does rustc return this Poll<T> in registers (rax, rax:rdx) or through a hidden
 * pointer? Verified on the fixtures (Poll<u64>: rax:rdx; Poll<(u32, u32)>, 12 bytes:
 * memory): a scalar or scalar pair goes in registers, an aggregate only up to 8
 * bytes. A tagged Poll is a pair (tag, T) when T is a scalar; a niche-encoded one
 * (Ready is the default variant, Pending a niche value) has T's class.
 */
static bool returned_in_memory(const struct poll_layout *l, enum abi_class payload)
{
	enum abi_class whole;

	if (l->size > 16)
		return true;
	if (l->size <= 8)
		return false;
	if (!l->ready_has_value) /* niche */
		whole = payload;
	else
		whole =
		    payload == ABI_SCALAR || payload == ABI_ZST ? ABI_SCALAR_PAIR : ABI_AGGREGATE;
	return whole == ABI_AGGREGATE;
}

/* Poll<T> return layout and the register self arrives in, once the CU's type paths
 * are known (the return type must be core::task::poll::Poll, not another Poll). */
void analyzer__resolve_pending(struct walk *w)
{
	for (uint32_t i = 0; i < w->nr_pending; i++) {
		struct pending_poll *pp = &w->pending[i];
		struct poll_fn *p = &w->m->polls[pp->poll];
		Dwarf_Die rt, child, discr, dtype;
		if (!starts_with(walk__type_path(w, pp->return_type), "core::task::poll::Poll<"))
			continue;
		if (!dwarf_offdie(w->dw, pp->return_type, &rt))
			continue;
		struct poll_layout *l = &p->ret;
		l->size = die_bytesize(&rt);
		enum abi_class payload = ABI_AGGREGATE;
		if (dwarf_child(&rt, &child) == 0) {
			do {
				if (dwarf_tag(&child) != DW_TAG_variant_part)
					continue;
				Dwarf_Attribute a;
				if (dwarf_formref_die(dwarf_attr(&child, DW_AT_discr, &a),
						      &discr) &&
				    member_offset(&discr, &l->discr_offset) &&
				    die_type(&discr, &dtype))
					l->discr_size = (uint32_t)die_bytesize(&dtype);
				Dwarf_Die var;
				if (dwarf_child(&child, &var) != 0)
					break;
				do {
					Dwarf_Die mem;
					if (dwarf_tag(&var) != DW_TAG_variant ||
					    dwarf_child(&var, &mem) != 0)
						continue;
					const char *vn = dwarf_diename(&mem);
					Dwarf_Word dv;
					bool has = die_discr_value(&var, &dv);
					if (vn && strcmp(vn, "Pending") == 0) {
						l->pending_has_value = has;
						l->pending_value = has ? dv : 0;
					} else if (vn && strcmp(vn, "Ready") == 0) {
						Dwarf_Die pt;
						l->ready_has_value = has;
						l->ready_value = has ? dv : 0;
						payload = ready_payload(&mem, &pt)
							      ? abi_class_of(&pt, 0)
							      : ABI_AGGREGATE;
					}
				} while (dwarf_siblingof(&var, &var) == 0);
				/* a 16-byte tag whose values fit in 64 bits: read its low half */
				if (l->discr_size == 16)
					l->discr_size = 8;
				l->known = l->discr_size > 0 && l->discr_size <= 8 &&
					   (l->pending_has_value || l->ready_has_value);
				break;
			} while (dwarf_siblingof(&child, &child) == 0);
		}
		/* An older compiler's size rule: evidence of last resort (abi_decide). */
		p->abi.rule_ret =
		    returned_in_memory(l, payload) ? RET_CONV_MEMORY : RET_CONV_REGISTERS;
		/* Where DWARF states self's register at entry (optimized builds). */
		Dwarf_Attribute loc;
		Dwarf_Op *expr;
		size_t len;
		if (pp->has_param && dwarf_attr(&pp->param, DW_AT_location, &loc) &&
		    dwarf_getlocation_addr(&loc, p->addr, &expr, &len, 1) == 1 && len == 1) {
			if (expr[0].atom >= DW_OP_reg0 && expr[0].atom <= DW_OP_reg31)
				p->abi.dwarf_self = (int16_t)(expr[0].atom - DW_OP_reg0);
			else if (expr[0].atom == DW_OP_regx && expr[0].number < 32)
				p->abi.dwarf_self = (int16_t)expr[0].number;
		}
		/* Debug builds: self in a stack slot, DW_OP_fbreg N off an rsp/rbp frame base. */
		if (pp->has_param && pp->frame_reg >= 0 &&
		    dwarf_attr(&pp->param, DW_AT_location, &loc) &&
		    dwarf_getlocation(&loc, &expr, &len) == 0 && len == 1 &&
		    expr[0].atom == DW_OP_fbreg) {
			p->abi.dwarf_slot_reg = pp->frame_reg;
			p->abi.dwarf_slot_off = (int64_t)expr[0].number;
		}
	}
	w->nr_pending = 0;
}

/*
 * Code without DWARF (all of it in a file without DWARF; the program's own when only
 * std's DWARF was linked in): the CAT approach, poll fns by symbol name, and the
 * crates that have code (debuginfo.c). What is lost is said (debuginfo_note).
 */
int analyzer__walk_symbols(struct walk *w)
{
	int n = dwfl_module_getsymtab(w->t->module);
	char crate[256];

	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name =
		    dwfl_module_getsym_info(w->t->module, i, &sym, &addr, NULL, NULL, NULL);
		if (!name || GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_size == 0 ||
		    sym.st_shndx == SHN_UNDEF)
			continue;
		addr -= w->t->bias;
		if (debuginfo__covered(w, addr))
			continue; /* the DWARF walk read it */
		const char *d = symbol__demangle(&w->m->strings, name);
		if (!d || debuginfo__count_symbol(w, d))
			return -ENOMEM;
		size_t len = strlen(d), sl = strlen(FUTURE_POLL_SUFFIX);
		bool handwritten =
		    d[0] == '<' && len > sl && strcmp(d + len - sl, FUTURE_POLL_SUFFIX) == 0;
		bool closure = len > 13 && strcmp(d + len - 13, "::{{closure}}") == 0;
		if (!handwritten && !closure)
			continue;
		/* `<&mut F as Future>::poll`: a blanket impl's generic parameter, no type */
		rust_path__crate_strict(d, crate, sizeof(crate));
		if (handwritten && !crate[0])
			handwritten = false;
		if (u64_map__get(&w->poll_by_addr, addr, NULL))
			continue;
		struct poll_fn *p = model__add_poll(w->m);
		if (!p)
			return -ENOMEM;
		p->name = d;
		p->linkage_name = strpool__intern(&w->m->strings, name);
		p->addr = addr;
		p->size = sym.st_size;
		p->self_arg_reg = DWARF_REG_RDI;
		Dwarf_Die cu;
		Dwarf_Line *first;
		int line = 0;
		/* line tables without a DWARF function for it (it inlines nothing) */
		if (w->dw && dwarf_addrdie(w->dw, addr, &cu) &&
		    (first = dwarf_getsrc_die(&cu, addr)) != NULL && !dwarf_lineno(first, &line)) {
			p->file = strpool__intern(&w->m->strings, dwarf_linesrc(first, NULL, NULL));
			p->line = line > 0 ? (uint32_t)line : 0;
		}
		if (u64_map__set(&w->poll_by_addr, addr, w->m->nr_polls - 1))
			return -ENOMEM;
		if (handwritten) {
			char type[MAX_PATH_LEN];
			snprintf(type, sizeof(type), "%.*s", (int)(len - sl - 1), d + 1);
			int32_t f = walk__get_future(w, type, FUTURE_HANDWRITTEN, 0, 0);
			if (f < 0)
				return -ENOMEM;
			w->m->polls[w->m->nr_polls - 1].future = f;
		}
	}
	return 0;
}

void analyzer__classify_crates(struct model *m)
{
	char crate[256];

	for (uint32_t i = 0; i < m->nr_futures; i++) {
		struct future *f = &m->futures[i];
		rust_path__crate(f->path, crate, sizeof(crate));
		f->crate = strpool__intern(&m->strings, crate);
		f->crate_class = crate__classify(crate);
	}
	for (uint32_t i = 0; i < m->nr_polls; i++) {
		struct poll_fn *p = &m->polls[i];
		if (p->future >= 0) {
			p->crate = m->futures[p->future].crate;
			p->crate_class = m->futures[p->future].crate_class;
		} else {
			rust_path__crate(p->name, crate, sizeof(crate));
			p->crate = strpool__intern(&m->strings, crate);
			p->crate_class = crate__classify(crate);
		}
	}
}

/* Jump tables live in .rodata: cfg.c reads them through this. */
static int read_target(void *ctx, uint64_t addr, size_t len, const uint8_t **bytes)
{
	return target__data(ctx, addr, len, bytes);
}

/*
 * Decide how the poll fn receives self and returns Poll<T>, from the evidence in
 * p->abi (docs/analyzer.md, "Calling conventions"): the code first; else the
 * register DWARF states self arrives in; else, for a Poll<T> of at most 8 bytes,
 * registers (never returned in memory); else unknown: self and the result of
 * this poll fn are then not read (its records say unknown), rather than guessed.
 */
static void abi_decide(struct model *m, struct poll_fn *p, const struct future *f)
{
	struct poll_abi *a = &p->abi;
	enum ret_convention conv = RET_CONV_UNKNOWN;
	int self = -1;
	bool known_size = p->ret.size > 0;

	if (a->code_ret != RET_CONV_UNKNOWN && a->code_self >= 0) {
		conv = a->code_ret;
		self = a->code_self;
		a->source = ABI_SOURCE_CODE;
	} else if (a->dwarf_self == DWARF_REG_RDI || a->dwarf_self == DWARF_REG_RSI) {
		self = a->dwarf_self;
		conv = self == DWARF_REG_RSI ? RET_CONV_MEMORY : RET_CONV_REGISTERS;
		a->source = ABI_SOURCE_DWARF;
	} else if (known_size && p->ret.size <= 8) {
		self = DWARF_REG_RDI;
		conv = RET_CONV_REGISTERS;
		a->source = ABI_SOURCE_SIZE;
	} else if (!known_size && f && f->kind != FUTURE_HANDWRITTEN && a->code_self >= 0) {
		/* no Poll<T> layout to decode (a compiler future reads __state): self is enough */
		self = a->code_self;
		conv = self == DWARF_REG_RSI ? RET_CONV_MEMORY : RET_CONV_REGISTERS;
		a->source = ABI_SOURCE_CODE;
	} else {
		a->source = ABI_SOURCE_UNKNOWN;
	}
	p->self_known = self >= 0;
	p->self_arg_reg = self >= 0 ? (uint16_t)self : DWARF_REG_RDI;
	p->ret.convention = conv;
	p->ret.in_memory = conv == RET_CONV_MEMORY;
	a->rule_disagrees = known_size && conv != RET_CONV_UNKNOWN && a->rule_ret != conv;
	/* a constant discriminant DWARF's layout does not know, or a return path that
	 * computes no result (rax as the caller left it): do not decode it */
	if (a->discr_mismatch || (conv == RET_CONV_REGISTERS && a->rets_unset))
		p->ret.known = false;
	switch (a->source) {
	case ABI_SOURCE_CODE: m->nr_abi_code++; break;
	case ABI_SOURCE_DWARF: m->nr_abi_dwarf++; break;
	case ABI_SOURCE_SIZE: m->nr_abi_size++; break;
	default: m->nr_abi_unknown++; break;
	}
	m->nr_abi_rule_overridden += a->rule_disagrees;
}

/* No call, no tail jump, no unresolved dispatch: nothing can unwind through it. */
static bool cfg_is_leaf(const struct cfg *g)
{
	if (g->nr_unresolved_dispatch)
		return false;
	for (uint32_t i = 0; i < g->nr_exits; i++)
		if (g->exits[i].kind != CFG_EXIT_RET)
			return false;
	for (uint32_t i = 0; i < g->seq.nr; i++)
		if (g->seq.insns[i].flow == INSN_FLOW_CALL)
			return false;
	return true;
}

static int disassemble_poll(struct walk *w, struct poll_fn *p, const uint8_t *code)
{
	struct model *m = w->m;
	const struct future *f =
	    p->future >= 0 && (uint32_t)p->future < m->nr_futures ? &m->futures[p->future] : NULL;
	struct cfg g;
	struct flow fl = {0};
	char err[256] = "";
	int r;

	r = cfg__build(&g, code, p->size, p->addr, read_target, w->t, err, sizeof(err));
	if (r == -ENOMEM)
		return r;
	if (r) {
		p->disasm_error = strpool__intern(&m->strings, err[0] ? err : strerror(-r));
		p->abi.source = ABI_SOURCE_UNKNOWN;
		m->nr_abi_unknown++;
		return p->disasm_error ? 0 : -ENOMEM;
	}
	p->leaf = cfg_is_leaf(&g);
	r = flow__run(&fl, &g);
	if (!r) {
		abi__read(&g, &fl, f && f->has_state, f ? f->state_offset : 0,
			  f ? f->state_size : 0, &p->ret, &p->abi);
		abi_decide(m, p, f);
		r = disasm__sites(&g, &fl, p->self_arg_reg, &p->exits, &p->nr_exits, &p->entry, err,
				  sizeof(err));
		/* a state machine's exit reads __state; others, rax (and rdx) */
		bool state_ok = f && f->has_state &&
				(f->state_size == 1 || f->state_size == 2 || f->state_size == 4 ||
				 f->state_size == 8);
		struct exit_sites_opts xo = {
		    .keep_regs = state_ok ? 0 : (1u << DWARF_REG_RAX) | (1u << DWARF_REG_RDX),
		    .has_state = state_ok && p->self_known,
		    .self_reg = p->self_arg_reg,
		    .state_offset = f ? f->state_offset : 0,
		    .state_size = f ? f->state_size : 0,
		};
		if (!r)
			r = exit_sites__find(&g, &fl, &xo, &p->fast_exits, &p->nr_fast_exits,
					     &p->nr_rets_covered, m->exits_kept);
		if (!p->self_known && p->entry.valid)
			p->entry.self_kind = SELF_LOC_UNKNOWN;
	}
	flow__free(&fl);
	cfg__free(&g);
	if (r == -ENOMEM)
		return r;
	if (r)
		p->disasm_error = strpool__intern(&m->strings, err[0] ? err : strerror(-r));
	return 0;
}

int analyzer__disassemble_polls(struct walk *w)
{
	struct model *m = w->m;

	if (w->t->ehdr.e_machine != EM_X86_64) {
		model__warn(
		    m, "not an x86-64 binary (e_machine %u): exit and entry sites not computed",
		    w->t->ehdr.e_machine);
		return 0;
	}
	for (uint32_t i = 0; i < m->nr_polls; i++) {
		struct poll_fn *p = &m->polls[i];
		const uint8_t *code;
		if (p->inlined_only || !p->addr)
			continue;
		if (target__file_offset(w->t, p->addr, &p->file_offset)) {
			p->disasm_error = strpool__printf(
			    &m->strings, "0x%" PRIx64 " is not in an executable segment", p->addr);
			continue;
		}
		int r = target__code(w->t, p->addr, p->size, &code);
		if (r) {
			p->disasm_error = strpool__printf(&m->strings,
							  "code at 0x%" PRIx64 "+%" PRIu64
							  " is not in an executable section",
							  p->addr, p->size);
			continue;
		}
		r = disassemble_poll(w, p, code);
		if (r)
			return r;
		for (uint32_t k = 0; k < p->nr_exits; k++)
			target__file_offset(w->t, p->exits[k].addr, &p->exits[k].file_offset);
		for (uint32_t k = 0; k < p->nr_fast_exits; k++)
			target__file_offset(w->t, p->fast_exits[k].addr,
					    &p->fast_exits[k].file_offset);
		if (p->entry.valid)
			target__file_offset(w->t, p->entry.addr, &p->entry.file_offset);
	}
	/* below full DWARF no result is decoded anyway: the debuginfo note says so */
	if (m->nr_abi_unknown && m->own_debuginfo == DEBUGINFO_FULL)
		model__warn(m,
			    "%u poll fn(s): where self arrives and how Poll<T> is returned could "
			    "not be read off the code or DWARF: their results are reported unknown",
			    m->nr_abi_unknown);
	return 0;
}

/*
 * The cheapest probe site of a function whose first argument (rdi) the probe reads:
 * a runtime's wake function (the task header) or a drop_in_place::<F> (the future).
 * The same rule as a poll's entry (disasm.c): a `sub rsp` first instruction is
 * single-stepped on every call, a `push` after it is emulated.
 */
static int entry_of(struct walk *w, uint64_t addr, uint64_t size, struct entry_site *e)
{
	struct exit_site *exits = NULL;
	uint32_t nr_exits = 0;
	const uint8_t *code;
	struct cfg g;
	struct flow fl = {0};
	char err[256];
	int r;

	memset(e, 0, sizeof(*e));
	if (!addr || !size || target__code(w->t, addr, size, &code))
		return 0;
	r = cfg__build(&g, code, size, addr, read_target, w->t, err, sizeof(err));
	if (r)
		return r == -ENOMEM ? r : 0; /* undecodable: the probe stays on the first insn */
	r = flow__run(&fl, &g);
	if (!r)
		r = disasm__sites(&g, &fl, 5 /* rdi */, &exits, &nr_exits, e, err, sizeof(err));
	free(exits);
	flow__free(&fl);
	cfg__free(&g);
	if (r == -ENOMEM)
		return r;
	if (e->valid && target__file_offset(w->t, e->addr, &e->file_offset))
		e->valid = false;
	return 0;
}

int analyzer__probe_sites(struct walk *w)
{
	struct model *m = w->m;
	int r = 0;

	if (w->t->ehdr.e_machine != EM_X86_64)
		return 0;
	for (uint32_t i = 0; i < m->nr_wake_fns && !r; i++)
		r = entry_of(w, m->wake_fns[i].addr, m->wake_fns[i].size, &m->wake_fns[i].entry);
	for (uint32_t i = 0; i < m->nr_task_types; i++) {
		struct task_type *tt = &m->task_types[i];
		const uint8_t *code;

		if (!tt->fn_addr || target__file_offset(w->t, tt->fn_addr, &tt->fn_file_offset))
			tt->fn_file_offset = 0;
		else if (!target__code(w->t, tt->fn_addr, 15, &code))
			tt->fn_emulated = insn__uprobe_emulates(code, 15);
	}
	for (uint32_t i = 0; i < m->nr_futures && !r; i++)
		if (m->futures[i].drop_file_offset)
			r = entry_of(w, m->futures[i].drop_addr, m->futures[i].drop_size,
				     &m->futures[i].drop_entry);
	return r;
}

void analyzer__link_drops(struct walk *w)
{
	for (uint32_t i = 0; i < w->m->nr_futures; i++) {
		struct future *f = &w->m->futures[i];
		uint64_t d;
		if (u64_map__get(&w->drop_by_path, (uintptr_t)f->path, &d)) {
			f->drop_symbol = w->drops[d].linkage_name;
			f->drop_addr = w->drops[d].addr;
			f->drop_size = w->drops[d].size;
			if (!f->drop_addr ||
			    target__file_offset(w->t, f->drop_addr, &f->drop_file_offset))
				f->drop_file_offset = 0;
		}
	}
}

int analyzer__link_vtables(struct walk *w)
{
	struct model *m = w->m;
	struct u64_map by_addr;
	int r = 0;

	u64_map__init(&by_addr);
	for (uint32_t i = 0; i < m->nr_polls; i++)
		if (!m->polls[i].inlined_only && m->polls[i].addr &&
		    u64_map__set(&by_addr, m->polls[i].addr, i)) {
			r = -ENOMEM;
			goto out;
		}
	for (uint32_t i = 0; i < m->nr_vtables; i++) {
		struct future_vtable *v = &m->vtables[i];
		uint64_t *words[4] = {&v->drop, &v->size, &v->align, &v->poll}, idx;

		for (int k = 0; k < 4; k++) {
			r = target__pointer(w->t, v->addr + 8 * (uint64_t)k, words[k]);
			if (r == -ENOMEM)
				goto out;
			r = 0;
		}
		v->future = model__find_future(m, v->type);
		v->poll_fn = v->poll && u64_map__get(&by_addr, v->poll, &idx) ? (int32_t)idx : -1;
		if (v->poll_fn < 0)
			continue;
		int32_t owner = m->polls[v->poll_fn].future;
		if (owner < 0 || owner == v->future)
			continue;
		/* T's poll is another future's function: the compiler folded identical code */
		if (v->future < 0) {
			bool env;
			enum future_kind kind = future_kind__from_name(v->type, &env);
			v->future = walk__get_future(w, v->type, kind, 0, v->size);
			if (v->future < 0) {
				r = -ENOMEM;
				goto out;
			}
		}
		struct future *f = &m->futures[v->future];
		if (f->poll >= 0 || f->folded_into >= 0)
			continue; /* it has code of its own, or was seen already */
		f->folded_into = owner;
		m->polls[v->poll_fn].nr_folded++;
	}
out:
	u64_map__free(&by_addr);
	return r;
}
