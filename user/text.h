/* SPDX-License-Identifier: GPL-2.0 */
#ifndef ASYNCBPF_TEXT_H
#define ASYNCBPF_TEXT_H

#include <stddef.h>
#include <stdio.h>

/*
 * Length of the well-formed UTF-8 sequence at s (at most avail bytes), or 0 when
 * it is not one (overlong, surrogate, past U+10FFFF, truncated). A NUL-terminated
 * string may pass SIZE_MAX: the NUL fails the continuation check first.
 */
size_t utf8__sequence_length(const unsigned char *s, size_t avail);

/* s as a JSON string (RFC 8259), "null" for NULL; invalid UTF-8 bytes become U+FFFD. */
void json__write_string(FILE *out, const char *s);

#endif
