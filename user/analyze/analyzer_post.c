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

#include "analyze/analyzer_post.h"
#include "analyze/demangle.h"
#include "analyze/disasm.h"
#include "analyze/crate.h"

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
					bool has =
					    dwarf_formudata(dwarf_attr(&var, DW_AT_discr_value, &a),
							    &dv) == 0;
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
				l->known = l->discr_size > 0 &&
					   (l->pending_has_value || l->ready_has_value);
				break;
			} while (dwarf_siblingof(&child, &child) == 0);
		}
		l->in_memory = returned_in_memory(l, payload);
		p->self_arg_reg = l->in_memory ? DWARF_REG_RSI : DWARF_REG_RDI;
		/* Where DWARF says where self is at entry, believe it over the ABI rule. */
		Dwarf_Attribute loc;
		Dwarf_Op *expr;
		size_t len;
		if (pp->has_param && dwarf_attr(&pp->param, DW_AT_location, &loc) &&
		    dwarf_getlocation_addr(&loc, p->addr, &expr, &len, 1) == 1 && len == 1) {
			if (expr[0].atom >= DW_OP_reg0 && expr[0].atom <= DW_OP_reg31)
				p->self_arg_reg = (uint16_t)(expr[0].atom - DW_OP_reg0);
			else if (expr[0].atom == DW_OP_regx)
				p->self_arg_reg = (uint16_t)expr[0].number;
		}
	}
	w->nr_pending = 0;
}

/* Without DWARF: the CAT approach, poll fns by symbol name. What is lost is said. */
int analyzer__walk_symbols(struct walk *w)
{
	int n = dwfl_module_getsymtab(w->t->module);

	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name =
		    dwfl_module_getsym_info(w->t->module, i, &sym, &addr, NULL, NULL, NULL);
		if (!name || GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_size == 0 ||
		    sym.st_shndx == SHN_UNDEF)
			continue;
		addr -= w->t->bias;
		const char *d = symbol__demangle(&w->m->strings, name);
		if (!d)
			return -ENOMEM;
		size_t len = strlen(d), sl = strlen(FUTURE_POLL_SUFFIX);
		bool handwritten =
		    d[0] == '<' && len > sl && strcmp(d + len - sl, FUTURE_POLL_SUFFIX) == 0;
		bool closure = len > 13 && strcmp(d + len - 13, "::{{closure}}") == 0;
		if (!handwritten && !closure)
			continue;
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

int analyzer__disassemble_polls(struct walk *w)
{
	struct model *m = w->m;
	char err[256];

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
		err[0] = '\0';
		r = disasm__analyze_function(code, p->size, p->addr, p->self_arg_reg, &p->exits,
					     &p->nr_exits, &p->entry, err, sizeof(err));
		if (r == -ENOMEM)
			return r;
		if (r) {
			p->disasm_error = strpool__intern(&m->strings, err[0] ? err : strerror(-r));
			continue;
		}
		for (uint32_t k = 0; k < p->nr_exits; k++)
			target__file_offset(w->t, p->exits[k].addr, &p->exits[k].file_offset);
		if (p->entry.valid)
			target__file_offset(w->t, p->entry.addr, &p->entry.file_offset);
	}
	return 0;
}

void analyzer__link_drops(struct walk *w)
{
	for (uint32_t i = 0; i < w->m->nr_futures; i++) {
		struct future *f = &w->m->futures[i];
		uint64_t d;
		if (u64_map__get(&w->drop_by_path, (uintptr_t)f->path, &d)) {
			f->drop_symbol = w->drops[d].linkage_name;
			f->drop_addr = w->drops[d].addr;
		}
	}
}
