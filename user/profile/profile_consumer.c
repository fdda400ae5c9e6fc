// SPDX-License-Identifier: GPL-2.0
/* The profiler's ring-buffer consumer (profile_consumer.h). */
#include "profile/profile_consumer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/hashmap.h"
#include "lib/log.h"
#include "lib/sysfacts.h"
#include "profile/walks.h"

/*
 * Re-read the mappings when a pc is in none of them: at once the first time (launch
 * mode starts the unwinder at the first sample, which may come before ld.so mapped
 * libc), then, while re-reading does not help, at doubling intervals up to this.
 */
#define REFRESH_INTERVAL_NS	  (200000000ull)
#define REFRESH_FIRST_INTERVAL_NS (1000000ull)

/* An on-CPU sample until the end: its walk (-1: nothing could be walked). */
struct walked_sample {
	uint64_t time_ns;
	uint32_t pid, tid;
	int64_t walk;
};

struct profile_consumer {
	pid_t pid;
	const struct model *m;
	char err[512];
	struct unwinder *unwinder;
	int unwinder_err;
	struct projector *proj;
	struct profile_counts n;
	uint64_t last_refresh, refresh_interval;
	struct u64_map threads; /* tid -> index in names */
	struct pthread_name *names;
	size_t nr_names, cap_names;
	struct offcpu_learner *offcpu; /* --off-cpu: its records, what the kernel learns */
	/* on-CPU samples, walked as they come, symbolized and projected at the end */
	struct walk_table walks;
	struct walked_sample *samples;
	size_t nr_samples, cap_samples;
	uint64_t pcs[UNWIND_MAX_FRAMES];
	void **kept; /* --bench-replay: copies of the last on-CPU records */
	size_t *kept_size, nr_kept, keep;
	struct unwind_result result; /* large: kept here, not on the stack */
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void note_thread(struct profile_consumer *c, uint32_t tid)
{
	char path[64], comm[64] = "";
	uint64_t v;

	if (u64_map__get(&c->threads, tid, &v))
		return;
	if (c->nr_names == c->cap_names) {
		size_t cap = c->cap_names ? c->cap_names * 2 : 16;
		struct pthread_name *n = realloc(c->names, cap * sizeof(*n));

		if (!n)
			return;
		c->names = n;
		c->cap_names = cap;
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%u/comm", (int)c->pid, tid);
	if (sysfacts__read_small_file(path, comm, sizeof(comm)))
		snprintf(comm, sizeof(comm), "tid %u", tid);
	c->names[c->nr_names].tid = tid;
	if (!(c->names[c->nr_names].name = strdup(comm)))
		return;
	if (u64_map__set(&c->threads, tid, c->nr_names)) {
		free((void *)c->names[c->nr_names].name);
		return;
	}
	c->nr_names++;
}

static void note_depth(struct profile_counts *n, const struct profile_sample *rec)
{
	uint32_t k = 0;

	if (!rec->stack_depth || (rec->flags & PROFILE_F_KERNEL_THREAD)) {
		n->depth_unknown++;
		return;
	}
	while (k + 1 < PROFILE_DEPTH_BUCKETS && ((uint64_t)1024 << k) < rec->stack_depth)
		k++;
	n->depth_hist[k]++;
	if (rec->stack_depth > n->depth_max)
		n->depth_max = rec->stack_depth;
}

/* Walk a record's stack (CFI only); false when there is no unwinder. */
static bool walk_sample(struct profile_consumer *c, const struct profile_sample *rec,
			const uint8_t *stack)
{
	uint64_t now;
	enum unwind_reason reason;

	/* launch mode: the mappings are only worth reading once the command runs */
	if (!c->unwinder) {
		c->unwinder = unwinder__new(c->pid, &c->unwinder_err, c->err, sizeof(c->err));
		c->last_refresh = sysfacts__now_ns();
		c->refresh_interval = REFRESH_FIRST_INTERVAL_NS;
		if (!c->unwinder)
			return false;
	}
	reason = unwinder__walk(c->unwinder, rec, stack);
	if (reason == UNWIND_PC_OUTSIDE &&
	    (now = sysfacts__now_ns()) - c->last_refresh > c->refresh_interval) {
		/* a dlopen or an exec since the mappings were read */
		c->last_refresh = now;
		if (!unwinder__refresh(c->unwinder))
			reason = unwinder__walk(c->unwinder, rec, stack);
		if (reason != UNWIND_PC_OUTSIDE)
			c->refresh_interval = REFRESH_FIRST_INTERVAL_NS;
		else if ((c->refresh_interval *= 2) > REFRESH_INTERVAL_NS)
			c->refresh_interval = REFRESH_INTERVAL_NS;
	}
	return true;
}

/* An on-CPU sample: counted now, its walk kept for the end. */
static void add_sample(struct profile_consumer *c, const struct profile_sample *rec, bool walked)
{
	enum unwind_reason reason = walked ? unwinder__last_reason(c->unwinder) : UNWIND_OTHER;
	uint32_t n = walked ? unwinder__walked(c->unwinder, c->pcs, UNWIND_MAX_FRAMES) : 0;
	int64_t w = -1;

	c->n.received++;
	note_depth(&c->n, rec);
	c->n.reasons[reason]++;
	if (!n)
		c->n.failed++;
	else if (reason != UNWIND_COMPLETE)
		c->n.partial++;
	if (walked && (w = walk_table__add(&c->walks, c->pcs, n, reason)) < 0) {
		c->n.error = -ENOMEM;
		return;
	}
	if (c->nr_samples == c->cap_samples) {
		size_t cap = c->cap_samples ? c->cap_samples * 2 : 1024;
		struct walked_sample *ns = realloc(c->samples, cap * sizeof(*ns));

		if (!ns) {
			c->n.error = -ENOMEM;
			return;
		}
		c->samples = ns;
		c->cap_samples = cap;
	}
	c->samples[c->nr_samples++] = (struct walked_sample){
	    .time_ns = rec->time_ns, .pid = rec->pid, .tid = rec->tid, .walk = w};
}

static void keep_record(struct profile_consumer *c, const void *data, size_t size)
{
	size_t slot = c->nr_kept < c->keep ? c->nr_kept++ : c->n.received % c->keep;
	void *copy = malloc(size);

	if (copy) {
		memcpy(copy, data, size);
		free(c->kept[slot]);
		c->kept[slot] = copy;
		c->kept_size[slot] = size;
	}
}

int profile_consumer__handle(void *ctx, void *data, size_t size)
{
	struct profile_consumer *c = ctx;
	const struct profile_sample *rec = data;
	const uint8_t *stack = (const uint8_t *)data + sizeof(*rec);
	uint64_t t0 = thread_cpu_ns();
	bool walked;

	if (size < sizeof(*rec) || rec->stack_size > size - sizeof(*rec) ||
	    rec->below_sp > PROFILE_RED_ZONE || rec->below_sp > rec->regs[PROFILE_REG_SP] ||
	    (rec->type != RECORD_PROFILE_SAMPLE && rec->type != RECORD_PROFILE_OFFCPU)) {
		c->n.bad_records++;
		return 0;
	}
	note_thread(c, rec->tid);
	walked = walk_sample(c, rec, stack);
	if (rec->type == RECORD_PROFILE_OFFCPU) {
		/* teach the kernel now; its time is in the kernel's sums under rec->weight */
		if (walked &&
		    (!c->offcpu || offcpu__learn(c->offcpu, c->unwinder, rec->weight, &c->n.off)))
			c->n.error = -ENOMEM;
	} else {
		if (c->keep)
			keep_record(c, data, size);
		add_sample(c, rec, walked);
	}
	c->n.walk_cpu_ns += thread_cpu_ns() - t0;
	return 0;
}

/* What the first samples unwound to (-vv). */
static void print_first(const struct profile_consumer *c, size_t i, uint32_t n)
{
	const struct unwind_result *r = &c->result;

	pr_debug("profile: sample of tid %u: %u frames (%s)\n", c->samples[i].tid, n,
		 unwind_reason__name(r->reason));
	for (uint32_t k = 0; k < n; k++)
		pr_debug("  #%u %#" PRIx64 " %s%s %s:%u\n", k, r->frames[k]->pc, r->frames[k]->name,
			 r->frames[k]->inlined ? " (inlined)" : "",
			 r->frames[k]->file ? r->frames[k]->file : "?", r->frames[k]->line);
}

void profile_consumer__finish(struct profile_consumer *c)
{
	uint64_t t0 = thread_cpu_ns();

	for (size_t i = 0; i < c->nr_samples; i++) {
		const struct walked_sample *ws = &c->samples[i];
		struct projected_sample s = {
		    .time_ns = ws->time_ns, .pid = ws->pid, .tid = ws->tid, .weight = 1};
		struct walk *w = ws->walk >= 0 ? &c->walks.walks[ws->walk] : NULL;
		int64_t stack = w ? w->stack : -1;

		if (stack < 0) {
			uint32_t n = w && c->unwinder
					 ? unwinder__symbolize(c->unwinder, w->pcs, w->n, w->reason,
							       &c->result)
					 : 0;

			if (log_verbosity >= 2 && i < 3)
				print_first(c, i, n);
			s.cut_short = w && w->reason == UNWIND_STACK_SHORT;
			s.intern_only = true;
			stack = projector__add(c->proj, c->result.frames, n, &s);
			s.intern_only = false;
			if (w)
				w->stack = stack;
		}
		if (stack < 0 || projector__add_to(c->proj, (uint32_t)stack, &s)) {
			c->n.error = -ENOMEM;
			break;
		}
	}
	c->nr_samples = 0;
	c->n.symbolize_cpu_ns += thread_cpu_ns() - t0;
}

struct profile_consumer *profile_consumer__new(const struct model *m, pid_t pid, uint32_t keep)
{
	struct profile_consumer *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->pid = pid;
	c->m = m;
	u64_map__init(&c->threads);
	walk_table__init(&c->walks);
	c->proj = projector__new(m, true);
	if (keep) {
		c->kept = calloc(keep, sizeof(*c->kept));
		c->kept_size = calloc(keep, sizeof(*c->kept_size));
		c->keep = c->kept && c->kept_size ? keep : 0;
	}
	if (!c->proj) {
		profile_consumer__free(c);
		return NULL;
	}
	return c;
}

int profile_consumer__open_unwinder(struct profile_consumer *c, char *err, size_t errlen)
{
	c->unwinder = unwinder__new(c->pid, &c->unwinder_err, err, errlen);
	c->last_refresh = sysfacts__now_ns();
	c->refresh_interval = REFRESH_FIRST_INTERVAL_NS;
	return c->unwinder ? 0 : (c->unwinder_err ? c->unwinder_err : -EINVAL);
}

int profile_consumer__enable_offcpu(struct profile_consumer *c, int rules_fd)
{
	offcpu__free(c->offcpu);
	c->offcpu = offcpu__new(rules_fd);
	return c->offcpu ? 0 : -ENOMEM;
}

int profile_consumer__add_offcpu(struct profile_consumer *c, int times_fd, int stacks_fd,
				 int pending_fd)
{
	if (!c->offcpu)
		return -EINVAL;
	uint64_t t0 = thread_cpu_ns();
	int r = offcpu__collect(c->offcpu, c->unwinder, c->proj, times_fd, stacks_fd, pending_fd,
				&c->result, &c->n.off);

	c->n.symbolize_cpu_ns += thread_cpu_ns() - t0;
	return r;
}

const struct profile_counts *profile_consumer__counts(const struct profile_consumer *c)
{
	struct profile_counts *n = (struct profile_counts *)&c->n;

	n->have_unwinder = c->unwinder != NULL;
	n->unwind_err = c->err;
	return n;
}

void profile_consumer__fill(struct profile_consumer *c, struct profile_data *d)
{
	d->unwind_failed = c->n.failed;
	d->threads = c->names;
	d->nthreads = c->nr_names;
	projector__fill(c->proj, d);
}

int profile_consumer__next_interval(struct profile_consumer *c)
{
	struct projector *p = projector__new(c->m, true);

	if (!p)
		return -ENOMEM;
	projector__free(c->proj);
	c->proj = p;
	walk_table__forget_stacks(&c->walks);
	if (c->offcpu)
		offcpu__forget_stacks(c->offcpu);
	return 0;
}

void profile_consumer__unwinder_stats(const struct profile_consumer *c, uint64_t *pcs,
				      uint64_t *refreshes)
{
	*pcs = *refreshes = 0;
	if (c->unwinder)
		unwinder__stats(c->unwinder, pcs, refreshes);
}

void profile_consumer__free(struct profile_consumer *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr_kept; i++)
		free(c->kept[i]);
	free(c->kept);
	free(c->kept_size);
	unwinder__free(c->unwinder);
	projector__free(c->proj);
	for (size_t i = 0; i < c->nr_names; i++)
		free((void *)c->names[i].name);
	free(c->names);
	u64_map__free(&c->threads);
	offcpu__free(c->offcpu);
	walk_table__free(&c->walks);
	free(c->samples);
	free(c);
}

/*
 * --bench-replay N: unwind and project the kept records N more times with warm
 * caches, timed on this thread's CPU clock: unwinding throughput on one core, the
 * number bench/profile.sh reports. The replayed samples go to a scratch projector.
 */
void profile_consumer__bench_replay(struct profile_consumer *c, const struct model *m,
				    uint32_t rounds)
{
	struct projector *scratch = projector__new(m, false);
	struct projected_sample s = {.weight = 1};
	uint64_t t0, n = 0;

	if (!scratch || !c->unwinder || !c->nr_kept) {
		pr_warn("profile: nothing to replay\n");
		projector__free(scratch);
		return;
	}
	t0 = thread_cpu_ns();
	for (uint32_t r = 0; r < rounds; r++)
		for (size_t i = 0; i < c->nr_kept; i++) {
			const struct profile_sample *rec = c->kept[i];
			uint32_t k = unwinder__unwind(c->unwinder, rec, (const uint8_t *)(rec + 1),
						      &c->result);

			projector__add(scratch, c->result.frames, k, &s);
			n++;
		}
	t0 = thread_cpu_ns() - t0;
	fprintf(stderr, "asyncbpf: profile: replay unwound=%" PRIu64 " cpu_s=%.6f per_s=%.0f\n", n,
		(double)t0 / 1e9, t0 ? (double)n * 1e9 / (double)t0 : 0.0);
	projector__free(scratch);
}
