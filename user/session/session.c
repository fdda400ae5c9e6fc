// SPDX-License-Identifier: GPL-2.0
/* One target session: resolve, launch, stop loop, outputs. session.h. */
#include "session/session.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "lib/exitcodes.h"
#include "lib/launch.h"
#include "lib/log.h"
#include "lib/outfile.h"
#include "lib/rb_budget.h"
#include "lib/sysfacts.h"

struct session_output {
	struct outfile file;
	const char *what;
	int result; /* 1: still being written, 0: complete, -errno: failed */
};

struct session {
	struct session_opts o;
	pid_t pid;
	pid_t child; /* launch mode: the command, until reaped */
	int pidfd;   /* pins the process: a reused PID cannot be mistaken for it */
	int exe_fd;  /* -p: the analyzed executable, held open */
	int go_fd;   /* launch mode: written to let the command exec */
	int held_fd; /* launch mode: says whether the command stops at its exec */
	bool reaped; /* launch mode: the command exited at its exec (child_status) */
	int child_status;
	bool launched; /* -- CMD */
	bool exited;   /* the target's exit ended the session */
	uint64_t start_ns;
	char exe[PATH_MAX];
	char probe_path[64];
	char comm[64];
	struct session_output **outputs;
	uint32_t nr_outputs;
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* A target in a container: say which pid it knows itself by (outputs use host pids). */
static void report_pid_namespace(const char *cmd, pid_t pid)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *first, *last;

		if (strncmp(line, "NSpid:", 6))
			continue;
		line[strcspn(line, "\n")] = 0;
		first = strchr(line, '\t');
		last = strrchr(line, '\t');
		if (first && last != first)
			pr_info("%s: pid %d is pid %s in its PID namespace; outputs use host "
				"pids\n",
				cmd, (int)pid, last + 1);
		break;
	}
	fclose(f);
}

/* Is the file held by fd still the executable of process pid? */
static bool same_executable(int fd, pid_t pid)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	return fd >= 0 && !fstat(fd, &a) && !stat(path, &b) && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static int open_process(struct session *s)
{
	char proc_exe[64];
	ssize_t n;
	int e;

	s->pidfd = (int)syscall(SYS_pidfd_open, s->pid, 0);
	if (s->pidfd < 0) {
		e = errno;
		pr_warn("%s: cannot open process %d: %s\n", s->o.cmd, (int)s->pid,
			e == ESRCH ? "no such process (check the PID with 'ps')" : strerror(e));
		return exit_code_from_errno(e);
	}
	report_pid_namespace(s->o.cmd, s->pid);
	/* hold the executable: probes go on the file that was analyzed */
	snprintf(proc_exe, sizeof(proc_exe), "/proc/%d/exe", (int)s->pid);
	s->exe_fd = open(proc_exe, O_RDONLY | O_CLOEXEC);
	n = readlink(proc_exe, s->exe, sizeof(s->exe) - 1);
	if (n > 0)
		s->exe[n] = '\0';
	else
		snprintf(s->exe, sizeof(s->exe), "%s", proc_exe);
	snprintf(s->probe_path, sizeof(s->probe_path), "/proc/self/fd/%d", s->exe_fd);
	snprintf(proc_exe, sizeof(proc_exe), "/proc/%d/comm", (int)s->pid);
	sysfacts__read_small_file(proc_exe, s->comm, sizeof(s->comm));
	s->comm[strcspn(s->comm, "\n")] = '\0';
	return EXIT_OK;
}

