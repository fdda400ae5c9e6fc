/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tracing engine (docs/tracing.md): a probe plan built from the analyzer's
 * model and a selection (trace_loader.c), the BPF side's lifecycle (open, size,
 * load, attach, activate, detach; trace_loader.c), the consumer that turns ring-buffer
 * records into completed polls for the exporters (trace_consumer.c) and the
 * end-of-run summary (trace_summary.c).
 */
#ifndef ASYNCBPF_TRACER_H
#define ASYNCBPF_TRACER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "asyncbpf.h"
#include "export/chrome_trace.h"
#include "model/model.h"
#include "export/perfetto.h"
#include "select/selection.h"
#include "model/trace_event.h"
#include "export/trace_outputs.h"
#include "trace/trace_summary.h"

/* ---- probe plan (pure: unit-testable without root) ---- */

/* How exits are seen (docs/tracing.md, "Exit modes"). */
enum exits_mode {
	EXITS_AUTO,	 /* uretprobe when the binary cannot unwind (panic=abort), else ret */
	EXITS_RET,	 /* a probe on every `ret` and tail jump: single-stepped, unwind-safe */
	EXITS_URETPROBE, /* one uretprobe per poll fn: cheaper; aborts unwinding panics */
};

struct trace_plan {
	struct poll_spec *specs; /* specs[i] is found by cookie i */
	unsigned long *offsets;	 /* file offset of probe i */
	__u64 *cookies;		 /* i, for BPF_LINK_CREATE */
	bool *returns;		 /* probe i is a uretprobe (attached through its own link) */
	uint32_t nr, cap;
	uint32_t nr_returns;	       /* uretprobes among them */
	uint32_t nr_polls;	       /* traced poll functions */
	uint32_t nr_entries, nr_exits; /* probe sites of each kind */
	uint32_t nr_unprobeable_exits; /* exits the kernel refuses: their polls end truncated */
	uint32_t nr_refused;	       /* sites outside their function: not probed */
	uint32_t nr_no_exit;	       /* selected polls without any probeable exit: skipped */
	uint32_t nr_no_entry;	       /* selected polls without a usable entry: skipped */
	struct plan_problem *problems; /* one per poll fn skipped or partly probed */
	uint32_t nr_problems, cap_problems;
};

/* Why a selected poll fn is not (fully) probed: reported per symbol. */
enum plan_problem_kind {
	PLAN_NO_EXIT,	       /* no probeable exit site: skipped */
	PLAN_NO_ENTRY,	       /* no probeable entry site: skipped */
	PLAN_UNPROBEABLE_EXIT, /* an exit the kernel refuses: polls leaving there end truncated */
	PLAN_REFUSED_SITE,     /* a site outside the function: not probed */
	PLAN_NEVER_RETURNS,    /* no ret at all (always panics or loops): skipped */
	PLAN_NO_CODE,	       /* its code could not be disassembled: skipped */
};

struct plan_problem {
	uint32_t poll; /* model index */
	uint32_t kind; /* enum plan_problem_kind */
	uint64_t file_offset;
};

/* "no probeable exit", ...: for messages. */
const char *plan_problem__describe(uint32_t kind);

/*
 * One entry probe per selected future's out-of-line poll fns (the analyzer's entry
 * site, else the function's first instruction) and one exit probe per probeable exit
 * site. Only addresses the analyzer found inside the function are used. Returns 0,
 * -ENOMEM, or -ENOENT when nothing selected can be probed (err says why).
 */
int trace_plan__build(struct trace_plan *plan, const struct model *m, const struct selection *s,
		      bool uretprobes, char *err, size_t errlen);
void trace_plan__free(struct trace_plan *plan);

/* ---- BPF lifecycle ---- */

#define TRACE_DEFAULT_RINGBUF_SIZE (16u << 20)

struct trace_bpf;
struct u64_map;
struct bpf_link;

struct tracer {
	struct trace_bpf *skel;
	int multi_fd;			   /* the uprobe_multi link, or -1 */
	int multi_ret_fd;		   /* the uprobe_multi link of the uretprobes, or -1 */
	struct bpf_link **links;	   /* fallback: one perf-event link per probe */
	struct bpf_link *exec_link;	   /* on_exec, NULL when exec cannot be watched */
	struct bpf_link *thread_exit_link; /* on_thread_exit, NULL when not watched */
	uint32_t nr_links;
	uint32_t nr_polls; /* the model's, sizes trace_stats */
	uint64_t probes_attached, probes_failed;
	bool multi; /* attached through uprobe_multi */
};

