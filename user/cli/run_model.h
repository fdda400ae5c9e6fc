/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Who owns the analysis a run holds (trace_run, profile_run): the run, which loaded it
 * (and frees it), or the fleet of processes (cli/fleet.h), which lent it a copy of
 * the analysis another process of the same file had made.
 */
#ifndef ASYNCBPF_CLI_RUN_MODEL_H
#define ASYNCBPF_CLI_RUN_MODEL_H

#include <stdbool.h>

#include "model/model.h"

struct run_model {
	bool loaded;   /* loaded by the run (or tried): the run frees it */
	bool ok;       /* ... and whole: it may be given to the fleet */
	bool borrowed; /* a copy of the fleet's: never loaded nor freed by the run */
};

/* *m becomes a copy of shared, borrowed. */
void run_model__borrow(struct model *m, struct run_model *own, const struct model *shared);
/* The analysis the run made, whole: moved to *out (the run now borrows it); false
 * when it has none. */
bool run_model__give(struct model *m, struct run_model *own, struct model *out);
/* The run's end: its own analysis freed. */
void run_model__free(struct model *m, struct run_model *own);

#endif
