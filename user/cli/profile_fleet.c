// SPDX-License-Identifier: GPL-2.0
/* profile --every on several processes, or every process of an executable
 * (profile_fleet.h). */
#include <stdlib.h>

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

static int exe_fd(void *run)
{
	return session__exe_fd(((struct member *)run)->r.s);
}

static bool runs_exe(void *run)
{
	return session__runs_exe(((struct member *)run)->r.s);
}

static int start_run(void *ctx, void *run, const struct model *shared)
{
	struct member *mb = run;

	(void)ctx;
	if (shared) {
		mb->r.m = *shared;
		mb->r.model_borrowed = true;
	}
	return profile_run__start(&mb->r);
}

static bool give_model(void *run, struct model *out)
{
	struct member *mb = run;

	if (!mb->r.model_loaded)
		return false;
	*out = mb->r.m;
	mb->r.model_loaded = false;
	mb->r.model_borrowed = true;
	return true;
}

static int epoll_fd(void *run)
{
	return ring_buffer__epoll_fd(((struct member *)run)->r.rb);
}

static int pidfd(void *run)
{
	return session__pidfd(((struct member *)run)->r.s);
}

static void consume(void *run)
{
	struct member *mb = run;

	rb_budget__consume(mb->r.rb, &mb->r.budget, RB_BUDGET_ROUND);
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

int profile_fleet__run(const struct profile_args *a)
{
	struct profile_fleet pf = {.a = a};
	const struct fleet_ops ops = {.cmd = "profile",
				      .ctx = &pf,
				      .open = open_run,
				      .exe_fd = exe_fd,
				      .runs_exe = runs_exe,
				      .start = start_run,
				      .give_model = give_model,
				      .epoll_fd = epoll_fd,
				      .pidfd = pidfd,
				      .consume = consume,
				      .execs = execs,
				      .let_go = let_go,
				      .tick = tick,
				      .tick_ns = (uint64_t)(a->every * 1e9),
				      .close = close_run,
				      .free = free_run};
	const struct fleet_opts o = {
	    .pids = a->pids, .nr_pids = a->nr_pids, .exe = a->exe, .duration = a->duration};
	int status = fleet__run(&o, &ops);

	return status ? status : pf.status;
}
