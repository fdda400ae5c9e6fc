// SPDX-License-Identifier: GPL-2.0
/*
 * pprof writer: one `perftools.profiles.Profile` message, uncompressed (pprof reads
 * it as is; `gzip` it for tools that insist). Field numbers are those of
 * github.com/google/pprof proto/profile.proto, cited where each is written; the
 * encoder is protobuf.h's (no protobuf C runtime is worth a dependency for one
 * message). Layout and choices: docs/profile-formats.md.
 *
 * - sample_type: samples/count and cpu/nanoseconds (on-CPU samples x period);
 *   when the profile has off-CPU stacks, also switches/count and off_cpu/nanoseconds
 *   (time blocked). Every sample has all values, the ones of the other state 0, so
 *   `-sample_index=off_cpu` shows only off-CPU time and on/off never add up; each
 *   sample also has the label cpu_state = on-cpu | off-cpu.
 * - location ids leaf first (pprof's convention; our stacks are root first).
 * - one Location per distinct physical frame: a frame and the frames inlined into
 *   it (pframe.inlined, same pc, following it towards the leaf) share a Location
 *   whose `line`s list the innermost inlined function first and the caller last, as
 *   pprof expects; synthetic frames ("[runtime]", ...) are locations of their own at
 *   address 0 without a mapping.
 * - Function per distinct (name, file): system_name is the display name too (the
 *   profile carries no linkage names); start_line is left 0 (unknown: a frame's line
 *   is the sampled line, not where its function starts).
 * - one Mapping per module, spanning the sampled addresses in it (the profile does
 *   not keep the real mapping bounds), with has_functions/filenames/line_numbers/
 *   inline_frames set: everything is already symbolized.
 */
#include "export/profile_export.h"
#include "export/protobuf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/hashmap.h"
#include "lib/strpool.h"

/* Buffered output is written out once it holds this much. */
#define FLUSH_BYTES (64 * 1024)

/* A Location: frames[0] is the physical frame, the rest are inlined into it. */
struct location {
	const struct pframe *const *frames;
	uint32_t nframes;
	uint64_t mapping_id; /* 0: none */
	uint32_t next;	     /* next location id with the same hash, 0: none */
};

struct mapping {
	uint64_t filename; /* string index */
	uint64_t start, limit;
	bool has_files;
};

struct function {
	uint64_t name, filename; /* string indices */
};

struct pprof {
	FILE *out;
	struct pb buf;
	int err;

	struct strpool pool;
	struct u64_map string_index; /* interned pointer -> index */
	const char **strings;
	size_t nstrings, cap_strings;

	struct u64_map function_ids; /* name index << 32 | file index -> id */
	struct function *functions;
	size_t nfunctions, cap_functions;

	struct u64_map location_by_hash; /* hash of the frame pointers -> first id */
	struct location *locations;	 /* id - 1 */
	size_t nlocations, cap_locations;

	struct u64_map mapping_ids; /* module string index -> id */
	struct mapping *mappings;
	size_t nmappings, cap_mappings;

	uint64_t *stack_ids; /* scratch: one stack's location ids, root first */
	size_t cap_stack_ids;
};

static void set_error(struct pprof *w, int err)
{
	if (!w->err)
		w->err = err;
}

/* Grows *array (of size elements) to hold n + 1; false on ENOMEM. */
static bool reserve(struct pprof *w, void **array, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return true;
	size_t ncap = *cap ? *cap * 2 : 64;
	void *a = ncap > SIZE_MAX / size ? NULL : realloc(*array, ncap * size);
	if (!a) {
		set_error(w, -ENOMEM);
		return false;
	}
	*array = a;
	*cap = ncap;
	return true;
}

/* Index of s in string_table (NULL and "" are 0). */
static uint64_t string_id(struct pprof *w, const char *s)
{
	uint64_t index;

	if (!s || !*s || w->err)
		return 0;
	const char *interned = strpool__intern(&w->pool, s);
	if (!interned) {
		set_error(w, -ENOMEM);
		return 0;
	}
	if (u64_map__get(&w->string_index, (uintptr_t)interned, &index))
		return index;
	if (!reserve(w, (void **)&w->strings, &w->cap_strings, w->nstrings, sizeof(*w->strings)))
		return 0;
	index = w->nstrings;
	w->strings[w->nstrings++] = interned;
	if (u64_map__set(&w->string_index, (uintptr_t)interned, index))
		set_error(w, -ENOMEM);
	return index;
}

