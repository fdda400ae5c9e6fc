// SPDX-License-Identifier: GPL-2.0
/*
 * Perfetto trace of a profile's samples, in the format of traced_perf (Perfetto's
 * own perf_event sampler), so ui.perfetto.dev shows each thread's samples on its
 * timeline and a flame chart of any selected region. Field numbers are Perfetto's
 * (protos/perfetto/trace/: trace_packet.proto; profiling/profile_packet.proto:
 * PerfSample; profiling/profile_common.proto: InternedString, Mapping, Frame,
 * Callstack; interned_data/interned_data.proto; track_event/track_descriptor.proto,
 * process_descriptor.proto, thread_descriptor.proto, track_event.proto,
 * debug_annotation.proto), cited where written; the encoder is protobuf.h's.
 *
 * One packet sequence. First the clock snapshot (perfetto__clock_snapshot: times are
 * CLOCK_MONOTONIC as recorded), then a TrackDescriptor for the process and for every
 * thread (named from profile_data.threads), then one PerfSample per sample in the
 * order given, each packet carrying the interned data (function names, mappings,
 * source paths, frames, its callstack) that no earlier packet defined. Memory:
 * the tables of what was interned, bounded by the profile's distinct frames and
 * stacks, never by the number of samples.
 *
 * Off-CPU samples get the synthetic root frame "[off-CPU]" so that a selection's
 * flame chart never mixes them with on-CPU ones; PerfSample has no weight, so the
 * time blocked is not shown (the pprof and SVG outputs have it).
 *
 * Without samples (profile_data.samples NULL) the aggregate stacks are written
 * instead, as one instant event per stack on the process track at start_ns, with
 * the stack and its counts as debug annotations (there is no time line to show);
 * so are, after the samples, the stacks no kept sample refers to (off-CPU stacks,
 * summed in the kernel: their blocks have no time of their own). Either way a last
 * instant event carries the drop, unwind-failure, cut-short and lost counts.
 */
#include "export/perfetto.h"
#include "export/profile_export.h"
#include "export/protobuf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hashmap.h"

#define SEQUENCE_ID		      1
#define SEQ_INCREMENTAL_STATE_CLEARED 1 /* TracePacket.SequenceFlags */
#define SEQ_NEEDS_INCREMENTAL_STATE   2
#define BUILTIN_CLOCK_MONOTONIC	      3 /* common/builtin_clock.proto */
#define CPU_MODE_USER		      2 /* Profiling.CpuMode.MODE_USER */
#define TYPE_INSTANT		      3 /* TrackEvent.Type */
#define OFFCPU_ROOT		      "[off-CPU]"
#define SYNTHETIC_MAPPING	      "[asyncbpf]"
#define STACK_TEXT_MAX		      (64 * 1024)

struct mapping_range {
	uint64_t start, end;
};

struct writer {
	FILE *out;
	const struct profile_data *p;
	struct pb b;
	int err;
	bool first;

	/* interned: key -> iid; iids count from 1 in each table */
	struct u64_map names;	/* name pointer -> function_names iid */
	struct u64_map paths;	/* file pointer -> source_paths iid */
	struct u64_map modules; /* module pointer (0: synthetic) -> mapping iid */
	struct u64_map frames;	/* pframe pointer -> frames iid */
	uint64_t next_name, next_path, next_module, next_frame;
	uint64_t offcpu_frame;	 /* the "[off-CPU]" frame's iid, 0 until interned */
	uint8_t *stack_interned; /* by stack index */
	struct u64_map ranges;	 /* module pointer -> index into range */
	struct mapping_range *range;
	size_t nranges;
	/* the interned data of the packet being built, written before its sample */
	struct pb names_buf, paths_buf, mappings_buf, frames_buf, callstacks_buf;
};

static void set_error(struct writer *w, int err)
{
	if (!w->err)
		w->err = err;
}

static void packet_begin(struct writer *w, bool needs_state)
{
	struct pb *b = &w->b;
	uint32_t flags = needs_state ? SEQ_NEEDS_INCREMENTAL_STATE : 0;

	pb__begin(b, 1);	      /* Trace.packet: TracePacket */
	pb__uint(b, 10, SEQUENCE_ID); /* trusted_packet_sequence_id */
	if (w->first) {
		pb__uint(b, 87, 1); /* first_packet_on_sequence */
		flags |= SEQ_INCREMENTAL_STATE_CLEARED;
		w->first = false;
	}
	if (flags)
		pb__uint(b, 13, flags); /* sequence_flags */
}

