// SPDX-License-Identifier: GPL-2.0
/*
 * The futures a block_on polls (block_on.h): the roots of their threads' tasks,
 * though no runtime task header holds them (docs/tracing.md, "Tasks").
 */
#include "analyze/block_on.h"

#include <stdbool.h>
#include <string.h>

#include "lib/text.h"

static bool starts_with(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/*
 * The future inside `core::pin::Pin<alloc::boxed::Box<F, A>>` (runtimes box large
 * futures), or -1: what the task's pointer leads to.
 */
int32_t runtime__boxed_future(const struct model *m, int32_t future)
{
	static const char pin_box[] = "core::pin::Pin<alloc::boxed::Box<";
	static const char global[] = ", alloc::alloc::Global>>";
	const char *p = future >= 0 ? m->futures[future].path : NULL;
	char inner[4096];
	size_t n;

	if (!p || !starts_with(p, pin_box))
		return -1;
	p += sizeof(pin_box) - 1;
	n = strlen(p);
	if (n > sizeof(global) - 1 && strcmp(p + n - (sizeof(global) - 1), global) == 0)
		n -= sizeof(global) - 1;
	else if (n > 2 && strcmp(p + n - 2, ">>") == 0)
		n -= 2;
	else
		return -1;
	if (n >= sizeof(inner))
		return -1;
	memcpy(inner, p, n);
	inner[n] = '\0';
	return model__find_future(m, inner);
}

/*
 * The future a `Pin<&mut F>` or `&mut F` forwards its polls to, or -1: block_on's
 * wrappers of the future it was given, which is the task.
 */
static int32_t referenced_future(const struct model *m, int32_t future)
{
	static const char *const prefixes[] = {"core::pin::Pin<&mut ", "&mut "};
	const char *p = future >= 0 ? m->futures[future].path : NULL;
	char inner[4096];

	for (size_t i = 0; p && i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t k = strlen(prefixes[i]), n = strlen(p);
		bool pin = i == 0;

		if (strncmp(p, prefixes[i], k) || n - k >= sizeof(inner) ||
		    (pin && p[n - 1] != '>'))
			continue;
		n -= k + (pin ? 1 : 0);
		memcpy(inner, p + k, n);
		inner[n] = '\0';
		return model__find_future(m, inner);
	}
	return -1;
}

/*
 * A block_on root whose type names another one among its generic arguments wraps it
 * (tokio's current-thread `PollFn<..block_on::{closure_env#0}<F>>`, async-executor's
 * `Executor::run<T, F>`): F is the task; the wrapper is only its runtime's machinery.
 */
static void unmark_wrappers(struct model *m)
{
	for (uint32_t i = 0; i < m->nr_futures; i++) {
		const char *open;

		if (!m->futures[i].block_on_root || !(open = strchr(m->futures[i].path, '<')))
			continue;
		for (uint32_t k = 0; k < m->nr_futures; k++)
			if (k != i && m->futures[k].block_on_root &&
			    strstr(open, m->futures[k].path)) {
				m->futures[i].block_on_root = false;
				break;
			}
	}
}

void block_on__mark_roots(struct model *m, const char *const *paths, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		int32_t f = paths[i] ? model__find_future(m, paths[i]) : -1;
		int32_t inner = runtime__boxed_future(m, f);

		if (inner >= 0)
			f = inner;
		/* Pin<&mut F> forwarding to F, maybe twice: the task is F */
		for (int hop = 0; hop < 4 && (inner = referenced_future(m, f)) >= 0; hop++)
			f = inner;
		if (f >= 0)
			m->futures[f].block_on_root = true;
	}
	unmark_wrappers(m);
}
