// SPDX-License-Identifier: GPL-2.0
/*
 * Basic blocks, edges and exits of one function (cfg.h). Jump tables are found by
 * dataflow inside a block (below) and, when a reader is given, read from the
 * binary: their targets are real edges, so the state dispatch of a compiler
 * future (a table indexed by __state) leads to each state's code.
 */
#include "analyze/cfg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <capstone/capstone.h>

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static bool in_function(const struct cfg *g, uint64_t target)
{
	return target - g->addr < g->size;
}

static bool ends_block(const struct insn *in)
{
	return in->flow == INSN_FLOW_RET || in->flow == INSN_FLOW_JMP ||
	       in->flow == INSN_FLOW_JMP_INDIRECT || in->flow == INSN_FLOW_JCC ||
	       in->flow == INSN_FLOW_STOP;
}

/*
 * Jump-table dispatch, found by dataflow inside one basic block. Each register
 * carries a value number; what we know about the value rides along with copies.
 *   lea    rX, [rip + table]          rX: TABLE_BASE (address known)
 *   movsxd rY, dword ptr [rX + rZ*4]  rY: TABLE_ENTRY of value(rX)
 *   add    rY, rX  (or add rX, rY)    TABLE_TARGET: entry + the base it was read from
 *   jmp    rY                         dispatch, not an exit
 * The base is a rip-relative lea in this block, or a value live on entry to the
 * block (LLVM hoists the lea out of loops; its address is then found from the one
 * `lea` of that register in the function, if there is exactly one); what makes it a
 * jump table is adding back the very base value the entry was loaded from.
 */
enum table_kind { TABLE_NONE, TABLE_BASE, TABLE_ENTRY, TABLE_TARGET };

struct table_value {
	uint32_t id;
	enum table_kind kind;
	uint32_t base_id; /* TABLE_ENTRY/TARGET: value number of the base */
	uint64_t base;	  /* the table's address, 0 if unknown */
	int8_t base_reg;  /* register the live-in base came from, -1 */
};

struct table_state {
	struct table_value reg[INSN_NR_GPRS];
	uint32_t next_id;
	uint32_t live_in_max; /* value numbers up to this one were live on entry to the block */
};

static void table_reset(struct table_state *t)
{
	for (int r = 0; r < INSN_NR_GPRS; r++) {
		t->reg[r] = (struct table_value){.id = ++t->next_id, .base_reg = (int8_t)r};
	}
	t->live_in_max = t->next_id;
}

static bool table_pair(const struct table_value *a, const struct table_value *b,
		       struct table_value *target)
{
	const struct table_value *e = a->kind == TABLE_ENTRY ? a : b, *base = e == a ? b : a;

	if (e->kind != TABLE_ENTRY || e->base_id != base->id)
		return false;
	target->kind = TABLE_TARGET;
	target->base = e->base;
	target->base_reg = e->base_reg;
	return true;
}

