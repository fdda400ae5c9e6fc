// SPDX-License-Identifier: GPL-2.0
/*
 * The call-site index (callsites.h). One linear sweep per function symbol, and per
 * run of bytes between them (padding, the C runtime's start-up code, .plt), with
 * one Capstone handle; nothing but the calls and references is kept. A run that
 * does not decode is counted: a call could hide in it, so nobody's callers are
 * then "known".
 */
#include "analyze/callsites.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <capstone/capstone.h>

#include "analyze/insn.h"

/* An executable section's bytes, read once (target__code walks every section). */
struct code_section {
	uint64_t addr, size;
	const uint8_t *bytes;
};

#define CALLSITES_MAX_SECTIONS 64

struct sections {
	struct code_section v[CALLSITES_MAX_SECTIONS];
	uint32_t nr;
};

/* The bytes of [addr, addr + size) when one executable section holds them all. */
static const uint8_t *code_at(const struct sections *cs, uint64_t addr, uint64_t size)
{
	for (uint32_t i = 0; i < cs->nr; i++) {
		const struct code_section *c = &cs->v[i];

		if (addr >= c->addr && addr - c->addr < c->size &&
		    size <= c->size - (addr - c->addr))
			return c->bytes + (addr - c->addr);
	}
	return NULL;
}

struct sweep {
	struct callsites *ix;
	uint64_t start, end; /* the run being decoded */
	int32_t fn;	     /* its function, -1 for code outside any */
	uint32_t cap_calls;
	/* the previous instruction, when it loaded a GOT slot into a register: a
	 * `call reg` right after it calls through the slot (opt-level 0 code) */
	bool loaded;
	int8_t loaded_reg;
	uint64_t loaded_slot, loaded_at;
};

bool callsites__in_got(const struct callsites *ix, uint64_t addr)
{
	for (uint32_t i = 0; i < ix->nr_got; i++)
		if (addr >= ix->got[i][0] && addr < ix->got[i][1])
			return true;
	return false;
}

/* Remember the first instruction at `site` that does this to `key`. */
static int note(struct u64_map *m, uint64_t key, uint64_t site)
{
	if (key == UINT64_MAX || u64_map__get(m, key, NULL))
		return 0;
	return u64_map__set(m, key, site) ? -ENOMEM : 0;
}

