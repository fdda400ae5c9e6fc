/* SPDX-License-Identifier: GPL-2.0 */
/* Minimal unit-test helpers: checks count and report file:line and values on failure. */
#ifndef ASYNCBPF_TESTLIB_H
#define ASYNCBPF_TESTLIB_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int testlib_passed, testlib_failed;

/* Test set-up that cannot go on without memory. */
static inline void *must(void *p)
{
	if (!p) {
		fprintf(stderr, "out of memory building the test model\n");
		exit(2);
	}
	return p;
}

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (cond) {                                                                        \
			testlib_passed++;                                                          \
		} else {                                                                           \
			testlib_failed++;                                                          \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
		}                                                                                  \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                                         \
	do {                                                                                       \
		uint64_t _a = (uint64_t)(a), _b = (uint64_t)(b);                                   \
		if (_a == _b) {                                                                    \
			testlib_passed++;                                                          \
		} else {                                                                           \
			testlib_failed++;                                                          \
			fprintf(stderr,                                                            \
				"%s:%d: CHECK_EQ_U64 failed: %s == %s: %" PRIu64 " (0x%" PRIx64    \
				") != %" PRIu64 " (0x%" PRIx64 ")\n",                              \
				__FILE__, __LINE__, #a, #b, _a, _a, _b, _b);                       \
		}                                                                                  \
	} while (0)

#define CHECK_EQ_I64(a, b)                                                                         \
	do {                                                                                       \
		int64_t _a = (int64_t)(a), _b = (int64_t)(b);                                      \
		if (_a == _b) {                                                                    \
			testlib_passed++;                                                          \
		} else {                                                                           \
			testlib_failed++;                                                          \
			fprintf(stderr,                                                            \
				"%s:%d: CHECK_EQ_I64 failed: %s == %s: %" PRId64 " (%s0x%" PRIx64  \
				") != %" PRId64 " (%s0x%" PRIx64 ")\n",                            \
				__FILE__, __LINE__, #a, #b, _a, _a < 0 ? "-" : "",                 \
				_a < 0 ? -(uint64_t)_a : (uint64_t)_a, _b, _b < 0 ? "-" : "",      \
				_b < 0 ? -(uint64_t)_b : (uint64_t)_b);                            \
		}                                                                                  \
	} while (0)

#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *_a = (a), *_b = (b);                                                   \
		if (_a && _b && strcmp(_a, _b) == 0) {                                             \
			testlib_passed++;                                                          \
		} else {                                                                           \
			testlib_failed++;                                                          \
			fprintf(stderr, "%s:%d: CHECK_STR failed: %s == %s: \"%s\" != \"%s\"\n",   \
				__FILE__, __LINE__, #a, #b, _a ? _a : "(NULL)",                    \
				_b ? _b : "(NULL)");                                               \
		}                                                                                  \
	} while (0)

#define TEST_MAIN_END()                                                                            \
	do {                                                                                       \
		printf("%d passed, %d failed\n", testlib_passed, testlib_failed);                  \
		return testlib_failed ? 1 : 0;                                                     \
	} while (0)

#endif
