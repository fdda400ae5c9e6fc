// SPDX-License-Identifier: GPL-2.0
/* Growing arrays (vec.h). */
#include "lib/vec.h"

#include <errno.h>
#include <stdlib.h>

int vec__reserve(void **v, uint32_t *cap, uint32_t need, size_t size)
{
	uint64_t n;
	void *nv;

	if (need <= *cap)
		return 0;
	n = *cap ? *cap : 16;
	while (n < need)
		n *= 2;
	if (n > UINT32_MAX || (size && n > SIZE_MAX / size))
		return -ENOMEM;
	if (!(nv = realloc(*v, (size_t)n * size)))
		return -ENOMEM;
	*v = nv;
	*cap = (uint32_t)n;
	return 0;
}
