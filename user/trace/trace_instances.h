/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Live future instances for the trace summary: (poll fn, self) while a future lives,
 * its lifetime, and what is still pending at the end, grouped by await point. Pure;
 * knows nothing of the summary that uses it.
 */
#ifndef ASYNCBPF_TRACE_INSTANCES_H
#define ASYNCBPF_TRACE_INSTANCES_H

#include <stdbool.h>
#include <stdint.h>

#include "model/model.h"
#include "model/trace_event.h"
#include "trace/key_map.h"

/* One live future instance: its `self` while it lives (a pinned future does not move). */
struct summary_instance {
	uint64_t self;
	uint64_t first_start_ns;
	uint64_t busy_ns;
	uint32_t poll;
	uint32_t polls;
	int32_t await_index; /* of its last Pending poll if that was the last or it runs, else -1 */
	uint8_t last_result; /* enum poll_result */
	uint8_t started_before; /* a compiler future first seen past Unresumed */
	uint8_t pad[2];
};

struct instance_table {
	struct key_map index;		    /* (poll, self) -> slot in instances */
	struct summary_instance *instances; /* live ones, compact (an ended one is swapped out) */
	uint32_t nr, cap, max;		    /* max: the cap on live instances */
	uint64_t untracked_polls;	    /* polls of instances past the cap */
	uint64_t untracked_instances; /* first polls past the cap (new instances not tracked) */
};

/* One group of futures still pending at the end: same future type and await point. */
struct pending_group {
	uint32_t poll;
	int32_t await_index; /* pending: where; running: where it resumed from; -1: none */
	uint8_t result;	     /* POLL_PENDING or POLL_OPEN */
	uint64_t count;
};

struct pending_report {
	struct pending_group *groups; /* most numerous first */
	uint32_t nr;
	uint64_t pending, running; /* instances in the groups */
	uint64_t truncated;	   /* last poll truncated: fate unknown, not listed */
	uint64_t unknown;	   /* last poll's result unknown: not listed */
};

void instance_table__init(struct instance_table *t, uint32_t max);
void instance_table__free(struct instance_table *t);
/* What instance_table__add saw, for the caller's per-poll-fn counts. */
struct instance_update {
	bool lifetime;	     /* Ready: the instance's lifetime (ns) ended */
	bool started_before; /* Ready, but first seen past Unresumed: no lifetime */
	bool abandoned;	     /* found Unresumed again while pending: it was dropped */
	bool oom;	     /* the instance could not be stored */
	uint64_t life_ns;
};

/*
 * Track p's instance (m: the model p's poll fn indexes); a Ready or panicked poll
 * ends it. Polls of instances past the cap are counted in t->untracked_polls.
 */
void instance_table__add(struct instance_table *t, const struct model *m,
			 const struct trace_poll *p, struct instance_update *u);
/*
 * The instance (poll, self) was dropped: forget it, saying its last result and
 * await index. False if it was not tracked.
 */
bool instance_table__drop(struct instance_table *t, uint32_t poll, uint64_t self,
			  uint8_t *last_result, int32_t *await_index);
/* Instances still live at the end, grouped; 0 or -ENOMEM. */
int instance_table__pending(const struct instance_table *t, struct pending_report *r);
void pending_report__free(struct pending_report *r);

#endif
