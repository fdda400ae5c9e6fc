/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A fake process image for the unit tests that read a target's memory
 * (test_future_tree.c, test_stacks_decode.c): SIZE bytes at BASE, written with
 * put64/put8 and read through read_image, a reader callback that fails outside it
 * as a real read of unmapped memory would (-EFAULT). One image per test program.
 */
#ifndef ASYNCBPF_TESTS_FAKE_IMAGE_H
#define ASYNCBPF_TESTS_FAKE_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define BASE 0x10000u
#define SIZE 4096u

static uint8_t image[SIZE];

static inline int read_image(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < BASE || addr - BASE > SIZE || len > SIZE - (addr - BASE))
		return -14; /* -EFAULT */
	memcpy(buf, image + (addr - BASE), len);
	return 0;
}

static inline void put64(uint64_t addr, uint64_t v)
{
	memcpy(image + (addr - BASE), &v, 8);
}

static inline void put8(uint64_t addr, uint8_t v)
{
	image[addr - BASE] = v;
}

#endif