static uint64_t function_id(struct pprof *w, const struct pframe *f)
{
	uint64_t name = string_id(w, f->name), file = string_id(w, f->file), id;

	if (w->err)
		return 0;
	if (name > UINT32_MAX || file > UINT32_MAX) {
		set_error(w, -E2BIG);
		return 0;
	}
	if (u64_map__get(&w->function_ids, name << 32 | file, &id))
		return id;
	if (!reserve(w, (void **)&w->functions, &w->cap_functions, w->nfunctions,
		     sizeof(*w->functions)))
		return 0;
	w->functions[w->nfunctions++] = (struct function){name, file};
	id = w->nfunctions;
	if (u64_map__set(&w->function_ids, name << 32 | file, id))
		set_error(w, -ENOMEM);
	return id;
}

static uint64_t mapping_id(struct pprof *w, const struct pframe *f)
{
	uint64_t module, id;

	if (!f->module || !*f->module)
		return 0;
	module = string_id(w, f->module);
	if (w->err)
		return 0;
	if (!u64_map__get(&w->mapping_ids, module, &id)) {
		if (!reserve(w, (void **)&w->mappings, &w->cap_mappings, w->nmappings,
			     sizeof(*w->mappings)))
			return 0;
		w->mappings[w->nmappings++] =
		    (struct mapping){.filename = module, .start = UINT64_MAX, .limit = 0};
		id = w->nmappings;
		if (u64_map__set(&w->mapping_ids, module, id))
			set_error(w, -ENOMEM);
	}
	struct mapping *m = &w->mappings[id - 1];
	if (f->addr < m->start)
		m->start = f->addr;
	if (f->addr >= m->limit)
		m->limit = f->addr == UINT64_MAX ? UINT64_MAX : f->addr + 1;
	if (f->file)
		m->has_files = true;
	return id;
}

