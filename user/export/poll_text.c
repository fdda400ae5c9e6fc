// SPDX-License-Identifier: GPL-2.0
/* How a completed poll is named in the trace writers (poll_text.h). */
#include "export/poll_text.h"

#include <inttypes.h>
#include <stdio.h>

static const struct future *future_of(const struct model *m, uint32_t future)
{
	return future < m->nr_futures ? &m->futures[future] : NULL;
}

static const struct poll_fn *poll_of(const struct model *m, uint32_t poll)
{
	return poll < m->nr_polls ? &m->polls[poll] : NULL;
}

const char *poll_text__name(const struct model *m, uint32_t future, uint32_t poll, char *buf,
			    size_t len)
{
	const struct future *f = future_of(m, future);
	const struct poll_fn *pf = poll_of(m, poll);

	if (f)
		future__display_name(f, buf, len);
	else if (pf && pf->name)
		snprintf(buf, len, "%s", pf->name);
	else if (pf)
		snprintf(buf, len, "poll#%" PRIu32, poll);
	else
		snprintf(buf, len, "(unknown poll)");
	return buf;
}

const char *poll_text__path(const struct model *m, uint32_t future, uint32_t poll)
{
	const struct future *f = future_of(m, future);
	const struct poll_fn *pf = poll_of(m, poll);

	return f && f->path ? f->path : pf && pf->name ? pf->name : "(unknown)";
}

bool poll_text__await(const struct model *m, uint32_t future, int32_t index, char *buf, size_t len)
{
	const struct future *f = future_of(m, future);

	for (uint32_t i = 0; f && index >= 0 && i < f->nr_states; i++) {
		const struct future_state *s = &f->states[i];

		if (s->kind == STATE_SUSPEND && s->suspend_index == (uint32_t)index) {
			if (buf)
				snprintf(buf, len, "%s:%" PRIu32, s->file ? s->file : "?", s->line);
			return true;
		}
	}
	return false;
}

size_t poll_text__state(const struct future *f, uint64_t discr, char *buf, size_t len)
{
	int r = snprintf(buf, len, "%" PRIu64, discr);

	for (uint32_t i = 0; f && i < f->nr_states; i++) {
		if (f->states[i].discr == discr && f->states[i].name) {
			r = snprintf(buf, len, "%.120s (%" PRIu64 ")", f->states[i].name, discr);
			break;
		}
	}
	return r < 0 ? 0 : (size_t)r < len ? (size_t)r : len - 1;
}
