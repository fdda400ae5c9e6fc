// SPDX-License-Identifier: GPL-2.0
/* Several processes watched in one loop (fleet.h). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "cli/fleet.h"
#include "lib/exe_match.h"
#include "lib/exitcodes.h"
#include "lib/log.h"
#include "lib/rb_budget.h"
#include "lib/sysfacts.h"
#include "lib/vec.h"
#include "session/session.h"

/* Unused analyses kept (a restart of a recent build reuses one); older ones freed */
#define KEEP_UNUSED 2

/* A binary's analysis, reused by every process running it: the file (held open by
 * the process's session) by device, inode, size and status-change time (which no
 * copy can set back: a build copied over the file is another). */
struct built {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec ctime;
	struct model m;
	bool loaded;
	pid_t first; /* the process it was analysed for */
	int status;  /* a failure every process of it would meet (nothing to trace...) */
	uint32_t users;
	uint64_t last_used;
};

/* A process that could not be watched, left alone while it runs (its pidfd tells
 * when it is gone, even if its pid comes back as another process). */
struct skipped {
	pid_t pid;
	int pidfd;
};

/* One member's bookkeeping next to the public part. */
struct member {
	struct fleet_member pub;
	struct built *b;
};

struct fleet {
	const struct fleet_opts *o;
	const struct fleet_ops *ops;
	bool follow; /* --exe */
	struct exe_match match;
	struct fleet_member **m; /* each the pub of a struct member */
	uint32_t n, cap;
	struct built **b;
	uint32_t nr_b, cap_b;
	struct skipped *skip; /* --exe */
	uint32_t nr_skip, cap_skip;
	int err; /* why waiting failed */
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
		    b->ctime.tv_sec == st->st_ctim.tv_sec &&
		    b->ctime.tv_nsec == st->st_ctim.tv_nsec)
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
	    .dev = st->st_dev, .ino = st->st_ino, .size = st->st_size, .ctime = st->st_ctim};
	f->b[f->nr_b++] = b;
	return b;
}

/* A live member's pid, or a skipped one's (a gone member's pid may be a new program). */
static bool known_pid(const struct fleet *f, pid_t pid)
{
	for (uint32_t k = 0; k < f->n; k++)
		if (f->m[k]->pid == pid && !f->m[k]->gone)
			return true;
	for (uint32_t k = 0; k < f->nr_skip; k++)
		if (f->skip[k].pid == pid)
			return true;
	return false;
}

static void member_free(struct fleet *f, struct fleet_member *pub)
{
	struct member *mb = (struct member *)pub;

	f->ops->free(pub->run);
	if (mb->b) {
		mb->b->users--;
		mb->b->last_used = sysfacts__now_ns();
	}
	free(mb);
}

/* Analyses no process uses, past the KEEP_UNUSED most recently used, freed. */
static void evict(struct fleet *f)
{
	for (;;) {
		struct built *oldest = NULL;
		uint32_t unused = 0;

		for (uint32_t k = 0; k < f->nr_b; k++) {
			struct built *b = f->b[k];

			if (!b->loaded || b->users)
				continue;
			unused++;
			if (!oldest || b->last_used < oldest->last_used)
				oldest = b;
		}
		if (unused <= KEEP_UNUSED)
			return;
		pr_debug("%s: the analysis made for pid %d freed: no process runs that file\n",
			 f->ops->cmd, (int)oldest->first);
		model__free(&oldest->m);
		oldest->loaded = false;
	}
}

/* Room for one more process's descriptors under the open-files limit: EXIT_OK, or
 * EXIT_USAGE said (libbpf would fail half-way with EMFILE, saying less). */
static int fd_room(const struct fleet *f, pid_t pid)
{
	struct rlimit rl;
	DIR *d = opendir("/proc/self/fd");
	uint64_t open_fds = 0;

	if (!d || getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY) {
		if (d)
			closedir(d);
		return EXIT_OK;
	}
	while (readdir(d))
		open_fds++;
	closedir(d);
	if (open_fds + f->ops->fds_per_run <= rl.rlim_cur)
		return EXIT_OK;
	pr_warn("%s: pid %d not watched: %" PRIu64 " of asyncbpf's %" PRIu64 " file descriptors "
		"are open and each process watched takes about %u: raise the limit (ulimit -n; "
		"the hard limit is %" PRIu64 ") or watch fewer processes\n",
		f->ops->cmd, (int)pid, open_fds, (uint64_t)rl.rlim_cur, f->ops->fds_per_run,
		(uint64_t)rl.rlim_max);
	return EXIT_USAGE;
}

