// SPDX-License-Identifier: GPL-2.0
/*
 * The Perfetto writer's tracks (perfetto_internal.h): one per thread, declared when
 * first used and again in every new file; one per task with --task-tracks; flows
 * linking a task's own polls otherwise. Layout: docs/trace-formats.md.
 */
#include "export/perfetto_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The thread's track (and its process's, for another pid: a fork), in the current file */
static void declare_thread(struct perfetto_writer *w, struct thread_state *t)
{
	if (t->pid != w->pid)
		perfetto__declare_track(w, process_uuid(t->pid), 0, 3, t->pid, 0, NULL);
	perfetto__declare_track(w, t->uuid, process_uuid(t->pid), 4, t->pid, t->tid, t->name);
	t->declared = true;
}

/* The thread's state, its track declared (with name, when given) before first use. */
struct thread_state *perfetto__get_thread(struct perfetto_writer *w, uint32_t pid, uint32_t tid,
					  const char *name)
{
	uint64_t key = (uint64_t)pid << 32 | tid, index;
	struct thread_state *t;

	if (u64_map__get(&w->thread_index, key, &index)) {
		t = &w->threads[index - 1];
		if (name) { /* named late: declared again, the reader takes the name */
			free(t->name);
			t->name = strdup(name);
			t->declared = false;
		}
		if (!t->declared)
			declare_thread(w, t);
		return t;
	}
	if (w->nr_threads == w->cap_threads) {
		uint32_t cap = w->cap_threads ? w->cap_threads * 2 : 16;
		struct thread_state *n = realloc(w->threads, cap * sizeof(*n));
		if (!n)
			return NULL;
		w->threads = n;
		w->cap_threads = cap;
	}
	if (u64_map__set(&w->thread_index, key, w->nr_threads + 1))
		return NULL;
	t = &w->threads[w->nr_threads];
	*t = (struct thread_state){.pid = pid,
				   .tid = tid,
				   .uuid = make_uuid(UUID_THREAD, w->nr_threads),
				   .sequence = SEQUENCE_FIRST_THREAD + w->nr_threads,
				   .name = name ? strdup(name) : NULL};
	u64_map__init(&t->interned);
	w->nr_threads++;
	declare_thread(w, t);
	return t;
}

/* Drops dead entries (value 0) once they outnumber live ones: memory follows live state. */
static void map_compact(struct perfetto_writer *w, struct u64_map *m, uint64_t live)
{
	struct u64_map fresh;

	if (m->nr_used < 1024 || m->nr_used < 4 * live)
		return;
	u64_map__init(&fresh);
	for (size_t i = 0; i < m->nr_slots; i++) {
		if (m->keys[i] && m->values[i] &&
		    u64_map__set(&fresh, m->keys[i] - 1, m->values[i])) {
			u64_map__free(&fresh);
			set_error(w, -ENOMEM);
			return;
		}
	}
	u64_map__free(m);
	*m = fresh;
}

/*
 * The task's track: a task is (pid, poll fn, self) of the outermost frame. Once its
 * outermost poll is Ready (or panicked, or unwound), a later task at the same address
 * gets a track of its own.
 */
uint64_t perfetto__task_track(struct perfetto_writer *w, const struct trace_poll *p, uint32_t pid)
{
	uint64_t task_self = p->task_self, uuid = 0;
	uint32_t task_poll = p->task_poll;

	if (p->depth == 0 && !task_self) {
		task_self = p->self;
		task_poll = p->poll;
	}
	uint64_t key = hash4(KEY_TASK, pid, task_poll, task_self);
	bool finished =
	    trace_poll__is_task_root(p) && p->result != POLL_PENDING && p->result != POLL_UNKNOWN;
	bool known = u64_map__get(&w->tasks, key, &uuid) && uuid;

	if (!known && finished)
		return 0; /* done in one poll: the thread's track shows all of it */
	if (!known) {
		const struct poll_fn *pf =
		    task_poll < w->m->nr_polls ? &w->m->polls[task_poll] : NULL;
		char track_name[NAME_MAX_LEN + 32];

		perfetto__event_name(w, pf ? (uint32_t)pf->future : TRACE_NO_INDEX, task_poll);
		snprintf(track_name, sizeof(track_name), "%s @ 0x%" PRIx64, w->name, task_self);
		uuid = make_uuid(UUID_TASK, ++w->task_serial);
		perfetto__declare_track(w, uuid, process_uuid(pid), 0, pid, 0, track_name);
		w->live_tasks++;
		if (u64_map__set(&w->tasks, key, uuid))
			set_error(w, -ENOMEM);
	}
	if (finished) {
		if (u64_map__set(&w->tasks, key, 0))
			set_error(w, -ENOMEM);
		w->live_tasks--;
		map_compact(w, &w->tasks, w->live_tasks);
	}
	return uuid;
}

/*
 * Flows link successive polls of one instance: the same self for the same future
 * (two out-of-line copies of one poll fn still poll the same future). The flow ends
 * on the poll that completes it; a future that is Ready at its first poll has none.
 */
void perfetto__assign_flow(struct perfetto_writer *w, struct pending_poll *pp, uint32_t pid)
{
	const struct trace_poll *p = &pp->p;
	bool known = p->future < w->m->nr_futures;
	uint64_t key = hash4(KEY_FLOW, pid, known ? p->future : (1ULL << 32 | p->poll), p->self);
	uint64_t id = 0;
	bool done =
	    p->result == POLL_READY || p->result == POLL_PANICKED || p->result == POLL_TRUNCATED;

	u64_map__get(&w->flows, key, &id);
	if (!id && done)
		return;
	if (!id) {
		id = ++w->next_flow_id;
		w->live_flows++;
	}
	pp->flow_id = id;
	pp->flow_terminates = done;
	if (u64_map__set(&w->flows, key, done ? 0 : id))
		set_error(w, -ENOMEM);
	if (done) {
		w->live_flows--;
		map_compact(w, &w->flows, w->live_flows);
	}
}
