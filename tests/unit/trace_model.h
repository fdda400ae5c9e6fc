/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The hand-built model the trace writers' unit tests share: futures 0 task,
 * 1 middle, 2 leaf, 3 a hostile name; polls 0..3 theirs, 4 of an unknown future.
 * Each test adds its futures its own way (with or without states).
 */
#ifndef ASYNCBPF_TEST_TRACE_MODEL_H
#define ASYNCBPF_TEST_TRACE_MODEL_H

#include "model/model.h"
#include "testlib.h"

static inline void trace_model__add_poll(struct model *m, const char *name, int32_t future)
{
	struct poll_fn *p = must(model__add_poll(m));

	p->name = name;
	p->crate = "demo";
	p->future = future;
}

static inline void trace_model__build(struct model *m, const char *hostile_path,
				      const char *unknown_poll,
				      void (*add_future)(struct model *, const char *, uint32_t))
{
	model__init(m);
	add_future(m, "demo::task::{async_fn_env#0}", 10);
	add_future(m, "demo::middle::{async_fn_env#0}", 20);
	add_future(m, "demo::leaf::{async_fn_env#0}", 30);
	add_future(m, hostile_path, 0);
	trace_model__add_poll(m, "demo::task::{async_fn#0}", 0);
	trace_model__add_poll(m, "demo::middle::{async_fn#0}", 1);
	trace_model__add_poll(m, "demo::leaf::{async_fn#0}", 2);
	trace_model__add_poll(m, "<evil as core::future::future::Future>::poll", 3);
	trace_model__add_poll(m, unknown_poll, -1);
	model__finish(m);
}

#endif
