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

/*
 * Re-read the mappings when a pc is in none of them: at once the first time (launch
 * mode starts the unwinder at the first sample, which may come before ld.so mapped
 * libc), then, while re-reading does not help, at doubling intervals up to this.
 */
#define REFRESH_INTERVAL_NS	  (200000000ull)
#define REFRESH_FIRST_INTERVAL_NS (1000000ull)

struct profile_consumer {
	pid_t pid;
	char err[512];
	struct unwinder *unwinder;
	int unwinder_err;
	struct projector *proj;
	struct profile_counts n;
	uint64_t last_refresh, refresh_interval;
	struct u64_map threads; /* tid -> index in names */
	struct pthread_name *names;
	size_t nr_names, cap_names;
	struct u64_map blocked; /* off-CPU: tid -> stack of its last switch-out */
	void **kept;		/* --bench-replay: copies of the last on-CPU records */
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

static uint32_t unwind_sample(struct profile_consumer *c, const struct profile_sample *rec,
			      const uint8_t *stack)
{
	uint64_t t0 = thread_cpu_ns(), now;
	uint32_t n;

	/* launch mode: the mappings are only worth reading once the command runs */
	if (!c->unwinder) {
		c->unwinder = unwinder__new(c->pid, &c->unwinder_err, c->err, sizeof(c->err));
		c->last_refresh = sysfacts__now_ns();
		c->refresh_interval = REFRESH_FIRST_INTERVAL_NS;
		if (!c->unwinder)
			return 0;
	}
	n = unwinder__unwind(c->unwinder, rec, stack, &c->result);
	if (c->result.reason == UNWIND_PC_OUTSIDE &&
	    (now = sysfacts__now_ns()) - c->last_refresh > c->refresh_interval) {
		/* a dlopen or an exec since the mappings were read */
		c->last_refresh = now;
		if (!unwinder__refresh(c->unwinder))
			n = unwinder__unwind(c->unwinder, rec, stack, &c->result);
		if (c->result.reason != UNWIND_PC_OUTSIDE)
			c->refresh_interval = REFRESH_FIRST_INTERVAL_NS;
		else if ((c->refresh_interval *= 2) > REFRESH_INTERVAL_NS)
			c->refresh_interval = REFRESH_INTERVAL_NS;
	}
	c->n.unwind_cpu_ns += thread_cpu_ns() - t0;
	return n;
}

int profile_consumer__handle(void *ctx, void *data, size_t size)
{
	struct profile_consumer *c = ctx;
	const struct profile_sample *rec = data;
	const uint8_t *stack = (const uint8_t *)data + sizeof(*rec);
	struct projected_sample s;
	uint64_t v;
	int64_t st;
	uint32_t n;

	if (size < sizeof(*rec) || rec->stack_size > size - sizeof(*rec) ||
	    (rec->type != RECORD_PROFILE_SAMPLE && rec->type != RECORD_PROFILE_OFFCPU &&
	     rec->type != RECORD_PROFILE_WAKE)) {
		c->n.bad_records++;
		return 0;
	}
	s = (struct projected_sample){
	    .time_ns = rec->time_ns, .pid = rec->pid, .tid = rec->tid, .weight = rec->weight};
	if (rec->type == RECORD_PROFILE_WAKE) {
		/* UINT64_MAX: this block's stack was used already (its record was lost) */
		if (!u64_map__get(&c->blocked, rec->tid, &v) || v == UINT64_MAX) {
			c->n.unknown_waits++;
			return 0;
		}
		s.offcpu = true;
		if (projector__add_weight(c->proj, (uint32_t)v, &s))
			c->n.error = -ENOMEM;
		u64_map__set(&c->blocked, rec->tid, UINT64_MAX);
		return 0;
	}
	note_thread(c, rec->tid);
	n = unwind_sample(c, rec, stack);
	if (log_verbosity >= 2 && c->n.received < 3) { /* what the first samples unwound to */
		pr_debug("profile: sample of tid %u: %u frames (%s)\n", rec->tid, n,
			 unwind_reason__name(c->result.reason));
		for (uint32_t i = 0; i < n; i++)
			pr_debug("  #%u %#" PRIx64 " %s%s %s:%u\n", i, c->result.frames[i]->pc,
				 c->result.frames[i]->name,
				 c->result.frames[i]->inlined ? " (inlined)" : "",
				 c->result.frames[i]->file ? c->result.frames[i]->file : "?",
				 c->result.frames[i]->line);
	}
	if (rec->type == RECORD_PROFILE_OFFCPU) {
		c->n.offcpu_records++;
		s.offcpu = true;
		s.intern_only = true; /* its time arrives with the wake-up */
	} else {
		c->n.received++;
		if (c->keep) {
			size_t slot = c->nr_kept < c->keep ? c->nr_kept++ : c->n.received % c->keep;
			void *copy = malloc(size);

			if (copy) {
				memcpy(copy, data, size);
				free(c->kept[slot]);
				c->kept[slot] = copy;
				c->kept_size[slot] = size;
			}
		}
		c->n.reasons[c->unwinder ? c->result.reason : UNWIND_OTHER]++;
		if (!n)
			c->n.failed++;
		else if (c->result.reason != UNWIND_COMPLETE)
			c->n.partial++;
	}
	st = projector__add(c->proj, c->result.frames, n, &s);
	if (st < 0) {
		c->n.error = -ENOMEM;
		return 0;
	}
	if (s.offcpu && u64_map__set(&c->blocked, rec->tid, (uint64_t)st))
		c->n.error = -ENOMEM;
	return 0;
}

struct profile_consumer *profile_consumer__new(const struct model *m, pid_t pid, uint32_t keep)
{
	struct profile_consumer *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->pid = pid;
	u64_map__init(&c->threads);
	u64_map__init(&c->blocked);
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
	u64_map__free(&c->blocked);
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
