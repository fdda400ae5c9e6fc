// SPDX-License-Identifier: GPL-2.0
/* The verbosity every module's pr_info/pr_debug obeys (log.h); the command line sets it. */
#include "lib/log.h"

#include <stdarg.h>
#include <string.h>

int log_verbosity = 1;

static const char *alias_from, *alias_to;

void log__alias(const char *from, const char *to)
{
	alias_from = from;
	alias_to = to;
}

void log__print(const char *prefix, const char *fmt, ...)
{
	size_t n = alias_from ? strlen(alias_from) : 0;
	va_list ap;

	fputs(prefix, stderr);
	/* "trace: ..." from the engine a command runs: "top: ..." */
	if (n && !strncmp(fmt, alias_from, n) && fmt[n] == ':') {
		fputs(alias_to, stderr);
		fmt += n;
	}
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}
