// SPDX-License-Identifier: GPL-2.0
/*
 * pprof writer: the hand-made profile of profile_model.h written into memory and
 * read back with pb_reader.h (no code shared with the encoder) into the Profile's
 * tables, then checked against the hand-made input: sums per sample type, location
 * ids leaf first, inlined frames sharing a Location, Function and Location dedup,
 * string_table[0] == "", hostile and huge names, the empty profile, write errors.
 *
 * `test_pprof --write FILE` only writes the sample profile (tests/test_profile_writers.py).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pb_reader.h"
#include "export/profile_export.h"
#include "profile_model.h"
#include "testlib.h"

#define MAX_ITEMS 64
#define MAX_LINES 8

struct line {
	uint64_t function_id;
	int64_t line;
};

struct location {
	uint64_t id, mapping_id, address;
	struct line lines[MAX_LINES];
	size_t nlines;
};

struct function {
	uint64_t id, name, system_name, filename;
};

struct mapping {
	uint64_t id, start, limit, filename;
	bool has_functions, has_inline_frames;
};

struct sample {
	uint64_t locations[16], values[4];
	size_t nlocations, nvalues;
	uint64_t label_key, label_str;
};

struct decoded {
	char **strings;
	size_t nstrings;
	uint64_t sample_types[4][2];
	size_t nsample_types;
	struct sample samples[MAX_ITEMS];
	size_t nsamples;
	struct location locations[MAX_ITEMS];
	size_t nlocations;
	struct function functions[MAX_ITEMS];
	size_t nfunctions;
	struct mapping mappings[MAX_ITEMS];
	size_t nmappings;
	uint64_t comments[MAX_ITEMS];
	size_t ncomments;
	uint64_t period_type[2], period, duration, time_nanos, default_sample_type;
	bool bad; /* malformed, or more than this decoder holds */
};

static void decode_value_type(const struct pb_field *f, uint64_t out[2], bool *bad)
{
	struct pb_reader r = pb_reader__of(f->data, f->len);
	struct pb_field g;

	while (pb_reader__next(&r, &g))
		if (g.number == 1 || g.number == 2)
			out[g.number - 1] = g.value;
	*bad |= r.bad;
}

static void decode_sample(struct decoded *d, const struct pb_field *f)
{
	struct sample *s = &d->samples[d->nsamples++];
	struct pb_reader r = pb_reader__of(f->data, f->len);
	struct pb_field g;

	while (pb_reader__next(&r, &g)) {
		if (g.number == 1)
			s->nlocations += pb_reader__packed(&g, s->locations + s->nlocations,
							   16 - s->nlocations, &d->bad);
		else if (g.number == 2)
			s->nvalues +=
			    pb_reader__packed(&g, s->values + s->nvalues, 4 - s->nvalues, &d->bad);
		else if (g.number == 3) {
			struct pb_reader lr = pb_reader__of(g.data, g.len);
			struct pb_field h;
			while (pb_reader__next(&lr, &h)) {
				if (h.number == 1)
					s->label_key = h.value;
				else if (h.number == 2)
					s->label_str = h.value;
			}
			d->bad |= lr.bad;
		}
	}
	d->bad |= r.bad || s->nlocations > 16 || s->nvalues > 4;
}

static void decode_location(struct decoded *d, const struct pb_field *f)
{
	struct location *l = &d->locations[d->nlocations++];
	struct pb_reader r = pb_reader__of(f->data, f->len);
	struct pb_field g;

	while (pb_reader__next(&r, &g)) {
		if (g.number == 1)
			l->id = g.value;
		else if (g.number == 2)
			l->mapping_id = g.value;
		else if (g.number == 3)
			l->address = g.value;
		else if (g.number == 4 && l->nlines < MAX_LINES) {
			struct line *ln = &l->lines[l->nlines++];
			struct pb_reader lr = pb_reader__of(g.data, g.len);
			struct pb_field h;
			while (pb_reader__next(&lr, &h)) {
				if (h.number == 1)
					ln->function_id = h.value;
				else if (h.number == 2)
					ln->line = (int64_t)h.value;
			}
			d->bad |= lr.bad;
		}
	}
	d->bad |= r.bad;
}

static void decode_function(struct decoded *d, const struct pb_field *f)
{
	struct function *fn = &d->functions[d->nfunctions++];
	struct pb_reader r = pb_reader__of(f->data, f->len);
	struct pb_field g;

	while (pb_reader__next(&r, &g)) {
		uint64_t *slot = g.number == 1	 ? &fn->id
				 : g.number == 2 ? &fn->name
				 : g.number == 3 ? &fn->system_name
				 : g.number == 4 ? &fn->filename
						 : NULL;
		if (slot)
			*slot = g.value;
	}
	d->bad |= r.bad;
}

