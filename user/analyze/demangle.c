// SPDX-License-Identifier: GPL-2.0
#include "analyze/demangle.h"

#include <ctype.h>
#include <stdbool.h>
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

/* Inputs come from hostile binaries; libiberty's Rust demangler has its own
 * recursion limit (DMGL_NO_RECURSE_LIMIT not set), and we cap the length. */
#define MAX_SYMBOL_LEN 8192

const char *symbol__demangle(struct strpool *pool, const char *linkage_name)
{
	if (!linkage_name)
		return NULL;
	if (strlen(linkage_name) > MAX_SYMBOL_LEN ||
	    (strncmp(linkage_name, "_ZN", 3) != 0 && strncmp(linkage_name, "_R", 2) != 0))
		return strpool__intern(pool, linkage_name);

	char *d = cplus_demangle(linkage_name, DMGL_RUST);
	if (!d)
		return strpool__intern(pool, linkage_name);

	/* legacy symbols end in ::h<16 hex digits> */
	size_t len = strlen(d);
	if (len > 19 && strncmp(d + len - 19, "::h", 3) == 0) {
		bool all_hex = true;
		for (size_t i = len - 16; i < len; i++)
			if (!isxdigit((unsigned char)d[i]))
				all_hex = false;
		if (all_hex)
			len -= 19;
	}
	const char *r = strpool__intern_len(pool, d, len);
	free(d);
	return r;
}