static void packet_timestamp(struct writer *w, uint64_t ts)
{
	pb__uint(&w->b, 8, ts);			      /* timestamp */
	pb__uint(&w->b, 58, BUILTIN_CLOCK_MONOTONIC); /* timestamp_clock_id */
}

static void packet_end(struct writer *w)
{
	pb__end(&w->b);
	int err = pb__flush(&w->b, w->out);
	if (err)
		set_error(w, err);
}

static uint64_t process_uuid(uint32_t pid)
{
	return 0x70726f6300000000ULL | pid; /* "proc" << 32: apart from thread uuids */
}

static uint64_t thread_uuid(uint32_t pid, uint32_t tid)
{
	uint64_t h = ((uint64_t)pid << 32 | tid) * 0x9e3779b97f4a7c15ULL;

	return h >> 1 | 1ULL << 63; /* top bit set: never a process uuid */
}

/* TracePacket.track_descriptor (60): TrackDescriptor for a process or a thread */
static void declare_track(struct writer *w, uint32_t pid, uint32_t tid, bool thread,
			  const char *name)
{
	struct pb *b = &w->b;

	packet_begin(w, false);
	pb__begin(b, 60);
	pb__uint(b, 1, thread ? thread_uuid(pid, tid) : process_uuid(pid)); /* uuid */
	if (thread)
		pb__uint(b, 5, process_uuid(pid)); /* parent_uuid */
	pb__begin(b, thread ? 4 : 3); /* thread: ThreadDescriptor, process: ProcessDescriptor */
	pb__uint(b, 1, pid);	      /* pid */
	if (thread)
		pb__uint(b, 2, tid); /* tid */
	if (name)		     /* thread_name, process_name */
		pb__string(b, thread ? 5 : 6, name);
	pb__end(b);
	pb__end(b);
	packet_end(w);
}

/* Declares the process, every named thread, then every other (pid, tid) sampled. */
static void declare_tracks(struct writer *w)
{
	const struct profile_data *p = w->p;
	struct u64_map seen;
	uint64_t v;

	u64_map__init(&seen);
	declare_track(w, p->pid, 0, false, p->process_name);
	for (size_t i = 0; i < p->nthreads && !w->err; i++) {
		uint64_t key = (uint64_t)p->pid << 32 | p->threads[i].tid;
		if (u64_map__set(&seen, key, 1))
			set_error(w, -ENOMEM);
		declare_track(w, p->pid, p->threads[i].tid, true, p->threads[i].name);
	}
	for (size_t i = 0; p->samples && i < p->nsamples && !w->err; i++) {
		const struct psample *s = &p->samples[i];
		uint32_t pid = s->pid ? s->pid : p->pid;
		if (u64_map__get(&seen, (uint64_t)pid << 32 | s->tid, &v))
			continue;
		if (!u64_map__get(&seen, (uint64_t)pid << 32 | UINT32_MAX, &v) && pid != p->pid) {
			declare_track(w, pid, 0, false, NULL); /* another process (a fork) */
			if (u64_map__set(&seen, (uint64_t)pid << 32 | UINT32_MAX, 1))
				set_error(w, -ENOMEM);
		}
		if (u64_map__set(&seen, (uint64_t)pid << 32 | s->tid, 1))
			set_error(w, -ENOMEM);
		declare_track(w, pid, s->tid, true, NULL);
	}
	u64_map__free(&seen);
}

/* ---- interning ---- */

/* The iid of key in map, *fresh when it was just assigned. */
static uint64_t intern(struct writer *w, struct u64_map *map, uint64_t key, uint64_t *next,
		       bool *fresh)
{
	uint64_t iid;

	*fresh = !u64_map__get(map, key, &iid);
	if (*fresh) {
		iid = ++*next;
		if (u64_map__set(map, key, iid))
			set_error(w, -ENOMEM);
	}
	return iid;
}

/* InternedString (profile_common.proto): iid 1, str 2 */
static void interned_string(struct pb *b, uint32_t field, uint64_t iid, const char *s)
{
	pb__begin(b, field);
	pb__uint(b, 1, iid);
	pb__string(b, 2, s);
	pb__end(b);
}

