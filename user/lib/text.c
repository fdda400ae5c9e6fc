// SPDX-License-Identifier: GPL-2.0
/* Text that comes from hostile binaries: UTF-8 validation, JSON strings and DOT
 * labels, shared by every writer of JSON and DOT. */
#include "lib/text.h"

#include <stdbool.h>
#include <string.h>

/*
 * Length of the well-formed UTF-8 sequence at s (at most avail bytes), or 0 when it
 * is not one: overlong forms, surrogates and code points past U+10FFFF are rejected
 * (Unicode 15, table 3-7).
 */
size_t utf8__sequence_length(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0];
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf; /* allowed range of the second byte */

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
	if (avail < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

void json__write_string(FILE *out, const char *str)
{
	if (!str) {
		fputs("null", out);
		return;
	}
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str), run = 0, i = 0;

	putc('"', out);
	while (i < n) {
		unsigned char c = s[i];
		const char *esc = NULL;
		char ubuf[8];
		size_t len = 1;

		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		default:
			if (c < 0x20 || c == 0x7f) {
				snprintf(ubuf, sizeof(ubuf), "\\u%04x", c);
				esc = ubuf;
			} else if (c >= 0x80) {
				len = utf8__sequence_length(s + i, n - i);
				if (!len) {
					esc = "\\ufffd"; /* one per byte that is not UTF-8 */
					len = 1;
				} else if (len == 3 && c == 0xe2 && s[i + 1] == 0x80 &&
					   (s[i + 2] == 0xa8 || s[i + 2] == 0xa9)) {
					/* U+2028/9: valid JSON, not JavaScript < ES2019 */
					esc = s[i + 2] == 0xa8 ? "\\u2028" : "\\u2029";
				}
			}
		}
		if (esc) {
			if (run)
				fwrite(s + i - run, 1, run, out);
			run = 0;
			fputs(esc, out);
		} else {
			run += len;
		}
		i += len;
	}
	if (run)
		fwrite(s + n - run, 1, run, out);
	putc('"', out);
}

/*
 * What the DOT and XML writers share: walk str as UTF-8 up to max_bytes ("..."
 * marks the cut), write U+FFFD for every byte that is not part of a well-formed
 * sequence (and, with no_fffe, for U+FFFE/U+FFFF, which XML forbids), and let
 * `escape` replace single ASCII bytes (NULL: the byte as it is).
 */
static void write_escaped(FILE *out, const char *str, size_t max_bytes, bool no_fffe,
			  const char *(*escape)(unsigned char c, char buf[8]))
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	size_t n = strlen((const char *)s), i = 0;
	char buf[8];

	while (i < n) {
		unsigned char c = s[i];
		size_t len = c < 0x80 ? 1 : utf8__sequence_length(s + i, n - i);
		const char *esc;

		if (i + (len ? len : 1) > max_bytes) {
			fputs("...", out);
			return;
		}
		if (!len ||
		    (no_fffe && len == 3 && c == 0xef && s[i + 1] == 0xbf && s[i + 2] >= 0xbe)) {
			fputs("\xef\xbf\xbd", out); /* U+FFFD */
			len = len ? len : 1;
		} else if (c < 0x80 && (esc = escape(c, buf))) {
			fputs(esc, out);
		} else {
			fwrite(s + i, 1, len, out);
		}
		i += len;
	}
}

/*
 * Text inside a DOT double-quoted string. The DOT parser only knows \" ; Graphviz
 * then reads backslash escapes (\n \l \N \G ...) and HTML entities (&amp;) in
 * labels, so a literal backslash is written \\ and '&' as &amp; (Rust types are
 * full of "&mut"). A newline in the data becomes a line break; other control
 * characters are shown as \xHH. Bytes that are not UTF-8 become U+FFFD: Graphviz
 * warns about them and may drop the label.
 */
static const char *dot_escape(unsigned char c, char buf[8])
{
	switch (c) {
	case '"': return "\\\"";
	case '\\': return "\\\\";
	case '&': return "&amp;";
	case '\n': return "\\n";
	}
	if (c < 0x20 || c == 0x7f) {
		snprintf(buf, 8, "\\\\x%02X", c);
		return buf;
	}
	return NULL;
}

void dot__write_text(FILE *out, const char *str, size_t max_bytes)
{
	write_escaped(out, str, max_bytes, false, dot_escape);
}

static const char *xml_escape(unsigned char c, char buf[8])
{
	switch (c) {
	case '&': return "&amp;";
	case '<': return "&lt;";
	case '>': return "&gt;";
	case '"': return "&quot;";
	case '\'': return "&apos;";
	}
	if (c < 0x20 || c == 0x7f) {
		snprintf(buf, 8, "\\x%02X", c);
		return buf;
	}
	return NULL;
}

void xml__write_text(FILE *out, const char *str, size_t max_bytes)
{
	write_escaped(out, str, max_bytes, true, xml_escape);
}

/* The last two components of a path: ".../demo/src/main.rs" -> "src/main.rs". */
const char *path__short(const char *file)
{
	if (!file)
		return "?";
	const char *last = strrchr(file, '/');

	if (!last)
		return file;
	for (const char *p = last; p > file; p--)
		if (p[-1] == '/')
			return p;
	return file;
}

/* in with generic arguments deeper than max_depth elided, and (short) the paths inside
 * generic arguments cut to their last segment. */
static void abbreviate_pass(const char *in, char *out, size_t len, int max_depth, bool short_paths)
{
	size_t o = 0, seg = 0;
	int depth = 0;
	bool elided = false;

	for (const char *p = in; *p && o + 4 < len; p++) {
		char c = *p;

		if (c == '<') {
			depth++;
			if (depth > max_depth) {
				if (depth == max_depth + 1) {
					memcpy(out + o, "<\xe2\x80\xa6", 4); /* "<…" */
					o += 4;
					elided = true;
				}
				continue;
			}
			out[o++] = c;
			seg = o;
			continue;
		}
		if (c == '>') {
			if (depth > max_depth) {
				if (--depth == max_depth && o + 1 < len)
					out[o++] = '>';
				continue;
			}
			depth--;
			out[o++] = c;
			seg = o;
			continue;
		}
		if (depth > max_depth)
			continue;
		if (depth > 0 && short_paths && c == ':' && p[1] == ':') {
			o = seg; /* keep the last segment only */
			p++;
			continue;
		}
		out[o++] = c;
		if (depth > 0 && strchr(", (&*[;=+", c))
			seg = o;
	}
	(void)elided;
	out[o] = '\0';
}

void rust__abbreviate(const char *in, char *out, size_t len, size_t max)
{
	static const char ellipsis[] = "\xe2\x80\xa6";
	size_t n;

	if (!len)
		return;
	if (max >= len)
		max = len - 1;
	if (strlen(in) <= max) {
		snprintf(out, len, "%s", in);
		return;
	}
	abbreviate_pass(in, out, len, 64, true);
	for (int depth = 1; depth >= 0 && strlen(out) > max; depth--)
		abbreviate_pass(in, out, len, depth, true);
	n = strlen(out);
	if (n > max && max > 3) {
		n = max - 3;
		while (n && ((unsigned char)out[n] & 0xc0) == 0x80)
			n--; /* not inside a UTF-8 sequence */
		memcpy(out + n, ellipsis, 4);
	}
}
