/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Future trees (trees.c): the model's trees and tree_slots (model.h), where each
 * future type keeps the futures it polls or holds. Internal to analyze/.
 */
#ifndef ASYNCBPF_ANALYZE_TREES_H
#define ASYNCBPF_ANALYZE_TREES_H

#include "analyze/walk.h"

/* The end of a compile unit: the type trees under this unit's __awaitee types and
 * hand-written future types, while its type paths are known. 0 or -ENOMEM. */
int trees__end_cu(struct walk *w);
/* Once every future is known: the trees become the model's slots. 0 or -ENOMEM. */
int trees__resolve(struct walk *w);
void trees__free(struct walk *w);

#endif