static uint64_t function_name_iid(struct writer *w, const char *name)
{
	bool fresh;
	uint64_t iid = intern(w, &w->names, (uintptr_t)name, &w->next_name, &fresh);

	if (fresh) /* InternedData.function_names */
		interned_string(&w->names_buf, 5, iid, name);
	return iid;
}

/* Module ranges: the span of the sampled addresses in each (the profile has no more). */
static int collect_ranges(struct writer *w)
{
	const struct profile_data *p = w->p;
	uint64_t index;

	for (size_t i = 0; i < p->nstacks; i++) {
		for (uint32_t j = 0; j < p->stacks[i].nframes; j++) {
			const struct pframe *f = p->stacks[i].frames[j];
			if (!f->module)
				continue;
			if (!u64_map__get(&w->ranges, (uintptr_t)f->module, &index)) {
				struct mapping_range *r =
				    realloc(w->range, (w->nranges + 1) * sizeof(*r));
				if (!r)
					return -ENOMEM;
				w->range = r;
				index = w->nranges++;
				r[index] = (struct mapping_range){UINT64_MAX, 0};
				if (u64_map__set(&w->ranges, (uintptr_t)f->module, index))
					return -ENOMEM;
			}
			struct mapping_range *r = &w->range[index];
			if (f->addr < r->start)
				r->start = f->addr;
			if (f->addr >= r->end)
				r->end = f->addr == UINT64_MAX ? f->addr : f->addr + 1;
		}
	}
	return 0;
}

/* InternedData.mappings (19): Mapping; its path in mapping_paths (17) */
static uint64_t mapping_iid(struct writer *w, const char *module, uint64_t *start)
{
	bool fresh;
	uint64_t iid = intern(w, &w->modules, (uintptr_t)module, &w->next_module, &fresh);
	struct mapping_range r = {0, 1};
	uint64_t index;

	if (module && u64_map__get(&w->ranges, (uintptr_t)module, &index))
		r = w->range[index];
	*start = r.start;
	if (fresh) {
		struct pb *b = &w->mappings_buf;
		interned_string(&w->mappings_buf, 17, iid, module ? module : SYNTHETIC_MAPPING);
		pb__begin(b, 19);
		pb__uint(b, 1, iid);	 /* iid */
		pb__uint(b, 4, r.start); /* start */
		pb__uint(b, 5, r.end);	 /* end */
		pb__uint(b, 7, iid);	 /* path_string_ids: the mapping_paths entry, same iid */
		pb__end(b);
	}
	return iid;
}

/* InternedData.frames (6): Frame */
static uint64_t frame_iid(struct writer *w, const struct pframe *f)
{
	bool fresh;
	uint64_t iid = intern(w, &w->frames, (uintptr_t)f, &w->next_frame, &fresh);

	if (fresh) {
		uint64_t start, name = function_name_iid(w, f->name);
		uint64_t mapping = mapping_iid(w, f->module, &start), path = 0;
		struct pb *b = &w->frames_buf;
		if (f->file) {
			path = intern(w, &w->paths, (uintptr_t)f->file, &w->next_path, &fresh);
			if (fresh) /* InternedData.source_paths */
				interned_string(&w->paths_buf, 18, path, f->file);
		}
		pb__begin(b, 6);
		pb__uint(b, 1, iid);				 /* iid */
		pb__uint(b, 2, name);				 /* function_name_id */
		pb__uint(b, 3, mapping);			 /* mapping_id */
		pb__uint(b, 4, f->module ? f->addr - start : 0); /* rel_pc */
		if (path)
			pb__uint(b, 5, path); /* source_path_iid */
		if (f->line)
			pb__uint(b, 6, f->line); /* line_number */
		pb__end(b);
	}
	return iid;
}

static uint64_t offcpu_frame_iid(struct writer *w)
{
	if (!w->offcpu_frame) {
		uint64_t start, name = function_name_iid(w, OFFCPU_ROOT);
		uint64_t mapping = mapping_iid(w, NULL, &start);
		struct pb *b = &w->frames_buf;
		w->offcpu_frame = ++w->next_frame; /* no pframe: never in the frames map */
		pb__begin(b, 6);
		pb__uint(b, 1, w->offcpu_frame); /* iid */
		pb__uint(b, 2, name);		 /* function_name_id */
		pb__uint(b, 3, mapping);	 /* mapping_id */
		pb__uint(b, 4, 0);		 /* rel_pc */
		pb__end(b);
	}
	return w->offcpu_frame;
}

