/* SPDX-License-Identifier: GPL-2.0 */
/* Growing arrays (vec.c). */
#ifndef ASYNCBPF_LIB_VEC_H
#define ASYNCBPF_LIB_VEC_H

#include <stddef.h>
#include <stdint.h>

/*
 * Room for at least `need` elements of `size` bytes in *v (capacity *cap, doubled
 * from 16 as needed; *v and *cap untouched on failure). 0, or -ENOMEM (also when the
 * size would overflow).
 */
int vec__reserve(void **v, uint32_t *cap, uint32_t need, size_t size);

#endif
