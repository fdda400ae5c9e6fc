// SPDX-License-Identifier: GPL-2.0
/*
 * asyncbpf check: which kernel features asyncbpf needs work on this machine.
 * Each feature is proven by loading one minimal program (bpf/check.bpf.c) from a
 * fresh skeleton, attaching it, firing it from this process and reading its hit
 * counter. A feature that does not work is reported with the failing call's
 * error and facts read from the system (kernel config, sysfs), never guesses.
 */
#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cjson/cJSON.h>

#include "asyncbpf.h"
#include "check/check.h"
#include "check/check_parts.h"
#include "check.skel.h"
#include "lib/probe_target.h"
#include "lib/exitcodes.h"
#include "lib/log.h"
#include "lib/sysfacts.h"
#include "lib/uprobe_multi.h"

/* Called by getpid() on every architecture, out of line (exported), and in BTF. */
#define CHECK_KERNEL_TARGET "__task_pid_nr_ns"
#define CHECK_LOG_SIZE	    (64 * 1024)
#define CHECK_DETAIL_SIZE   512
#define CHECK_COOKIE	    0xa5b9c00c1e000000ULL /* a multiple of CHECK_COOKIE_SLOTS */

struct check_ctx {
	pid_t tgid;
	char path[PATH_MAX];		/* the file mapping check_probe_target */
	unsigned long entry, insn, ret; /* its file offsets */
	int target_err;			/* resolving them failed: -errno */
	struct utsname uts;
	int kernel_major, kernel_minor;
	bool uprobe_ok, uprobe_multi_ok; /* which attach the later features use */
	bool tp_btf_loaded;		 /* for fentry's diagnosis */
	int unprivileged_bpf;		 /* -1: unreadable */
	char lockdown[64], lockdown_how[256];
	char log[CHECK_LOG_SIZE]; /* verifier log of the last load */
};

struct check_result {
	const struct check_feature *feature;
	bool ok;
	char detail[CHECK_DETAIL_SIZE];
};

struct check_feature {
	const char *name;
	bool required;		 /* asyncbpf cannot trace without it... */
	const char *alternative; /* ...unless this one works instead */
	void (*run)(struct check_ctx *ctx, struct check_result *result);
};

__attribute__((format(printf, 3, 4))) static void report(struct check_result *result, bool ok,
							 const char *fmt, ...)
{
	va_list ap;

	result->ok = ok;
	va_start(ap, fmt);
	vsnprintf(result->detail, sizeof(result->detail), fmt, ap);
	va_end(ap);
}

static bool libbpf_verbose;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	(void)level;
	return libbpf_verbose ? vfprintf(stderr, fmt, args) : 0;
}

/* Append " (facts)" to a result's detail. */
static void add_facts(struct check_result *result, const char *facts)
{
	size_t used = strlen(result->detail);

	if (*facts)
		snprintf(result->detail + used, sizeof(result->detail) - used, " (%s)", facts);
}

static void config_fact(const struct check_ctx *ctx, char *facts, const char *option)
{
	const char *source;

	if (sysfacts__kernel_config(ctx->uts.release, option, &source) == 0)
		sysfacts__add_fact(facts, CHECK_DETAIL_SIZE, "kernel built without %s (per %s)",
				   option, source);
}

/* ---- one program per feature ---- */

enum { NEED_RINGBUF = 1, NEED_TASK_STORE = 2 };

/* One feature's skeleton: a fresh one each time keeps one feature's failure its own. */
struct session {
	struct check_bpf *skel;
	struct bpf_program *prog;
	struct bpf_link *links[3];
	int multi_fd; /* a uprobe_multi link, or -1 */
};
/* clang-format off */
#define SESSION_INIT {.multi_fd = -1}
/* clang-format on */

/* Without perf uprobes (see run_uprobe), the others fire through uprobe_multi links. */
static bool use_multi(const struct check_ctx *ctx)
{
	return !ctx->uprobe_ok && ctx->uprobe_multi_ok;
}

static int session_open(struct check_ctx *ctx, struct session *s, const char *name, int maps,
			struct check_result *result)
{
	struct bpf_program *prog;