static uint64_t hash_frames(const struct pframe *const *frames, uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (uint32_t i = 0; i < n; i++) {
		h ^= (uintptr_t)frames[i];
		h *= 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h == UINT64_MAX ? 0 : h;
}

/* The Location of frames[0..n) (a physical frame and what is inlined into it). */
static uint64_t location_id(struct pprof *w, const struct pframe *const *frames, uint32_t n)
{
	uint64_t h = hash_frames(frames, n), first = 0;

	if (w->err)
		return 0;
	u64_map__get(&w->location_by_hash, h, &first);
	for (uint64_t id = first; id; id = w->locations[id - 1].next) {
		const struct location *l = &w->locations[id - 1];
		if (l->nframes == n && !memcmp(l->frames, frames, n * sizeof(*frames)))
			return id;
	}
	if (!reserve(w, (void **)&w->locations, &w->cap_locations, w->nlocations,
		     sizeof(*w->locations)))
		return 0;
	struct location *l = &w->locations[w->nlocations++];
	*l = (struct location){frames, n, mapping_id(w, frames[0]), (uint32_t)first};
	for (uint32_t i = 0; i < n; i++)
		function_id(w, frames[i]); /* string and function ids before the end */
	if (w->nlocations > UINT32_MAX)
		set_error(w, -E2BIG);
	if (u64_map__set(&w->location_by_hash, h, w->nlocations))
		set_error(w, -ENOMEM);
	return w->nlocations;
}

/* frames[i + 1] is inlined into frames[i] (the same physical frame, one pc). */
static bool inlined_into(const struct pframe *caller, const struct pframe *callee)
{
	return callee->inlined && caller->addr && callee->addr == caller->addr;
}

static void maybe_flush(struct pprof *w)
{
	if (w->buf.len >= FLUSH_BYTES) {
		int err = pb__flush(&w->buf, w->out);
		if (err)
			set_error(w, err);
	}
}

/* Profile.sample (2): Sample */
static void write_sample(struct pprof *w, const struct pstack *s, uint64_t period, bool with_offcpu,
			 uint64_t state_key, uint64_t on, uint64_t off)
{
	size_t n = 0;

	for (uint32_t i = 0; i < s->nframes;) {
		uint32_t len = 1;
		while (i + len < s->nframes && inlined_into(s->frames[i], s->frames[i + len]))
			len++;
		if (!reserve(w, (void **)&w->stack_ids, &w->cap_stack_ids, n,
			     sizeof(*w->stack_ids)))
			return;
		w->stack_ids[n++] = location_id(w, s->frames + i, len);
		i += len;
	}
	if (w->err)
		return;
	struct pb *b = &w->buf;
	pb__begin(b, 2);
	pb__begin(b, 1); /* location_id: packed, leaf first */
	for (size_t i = n; i-- > 0;)
		pb__varint(b, w->stack_ids[i]);
	pb__end(b);
	pb__begin(b, 2); /* value: packed, one per sample_type */
	pb__varint(b, s->offcpu ? 0 : s->samples);
	pb__varint(b, s->offcpu ? 0 : s->weight * period);
	if (with_offcpu) {
		pb__varint(b, s->offcpu ? s->samples : 0);
		pb__varint(b, s->offcpu ? s->weight : 0);
	}
	pb__end(b);
	pb__begin(b, 3);		      /* label: Label */
	pb__uint(b, 1, state_key);	      /* key */
	pb__uint(b, 2, s->offcpu ? off : on); /* str */
	pb__end(b);
	pb__end(b);
	maybe_flush(w);
}

/* Profile.sample_type (1) or period_type (11): ValueType */
static void write_value_type(struct pprof *w, uint32_t field, const char *type, const char *unit)
{
	uint64_t t = string_id(w, type), u = string_id(w, unit);

	pb__begin(&w->buf, field);
	pb__uint(&w->buf, 1, t); /* type */
	pb__uint(&w->buf, 2, u); /* unit */
	pb__end(&w->buf);
}

static void write_comment(struct pprof *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Profile.comment (13): a string index */
static void write_comment(struct pprof *w, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	pb__uint(&w->buf, 13, string_id(w, text));
}

static uint64_t realtime_offset(void)
{
	struct timespec mono, real;

	if (clock_gettime(CLOCK_MONOTONIC, &mono) || clock_gettime(CLOCK_REALTIME, &real))
		return 0;
	return ((uint64_t)real.tv_sec - (uint64_t)mono.tv_sec) * 1000000000ULL +
	       (uint64_t)real.tv_nsec - (uint64_t)mono.tv_nsec;
}

static void write_header(struct pprof *w, const struct profile_data *p, uint64_t period,
			 bool with_offcpu)
{
	struct pb *b = &w->buf;

	write_value_type(w, 1, "samples", "count");
	write_value_type(w, 1, "cpu", "nanoseconds");
	if (with_offcpu) {
		write_value_type(w, 1, "switches", "count");
		write_value_type(w, 1, "off_cpu", "nanoseconds");
	}
	pb__uint(b, 14, string_id(w, "cpu")); /* default_sample_type */
	if (p->start_ns)
		pb__uint(b, 9, p->start_ns + realtime_offset()); /* time_nanos: wall clock */
	if (p->end_ns > p->start_ns)
		pb__uint(b, 10, p->end_ns - p->start_ns); /* duration_nanos */
	write_value_type(w, 11, "cpu", "nanoseconds");	  /* period_type */
	pb__uint(b, 12, period);			  /* period */

	write_comment(w, "asyncbpf profile of %s (pid %" PRIu32 ")",
		      p->process_name ? p->process_name : "?", p->pid);
	write_comment(w, "event %s at %" PRIu32 " Hz", p->event ? p->event : "?", p->freq_hz);
	write_comment(w, "dropped samples: %" PRIu64 " (ring buffer full)", p->dropped);
	write_comment(w, "unwind failed: %" PRIu64 " samples", p->unwind_failed);
	write_comment(w,
		      "cut short: %" PRIu64 " samples (the %" PRIu32
		      "-byte stack copy ended before the stack did: [stack cut short])",
		      p->cut_short, p->stack_size);
	if (with_offcpu || p->offcpu_lost)
		write_comment(w, "off-CPU blocks lost: %" PRIu64 " (%" PRIu64 " ns)",
			      p->offcpu_lost, p->offcpu_lost_ns);
}

/* Profile.location (4): Location, with its lines innermost first */
static void write_location(struct pprof *w, uint64_t id, const struct location *l)
{
	struct pb *b = &w->buf;

	pb__begin(b, 4);
	pb__uint(b, 1, id); /* id */
	if (l->mapping_id)
		pb__uint(b, 2, l->mapping_id); /* mapping_id */
	if (l->frames[0]->addr)
		pb__uint(b, 3, l->frames[0]->addr); /* address */
	for (uint32_t i = l->nframes; i-- > 0;) {
		const struct pframe *f = l->frames[i];
		pb__begin(b, 4);		   /* line: Line */
		pb__uint(b, 1, function_id(w, f)); /* function_id */
		if (f->line)
			pb__uint(b, 2, f->line); /* line */
		pb__end(b);
	}
	pb__end(b);
}

static void write_tables(struct pprof *w)
{
	struct pb *b = &w->buf;

	for (size_t i = 0; i < w->nlocations && !w->err; i++) {
		write_location(w, i + 1, &w->locations[i]);
		maybe_flush(w);
	}
	for (size_t i = 0; i < w->nfunctions && !w->err; i++) {
		pb__begin(b, 5);		      /* function: Function */
		pb__uint(b, 1, i + 1);		      /* id */
		pb__uint(b, 2, w->functions[i].name); /* name */
		pb__uint(b, 3, w->functions[i].name); /* system_name */
		if (w->functions[i].filename)
			pb__uint(b, 4, w->functions[i].filename); /* filename */
		pb__end(b);
		maybe_flush(w);
	}
	for (size_t i = 0; i < w->nmappings && !w->err; i++) {
		const struct mapping *m = &w->mappings[i];
		pb__begin(b, 3);	      /* mapping: Mapping */
		pb__uint(b, 1, i + 1);	      /* id */
		pb__uint(b, 2, m->start);     /* memory_start */
		pb__uint(b, 3, m->limit);     /* memory_limit */
		pb__uint(b, 5, m->filename);  /* filename */
		pb__uint(b, 7, 1);	      /* has_functions */
		pb__uint(b, 8, m->has_files); /* has_filenames */
		pb__uint(b, 9, m->has_files); /* has_line_numbers */
		pb__uint(b, 10, 1);	      /* has_inline_frames */
		pb__end(b);
	}
	/* string_table (6) last: every index is known by now */
	for (size_t i = 0; i < w->nstrings && !w->err; i++) {
		pb__string(b, 6, w->strings[i]);
		maybe_flush(w);
	}
}

int pprof__write(FILE *out, const struct profile_data *p)
{
	struct pprof w = {.out = out};
	uint64_t period = p->period_ns ? p->period_ns : p->freq_hz ? 1000000000ULL / p->freq_hz : 0;
	bool with_offcpu = p->offcpu;

	strpool__init(&w.pool);
	u64_map__init(&w.string_index);
	u64_map__init(&w.function_ids);
	u64_map__init(&w.location_by_hash);
	u64_map__init(&w.mapping_ids);
	if (reserve(&w, (void **)&w.strings, &w.cap_strings, 0, sizeof(*w.strings)))
		w.strings[w.nstrings++] = ""; /* string_table[0] must be "" */

	for (size_t i = 0; i < p->nstacks; i++)
		with_offcpu |= p->stacks[i].offcpu;
	write_header(&w, p, period, with_offcpu);
	uint64_t state_key = string_id(&w, "cpu_state");
	uint64_t on = string_id(&w, "on-cpu"), off = string_id(&w, "off-cpu");
	for (size_t i = 0; i < p->nstacks && !w.err; i++)
		write_sample(&w, &p->stacks[i], period, with_offcpu, state_key, on, off);
	if (!w.err)
		write_tables(&w);
	if (!w.err) {
		int err = pb__flush(&w.buf, out);
		set_error(&w, err);
	}
	if (!w.err && fflush(out))
		set_error(&w, errno ? -errno : -EIO); /* ENOSPC says more than EIO */
	else if (!w.err && ferror(out))
		set_error(&w, -EIO);

	pb__free(&w.buf);
	strpool__free(&w.pool);
	u64_map__free(&w.string_index);
	u64_map__free(&w.function_ids);
	u64_map__free(&w.location_by_hash);
	u64_map__free(&w.mapping_ids);
	free(w.strings);
	free(w.functions);
	free(w.locations);
	free(w.mappings);
	free(w.stack_ids);
	return w.err;
}
