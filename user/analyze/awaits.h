/* SPDX-License-Identifier: GPL-2.0 */
/* Await-graph resolution (awaits.c): __awaitee types to futures. Internal to analyze/. */
#ifndef ASYNCBPF_ANALYZE_AWAITS_H
#define ASYNCBPF_ANALYZE_AWAITS_H

#include "analyze/walk.h"

/* The type trees under this CU's __awaitee types, while its DIEs are at hand. */
int awaits__build_cu_trees(struct walk *w);
/* Every await point to the futures it awaits, once all futures are known. */
int awaits__resolve(struct walk *w);
void awaits__free(struct walk *w);

#endif
