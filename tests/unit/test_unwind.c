// SPDX-License-Identifier: GPL-2.0
/*
 * unwind.c without root: this test records a sample of itself in the BPF record's
 * format (user registers by inline asm, a copy of the top of its own stack), then
 * unwinds it against its own /proc/self/maps and checks the frames against the
 * functions it knows it called: capture <- level3 <- level2 <- level1 <- main.
 * Then the failure reasons: no registers, a pc in no module, a stack copy too short.
 * And the off-CPU walker's rules: walking the same sample with the rules
 * unwinder__rules() learned from its unwind (the BPF side's own step function,
 * bpf/unwind_step.h) must find exactly the frames libdw found.
 */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"
#include "profile/unwind.h"

/* the walker reads the sample's copied stack, as the BPF side reads the thread's */
static const struct recorded *walked;
static int read_copy(__u64 *dst, __u64 addr);
#define UNWIND_READ(dst, addr) read_copy((dst), (addr))
#include "unwind_step.h"

#define STACK_COPY 8192

struct recorded {
	struct profile_sample rec;
	uint8_t stack[STACK_COPY];
};

static struct recorded sample;

static int read_copy(__u64 *dst, __u64 addr)
{
	uint64_t base = walked->rec.regs[PROFILE_REG_SP] - walked->rec.below_sp;

	if (addr < base || addr - base > walked->rec.stack_size ||
	    walked->rec.stack_size - (addr - base) < 8)
		return -1;
	memcpy(dst, walked->stack + (addr - base), 8);
	return 0;
}

/* The stack above sp is other frames' memory, redzones included: copy it the way the
 * BPF program does, without the sanitizer's checks. Stops at the stack's top. */
__attribute__((no_sanitize("address"), noinline)) static uint32_t
copy_stack(uint64_t sp, uint8_t *to, uint32_t want)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[512];
	uint64_t top = sp + want;

	if (maps) {
		while (fgets(line, sizeof(line), maps)) {
			unsigned long lo, hi;

			if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && sp >= lo && sp < hi) {
				if (hi < top)
					top = hi;
				break;
			}
		}
		fclose(maps);
	}
	for (uint64_t a = sp; a < top; a++)
		to[a - sp] = *(volatile const uint8_t *)(uintptr_t)a;
	return (uint32_t)(top - sp);
}

/* Registers at label 1 below, by DWARF number: what bpf_task_pt_regs would give. */
__attribute__((noinline)) static void capture(struct recorded *s)
{
	__u64 *r = s->rec.regs;

	__asm__ volatile("movq %%rdx, 8(%0)\n\t"
			 "movq %%rcx, 16(%0)\n\t"
			 "movq %%rbx, 24(%0)\n\t"
			 "movq %%rsi, 32(%0)\n\t"
			 "movq %%rdi, 40(%0)\n\t"
			 "movq %%rbp, 48(%0)\n\t"
			 "movq %%rsp, 56(%0)\n\t"
			 "movq %%r8, 64(%0)\n\t"
			 "movq %%r9, 72(%0)\n\t"
			 "movq %%r10, 80(%0)\n\t"
			 "movq %%r11, 88(%0)\n\t"
			 "movq %%r12, 96(%0)\n\t"
			 "movq %%r13, 104(%0)\n\t"
			 "movq %%r14, 112(%0)\n\t"
			 "movq %%r15, 120(%0)\n\t"
			 "leaq 1f(%%rip), %%rax\n\t"
			 "movq %%rax, 128(%0)\n\t"
			 "1:\n\t"
			 :
			 : "r"(r)
			 : "rax", "memory");
	s->rec.type = RECORD_PROFILE_SAMPLE;
	s->rec.pid = (uint32_t)getpid();
	s->rec.tid = (uint32_t)getpid();
	s->rec.stack_size = copy_stack(r[PROFILE_REG_SP], s->stack, STACK_COPY);
	if (s->rec.stack_size < STACK_COPY) /* cut at the stack's top, as the BPF side says */
		s->rec.flags |= PROFILE_F_STACK_FAULT;
}

static volatile int sink;

/* Not tail calls (work after the call), not inlined: three real frames. */
__attribute__((noinline)) static void level3(struct recorded *s)
{
	capture(s);
	sink++;
}

__attribute__((noinline)) static void level2(struct recorded *s)
{
	level3(s);
	sink++;
}

__attribute__((noinline)) static void level1(struct recorded *s)
{
	level2(s);
	sink++;
}

