/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Protobuf wire-format encoding into a growable buffer, shared by the Perfetto
 * writers and the pprof writer. Debian ships no small protobuf C runtime worth
 * depending on for the few messages we write (protobuf-c needs generated code per
 * .proto and a runtime library; nanopb is not packaged), so fields are encoded by
 * hand: varints, fixed64, and length-delimited fields whose length is patched in
 * when the nested message is closed. Each writer cites the field numbers it uses.
 */
#ifndef ASYNCBPF_PROTOBUF_H
#define ASYNCBPF_PROTOBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PB_WIRE_VARINT	0
#define PB_WIRE_FIXED64 1
#define PB_WIRE_LEN	2

/* Nested messages open at once; more is a writer bug and sets oom. */
#define PB_MAX_NESTING 8

struct pb {
	uint8_t *data;
	size_t len, cap;
	size_t open[PB_MAX_NESTING]; /* where each open message's content starts */
	int depth;
	bool oom; /* sticky: an allocation failed (or nesting overflowed); output invalid */
};

/* Empties the buffer for the next message, keeping its allocation (and oom). */
void pb__reset(struct pb *b);
void pb__free(struct pb *b);
/* v as a base-128 varint into out; returns its length (1..10). */
size_t pb__varint_encode(uint64_t v, uint8_t out[10]);
void pb__bytes(struct pb *b, const void *p, size_t n);
void pb__varint(struct pb *b, uint64_t v);
/* A varint field (uint32/64, int64 >= 0, bool, enum). */
void pb__uint(struct pb *b, uint32_t field, uint64_t v);
void pb__fixed64(struct pb *b, uint32_t field, uint64_t v);
/* Opens a length-delimited field (message or packed repeated); pb__end() closes it. */
void pb__begin(struct pb *b, uint32_t field);
void pb__end(struct pb *b);
/*
 * A `string` field. Protobuf strings must be UTF-8 and ours come from traced
 * binaries, so every byte that is not part of a well-formed sequence becomes U+FFFD.
 * NULL is written as "".
 */
void pb__string(struct pb *b, uint32_t field, const char *str);
/* Writes the buffer to out and empties it: 0, -ENOMEM (oom) or -EIO. */
int pb__flush(struct pb *b, FILE *out);

#endif
