// SPDX-License-Identifier: GPL-2.0
/* top on several processes, or on every process of an executable (top_fleet.h). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "cli/top_fleet.h"
#include "cli/trace_run.h"
#include "lib/exe_match.h"
#include "lib/exitcodes.h"
#include "lib/log.h"
#include "lib/sysfacts.h"
#include "lib/vec.h"
#include "trace/trace_cost.h"

/* --exe: how often /proc is read for processes that started */
#define RESCAN_NS 250000000ull

/* A binary's analysis, reused by every process running it: the file by device,
 * inode, size and modification time (a build copied over the file is another). */
struct built {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	struct model m;
	bool loaded;
	pid_t first; /* the process it was analysed for */
	int status;  /* a failure every process of it would meet (nothing to trace...) */
};

/* One process traced. */
struct member {
	struct trace_args a; /* the command's, a.pid this process */
	struct trace_run r;
	struct top_prom_src *src; /* -p: its own; --exe: the executable's */
	bool gone;
	/* gone: its statistics when it went */
	struct poll_stats *last;
	uint32_t nr_last;
	__u64 counters[COUNTER_COUNT];
};

struct fleet {
	const struct trace_args *a;
	bool follow; /* --exe */
	struct exe_match match;
	struct member **m;
	uint32_t n, cap;
	struct built **b;
	uint32_t nr_b, cap_b;
	pid_t *skip; /* --exe: processes that could not be traced, while they run */
	uint32_t nr_skip, cap_skip;
	struct top_prom *prom;
	struct top_prom_src *group; /* --exe */
	long tables;
	int key;
	bool quit, waiting_said;
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static struct built *built_of(struct fleet *f, const struct stat *st)
{
	for (uint32_t k = 0; k < f->nr_b; k++) {
		struct built *b = f->b[k];

		if (b->dev == st->st_dev && b->ino == st->st_ino && b->size == st->st_size &&
		    b->mtime.tv_sec == st->st_mtim.tv_sec &&
		    b->mtime.tv_nsec == st->st_mtim.tv_nsec)
			return b;
	}
	return NULL;
}

static struct built *built_new(struct fleet *f, const struct stat *st)
{
	struct built *b = calloc(1, sizeof(*b));

	if (!b || vec__reserve((void **)&f->b, &f->cap_b, f->nr_b + 1, sizeof(*f->b))) {
		free(b);
		return NULL;
	}
	*b = (struct built){
	    .dev = st->st_dev, .ino = st->st_ino, .size = st->st_size, .mtime = st->st_mtim};
	f->b[f->nr_b++] = b;
	return b;
}

static bool is_member(const struct fleet *f, pid_t pid)
{
	for (uint32_t k = 0; k < f->n; k++)
		if (f->m[k]->a.pid == pid)
			return true;
	for (uint32_t k = 0; k < f->nr_skip; k++)
		if (f->skip[k] == pid)
			return true;
	return false;
}

static void member_free(struct member *mb)
{
	trace_run__free(&mb->r);
	free(mb->last);
	free(mb);
}

/* Attach to pid: the analysis of its binary reused when there is one. An exit status. */
static int attach(struct fleet *f, pid_t pid)
{
	struct member *mb = calloc(1, sizeof(*mb));
	char link[64];
	struct stat st;
	struct built *b = NULL;
	bool known;
	int status;

	if (!mb)
		return EXIT_FAILURE_INTERNAL;
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	known = !stat(link, &st);
	if (known && (b = built_of(f, &st)) && b->status) {
		pr_debug("top: pid %d runs a binary that could not be traced before: left alone\n",
			 (int)pid);
		free(mb);
		return b->status;
	}
	mb->a = *f->a;
	mb->a.pid = pid;
	mb->r.a = &mb->a;
	if (b && b->loaded) {
		mb->r.m = b->m;
		mb->r.model_borrowed = true;
		pr_info("top: pid %d runs the binary analysed for pid %d (the same file, "
			"unchanged): its analysis reused\n",
			(int)pid, (int)b->first);
	}
	status = trace_run__open(&mb->r);
	if (known && !b && (!status || status == EXIT_NO_MATCH || status == EXIT_BAD_INPUT))
		b = built_new(f, &st);
	if (b && !status && !b->loaded && mb->r.model_loaded) {
		/* the fleet keeps the analysis for the binary's other processes */
		b->m = mb->r.m;
		b->loaded = true;
		b->first = pid;
		mb->r.model_loaded = false;
		mb->r.model_borrowed = true;
	} else if (b && (status == EXIT_NO_MATCH || status == EXIT_BAD_INPUT)) {
		b->status = status;
	}
	if (!status && f->prom)
		mb->src =
		    f->follow ? f->group : top_prom__source(f->prom, false, session__exe(mb->r.s));
	if (!status && f->prom && !mb->src)
		status = EXIT_FAILURE_INTERNAL;
	if (!status && vec__reserve((void **)&f->m, &f->cap, f->n + 1, sizeof(*f->m)))
		status = EXIT_FAILURE_INTERNAL;
	if (status) {
		if (mb->src && !f->follow)
			top_prom__drop(f->prom, mb->src);
		member_free(mb);
		return status;
	}
	/* the baseline of its first table */
	top_run__tick(&mb->r, sysfacts__now_ns(), mb->r.attached_ns);
	f->m[f->n++] = mb;
	return EXIT_OK;
}

static void print_cost(const struct member *mb)
{
	fprintf(stderr, "\npid %d (%s):", (int)mb->a.pid, session__exe(mb->r.s));
	tracer_cost__print(&mb->r.totals.cost, stderr);
}

/* A process exited (or executed another program): its last statistics kept for the
 * next page, its probes detached. */
static void let_go(struct fleet *f, struct member *mb, const char *why)
{
	(void)f;
	if (top_run__read(&mb->r, &mb->last, &mb->nr_last, mb->counters))
		mb->last = NULL;
	pr_info("top: pid %d (%s) %s: letting go\n", (int)mb->a.pid, session__exe(mb->r.s), why);
	trace_run__stop(&mb->r);
	print_cost(mb);
	mb->gone = true;
}

static void skip(struct fleet *f, pid_t pid)
{
	if (!vec__reserve((void **)&f->skip, &f->cap_skip, f->nr_skip + 1, sizeof(*f->skip)))
		f->skip[f->nr_skip++] = pid;
}

static void on_found(void *ctx, pid_t pid)
{
	struct fleet *f = ctx;
	int status;

	if (is_member(f, pid))
		return;
	pr_info("top: pid %d runs %s: attaching\n", (int)pid, f->match.want);
	if ((status = attach(f, pid))) {
		pr_warn("top: pid %d not traced (exit status %d above); it is left alone while "
			"it runs\n",
			(int)pid, status);
		skip(f, pid);
	}
}

/* --exe: the processes that started since the last look; those skipped and gone are
 * forgotten (their pid may come back as another process). */
static void rescan(struct fleet *f)
{
	for (uint32_t k = 0; k < f->nr_skip;)
		if (kill(f->skip[k], 0) && errno == ESRCH)
			f->skip[k] = f->skip[--f->nr_skip];
		else
			k++;
	exe_match__scan(&f->match, on_found, f);
}

static uint32_t live(const struct fleet *f)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < f->n; k++)
		n += !f->m[k]->gone;
	return n;
}