	s->skel = check_bpf__open();
	if (!s->skel) {
		report(result, false, "open failed: %s", strerror(errno));
		return -1;
	}
	s->skel->rodata->target_tgid = ctx->tgid;
	s->skel->rodata->getpid_syscall_nr = SYS_getpid;
	bpf_object__for_each_program(prog, s->skel->obj)
	    bpf_program__set_autoload(prog, strcmp(bpf_program__name(prog), name) == 0);
	bpf_map__set_autocreate(s->skel->maps.check_events, maps & NEED_RINGBUF);
	bpf_map__set_autocreate(s->skel->maps.check_task_store, maps & NEED_TASK_STORE);
	s->prog = bpf_object__find_program_by_name(s->skel->obj, name);
	ctx->log[0] = '\0';
	bpf_program__set_log_buf(s->prog, ctx->log, sizeof(ctx->log));
	return 0;
}

/* Last non-empty line of the verifier log, or "". */
static const char *log_last_line(char *log)
{
	char *end = log + strlen(log), *line;

	while (end > log && (end[-1] == '\n' || end[-1] == ' '))
		*--end = '\0';
	line = strrchr(log, '\n');
	return line ? line + 1 : log;
}

/* Load the session's one program; on failure report the verifier's last words and `facts`. */
static int session_load(struct check_ctx *ctx, struct session *s, struct check_result *result,
			const char *facts)
{
	char all[CHECK_DETAIL_SIZE] = "";
	const char *last;
	int err;

	err = check_bpf__load(s->skel);
	if (!err)
		return 0;
	last = log_last_line(ctx->log);
	if (*last)
		sysfacts__add_fact(all, sizeof(all), "verifier: %s", last);
	else
		sysfacts__add_fact(all, sizeof(all),
				   "empty verifier log: refused before verification");
	if (facts && *facts)
		sysfacts__add_fact(all, sizeof(all), "%s", facts);
	report(result, false, "load failed: %s", strerror(-err));
	add_facts(result, all);
	return err;
}

static void session_end(struct session *s)
{
	for (size_t i = 0; i < sizeof(s->links) / sizeof(s->links[0]); i++)
		bpf_link__destroy(s->links[i]);
	if (s->multi_fd >= 0)
		close(s->multi_fd);
	check_bpf__destroy(s->skel);
}

static int uprobe_attach(struct check_ctx *ctx, struct session *s, int slot, unsigned long offset,
			 bool ret, __u64 cookie, struct check_result *result)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = ret, .bpf_cookie = cookie);
	char facts[CHECK_DETAIL_SIZE] = "";
	int err;

	s->links[slot] =
	    bpf_program__attach_uprobe_opts(s->prog, ctx->tgid, ctx->path, offset, &opts);
	if (s->links[slot])
		return 0;
	err = errno;
	if (err == EACCES && !sysfacts__has_capability(CAP_SYS_ADMIN))
		sysfacts__add_fact(facts, sizeof(facts),
				   "perf uprobes need CAP_SYS_ADMIN since ba677dbe77af "
				   "\"perf: Revert to requiring CAP_SYS_ADMIN for uprobes\"");
	config_fact(ctx, facts, "CONFIG_UPROBE_EVENTS");
	if (!sysfacts__path_exists("/sys/bus/event_source/devices/uprobe"))
		sysfacts__add_fact(facts, sizeof(facts),
				   "no uprobe PMU in /sys/bus/event_source/devices");
	report(result, false, "attach to %s+0x%lx failed: %s", ctx->path, offset, strerror(err));
	add_facts(result, facts);
	return -1;
}

enum attach_mode { ATTACH_AUTO, ATTACH_PERF, ATTACH_MULTI };

/*
 * Open, load and attach `name` as u(ret)probes at `count` offsets in our own code:
 * one perf-event link each, or one uprobe_multi link (ATTACH_AUTO: see use_multi).
 */