/* InternedData.callstacks (7): Callstack, iid = stack index + 1, frames root first */
static void intern_stack(struct writer *w, uint32_t index)
{
	const struct pstack *s = &w->p->stacks[index];
	struct pb *b = &w->callstacks_buf;

	if (w->stack_interned[index])
		return;
	w->stack_interned[index] = 1;
	uint64_t first = s->offcpu ? offcpu_frame_iid(w) : 0;
	for (uint32_t i = 0; i < s->nframes; i++)
		frame_iid(w, s->frames[i]); /* defined before the callstack is closed */
	pb__begin(b, 7);
	pb__uint(b, 1, (uint64_t)index + 1); /* iid */
	if (first)
		pb__uint(b, 2, first); /* frame_ids: unpacked, as proto2 declares it */
	for (uint32_t i = 0; i < s->nframes; i++)
		pb__uint(b, 2, frame_iid(w, s->frames[i]));
	pb__end(b);
}

/* TracePacket.interned_data (12) from the pending buffers, in dependency order. */
static void flush_interned(struct writer *w)
{
	struct pb *bufs[] = {&w->names_buf, &w->paths_buf, &w->mappings_buf, &w->frames_buf,
			     &w->callstacks_buf};
	bool any = false;

	for (size_t i = 0; i < 5; i++) {
		any |= bufs[i]->len > 0;
		if (bufs[i]->oom)
			set_error(w, -ENOMEM);
	}
	if (!any)
		return;
	pb__begin(&w->b, 12);
	for (size_t i = 0; i < 5; i++) {
		pb__bytes(&w->b, bufs[i]->data, bufs[i]->len);
		pb__reset(bufs[i]);
	}
	pb__end(&w->b);
}

/* ---- packets ---- */

/* TracePacket.perf_sample (66): PerfSample */
static void write_sample(struct writer *w, const struct psample *s)
{
	const struct profile_data *p = w->p;
	struct pb *b = &w->b;

	if (s->stack >= p->nstacks)
		return; /* not a stack of this profile: nothing to show it with */
	intern_stack(w, s->stack);
	packet_begin(w, true);
	packet_timestamp(w, s->time_ns);
	flush_interned(w);
	pb__begin(b, 66);
	pb__uint(b, 2, s->pid ? s->pid : p->pid); /* pid */
	pb__uint(b, 3, s->tid);			  /* tid */
	pb__uint(b, 4, (uint64_t)s->stack + 1);	  /* callstack_iid */
	if (!p->stacks[s->stack].offcpu)
		pb__uint(b, 5, CPU_MODE_USER); /* cpu_mode */
	pb__end(b);
	packet_end(w);
}

/* TrackEvent.debug_annotations (4): DebugAnnotation with an inline name (10) */
static void annotation(struct pb *b, const char *name, uint64_t value, const char *string)
{
	pb__begin(b, 4);
	pb__string(b, 10, name); /* name */
	if (string)
		pb__string(b, 6, string); /* string_value */
	else
		pb__uint(b, 3, value); /* uint_value */
	pb__end(b);
}

/* An instant event on the process track: TracePacket.track_event (11): TrackEvent */
static void instant_begin(struct writer *w, uint64_t ts, const char *name)
{
	packet_begin(w, false);
	packet_timestamp(w, ts);
	pb__begin(&w->b, 11);
	pb__uint(&w->b, 9, TYPE_INSTANT);	      /* type */
	pb__uint(&w->b, 11, process_uuid(w->p->pid)); /* track_uuid */
	pb__string(&w->b, 23, name);		      /* name */
}

static void instant_end(struct writer *w)
{
	pb__end(&w->b);
	packet_end(w);
}

/*
 * Aggregate stacks as instant events with their frames as text: every stack without
 * samples, else those no sample referred to (stack_interned: written with a sample).
 */