/* Every interval: each process's table, one page of them all; the gone forgotten. */
static void tick(struct fleet *f, uint64_t now)
{
	uint32_t shown = 0;

	if (f->prom)
		top_prom__begin(f->prom);
	for (uint32_t k = 0; k < f->n; k++) {
		struct member *mb = f->m[k];
		struct top_prom_in pin;

		if (mb->gone) {
			if (f->prom && f->follow && mb->last) {
				top_run__prom_in(&mb->r, mb->last, mb->nr_last, mb->counters,
						 mb->r.top_prev_cpu, now, &pin);
				top_prom__add(f->prom, mb->src, &pin, true);
			}
			continue;
		}
		mb->r.top_key = f->key;
		mb->r.top_section = shown > 0;
		top_run__tick(&mb->r, now, mb->r.attached_ns);
		shown++;
		if (f->prom && mb->r.top_prev) {
			top_run__prom_in(&mb->r, mb->r.top_prev,
					 mb->r.plan.task_mode ? tracer__nr_task_stats(mb->r.t)
							      : tracer__nr_polls(mb->r.t),
					 mb->r.top_prev_counters, mb->r.top_prev_cpu, now, &pin);
			top_prom__add(f->prom, mb->src, &pin, false);
		}
	}
	if (f->prom)
		top_prom__end(f->prom, now);
	for (uint32_t k = 0; k < f->n;) {
		struct member *mb = f->m[k];

		if (!mb->gone) {
			k++;
			continue;
		}
		if (!f->follow)
			top_prom__drop(f->prom, mb->src);
		member_free(mb);
		memmove(&f->m[k], &f->m[k + 1], (f->n - k - 1) * sizeof(*f->m));
		f->n--;
	}
	if (!shown && !f->a->quiet) {
		if (!f->a->batch)
			fputs("\033[H\033[2J", stdout);
		printf("asyncbpf top: no process of %s running: waiting for one\n", f->match.want);
		fflush(stdout);
	}
	f->tables++;
}

enum fleet_stop { STOP_SIGNAL, STOP_DURATION, STOP_ALL_GONE, STOP_KEYS, STOP_ERROR };

static enum fleet_stop loop(struct fleet *f, uint64_t start)
{
	const struct trace_args *a = f->a;
	uint64_t interval = (uint64_t)(a->interval * 1e9), last_tick = start, last_scan = start;
	struct pollfd *fds = NULL;
	uint32_t cap = 0;

