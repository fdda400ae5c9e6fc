/* SPDX-License-Identifier: GPL-2.0 */
/*
 * profile --every on several processes (-p A,B) or on every process of an
 * executable (--exe PATH|NAME): a profiler per process in one loop (cli/fleet.h),
 * each interval one pprof file per process in --pprof-dir (named by the time and
 * the pid), a process's last partial interval written when it exits
 * (docs/profile.md, "Several processes").
 */
#ifndef ASYNCBPF_CLI_PROFILE_FLEET_H
#define ASYNCBPF_CLI_PROFILE_FLEET_H

#include "cli/profile_args.h"

/* An exit status: EXIT_OUTPUT when any interval's file could not be written. */
int profile_fleet__run(const struct profile_args *a);

#endif