/* Attach to pid, its binary's analysis reused when there is one. An exit status;
 * *quiet when it was said before (a binary that cannot be watched). */
static int attach(struct fleet *f, pid_t pid, bool *quiet)
{
	const struct fleet_ops *ops = f->ops;
	struct member *mb = calloc(1, sizeof(*mb));
	struct stat st;
	struct built *b = NULL;
	struct model *m;
	struct run_model *own;
	bool known, same;
	int status;

	*quiet = false;
	if ((status = fd_room(f, pid))) {
		free(mb);
		return status;
	}
	if (!mb || vec__reserve((void **)&f->m, &f->cap, f->n + 1, sizeof(*f->m))) {
		free(mb);
		pr_warn("%s: out of memory\n", ops->cmd);
		return EXIT_FAILURE_INTERNAL;
	}
	if ((status = ops->open(ops->ctx, pid, &mb->pub.run))) {
		free(mb);
		return status;
	}
	/* the file the session holds: what is analysed and probed */
	known = !fstat(session__exe_fd(ops->session(mb->pub.run)), &st);
	if (known && (b = built_of(f, &st)) && b->status) {
		pr_debug("%s: pid %d runs the binary of pid %d, which could not be watched: left "
			 "alone\n",
			 ops->cmd, (int)pid, (int)b->first);
		ops->free(mb->pub.run);
		free(mb);
		*quiet = true;
		return b->status;
	}
	if (b && b->loaded)
		pr_info(
		    "%s: pid %d runs the binary analysed for pid %d (the same file, unchanged): "
		    "its analysis reused\n",
		    ops->cmd, (int)pid, (int)b->first);
	ops->model(mb->pub.run, &m, &own);
	if (b && b->loaded)
		run_model__borrow(m, own, &b->m);
	status = ops->start(ops->ctx, mb->pub.run);
	if (known && !b && (b = built_new(f, &st)))
		b->first = pid;
	/* the analysis read /proc/PID/exe: the held file only if the process has not
	 * executed another program since it was opened */
	same = session__runs_exe(ops->session(mb->pub.run));
	/* an analysis made, whatever failed after it, is kept for the binary's others */
	if (b && !b->loaded && same && run_model__give(m, own, &b->m)) {
		b->loaded = true;
		b->first = pid;
	} else if (b && !b->loaded && same &&
		   (status == EXIT_NO_MATCH || status == EXIT_BAD_INPUT)) {
		/* the analysis of the file failed: its every process would fail so */
		b->status = status;
	}
	if (status) {
		ops->free(mb->pub.run);
		free(mb);
		return status;
	}
	mb->pub.pid = pid;
	if ((mb->b = b))
		b->users++;
	f->m[f->n++] = &mb->pub;
	/* an exec between opening the process and attaching the exec probe shows here:
	 * let go (with --exe, found again next time if the new program is the one) */
	if (!session__runs_exe(ops->session(mb->pub.run))) {
		struct pollfd p = {.fd = session__pidfd(ops->session(mb->pub.run)),
				   .events = POLLIN};

		ops->let_go(ops->ctx, mb->pub.run,
			    poll(&p, 1, 0) > 0 ? "exited while being attached"
					       : "executed another program while being attached");
		mb->pub.gone = true;
	}
	return EXIT_OK;
}

static void on_found(void *ctx, pid_t pid)
{
	struct fleet *f = ctx;
	bool quiet;
	int status;

	if (known_pid(f, pid))
		return;
	pr_info("%s: pid %d runs %s: attaching\n", f->ops->cmd, (int)pid, f->match.label);
	if ((status = attach(f, pid, &quiet))) {
		int fd = (int)syscall(SYS_pidfd_open, pid, 0);

		if (!quiet)
			pr_warn("%s: pid %d not watched (exit status %d, said above); it is left "
				"alone while it runs\n",
				f->ops->cmd, (int)pid, status);
		if (fd >= 0 &&
		    vec__reserve((void **)&f->skip, &f->cap_skip, f->nr_skip + 1, sizeof(*f->skip)))
			close(fd);
		else if (fd >= 0)
			f->skip[f->nr_skip++] = (struct skipped){pid, fd};
	}
}

