/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What asyncbpf's own uprobes fire on (asyncbpf check; the tracer's probe-cost
 * measurement): a small assembly function in our own file whose labels give exact
 * instruction boundaries. See docs/check.md.
 */
#ifndef ASYNCBPF_PROBE_TARGET_H
#define ASYNCBPF_PROBE_TARGET_H

#include <stddef.h>

/*
 * The file that maps the probe target (into path, size bytes) and the file offsets of
 * its entry (a nop the kernel emulates), a mid-function instruction (single-stepped)
 * and its `ret`. Returns 0, -ENOENT when /proc/self/maps does not show all three,
 * -ESTALE when they are not in a file that can be probed (anonymous, or replaced
 * since), or -errno opening /proc/self/maps.
 */
int probe_target__resolve(char *path, size_t size, unsigned long *entry, unsigned long *insn,
			  unsigned long *ret);

/* Call the probe target `times` times, with 0, 1, ...; check_probe_target(0) returns 42. */
void probe_target__call(int times);

#endif