static void decode_mapping(struct decoded *d, const struct pb_field *f)
{
	struct mapping *m = &d->mappings[d->nmappings++];
	struct pb_reader r = pb_reader__of(f->data, f->len);
	struct pb_field g;

	while (pb_reader__next(&r, &g)) {
		switch (g.number) {
		case 1: m->id = g.value; break;
		case 2: m->start = g.value; break;
		case 3: m->limit = g.value; break;
		case 5: m->filename = g.value; break;
		case 7: m->has_functions = g.value; break;
		case 10: m->has_inline_frames = g.value; break;
		}
	}
	d->bad |= r.bad;
}

static void decode(struct decoded *d, const char *buf, size_t len)
{
	struct pb_reader r = pb_reader__of(buf, len);
	struct pb_field f;

	memset(d, 0, sizeof(*d));
	while (pb_reader__next(&r, &f)) {
		bool full = (f.number == 1 && d->nsample_types == 4) ||
			    (f.number == 2 && d->nsamples == MAX_ITEMS) ||
			    (f.number == 3 && d->nmappings == MAX_ITEMS) ||
			    (f.number == 4 && d->nlocations == MAX_ITEMS) ||
			    (f.number == 5 && d->nfunctions == MAX_ITEMS) ||
			    (f.number == 13 && d->ncomments == MAX_ITEMS);
		if (full) {
			d->bad = true;
			break;
		}
		switch (f.number) {
		case 1: decode_value_type(&f, d->sample_types[d->nsample_types++], &d->bad); break;
		case 2: decode_sample(d, &f); break;
		case 3: decode_mapping(d, &f); break;
		case 4: decode_location(d, &f); break;
		case 5: decode_function(d, &f); break;
		case 6:
			d->strings = must(realloc(d->strings, (d->nstrings + 1) * sizeof(char *)));
			d->strings[d->nstrings] = must(strndup((const char *)f.data, f.len));
			d->bad |= strlen(d->strings[d->nstrings]) != f.len; /* no NUL inside */
			d->nstrings++;
			break;
		case 9: d->time_nanos = f.value; break;
		case 10: d->duration = f.value; break;
		case 11: decode_value_type(&f, d->period_type, &d->bad); break;
		case 12: d->period = f.value; break;
		case 13: d->comments[d->ncomments++] = f.value; break;
		case 14: d->default_sample_type = f.value; break;
		default: d->bad = true; /* a field this writer never emits */
		}
	}
	d->bad |= r.bad;
}

static void decoded_free(struct decoded *d)
{
	for (size_t i = 0; i < d->nstrings; i++)
		free(d->strings[i]);
	free(d->strings);
}

static const char *str(const struct decoded *d, uint64_t index)
{
	return index < d->nstrings ? d->strings[index] : "(index out of range)";
}

static const struct location *location(const struct decoded *d, uint64_t id)
{
	for (size_t i = 0; i < d->nlocations; i++)
		if (d->locations[i].id == id)
			return &d->locations[i];
	return NULL;
}

static const struct function *function(const struct decoded *d, uint64_t id)
{
	for (size_t i = 0; i < d->nfunctions; i++)
		if (d->functions[i].id == id)
			return &d->functions[i];
	return NULL;
}

/* Name of a location's line (0: innermost), or "(none)". */
static const char *line_name(const struct decoded *d, uint64_t location_id, size_t line)
{
	const struct location *l = location(d, location_id);
	const struct function *f =
	    l && line < l->nlines ? function(d, l->lines[line].function_id) : NULL;
	return f ? str(d, f->name) : "(none)";
}

