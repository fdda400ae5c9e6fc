/* SPDX-License-Identifier: GPL-2.0 */
/* Diagnostics go to stderr; stdout carries data. */
#ifndef ASYNCBPF_LOG_H
#define ASYNCBPF_LOG_H

#include <stdio.h>

extern int log_verbosity; /* 0 warnings, 1 info (default), 2 debug (-v) */

#define pr_warn(fmt, ...) fprintf(stderr, "asyncbpf: " fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...)                                                                          \
	do {                                                                                       \
		if (log_verbosity >= 1)                                                            \
			fprintf(stderr, "asyncbpf: " fmt, ##__VA_ARGS__);                          \
	} while (0)
#define pr_debug(fmt, ...)                                                                         \
	do {                                                                                       \
		if (log_verbosity >= 2)                                                            \
			fprintf(stderr, "asyncbpf: debug: " fmt, ##__VA_ARGS__);                   \
	} while (0)

#endif