int session__open(const struct session_opts *o, struct session **out)
{
	struct session *s = calloc(1, sizeof(*s));
	int r, status = EXIT_OK;

	*out = NULL;
	if (!s) {
		pr_warn("%s: out of memory\n", o->cmd);
		return EXIT_FAILURE_INTERNAL;
	}
	s->o = *o;
	s->pidfd = s->exe_fd = s->go_fd = s->held_fd = -1;
	s->launched = o->command != NULL;
	if (s->launched) {
		r = launch__resolve(o->command[0], s->exe, sizeof(s->exe));
		if (r) {
			pr_warn("%s: cannot run '%s': %s\n", o->cmd, o->command[0],
				r == -ENOENT ? "not found (in PATH)" : strerror(-r));
			status = r == -EACCES ? EXIT_NO_PERMISSION : EXIT_NO_INPUT;
		}
		snprintf(s->comm, sizeof(s->comm), "%.63s", base_name(s->exe));
	} else {
		s->pid = o->pid;
		status = open_process(s);
	}
	if (status) {
		session__free(s);
		return status;
	}
	*out = s;
	return EXIT_OK;
}

int session__check_exe(const struct session *s)
{
	if (s->launched || same_executable(s->exe_fd, s->pid))
		return EXIT_OK;
	pr_warn("%s: process %d executed another program while it was being analyzed: run "
		"asyncbpf again\n",
		s->o.cmd, (int)s->pid);
	return EXIT_NO_INPUT;
}

int session__spawn(struct session *s)
{
	pid_t child;

	if (!s->launched || s->child)
		return EXIT_OK;
	child = launch__start_stopped(s->o.cmd, s->exe, s->o.command, &s->go_fd, &s->held_fd);
	if (child < 0) {
		pr_warn("%s: cannot start %s: %s\n", s->o.cmd, s->exe, strerror(-child));
		return EXIT_FAILURE_INTERNAL;
	}
	s->child = s->pid = child;
	s->pidfd = (int)syscall(SYS_pidfd_open, child, 0);
	if (s->pidfd < 0)
		pr_warn("%s: cannot watch %s (pid %d) through a pidfd: %s; its exit is "
			"noticed late\n",
			s->o.cmd, s->exe, (int)child, strerror(errno));
	return EXIT_OK;
}

pid_t session__pid(const struct session *s)
{
	return s->pid;
}
int session__pidfd(const struct session *s)
{
	return s->pidfd;
}

int session__exe_fd(const struct session *s)
{
	return s->launched ? -1 : s->exe_fd;
}

bool session__runs_exe(const struct session *s)
{
	return s->launched || same_executable(s->exe_fd, s->pid);
}

bool session__launched(const struct session *s)
{
	return s->launched;
}
const char *session__exe(const struct session *s)
{
	return s->exe;
}
const char *session__comm(const struct session *s)
{
	return s->comm;
}
uint64_t session__start_ns(const struct session *s)
{
	return s->start_ns;
}
bool session__interrupted(const struct session *s)
{
	(void)s;
	return interrupted;
}

const char *session__probe_path(const struct session *s)
{
	return s->launched ? s->exe : s->probe_path;
}

/* ---- outputs ---- */

struct outfile *session__output(struct session *s, const char *path, const char *what)
{
	struct session_output *out, **grown;
	char err[512];
	int e;

	grown = realloc(s->outputs, (s->nr_outputs + 1) * sizeof(*grown));
	out = calloc(1, sizeof(*out));
	if (grown)
		s->outputs = grown;
	if (!grown || !out) {
		free(out);
		pr_warn("%s: out of memory\n", s->o.cmd);
		return NULL;
	}
	if ((e = outfile__open(&out->file, path, err, sizeof(err)))) {
		pr_warn("%s: %s\n", s->o.cmd, err);
		free(out);
		return NULL;
	}
	out->what = what;
	out->result = 1;
	s->outputs[s->nr_outputs++] = out;
	return &out->file;
}

static struct session_output *find_output(struct session *s, const struct outfile *o)
{
	for (uint32_t i = 0; i < s->nr_outputs; i++)
		if (&s->outputs[i]->file == o)
			return s->outputs[i];
	return NULL;
}

void session__output_done(struct session *s, struct outfile *o, int r)
{
	struct session_output *out = find_output(s, o);

	if (!out)
		return;
	out->result = r;
	if (r)
		pr_warn("%s: writing the %s %s failed: %s\n", s->o.cmd, out->what, o->path,
			strerror(-r));
}

