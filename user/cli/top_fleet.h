/* SPDX-License-Identifier: GPL-2.0 */
/*
 * top on several processes (-p A,B or -p A -p B) or following an executable (--exe
 * PATH|NAME): a tracer per process, one loop, their tables one after another, one
 * --prometheus page (docs/top.md "Several processes", docs/metrics.md). With --exe,
 * processes that start are attached, those that exit let go, the analysis of a
 * binary reused by every process running it, and the metrics summed per executable
 * so that a restart continues the series.
 */
#ifndef ASYNCBPF_CLI_TOP_FLEET_H
#define ASYNCBPF_CLI_TOP_FLEET_H

#include "cli/trace_args.h"

/* An exit status. */
int top_fleet__run(const struct trace_args *a);

#endif
