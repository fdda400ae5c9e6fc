// SPDX-License-Identifier: GPL-2.0
/*
 * Unwinding recorded samples with libdwfl (docs/profile.md, "Unwinding").
 *
 * One Dwfl per target, reported from /proc/PID/maps and attached once with our own
 * thread callbacks: the "thread" is whichever sample is being unwound, its initial
 * registers come from the record and memory reads are served from the record's
 * stack copy (and, outside it, from the mapped file). libdwfl keeps each module's
 * ELF, CFI and DWARF across samples; we add a per-pc cache of the symbolized inline
 * chain, so a hot loop is symbolized once.
 */
#include "profile/unwind.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/demangle.h"
#include "lib/hashmap.h"
#include "lib/strpool.h"
#include "analyze/target.h"

#define FRAME_CHUNK 4096u /* uframes per chunk: pointers into chunks never move */
#define MAX_CHAIN   64u	  /* inline levels kept per pc */
/* A failed read this far below the copy is taken as "a saved register the CFI puts
 * below the red zone": the walk may end there without having reached the end. */
#define BELOW_REACH 4096u
/* A failed read this far above sp is taken as "in the stack, past the copy". */
#define STACK_REACH (8u << 20)

struct unwinder {
	pid_t pid;
	Dwfl *dwfl;
	char *debuginfo_path;
	struct strpool pool;
	struct uframe **chunks;
	uint32_t nr_chunks, used_in_last;
	struct u64_map cache; /* lookup pc -> first << 8 | n (global uframe index) */
	uint64_t refreshes;
	/* the sample being unwound */
	const struct profile_sample *rec;
	const uint8_t *stack;
	Dwarf_Addr pcs[UNWIND_MAX_FRAMES];
	Dwarf_Addr raw[UNWIND_MAX_FRAMES]; /* as libdwfl gave them, return addresses whole */
	bool activation[UNWIND_MAX_FRAMES];
	uint32_t npcs;
	enum unwind_reason last_reason;
	bool read_past_copy, read_below_copy, too_deep;
	const char *unknown;
};

const char *unwind_reason__name(enum unwind_reason r)
{
	static const char *const names[] = {
	    [UNWIND_COMPLETE] = "complete",
	    [UNWIND_NO_REGS] = "no user registers",
	    [UNWIND_PC_OUTSIDE] = "pc outside any module",
	    [UNWIND_NO_CFI] = "no CFI for a pc",
	    [UNWIND_STACK_SHORT] = "stack copy too short",
	    [UNWIND_TOO_DEEP] = "too many frames",
	    [UNWIND_OTHER] = "other libdwfl error",
	};
	return (unsigned)r < UNWIND_REASON_COUNT ? names[r] : "?";
}

/* ---- thread callbacks: the current sample is the only thread ---- */

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct unwinder *u = arg;

	(void)dwfl;
	if (*thread_argp) /* one thread per call: the sample's */
		return 0;
	*thread_argp = u;
	return u->rec ? (pid_t)u->rec->tid : 0;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct unwinder *u = arg;

	(void)dwfl;
	if (!u->rec || (pid_t)u->rec->tid != tid)
		return false;
	*thread_argp = u;
	return true;
}

/* A word of a module's file image, for reads outside the stack copy (rare: CFI
 * expressions that dereference, PLT stubs). */