static void table_step(struct table_state *t, const struct insn *in)
{
	const struct insn_op *op0 = &in->ops[0], *op1 = &in->ops[1];
	struct table_value pre[INSN_NR_GPRS], result = {0};
	int dst = -1;

	memcpy(pre, t->reg, sizeof(pre));
	result.base_reg = -1;
	if (in->nr_ops == 2 && insn__gpr64(op0) >= 0) {
		dst = insn__gpr64(op0);
		if (in->id == X86_INS_LEA && op1->base == DWARF_REG_RIP && op1->index < 0) {
			result.kind = TABLE_BASE;
			result.base = in->addr + in->size + (uint64_t)op1->value;
		} else if (in->id == X86_INS_MOVSXD && op1->type == INSN_OP_MEM && op1->size == 4 &&
			   op1->scale == 4 && op1->base >= 0 && op1->base < INSN_NR_GPRS &&
			   op1->index >= 0 && op1->value == 0) {
			const struct table_value *base = &pre[op1->base];

			if (base->kind == TABLE_BASE || base->id <= t->live_in_max) {
				result.kind = TABLE_ENTRY;
				result.base_id = base->id;
				result.base = base->kind == TABLE_BASE ? base->base : 0;
				result.base_reg = base->kind == TABLE_BASE ? -1 : base->base_reg;
			}
		} else if (in->id == X86_INS_ADD && insn__gpr64(op1) >= 0) {
			table_pair(&pre[dst], &pre[insn__gpr64(op1)], &result);
		} else if (in->id == X86_INS_LEA && op1->value == 0 && op1->scale == 1 &&
			   op1->base >= 0 && op1->base < INSN_NR_GPRS && op1->index >= 0) {
			table_pair(&pre[op1->base], &pre[op1->index], &result);
		} else if (in->id == X86_INS_MOV && insn__gpr64(op1) >= 0) {
			result = pre[insn__gpr64(op1)]; /* a copy keeps its value number */
		}
	}

	/* everything written gets a fresh, unknown value */
	if (!in->regs_known) {
		table_reset(t);
		t->live_in_max = 0; /* nothing known */
		return;
	}
	for (int r = 0; r < INSN_NR_GPRS; r++)
		if (in->gpr_written & (1u << r))
			t->reg[r] = (struct table_value){.id = ++t->next_id, .base_reg = -1};
	if (in->flow == INSN_FLOW_CALL) {
		/* the callee clobbers the caller-saved registers */
		static const int clobbered[] = {0, 1, 2, 4, 5, 8, 9, 10, 11};

		for (size_t i = 0; i < sizeof(clobbered) / sizeof(clobbered[0]); i++)
			t->reg[clobbered[i]] =
			    (struct table_value){.id = ++t->next_id, .base_reg = -1};
	}
	if (dst >= 0 && (result.kind != TABLE_NONE || (in->id == X86_INS_MOV && result.id))) {
		if (!result.id)
			result.id = ++t->next_id;
		t->reg[dst] = result;
	}
}

/* Is this jmp a jump-table dispatch? *base: the table's address (0 unknown),
 * *entry_size: 4 (relative entries) or 8 (absolute, non-PIC). */
static bool table_dispatch(const struct table_state *t, const struct insn *in, uint64_t *base,
			   int8_t *base_reg, unsigned *entry_size)
{
	const struct insn_op *op = &in->ops[0];

	if (op->type == INSN_OP_REG) {
		if (op->reg < 0 || t->reg[op->reg].kind != TABLE_TARGET)
			return false;
		*base = t->reg[op->reg].base;
		*base_reg = t->reg[op->reg].base_reg;
		*entry_size = 4;
		return true;
	}
	/* non-PIC code (static relocation model): jmp qword ptr [table + rZ*8] */
	if (op->type == INSN_OP_MEM && op->base == -1 && !op->other_base && op->index >= 0 &&
	    op->scale == 8 && !op->segment) {
		*base = (uint64_t)op->value;
		*base_reg = -1;
		*entry_size = 8;
		return true;
	}
	return false;
}

/* A hoisted table base: the function's only `lea reg, [rip + X]` into reg. */
static uint64_t hoisted_base(const struct cfg *g, int8_t reg)
{
	uint64_t found = 0;

	if (reg < 0)
		return 0;
	for (uint32_t i = 0; i < g->seq.nr; i++) {
		const struct insn *in = &g->seq.insns[i];

		if (in->id == X86_INS_LEA && insn__gpr64(&in->ops[0]) == reg &&
		    in->ops[1].base == DWARF_REG_RIP && in->ops[1].index < 0) {
			uint64_t a = in->addr + in->size + (uint64_t)in->ops[1].value;

			if (found && found != a)
				return 0;
			found = a;
		}
	}
	return found;
}

static bool bit_test(const uint8_t *map, uint64_t i)
{
	return map[i / 8] & (1u << (i % 8));
}

static void bit_set(uint8_t *map, uint64_t i)
{
	map[i / 8] |= (uint8_t)(1u << (i % 8));
}

struct table {
	uint32_t insn; /* the dispatch */
	uint64_t *targets;
	uint32_t nr;
	bool resolved;
};

struct build {
	struct cfg *g;
	cfg_read_fn read;
	void *read_ctx;
	uint8_t *insn_start, *leader;
	struct table *tables;
	uint32_t nr_tables, cap_tables;
	char *err;
	size_t errlen;
};

