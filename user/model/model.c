// SPDX-License-Identifier: GPL-2.0
#include "model/model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void model__init(struct model *m)
{
	memset(m, 0, sizeof(*m));
	strpool__init(&m->strings);
}

void model__free(struct model *m)
{
	for (uint32_t i = 0; i < m->nr_futures; i++) {
		for (uint32_t k = 0; m->futures[i].states && k < m->futures[i].nr_states; k++)
			free(m->futures[i].states[k].held);
		free(m->futures[i].states);
		free(m->futures[i].wait);
	}
	for (uint32_t i = 0; i < m->nr_polls; i++) {
		free(m->polls[i].exits);
		free(m->polls[i].fast_exits);
		free(m->polls[i].inline_sites);
		free(m->polls[i].caller_exits);
	}
	free(m->futures);
	free(m->polls);
	free(m->edges);
	free(m->vtables);
	free(m->task_types);
	free(m->wake_fns);
	for (uint32_t i = 0; i < m->nr_tail_callees; i++)
		free(m->tail_callees[i].ret_offsets);
	free(m->tail_callees);
	free(m->task_poll_exits);
	free(m->trees);
	free(m->tree_slots);
	free(m->warnings);
	free(m->crates);
	strpool__free(&m->strings);
	memset(m, 0, sizeof(*m));
}

/* Grow *arr (element size sz) so one more fits; returns the new zeroed slot. */
static void *append(void **arr, uint32_t *nr, uint32_t *cap, size_t sz)
{
	if (*nr == *cap) {
		uint32_t ncap = *cap ? *cap * 2 : 64;
		if (ncap < *cap) /* overflow */
			return NULL;
		void *n = realloc(*arr, (size_t)ncap * sz);
		if (!n)
			return NULL;
		*arr = n;
		*cap = ncap;
	}
	void *slot = (char *)*arr + (size_t)(*nr) * sz;
	memset(slot, 0, sz);
	(*nr)++;
	return slot;
}

struct future *model__add_future(struct model *m)
{
	struct future *f =
	    append((void **)&m->futures, &m->nr_futures, &m->cap_futures, sizeof(*f));
	if (f) {
		f->poll = -1;
		f->folded_into = -1;
	}
	return f;
}

struct poll_fn *model__add_poll(struct model *m)
{
	struct poll_fn *p = append((void **)&m->polls, &m->nr_polls, &m->cap_polls, sizeof(*p));
	if (p) {
		p->future = -1;
		p->abi.code_self = -1;
		p->abi.dwarf_self = -1;
		p->abi.dwarf_slot_reg = -1;
	}
	return p;
}

struct future_vtable *model__add_vtable(struct model *m)
{
	struct future_vtable *v =
	    append((void **)&m->vtables, &m->nr_vtables, &m->cap_vtables, sizeof(*v));
	if (v)
		v->future = v->poll_fn = -1;
	return v;
}

struct task_type *model__add_task_type(struct model *m)
{
	struct task_type *t =
	    append((void **)&m->task_types, &m->nr_task_types, &m->cap_task_types, sizeof(*t));
	if (t) {
		t->future = -1;
		t->future_offset = FUTURE_NO_OFFSET;
	}
	return t;
}

struct tree_slot *model__add_tree_slot(struct model *m)
{
	struct tree_slot *s =
	    append((void **)&m->tree_slots, &m->nr_tree_slots, &m->cap_tree_slots, sizeof(*s));
	if (s) {
		s->child = -1;
		s->await_index = -1;
	}
	return s;
}

struct wake_fn *model__add_wake_fn(struct model *m)
{
	return append((void **)&m->wake_fns, &m->nr_wake_fns, &m->cap_wake_fns,
		      sizeof(struct wake_fn));
}

struct crate_debuginfo *model__add_crate(struct model *m)
{
	return append((void **)&m->crates, &m->nr_crates, &m->cap_crates,
		      sizeof(struct crate_debuginfo));
}

struct tail_callee *model__add_tail_callee(struct model *m)
{
	struct tail_callee *c = append((void **)&m->tail_callees, &m->nr_tail_callees,
				       &m->cap_tail_callees, sizeof(*c));
	if (c)
		c->poll = -1;
	return c;
}