static bool read_module(struct unwinder *u, Dwarf_Addr addr, Dwarf_Word *out)
{
	Dwfl_Module *mod = dwfl_addrmodule(u->dwfl, addr);
	Dwarf_Addr bias;
	Elf *elf = mod ? dwfl_module_getelf(mod, &bias) : NULL;
	size_t nph, size;
	const char *raw;

	if (!elf || elf_getphdrnum(elf, &nph) || !(raw = elf_rawfile(elf, &size)))
		return false;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		uint64_t rel = addr - bias;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (rel >= ph.p_vaddr && ph.p_filesz >= 8 && rel - ph.p_vaddr <= ph.p_filesz - 8) {
			uint64_t off = ph.p_offset + (rel - ph.p_vaddr);

			if (off > size || size - off < 8)
				return false;
			memcpy(out, raw + off, 8);
			return true;
		}
	}
	return false;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct unwinder *u = arg;
	uint64_t sp = u->rec->regs[PROFILE_REG_SP];
	uint64_t base = sp - u->rec->below_sp; /* the copy starts in the red zone */

	(void)dwfl;
	if (addr >= base && addr - base <= (uint64_t)u->rec->stack_size &&
	    u->rec->stack_size - (addr - base) >= 8) {
		memcpy(result, u->stack + (addr - base), 8);
		return true;
	}
	if (read_module(u, addr, result))
		return true;
	if (addr >= sp && addr - sp < STACK_REACH)
		u->read_past_copy = true;
	else if (addr < base && base - addr <= BELOW_REACH)
		u->read_below_copy = true;
	return false;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct unwinder *u = arg;
	Dwarf_Word regs[PROFILE_NR_REGS];

	for (int i = 0; i < PROFILE_NR_REGS; i++)
		regs[i] = u->rec->regs[i];
	/* x86-64: DWARF registers 0..16, 16 being the return address column (rip) */
	return dwfl_thread_state_registers(thread, 0, PROFILE_NR_REGS, regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
    .next_thread = next_thread,
    .get_thread = get_thread,
    .memory_read = memory_read,
    .set_initial_registers = set_initial_registers,
};

/* Separate debuginfo as target.c finds it (never debuginfod), else none. */
static const Dwfl_Callbacks proc_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = target__find_debuginfo,
};

/*
 * Report the target's mappings. A re-read (`add`) keeps the modules reported before
 * (dwfl_report_begin_add): the walks kept for symbolization after sampling still
 * need them when the re-read fails (the target gone) or no longer lists them.
 */
static int report(struct unwinder *u, bool add, char *err, size_t errlen)
{
	int r;

	if (add)
		dwfl_report_begin_add(u->dwfl);
	else
		dwfl_report_begin(u->dwfl);
	r = dwfl_linux_proc_report(u->dwfl, u->pid);
	if (r) {
		int e = r > 0 ? r : EINVAL;

		dwfl_report_end(u->dwfl, NULL, NULL);
		if (err)
			snprintf(err, errlen, "cannot read the mappings of process %d: %s",
				 (int)u->pid, r > 0 ? strerror(r) : dwfl_errmsg(-1));
		return -e;
	}
	if (dwfl_report_end(u->dwfl, NULL, NULL)) {
		if (err)
			snprintf(err, errlen, "cannot report the modules of process %d: %s",
				 (int)u->pid, dwfl_errmsg(-1));
		return -EINVAL;
	}
	return 0;
}

struct unwinder *unwinder__new(pid_t pid, int *errp, char *err, size_t errlen)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	int r;

	if (!u) {
		*errp = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	u->pid = pid;
	strpool__init(&u->pool);
	u64_map__init(&u->cache);
	u->unknown = strpool__intern(&u->pool, "[unknown]");
	u->dwfl = dwfl_begin(&proc_callbacks);
	if (!u->dwfl || !u->unknown) {
		*errp = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		unwinder__free(u);
		return NULL;
	}
	r = report(u, false, err, errlen);
	if (r) {
		*errp = r;
		unwinder__free(u);
		return NULL;
	}
	/* NULL elf: libdwfl takes the machine from the first module's ELF */
	if (!dwfl_attach_state(u->dwfl, NULL, pid, &thread_callbacks, u)) {
		*errp = -EINVAL;
		snprintf(err, errlen, "libdwfl cannot unwind process %d: %s", (int)pid,
			 dwfl_errmsg(-1));
		unwinder__free(u);
		return NULL;
	}
	return u;
}

int unwinder__refresh(struct unwinder *u)
{
	u->refreshes++;
	u64_map__clear(&u->cache);
	return report(u, true, NULL, 0);
}

void unwinder__stats(const struct unwinder *u, uint64_t *cached_pcs, uint64_t *refreshes)
{
	*cached_pcs = u->cache.nr_used;
	*refreshes = u->refreshes;
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	if (u->dwfl)
		dwfl_end(u->dwfl);
	for (uint32_t i = 0; i < u->nr_chunks; i++)
		free(u->chunks[i]);
	free(u->chunks);
	u64_map__free(&u->cache);
	strpool__free(&u->pool);
	free(u);
}

/* ---- symbolization ---- */

