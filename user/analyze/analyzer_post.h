/* SPDX-License-Identifier: GPL-2.0 */
/* The analyzer's passes after the DWARF walk (analyzer_post.c). Internal to analyze/. */
#ifndef ASYNCBPF_ANALYZE_POST_H
#define ASYNCBPF_ANALYZE_POST_H

#include "analyze/walk.h"

/* Poll<T> return layouts and the register self arrives in, for this CU's polls. */
void analyzer__resolve_pending(struct walk *w);
/* Without DWARF: poll fns from symbol names. 0 or -ENOMEM. */
int analyzer__walk_symbols(struct walk *w);
void analyzer__classify_crates(struct model *m);
/* Exit and entry sites of every out-of-line poll fn. 0 or -ENOMEM. */
int analyzer__disassemble_polls(struct walk *w);
void analyzer__link_drops(struct walk *w);
/* The cheapest probe sites of the wake functions and drop_in_place::<F>s: 0 or -ENOMEM. */
int analyzer__probe_sites(struct walk *w);
/* Read the dyn Future vtables' words; a vtable whose poll is another future's poll
 * fn (identical code folded) marks the two. 0 or -ENOMEM. */
int analyzer__link_vtables(struct walk *w);

#endif