/* Read a table's targets: valid while they are instruction starts in the function. */
static int read_table(struct build *b, struct table *t, uint64_t base, unsigned entry_size)
{
	struct cfg *g = b->g;
	uint32_t cap = 0;

	if (!base || !b->read)
		return 0;
	for (uint32_t i = 0; i < CFG_MAX_TABLE_ENTRIES; i++) {
		const uint8_t *p;
		uint64_t target;

		if (b->read(b->read_ctx, base + (uint64_t)i * entry_size, entry_size, &p))
			break;
		if (entry_size == 4) {
			int32_t rel;
			memcpy(&rel, p, 4);
			target = base + (uint64_t)(int64_t)rel;
		} else {
			memcpy(&target, p, 8);
		}
		if (!in_function(g, target) || !bit_test(b->insn_start, target - g->addr))
			break;
		if (t->nr == cap) {
			uint32_t ncap = cap ? cap * 2 : 16;
			uint64_t *n = realloc(t->targets, ncap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			t->targets = n;
			cap = ncap;
		}
		t->targets[t->nr++] = target;
	}
	t->resolved = t->nr > 0;
	return 0;
}

static int add_exit(struct cfg *g, uint32_t *cap, uint32_t insn, enum cfg_exit_kind kind,
		    uint64_t target)
{
	if (g->nr_exits == *cap) {
		uint32_t ncap = *cap ? *cap * 2 : 8;
		struct cfg_exit *n = realloc(g->exits, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		g->exits = n;
		*cap = ncap;
	}
	g->exits[g->nr_exits++] = (struct cfg_exit){.insn = insn, .kind = kind, .target = target};
	return 0;
}

/* Leaders from direct branches, then exits and jump tables (one sweep). */
static int find_leaders_exits_tables(struct build *b)
{
	struct cfg *g = b->g;
	struct table_state ts = {0};
	bool block_ended = true;
	uint32_t cap_exits = 0;

	for (uint32_t i = 0; i < g->seq.nr; i++) {
		const struct insn *in = &g->seq.insns[i];

		bit_set(b->insn_start, in->offset);
		if ((in->flow == INSN_FLOW_JMP || in->flow == INSN_FLOW_JCC ||
		     in->flow == INSN_FLOW_CALL) &&
		    in->target && in_function(g, in->target))
			bit_set(b->leader, in->target - g->addr);
	}
	for (uint64_t i = 0; i < g->size; i++) {
		if (bit_test(b->leader, i) && !bit_test(b->insn_start, i)) {
			set_err(b->err, b->errlen,
				"decode failed at 0x%" PRIx64 ": a branch targets the middle of an "
				"instruction, so the bytes are not one linear run of code",
				g->addr + i);
			return -EINVAL;
		}
	}
	for (uint32_t i = 0; i < g->seq.nr; i++) {
		const struct insn *in = &g->seq.insns[i];
		int err = 0;

		if (block_ended || bit_test(b->leader, in->offset))
			table_reset(&ts);
		block_ended = ends_block(in);
		if (in->flow == INSN_FLOW_RET) {
			err = add_exit(g, &cap_exits, i, CFG_EXIT_RET, 0);
		} else if ((in->flow == INSN_FLOW_JMP || in->flow == INSN_FLOW_JCC) &&
			   !in_function(g, in->target)) {
			err = add_exit(g, &cap_exits, i, CFG_EXIT_TAIL_JMP, in->target);
		} else if (in->flow == INSN_FLOW_JMP_INDIRECT) {
			uint64_t base;
			int8_t base_reg;
			unsigned entry_size;

			if (!table_dispatch(&ts, in, &base, &base_reg, &entry_size)) {
				err = add_exit(g, &cap_exits, i, CFG_EXIT_TAIL_JMP_INDIRECT, 0);
			} else {
				if (b->nr_tables == b->cap_tables) {
					uint32_t ncap = b->cap_tables ? b->cap_tables * 2 : 4;
					struct table *n = realloc(b->tables, ncap * sizeof(*n));
					if (!n)
						return -ENOMEM;
					b->tables = n;
					b->cap_tables = ncap;
				}
				struct table *t = &b->tables[b->nr_tables++];
				*t = (struct table){.insn = i};
				if (!base)
					base = hoisted_base(g, base_reg);
				err = read_table(b, t, base, entry_size);
			}
		}
		if (err) {
			set_err(b->err, b->errlen,
				"out of memory analysing the function at 0x%" PRIx64, g->addr);
			return err;
		}
		table_step(&ts, in);
	}
	for (uint32_t k = 0; k < b->nr_tables; k++)
		for (uint32_t j = 0; j < b->tables[k].nr; j++)
			bit_set(b->leader, b->tables[k].targets[j] - g->addr);
	return 0;
}

static uint32_t block_at(const struct cfg *g, uint64_t addr)
{
	int64_t i = insn_seq__find(&g->seq, addr);

	return i < 0 ? CFG_NONE : g->block_of[i];
}

static int make_blocks(struct build *b)
{
	struct cfg *g = b->g;
	uint32_t cap = 0;

	g->block_of = malloc((size_t)g->seq.nr * sizeof(*g->block_of));
	if (!g->block_of)
		return -ENOMEM;
	for (uint32_t i = 0; i < g->seq.nr; i++) {
		const struct insn *in = &g->seq.insns[i];

		if (i == 0 || bit_test(b->leader, in->offset) || ends_block(&g->seq.insns[i - 1])) {
			if (g->nr_blocks == cap) {
				uint32_t ncap = cap ? cap * 2 : 16;
				struct cfg_block *n = realloc(g->blocks, ncap * sizeof(*n));
				if (!n)
					return -ENOMEM;
				g->blocks = n;
				cap = ncap;
			}
			g->blocks[g->nr_blocks++] = (struct cfg_block){
			    .first = i, .succ = {CFG_NONE, CFG_NONE}, .table_first = 0};
		}
		g->blocks[g->nr_blocks - 1].last = i;
		g->block_of[i] = g->nr_blocks - 1;
	}
	return 0;
}

static int link_blocks(struct build *b)
{
	struct cfg *g = b->g;
	uint32_t total = 0, at = 0;
	bool unresolved = false;

	for (uint32_t k = 0; k < b->nr_tables; k++)
		total += b->tables[k].nr;
	if (total) {
		g->table_succ = malloc(total * sizeof(*g->table_succ));
		if (!g->table_succ)
			return -ENOMEM;
	}
	for (uint32_t bi = 0; bi < g->nr_blocks; bi++) {
		struct cfg_block *blk = &g->blocks[bi];
		const struct insn *last = &g->seq.insns[blk->last];
		bool falls = last->flow == INSN_FLOW_NONE || last->flow == INSN_FLOW_JCC ||
			     last->flow == INSN_FLOW_CALL;

		if (falls && blk->last + 1 < g->seq.nr)
			blk->succ[0] = g->block_of[blk->last + 1];
		if ((last->flow == INSN_FLOW_JMP || last->flow == INSN_FLOW_JCC) &&
		    in_function(g, last->target))
			blk->succ[1] = block_at(g, last->target);
	}
	for (uint32_t k = 0; k < b->nr_tables; k++) {
		struct table *t = &b->tables[k];
		struct cfg_block *blk = &g->blocks[g->block_of[t->insn]];

		blk->dispatch = true;
		blk->table_resolved = t->resolved;
		blk->table_first = at;
		g->nr_dispatch++;
		if (!t->resolved) {
			g->nr_unresolved_dispatch++;
			unresolved = true;
		}
		for (uint32_t j = 0; j < t->nr; j++) {
			uint32_t tb = block_at(g, t->targets[j]);
			bool dup = false;

			for (uint32_t q = blk->table_first; q < at && !dup; q++)
				dup = g->table_succ[q] == tb;
			if (tb != CFG_NONE && !dup)
				g->table_succ[at++] = tb;
		}
		blk->nr_table = at - blk->table_first;
	}
	g->nr_table_succ = at;
	for (uint32_t bi = 0; bi < g->nr_blocks; bi++) {
		const struct cfg_block *blk = &g->blocks[bi];

		for (int s = 0; s < 2; s++)
			if (blk->succ[s] != CFG_NONE && (s == 0 || blk->succ[0] != blk->succ[1]))
				g->blocks[blk->succ[s]].nr_preds++;
		for (uint32_t q = 0; q < blk->nr_table; q++)
			g->blocks[g->table_succ[blk->table_first + q]].nr_preds++;
	}
	g->preds = malloc((g->nr_table_succ + 2 * (size_t)g->nr_blocks) * sizeof(*g->preds));
	if (!g->preds)
		return -ENOMEM;
	for (uint32_t bi = 0, at_pred = 0; bi < g->nr_blocks; bi++) {
		g->blocks[bi].pred_first = at_pred;
		at_pred += g->blocks[bi].nr_preds;
		g->blocks[bi].nr_preds = 0; /* refilled below */
	}
	for (uint32_t bi = 0; bi < g->nr_blocks; bi++) {
		const struct cfg_block *blk = &g->blocks[bi];

		for (uint32_t k = 0; k < 2 + blk->nr_table; k++) {
			uint32_t s =
			    k < 2 ? blk->succ[k] : g->table_succ[blk->table_first + (k - 2)];
			if (s == CFG_NONE || (k == 1 && blk->succ[0] == blk->succ[1]))
				continue;
			struct cfg_block *sb = &g->blocks[s];
			g->preds[sb->pred_first + sb->nr_preds++] = bi;
			g->nr_pred_edges++;
		}
	}
	/* An unread table may lead anywhere: no block but the entry has known inputs. */
	if (unresolved)
		for (uint32_t bi = 1; bi < g->nr_blocks; bi++)
			g->blocks[bi].unknown_preds = true;
	return 0;
}

/* Reverse post-order of the blocks reachable from the entry (iterative DFS). */
static int order_blocks(struct cfg *g)
{
	uint32_t *stack, *next, *post, nr_post = 0, sp = 0;

	stack = malloc(g->nr_blocks * sizeof(*stack));
	next = calloc(g->nr_blocks, sizeof(*next));
	post = malloc(g->nr_blocks * sizeof(*post));
	g->rpo = malloc(g->nr_blocks * sizeof(*g->rpo));
	if (!stack || !next || !post || !g->rpo) {
		free(stack);
		free(next);
		free(post);
		return -ENOMEM;
	}
	stack[sp++] = 0;
	g->blocks[0].reachable = true;
	while (sp) {
		uint32_t bi = stack[sp - 1];
		struct cfg_block *blk = &g->blocks[bi];
		uint32_t n = 2 + blk->nr_table, s = CFG_NONE;

		while (next[bi] < n && s == CFG_NONE) {
			uint32_t k = next[bi]++;
			uint32_t cand =
			    k < 2 ? blk->succ[k] : g->table_succ[blk->table_first + (k - 2)];
			if (cand != CFG_NONE && !g->blocks[cand].reachable)
				s = cand;
		}
		if (s == CFG_NONE) {
			post[nr_post++] = bi;
			sp--;
			continue;
		}
		g->blocks[s].reachable = true;
		stack[sp++] = s;
	}
	for (uint32_t i = 0; i < nr_post; i++)
		g->rpo[i] = post[nr_post - 1 - i];
	g->nr_rpo = nr_post;
	free(stack);
	free(next);
	free(post);
	return 0;
}

int cfg__build(struct cfg *g, const uint8_t *code, size_t size, uint64_t addr, cfg_read_fn read,
	       void *read_ctx, char *err, size_t errlen)
{
	struct build b = {.g = g, .read = read, .read_ctx = read_ctx, .err = err, .errlen = errlen};
	size_t map_len = size / 8 + 1;
	int ret;

	memset(g, 0, sizeof(*g));
	g->addr = addr;
	g->size = size;
	g->code = code;
	if (err && errlen)
		err[0] = '\0';
	if (!code || !size) {
		set_err(err, errlen, "function at 0x%" PRIx64 " has no bytes to disassemble", addr);
		return -EINVAL;
	}
	if (addr + size < addr) {
		set_err(err, errlen, "function at 0x%" PRIx64 " wraps the address space", addr);
		return -EINVAL;
	}
	ret = insn__decode(code, size, addr, &g->seq, err, errlen);
	if (ret)
		return ret;
	b.insn_start = calloc(1, map_len);
	b.leader = calloc(1, map_len);
	ret = -ENOMEM;
	if (!b.insn_start || !b.leader)
		goto out;
	ret = find_leaders_exits_tables(&b);
	if (!ret)
		ret = make_blocks(&b);
	if (!ret)
		ret = link_blocks(&b);
	if (!ret)
		ret = order_blocks(g);
out:
	if (ret == -ENOMEM && err && errlen && !err[0])
		set_err(err, errlen, "out of memory analysing the function at 0x%" PRIx64, addr);
	for (uint32_t k = 0; k < b.nr_tables; k++)
		free(b.tables[k].targets);
	free(b.tables);
	free(b.insn_start);
	free(b.leader);
	if (ret)
		cfg__free(g);
	return ret;
}

void cfg__free(struct cfg *g)
{
	insn_seq__free(&g->seq);
	free(g->blocks);
	free(g->block_of);
	free(g->table_succ);
	free(g->preds);
	free(g->rpo);
	free(g->exits);
	memset(g, 0, sizeof(*g));
}
