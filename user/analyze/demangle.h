/* SPDX-License-Identifier: GPL-2.0 */
#ifndef ASYNCBPF_DEMANGLE_H
#define ASYNCBPF_DEMANGLE_H

#include "lib/strpool.h"

/*
 * Demangle a Rust symbol (legacy _ZN..E and v0 _R..) with libiberty, without the
 * trailing ::h<hash>; interned in pool. Returns the input (interned) when it is not
 * a Rust symbol, NULL only on ENOMEM or NULL input.
 */
const char *symbol__demangle(struct strpool *pool, const char *linkage_name);

#endif