static int add_call(struct sweep *s, const struct insn *in, uint64_t to, enum callsite_kind kind,
		    bool via_reg)
{
	struct callsites *ix = s->ix;

	if (ix->nr_calls == CALLSITES_MAX_CALLS) {
		ix->truncated = true;
		return 0;
	}
	if (ix->nr_calls == s->cap_calls) {
		uint32_t cap = s->cap_calls ? s->cap_calls * 2 : 1024;
		struct callsite *n = realloc(ix->calls, (size_t)cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		ix->calls = n;
		s->cap_calls = cap;
	}
	ix->calls[ix->nr_calls++] = (struct callsite){.addr = in->addr,
						      .to = to,
						      .fn = s->fn,
						      .size = in->size,
						      .kind = (uint8_t)kind,
						      .via_reg = via_reg};
	return 0;
}

static bool rip_relative(const struct insn_op *op)
{
	return op->type == INSN_OP_MEM && op->base == DWARF_REG_RIP && op->index < 0 &&
	       !op->segment;
}

/* `mov reg, [rip + X]` with X in a GOT section: held back one instruction. */
static bool loads_slot(const struct callsites *ix, const struct insn *in, uint64_t *slot)
{
	if (in->id != X86_INS_MOV || in->nr_ops != 2 || insn__gpr64(&in->ops[0]) < 0 ||
	    !rip_relative(&in->ops[1]) || in->ops[1].size != 8)
		return false;
	*slot = in->addr + in->size + (uint64_t)in->ops[1].value;
	return callsites__in_got(ix, *slot);
}

static int on_insn(void *ctx, const struct insn *in)
{
	struct sweep *s = ctx;
	struct callsites *ix = s->ix;
	uint64_t next = in->addr + in->size, slot;
	bool loaded = s->loaded;
	int e = 0;

	ix->insns++;
	s->loaded = false;
	if (loaded && in->flow == INSN_FLOW_CALL && in->nr_ops == 1 &&
	    insn__gpr64(&in->ops[0]) == s->loaded_reg)
		return add_call(s, in, s->loaded_slot, CALLSITE_SLOT, true);
	if (loaded && (e = note(&ix->refs, s->loaded_slot, s->loaded_at)))
		return e;
	if (in->flow == INSN_FLOW_CALL) {
		if (in->target)
			return add_call(s, in, in->target, CALLSITE_DIRECT, false);
		if (in->nr_ops == 1 && rip_relative(&in->ops[0]))
			return add_call(s, in, next + (uint64_t)in->ops[0].value, CALLSITE_SLOT,
					false);
		return 0; /* through a register or other memory: a vtable, a closure */
	}
	if (loads_slot(ix, in, &slot)) {
		s->loaded = true;
		s->loaded_reg = (int8_t)insn__gpr64(&in->ops[0]);
		s->loaded_slot = slot;
		s->loaded_at = in->addr;
		return 0;
	}
	/* a direct jump out of its run: a tail call, or a jump into another function */
	if ((in->flow == INSN_FLOW_JMP || in->flow == INSN_FLOW_JCC) && in->target &&
	    (in->target < s->start || in->target >= s->end))
		return note(&ix->jumps_in, in->target, in->addr);
	for (uint8_t k = 0; k < in->nr_ops && !e; k++) {
		const struct insn_op *op = &in->ops[k];

		if (rip_relative(op)) {
			uint64_t a = next + (uint64_t)op->value;

			if (in->flow == INSN_FLOW_JMP_INDIRECT || callsites__in_got(ix, a) ||
			    u64_map__get(&ix->fn_starts, a, NULL))
				e = note(&ix->refs, a, in->addr);
		} else if (op->type == INSN_OP_IMM && !ix->pie && in->flow == INSN_FLOW_NONE &&
			   u64_map__get(&ix->fn_starts, (uint64_t)op->value, NULL)) {
			/* non-PIE code may take a function's address as an immediate */
			e = note(&ix->refs, (uint64_t)op->value, in->addr);
		}
	}
	return e;
}

/* Decode one run; what does not decode is counted. 0 or -ENOMEM / -ENOTSUP. */
static int sweep_run(struct sweep *s, struct insn_decoder *d, const struct sections *cs,
		     uint64_t start, uint64_t end, int32_t fn)
{
	struct callsites *ix = s->ix;
	const uint8_t *code;
	uint64_t stop = start;
	int r;

	if (end <= start)
		return 0;
	if (ix->bytes + (end - start) > CALLSITES_MAX_BYTES) {
		ix->truncated = true;
		return 0;
	}
	s->start = start;
	s->end = end;
	s->fn = fn;
	if (!(code = code_at(cs, start, end - start))) {
		r = -EINVAL;
	} else {
		ix->bytes += end - start;
		s->loaded = false;
		r = insn_decoder__sweep(d, code, end - start, start, on_insn, s, &stop);
		if (s->loaded && r != -ENOMEM && note(&ix->refs, s->loaded_slot, s->loaded_at))
			r = -ENOMEM;
		s->loaded = false;
	}
	if (r == -ENOMEM || ix->truncated)
		return r == -ENOMEM ? r : 0;
	if (r) {
		ix->nr_undecoded++;
		ix->undecoded_bytes += end - stop;
		if (!ix->first_undecoded || stop < ix->first_undecoded)
			ix->first_undecoded = stop;
		if (fn >= 0)
			ix->fns[fn].decoded = false;
	}
	return 0;
}

static int cmp_fn(const void *a, const void *b)
{
	const struct callsite_fn *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->size > y->size ? -1 : x->size < y->size;
}

static int cmp_call(const void *a, const void *b)
{
	const struct callsite *x = a, *y = b;

	if (x->to != y->to)
		return x->to < y->to ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int cmp_holder(const void *a, const void *b)
{
	const struct callsite_holder *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return x->word < y->word ? -1 : x->word > y->word;
}

/* Function symbols with code, sorted; a symbol inside another's range (an alias,
 * a nested label) is dropped, one reaching past it starts where it ends. */
static int collect_fns(struct callsites *ix, struct target *t, const struct sections *cs)
{
	int n = dwfl_module_getsymtab(t->module);
	uint32_t cap = 0, kept = 0;
	uint64_t end = 0;

	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name =
		    dwfl_module_getsym_info(t->module, i, &sym, &addr, NULL, NULL, NULL);

		if (!name || GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_size ||
		    sym.st_shndx == SHN_UNDEF)
			continue;
		addr -= t->bias;
		if (addr + sym.st_size < addr || !code_at(cs, addr, sym.st_size))
			continue;
		if (ix->nr_fns == CALLSITES_MAX_FNS) {
			ix->truncated = true;
			break;
		}
		if (ix->nr_fns == cap) {
			uint32_t ncap = cap ? cap * 2 : 1024;
			struct callsite_fn *f = realloc(ix->fns, (size_t)ncap * sizeof(*f));

			if (!f)
				return -ENOMEM;
			ix->fns = f;
			cap = ncap;
		}
		ix->fns[ix->nr_fns++] = (struct callsite_fn){addr, sym.st_size, name, true};
		if (u64_map__set(&ix->fn_starts, addr, 1))
			return -ENOMEM;
	}
	if (ix->nr_fns)
		qsort(ix->fns, ix->nr_fns, sizeof(*ix->fns), cmp_fn);
	for (uint32_t i = 0; i < ix->nr_fns; i++) {
		struct callsite_fn f = ix->fns[i];

		if (f.addr + f.size <= end)
			continue;
		if (f.addr < end) { /* overlaps the previous one: keep what lies past it */
			f.size -= end - f.addr;
			f.addr = end;
		}
		end = f.addr + f.size;
		ix->fns[kept++] = f;
	}
	ix->nr_fns = kept;
	return 0;
}

/* The executable sections' bytes, and where the GOT is. */
static void read_sections(struct callsites *ix, struct target *t, struct sections *cs)
{
	size_t shstrndx = 0;
	bool names = elf_getshdrstrndx(t->elf, &shstrndx) == 0;
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(t->elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) ||
		    sh.sh_type != SHT_PROGBITS || sh.sh_addr + sh.sh_size < sh.sh_addr)
			continue;
		name = names ? elf_strptr(t->elf, shstrndx, sh.sh_name) : NULL;
		if (name && (!strcmp(name, ".got") || !strcmp(name, ".got.plt")) &&
		    ix->nr_got < CALLSITES_MAX_GOT) {
			ix->got[ix->nr_got][0] = sh.sh_addr;
			ix->got[ix->nr_got++][1] = sh.sh_addr + sh.sh_size;
		}
		if (!(sh.sh_flags & SHF_EXECINSTR) || !sh.sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size != sh.sh_size)
			continue; /* its code cannot be read: target__code fails on it too */
		if (cs->nr == CALLSITES_MAX_SECTIONS) {
			ix->truncated = true;
			continue;
		}
		cs->v[cs->nr++] = (struct code_section){sh.sh_addr, sh.sh_size, d->d_buf};
	}
}

