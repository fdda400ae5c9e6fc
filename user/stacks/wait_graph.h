/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The wait-for graph and its cycles (wait_graph.c), for resources.c: internal to
 * stacks/.
 */
#ifndef ASYNCBPF_STACKS_WAIT_GRAPH_H
#define ASYNCBPF_STACKS_WAIT_GRAPH_H

#include "stacks/report.h"
#include "stacks/resources.h"

/* The deadlocks of r's holds and waits (r->deadlocks, cycle_task, cycle_res;
 * self_waits counted). 0 or -ENOMEM. */
int wait_graph__cycles(struct res_report *r, const struct stk_task *tasks, uint32_t nr);

#endif
