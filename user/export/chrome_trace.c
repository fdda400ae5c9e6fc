// SPDX-License-Identifier: GPL-2.0
/*
 * Chrome trace-event JSON ("JSON Object Format" of the Trace Event Format), streamed
 * one event per line. Times are CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns)
 * written as microseconds with three decimals, so they line up with the Perfetto
 * output of the same run.
 *
 * Flows: when a future instance is polled again, a "s" event at the start of its
 * previous poll (bound to that slice) and an "f" event with "bp":"e" at the start of
 * this one (bound to the enclosing slice, this poll) are written together, so every
 * "s" has its "f" whatever happens later. Each link has its own id: the instance's
 * hash in the high bits, a serial number in the low 32, all below 2^53 (JSON
 * readers parse numbers as doubles).
 *
 * Every string comes from the traced binary: the escaper guarantees valid JSON
 * whatever the bytes (control characters escaped, bytes that are not well-formed
 * UTF-8 become U+FFFD, U+2028/2029 escaped for JavaScript readers).
 */
#include "export/chrome_trace.h"
#include "export/poll_text.h"
#include "lib/syscalls.h"
#include "lib/text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hashmap.h"

#define NAME_MAX_LEN 1024

/* where a future instance was last polled, while it is between two polls */
struct flow_state {
	uint64_t start_ns;
	uint32_t pid, tid;
	uint32_t next_free; /* free list link: index + 1, 0 = end */
};

struct chrome_trace {
	FILE *out;
	const struct model *m;
	uint32_t pid;
	int err;
	bool need_comma;
	struct u64_map flows; /* instance key -> index + 1 into flow_states; 0 = none */
	struct flow_state *flow_states;
	uint32_t nr_flow_states, cap_flow_states, free_flow_states, live_flows;
	uint64_t links, events, max_ts;
	char name[NAME_MAX_LEN];
};

static void set_error(struct chrome_trace *w, int err)
{
	if (!w->err)
		w->err = err;
}

static void write_json_string(FILE *out, const char *str)
{
	json__write_string(out, str ? str : "");
}