static int uprobe_session(struct check_ctx *ctx, struct session *s, const char *name, int maps,
			  enum attach_mode mode, const unsigned long *offsets, const __u64 *cookies,
			  __u32 count, bool ret, struct check_result *result)
{
	bool multi = mode == ATTACH_MULTI || (mode == ATTACH_AUTO && use_multi(ctx));
	bool old = ctx->kernel_major < 6 || (ctx->kernel_major == 6 && ctx->kernel_minor < 6);

	if (ctx->target_err) {
		report(result, false, "cannot find the probe target in /proc/self/maps: %s",
		       strerror(-ctx->target_err));
		return -1;
	}
	if (session_open(ctx, s, name, maps, result))
		return -1;
	if (multi)
		bpf_program__set_expected_attach_type(
		    s->prog, (enum bpf_attach_type)UPROBE_MULTI_ATTACH_TYPE);
	if (session_load(ctx, s, result,
			 multi && old ? "uprobe_multi needs Linux 6.6; this kernel is older"
				      : NULL))
		return -1;
	if (!multi) {
		for (__u32 i = 0; i < count; i++)
			if (uprobe_attach(ctx, s, i, offsets[i], ret, cookies ? cookies[i] : 0,
					  result))
				return -1;
		return 0;
	}
	s->multi_fd = uprobe_multi__attach(bpf_program__fd(s->prog), ctx->path, offsets, cookies,
					   count, ctx->tgid, ret);
	if (s->multi_fd >= 0)
		return 0;
	report(result, false, "BPF_LINK_CREATE(BPF_TRACE_UPROBE_MULTI) failed: %s%s",
	       strerror(-s->multi_fd), old ? " (needs Linux 6.6; this kernel is older)" : "");
	return -1;
}

static unsigned long long hits(const struct session *s, enum check_probe probe)
{
	return __atomic_load_n(&s->skel->bss->check_hits[probe], __ATOMIC_RELAXED);
}

/* Call getpid() (and sleep, to be switched out) until `probe` fires; its hits. */
static unsigned long long fire_by_getpid(const struct session *s, enum check_probe probe,
					 bool sleep)
{
	for (int i = 0; i < 100 && !hits(s, probe); i++) {
		syscall(SYS_getpid);
		if (sleep)
			usleep(1000);
	}
	return hits(s, probe);
}

/* ---- the features ---- */

static void run_uprobe(struct check_ctx *ctx, struct check_result *result)
{
	unsigned long offsets[3] = {ctx->entry, ctx->insn, ctx->ret};
	struct session s = SESSION_INIT;

	if (!uprobe_session(ctx, &s, "check_uprobe", 0, ATTACH_PERF, offsets, NULL, 3, false,
			    result)) {
		probe_target__call(1);
		ctx->uprobe_ok = hits(&s, CHECK_PROBE_UPROBE) == 3;
		if (ctx->uprobe_ok)
			report(result, true, "fired at entry, mid-function and ret (%s+0x%lx)",
			       ctx->path, ctx->entry);
		else
			report(result, false, "3 links (entry, mid, ret) fired %llu times, not 3",
			       hits(&s, CHECK_PROBE_UPROBE));
	}
	session_end(&s);
}

static void run_uprobe_multi(struct check_ctx *ctx, struct check_result *result)
{
	unsigned long offsets[3] = {ctx->entry, ctx->insn, ctx->ret};
	__u64 cookies[3] = {CHECK_COOKIE, CHECK_COOKIE + 1, CHECK_COOKIE + 2};
	struct session s = SESSION_INIT;
	int delivered = 0;

	if (!uprobe_session(ctx, &s, "check_uprobe_multi", 0, ATTACH_MULTI, offsets, cookies, 3,
			    false, result)) {
		probe_target__call(1);
		for (int i = 0; i < 3; i++)
			delivered += s.skel->bss->check_cookies[i] == cookies[i];
		ctx->uprobe_multi_ok = hits(&s, CHECK_PROBE_UPROBE_MULTI) == 3 && delivered == 3;
		if (ctx->uprobe_multi_ok)
			report(result, true,
			       "one link, 3 probes (entry, mid, ret), 3/3 cookies delivered");
		else
			report(result, false, "one link; %llu of 3 probes fired, %d/3 cookies",
			       hits(&s, CHECK_PROBE_UPROBE_MULTI), delivered);
	}
	session_end(&s);
}