const struct tail_callee *model__tail_callee(const struct model *m, uint64_t addr)
{
	uint32_t lo = 0, hi = m->nr_tail_callees;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (m->tail_callees[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->nr_tail_callees && m->tail_callees[lo].addr == addr ? &m->tail_callees[lo]
									   : NULL;
}

struct task_poll_exit *model__add_task_poll_exit(struct model *m)
{
	struct task_poll_exit *x = append((void **)&m->task_poll_exits, &m->nr_task_poll_exits,
					  &m->cap_task_poll_exits, sizeof(*x));
	if (x)
		x->site.result_reg[0] = x->site.result_reg[1] = -1;
	return x;
}

const char *call_kind__name(enum call_kind k)
{
	switch (k) {
	case CALL_DIRECT: return "direct";
	case CALL_SLOT: return "slot";
	case CALL_VTABLE: return "vtable";
	}
	return "?";
}

const char *caller_result__name(enum caller_result r)
{
	switch (r) {
	case CALLER_RESULT_NOT_NEEDED: return "not_needed";
	case CALLER_RESULT_READABLE: return "readable";
	case CALLER_RESULT_LOST: return "lost";
	case CALLER_RESULT_UNKNOWN: return "unknown";
	}
	return "?";
}

const char *task_runtime__name(enum task_runtime r)
{
	switch (r) {
	case TASK_RT_DYN: return "dyn";
	case TASK_RT_TOKIO: return "tokio";
	case TASK_RT_ASYNC_TASK: return "async-task";
	case TASK_RT_STD_WAKE: return "std-wake";
	case TASK_RT_MAX: break;
	}
	return "?";
}

const char *tree_cond_kind__name(enum tree_cond_kind k)
{
	switch (k) {
	case TREE_COND_IN: return "in";
	case TREE_COND_NOT_IN: return "not_in";
	case TREE_COND_NO_BITS: return "no_bits";
	}
	return "?";
}

uint64_t task_runtime__cancel_bit(enum task_runtime r)
{
	switch (r) {
	case TASK_RT_TOKIO: return 32;	   /* tokio 1.x runtime/task/state.rs: CANCELLED */
	case TASK_RT_ASYNC_TASK: return 8; /* async-task 4.x src/state.rs: CLOSED */
	default: return 0;
	}
}

uint64_t task_runtime__done_bit(enum task_runtime r)
{
	switch (r) {
	case TASK_RT_TOKIO: return 2;	   /* COMPLETE */
	case TASK_RT_ASYNC_TASK: return 4; /* COMPLETED */
	default: return 0;
	}
}

struct await_edge *model__add_edge(struct model *m)
{
	struct await_edge *e = append((void **)&m->edges, &m->nr_edges, &m->cap_edges, sizeof(*e));
	if (e)
		e->from = e->to = -1;
	return e;
}

void model__warn(struct model *m, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* cap: a hostile input must not make us store millions of warnings */
	if (m->nr_warnings >= 1000)
		return;
	struct model_warning *w =
	    append((void **)&m->warnings, &m->nr_warnings, &m->cap_warnings, sizeof(*w));
	if (w)
		w->text = strpool__intern(&m->strings, buf);
}

int32_t model__find_future(const struct model *m, const char *path)
{
	for (uint32_t i = 0; i < m->nr_futures; i++)
		if (strcmp(m->futures[i].path, path) == 0)
			return (int32_t)i;
	return -1;
}

const char *future_kind__name(enum future_kind k)
{
	switch (k) {
	case FUTURE_ASYNC_FN: return "async_fn";
	case FUTURE_ASYNC_BLOCK: return "async_block";
	case FUTURE_ASYNC_CLOSURE: return "async_closure";
	case FUTURE_HANDWRITTEN: return "handwritten";
	}
	return "unknown";
}

const char *state_kind__name(enum state_kind k)
{
	switch (k) {
	case STATE_UNRESUMED: return "unresumed";
	case STATE_RETURNED: return "returned";
	case STATE_PANICKED: return "panicked";
	case STATE_SUSPEND: return "suspend";
	case STATE_OTHER: return "other";
	}
	return "unknown";
}

const char *exit_kind__name(enum exit_kind k)
{
	switch (k) {
	case EXIT_RET: return "ret";
	case EXIT_TAIL_JMP: return "tail_jmp";
	case EXIT_TAIL_JMP_INDIRECT: return "tail_jmp_indirect";
	case EXIT_BRANCH: return "branch";
	}
	return "unknown";
}

const char *crate_class__name(enum crate_class c)
{
	switch (c) {
	case CRATE_USER: return "user";
	case CRATE_STD: return "std";
	case CRATE_RUNTIME: return "runtime";
	case CRATE_OTHER: return "dependency";
	}
	return "unknown";
}

const char *lock_family__name(enum lock_family f)
{
	switch (f) {
	case LOCK_TOKIO: return "tokio";
	case LOCK_ASYNC_LOCK: return "async-lock";
	case LOCK_ASYNC_RWLOCK: return "async-lock-rwlock";
	case LOCK_ASYNC_SEMAPHORE: return "async-lock-semaphore";
	case LOCK_FUTURES: return "futures-util";
	case LOCK_NONE: break;
	}
	return "none";
}

bool lock_family__locked(uint8_t family, uint64_t word)
{
	switch (family) {
	case LOCK_TOKIO: return (word >> 1) == 0;
	case LOCK_ASYNC_LOCK: return (word & 1) != 0;
	case LOCK_FUTURES: return (word & 1) != 0;
	case LOCK_ASYNC_RWLOCK: return word != 0;
	case LOCK_ASYNC_SEMAPHORE: return word == 0;
	}
	return false;
}

bool lock_family__held(uint8_t family, uint64_t word)
{
	return family == LOCK_ASYNC_RWLOCK ? word == 1 : lock_family__locked(family, word);
}

uint64_t lock_family__readers(uint8_t family, uint64_t word)
{
	return family == LOCK_ASYNC_RWLOCK ? word >> 1 : 0;
}

uint64_t lock_family__permits(uint8_t family, uint64_t word)
{
	return family == LOCK_TOKIO ? word >> 1 : family == LOCK_ASYNC_SEMAPHORE ? word : 0;
}

const char *guard_lock__name(enum guard_lock l)
{
	switch (l) {
	case GUARD_EXCLUSIVE: return "exclusive";
	case GUARD_SHARED: return "shared";
	case GUARD_PERMITS: return "permits";
	case GUARD_SENDER: return "sender";
	case GUARD_OTHER: break;
	}
	return "other";
}

const char *wait_kind__name(enum wait_kind k)
{
	switch (k) {
	case WAIT_LOCK: return "lock";
	case WAIT_JOIN: return "join";
	case WAIT_CHANNEL: return "channel";
	case WAIT_NOTIFY: return "notify";
	case WAIT_NONE: break;
	}
	return "none";
}

const char *debuginfo_level__name(enum debuginfo_level l)
{
	switch (l) {
	case DEBUGINFO_NONE: return "none";
	case DEBUGINFO_LINE_TABLES: return "line-tables-only";
	case DEBUGINFO_LIMITED: return "limited";
	case DEBUGINFO_FULL: return "full";
	}
	return "unknown";
}

bool model__has_await(const struct model *m, uint32_t f, int32_t k)
{
	const struct future *fu;

	if (f >= m->nr_futures)
		return true;
	fu = &m->futures[f];
	if (!fu->has_state || !fu->nr_states)
		return true;
	for (uint32_t i = 0; i < fu->nr_states; i++)
		if (fu->states[i].kind == STATE_SUSPEND && k >= 0 &&
		    fu->states[i].suspend_index == (uint32_t)k)
			return true;
	return false;
}

const char *ret_convention__name(enum ret_convention c)
{
	switch (c) {
	case RET_CONV_UNKNOWN: return "unknown";
	case RET_CONV_REGISTERS: return "registers";
	case RET_CONV_MEMORY: return "memory";
	}
	return "unknown";
}

const char *abi_source__name(enum abi_source s)
{
	switch (s) {
	case ABI_SOURCE_NONE: return "none";
	case ABI_SOURCE_CODE: return "code";
	case ABI_SOURCE_DWARF: return "dwarf";
	case ABI_SOURCE_SIZE: return "size";
	case ABI_SOURCE_UNKNOWN: return "unknown";
	}
	return "unknown";
}

static const char *const dwarf_reg_names[] = {
    "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8",
    "r9",  "r10", "r11", "r12", "r13", "r14", "r15", "rip",
};

const char *dwarf_reg__name(uint16_t dwarf_reg)
{
	if (dwarf_reg >= sizeof(dwarf_reg_names) / sizeof(dwarf_reg_names[0]))
		return "?";
	return dwarf_reg_names[dwarf_reg];
}

const char *self_location__name(enum self_location l)
{
	switch (l) {
	case SELF_LOC_UNKNOWN: return "unknown";
	case SELF_LOC_REG: return "register";
	case SELF_LOC_STACK: return "stack";
	}
	return "unknown";
}

void model__finish(struct model *m)
{
	for (uint32_t i = 0; i < m->nr_futures; i++) {
		m->futures[i].poll = -1;
		m->futures[i].is_root = true;
	}
	for (uint32_t i = 0; i < m->nr_polls; i++) {
		struct poll_fn *p = &m->polls[i];
		if (p->future < 0 || (uint32_t)p->future >= m->nr_futures)
			continue;
		struct future *f = &m->futures[p->future];
		if (!p->inlined_only && f->poll < 0)
			f->poll = (int32_t)i;
	}
	/* a future whose poll was folded into another's runs that one's code */
	for (uint32_t i = 0; i < m->nr_futures; i++) {
		struct future *f = &m->futures[i];
		if (f->poll < 0 && f->folded_into >= 0 && (uint32_t)f->folded_into < m->nr_futures)
			f->poll = m->futures[f->folded_into].poll;
	}
	for (uint32_t i = 0; i < m->nr_futures; i++)
		m->futures[i].inlined_only = false;
	for (uint32_t i = 0; i < m->nr_polls; i++) {
		const struct poll_fn *p = &m->polls[i];
		if (p->inlined_only && p->future >= 0 && (uint32_t)p->future < m->nr_futures)
			m->futures[p->future].inlined_only = true;
	}
	for (uint32_t i = 0; i < m->nr_futures; i++)
		if (m->futures[i].poll >= 0)
			m->futures[i].inlined_only = false;
	for (uint32_t i = 0; i < m->nr_edges; i++) {
		const struct await_edge *e = &m->edges[i];
		if (e->to >= 0 && e->to != e->from)
			m->futures[e->to].is_root = false;
	}
}

const char *rust_path__last_segment(const char *path)
{
	const char *last = path;
	int depth = 0;

	for (const char *p = path; p && *p; p++) {
		if (*p == '<' || *p == '(' || *p == '[')
			depth++;
		else if ((*p == '>' || *p == ')' || *p == ']') && depth > 0)
			depth--;
		else if (depth == 0 && p[0] == ':' && p[1] == ':')
			last = p + 2;
	}
	return last;
}

void future__display_name(const struct future *f, char *buf, size_t len)
{
	static const struct {
		const char *env, *shown;
	} kinds[] = {
	    {"{async_fn_env#", NULL},
	    {"{async_block_env#", "{async_block#"},
	    {"{async_closure_env#", "{async_closure#"},
	};
	const char *path = f->path ? f->path : "";
	const char *last = rust_path__last_segment(path);

	if (!len)
		return;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		size_t el = strlen(kinds[k].env);
		if (strncmp(last, kinds[k].env, el) != 0)
			continue;
		const char *close = strchr(last + el, '}');
		if (!close)
			break;
		/* the segment's own text up to '}' has no generics: safe to cut there */
		int prefix = last > path + 2 ? (int)(last - 2 - path) : 0;
		if (kinds[k].shown)
			snprintf(buf, len, "%.*s%s%s%.*s%s", prefix, path, prefix ? "::" : "",
				 kinds[k].shown, (int)(close - (last + el)), last + el, close);
		else /* async fn: the fn's own path, generics kept */
			snprintf(buf, len, "%.*s%s", prefix, path, close + 1);
		return;
	}
	snprintf(buf, len, "%s", path);
}

bool await_steps__follow(const struct await_step *steps, uint32_t n, uint64_t addr,
			 int (*read)(void *ctx, uint64_t addr, void *buf, size_t len), void *ctx,
			 uint64_t *to, uint64_t *ptr_at)
{
	uint64_t cur = addr, at = 0;

	for (uint32_t k = 0; k < n; k++) {
		cur += steps[k].offset;
		if (steps[k].deref) {
			at = cur;
			if (read(ctx, cur, &cur, sizeof(cur)) || !cur)
				return false;
		}
	}
	*to = cur;
	*ptr_at = at;
	return true;
}

const struct future_state *future__state_of(const struct future *fut, uint64_t discr)
{
	for (uint32_t i = 0; fut->states && i < fut->nr_states; i++)
		if (fut->states[i].discr == discr)
			return &fut->states[i];
	return NULL;
}