/* --exe: the processes that started since the last look; those skipped and gone are
 * forgotten (their pid may come back as another process). */
static void rescan(struct fleet *f)
{
	for (uint32_t k = 0; k < f->nr_skip;) {
		struct pollfd p = {.fd = f->skip[k].pidfd, .events = POLLIN};

		if (poll(&p, 1, 0) > 0) { /* gone */
			close(f->skip[k].pidfd);
			f->skip[k] = f->skip[--f->nr_skip];
		} else {
			k++;
		}
	}
	exe_match__scan(&f->match, on_found, f);
}

static uint32_t live(const struct fleet *f)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < f->n; k++)
		n += !f->m[k]->gone;
	return n;
}

/* The gone members freed. */
static void sweep(struct fleet *f)
{
	for (uint32_t k = 0; k < f->n;) {
		if (!f->m[k]->gone) {
			k++;
			continue;
		}
		member_free(f, f->m[k]);
		memmove(&f->m[k], &f->m[k + 1], (f->n - k - 1) * sizeof(*f->m));
		f->n--;
	}
	evict(f);
}

/* Every interval: the command's tick over the members; the gone ones then freed. */
static void tick(struct fleet *f, uint64_t now)
{
	f->ops->tick(f->ops->ctx, f->m, f->n, now);
	sweep(f);
}

enum fleet_stop { STOP_SIGNAL, STOP_DURATION, STOP_ALL_GONE, STOP_ASKED, STOP_ERROR };

/* One round's poll set: each live member's ring buffer and pidfd. */
static int wait_round(struct fleet *f, struct pollfd **fds, uint32_t *cap, uint64_t now,
		      uint64_t due)
{
	const struct fleet_ops *ops = f->ops;
	uint32_t n = 0;

	if (vec__reserve((void **)fds, cap, 2 * f->n + 1, sizeof(**fds)))
		return -1;
	for (uint32_t k = 0; k < f->n; k++) {
		void *run = f->m[k]->run;
		uint64_t d;

		if (f->m[k]->gone)
			continue;
		struct ring_buffer *rb;
		struct rb_budget *b;

		ops->ring(run, &rb, &b);
		(*fds)[n++] = (struct pollfd){.fd = ring_buffer__epoll_fd(rb), .events = POLLIN};
		(*fds)[n++] =
		    (struct pollfd){.fd = session__pidfd(ops->session(run)), .events = POLLIN};
		if (ops->pulse && (d = ops->pulse(run, now)) && d < due)
			due = d;
	}
	int timeout = due <= now ? 0 : (int)((due - now + 999999) / 1000000);

	return poll(*fds, n, timeout > 100 ? 100 : timeout) < 0 && errno != EINTR ? -1 : 0;
}

static enum fleet_stop loop(struct fleet *f, uint64_t start)
{
	const struct fleet_ops *ops = f->ops;
	uint64_t last_tick = start, last_scan = start;
	struct pollfd *fds = NULL;
	uint32_t cap = 0;
	enum fleet_stop why = STOP_SIGNAL;

