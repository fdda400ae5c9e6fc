/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Exits in the caller (docs/disasm.md, "Exits in the caller"): the analyzer pass
 * that builds the call-site index (callsites.h) and, for every out-of-line poll fn,
 * its call sites and their continuation sites (continuation.h) into the model
 * (poll_fn.caller_exits). task_exits.c uses the same per-call-site step for the
 * runtimes' task polls. Internal to analyze/.
 */
#ifndef ASYNCBPF_ANALYZE_CALLER_EXITS_H
#define ASYNCBPF_ANALYZE_CALLER_EXITS_H

#include "analyze/callsites.h"
#include "analyze/cfg.h"
#include "analyze/continuation.h"
#include "analyze/walk.h"

/* Call sites kept per poll fn; past it, none are (caller_exits_why says so). */
#define CALLER_EXITS_MAX_SITES 4096u

/* One call site at a time; the CFG of the last caller is kept, so give the sites
 * function by function. */
struct call_site_ctx {
	struct target *t;
	struct model *m;
	const struct callsites *ix;
	int32_t fn;	    /* the function g is the CFG of; -1: none yet */
	const char *g_why;  /* building it failed: why (model pool), else NULL */
	const char *g_name; /* its demangled name */
	struct cfg g;
	/* no emulated site: take the return address, single-stepped (caller_exit.stepped),
	 * where only the return reaches it (async-task's run calls, which have no other
	 * safe exit) */
	bool stepped_ok;
};

void call_site_ctx__init(struct call_site_ctx *c, struct target *t, struct model *m,
			 const struct callsites *ix);
void call_site_ctx__free(struct call_site_ctx *c);
/* The CFG of function fn of the index, NULL when it cannot be built (c->g_why says
 * why). *err: -ENOMEM, else 0. */
const struct cfg *call_site_ctx__cfg(struct call_site_ctx *c, int32_t fn, int *err);
/*
 * The continuation of call site cs as a model caller_exit (everything but result,
 * set to CALLER_RESULT_UNKNOWN); *cont, when given, gets the rule's answer. 0 or
 * -ENOMEM.
 */
int call_site_ctx__exit(struct call_site_ctx *c, const struct callsite *cs, enum call_kind kind,
			struct caller_exit *out, struct continuation *cont);

/* Build the call-site index (w->calls) and the caller exits of every out-of-line
 * poll fn. 0 or -ENOMEM. */
int caller_exits__find(struct walk *w);
void caller_exits__free(struct walk *w);

#endif