/* n contiguous uframes that never move; NULL on ENOMEM. */
static struct uframe *frames_alloc(struct unwinder *u, uint32_t n, uint64_t *index)
{
	if (!u->nr_chunks || u->used_in_last + n > FRAME_CHUNK) {
		struct uframe **chunks = realloc(u->chunks, (u->nr_chunks + 1) * sizeof(*chunks));

		if (!chunks)
			return NULL;
		u->chunks = chunks;
		if (!(chunks[u->nr_chunks] = calloc(FRAME_CHUNK, sizeof(struct uframe))))
			return NULL;
		u->nr_chunks++;
		u->used_in_last = 0;
	}
	*index = (uint64_t)(u->nr_chunks - 1) * FRAME_CHUNK + u->used_in_last;
	u->used_in_last += n;
	return &u->chunks[u->nr_chunks - 1][*index % FRAME_CHUNK];
}

static const struct uframe *frame_at(const struct unwinder *u, uint64_t index)
{
	return &u->chunks[index / FRAME_CHUNK][index % FRAME_CHUNK];
}

static void die_names(struct unwinder *u, Dwarf_Die *die, const char **linkage, const char **name)
{
	Dwarf_Attribute a;
	const char *ln = NULL, *dn = NULL;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		ln = dwarf_formstring(&a);
	if (dwarf_attr_integrate(die, DW_AT_name, &a))
		dn = dwarf_formstring(&a);
	*linkage = ln ? strpool__intern(&u->pool, ln) : NULL;
	*name = ln ? symbol__demangle(&u->pool, ln) : dn ? strpool__intern(&u->pool, dn) : NULL;
	if (!*name)
		*name = u->unknown;
}

struct chain_level {
	const char *name, *linkage, *file;
	uint32_t line;
	bool inlined;
};

#define MAX_SCOPE_DEPTH 48 /* namespaces + functions + blocks: deeper is hostile */

/*
 * The function scopes containing pc below parent, outermost first: subprograms and
 * inlined copies, descending through namespaces (where rustc puts functions) and
 * lexical blocks. Written here because elfutils 0.188's dwarf_getscopes returns no
 * scope at all for pcs of rustc's optimized coroutines (found on the release
 * fixtures: the inlined polls' DIEs are there, the lookup fails), and because its
 * chain continues with abstract definitions, not callers. Bounded depth.
 */
static bool scope_walk(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *out, uint32_t *n, int depth)
{
	Dwarf_Die c;

	if (depth > MAX_SCOPE_DEPTH || dwarf_child(parent, &c) != 0)
		return false;
	do {
		int tag = dwarf_tag(&c);

		if (tag == DW_TAG_namespace || tag == DW_TAG_module) {
			if (scope_walk(&c, pc, out, n, depth + 1))
				return true;
			continue;
		}
		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine &&
		    tag != DW_TAG_lexical_block)
			continue;
		if (dwarf_haspc(&c, pc) <= 0)
			continue;
		if (tag != DW_TAG_lexical_block && *n < MAX_CHAIN)
			out[(*n)++] = c;
		scope_walk(&c, pc, out, n, depth + 1);
		return true;
	} while (dwarf_siblingof(&c, &c) == 0);
	return false;
}

/* The inline chain at pc from DWARF, innermost first; 0 when there is none. */
static uint32_t dwarf_chain(struct unwinder *u, Dwfl_Module *mod, Dwarf_Addr pc,
			    struct chain_level *out)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, pc, &bias);
	Dwarf_Die scopes[MAX_CHAIN];
	Dwfl_Line *l;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	const char *file = NULL;
	int line = 0;
	uint32_t ns = 0, n = 0;

	if (!cu)
		return 0;
	if ((l = dwfl_module_getsrc(mod, pc)) != NULL) {
		const char *f = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);

		file = f ? strpool__intern(&u->pool, f) : NULL;
	}
	scope_walk(cu, pc - bias, scopes, &ns, 0);
	if (!ns)
		return 0;
	dwarf_getsrcfiles(cu, &files, &nfiles);
	/* scopes[] is outermost first: walk it backwards */
	for (uint32_t k = ns; k-- > 0 && n < MAX_CHAIN;) {
		Dwarf_Die *d = &scopes[k];
		int tag = dwarf_tag(d);
		Dwarf_Attribute a;
		Dwarf_Word v;

		die_names(u, d, &out[n].linkage, &out[n].name);
		if (tag == DW_TAG_subprogram && !out[n].linkage) {
			/* Rust with line tables only: a bare `{async_fn#0}`; its (mangled)
			 * symbol names it. C functions have no linkage name: keep theirs. */
			const char *sym = dwfl_module_addrname(mod, pc);

			if (sym && (!strncmp(sym, "_ZN", 3) || !strncmp(sym, "_R", 2))) {
				out[n].linkage = strpool__intern(&u->pool, sym);
				out[n].name = symbol__demangle(&u->pool, sym);
				if (!out[n].name)
					out[n].name = u->unknown;
			}
		}
		out[n].file = file;
		out[n].line = line > 0 ? (uint32_t)line : 0;
		out[n].inlined = tag == DW_TAG_inlined_subroutine;
		n++;
		if (tag == DW_TAG_subprogram)
			break; /* the physical function */
		/* the caller's location is this inlined copy's call site */
		file = NULL;
		line = 0;
		if (dwarf_attr(d, DW_AT_call_file, &a) && !dwarf_formudata(&a, &v) && files &&
		    v < nfiles) {
			const char *f = dwarf_filesrc(files, v, NULL, NULL);

			file = f ? strpool__intern(&u->pool, f) : NULL;
		}
		if (dwarf_attr(d, DW_AT_call_line, &a) && !dwarf_formudata(&a, &v) &&
		    v <= INT32_MAX)
			line = (int)v;
	}
	return n;
}