static void write_aggregate(struct writer *w, char *text)
{
	const struct profile_data *p = w->p;

	for (size_t i = 0; i < p->nstacks && !w->err; i++) {
		const struct pstack *s = &p->stacks[i];
		size_t len = 0;

		if (p->samples && (w->stack_interned[i] || !s->samples))
			continue;
		text[0] = '\0';
		for (uint32_t j = 0; j < s->nframes && len < STACK_TEXT_MAX - 1; j++) {
			int n = snprintf(text + len, STACK_TEXT_MAX - len, "%s%s", j ? "\n" : "",
					 s->frames[j]->name ? s->frames[j]->name : "");
			len = n < 0 ? len : len + (size_t)n;
		}
		if (len >= STACK_TEXT_MAX - 1) /* cut: say so rather than end mid-name */
			strcpy(text + STACK_TEXT_MAX - 5, "\n...");
		instant_begin(w, p->start_ns,
			      s->nframes ? s->frames[s->nframes - 1]->name : "(empty stack)");
		annotation(&w->b, "stack", 0, text);
		annotation(&w->b, "cpu_state", 0, s->offcpu ? "off-cpu" : "on-cpu");
		annotation(&w->b, "samples", s->samples, NULL);
		annotation(&w->b, s->offcpu ? "off_cpu_ns" : "weight", s->weight, NULL);
		instant_end(w);
	}
}

static void write_totals(struct writer *w)
{
	const struct profile_data *p = w->p;
	uint64_t on = 0, off = 0, ts = p->end_ns;
	char name[128];

	for (size_t i = 0; i < p->nstacks; i++)
		*(p->stacks[i].offcpu ? &off : &on) += p->stacks[i].samples;
	for (size_t i = 0; p->samples && i < p->nsamples; i++)
		if (p->samples[i].time_ns > ts)
			ts = p->samples[i].time_ns;
	snprintf(name, sizeof(name),
		 "asyncbpf profile: %" PRIu64 " samples DROPPED, %" PRIu64 " unwind failed",
		 p->dropped, p->unwind_failed);
	if (p->cut_short)
		snprintf(name + strlen(name), sizeof(name) - strlen(name),
			 ", %" PRIu64 " cut short", p->cut_short);
	if (p->offcpu_lost)
		snprintf(name + strlen(name), sizeof(name) - strlen(name),
			 ", %" PRIu64 " off-CPU blocks lost", p->offcpu_lost);
	instant_begin(w, ts,
		      p->dropped || p->unwind_failed || p->cut_short || p->offcpu_lost
			  ? name
			  : "asyncbpf profile totals");
	annotation(&w->b, "event", 0, p->event ? p->event : "?");
	annotation(&w->b, "freq_hz", p->freq_hz, NULL);
	annotation(&w->b, "on_cpu_samples", on, NULL);
	annotation(&w->b, "off_cpu_samples", off, NULL);
	annotation(&w->b, "dropped", p->dropped, NULL);
	annotation(&w->b, "unwind_failed", p->unwind_failed, NULL);
	annotation(&w->b, "cut_short", p->cut_short, NULL);
	annotation(&w->b, "stack_size", p->stack_size, NULL);
	annotation(&w->b, "offcpu_lost", p->offcpu_lost, NULL);
	annotation(&w->b, "offcpu_lost_ns", p->offcpu_lost_ns, NULL);
	annotation(&w->b, "duration_ns", p->end_ns > p->start_ns ? p->end_ns - p->start_ns : 0,
		   NULL);
	instant_end(w);
}

int perfetto_profile__write(FILE *out, const struct profile_data *p)
{
	struct writer w = {.out = out, .p = p, .first = true};
	struct u64_map *maps[] = {&w.names, &w.paths, &w.modules, &w.frames, &w.ranges};
	char *text = NULL;

	for (size_t i = 0; i < 5; i++)
		u64_map__init(maps[i]);
	w.stack_interned = calloc(p->nstacks + 1, 1);
	text = malloc(STACK_TEXT_MAX);
	if (!w.stack_interned || !text)
		set_error(&w, -ENOMEM);
	if (!w.err)
		set_error(&w, collect_ranges(&w));

	if (!w.err) {
		packet_begin(&w, false);
		perfetto__clock_snapshot(&w.b);
		packet_end(&w);
		declare_tracks(&w);
	}
	if (p->samples)
		for (size_t i = 0; i < p->nsamples && !w.err; i++)
			write_sample(&w, &p->samples[i]);
	if (!w.err)
		write_aggregate(&w, text);
	if (!w.err)
		write_totals(&w);
	if (!w.err && (fflush(out) || ferror(out)))
		set_error(&w, -EIO);

	for (size_t i = 0; i < 5; i++)
		u64_map__free(maps[i]);
	pb__free(&w.b);
	pb__free(&w.names_buf);
	pb__free(&w.paths_buf);
	pb__free(&w.mappings_buf);
	pb__free(&w.frames_buf);
	pb__free(&w.callstacks_buf);
	free(w.stack_interned);
	free(w.range);
	free(text);
	return w.err;
}
