/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One target session, shared by every command that watches a process (trace,
 * profile): the target resolved from `-p PID` (held by a pidfd, its executable held
 * open so that probes go on the file that was analyzed) or from `-- CMD ARGS`
 * (resolved through PATH, started held before its exec until the probes are in);
 * the stop loop (Ctrl-C/SIGTERM, --duration, the target's exit through its pidfd,
 * an exec counted by the BPF side's raw tracepoint); and the command's output files,
 * renamed into place together at the end or all removed.
 *
 * A command reads like libbpf-bootstrap's main:
 *
 *	session__open(&opts, &s);            resolve the target
 *	load_model(...); session__check_exe(s);
 *	session__spawn(s);                   launch mode: fork, held before exec
 *	session__output(s, path, what) ...   open every output before attaching
 *	load, attach the BPF side
 *	session__run(s, rb, &budget, &hooks) until a stop condition
 *	detach, drain, write, session__output_done(...), session__commit_outputs(s)
 *	status = session__finish(s, status); session__free(s);
 */
#ifndef ASYNCBPF_SESSION_H
#define ASYNCBPF_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct session;
struct outfile;
struct ring_buffer;
struct rb_budget;

struct session_opts {
	const char *cmd;  /* "trace": prefixes every message */
	const char *verb; /* "tracing": "tracing stopped" */
	pid_t pid;	  /* -p PID, or 0 */
	char **command;	  /* -- CMD ARGS (NULL-terminated), or NULL */
	double duration;  /* seconds; 0: until a signal or the target's end */
};

/*
 * Resolve the target: open process pid (pidfd, /proc/PID/exe held open, its path and
 * name read) or resolve command[0] through PATH. Prints what failed and why; returns
 * an exit status (lib/exitcodes.h), *out set only on EXIT_OK.
 */
int session__open(const struct session_opts *o, struct session **out);
/*
 * -p mode, after the analysis: is the process still running the file that was
 * analyzed? EXIT_OK, or EXIT_NO_INPUT (printed). Launch mode: EXIT_OK.
 */
int session__check_exe(const struct session *s);
/* Launch mode: fork the command, held before its exec (no-op with -p). Exit status. */
int session__spawn(struct session *s);

pid_t session__pid(const struct session *s);	 /* 0 in launch mode before spawn */
bool session__launched(const struct session *s); /* launch mode (-- CMD) */
/* The process's pidfd (readable once it exited), -1 before a launch's spawn. */
int session__pidfd(const struct session *s);
/* -p: the executable held open (what is analysed and probed), else -1. */
int session__exe_fd(const struct session *s);
/* -p: does the process still run the held executable (no exec since it was opened)? */
bool session__runs_exe(const struct session *s);
const char *session__exe(const struct session *s); /* the executable's path, for messages */
/* The file to probe: the held /proc/self/fd/N with -p, the command's path otherwise. */
const char *session__probe_path(const struct session *s);
/* The process name for outputs (the command's base name in launch mode). */
const char *session__comm(const struct session *s);

/*
 * Open an output file (lib/outfile.h; "-" is stdout) and register it in the session's
 * table; `what` names it in messages ("Perfetto trace"). NULL when it cannot be
 * opened (printed: the caller returns EXIT_OUTPUT) or out of memory.
 */
struct outfile *session__output(struct session *s, const char *path, const char *what);
/*
 * The writer of o finished: r == 0, its content is complete; r < 0 (-errno), it
 * failed (printed with the file's name).
 */
void session__output_done(struct session *s, struct outfile *o, int r);
/* Give up o without failing the set (its writer is not built in): removed, said by the caller. */
void session__output_drop(struct session *s, struct outfile *o);
/*
 * Close every registered output. When all were completed and closed well, rename
 * them into place ("wrote PATH (WHAT)"); otherwise remove every one of them, saying
 * which failed, so that no set of outputs is half there. EXIT_OK or EXIT_OUTPUT.
 */
int session__commit_outputs(struct session *s);

/* Why session__run returned. */
enum session_stop {
	SESSION_STOP_SIGNAL,   /* Ctrl-C or SIGTERM */
	SESSION_STOP_DURATION, /* --duration elapsed */
	SESSION_STOP_EXIT,     /* the target exited */
	SESSION_STOP_EXEC,     /* the target executed another program */
	SESSION_STOP_HOOK,     /* hooks.should_stop said so */
	SESSION_STOP_ERROR,    /* waiting for events failed (errno) */
};

/* What the stop loop asks the command's BPF side; every member may be NULL. */
struct session_hooks {
	/* execs of the target counted in BPF (raw_tp/sched_process_exec) */
	uint32_t (*exec_count)(void *ctx);
	/* stop now (an output reached its size limit, ...) */
	bool (*should_stop)(void *ctx);
	/* once a second (tick_ns), when stderr is a terminal (a live status line) or
	 * always (tick_always: top's table) */
	void (*tick)(void *ctx, uint64_t now_ns, uint64_t start_ns);
	uint64_t tick_ns; /* 0: a second */
	bool tick_always;
	/* every round: work due at given times (CLOCK_MONOTONIC ns); returns when it is
	 * next due (the loop wakes up by then), 0 for nothing */
	uint64_t (*pulse)(void *ctx, uint64_t now_ns);
	/* launch mode: the command is stopped right after its exec, before its first
	 * instruction (its load address is known, nothing of it has run) */
	void (*exec_stopped)(void *ctx);
	void *ctx;
};

/*
 * Catch SIGINT and SIGTERM, let a launched command exec, then consume rb in bounded
 * rounds (lib/rb_budget.h) until a stop condition; print why it stopped (but a
 * signal or the duration) and restore the default signal handlers, so that a second
 * Ctrl-C ends asyncbpf at once. In launch mode the command's own exec is expected:
 * only a further one stops.
 */
enum session_stop session__run(struct session *s, struct ring_buffer *rb, struct rb_budget *b,
			       const struct session_hooks *h);
/* CLOCK_MONOTONIC ns when session__run began (0 before). */
uint64_t session__start_ns(const struct session *s);
/* A signal stopped the session (also true when one arrives during the drain). */
bool session__interrupted(const struct session *s);

/*
 * Launch mode: wait for the command, saying so unless it exited by itself; its exit
 * status (128+N if killed by signal N) replaces status when status is EXIT_OK.
 * -p mode: status.
 */
int session__finish(struct session *s, int status);
/*
 * Remove every uncommitted output, close the launch pipe (a command still held
 * exits 127 without running), reap it, close the pidfd and the held executable.
 */
void session__free(struct session *s);

#endif