	while (!interrupted) {
		uint64_t now = sysfacts__now_ns(), due = last_tick + interval;
		uint32_t n = 0;

		if (vec__reserve((void **)&fds, &cap, 2 * f->n + 1, sizeof(*fds))) {
			free(fds);
			return STOP_ERROR;
		}
		for (uint32_t k = 0; k < f->n; k++) {
			struct member *mb = f->m[k];
			uint64_t d;

			if (mb->gone)
				continue;
			fds[n++] = (struct pollfd){.fd = ring_buffer__epoll_fd(mb->r.rb),
						   .events = POLLIN};
			fds[n++] = (struct pollfd){.fd = session__pidfd(mb->r.s), .events = POLLIN};
			if (mb->r.ws && (d = wake_sampler__pulse(mb->r.ws, now)) && d < due)
				due = d;
		}
		if (f->follow && last_scan + RESCAN_NS < due)
			due = last_scan + RESCAN_NS;
		int timeout = due <= now ? 0 : (int)((due - now + 999999) / 1000000);

		if (poll(fds, n, timeout > 100 ? 100 : timeout) < 0 && errno != EINTR) {
			free(fds);
			return STOP_ERROR;
		}
		for (uint32_t k = 0; k < f->n; k++) {
			struct member *mb = f->m[k];
			struct pollfd p = {.fd = session__pidfd(mb->r.s), .events = POLLIN};

			if (mb->gone)
				continue;
			rb_budget__consume(mb->r.rb, &mb->r.budget, RB_BUDGET_ROUND);
			if (poll(&p, 1, 0) > 0)
				let_go(f, mb, "exited");
			else if (tracer__exec_count(mb->r.t))
				let_go(f, mb, "executed another program");
		}
		if (top_run__read_keys(a->batch, &f->key, &f->quit))
			break;
		now = sysfacts__now_ns();
		if (a->duration > 0 && (double)(now - start) >= a->duration * 1e9) {
			free(fds);
			return STOP_DURATION;
		}
		if (f->follow && now >= last_scan + RESCAN_NS) {
			rescan(f);
			last_scan = sysfacts__now_ns();
		}
		if (now >= last_tick + interval) {
			tick(f, now);
			last_tick = now;
			if (a->count && f->tables >= a->count)
				break;
		}
		if (!f->follow && !live(f)) {
			free(fds);
			return STOP_ALL_GONE;
		}
	}
	free(fds);
	return interrupted ? STOP_SIGNAL : STOP_KEYS;
}

static int start(struct fleet *f)
{
	const struct trace_args *a = f->a;
	char err[PATH_MAX + 64] = "";
	int status, e;

	if (a->prometheus && (status = top_prom__start(a->prometheus, a->prom_top, &f->prom)))
		return status;
	if (!f->follow) {
		for (uint32_t k = 0; k < a->nr_pids; k++)
			if ((status = attach(f, a->pids[k])))
				return status; /* nothing of a -p list is watched unless all are */
		return EXIT_OK;
	}
	if ((e = exe_match__init(&f->match, a->exe, err, sizeof(err)))) {
		pr_warn("top: %s\n", err);
		return e == -ENOENT ? EXIT_NO_INPUT : EXIT_USAGE;
	}
	if (f->prom && !(f->group = top_prom__source(f->prom, true, f->match.want)))
		return EXIT_FAILURE_INTERNAL;
	rescan(f);
	if (!live(f))
		pr_info("top: no process %s %s yet: waiting for one (Ctrl-C stops)\n",
			f->match.by_name ? "named" : "runs", f->match.want);
	return EXIT_OK;
}

int top_fleet__run(const struct trace_args *a)
{
	struct fleet f = {.a = a, .follow = a->exe != NULL, .key = a->sort};
	struct sigaction sa = {.sa_handler = on_signal};
	struct termios saved;
	bool keys = false;
	int status;

	log__alias("trace", "top");
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (!(status = start(&f))) {
		keys = !a->batch && top_run__raw_keys(&saved);
		enum fleet_stop why = loop(&f, sysfacts__now_ns());

		if (keys)
			top_run__restore_keys(&saved);
		if (why == STOP_ALL_GONE)
			pr_info("top: every process exited\n");
		else if (why == STOP_ERROR)
			pr_warn("top: waiting for events failed: %s\n", strerror(errno));
	}
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	for (uint32_t k = 0; k < f.n; k++) {
		if (!f.m[k]->gone) {
			trace_run__stop(&f.m[k]->r);
			print_cost(f.m[k]);
		}
		member_free(f.m[k]);
	}
	free(f.m);
	for (uint32_t k = 0; k < f.nr_b; k++) {
		if (f.b[k]->loaded)
			model__free(&f.b[k]->m);
		free(f.b[k]);
	}
	free(f.b);
	free(f.skip);
	top_prom__stop(f.prom);
	return status;
}