static void run_uretprobe(struct check_ctx *ctx, struct check_result *result)
{
	struct session s = SESSION_INIT;

	if (!uprobe_session(ctx, &s, "check_uretprobe", 0, ATTACH_AUTO, &ctx->entry, NULL, 1, true,
			    result)) {
		probe_target__call(1); /* check_probe_target(0) returns 42 */
		if (hits(&s, CHECK_PROBE_URETPROBE) == 1 && s.skel->bss->check_return_value == 42)
			report(result, true, "fired on return, saw the return value 42");
		else
			report(result, false,
			       "fired %llu times, saw return value %llu (want 1, 42)",
			       hits(&s, CHECK_PROBE_URETPROBE),
			       (unsigned long long)s.skel->bss->check_return_value);
	}
	session_end(&s);
}

struct ringbuf_seen {
	int records, intact;
};

static int ringbuf_record(void *data, void *record, size_t size)
{
	const struct check_record *r = record;
	struct ringbuf_seen *seen = data;

	seen->records++;
	if (size >= sizeof(*r) && r->type == RECORD_CHECK && r->magic == CHECK_RECORD_MAGIC &&
	    r->tgid == (__u32)getpid() && r->arg == 0)
		seen->intact++;
	return 0;
}

static void run_ringbuf(struct check_ctx *ctx, struct check_result *result)
{
	struct ringbuf_seen seen = {0};
	struct ring_buffer *ring = NULL;
	struct session s = SESSION_INIT;

	if (uprobe_session(ctx, &s, "check_ringbuf", NEED_RINGBUF, ATTACH_AUTO, &ctx->entry, NULL,
			   1, false, result))
		goto cleanup;
	ring =
	    ring_buffer__new(bpf_map__fd(s.skel->maps.check_events), ringbuf_record, &seen, NULL);
	if (!ring) {
		report(result, false, "ring_buffer__new failed: %s", strerror(errno));
		goto cleanup;
	}
	probe_target__call(1);
	ring_buffer__poll(ring, 100);
	if (seen.records == 1 && seen.intact == 1)
		report(result, true, "record reserved, submitted and read back (%zu bytes)",
		       sizeof(struct check_record));
	else
		report(result, false,
		       "%d records read, %d intact, %llu reserves failed (want 1, 1, 0)",
		       seen.records, seen.intact,
		       (unsigned long long)s.skel->bss->check_ringbuf_dropped);
cleanup:
	ring_buffer__free(ring);
	session_end(&s);
}

static void run_task_storage(struct check_ctx *ctx, struct check_result *result)
{
	struct session s = SESSION_INIT;
	__u64 stored = 0;
	int pidfd;

	if (uprobe_session(ctx, &s, "check_task_storage", NEED_TASK_STORE, ATTACH_AUTO, &ctx->entry,
			   NULL, 1, false, result))
		goto cleanup;
	probe_target__call(2);
	if (hits(&s, CHECK_PROBE_TASK_STORAGE) != 2 || s.skel->bss->check_task_value != 2) {
		report(result, false, "%llu of 2 hits stored, value %llu (want 2)",
		       hits(&s, CHECK_PROBE_TASK_STORAGE),
		       (unsigned long long)s.skel->bss->check_task_value);
		goto cleanup;
	}
	/* User space reads task storage keyed by a pidfd (pidfd_open: Linux 5.3). */
	pidfd = syscall(SYS_pidfd_open, getpid(), 0);
	if (pidfd >= 0 &&
	    !bpf_map_lookup_elem(bpf_map__fd(s.skel->maps.check_task_store), &pidfd, &stored) &&
	    stored == 2)
		report(result, true,
		       "created on first hit, kept across 2 hits, read back by pidfd");
	else
		report(result, true, "created on first hit, kept across 2 hits");
	if (pidfd >= 0)
		close(pidfd);
cleanup:
	session_end(&s);
}

static void run_bpf_cookie(struct check_ctx *ctx, struct check_result *result)
{
	const __u64 cookie = CHECK_COOKIE + 0xc0;
	struct session s = SESSION_INIT;

	if (!uprobe_session(ctx, &s, "check_bpf_cookie", 0, ATTACH_AUTO, &ctx->entry, &cookie, 1,
			    false, result)) {
		probe_target__call(1);
		if (hits(&s, CHECK_PROBE_BPF_COOKIE) == 1 &&
		    s.skel->bss->check_last_cookie == cookie)
			report(result, true, "cookie 0x%llx delivered through a %s link",
			       (unsigned long long)cookie,
			       use_multi(ctx) ? "uprobe_multi" : "perf-event");
		else
			report(result, false, "fired %llu times, cookie 0x%llx (want 1, 0x%llx)",
			       hits(&s, CHECK_PROBE_BPF_COOKIE),
			       (unsigned long long)s.skel->bss->check_last_cookie,
			       (unsigned long long)cookie);
	}
	session_end(&s);
}