static void test_profile(void)
{
	struct profile_model m;
	struct decoded d;
	char *buf = NULL;
	size_t len = 0;

	profile_model__build(&m);
	CHECK_EQ_I64(profile_model__write_mem(pprof__write, &m.p, &buf, &len), 0);
	decode(&d, buf, len);
	CHECK(!d.bad);
	CHECK(d.nstrings > 0 && d.strings[0][0] == '\0');

	/* sample types, and the sums of each against the hand-made totals */
	static const char *const types[4][2] = {{"samples", "count"},
						{"cpu", "nanoseconds"},
						{"switches", "count"},
						{"off_cpu", "nanoseconds"}};
	CHECK_EQ_U64(d.nsample_types, 4);
	for (size_t i = 0; i < d.nsample_types; i++) {
		CHECK_STR(str(&d, d.sample_types[i][0]), types[i][0]);
		CHECK_STR(str(&d, d.sample_types[i][1]), types[i][1]);
	}
	CHECK_STR(str(&d, d.default_sample_type), "cpu");
	CHECK_STR(str(&d, d.period_type[0]), "cpu");
	CHECK_STR(str(&d, d.period_type[1]), "nanoseconds");
	CHECK_EQ_U64(d.period, 1000000);
	CHECK_EQ_U64(d.duration, 2000000000);
	CHECK(d.time_nanos > 1000000000ULL * 1500000000ULL); /* wall clock: after 2017 */

	uint64_t sums[4] = {0};
	CHECK_EQ_U64(d.nsamples, 8);
	for (size_t i = 0; i < d.nsamples; i++) {
		CHECK_EQ_U64(d.samples[i].nvalues, 4);
		for (size_t v = 0; v < 4; v++)
			sums[v] += d.samples[i].values[v];
		bool off = m.stacks[i].offcpu;
		CHECK_STR(str(&d, d.samples[i].label_key), "cpu_state");
		CHECK_STR(str(&d, d.samples[i].label_str), off ? "off-cpu" : "on-cpu");
		CHECK_EQ_U64(d.samples[i].values[off ? 2 : 0], m.stacks[i].samples);
		CHECK_EQ_U64(d.samples[i].values[off ? 0 : 2], 0);
	}
	CHECK_EQ_U64(sums[0], 101);
	CHECK_EQ_U64(sums[1], 101 * 1000000ULL);
	CHECK_EQ_U64(sums[2], 6);
	CHECK_EQ_U64(sums[3], 5000000);

	/* S0: leaf first; fetch is inlined into handler: one location, innermost first */
	const struct sample *s0 = &d.samples[0];
	CHECK_EQ_U64(s0->nlocations, 3);
	CHECK_STR(line_name(&d, s0->locations[0], 0), "demo::parse");
	CHECK_STR(line_name(&d, s0->locations[1], 0), "demo::fetch");
	CHECK_STR(line_name(&d, s0->locations[1], 1), "demo::handler");
	CHECK_STR(line_name(&d, s0->locations[2], 0), "[runtime]");
	const struct location *inl = location(&d, s0->locations[1]);
	CHECK(inl && inl->nlines == 2 && inl->address == 0x1000);
	CHECK(inl && inl->lines[0].line == 20 && inl->lines[1].line == 10);
	const struct location *rt = location(&d, s0->locations[2]);
	CHECK(rt && rt->address == 0 && rt->mapping_id == 0 && rt->nlines == 1);

	/* S7: handler' at another pc: fetch there is not inlined; same Function, own Location */
	const struct sample *s7 = &d.samples[7];
	CHECK_EQ_U64(s7->nlocations, 4);
	CHECK_STR(line_name(&d, s7->locations[2], 0), "demo::handler");
	CHECK(s7->locations[0] == s0->locations[0]); /* parse: deduplicated */
	CHECK(s7->locations[3] == s0->locations[2]); /* [runtime] */
	const struct location *h2 = location(&d, s7->locations[2]);
	CHECK(h2 && h2->address == 0x1010 && h2->nlines == 1 && h2->lines[0].line == 12);
	CHECK(h2 && inl && h2->lines[0].function_id == inl->lines[1].function_id);

	/* S2: handler alone (nothing inlined below it) is a Location of its own */
	CHECK_EQ_U64(d.samples[2].nlocations, 3);
	CHECK(d.samples[2].locations[1] != s0->locations[1]);
	CHECK_STR(line_name(&d, d.samples[2].locations[1], 0), "demo::handler");

	/* dedup: 9 distinct (name, file), 11 distinct physical frames, ids 1..n */
	CHECK_EQ_U64(d.nfunctions, 9);
	CHECK_EQ_U64(d.nlocations, 11);
	for (size_t i = 0; i < d.nfunctions; i++) {
		CHECK_EQ_U64(d.functions[i].id, i + 1);
		CHECK(d.functions[i].name == d.functions[i].system_name);
		for (size_t j = 0; j < i; j++)
			CHECK(d.functions[i].name != d.functions[j].name ||
			      d.functions[i].filename != d.functions[j].filename);
	}
	for (size_t i = 0; i < d.nlocations; i++)
		CHECK_EQ_U64(d.locations[i].id, i + 1);

	/* names: hostile as valid UTF-8, huge intact */
	bool evil = false, huge = false;
	for (size_t i = 0; i < d.nfunctions; i++) {
		const char *name = str(&d, d.functions[i].name);
		evil |= strcmp(name, PM_EVIL_UTF8) == 0;
		huge |= strcmp(name, m.huge) == 0;
		if (!strcmp(name, "demo::parse"))
			CHECK_STR(str(&d, d.functions[i].filename), PM_MAIN_RS);
	}
	CHECK(evil);
	CHECK(huge);

	/* mappings: one per module, spanning its sampled addresses */
	CHECK_EQ_U64(d.nmappings, 2);
	for (size_t i = 0; i < d.nmappings; i++) {
		const struct mapping *mp = &d.mappings[i];
		CHECK(mp->has_functions && mp->has_inline_frames);
		if (!strcmp(str(&d, mp->filename), PM_DEMO_BIN)) {
			CHECK_EQ_U64(mp->start, 0x1000);
			CHECK_EQ_U64(mp->limit, 0x6001);
		} else {
			CHECK_STR(str(&d, mp->filename), "/usr/lib/libtokio.so");
		}
	}
	CHECK(inl && d.mappings[inl->mapping_id - 1].filename != 0 &&
	      !strcmp(str(&d, d.mappings[inl->mapping_id - 1].filename), PM_DEMO_BIN));

	/* drops and unwind failures in the comments */
	bool dropped = false, unwind = false, cut = false, lost = false;
	for (size_t i = 0; i < d.ncomments; i++) {
		dropped |= strstr(str(&d, d.comments[i]), "dropped samples: 7") != NULL;
		unwind |= strstr(str(&d, d.comments[i]), "unwind failed: 3") != NULL;
		cut |=
		    strstr(str(&d, d.comments[i]), "cut short: 5 samples (the 131072-byte") != NULL;
		lost |=
		    strstr(str(&d, d.comments[i]), "off-CPU blocks lost: 2 (1500000 ns)") != NULL;
	}
	CHECK(dropped && unwind && cut && lost);

	decoded_free(&d);
	free(buf);
	profile_model__free(&m);
}