/* Symbolize one lookup pc (cached): sets *first (global index) and returns the count. */
static uint32_t symbolize(struct unwinder *u, Dwarf_Addr pc, uint64_t *first)
{
	struct chain_level chain[MAX_CHAIN];
	Dwfl_Module *mod;
	const char *modname = NULL;
	struct uframe *f;
	uint64_t v;
	uint32_t n = 0;

	if (u64_map__get(&u->cache, pc, &v)) {
		*first = v >> 8;
		return (uint32_t)(v & 0xff);
	}
	mod = dwfl_addrmodule(u->dwfl, pc);
	if (mod) {
		const char *m = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);

		modname = m ? strpool__intern(&u->pool, m) : NULL;
		n = dwarf_chain(u, mod, pc, chain);
		if (!n) {
			const char *sym = dwfl_module_addrname(mod, pc);

			chain[0].linkage = sym ? strpool__intern(&u->pool, sym) : NULL;
			chain[0].name = sym ? symbol__demangle(&u->pool, sym) : NULL;
			chain[0].file = NULL;
			chain[0].line = 0;
			chain[0].inlined = false;
			if (!chain[0].name)
				chain[0].name = u->unknown;
			n = 1;
		}
	} else {
		chain[0] = (struct chain_level){.name = u->unknown};
		n = 1;
	}
	f = frames_alloc(u, n, first);
	if (!f)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		f[i] = (struct uframe){
		    .name = chain[i].name,
		    .linkage = chain[i].linkage,
		    .file = chain[i].file,
		    .line = chain[i].line,
		    .inlined = chain[i].inlined,
		    .pc = pc,
		    .module = modname,
		};
	u64_map__set(&u->cache, pc, *first << 8 | n); /* ENOMEM: just not cached */
	return n;
}

/* ---- unwinding ---- */

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct unwinder *u = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	if (u->npcs == UNWIND_MAX_FRAMES) {
		u->too_deep = true;
		return DWARF_CB_ABORT;
	}
	/* a return address points after the call: look up the call itself */
	u->raw[u->npcs] = pc;
	u->activation[u->npcs] = activation;
	u->pcs[u->npcs++] = activation || !pc ? pc : pc - 1;
	return DWARF_CB_OK;
}

/*
 * Whether pc is in a function every thread starts in (glibc's and the kernel's
 * convention on x86-64): nothing real lies above it, whatever libdwfl finds there.
 */
static bool thread_entry(struct unwinder *u, Dwarf_Addr pc)
{
	static const char *const entries[] = {"_start",	 "clone3",	 "__clone3",	 "clone",
					      "__clone", "start_thread", "__GI___clone3"};
	Dwfl_Module *mod = dwfl_addrmodule(u->dwfl, pc);
	const char *name = mod ? dwfl_module_addrname(mod, pc) : NULL;

	for (size_t i = 0; name && i < sizeof(entries) / sizeof(entries[0]); i++)
		if (!strcmp(name, entries[i]))
			return true;
	return false;
}

