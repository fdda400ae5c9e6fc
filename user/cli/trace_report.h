/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What trace says about its probe plan before attaching (stderr): what is probed and
 * how much of it the kernel emulates, what is not and why, the selected futures that
 * exist only inlined, and, when nothing selected can be probed, what would work.
 */
#ifndef ASYNCBPF_CLI_TRACE_REPORT_H
#define ASYNCBPF_CLI_TRACE_REPORT_H

#include <stdbool.h>

#include "model/model.h"
#include "select/selection.h"
#include "trace/trace_plan.h"

/* What the plan probes, and how much of it the kernel emulates (no single-step). */
void trace_report__plan(const struct trace_plan *p, enum plan_exits mode);
/* One line per poll fn that is not (fully) probed: 10 unless -v, then the counts. */
void trace_report__problems(const struct trace_plan *plan, const struct model *m);
/* Selected futures whose polls exist only inlined: named with where they are inlined. */
void trace_report__inlined_only(const struct model *m, const struct selection *sel);
/* Nothing selected has a probeable poll: why, and what would work instead. */
void trace_report__nothing_probed(const struct model *m, const struct selection *sel,
				  bool all_crates);

#endif
