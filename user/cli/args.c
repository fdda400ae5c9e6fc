// SPDX-License-Identifier: GPL-2.0
/* Option values every command parses the same way: args.h. */
#include "cli/args.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/exitcodes.h"
#include "lib/log.h"

int args__parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	switch (*end) {
	case 'k':
	case 'K': shift = 10; break;
	case 'm':
	case 'M': shift = 20; break;
	case 'g':
	case 'G': shift = 30; break;
	}
	if (shift) {
		if (v > (~0ull >> shift))
			return -1;
		v <<= shift;
		end++;
	}
	if (*end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int args__parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (strchr(s, '-')) /* strtoull would take "-1" for a huge number */
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int args__parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > 1e9)
		return -1;
	*out = v;
	return 0;
}

int args__split_command(int argc, char **argv, char ***command)
{
	*command = NULL;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			*command = &argv[i + 1];
			return i;
		}
	return argc;
}

int args__parse_pids(const char *cmd, const char *s, pid_t *pids, uint32_t *n, uint32_t max)
{
	const char *p = s;

	do {
		size_t len = strcspn(p, ",");
		char one[24];
		uint64_t v;
		uint32_t k = 0;

		snprintf(one, sizeof(one), "%.*s", (int)(len < sizeof(one) ? len : sizeof(one) - 1),
			 p);
		if (len >= sizeof(one) || args__parse_uint(one, 1, INT_MAX, &v)) {
			pr_warn("%s: invalid PID '%.*s' in -p %s: expected positive process IDs, "
				"comma-separated\n",
				cmd, (int)len, p, s);
			return EXIT_USAGE;
		}
		while (k < *n && pids[k] != (pid_t)v)
			k++;
		if (k == *n) {
			if (*n == max) {
				pr_warn("%s: more than %u processes (-p): each has a tracer of its "
					"own; --exe follows every process of an executable\n",
					cmd, max);
				return EXIT_USAGE;
			}
			pids[(*n)++] = (pid_t)v;
		}
		p += len;
	} while (*p++ == ',');
	return EXIT_OK;
}
