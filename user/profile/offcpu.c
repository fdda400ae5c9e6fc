// SPDX-License-Identifier: GPL-2.0
/* Off-CPU profiling in user space: teaching the kernel, collecting its sums (offcpu.h). */
#include "profile/offcpu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "lib/hashmap.h"
#include "lib/vec.h"
#include "profile/walks.h"

#define KEY_MASK (~0ull >> 1) /* u64_map keys must not be UINT64_MAX */

struct offcpu_learner {
	int rules_fd;
	struct u64_map sent;   /* rule key -> 1 taught, 2 taught as CUT */
	struct u64_map by_key; /* record key (without OFFCPU_KEY_LEARN) -> walks index */
	struct walk_table walks;
	struct learned_rule rules[UNWIND_MAX_FRAMES];
	uint64_t pcs[UNWIND_MAX_FRAMES];
	/* the kernel's sums as last collected, per key: a collection adds what grew
	 * since (profile --every collects every interval) */
	struct u64_map last_of; /* key -> last[] index */
	struct offcpu_time *last;
	uint32_t nr_last, cap_last;
};

struct offcpu_learner *offcpu__new(int rules_fd)
{
	struct offcpu_learner *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->rules_fd = rules_fd;
	u64_map__init(&l->sent);
	u64_map__init(&l->by_key);
	u64_map__init(&l->last_of);
	walk_table__init(&l->walks);
	return l;
}

void offcpu__free(struct offcpu_learner *l)
{
	if (!l)
		return;
	walk_table__free(&l->walks);
	u64_map__free(&l->sent);
	u64_map__free(&l->by_key);
	u64_map__free(&l->last_of);
	free(l->last);
	free(l);
}

/*
 * Teach the kernel's walker the rules of the last walk, so that the next blocks
 * there are summed in the kernel. A CUT rule never replaces a rule: the same pc may
 * be the last frame found in one unwind and an inner one in another.
 */
static void teach(struct offcpu_learner *l, struct unwinder *u, struct offcpu_counts *n)
{
	uint32_t nr;
	uint64_t v;

	if (l->rules_fd < 0)
		return;
	nr = unwinder__rules(u, l->rules, UNWIND_MAX_FRAMES);
	for (uint32_t i = 0; i < nr; i++) {
		const struct learned_rule *r = &l->rules[i];
		bool cut = r->rule.flags & UNWIND_RULE_CUT;

		if (u64_map__get(&l->sent, r->key & KEY_MASK, &v) && (cut || v == 1))
			continue;
		if (bpf_map_update_elem(l->rules_fd, &r->key, &r->rule,
					cut ? BPF_NOEXIST : BPF_ANY)) {
			if (errno != EEXIST)
				n->rules_failed++;
			continue;
		}
		n->rules++;
		u64_map__set(&l->sent, r->key & KEY_MASK, cut ? 2 : 1);
	}
}

int offcpu__learn(struct offcpu_learner *l, struct unwinder *u, uint64_t key,
		  struct offcpu_counts *n)
{
	enum unwind_reason reason;
	uint32_t nr;
	int64_t w;

	n->unwound++;
	teach(l, u, n);
	nr = unwinder__walked(u, l->pcs, UNWIND_MAX_FRAMES);
	reason = unwinder__last_reason(u);
	w = walk_table__add(&l->walks, l->pcs, nr, reason);
	if (w < 0 || u64_map__set(&l->by_key, key & ~OFFCPU_KEY_LEARN, (uint64_t)w))
		return -ENOMEM;
	return 0;
}

/* Project a stack: its frames, then its sums; the stack index or -ENOMEM. */
static int64_t project(struct projector *p, struct unwind_result *r, uint32_t nframes)
{
	struct projected_sample s = {.offcpu = true, .intern_only = true};

	s.cut_short = r->reason == UNWIND_STACK_SHORT;
	return projector__add(p, r->frames, nframes, &s);
}