/* Programs whose section says where they attach: tracepoint, raw_tp, tp_btf. */
static void run_section_attached(struct check_ctx *ctx, struct check_result *result,
				 const char *name, enum check_probe probe, const char *what)
{
	char facts[CHECK_DETAIL_SIZE] = "";
	struct session s = SESSION_INIT;
	int err;

	if (session_open(ctx, &s, name, 0, result) || session_load(ctx, &s, result, NULL))
		goto cleanup;
	ctx->tp_btf_loaded |= probe == CHECK_PROBE_TP_BTF;
	s.links[0] = bpf_program__attach(s.prog);
	if (!s.links[0]) {
		err = errno;
		if (probe == CHECK_PROBE_TRACEPOINT && !sysfacts__tracefs_dir())
			sysfacts__add_fact(facts, sizeof(facts),
					   "tracefs, which holds tracepoint ids, is not mounted: "
					   "mount -t tracefs nodev /sys/kernel/tracing");
		if (probe == CHECK_PROBE_TRACEPOINT)
			config_fact(ctx, facts, "CONFIG_FTRACE_SYSCALLS");
		report(result, false, "attach failed: %s", strerror(err));
		add_facts(result, facts);
		goto cleanup;
	}
	if (fire_by_getpid(&s, probe, probe == CHECK_PROBE_TP_BTF))
		report(result, true, "%s", what);
	else
		report(result, false, "attached, never fired");
cleanup:
	session_end(&s);
}

static void run_tracepoint(struct check_ctx *ctx, struct check_result *result)
{
	run_section_attached(ctx, result, "check_tracepoint", CHECK_PROBE_TRACEPOINT,
			     "syscalls/sys_enter_getpid fired");
}

static void run_raw_tp(struct check_ctx *ctx, struct check_result *result)
{
	run_section_attached(ctx, result, "check_raw_tp", CHECK_PROBE_RAW_TP,
			     "sys_enter fired for getpid (no tracefs needed)");
}

static void run_tp_btf(struct check_ctx *ctx, struct check_result *result)
{
	run_section_attached(ctx, result, "check_tp_btf", CHECK_PROBE_TP_BTF,
			     "sched_switch fired, read prev->tgid through BTF");
}

static void run_perf_event(struct check_ctx *ctx, struct check_result *result)
{
	struct perf_event_attr attr = {
	    .type = PERF_TYPE_SOFTWARE,
	    .size = sizeof(attr),
	    .config = PERF_COUNT_SW_CPU_CLOCK,
	    .sample_period = 100000, /* ns of CPU time: every 100 us */
	};
	char paranoid[32] = "?";
	struct session s = SESSION_INIT;
	int perf_fd = -1, err;
	double start, elapsed;

	if (session_open(ctx, &s, "check_perf_event", 0, result) ||
	    session_load(ctx, &s, result, NULL))
		goto cleanup;
	/* This thread on any CPU: it samples while we busy-loop, wherever we run. */
	perf_fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (perf_fd < 0) {
		err = errno;
		sysfacts__read_small_file("/proc/sys/kernel/perf_event_paranoid", paranoid,
					  sizeof(paranoid));
		report(result, false,
		       "perf_event_open(cpu-clock) failed: %s (perf_event_paranoid=%s)",
		       strerror(err), paranoid);
		goto cleanup;
	}
	s.links[0] = bpf_program__attach_perf_event(s.prog, perf_fd);
	if (!s.links[0]) {
		report(result, false, "attach failed: %s", strerror(errno));
		goto cleanup;
	}
	start = ((double)sysfacts__now_ns() / 1e6);
	while (hits(&s, CHECK_PROBE_PERF_EVENT) < 10 &&
	       ((double)sysfacts__now_ns() / 1e6) - start < 1000)
		; /* burn CPU: cpu-clock only advances while we run */
	elapsed = ((double)sysfacts__now_ns() / 1e6) - start;
	if (hits(&s, CHECK_PROBE_PERF_EVENT))
		report(result, true, "cpu-clock sampling fired %llu times in %.1f ms of busy loop",
		       hits(&s, CHECK_PROBE_PERF_EVENT), elapsed);
	else
		report(result, false, "attached but no sample in %.0f ms of busy loop", elapsed);
cleanup:
	session_end(&s); /* the link goes before the event it is attached to */
	if (perf_fd >= 0)
		close(perf_fd);
}

