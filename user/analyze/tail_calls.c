// SPDX-License-Identifier: GPL-2.0
/*
 * The callees of poll fns' direct tail jumps (tail_calls.h): their bounds from the
 * symbol table, their machine code through the same CFG builder as the poll fns
 * (cfg.c), and their rets, which the tracer probes to end a poll that jumped there.
 */
#include "analyze/tail_calls.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/demangle.h"

int tail_calls__callee_rets(const struct cfg *g, uint64_t *rets, uint32_t *nr, char *why,
			    size_t whylen)
{
	*nr = 0;
	if (!g->nr_exits) {
		snprintf(why, whylen, "it never returns (no ret)");
		return 1;
	}
	for (uint32_t k = 0; k < g->nr_exits; k++) {
		const struct cfg_exit *x = &g->exits[k];
		const struct insn *in = cfg__insn(g, x->insn);

		switch (x->kind) {
		case CFG_EXIT_RET:
			if (!in->probeable) {
				snprintf(why, whylen,
					 "its ret at 0x%" PRIx64 " is an instruction the kernel "
					 "cannot probe",
					 in->addr);
				*nr = 0;
				return 1;
			}
			rets[(*nr)++] = in->addr;
			break;
		case CFG_EXIT_TAIL_JMP:
			snprintf(why, whylen,
				 "it tail-jumps on to 0x%" PRIx64 " (at 0x%" PRIx64
				 "): tail calls are followed one level only",
				 x->target, in->addr);
			*nr = 0;
			return 1;
		case CFG_EXIT_TAIL_JMP_INDIRECT:
			snprintf(why, whylen,
				 "it leaves by an indirect jump at 0x%" PRIx64
				 " (a vtable or GOT tail call), whose target is not known",
				 in->addr);
			*nr = 0;
			return 1;
		}
	}
	return 0;
}

static int read_data(void *ctx, uint64_t addr, size_t len, const uint8_t **bytes)
{
	return target__data(ctx, addr, len, bytes);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Every distinct direct tail-jump target of the out-of-line poll fns, sorted. */
static int collect_targets(const struct model *m, uint64_t **out, uint32_t *nr)
{
	uint32_t n = 0, cap = 0;
	uint64_t *v = NULL;

	for (uint32_t i = 0; i < m->nr_polls; i++) {
		const struct poll_fn *p = &m->polls[i];

		for (uint32_t k = 0; !p->inlined_only && k < p->nr_exits; k++) {
			if (p->exits[k].kind != EXIT_TAIL_JMP)
				continue;
			if (n == cap) {
				uint32_t ncap = cap ? cap * 2 : 16;
				uint64_t *nv = realloc(v, ncap * sizeof(*v));

				if (!nv) {
					free(v);
					return -ENOMEM;
				}
				v = nv;
				cap = ncap;
			}
			v[n++] = p->exits[k].target;
		}
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_u64);
	uint32_t u = 0;
	for (uint32_t i = 0; i < n; i++)
		if (!u || v[u - 1] != v[i])
			v[u++] = v[i];
	*out = v;
	*nr = u;
	return 0;
}

/* Bounds, name, code and rets of the function at c->addr; c->unfollowed says what failed. */
static int read_callee(struct target *t, struct model *m, struct tail_callee *c)
{
	char why[256] = "", err[200] = "";
	GElf_Off off = 0;
	GElf_Sym sym;
	const uint8_t *code;
	const char *name;
	struct cfg g;
	uint64_t *rets;
	int r;

	for (uint32_t i = 0; i < m->nr_polls; i++)
		if (!m->polls[i].inlined_only && m->polls[i].addr == c->addr)
			c->poll = (int32_t)i;
	name = dwfl_module_addrinfo(t->module, c->addr + t->bias, &off, &sym, NULL, NULL, NULL);
	if (!name || off != 0 || GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_size) {
		snprintf(why, sizeof(why),
			 "no function symbol starts at the jump target, so where it ends is "
			 "not known");
		goto unfollowed;
	}
	c->size = sym.st_size;
	c->name = symbol__demangle(&m->strings, name);
	if (!c->name)
		return -ENOMEM;
	if (target__file_offset(t, c->addr, &c->file_offset) ||
	    target__code(t, c->addr, c->size, &code)) {
		snprintf(why, sizeof(why), "its code is not in an executable section");
		goto unfollowed;
	}
	r = cfg__build(&g, code, c->size, c->addr, read_data, t, err, sizeof(err));
	if (r == -ENOMEM)
		return r;
	if (r) {
		snprintf(why, sizeof(why), "its code could not be decoded: %s",
			 err[0] ? err : strerror(-r));
		goto unfollowed;
	}
	rets = calloc(g.nr_exits ? g.nr_exits : 1, sizeof(*rets));
	if (!rets) {
		cfg__free(&g);
		return -ENOMEM;
	}
	r = tail_calls__callee_rets(&g, rets, &c->nr_rets, why, sizeof(why));
	cfg__free(&g);
	for (uint32_t k = 0; !r && k < c->nr_rets; k++)
		if (target__file_offset(t, rets[k], &rets[k])) {
			snprintf(why, sizeof(why), "its ret at 0x%" PRIx64 " has no file offset",
				 rets[k]);
			r = 1;
		}
	if (!r) {
		c->ret_offsets = rets;
		return 0;
	}
	free(rets);
	c->nr_rets = 0;
unfollowed:
	c->unfollowed = strpool__intern(&m->strings, why);
	return c->unfollowed ? 0 : -ENOMEM;
}

int tail_calls__find(struct target *t, struct model *m)
{
	uint64_t *targets = NULL;
	uint32_t nr = 0;
	int r = collect_targets(m, &targets, &nr);

	for (uint32_t i = 0; !r && i < nr; i++) {
		struct tail_callee *c = model__add_tail_callee(m);

		if (!c) {
			r = -ENOMEM;
			break;
		}
		c->addr = targets[i];
		r = read_callee(t, m, c);
	}
	free(targets);
	return r;
}
