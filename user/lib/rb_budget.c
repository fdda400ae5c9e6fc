// SPDX-License-Identifier: GPL-2.0
/* Consuming a BPF ring buffer in bounded rounds (rb_budget.h). */
#include "lib/rb_budget.h"

#include <errno.h>

int rb_budget__sample(void *ctx, void *data, size_t size)
{
	struct rb_budget *b = ctx;
	int r = b->fn(b->ctx, data, size);

	if (r)
		return r;
	return --b->left ? 0 : -EAGAIN;
}

int rb_budget__consume(struct ring_buffer *rb, struct rb_budget *b, uint32_t n)
{
	int r;

	b->left = n ? n : 1;
	r = ring_buffer__consume(rb);
	if (r == -EAGAIN && !b->left)
		return (int)n;
	return r < 0 ? r : (int)(n - b->left);
}

int rb_budget__drain(struct ring_buffer *rb, struct rb_budget *b, uint32_t n)
{
	int r;

	while ((r = rb_budget__consume(rb, b, n)) == (int)n)
		;
	return r < 0 ? r : 0;
}