/* No off-CPU stacks: two sample types; no stacks at all: a valid, empty profile. */
static void test_small_profiles(void)
{
	struct profile_model m;
	struct decoded d;
	char *buf = NULL;
	size_t len = 0;

	profile_model__build(&m);
	m.p.nstacks = 4; /* S0..S3, all on-CPU */
	CHECK_EQ_I64(profile_model__write_mem(pprof__write, &m.p, &buf, &len), 0);
	decode(&d, buf, len);
	CHECK(!d.bad);
	CHECK_EQ_U64(d.nsample_types, 2);
	CHECK_EQ_U64(d.nsamples, 4);
	CHECK(d.nsamples && d.samples[0].nvalues == 2);
	decoded_free(&d);
	free(buf);

	/* a stack without frames: a sample without locations, its values still counted */
	m.p.nstacks = 1;
	m.stacks[0].nframes = 0;
	buf = NULL;
	CHECK_EQ_I64(profile_model__write_mem(pprof__write, &m.p, &buf, &len), 0);
	decode(&d, buf, len);
	CHECK(!d.bad);
	CHECK_EQ_U64(d.nsamples, 1);
	CHECK(d.nsamples == 1 && d.samples[0].nlocations == 0 && d.samples[0].values[0] == 50);
	CHECK_EQ_U64(d.nlocations, 0);
	decoded_free(&d);
	free(buf);

	struct profile_data empty = {0};
	buf = NULL;
	CHECK_EQ_I64(profile_model__write_mem(pprof__write, &empty, &buf, &len), 0);
	decode(&d, buf, len);
	CHECK(!d.bad);
	CHECK(d.nstrings > 0 && d.strings[0][0] == '\0');
	CHECK_EQ_U64(d.nsamples, 0);
	CHECK_EQ_U64(d.nlocations, 0);
	CHECK_EQ_U64(d.nsample_types, 2);
	decoded_free(&d);
	free(buf);

	/* an --off-cpu profile with no block in it (one interval of --every): its off-CPU
	 * sample types all the same, as in the interval's neighbours */
	empty.offcpu = true;
	buf = NULL;
	CHECK_EQ_I64(profile_model__write_mem(pprof__write, &empty, &buf, &len), 0);
	decode(&d, buf, len);
	CHECK(!d.bad);
	CHECK_EQ_U64(d.nsample_types, 4);
	CHECK(d.nsample_types == 4 && !strcmp(str(&d, d.sample_types[2][0]), "switches"));
	decoded_free(&d);
	free(buf);
	profile_model__free(&m);
}

static void test_write_error(void)
{
	struct profile_model m;
	FILE *f = fopen("/dev/full", "w");

	if (!f) {
		fprintf(stderr, "test_pprof: no /dev/full: write-error check skipped\n");
		return;
	}
	profile_model__build(&m);
	CHECK_EQ_I64(pprof__write(f, &m.p), -ENOSPC); /* /dev/full says why */
	fclose(f);
	profile_model__free(&m);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write") == 0) {
		struct profile_model m;
		FILE *f = fopen(argv[2], "wb");
		if (!f) {
			perror(argv[2]);
			return 2;
		}
		profile_model__build(&m);
		int err = pprof__write(f, &m.p);
		profile_model__free(&m);
		if (fclose(f) || err) {
			fprintf(stderr, "test_pprof: writing %s failed: %s\n", argv[2],
				strerror(-err));
			return 1;
		}
		return 0;
	}
	test_profile();
	test_small_profiles();
	test_write_error();
	TEST_MAIN_END();
}