void session__output_drop(struct session *s, struct outfile *o)
{
	for (uint32_t i = 0; i < s->nr_outputs; i++)
		if (&s->outputs[i]->file == o) {
			outfile__abort(o);
			free(s->outputs[i]);
			s->outputs[i] = s->outputs[--s->nr_outputs];
			return;
		}
}

int session__commit_outputs(struct session *s)
{
	char err[512];
	uint32_t failed = 0;

	/* first close them all: a failure anywhere removes every file of the set */
	for (uint32_t i = 0; i < s->nr_outputs; i++) {
		struct session_output *out = s->outputs[i];

		if (out->result == 1) {
			pr_warn("%s: the %s %s was not finished\n", s->o.cmd, out->what,
				out->file.path);
			out->result = -EIO;
		}
		if (!out->result && (out->result = outfile__close(&out->file, err, sizeof(err))))
			pr_warn("%s: %s\n", s->o.cmd, err);
		failed += out->result != 0;
	}
	if (failed) {
		for (uint32_t i = 0; i < s->nr_outputs; i++) {
			if (!s->outputs[i]->result && !s->outputs[i]->file.is_stdout)
				pr_warn("%s: %s not written either (outputs are kept only "
					"together)\n",
					s->o.cmd, s->outputs[i]->file.path);
			outfile__abort(&s->outputs[i]->file);
		}
		return EXIT_OUTPUT;
	}
	for (uint32_t i = 0; i < s->nr_outputs; i++) {
		struct session_output *out = s->outputs[i];

		if (outfile__commit(&out->file, err, sizeof(err))) {
			pr_warn("%s: %s\n", s->o.cmd, err);
			failed++;
		} else if (!out->file.is_stdout) {
			pr_info("%s: wrote %s (%s)\n", s->o.cmd, out->file.path, out->what);
		}
	}
	return failed ? EXIT_OUTPUT : EXIT_OK;
}

/* ---- the stop loop ---- */

static void print_stop(const struct session *s, enum session_stop why)
{
	switch (why) {
	case SESSION_STOP_EXIT: pr_info("%s: the target exited\n", s->o.cmd); break;
	case SESSION_STOP_EXEC:
		pr_warn("%s: the target (pid %d) executed another program: %s stopped (what was "
			"recorded before is kept; the new program is not watched)\n",
			s->o.cmd, (int)s->pid, s->o.verb);
		break;
	case SESSION_STOP_ERROR:
		pr_warn("%s: waiting for events failed: %s\n", s->o.cmd, strerror(errno));
		break;
	case SESSION_STOP_SIGNAL:
	case SESSION_STOP_DURATION:
	case SESSION_STOP_HOOK: break;
	}
}