/* Every executable section: its functions, and the runs of code between them. */
static int sweep_sections(struct callsites *ix, const struct sections *cs, struct insn_decoder *d)
{
	struct sweep s = {.ix = ix};
	int r = 0;

	for (uint32_t k = 0; k < cs->nr && !r && !ix->truncated; k++) {
		uint64_t at = cs->v[k].addr, end = cs->v[k].addr + cs->v[k].size;
		uint32_t next = 0;

		/* the functions are sorted, sections need not be: the first one at or past at */
		for (uint32_t hi = ix->nr_fns; next < hi;) {
			uint32_t mid = next + (hi - next) / 2;

			if (ix->fns[mid].addr < at)
				next = mid + 1;
			else
				hi = mid;
		}
		for (; next < ix->nr_fns && ix->fns[next].addr < end && !r; next++) {
			const struct callsite_fn *f = &ix->fns[next];

			r = sweep_run(&s, d, cs, at, f->addr, -1);
			if (!r)
				r = sweep_run(&s, d, cs, f->addr, f->addr + f->size, (int32_t)next);
			at = f->addr + f->size;
		}
		if (!r && at < end)
			r = sweep_run(&s, d, cs, at, end, -1);
	}
	return r;
}

int callsites__build(struct callsites *ix, struct target *t, char *err, size_t errlen)
{
	struct insn_decoder *d = NULL;
	int r;

	memset(ix, 0, sizeof(*ix));
	u64_map__init(&ix->jumps_in);
	u64_map__init(&ix->refs);
	u64_map__init(&ix->fn_starts);
	ix->pie = t->pie;
	if (t->ehdr.e_machine != EM_X86_64) {
		snprintf(err, errlen, "not an x86-64 binary: its calls are not indexed");
		return -ENOTSUP;
	}
	struct sections *cs = calloc(1, sizeof(*cs));

	if (!cs)
		return -ENOMEM;
	read_sections(ix, t, cs);
	r = collect_fns(ix, t, cs);
	if (!r)
		r = insn_decoder__new(&d, err, errlen);
	if (!r)
		r = sweep_sections(ix, cs, d);
	insn_decoder__free(d);
	free(cs);
	if (r == -ENOMEM)
		snprintf(err, errlen, "out of memory indexing the calls of %s", t->display);
	if (r)
		return r;
	if (ix->nr_calls)
		qsort(ix->calls, ix->nr_calls, sizeof(*ix->calls), cmp_call);
	return 0;
}