static enum unwind_reason why_stopped(struct unwinder *u, int r)
{
	Dwfl_Module *mod;
	Dwarf_Addr bias;

	if (u->too_deep)
		return UNWIND_TOO_DEEP;
	if (!u->npcs)
		return dwfl_addrmodule(u->dwfl, u->rec->regs[PROFILE_REG_IP]) ? UNWIND_OTHER
									      : UNWIND_PC_OUTSIDE;
	/* libdwfl ends quietly (0) at a failed read or an unknown pc too; and past a pc in
	 * no module it goes on by frame-pointer guesses: cut there. Right after a
	 * thread's first frame (_start, clone3, ...) that is the stack's normal end. */
	for (uint32_t i = 0; i < u->npcs; i++)
		if (!dwfl_addrmodule(u->dwfl, u->pcs[i])) {
			u->npcs = i;
			return i && thread_entry(u, u->pcs[i - 1]) ? UNWIND_COMPLETE
								   : UNWIND_PC_OUTSIDE;
		}
	mod = dwfl_addrmodule(u->dwfl, u->pcs[u->npcs - 1]);
	/* past the copy, unless the copy already reached the top of the stack */
	if (u->read_past_copy && !(u->rec->flags & (PROFILE_F_STACK_FAULT | PROFILE_F_STACK_TOP)))
		return UNWIND_STACK_SHORT;
	/* libdwfl ends quietly when a register the caller's CFA needs could not be read:
	 * not the thread's end unless the walk is at its entry */
	if (r == 0 && u->read_below_copy && !thread_entry(u, u->pcs[u->npcs - 1]))
		return UNWIND_OTHER;
	if (r == 0)
		return UNWIND_COMPLETE;
	if (!dwfl_module_eh_cfi(mod, &bias) && !dwfl_module_dwarf_cfi(mod, &bias))
		return UNWIND_NO_CFI;
	return UNWIND_OTHER;
}

enum unwind_reason unwinder__walk(struct unwinder *u, const struct profile_sample *rec,
				  const uint8_t *stack)
{
	int r;

	u->npcs = 0;
	if ((rec->flags & PROFILE_F_KERNEL_THREAD) || !rec->regs[PROFILE_REG_IP] ||
	    !rec->regs[PROFILE_REG_SP])
		return u->last_reason = UNWIND_NO_REGS;
	u->rec = rec;
	u->stack = stack;
	u->read_past_copy = false;
	u->read_below_copy = false;
	u->too_deep = false;
	r = dwfl_getthread_frames(u->dwfl, (pid_t)rec->tid, frame_cb, u);
	u->last_reason = why_stopped(u, r);
	if (!u->npcs && u->last_reason == UNWIND_COMPLETE)
		u->last_reason = UNWIND_OTHER;
	u->rec = NULL;
	return u->last_reason;
}

uint32_t unwinder__frames(struct unwinder *u, struct unwind_result *out)
{
	out->nframes = 0;
	out->reason = u->last_reason;
	for (uint32_t i = 0; i < u->npcs; i++) {
		uint64_t first;
		uint32_t n = symbolize(u, u->pcs[i], &first);

		for (uint32_t k = 0; k < n && out->nframes < UNWIND_MAX_LOGICAL; k++)
			out->frames[out->nframes++] = frame_at(u, first + k);
	}
	out->nphysical = u->npcs;
	if (!out->nframes && out->reason == UNWIND_COMPLETE)
		out->reason = UNWIND_OTHER;
	return out->nframes;
}

enum unwind_reason unwinder__last_reason(const struct unwinder *u)
{
	return u->last_reason;
}

uint32_t unwinder__unwind(struct unwinder *u, const struct profile_sample *rec,
			  const uint8_t *stack, struct unwind_result *out)
{
	unwinder__walk(u, rec, stack);
	return unwinder__frames(u, out);
}

uint32_t unwinder__walked(const struct unwinder *u, uint64_t *pcs, uint32_t max)
{
	uint32_t n = u->npcs < max ? u->npcs : max;

	for (uint32_t i = 0; i < n; i++)
		pcs[i] = u->pcs[i];
	return n;
}

