/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The futures a block_on polls (tokio's, futures', async-io's, async-std's): given the
 * paths of the block_on functions' type parameters, mark the model's futures among
 * them `block_on_root`, through Pin<Box<F>>, Pin<&mut F> and the runtimes' wrappers.
 */
#ifndef ASYNCBPF_ANALYZE_BLOCK_ON_H
#define ASYNCBPF_ANALYZE_BLOCK_ON_H

#include <stdint.h>

#include "model/model.h"

void block_on__mark_roots(struct model *m, const char *const *paths, uint32_t n);
/* The future inside `core::pin::Pin<alloc::boxed::Box<F, A>>`, or -1. */
int32_t runtime__boxed_future(const struct model *m, int32_t future);

#endif