static int find(const struct unwind_result *r, const char *name, int from)
{
	for (uint32_t i = (uint32_t)from; i < r->nframes; i++)
		if (!strcmp(r->frames[i]->name, name))
			return (int)i;
	return -1;
}

static void test_own_stack(struct unwinder *u)
{
	static struct unwind_result r;
	int c, l3, l2, l1, m;

	level1(&sample);
	CHECK(sample.rec.stack_size > 256);
	CHECK(unwinder__unwind(u, &sample.rec, sample.stack, &r) > 0);
	CHECK_EQ_U64(r.reason, UNWIND_COMPLETE);
	c = find(&r, "capture", 0);
	l3 = find(&r, "level3", c < 0 ? 0 : c);
	l2 = find(&r, "level2", l3 < 0 ? 0 : l3);
	l1 = find(&r, "level1", l2 < 0 ? 0 : l2);
	m = find(&r, "main", l1 < 0 ? 0 : l1);
	CHECK(c == 0);	    /* the innermost frame is the one we captured in */
	CHECK(l3 == c + 1); /* then exactly the callers, in order */
	CHECK(l2 == l3 + 1);
	CHECK(l1 == l2 + 1);
	CHECK(m > l1); /* test functions in between */
	if (c != 0 || m < 0)
		for (uint32_t i = 0; i < r.nframes; i++)
			fprintf(stderr, "  #%u %s %s:%u\n", i, r.frames[i]->name,
				r.frames[i]->file ? r.frames[i]->file : "?", r.frames[i]->line);
	CHECK(c >= 0 && r.frames[c]->file && strstr(r.frames[c]->file, "test_unwind.c"));
	CHECK(c >= 0 && r.frames[c]->module && strstr(r.frames[c]->module, "test_unwind"));

	/* the same sample again: served from the symbol cache, the same frames */
	{
		static struct unwind_result again;

		CHECK_EQ_U64(unwinder__unwind(u, &sample.rec, sample.stack, &again), r.nframes);
		CHECK(again.nframes && again.frames[0] == r.frames[0]);
	}
}

static void test_failures(struct unwinder *u)
{
	static struct recorded bad;
	static struct unwind_result r;

	/* a kernel thread: no user registers */
	memset(&bad, 0, sizeof(bad));
	bad.rec.tid = (uint32_t)getpid();
	bad.rec.flags = PROFILE_F_KERNEL_THREAD;
	CHECK_EQ_U64(unwinder__unwind(u, &bad.rec, bad.stack, &r), 0);
	CHECK_EQ_U64(r.reason, UNWIND_NO_REGS);

	/* a pc no module maps */
	bad = sample;
	bad.rec.regs[PROFILE_REG_IP] = 0x10;
	unwinder__unwind(u, &bad.rec, bad.stack, &r);
	CHECK_EQ_U64(r.reason, UNWIND_PC_OUTSIDE);

	/* 8 bytes of stack: the caller's return address is past the copy */
	bad = sample;
	bad.rec.stack_size = 8;
	bad.rec.flags = 0;
	unwinder__unwind(u, &bad.rec, bad.stack, &r);
	CHECK_EQ_U64(r.reason, UNWIND_STACK_SHORT);
	CHECK(r.nframes >= 1 && !strcmp(r.frames[0]->name, "capture"));
}

/*
 * Three frames written by hand, with the CFI LLVM emits for an epilogue: after
 * `pop rbp` the rule still says rbp is saved at CFA-16, below sp by the time of the
 * `ret`. rz_caller's CFA is rbp-based (a realigned frame, as hyper's parse_headers),
 * so its caller is found only if that slot, in the red zone, was copied. Never run.
 */
__asm__(".text\n"
	".type rz_outer, @function\n"
	"rz_outer:\n"
	".cfi_startproc\n"
	".cfi_undefined rip\n"
	"call rz_caller\n"
	"rz_outer_ret: ret\n"
	".cfi_endproc\n"
	".size rz_outer, .-rz_outer\n"
	".type rz_caller, @function\n"
	"rz_caller:\n"
	".cfi_startproc\n"
	"push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"mov %rsp, %rbp\n"
	".cfi_def_cfa_register %rbp\n"
	"call rz_callee\n"
	"rz_caller_ret: pop %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size rz_caller, .-rz_caller\n"
	".type rz_callee, @function\n"
	"rz_callee:\n"
	".cfi_startproc\n"
	"push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"xor %ebp, %ebp\n"
	"pop %rbp\n"
	".cfi_def_cfa_offset 8\n"
	"rz_callee_ret: ret\n"
	".cfi_endproc\n"
	".size rz_callee, .-rz_callee\n");
