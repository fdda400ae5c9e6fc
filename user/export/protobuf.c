// SPDX-License-Identifier: GPL-2.0
/* Protobuf wire-format encoding by hand: see protobuf.h for why. */
#include "export/protobuf.h"
#include "lib/text.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void pb__reset(struct pb *b)
{
	b->len = 0;
	b->depth = 0;
}

void pb__free(struct pb *b)
{
	free(b->data);
	*b = (struct pb){0};
}

/* Room for n more bytes; false (and oom) when it cannot be had. */
static bool pb_reserve(struct pb *b, size_t n)
{
	if (b->oom)
		return false;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 512;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *d = realloc(b->data, cap);
		if (!d) {
			b->oom = true;
			return false;
		}
		b->data = d;
		b->cap = cap;
	}
	return true;
}

void pb__bytes(struct pb *b, const void *p, size_t n)
{
	if (!n || !pb_reserve(b, n)) /* nothing to copy: p may be NULL (an empty buffer's) */
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

size_t pb__varint_encode(uint64_t v, uint8_t out[10])
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

/* Encoded in place: the writers' hottest path (every tag and every number). */
void pb__varint(struct pb *b, uint64_t v)
{
	if (pb_reserve(b, 10))
		b->len += pb__varint_encode(v, b->data + b->len);
}

void pb__uint(struct pb *b, uint32_t field, uint64_t v)
{
	pb__varint(b, (uint64_t)field << 3 | PB_WIRE_VARINT);
	pb__varint(b, v);
}

void pb__fixed64(struct pb *b, uint32_t field, uint64_t v)
{
	uint8_t le[8];

	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	pb__varint(b, (uint64_t)field << 3 | PB_WIRE_FIXED64);
	pb__bytes(b, le, sizeof(le));
}

void pb__begin(struct pb *b, uint32_t field)
{
	pb__varint(b, (uint64_t)field << 3 | PB_WIRE_LEN);
	if (b->depth >= PB_MAX_NESTING) {
		b->oom = true;
		return;
	}
	/* one byte for the length: enough for most messages, so pb__end rarely moves them */
	pb__bytes(b, "", 1);
	b->open[b->depth++] = b->len;
}

void pb__end(struct pb *b)
{
	uint8_t tmp[10];

	if (b->depth <= 0 || b->oom)
		return;
	size_t start = b->open[--b->depth], content = b->len - start;
	size_t n = pb__varint_encode(content, tmp);

	if (n > 1) { /* a longer length: room for it, then shift the content up */
		pb__bytes(b, tmp, n - 1);
		if (b->oom)
			return;
		memmove(b->data + start + n - 1, b->data + start, content);
	}
	memcpy(b->data + start - 1, tmp, n);
}

void pb__string(struct pb *b, uint32_t field, const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	size_t n = strlen((const char *)s), out = 0, i, len;

	/* the length first (invalid UTF-8 becomes U+FFFD), so no pb__begin/end shift */
	for (i = 0; i < n; i += len ? len : 1) {
		if (s[i] < 0x80) {
			len = 1;
			out++;
			continue;
		}
		len = utf8__sequence_length(s + i, n - i);
		out += len ? len : 3;
	}
	pb__varint(b, (uint64_t)field << 3 | PB_WIRE_LEN);
	pb__varint(b, out);
	if (out == n) { /* valid: one copy (every invalid byte would have grown it) */
		pb__bytes(b, s, n);
		return;
	}
	for (i = 0; i < n; i += len ? len : 1) {
		len = utf8__sequence_length(s + i, n - i);
		pb__bytes(b, len ? (const void *)(s + i) : "\xef\xbf\xbd", len ? len : 3);
	}
}

int pb__flush(struct pb *b, FILE *out)
{
	int err = 0;

	if (b->oom)
		err = -ENOMEM;
	else if (b->len && fwrite(b->data, 1, b->len, out) != b->len)
		err = errno ? -errno : -EIO; /* ENOSPC says more than EIO */
	pb__reset(b);
	return err;
}
