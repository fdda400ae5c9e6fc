/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Whether a Rust binary unwinds on panic or aborts (panic = "abort"): it decides the
 * tracer's exit mode (docs/tracing.md, "Exit modes"). A uretprobe replaces return
 * addresses, which breaks unwinding through the probed frame: safe only when the
 * program never unwinds.
 */
#ifndef ASYNCBPF_PANIC_STRATEGY_H
#define ASYNCBPF_PANIC_STRATEGY_H

#include <stddef.h>

enum panic_strategy {
	PANIC_STRATEGY_UNKNOWN, /* no symbols, or not Rust: assume it may unwind */
	PANIC_STRATEGY_UNWIND,	/* the panic_unwind runtime is linked in */
	PANIC_STRATEGY_ABORT,	/* a panic runtime without panic_unwind: panic_abort */
};

/*
 * Look at the symbol tables of the ELF file at path: symbols of the crate
 * `panic_unwind` mean it unwinds; `__rust_start_panic` without them means the
 * panic_abort runtime. `why` says what was found, for the user.
 */
enum panic_strategy panic_strategy__detect(const char *path, char *why, size_t whylen);

#endif
