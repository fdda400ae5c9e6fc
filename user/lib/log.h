/* SPDX-License-Identifier: GPL-2.0 */
/* Diagnostics go to stderr; stdout carries data. */
#ifndef ASYNCBPF_LOG_H
#define ASYNCBPF_LOG_H

#include <stdio.h>

extern int log_verbosity; /* 0 warnings, 1 info (default), 2 debug (-v) */

/*
 * A command that runs another's engine speaks as itself: `top` runs the tracer, whose
 * messages start "trace: "; with log__alias("trace", "top") they say "top: ".
 */
void log__alias(const char *from, const char *to);
void log__print(const char *prefix, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define pr_warn(fmt, ...) log__print("asyncbpf: ", fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...)                                                                          \
	do {                                                                                       \
		if (log_verbosity >= 1)                                                            \
			log__print("asyncbpf: ", fmt, ##__VA_ARGS__);                              \
	} while (0)
#define pr_debug(fmt, ...)                                                                         \
	do {                                                                                       \
		if (log_verbosity >= 2)                                                            \
			log__print("asyncbpf: debug: ", fmt, ##__VA_ARGS__);                       \
	} while (0)

#endif