static void run_kprobe(struct check_ctx *ctx, struct check_result *result)
{
	char facts[CHECK_DETAIL_SIZE] = "", events[PATH_MAX];
	const char *tracefs = sysfacts__tracefs_dir();
	struct session s = SESSION_INIT;
	int err;

	if (session_open(ctx, &s, "check_kprobe", 0, result) || session_load(ctx, &s, result, NULL))
		goto cleanup;
	s.links[0] = bpf_program__attach_kprobe(s.prog, false, CHECK_KERNEL_TARGET);
	if (!s.links[0]) {
		err = errno;
		config_fact(ctx, facts, "CONFIG_KPROBES");
		if (!sysfacts__path_exists("/sys/bus/event_source/devices/kprobe"))
			sysfacts__add_fact(facts, sizeof(facts),
					   "no kprobe PMU in /sys/bus/event_source/devices");
		snprintf(events, sizeof(events), "%s/kprobe_events", tracefs ? tracefs : "");
		if (tracefs && !sysfacts__path_exists(events))
			sysfacts__add_fact(facts, sizeof(facts), "no %s", events);
		report(result, false, "attach to %s failed: %s", CHECK_KERNEL_TARGET,
		       strerror(err));
		add_facts(result, facts);
		goto cleanup;
	}
	if (fire_by_getpid(&s, CHECK_PROBE_KPROBE, false))
		report(result, true, "fired on %s", CHECK_KERNEL_TARGET);
	else
		report(result, false, "attached to %s, never fired", CHECK_KERNEL_TARGET);
cleanup:
	session_end(&s);
}

static void run_fentry(struct check_ctx *ctx, struct check_result *result)
{
	char facts[CHECK_DETAIL_SIZE] = "";
	struct session s = SESSION_INIT;
	int err;

	if (session_open(ctx, &s, "check_fentry", 0, result))
		goto cleanup;
	err = bpf_program__set_attach_target(s.prog, 0, CHECK_KERNEL_TARGET);
	if (err) {
		report(result, false, "no BTF for %s: %s", CHECK_KERNEL_TARGET, strerror(-err));
		goto cleanup;
	}
	/* Facts for a failed load; tp_btf ran before us. */
	config_fact(ctx, facts, "CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS");
	if (ctx->tp_btf_loaded)
		sysfacts__add_fact(facts, sizeof(facts),
				   "tp_btf, the same program type without a BPF trampoline, loads");
	if (session_load(ctx, &s, result, facts))
		goto cleanup;
	s.links[0] = bpf_program__attach_trace(s.prog);
	if (!s.links[0]) {
		report(result, false, "attach to %s failed: %s", CHECK_KERNEL_TARGET,
		       strerror(errno));
		goto cleanup;
	}
	if (fire_by_getpid(&s, CHECK_PROBE_FENTRY, false))
		report(result, true, "fired on %s through a BPF trampoline", CHECK_KERNEL_TARGET);
	else
		report(result, false, "attached to %s, never fired", CHECK_KERNEL_TARGET);
cleanup:
	session_end(&s);
}

/* In this order: the later uprobe features attach as run_uprobe*() found works. */
static const struct check_feature check_features[] = {
    {"uprobe", true, "uprobe_multi", run_uprobe},
    {"uprobe_multi", true, "uprobe", run_uprobe_multi},
    {"uretprobe", false, NULL, run_uretprobe},
    {"ringbuf", true, NULL, run_ringbuf},
    {"task_storage", true, NULL, run_task_storage},
    {"bpf_cookie", true, NULL, run_bpf_cookie},
    {"tracepoint", false, NULL, run_tracepoint},
    {"raw_tp", false, NULL, run_raw_tp},
    {"tp_btf", false, NULL, run_tp_btf},
    {"perf_event", false, NULL, run_perf_event},
    {"kprobe", false, NULL, run_kprobe},
    {"fentry", false, NULL, run_fentry},
};
#define CHECK_FEATURE_COUNT (sizeof(check_features) / sizeof(check_features[0]))