/* One key's sums into p; false when its stack is unknown (its record was lost). */
static bool add_key(struct offcpu_learner *l, struct unwinder *u, struct projector *p,
		    int stacks_fd, uint64_t key, const struct offcpu_time *t,
		    struct offcpu_stack *st, struct unwind_result *r, struct offcpu_counts *n)
{
	int64_t idx;
	uint64_t v;

	if (!u)
		return false;
	if (key & OFFCPU_KEY_LEARN) {
		struct walk *w;

		if (!u64_map__get(&l->by_key, key & ~OFFCPU_KEY_LEARN, &v) || v >= l->walks.nr)
			return false;
		w = &l->walks.walks[v];
		if (w->stack < 0)
			w->stack =
			    project(p, r, unwinder__symbolize(u, w->pcs, w->n, w->reason, r));
		idx = w->stack;
	} else {
		if (bpf_map_lookup_elem(stacks_fd, &key, st) || !st->nr ||
		    st->nr > OFFCPU_MAX_FRAMES)
			return false;
		/* return addresses: the call is at pc - 1 */
		for (uint32_t i = 0; i < st->nr; i++)
			l->pcs[i] = i ? st->pcs[i] - 1 : st->pcs[i];
		idx = project(p, r,
			      unwinder__symbolize(u, l->pcs, st->nr,
						  st->flags & OFFCPU_STACK_CUT ? UNWIND_STACK_SHORT
									       : UNWIND_COMPLETE,
						  r));
		n->kernel_stacks++;
	}
	if (idx < 0 || projector__add_aggregate(p, (uint32_t)idx, t->count, t->ns))
		return false;
	return true;
}

/* t becomes what grew under key since the last collection; 0, or -ENOMEM. */
static int grown(struct offcpu_learner *l, uint64_t key, struct offcpu_time *t)
{
	uint64_t i;

	if (!u64_map__get(&l->last_of, key, &i)) {
		if (vec__reserve((void **)&l->last, &l->cap_last, l->nr_last + 1,
				 sizeof(*l->last)) ||
		    u64_map__set(&l->last_of, key, l->nr_last))
			return -ENOMEM;
		i = l->nr_last++;
		l->last[i] = (struct offcpu_time){0};
	}
	struct offcpu_time now = *t;

	t->count = now.count >= l->last[i].count ? now.count - l->last[i].count : now.count;
	t->ns = now.ns >= l->last[i].ns ? now.ns - l->last[i].ns : now.ns;
	l->last[i] = now;
	return 0;
}

void offcpu__forget_stacks(struct offcpu_learner *l)
{
	walk_table__forget_stacks(&l->walks);
}

int offcpu__collect(struct offcpu_learner *l, struct unwinder *u, struct projector *p, int times_fd,
		    int stacks_fd, int pending_fd, struct unwind_result *scratch,
		    struct offcpu_counts *n)
{
	struct offcpu_stack *st = malloc(sizeof(*st));
	struct offcpu_time t;
	uint64_t key, next;
	uint32_t tid, next_tid;
	void *prev = NULL;
	int r = 0;

	if (!st)
		return -ENOMEM;
	while (!bpf_map_get_next_key(times_fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(times_fd, &key, &t))
			continue;
		if (grown(l, key, &t) < 0) {
			r = -ENOMEM;
			break;
		}
		if (!t.count && !t.ns)
			continue; /* nothing new under this key since the last collection */
		n->blocks += t.count;
		n->ns += t.ns;
		if (!add_key(l, u, p, stacks_fd, key, &t, st, scratch, n)) {
			n->unknown += t.count;
			n->unknown_ns += t.ns;
		}
	}
	if (!r && errno != ENOENT)
		r = -errno;
	/* threads still blocked when sampling stopped: their current wait is not summed */
	for (prev = NULL; !bpf_map_get_next_key(pending_fd, prev, &next_tid); prev = &tid) {
		tid = next_tid;
		n->blocked_at_stop++;
	}
	free(st);
	return r;
}
