/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which futures to trace: default (the user's own crates), globs on Rust paths,
 * whitelist files, expansion along the await graph. Pure code over a model.
 */
#ifndef ASYNCBPF_SELECTION_H
#define ASYNCBPF_SELECTION_H

#include <stdbool.h>
#include <stdio.h>

#include "analyze/crate.h" /* rust_path__crate(), crate__classify() */
#include "lib/glob.h"	   /* glob__match() */
#include "model/model.h"

enum expand_dir {
	EXPAND_NONE = 0,
	EXPAND_UP = 1,	 /* who awaits the seeds, transitively, up to the roots */
	EXPAND_DOWN = 2, /* what the seeds await, transitively */
	EXPAND_BOTH = 3,
};

struct selection {
	bool *futures; /* indexed like model.futures */
	uint32_t nr;
};

int selection__init(struct selection *s, const struct model *m); /* nothing selected */
void selection__free(struct selection *s);
/* Select the futures of the user's crates (or all crates). Returns how many. */
uint32_t selection__add_default(struct selection *s, const struct model *m, bool all_crates);
/*
 * Select futures whose path, display name or poll fn name matches a glob, in any
 * crate (a pattern is explicit intent). Returns how many matched.
 */
uint32_t selection__add_pattern(struct selection *s, const struct model *m, const char *pattern);
void selection__expand(struct selection *s, const struct model *m, enum expand_dir dir);
uint32_t selection__count(const struct selection *s);

/*
 * Whitelist file (JSON, docs/selection.md): one entry per candidate future with a
 * "trace" flag the user edits. write: candidates are the user's crates' futures (all
 * crates with all_crates) plus everything selected.
 */
int whitelist__write(const struct model *m, const struct selection *s, bool all_crates, FILE *out);
/*
 * Read a whitelist back: entries with "trace": true are selected. Entries that do
 * not match a future of this binary are counted in *nr_unknown (and named in err
 * for the first one). Returns 0 or -errno (-EINVAL: malformed, err says where).
 */
int whitelist__read(struct selection *s, const struct model *m, const char *path,
		    uint32_t *nr_unknown, char *err, size_t errlen);

#endif