/* ---- output ---- */

/* A required feature that neither works nor has a working alternative. */
static bool missing(const struct check_result *results, size_t i)
{
	const char *alternative = results[i].feature->alternative;

	if (results[i].ok || !results[i].feature->required)
		return false;
	for (size_t j = 0; alternative && j < CHECK_FEATURE_COUNT; j++)
		if (!strcmp(results[j].feature->name, alternative) && results[j].ok)
			return false;
	return true;
}

/* The features' outcome, for check_parts. */
static void statuses(const struct check_result *results, struct feature_status *out)
{
	for (size_t i = 0; i < CHECK_FEATURE_COUNT; i++)
		out[i] = (struct feature_status){results[i].feature->name, results[i].ok};
}

static void print_table(const struct check_ctx *ctx, const struct check_result *results,
			bool required_ok)
{
	printf("kernel: %s %s\n", ctx->uts.release, ctx->uts.machine);
	if (ctx->unprivileged_bpf >= 0)
		printf("unprivileged_bpf_disabled: %d (%s)\n", ctx->unprivileged_bpf,
		       sysfacts__unprivileged_bpf_meaning(ctx->unprivileged_bpf));
	else
		printf("unprivileged_bpf_disabled: unreadable\n");
	printf("lockdown: %s (%s)\n", ctx->lockdown, ctx->lockdown_how);
	printf("btf: %s\n", sysfacts__path_exists("/sys/kernel/btf/vmlinux")
				? "/sys/kernel/btf/vmlinux"
				: "missing (no CO-RE, no tp_btf)");
	printf("\n%-14s %-12s %s\n", "FEATURE", "STATUS", "DETAIL");
	for (size_t i = 0; i < CHECK_FEATURE_COUNT; i++)
		printf("%-14s %-12s %s%s\n", results[i].feature->name,
		       results[i].ok ? "ok" : "unavailable",
		       missing(results, i) ? "REQUIRED: " : "", results[i].detail);
	struct feature_status st[CHECK_FEATURE_COUNT];
	statuses(results, st);
	check_parts__print(stdout, st, CHECK_FEATURE_COUNT);
	printf("\n%s\n", required_ok
			     ? "asyncbpf can trace on this kernel"
			     : "asyncbpf cannot trace here: a required feature is unavailable");
}

static int print_json(const struct check_ctx *ctx, const struct check_result *results,
		      bool required_ok)
{
	cJSON *root = cJSON_CreateObject(), *kernel, *unpriv, *lockdown, *features, *feature;
	char *text;

	if (!root)
		return -ENOMEM;
	kernel = cJSON_AddObjectToObject(root, "kernel");
	cJSON_AddStringToObject(kernel, "release", ctx->uts.release);
	cJSON_AddStringToObject(kernel, "machine", ctx->uts.machine);
	cJSON_AddBoolToObject(kernel, "btf", sysfacts__path_exists("/sys/kernel/btf/vmlinux"));
	unpriv = cJSON_AddObjectToObject(root, "unprivileged_bpf_disabled");
	if (ctx->unprivileged_bpf >= 0) {
		cJSON_AddNumberToObject(unpriv, "value", ctx->unprivileged_bpf);
		cJSON_AddStringToObject(unpriv, "detail",
					sysfacts__unprivileged_bpf_meaning(ctx->unprivileged_bpf));
	} else {
		cJSON_AddNullToObject(unpriv, "value");
	}
	lockdown = cJSON_AddObjectToObject(root, "lockdown");
	cJSON_AddStringToObject(lockdown, "state", ctx->lockdown);
	cJSON_AddStringToObject(lockdown, "detail", ctx->lockdown_how);
	struct feature_status st[CHECK_FEATURE_COUNT];
	statuses(results, st);
	check_parts__json(root, st, CHECK_FEATURE_COUNT);
	features = cJSON_AddArrayToObject(root, "features");
	for (size_t i = 0; features && i < CHECK_FEATURE_COUNT; i++) {
		feature = cJSON_CreateObject();
		if (!feature || !cJSON_AddItemToArray(features, feature))
			break;
		cJSON_AddStringToObject(feature, "name", results[i].feature->name);
		cJSON_AddStringToObject(feature, "status", results[i].ok ? "ok" : "unavailable");
		cJSON_AddBoolToObject(feature, "required", results[i].feature->required);
		if (results[i].feature->alternative)
			cJSON_AddStringToObject(feature, "alternative",
						results[i].feature->alternative);
		cJSON_AddStringToObject(feature, "detail", results[i].detail);
	}
	cJSON_AddBoolToObject(root, "required_ok", required_ok);
	text = cJSON_Print(root);
	cJSON_Delete(root);
	if (!text)
		return -ENOMEM;
	printf("%s\n", text);
	cJSON_free(text);
	return 0;
}

