/* SPDX-License-Identifier: GPL-2.0 */
/*
 * profile --every S --pprof-dir DIR (docs/profile.md, "Continuous profiling"): one
 * pprof file per interval, written atomically as DIR/asyncbpf-<UTC time>-<pid>.pb,
 * the oldest of them removed past --keep files or --keep-size bytes. A file that
 * cannot be written (a full disk) is said, counted, and sampling goes on.
 */
#ifndef ASYNCBPF_CLI_PROFILE_EVERY_H
#define ASYNCBPF_CLI_PROFILE_EVERY_H

#include <stdint.h>

#include "model/profile_data.h"

#define PROFILE_EVERY_KEEP 1440 /* files kept by default: a day of --every 60 */

struct profile_every;

/* DIR made when missing (one level, mode 0755). 0, or EXIT_OUTPUT with why said. */
int profile_every__open(const char *dir, uint32_t keep, uint64_t keep_bytes, int pid,
			struct profile_every **out);
/* One interval's profile; the oldest files past the limits removed. 0 or -errno (said). */
int profile_every__write(struct profile_every *e, const struct profile_data *d);
/* Files written, not written (errors), removed past the limits. */
void profile_every__counts(const struct profile_every *e, uint64_t *written, uint64_t *failed,
			   uint64_t *removed);
const char *profile_every__dir(const struct profile_every *e);
void profile_every__close(struct profile_every *e);

#endif
