/* SPDX-License-Identifier: GPL-2.0 */
/* Option values every command parses the same way. */
#ifndef ASYNCBPF_ARGS_H
#define ASYNCBPF_ARGS_H

#include <stdint.h>
#include <sys/types.h>

/* N bytes, with an optional K/M/G suffix (powers of 1024), within [min, max]: 0 or -1. */
int args__parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* A decimal whole number (no sign, no suffix) within [min, max]: 0 or -1. */
int args__parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Positive seconds (fractions allowed), at most 1e9: 0 or -1. */
int args__parse_seconds(const char *s, double *out);
/*
 * -p's value, a PID or a comma list of them, appended to pids[*n] (duplicates once),
 * at most max in all: 0, or an exit status (the error said, prefixed with cmd).
 */
int args__parse_pids(const char *cmd, const char *s, pid_t *pids, uint32_t *n, uint32_t max);
/*
 * Split argv at the first "--": *command is what follows (NULL without one). Returns
 * the number of arguments before it (argc without one).
 */
int args__split_command(int argc, char **argv, char ***command);

#endif
