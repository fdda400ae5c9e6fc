/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The profiler's exporters (docs/profile.md): each writes one complete file from a
 * finished `struct profile_data` (user/model/profile_data.h) and returns 0, or -errno
 * (-EIO when a write failed, -ENOMEM). They never close `out`; callers open it with
 * outfile__open() so a failed write never leaves a complete-looking file.
 */
#ifndef ASYNCBPF_PROFILE_EXPORT_H
#define ASYNCBPF_PROFILE_EXPORT_H

#include <stdio.h>

#include "model/profile_data.h"

/* Self-contained interactive SVG flame graph (search, zoom, colors by origin). */
int flamegraph_svg__write(FILE *out, const struct profile_data *p, const char *title);
/* pprof `perftools.profiles.Profile` protobuf, uncompressed (pprof, Parca, Pyroscope). */
int pprof__write(FILE *out, const struct profile_data *p);
/* Perfetto trace: the samples on one track per thread, with their async stacks. */
int perfetto_profile__write(FILE *out, const struct profile_data *p);
/* Folded stacks, one "frame;frame;... WEIGHT" line per stack (flamegraph.pl, inferno). */
int folded__write(FILE *out, const struct profile_data *p, int offcpu);

#endif