/* Nanoseconds as microseconds: "1234.567". */
static void json_us(FILE *out, uint64_t ns)
{
	fprintf(out, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

/* Starts an event: comma, line break, opening brace, phase. */
static void event_begin(struct chrome_trace *w, const char *ph)
{
	fputs(w->need_comma ? ",\n{\"ph\":\"" : "\n{\"ph\":\"", w->out);
	fputs(ph, w->out);
	putc('"', w->out);
	w->need_comma = true;
	w->events++;
}

static void metadata_name(struct chrome_trace *w, const char *what, uint32_t tid, const char *name)
{
	event_begin(w, "M");
	fprintf(w->out,
		",\"name\":\"%s\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"args\":{\"name\":",
		what, w->pid, tid);
	write_json_string(w->out, name);
	fputs("}}", w->out);
}

struct chrome_trace *chrome_trace__new(FILE *out, const struct model *m, uint32_t pid,
				       const char *process_name)
{
	struct chrome_trace *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->out = out;
	w->m = m;
	w->pid = pid;
	u64_map__init(&w->flows);
	fputs("{\"traceEvents\":[", out);
	if (process_name)
		metadata_name(w, "process_name", pid, process_name);
	return w;
}

int chrome_trace__add_thread(struct chrome_trace *w, uint32_t tid, const char *name)
{
	if (w->err)
		return w->err;
	if (name)
		metadata_name(w, "thread_name", tid, name);
	return 0;
}

static const struct future *future_of(const struct chrome_trace *w, uint32_t future)
{
	return future < w->m->nr_futures ? &w->m->futures[future] : NULL;
}

static void arg_state(struct chrome_trace *w, const char *key, const struct future *f,
		      uint64_t discr)
{
	char text[160];

	poll_text__state(f, discr, text, sizeof(text));
	fprintf(w->out, ",\"%s\":", key);
	write_json_string(w->out, text);
}

static void write_poll(struct chrome_trace *w, const struct trace_poll *p, uint32_t pid)
{
	const struct future *f = future_of(w, p->future);
	uint64_t dur = p->end_ns > p->start_ns ? p->end_ns - p->start_ns : 0;

	poll_text__name(w->m, p->future, p->poll, w->name, sizeof(w->name));

	event_begin(w, "X");
	fputs(",\"cat\":\"poll\",\"name\":", w->out);
	write_json_string(w->out, w->name);
	fprintf(w->out, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"ts\":", pid, p->tid);
	json_us(w->out, p->start_ns);
	fputs(",\"dur\":", w->out);
	json_us(w->out, dur);
	fputs(",\"args\":{\"future\":", w->out);
	write_json_string(w->out, poll_text__path(w->m, p->future, p->poll));
	fprintf(w->out, ",\"result\":\"%s\"", poll_result__name(p->result));
	if (p->result == POLL_PENDING &&
	    poll_text__await(w->m, p->future, p->await_index, w->name, sizeof(w->name))) {
		fputs(",\"await\":", w->out);
		write_json_string(w->out, w->name);
	}
	fprintf(w->out, ",\"self\":\"0x%" PRIx64 "\",\"task\":\"0x%" PRIx64 "\"", p->self,
		p->task_self ? p->task_self : p->self);
	if (f && f->has_state && !p->task_mode) { /* task mode measures no state */
		arg_state(w, "state_before", f, p->state_before);
		arg_state(w, "state_after", f, p->state_after);
	}
	if (p->await_stack) {
		fputs(",\"await_stack\":", w->out);
		write_json_string(w->out, p->await_stack);
	}
	fprintf(w->out, ",\"depth\":%u}}", (unsigned)p->depth);
	if (p->start_ns + dur > w->max_ts)
		w->max_ts = p->start_ns + dur;
}

static void flow_event(struct chrome_trace *w, const char *ph, uint64_t id, uint32_t pid,
		       uint32_t tid, uint64_t ts)
{
	event_begin(w, ph);
	fprintf(w->out,
		",\"cat\":\"poll\",\"name\":\"polled again\",\"id\":%" PRIu64 ",\"pid\":%" PRIu32
		",\"tid\":%" PRIu32 ",\"ts\":",
		id, pid, tid);
	json_us(w->out, ts);
	if (ph[0] == 'f')
		fputs(",\"bp\":\"e\"", w->out);
	putc('}', w->out);
}

/* Drops dead entries (value 0) once they outnumber live ones: memory follows live state. */
static void compact_flows(struct chrome_trace *w)
{
	struct u64_map fresh;
	struct u64_map *m = &w->flows;

	if (m->nr_used < 1024 || m->nr_used < 4 * (size_t)w->live_flows)
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

static struct flow_state *flow_alloc(struct chrome_trace *w, uint32_t *index)
{
	if (w->free_flow_states) {
		*index = w->free_flow_states - 1;
		w->free_flow_states = w->flow_states[*index].next_free;
		return &w->flow_states[*index];
	}
	if (w->nr_flow_states == w->cap_flow_states) {
		uint32_t cap = w->cap_flow_states ? w->cap_flow_states * 2 : 64;
		struct flow_state *n = realloc(w->flow_states, cap * sizeof(*n));
		if (!n)
			return NULL;
		w->flow_states = n;
		w->cap_flow_states = cap;
	}
	*index = w->nr_flow_states++;
	return &w->flow_states[*index];
}

/*
 * Links this poll to the previous poll of the same instance (same self, same future:
 * two out-of-line copies of a poll fn still poll one future); forgets the instance
 * once it completes.
 */
static void write_flow(struct chrome_trace *w, const struct trace_poll *p, uint32_t pid)
{
	bool known = future_of(w, p->future) != NULL;
	uint64_t key = hash__mix64(
	    hash__mix64(hash__mix64(pid) ^ (known ? p->future : (1ULL << 32 | p->poll))) ^ p->self);
	uint64_t slot = 0;
	uint32_t index = 0;
	struct flow_state *fs = NULL;
	bool done =
	    p->result == POLL_READY || p->result == POLL_PANICKED || p->result == POLL_TRUNCATED;

	if (key == UINT64_MAX)
		key = 0;
	if (u64_map__get(&w->flows, key, &slot) && slot) {
		index = (uint32_t)slot - 1;
		fs = &w->flow_states[index];
		uint64_t id = (key & 0x1fffff) << 32 | (++w->links & 0xffffffffULL);
		flow_event(w, "s", id, fs->pid, fs->tid, fs->start_ns);
		flow_event(w, "f", id, pid, p->tid, p->start_ns);
	}
	if (done) {
		if (!fs)
			return;
		fs->next_free = w->free_flow_states;
		w->free_flow_states = index + 1;
		w->live_flows--;
		if (u64_map__set(&w->flows, key, 0))
			set_error(w, -ENOMEM);
		compact_flows(w);
		return;
	}
	if (!fs) {
		fs = flow_alloc(w, &index);
		if (!fs || u64_map__set(&w->flows, key, (uint64_t)index + 1)) {
			set_error(w, -ENOMEM);
			return;
		}
		w->live_flows++;
	}
	fs->start_ns = p->start_ns;
	fs->pid = pid;
	fs->tid = p->tid;
	fs->next_free = 0;
}

int chrome_trace__add_block(struct chrome_trace *w, const struct trace_block *b)
{
	uint32_t pid = b->pid ? b->pid : w->pid;
	const char *sys = b->syscall < 0 ? NULL : syscall__name(b->syscall);

	if (w->err)
		return w->err;
	if (b->kind == OFFCPU_TRACER)
		snprintf(w->name, sizeof(w->name), "in asyncbpf's probe (the tracer's cost)");
	else if (b->kind == OFFCPU_PREEMPTED)
		snprintf(w->name, sizeof(w->name), "preempted");
	else if (sys)
		snprintf(w->name, sizeof(w->name), "blocked in %s", sys);
	else
		snprintf(w->name, sizeof(w->name), "blocked");
	event_begin(w, "X");
	fputs(b->kind == OFFCPU_TRACER ? ",\"cat\":\"tracer\",\"name\":"
				       : ",\"cat\":\"blocked\",\"name\":",
	      w->out);
	write_json_string(w->out, w->name);
	fprintf(w->out, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"ts\":", pid, b->tid);
	json_us(w->out, b->start_ns);
	fputs(",\"dur\":", w->out);
	json_us(w->out, b->end_ns - b->start_ns);
	fputs(",\"args\":{\"future\":", w->out);
	write_json_string(w->out, poll_text__path(w->m, b->future, b->poll));
	fprintf(w->out, ",\"syscall\":");
	write_json_string(w->out, sys ? sys : "none");
	fprintf(w->out, ",\"preempted\":%s,\"tracer\":%s,\"depth\":%u}}",
		b->kind == OFFCPU_PREEMPTED ? "true" : "false",
		b->kind == OFFCPU_TRACER ? "true" : "false", (unsigned)b->depth + 1);
	if (b->end_ns > w->max_ts)
		w->max_ts = b->end_ns;
	return w->err;
}

int chrome_trace__add_drop(struct chrome_trace *w, const struct trace_drop *d)
{
	uint32_t pid = d->pid ? d->pid : w->pid;
	char at[400];

	if (w->err)
		return w->err;
	if (d->await_index < 0)
		return 0;
	if (!poll_text__await(w->m, d->future, d->await_index, at, sizeof(at)))
		snprintf(at, sizeof(at), "await %d", (int)d->await_index);
	snprintf(w->name, sizeof(w->name), "cancelled at %s", at);
	event_begin(w, "i");
	fputs(",\"cat\":\"cancel\",\"s\":\"t\",\"name\":", w->out);
	write_json_string(w->out, w->name);
	fprintf(w->out, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"ts\":", pid, d->tid);
	json_us(w->out, d->time_ns);
	fputs(",\"args\":{\"future\":", w->out);
	write_json_string(w->out, poll_text__path(w->m, d->future, d->poll));
	fprintf(w->out, ",\"self\":\"0x%" PRIx64 "\"}}", d->self);
	if (d->time_ns > w->max_ts)
		w->max_ts = d->time_ns;
	return w->err;
}

/* The start of a wake-up arrow: a flow event on the waker's thread at the wake. */
int chrome_trace__add_wake(struct chrome_trace *w, const struct trace_wake *k, uint64_t flow)
{
	uint32_t pid = k->pid ? k->pid : w->pid;

	if (w->err)
		return w->err;
	event_begin(w, "s");
	fprintf(w->out,
		",\"cat\":\"wake\",\"name\":\"woke\",\"id\":%" PRIu64 ",\"pid\":%" PRIu32
		",\"tid\":%" PRIu32 ",\"ts\":",
		flow, pid, k->tid);
	json_us(w->out, k->time_ns);
	fputs("}", w->out);
	return w->err;
}

int chrome_trace__add_poll(struct chrome_trace *w, const struct trace_poll *p)
{
	uint32_t pid = p->pid ? p->pid : w->pid;

	if (w->err)
		return w->err;
	write_poll(w, p, pid);
	if (p->wake_flow) { /* the end of the wake-up's arrow: bound to this poll */
		event_begin(w, "f");
		fprintf(w->out,
			",\"cat\":\"wake\",\"name\":\"woke\",\"bp\":\"e\",\"id\":%" PRIu64
			",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"ts\":",
			p->wake_flow, pid, p->tid);
		json_us(w->out, p->start_ns);
		fputs("}", w->out);
	}
	write_flow(w, p, pid);
	return w->err;
}

int chrome_trace__finish(struct chrome_trace *w, const struct trace_totals *t)
{
	static const struct trace_totals none;
	char name[96];

	if (!t)
		t = &none;
	if (t->dropped)
		snprintf(name, sizeof(name), "asyncbpf: %" PRIu64 " records DROPPED", t->dropped);
	else
		snprintf(name, sizeof(name), "asyncbpf totals");
	event_begin(w, "i");
	fprintf(w->out,
		",\"s\":\"p\",\"cat\":\"asyncbpf\",\"name\":\"%s\",\"pid\":%" PRIu32
		",\"tid\":%" PRIu32 ",\"ts\":",
		name, w->pid, w->pid);
	json_us(w->out, w->max_ts);
	fprintf(w->out,
		",\"args\":{\"polls\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"truncated\":%" PRIu64
		",\"probes_attached\":%" PRIu64 ",\"probes_failed\":%" PRIu64
		",\"duration_ns\":%" PRIu64 "}}",
		t->polls, t->dropped, t->truncated, t->probes_attached, t->probes_failed,
		t->duration_ns);

	fprintf(w->out,
		"\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"tool\":\"asyncbpf\","
		"\"clock\":\"CLOCK_MONOTONIC\",\"polls\":%" PRIu64 ",\"dropped\":%" PRIu64
		",\"truncated\":%" PRIu64 ",\"probes_attached\":%" PRIu64
		",\"probes_failed\":%" PRIu64 ",\"duration_ns\":%" PRIu64 ",\"events\":%" PRIu64
		",\"lossless\":%s}}\n",
		t->polls, t->dropped, t->truncated, t->probes_attached, t->probes_failed,
		t->duration_ns, w->events, t->dropped ? "false" : "true");
	if (fflush(w->out) || ferror(w->out))
		set_error(w, -EIO);
	return w->err;
}

void chrome_trace__free(struct chrome_trace *w)
{
	if (!w)
		return;
	u64_map__free(&w->flows);
	free(w->flow_states);
	free(w);
}