uint32_t unwinder__symbolize(struct unwinder *u, const uint64_t *pcs, uint32_t n,
			     enum unwind_reason reason, struct unwind_result *out)
{
	out->nframes = 0;
	out->nphysical = 0;
	out->reason = reason;
	for (uint32_t i = 0; i < n && i < UNWIND_MAX_FRAMES; i++) {
		uint64_t first;
		uint32_t k = symbolize(u, pcs[i], &first);

		for (uint32_t j = 0; j < k && out->nframes < UNWIND_MAX_LOGICAL; j++)
			out->frames[out->nframes++] = frame_at(u, first + j);
		out->nphysical++;
	}
	if (!out->nframes && out->reason == UNWIND_COMPLETE)
		out->reason = UNWIND_OTHER;
	return out->nframes;
}

/* DWARF register numbers of x86-64 (System V psABI) the rules deal in */
#define REG_BP 6
#define REG_SP 7
#define REG_RA 16

/* A register saved at CFA + *off (libdw's offset(N) rule): true. */
static bool saved_at_cfa(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (nops < 1 || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (nops == 1) {
		*off = 0;
		return true;
	}
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	return false;
}

/* The rule of the frame at lookup pc `pc`, from the CFI libdw unwinds with. */
static bool cfi_rule(struct unwinder *u, Dwarf_Addr pc, struct unwind_rule *rule)
{
	Dwfl_Module *mod = dwfl_addrmodule(u->dwfl, pc);
	Dwarf_Op mem[3], *ops;
	Dwarf_Frame *frame = NULL;
	Dwarf_Addr bias;
	size_t nops;
	int64_t off;
	bool ok = false;

	if (!mod)
		return false;
	for (int pass = 0; pass < 2 && !frame; pass++) {
		Dwarf_CFI *cfi =
		    pass ? dwfl_module_dwarf_cfi(mod, &bias) : dwfl_module_eh_cfi(mod, &bias);

		if (cfi && dwarf_cfi_addrframe(cfi, pc - bias, &frame))
			frame = NULL;
	}
	if (!frame)
		return false;
	memset(rule, 0, sizeof(*rule));
	/* CFA = rsp or rbp + N: libdw gives it as one DW_OP_bregx (or DW_OP_bregN) */
	if (dwarf_frame_cfa(frame, &ops, &nops) || nops != 1)
		goto out;
	if (ops[0].atom == DW_OP_bregx) {
		rule->cfa_reg = (uint8_t)ops[0].number;
		off = (int64_t)ops[0].number2;
	} else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		rule->cfa_reg = (uint8_t)(ops[0].atom - DW_OP_breg0);
		off = (int64_t)ops[0].number;
	} else {
		goto out;
	}
	if ((rule->cfa_reg != REG_SP && rule->cfa_reg != REG_BP) || off < INT32_MIN ||
	    off > INT32_MAX)
		goto out;
	rule->cfa_offset = (int32_t)off;
	/* the return address at CFA - 8, as every call leaves it */
	if (dwarf_frame_register(frame, REG_RA, mem, &ops, &nops) ||
	    !saved_at_cfa(ops, nops, &off) || off != -8)
		goto out;
	/* rbp: unchanged (same value, or undefined: nothing restores it), or saved */
	if (dwarf_frame_register(frame, REG_BP, mem, &ops, &nops))
		goto out;
	if (nops == 0) {
		rule->bp_rule = UNWIND_RULE_BP_SAME;
	} else if (saved_at_cfa(ops, nops, &off) && off >= INT32_MIN && off <= INT32_MAX) {
		rule->bp_rule = UNWIND_RULE_BP_AT_CFA;
		rule->bp_offset = (int32_t)off;
	} else {
		goto out;
	}
	ok = true;
out:
	free(frame);
	return ok;
}

uint32_t unwinder__rules(struct unwinder *u, struct learned_rule *out, uint32_t max)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < u->npcs && n < max; i++) {
		struct learned_rule *l = &out[n];

		/* the innermost frame starts at its pc; a caller's is a return address
		 * (a signal frame in between would not: not taught) */
		if (!i != u->activation[i] || !u->raw[i])
			break;
		l->key = u->raw[i] | (i ? 0 : OFFCPU_KEY_INITIAL);
		if (i + 1 == u->npcs) {
			memset(&l->rule, 0, sizeof(l->rule));
			l->rule.flags =
			    u->last_reason == UNWIND_COMPLETE ? UNWIND_RULE_END : UNWIND_RULE_CUT;
		} else if (!cfi_rule(u, u->pcs[i], &l->rule)) {
			break;
		}
		n++;
	}
	return n;
}