extern const char rz_outer_ret[], rz_caller_ret[], rz_callee_ret[];

/* A sample at rz_callee's ret, its stack at a made-up address (no module maps it),
 * below_sp bytes of red zone copied. */
static void red_zone_sample(struct recorded *s, uint32_t below)
{
	const uint64_t sp = 0x7ff000101000ull, rbp = sp + 8; /* rz_caller's, restored */
	uint64_t words[] = {(uint64_t)(uintptr_t)rz_caller_ret, 0x1234 /* rz_outer's rbp */,
			    (uint64_t)(uintptr_t)rz_outer_ret, 0};

	memset(s, 0, sizeof(*s));
	s->rec.type = RECORD_PROFILE_SAMPLE;
	s->rec.pid = s->rec.tid = (uint32_t)getpid();
	s->rec.regs[PROFILE_REG_IP] = (uint64_t)(uintptr_t)rz_callee_ret;
	s->rec.regs[PROFILE_REG_SP] = sp;
	s->rec.regs[PROFILE_REG_BP] = rbp;
	s->rec.below_sp = below;
	if (below >= 8) /* the slot rz_callee popped rbp from */
		memcpy(s->stack + below - 8, &rbp, 8);
	memcpy(s->stack + below, words, sizeof(words));
	s->rec.stack_size = below + (uint32_t)sizeof(words);
	s->rec.flags = PROFILE_F_STACK_TOP;
}

static void test_red_zone(struct unwinder *u)
{
	static struct recorded s;
	static struct unwind_result r;
	const char *want[] = {"rz_callee", "rz_caller", "rz_outer"};

	red_zone_sample(&s, PROFILE_RED_ZONE);
	CHECK_EQ_U64(unwinder__unwind(u, &s.rec, s.stack, &r), 3);
	CHECK_EQ_U64(r.reason, UNWIND_COMPLETE);
	for (uint32_t i = 0; i < r.nframes && i < 3; i++)
		CHECK(!strcmp(r.frames[i]->name, want[i]));

	/* without it the walk ends at rz_caller: not called complete */
	red_zone_sample(&s, 0);
	CHECK_EQ_U64(unwinder__unwind(u, &s.rec, s.stack, &r), 2);
	CHECK_EQ_U64(r.reason, UNWIND_OTHER);
}

static const struct unwind_rule *rule_of(const struct learned_rule *rules, uint32_t n, uint64_t key)
{
	for (uint32_t i = 0; i < n; i++)
		if (rules[i].key == key)
			return &rules[i].rule;
	return NULL;
}

/*
 * Walk s as the kernel would with rules[0..n): the pcs found, innermost first (return
 * addresses whole), and how it ended.
 */
static uint32_t walk(const struct recorded *s, const struct learned_rule *rules, uint32_t n,
		     __u64 *pcs, enum unwind_step_result *end)
{
	struct unwind_regs f = {.sp = s->rec.regs[PROFILE_REG_SP],
				.bp = s->rec.regs[PROFILE_REG_BP],
				.pc = s->rec.regs[PROFILE_REG_IP]};
	uint32_t k = 0;

	walked = s;
	*end = UNWIND_STEP_FAULT;
	while (k < OFFCPU_MAX_FRAMES) {
		const struct unwind_rule *r =
		    rule_of(rules, n, f.pc | (k ? 0 : OFFCPU_KEY_INITIAL));

		pcs[k++] = f.pc;
		if (!r)
			break;
		*end = unwind_step(r, &f);
		if (*end != UNWIND_STEP_CALLER)
			break;
	}
	return k;
}

/* The walk's pcs as symbolization looks them up: a caller's at its call instruction. */
static const uint64_t *lookup(const __u64 *pcs, uint32_t n)
{
	static uint64_t out[OFFCPU_MAX_FRAMES];

	for (uint32_t i = 0; i < n; i++)
		out[i] = i ? pcs[i] - 1 : pcs[i];
	return out;
}