static enum session_stop loop(struct session *s, struct ring_buffer *rb, struct rb_budget *b,
			      const struct session_hooks *h)
{
	struct pollfd fds[2] = {
	    {.fd = ring_buffer__epoll_fd(rb), .events = POLLIN},
	    {.fd = s->pidfd, .events = POLLIN},
	};
	/* launch mode: the command's own exec is expected */
	uint32_t execs_expected = s->launched ? 1 : 0;
	bool tty = h->tick && isatty(STDERR_FILENO) && log_verbosity >= 1;

	if (h->tick_always && !h->tick)
		return SESSION_STOP_ERROR;
	uint64_t last_tick = s->start_ns, due = h->pulse ? h->pulse(h->ctx, s->start_ns) : 0;

	/* an exec between the analysis and the attach of the exec probe shows here */
	if (!s->launched && !same_executable(s->exe_fd, s->pid))
		return SESSION_STOP_EXEC;
	while (!interrupted) {
		/* launch mode, until the command's exec: short rounds, so that the hooks
		 * see it (and what depends on its mappings) within a millisecond */
		bool before_exec = s->launched && h->exec_count && !h->exec_count(h->ctx);
		uint64_t now = sysfacts__now_ns();
		int timeout = before_exec ? 1 : 100;

		if (due && due > now && (due - now) / 1000000 < (uint64_t)timeout)
			timeout = (int)((due - now + 999999) / 1000000);
		else if (due && due <= now)
			timeout = 0;
		int n = poll(fds, s->pidfd >= 0 ? 2 : 1, timeout);

		if (n < 0 && errno != EINTR)
			return SESSION_STOP_ERROR;
		/* in rounds: a flood of records must not hide the stop conditions */
		rb_budget__consume(rb, b, RB_BUDGET_ROUND);
		if (n > 0 && s->pidfd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
			return SESSION_STOP_EXIT;
		if (h->exec_count && h->exec_count(h->ctx) > execs_expected)
			return SESSION_STOP_EXEC;
		if (h->should_stop && h->should_stop(h->ctx))
			return SESSION_STOP_HOOK;
		now = sysfacts__now_ns();
		if (h->pulse && due && now >= due)
			due = h->pulse(h->ctx, now);
		if (s->o.duration > 0 && (double)(now - s->start_ns) >= s->o.duration * 1e9)
			return SESSION_STOP_DURATION;
		if ((tty || h->tick_always) &&
		    now - last_tick >= (h->tick_ns ? h->tick_ns : 1000000000ull)) {
			h->tick(h->ctx, now, s->start_ns);
			last_tick = now;
		}
	}
	return SESSION_STOP_SIGNAL;
}

enum session_stop session__run(struct session *s, struct ring_buffer *rb, struct rb_budget *b,
			       const struct session_hooks *h)
{
	static const struct session_hooks none;
	struct sigaction sa = {.sa_handler = on_signal};
	enum session_stop why;
	int r;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	s->start_ns = sysfacts__now_ns();
	if (s->go_fd >= 0) {
		r = launch__go(&s->go_fd, &s->held_fd, s->child, &s->child_status);
		if (r == LAUNCH_HELD) {
			/* stopped right after its exec: what needs its addresses, now */
			if (h && h->exec_stopped)
				h->exec_stopped(h->ctx);
			if ((r = launch__release(s->child)))
				pr_warn("%s: cannot let the command run after its exec: %s\n",
					s->o.cmd, strerror(-r));
		} else if (r == LAUNCH_EXITED) {
			s->reaped = true;
		} else if (r < 0) {
			pr_warn("%s: cannot start the command: %s\n", s->o.cmd, strerror(-r));
		}
	}
	why = loop(s, rb, b, h ? h : &none);
	/* a second Ctrl-C from here on ends asyncbpf at once (the kernel drops the links) */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	s->exited = why == SESSION_STOP_EXIT;
	print_stop(s, why);
	return why;
}

int session__finish(struct session *s, int status)
{
	int child_status;

	if (!s->child)
		return status;
	if (s->exited)
		pr_debug("%s: collecting %s's exit status\n", s->o.cmd, s->exe);
	else
		pr_info("%s: %s stopped; waiting for %s (pid %d) to exit\n", s->o.cmd, s->o.verb,
			s->exe, (int)s->child);
	child_status = s->reaped ? s->child_status : launch__wait(s->child);
	s->child = 0;
	/* launch mode answers with the command's status unless our outputs failed */
	return status == EXIT_OK ? child_status : status;
}

void session__free(struct session *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->nr_outputs; i++) {
		outfile__abort(&s->outputs[i]->file);
		free(s->outputs[i]);
	}
	free(s->outputs);
	if (s->go_fd >= 0)
		close(s->go_fd); /* EOF: the child exits without running the command */
	if (s->held_fd >= 0)
		close(s->held_fd);
	if (s->child && !s->reaped)
		launch__wait(s->child);
	if (s->pidfd >= 0)
		close(s->pidfd);
	if (s->exe_fd >= 0)
		close(s->exe_fd);
	free(s);
}
