/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Crates: which crate a Rust path belongs to, and whether that crate is the user's,
 * std's, an async runtime's or another dependency (docs/selection.md).
 */
#ifndef ASYNCBPF_CRATE_H
#define ASYNCBPF_CRATE_H

#include <stddef.h>

#include "model/model.h"

/* Crate of a Rust path: "tokio" for "tokio::time::Sleep", T's crate for
 * "<T as core::future::future::Future>::poll", "core" for "&mut core::..". */
void rust_path__crate(const char *path, char *buf, size_t len);
/* The same, but "" unless the path spells `crate::`: a generic parameter (`F` in a
 * symbol's `<&mut F as core::future::future::Future>::poll`) or a bare name names no
 * crate. Primitives stay core's. For names read from symbols. */
void rust_path__crate_strict(const char *path, char *buf, size_t len);
/* Classification documented in docs/selection.md */
enum crate_class crate__classify(const char *crate);

#endif
