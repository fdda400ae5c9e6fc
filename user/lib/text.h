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

/*
 * Text inside a DOT double-quoted string, at most max_bytes of input ("..." marks the
 * cut): \" and \\ escaped, '&' as &amp;, newline as \n, other control characters as
 * \xHH, bytes that are not UTF-8 as U+FFFD.
 */
void dot__write_text(FILE *out, const char *s, size_t max_bytes);

/*
 * Text for XML content or a quoted attribute value (SVG), at most max_bytes of input
 * ("..." marks the cut, never inside a UTF-8 sequence): & < > " ' as entities;
 * control characters, which XML 1.0 cannot hold even as references, shown as \xHH;
 * bytes that are not UTF-8, and U+FFFE/U+FFFF (not XML characters), as U+FFFD.
 */
void xml__write_text(FILE *out, const char *s, size_t max_bytes);

/*
 * A Rust type path short enough for a table column (at most max bytes, max < len):
 * as it is when it fits; else the paths inside its generic arguments cut to their
 * last segment ("NewSvcTask<AddrStream, ServiceFn<Body>>"), then the arguments of
 * its arguments elided ("NewSvcTask<AddrStream, ServiceFn<…>>"), then all of them
 * ("NewSvcTask<…>"), then cut with "…".
 */
void rust__abbreviate(const char *in, char *out, size_t len, size_t max);

/* The last two components of a path: ".../demo/src/main.rs" -> "src/main.rs";
 * "?" for NULL. */
const char *path__short(const char *file);

#endif
