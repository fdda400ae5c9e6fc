/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Several processes watched by one command in one loop (top, profile: docs/top.md
 * "Several processes, and following an executable"): the PIDs of a -p list, or every
 * process running an executable (--exe PATH|NAME), attached as they start and let go
 * as they exit or exec, the analysis of a binary made once for all its processes
 * (the file the process's session holds, by device, inode, size and status-change
 * time: a new build is analysed anew).
 * The command says, through its ops, how to attach to one process, consume its
 * records, let it go and what to do every interval.
 */
#ifndef ASYNCBPF_CLI_FLEET_H
#define ASYNCBPF_CLI_FLEET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli/run_model.h"
#include "model/model.h"

struct session;
struct ring_buffer;
struct rb_budget;

/* Every -p of a list (at most this many processes at once: each has its own BPF side) */
#define FLEET_MAX_PIDS 64
/* --exe: how often /proc is read for processes that started */
#define FLEET_RESCAN_NS 250000000ull

/* One process watched: the command's run of it, and whether it is gone. */
struct fleet_member {
	pid_t pid;
	void *run;
	bool gone; /* exited (or exec'd): let go, forgotten after the next tick */
};

struct fleet_ops {
	const char *cmd; /* "top": prefixes the messages */
	void *ctx;
	/* Open process pid (held, its executable open: a session): *run, or an exit
	 * status (said, *run freed). */
	int (*open)(void *ctx, pid_t pid, void **run);
	struct session *(*session)(void *run); /* its session (pidfd, executable) */
	/* its analysis and who owns it: lent one before start when another process of
	 * the held file had it made, taken after start when the run made it */
	void (*model)(void *run, struct model **m, struct run_model **own);
	/* Analyse (unless lent), attach: an exit status (said). */
	int (*start)(void *ctx, void *run);
	/* its records: a ring buffer consumed in bounded rounds */
	void (*ring)(void *run, struct ring_buffer **rb, struct rb_budget **budget);
	uint32_t (*execs)(void *run); /* execs of the process since attach */
	/* work due at given times (NULL: none): when it is next due, 0 for nothing */
	uint64_t (*pulse)(void *run, uint64_t now);
	/* the process is gone (why: "exited"): detach, keep what the next tick needs */
	void (*let_go)(void *ctx, void *run, const char *why);
	/* tick reads gone members (their last values): kept until it ran; else freed at
	 * once (their descriptors back, their pid found again at the next scan) */
	bool gone_to_tick;
	/* file descriptors one run takes (fd_room: refused past the open-files limit) */
	uint32_t fds_per_run;
	/* every tick_ns: the members, live and gone (gone ones freed right after) */
	void (*tick)(void *ctx, struct fleet_member *const *m, uint32_t n, uint64_t now);
	uint64_t tick_ns;
	/* after each round (NULL: never): stop now (a key, a count reached) */
	bool (*should_stop)(void *ctx);
	/* the end, a process still watched: detach, report; an exit status */
	int (*close)(void *ctx, void *run);
	void (*free)(void *run);
};

struct fleet_opts {
	const pid_t *pids; /* -p: these; else NULL and exe */
	uint32_t nr_pids;
	const char *exe; /* --exe PATH|NAME */
	double duration; /* seconds; 0: until a signal (or, -p, all gone) */
};

/*
 * Attach (a -p list: all, or nothing and the first failure's status), loop until
 * Ctrl-C/SIGTERM, the duration, should_stop, or (a -p list) every process gone;
 * close what is still watched. An exit status: the worst of close's, or the
 * attach's failure.
 */
int fleet__run(const struct fleet_opts *o, const struct fleet_ops *ops);

#endif