static void test_rules(struct unwinder *u)
{
	static struct unwind_result r, again;
	static struct learned_rule rules[UNWIND_MAX_FRAMES];
	static struct recorded cut;
	__u64 pcs[OFFCPU_MAX_FRAMES];
	enum unwind_step_result end;
	uint32_t n, k;

	/* the whole stack: a rule per physical frame, the last one END */
	CHECK(unwinder__unwind(u, &sample.rec, sample.stack, &r) > 0);
	CHECK_EQ_U64(r.reason, UNWIND_COMPLETE);
	n = unwinder__rules(u, rules, UNWIND_MAX_FRAMES);
	CHECK_EQ_U64(n, r.nphysical);
	CHECK(n && (rules[n - 1].rule.flags & UNWIND_RULE_END));
	CHECK(n && rules[0].key == (sample.rec.regs[PROFILE_REG_IP] | OFFCPU_KEY_INITIAL));
	for (uint32_t i = 0; i + 1 < n; i++) {
		CHECK(rules[i].rule.cfa_reg == UNWIND_RULE_CFA_SP ||
		      rules[i].rule.cfa_reg == UNWIND_RULE_CFA_BP);
		CHECK(!rules[i].rule.flags);
	}
	/* walked with them: the same frames, the same end */
	k = walk(&sample, rules, n, pcs, &end);
	CHECK_EQ_U64(end, UNWIND_STEP_END);
	CHECK_EQ_U64(k, r.nphysical);
	CHECK_EQ_U64(unwinder__symbolize(u, lookup(pcs, k), k, UNWIND_COMPLETE, &again), r.nframes);
	for (uint32_t i = 0; i < r.nframes && i < again.nframes; i++)
		CHECK(again.frames[i] == r.frames[i]);
	CHECK_EQ_U64(again.reason, UNWIND_COMPLETE);

	/* a copy too short: the rules stop where libdw did, marked CUT */
	cut = sample;
	cut.rec.stack_size = 8;
	cut.rec.flags = 0;
	unwinder__unwind(u, &cut.rec, cut.stack, &r);
	CHECK_EQ_U64(r.reason, UNWIND_STACK_SHORT);
	n = unwinder__rules(u, rules, UNWIND_MAX_FRAMES);
	CHECK(n >= 1 && (rules[n - 1].rule.flags & UNWIND_RULE_CUT));
	k = walk(&cut, rules, n, pcs, &end);
	CHECK_EQ_U64(end, UNWIND_STEP_CUT);
	CHECK_EQ_U64(k, r.nphysical);
	CHECK_EQ_U64(unwinder__symbolize(u, lookup(pcs, k), k, UNWIND_STACK_SHORT, &again),
		     r.nframes);
	CHECK_EQ_U64(again.reason, UNWIND_STACK_SHORT);
}

/*
 * Samples are symbolized after sampling, when the target may be gone: a re-read of
 * its mappings that fails then must not take away the modules the walks need. A
 * forked child has this process's mappings; walk our sample against it, kill it,
 * re-read (it fails), and the walk still symbolizes.
 */
static void test_refresh_keeps_modules(void)
{
	static struct unwind_result r, again;
	uint64_t pcs[UNWIND_MAX_FRAMES];
	char err[256] = "";
	struct unwinder *u;
	uint32_t n;
	int e = 0;
	pid_t child = fork();

	if (child == 0) {
		pause();
		_exit(0);
	}
	CHECK(child > 0);
	u = unwinder__new(child, &e, err, sizeof(err));
	CHECK(u != NULL);
	if (u) {
		CHECK(unwinder__unwind(u, &sample.rec, sample.stack, &r) > 0);
		n = unwinder__walked(u, pcs, UNWIND_MAX_FRAMES);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		CHECK(unwinder__refresh(u) < 0);
		CHECK_EQ_U64(unwinder__symbolize(u, pcs, n, UNWIND_COMPLETE, &again), r.nframes);
		CHECK(again.nframes && !strcmp(again.frames[0]->name, "capture"));
		unwinder__free(u);
	} else {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
}

int main(void)
{
	char err[256] = "";
	int e = 0;
	struct unwinder *u = unwinder__new(getpid(), &e, err, sizeof(err));

	CHECK(u != NULL);
	if (!u) {
		fprintf(stderr, "unwinder__new: %s\n", err);
		return 1;
	}
	test_own_stack(u);
	test_failures(u);
	test_red_zone(u);
	test_rules(u);
	test_refresh_keeps_modules();
	CHECK(strcmp(unwind_reason__name(UNWIND_STACK_SHORT), "?") != 0);
	unwinder__free(u);

	/* no such process */
	u = unwinder__new(999999999, &e, err, sizeof(err));
	CHECK(u == NULL && e < 0 && err[0]);
	unwinder__free(u);
	TEST_MAIN_END();
}
