// SPDX-License-Identifier: GPL-2.0
/*
 * Shell-style globs (docs/selection.md): '*' matches any run of characters, "::"
 * included, '?' one character, "[...]" a class. Matching is by UTF-8 character, not
 * byte, iterative and O(|pattern|·|text|) whatever the input: patterns come from the
 * command line and names from a hostile binary.
 */
#include "lib/glob.h"

#include <stddef.h>
#include <stdint.h>

#include "lib/text.h"

/*
 * One character of s (non-empty): its code point and length. A byte that does not
 * start a well-formed sequence is one character on its own, with its byte value as
 * code point, so globs still behave predictably on malformed names.
 */
static size_t utf8_next(const char *s, uint32_t *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len = utf8__sequence_length(u, SIZE_MAX);

	switch (len) {
	case 1: *cp = u[0]; return 1;
	case 2: *cp = (uint32_t)(u[0] & 0x1f) << 6 | (u[1] & 0x3f); return 2;
	case 3:
		*cp = (uint32_t)(u[0] & 0x0f) << 12 | (uint32_t)(u[1] & 0x3f) << 6 | (u[2] & 0x3f);
		return 3;
	case 4:
		*cp = (uint32_t)(u[0] & 0x07) << 18 | (uint32_t)(u[1] & 0x3f) << 12 |
		      (uint32_t)(u[2] & 0x3f) << 6 | (u[3] & 0x3f);
		return 4;
	}
	*cp = u[0];
	return 1;
}

/* ---------------------------------------------------------------------------------- */
/* Globs                                                                              */

/*
 * A bracket expression at p ('['): does it contain c, and how long is it. Returns
 * false with *plen = 0 when the bracket is not closed: the caller then takes '[' as a
 * literal character, as shells do.
 */
static bool glob_class(const char *p, uint32_t c, size_t *plen)
{
	const char *q = p + 1;
	bool negate = false, found = false, first = true;

	*plen = 0;
	if (*q == '!' || *q == '^') {
		negate = true;
		q++;
	}
	for (;;) {
		uint32_t lo, hi;

		if (!*q)
			return false; /* unterminated */
		if (*q == ']' && !first)
			break;
		first = false;
		if (*q == '\\' && q[1])
			q++;
		q += utf8_next(q, &lo);
		hi = lo;
		if (*q == '-' && q[1] && q[1] != ']') {
			q++;
			if (*q == '\\' && q[1])
				q++;
			q += utf8_next(q, &hi);
		}
		if (lo <= c && c <= hi)
			found = true;
	}
	*plen = (size_t)(q + 1 - p);
	return found != negate;
}

/*
 * Does the pattern token at p (not '*', not end) match the character at t (not end)?
 * Sets the token's and the character's lengths.
 */
static bool glob_token(const char *p, const char *t, size_t *plen, size_t *tlen)
{
	uint32_t tc, pc;

	*tlen = utf8_next(t, &tc);
	switch (*p) {
	case '?': *plen = 1; return true;
	case '[': {
		bool in = glob_class(p, tc, plen);
		if (*plen)
			return in;
		*plen = 1; /* unterminated: a literal '[' */
		return tc == '[';
	}
	case '\\':
		if (p[1]) {
			*plen = 1 + utf8_next(p + 1, &pc);
			return pc == tc;
		}
		*plen = 1; /* trailing backslash: itself */
		return tc == '\\';
	}
	*plen = utf8_next(p, &pc);
	return pc == tc;
}

/*
 * The classic iterative matcher: on a mismatch, let the most recent '*' swallow one
 * more character and retry from just after it. Earlier stars never need revisiting
 * (whatever they matched, the later star can absorb), so time is O(|pattern|·|text|)
 * and there is no recursion, whatever the input.
 */
bool glob__match(const char *pattern, const char *text)
{
	const char *p = pattern, *t = text;
	const char *star_p = NULL, *star_t = NULL;

	if (!pattern || !text)
		return false;
	while (*t) {
		size_t plen, tlen;

		if (*p == '*') {
			while (*p == '*')
				p++;
			if (!*p)
				return true;
			star_p = p;
			star_t = t;
			continue;
		}
		if (*p && glob_token(p, t, &plen, &tlen)) {
			p += plen;
			t += tlen;
			continue;
		}
		if (!star_p)
			return false;
		uint32_t cp;
		star_t += utf8_next(star_t, &cp);
		t = star_t;
		p = star_p;
	}
	while (*p == '*')
		p++;
	return !*p;
}