static const char check_usage[] =
    "Usage: asyncbpf check [-v] [--json]\n"
    "Load, attach and fire one BPF program per kernel feature asyncbpf uses.\n"
    "  -v, --verbose  show libbpf's log on stderr\n"
    "  -j, --json     print the report as JSON\n"
    "Exit status: 0 every required feature works, 7 one does not,\n"
    "4 not privileged (needs root or CAP_BPF+CAP_PERFMON), 2 bad usage.\n";

int cmd_check(int argc, char **argv)
{
	struct check_result results[CHECK_FEATURE_COUNT] = {0};
	bool json = false, required_ok = true;
	libbpf_print_fn_t old_print;
	struct check_ctx *ctx;
	int status;

	libbpf_verbose = log_verbosity >= 2;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			libbpf_verbose = true;
		} else if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(check_usage, stdout);
			return EXIT_OK;
		} else {
			pr_warn("check: unknown argument '%s'\n%s", argv[i], check_usage);
			return EXIT_USAGE;
		}
	}
	if (!sysfacts__bpf_privileged() || !sysfacts__in_initial_user_namespace()) {
		pr_warn("check: needs root or CAP_BPF+CAP_PERFMON (running as uid %u%s)\n",
			(unsigned)getuid(),
			sysfacts__in_initial_user_namespace() ? ""
							      : " in a user namespace, whose "
								"capabilities do not grant BPF");
		return EXIT_NO_PERMISSION;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		pr_warn("check: out of memory\n");
		return EXIT_FAILURE_INTERNAL;
	}
	ctx->tgid = getpid();
	uname(&ctx->uts);
	sscanf(ctx->uts.release, "%d.%d", &ctx->kernel_major, &ctx->kernel_minor);
	ctx->target_err =
	    probe_target__resolve(ctx->path, sizeof(ctx->path), &ctx->entry, &ctx->insn, &ctx->ret);

	old_print = libbpf_set_print(libbpf_print);
	for (size_t i = 0; i < CHECK_FEATURE_COUNT; i++) {
		results[i].feature = &check_features[i];
		pr_debug("check: %s\n", check_features[i].name);
		check_features[i].run(ctx, &results[i]);
	}
	for (size_t i = 0; i < CHECK_FEATURE_COUNT; i++)
		required_ok &= !missing(results, i);
	libbpf_set_print(old_print);

	ctx->unprivileged_bpf = sysfacts__unprivileged_bpf_disabled();
	sysfacts__lockdown(ctx->uts.release, ctx->lockdown, sizeof(ctx->lockdown),
			   ctx->lockdown_how, sizeof(ctx->lockdown_how));

	status = required_ok ? EXIT_OK : EXIT_KERNEL;
	if (json && print_json(ctx, results, required_ok)) {
		pr_warn("check: out of memory writing JSON\n");
		status = EXIT_FAILURE_INTERNAL;
	} else if (!json) {
		print_table(ctx, results, required_ok);
	}
	if (fflush(stdout) == EOF) {
		pr_warn("check: cannot write the report: %s\n", strerror(errno));
		status = EXIT_OUTPUT;
	}
	free(ctx);
	return status;
}