enum attach_mode {
	ATTACH_AUTO,  /* uprobe_multi, else perf-event links (saying so) */
	ATTACH_MULTI, /* uprobe_multi only */
	ATTACH_PERF,  /* one perf-event link per probe (old kernels; forced for tests) */
};

struct tracer_opts {
	pid_t pid; /* target tgid (probes are filtered on it, in the link and in BPF) */
	enum attach_mode attach;
	/* called every ~1000 probes while attaching perf-event links (may be NULL) */
	void (*progress)(uint32_t done, uint32_t total);
	const char *path; /* the executable to probe: an open fd's /proc/self/fd/N or a file */
	const char *name; /* its name in messages (the executable's path); NULL = path */
	uint64_t ringbuf_size;
	bool verbose; /* libbpf's log on stderr */
};

/* Open the skeleton, size maps, fill specs, load. 0 or -errno (err filled). */
int tracer__load(struct tracer *t, const struct trace_plan *plan, const struct model *m,
		 const struct tracer_opts *o, char *err, size_t errlen);
/*
 * Attach every probe of the plan: one uprobe_multi link, else (saying so) one
 * perf-event link per probe. 0 or -errno (err filled).
 */
int tracer__attach(struct tracer *t, const struct trace_plan *plan, const struct tracer_opts *o,
		   char *err, size_t errlen);
/* Set or clear the BPF side's ready flag. */
void tracer__set_ready(struct tracer *t, bool ready);
/* Clear ready and destroy every link (idempotent). */
void tracer__detach(struct tracer *t);
/*
 * After detach and the last drain: every frame still on a target thread's stack (a
 * poll running, or blocked, when tracing stopped) becomes a RESULT_OPEN record
 * ending now, innermost first, handed to sink (trace_consumer__handle's shape) and
 * counted into stats[nr_polls] (may be NULL) as the BPF side would. The stacks are
 * read from task storage with one pidfd per thread. 0 or -errno (err filled; some
 * threads may still have been reported).
 */
int tracer__dump_open(struct tracer *t, pid_t pid, struct poll_stats *stats,
		      int (*sink)(void *, void *, size_t), void *ctx, uint32_t *emitted, char *err,
		      size_t errlen);
/* Execs of the target since attach (on_exec; 0 when they cannot be watched). */
uint32_t tracer__exec_count(const struct tracer *t);
/* The global counters (COUNTER_*), summed over CPUs; cheap enough for a status line. */
int tracer__read_counters(const struct tracer *t, __u64 *counters);
/* File descriptor of the ring buffer map. */
int tracer__ringbuf_fd(const struct tracer *t);
/*
 * Sum the per-CPU statistics: stats[nr_polls] (may be NULL) and counters[COUNTER_COUNT].
 * 0 or -errno.
 */
int tracer__read_stats(const struct tracer *t, struct poll_stats *stats, __u64 *counters);
void tracer__free(struct tracer *t);

/* ---- summary: trace_summary.h ---- */

/* ---- consumer ---- */

struct trace_consumer {
	const struct model *m;
	pid_t pid;
	struct perfetto_writer *perfetto; /* may be NULL */
	struct chrome_trace *chrome;	  /* may be NULL */
	struct trace_summary *summary;
	FILE *records;		     /* --records: one JSON line per poll, may be NULL */
	struct trace_folded *folded; /* --folded, may be NULL */
	struct trace_dot *dot;	     /* --dot, may be NULL */
	struct u64_map *threads;     /* tids already named */
	int write_err;		     /* first writer error (-errno) */
};

int trace_consumer__init(struct trace_consumer *c, const struct model *m, pid_t pid,
			 struct perfetto_writer *perfetto, struct chrome_trace *chrome,
			 struct trace_summary *summary);
/* Decode one ring-buffer record (libbpf ring_buffer callback shape). Never fails. */
int trace_consumer__handle(void *ctx, void *data, size_t size);
/* Record → trace_poll (pure). Returns 0, or -EINVAL for a record of another type/size. */
int trace_record__decode(const void *data, size_t size, const struct model *m,
			 struct trace_poll *out);
void trace_consumer__free(struct trace_consumer *c);

#endif