	while (!interrupted) {
		uint64_t now = sysfacts__now_ns(), due = last_tick + ops->tick_ns;

		if (f->follow && last_scan + FLEET_RESCAN_NS < due)
			due = last_scan + FLEET_RESCAN_NS;
		if (wait_round(f, &fds, &cap, now, due)) {
			f->err = errno;
			why = STOP_ERROR;
			break;
		}
		for (uint32_t k = 0; k < f->n; k++) {
			struct fleet_member *mb = f->m[k];
			struct pollfd p = {.fd = session__pidfd(ops->session(mb->run)),
					   .events = POLLIN};
			struct ring_buffer *rb;
			struct rb_budget *b;

			if (mb->gone)
				continue;
			ops->ring(mb->run, &rb, &b);
			rb_budget__consume(rb, b, RB_BUDGET_ROUND);
			if (poll(&p, 1, 0) > 0 || ops->execs(mb->run)) {
				ops->let_go(ops->ctx, mb->run,
					    ops->execs(mb->run) ? "executed another program"
								: "exited");
				mb->gone = true;
			}
		}
		if (!ops->gone_to_tick)
			sweep(f);
		now = sysfacts__now_ns();
		if (f->o->duration > 0 && (double)(now - start) >= f->o->duration * 1e9) {
			why = STOP_DURATION;
			break;
		}
		if (f->follow && now >= last_scan + FLEET_RESCAN_NS) {
			rescan(f); /* attaching takes time: the tick's now is after it */
			last_scan = now = sysfacts__now_ns();
		}
		if (now >= last_tick + ops->tick_ns) {
			tick(f, now);
			last_tick = now;
		}
		if (ops->should_stop && ops->should_stop(ops->ctx)) {
			why = STOP_ASKED;
			break;
		}
		if (!f->follow && !live(f)) {
			why = STOP_ALL_GONE;
			break;
		}
	}
	free(fds);
	return interrupted ? STOP_SIGNAL : why;
}

static int start(struct fleet *f)
{
	const struct fleet_opts *o = f->o;
	char err[PATH_MAX + 64] = "";
	int status, e;

	if (!f->follow) {
		bool quiet;

		for (uint32_t k = 0; k < o->nr_pids; k++)
			if ((status = attach(f, o->pids[k], &quiet)))
				return status; /* those attached before are let go at once */
		return EXIT_OK;
	}
	if ((e = exe_match__init(&f->match, o->exe, err, sizeof(err)))) {
		pr_warn("%s: %s\n", f->ops->cmd, err);
		return e == -EINVAL ? EXIT_USAGE
		       : e == -EACCES || e == -EPERM
			   ? EXIT_NO_PERMISSION
			   : EXIT_NO_INPUT; /* ENOENT, ENOTDIR, ELOOP ... */
	}
	rescan(f);
	if (!live(f))
		pr_info("%s: no process %s %s yet: waiting for one (Ctrl-C stops)\n", f->ops->cmd,
			f->match.by_name ? "named" : "runs", f->match.label);
	return EXIT_OK;
}

/* Each process holds a BPF object's maps, programs and links, a ring buffer, a pidfd
 * and its executable: some 40 descriptors; the usual soft limit of 1024 would stop
 * at about 25 processes. */
static void raise_fd_limit(const char *cmd)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		pr_debug("%s: cannot raise the open files limit: %s\n", cmd, strerror(errno));
}

int fleet__run(const struct fleet_opts *o, const struct fleet_ops *ops)
{
	struct fleet f = {.o = o, .ops = ops, .follow = o->exe != NULL};
	struct sigaction sa = {.sa_handler = on_signal};
	int status;

	interrupted = 0;
	raise_fd_limit(ops->cmd);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (!(status = start(&f))) {
		enum fleet_stop why = loop(&f, sysfacts__now_ns());

		if (why == STOP_ALL_GONE)
			pr_info("%s: every process exited\n", ops->cmd);
		else if (why == STOP_ERROR) {
			pr_warn("%s: waiting for events failed: %s\n", ops->cmd, strerror(f.err));
			status = EXIT_FAILURE_INTERNAL;
		}
	}
	/* a second Ctrl-C from here on ends asyncbpf at once (the kernel drops the links) */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	for (uint32_t k = 0; k < f.n; k++) {
		int s = f.m[k]->gone ? EXIT_OK : ops->close(ops->ctx, f.m[k]->run);

		if (!status)
			status = s;
		member_free(&f, f.m[k]);
	}
	free(f.m);
	for (uint32_t k = 0; k < f.nr_b; k++) {
		if (f.b[k]->loaded)
			model__free(&f.b[k]->m);
		free(f.b[k]);
	}
	free(f.b);
	for (uint32_t k = 0; k < f.nr_skip; k++)
		close(f.skip[k].pidfd);
	free(f.skip);
	return status;
}
