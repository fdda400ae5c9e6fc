// SPDX-License-Identifier: GPL-2.0
/* profile --every on several processes, or every process of an executable
 * (profile_fleet.h). */
#include <stdlib.h>

#include <bpf/libbpf.h>

#include "cli/fleet.h"
#include "cli/profile_fleet.h"
#include "cli/profile_run.h"
#include "lib/exitcodes.h"
#include "lib/log.h"

/* One process profiled. */
struct member {
	struct profile_args a; /* the command's, a.pid this process */
	struct profile_run r;
};

struct profile_fleet {
	const struct profile_args *a;
	int status; /* the worst of the processes let go */
};

static int open_run(void *ctx, pid_t pid, void **run)
{
	struct profile_fleet *pf = ctx;
	struct member *mb = calloc(1, sizeof(*mb));
	int status;

	if (!mb)
		return EXIT_FAILURE_INTERNAL;
	mb->a = *pf->a;
	mb->a.pid = pid;
	mb->r = (struct profile_run){.a = &mb->a, .cpu_start = -1, .cpu_end = -1};
	if ((status = profile_run__open_session(&mb->r))) {
		profile_run__free(&mb->r);
		free(mb);
		return status;
	}
	*run = mb;
	return EXIT_OK;
}

static struct session *session_of(void *run)
{
	return ((struct member *)run)->r.s;
}

static void model_of(void *run, struct model **m, struct run_model **own)
{
	struct member *mb = run;

	*m = &mb->r.m;
	*own = &mb->r.model_own;
}

static int start_run(void *ctx, void *run)
{
	struct member *mb = run;

	(void)ctx;
	return profile_run__start(&mb->r);
}

static void ring(void *run, struct ring_buffer **rb, struct rb_budget **budget)
{
	struct member *mb = run;

	*rb = mb->r.rb;
	*budget = &mb->r.budget;
}

static uint32_t execs(void *run)
{
	return profiler__exec_count(((struct member *)run)->r.p);
}

/* Detach, the last (partial) interval's file, what was written. An exit status. */
static int finish(struct member *mb)
{
	profile_run__stop(&mb->r);
	return profile_run__report(&mb->r, false);
}

static void let_go(void *ctx, void *run, const char *why)
{
	struct profile_fleet *pf = ctx;
	struct member *mb = run;
	int status;

	pr_info("profile: pid %d (%s) %s: letting go\n", (int)mb->a.pid, session__exe(mb->r.s),
		why);
	if ((status = finish(mb)) && !pf->status)
		pf->status = status;
}

/* Every --every: each live process's interval into its file. */
static void tick(void *ctx, struct fleet_member *const *m, uint32_t n, uint64_t now)
{
	(void)ctx;
	for (uint32_t k = 0; k < n; k++)
		if (!m[k]->gone)
			profile_run__interval(&((struct member *)m[k]->run)->r, now);
}

static int close_run(void *ctx, void *run)
{
	(void)ctx;
	return finish(run);
}

static void free_run(void *run)
{
	struct member *mb = run;

	profile_run__free(&mb->r);
	free(mb);
}

/* A profiler's descriptors: a perf event and a link per CPU, the BPF object's maps and
 * programs, its ring buffers, the unwinder's, the session's */
static uint32_t fds_per_run(void)
{
	int cpus = libbpf_num_possible_cpus();

	return 2 * (uint32_t)(cpus > 0 ? cpus : 64) + 40;
}

int profile_fleet__run(const struct profile_args *a)
{
	struct profile_fleet pf = {.a = a};
	const struct fleet_ops ops = {.cmd = "profile",
				      .ctx = &pf,
				      .open = open_run,
				      .session = session_of,
				      .start = start_run,
				      .model = model_of,
				      .ring = ring,
				      .execs = execs,
				      .let_go = let_go,
				      .fds_per_run = fds_per_run(),
				      .tick = tick,
				      .tick_ns = (uint64_t)(a->every * 1e9),
				      .close = close_run,
				      .free = free_run};
	const struct fleet_opts o = {
	    .pids = a->pids, .nr_pids = a->nr_pids, .exe = a->exe, .duration = a->duration};
	struct profile_every *dir;
	int status;

	/* the directory checked (made) before any process is: exit 8 at once */
	if ((status = profile_every__open(a->pprof_dir, a->keep, a->keep_bytes, 0, &dir)))
		return status;
	profile_every__close(dir);
	status = fleet__run(&o, &ops);
	return status ? status : pf.status;
}
