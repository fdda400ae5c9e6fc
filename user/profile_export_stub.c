// SPDX-License-Identifier: GPL-2.0
/*
 * Placeholders so the profile-core branch links on its own: the real SVG, pprof and
 * Perfetto exporters come from another branch, and this file is deleted when they
 * are merged. Each says "not built in" by returning -ENOSYS.
 */
#include <errno.h>

#include "profile_export.h"

int flamegraph_svg__write(FILE *out, const struct profile_data *p, const char *title)
{
	(void)out, (void)p, (void)title;
	return -ENOSYS;
}

int pprof__write(FILE *out, const struct profile_data *p)
{
	(void)out, (void)p;
	return -ENOSYS;
}

int perfetto_profile__write(FILE *out, const struct profile_data *p)
{
	(void)out, (void)p;
	return -ENOSYS;
}