void callsites__free(struct callsites *ix)
{
	free(ix->fns);
	free(ix->calls);
	free(ix->holders);
	u64_map__free(&ix->jumps_in);
	u64_map__free(&ix->refs);
	u64_map__free(&ix->fn_starts);
	memset(ix, 0, sizeof(*ix));
}

uint32_t callsites__calls_to(const struct callsites *ix, uint64_t to, uint32_t *first)
{
	uint32_t lo = 0, hi = ix->nr_calls, end;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ix->calls[mid].to < to)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = lo;
	for (end = lo; end < ix->nr_calls && ix->calls[end].to == to; end++)
		;
	return end - lo;
}

int32_t callsites__fn_at(const struct callsites *ix, uint64_t addr)
{
	uint32_t lo = 0, hi = ix->nr_fns;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ix->fns[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr - ix->fns[lo - 1].addr >= ix->fns[lo - 1].size)
		return -1;
	return (int32_t)(lo - 1);
}

bool callsites__entered_from_outside(const struct callsites *ix, uint64_t addr)
{
	uint32_t first;

	return u64_map__get(&ix->jumps_in, addr, NULL) || callsites__calls_to(ix, addr, &first);
}

struct holders_ctx {
	struct callsites *ix;
	uint32_t cap;
};

static int on_holder(void *ctx, uint64_t at, uint64_t value)
{
	struct holders_ctx *c = ctx;
	struct callsites *ix = c->ix;

	if (ix->nr_holders == c->cap) {
		uint32_t cap = c->cap ? c->cap * 2 : 64;
		struct callsite_holder *n;

		if (cap > CALLSITES_MAX_CALLS)
			return -E2BIG;
		n = realloc(ix->holders, (size_t)cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		ix->holders = n;
		c->cap = cap;
	}
	ix->holders[ix->nr_holders++] = (struct callsite_holder){at, value};
	return 0;
}

int callsites__find_holders(struct callsites *ix, struct target *t, const struct u64_map *fns)
{
	struct holders_ctx c = {.ix = ix};
	int r;

	free(ix->holders);
	ix->holders = NULL;
	ix->nr_holders = 0;
	r = target__words_holding(t, fns, on_holder, &c);
	/* a non-PIE image keeps function pointers in its data without relocations,
	 * even when it has some (GOT entries of shared-library symbols) */
	if (!r && !t->pie)
		r = target__data_words_holding(t, fns, on_holder, &c);
	if (r == -E2BIG) {
		ix->truncated = true;
		r = 0;
	}
	if (r || !ix->nr_holders)
		return r;
	qsort(ix->holders, ix->nr_holders, sizeof(*ix->holders), cmp_holder);
	uint32_t kept = 1; /* a word found both ways once */
	for (uint32_t i = 1; i < ix->nr_holders; i++)
		if (cmp_holder(&ix->holders[i], &ix->holders[kept - 1]))
			ix->holders[kept++] = ix->holders[i];
	ix->nr_holders = kept;
	return 0;
}

static int append(struct callsite **out, uint32_t *nr, uint32_t *cap, const struct callsite *c)
{
	if (*nr == *cap) {
		uint32_t ncap = *cap ? *cap * 2 : 8;
		struct callsite *n = realloc(*out, (size_t)ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		*out = n;
		*cap = ncap;
	}
	(*out)[(*nr)++] = *c;
	return 0;
}

static int cmp_addr(const void *a, const void *b)
{
	const struct callsite *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Why not every caller of fn is known, or "" when nothing says so (yet). */
static void unknown_callers(const struct callsites *ix, uint64_t fn, char *why, size_t whylen)
{
	uint64_t site;

	why[0] = '\0';
	if (ix->truncated)
		snprintf(why, whylen, "the binary is larger than the call index's bounds");
	else if (ix->undecoded_bytes)
		snprintf(why, whylen,
			 "%" PRIu64 " bytes of code do not decode (the first at 0x%" PRIx64
			 "): a call may hide there",
			 ix->undecoded_bytes, ix->first_undecoded);
	else if (u64_map__get(&ix->jumps_in, fn, &site))
		snprintf(why, whylen,
			 "tail-called by the jump at 0x%" PRIx64
			 ": it returns to that function's caller",
			 site);
	else if (u64_map__get(&ix->refs, fn, &site))
		snprintf(why, whylen,
			 "its address is taken by the code at 0x%" PRIx64
			 ": it may be called through a pointer",
			 site);
}

int callsites__callers(const struct callsites *ix, uint64_t fn, struct callsite **out, uint32_t *nr,
		       bool *known, char *why, size_t whylen)
{
	uint32_t first, n, cap = 0, lo = 0, hi = ix->nr_holders;
	uint64_t site;

	*out = NULL;
	*nr = 0;
	unknown_callers(ix, fn, why, whylen);
	n = callsites__calls_to(ix, fn, &first);
	for (uint32_t i = 0; i < n; i++)
		if (append(out, nr, &cap, &ix->calls[first + i]))
			goto nomem;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ix->holders[mid].value < fn)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < ix->nr_holders && ix->holders[lo].value == fn; lo++) {
		uint64_t w = ix->holders[lo].word;

		if (!callsites__in_got(ix, w)) {
			if (!why[0])
				snprintf(why, whylen,
					 "its address is held by the data word at 0x%" PRIx64
					 " (a vtable or a function pointer): it may be called "
					 "through it",
					 w);
			continue;
		}
		if (u64_map__get(&ix->refs, w, &site)) {
			if (!why[0])
				snprintf(why, whylen,
					 "its GOT slot at 0x%" PRIx64
					 " is read by the code at 0x%" PRIx64
					 " other than to call it",
					 w, site);
			continue;
		}
		n = callsites__calls_to(ix, w, &first);
		for (uint32_t i = 0; i < n; i++)
			if (append(out, nr, &cap, &ix->calls[first + i]))
				goto nomem;
	}
	if (*nr > 1)
		qsort(*out, *nr, sizeof(**out), cmp_addr);
	*known = !why[0];
	return 0;
nomem:
	free(*out);
	*out = NULL;
	*nr = 0;
	*known = false;
	return -ENOMEM;
}
