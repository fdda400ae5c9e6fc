/* SPDX-License-Identifier: GPL-2.0 */
/* Shell-style globs on Rust paths, as selection patterns and crate lists use them. */
#ifndef ASYNCBPF_GLOB_H
#define ASYNCBPF_GLOB_H

#include <stdbool.h>

/* Shell-style glob ('*' any run including "::", '?' one char, "[...]" classes) */
bool glob__match(const char *pattern, const char *text);

#endif
