/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A protobuf wire-format reader for the writers' unit tests. It shares no code with
 * user/export/protobuf.c on purpose: a test that decodes with the encoder's own code
 * would agree with any mistake in it.
 */
#ifndef ASYNCBPF_TEST_PB_READER_H
#define ASYNCBPF_TEST_PB_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pb_reader {
	const uint8_t *p, *end;
	bool bad; /* truncated, an unknown wire type, a varint over 10 bytes */
};

struct pb_field {
	uint32_t number;
	int wire;	     /* 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32 */
	uint64_t value;	     /* varint and fixed values */
	const uint8_t *data; /* length-delimited content */
	size_t len;
};

static inline struct pb_reader pb_reader__of(const void *data, size_t len)
{
	return (struct pb_reader){(const uint8_t *)data, (const uint8_t *)data + len, false};
}

static inline bool pb_reader__varint(struct pb_reader *r, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 70; shift += 7) {
		if (r->p >= r->end) {
			r->bad = true;
			return false;
		}
		uint8_t c = *r->p++;
		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return true;
	}
	r->bad = true;
	return false;
}

/* The next field; false at the end or on malformed input (then r->bad). */
static inline bool pb_reader__next(struct pb_reader *r, struct pb_field *f)
{
	uint64_t key;

	if (r->bad || r->p >= r->end || !pb_reader__varint(r, &key))
		return false;
	*f = (struct pb_field){.number = (uint32_t)(key >> 3), .wire = (int)(key & 7)};
	switch (f->wire) {
	case 0: return pb_reader__varint(r, &f->value);
	case 1:
	case 5: {
		size_t n = f->wire == 1 ? 8 : 4;
		if ((size_t)(r->end - r->p) < n)
			break;
		for (size_t i = 0; i < n; i++)
			f->value |= (uint64_t)r->p[i] << (8 * i);
		r->p += n;
		return true;
	}
	case 2: {
		uint64_t len;
		if (!pb_reader__varint(r, &len) || len > (uint64_t)(r->end - r->p))
			break;
		f->data = r->p;
		f->len = (size_t)len;
		r->p += f->len;
		return true;
	}
	}
	r->bad = true;
	return false;
}

/* A packed repeated varint field's values into out (at most max); the count. */
static inline size_t pb_reader__packed(const struct pb_field *f, uint64_t *out, size_t max,
				       bool *bad)
{
	struct pb_reader r = pb_reader__of(f->data, f->len);
	size_t n = 0;
	uint64_t v;

	if (f->wire == 0) { /* a lone unpacked value */
		if (max)
			out[0] = f->value;
		return 1;
	}
	while (r.p < r.end && pb_reader__varint(&r, &v)) {
		if (n < max)
			out[n] = v;
		n++;
	}
	if (r.bad)
		*bad = true;
	return n;
}

#endif
