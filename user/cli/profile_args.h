/* SPDX-License-Identifier: GPL-2.0 */
/* asyncbpf profile's command line, parsed (docs/profile.md). */
#ifndef ASYNCBPF_PROFILE_ARGS_H
#define ASYNCBPF_PROFILE_ARGS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

extern const char profile_usage[];

/* profile -p A,B --every: at most this many processes (= FLEET_MAX_PIDS) */
#define PROFILE_MAX_PIDS 64

struct profile_args {
	pid_t pid;
	pid_t pids[PROFILE_MAX_PIDS]; /* every -p (pid is the first) */
	uint32_t nr_pids;
	const char *exe; /* --exe PATH|NAME: every process running it (with --every) */
	char **command;
	uint32_t freq;
	double duration;
	const char *svg, *folded, *folded_offcpu, *pprof, *perfetto;
	uint64_t stack_size, ringbuf_size;
	bool offcpu, verbose;
	uint32_t replay_rounds; /* --bench-replay N (bench/profile.sh) */
	/* --every S --pprof-dir DIR [--keep N] [--keep-size SIZE]: a pprof per interval */
	double every;
	const char *pprof_dir;
	uint32_t keep;
	uint64_t keep_bytes;
};

/* EXIT_OK, -1 after --help, or an exit status (usage errors say why). */
int profile_args__parse(int argc, char **argv, struct profile_args *a);

#endif
