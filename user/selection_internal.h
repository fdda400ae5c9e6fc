/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the selection modules (selection.c, glob.c, whitelist.c) and by
 * nothing else: not an interface, only a way not to keep two copies.
 */
#ifndef ASYNCBPF_SELECTION_INTERNAL_H
#define ASYNCBPF_SELECTION_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "selection.h"

/*
 * Length of the well-formed UTF-8 sequence at s (NUL-terminated), or 0 when it is not
 * one: overlong forms, surrogates and code points past U+10FFFF are rejected
 * (Unicode 15, table 3-7). A NUL byte is never a continuation byte, so this never
 * reads past the terminator.
 */
static inline size_t utf8_sequence_length(const unsigned char *s)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else {
		return 0;
	}
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

/* The selection may have been built for another model: only touch what both have. */
static inline uint32_t sel_nr(const struct selection *s, const struct model *m)
{
	if (!s->futures)
		return 0;
	return s->nr < m->nr_futures ? s->nr : m->nr_futures;
}

#endif
