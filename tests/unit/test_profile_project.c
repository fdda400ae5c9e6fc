// SPDX-License-Identifier: GPL-2.0
/*
 * The async projection and the folded writer on hand-made unwinds: a hand-built
 * model (task → middle → leaf futures, a runtime future, std's Pin forwarding poll)
 * and stacks of uframes as unwind.c would give them (innermost first, inline levels
 * marked). Checks the projected stacks frame by frame and the folded text.
 */
#include <stdio.h>
#include <string.h>

#include "export/profile_export.h"
#include "profile/profile_project.h"
#include "profile/walks.h"
#include "testlib.h"

static void add_future(struct model *m, const char *path, enum crate_class cls)
{
	struct future *f = must(model__add_future(m));

	f->path = path;
	f->crate_class = cls;
	f->poll = -1;
}

static void add_poll(struct model *m, const char *name, const char *linkage, int32_t future,
		     enum crate_class cls)
{
	struct poll_fn *p = must(model__add_poll(m));

	p->name = name;
	p->linkage_name = linkage;
	p->future = future;
	p->crate_class = cls;
}

static void build_model(struct model *m)
{
	model__init(m);
	add_future(m, "demo::task::{async_fn_env#0}", CRATE_USER);   /* 0 */
	add_future(m, "demo::middle::{async_fn_env#0}", CRATE_USER); /* 1 */
	add_future(m, "demo::leaf::{async_fn_env#0}", CRATE_USER);   /* 2 */
	add_future(m, "rt::task::Harness", CRATE_RUNTIME);	     /* 3 */
	add_future(m, "core::pin::Pin<P>", CRATE_STD);		     /* 4 */
	add_poll(m, "demo::task::{{closure}}", "_ZN4demo4task28_$u7b$$u7b$closure$u7d$$u7d$17h1E",
		 0, CRATE_USER);
	add_poll(m, "demo::middle::{{closure}}", "_ZN4demo6middle7closure17h2E", 1, CRATE_USER);
	/* leaf: only inlined, known by its demangled name alone */
	add_poll(m, "demo::leaf::{{closure}}", NULL, 2, CRATE_USER);
	add_poll(m, "<rt::task::Harness as core::future::future::Future>::poll",
		 "_ZN2rt7harness4pollE", 3, CRATE_RUNTIME);
	add_poll(m, "<core::pin::Pin<P> as core::future::future::Future>::poll",
		 "_ZN4core3pin4pollE", 4, CRATE_STD);
	model__finish(m);
}

#define F(n, l, inl)                                                                               \
	{                                                                                          \
		.name = n, .linkage = l, .inlined = inl, .module = "/bin/demo", .pc = 0x1000       \
	}

/* innermost first, as unwound */
static const struct uframe spin = F("demo::spin", "_ZN4demo4spinE", false);
static const struct uframe leaf = F("demo::leaf::{{closure}}", "_ZN4demo4leaf7closure17h3E", true);
static const struct uframe middle =
    F("demo::middle::{{closure}}", "_ZN4demo6middle7closure17h2E", false);
static const struct uframe pin =
    F("<core::pin::Pin<P> as core::future::future::Future>::poll", "_ZN4core3pin4pollE", true);
static const struct uframe task =
    F("demo::task::{{closure}}", "_ZN4demo4task28_$u7b$$u7b$closure$u7d$$u7d$17h1E", false);
static const struct uframe harness =
    F("<rt::task::Harness as core::future::future::Future>::poll", "_ZN2rt7harness4pollE", false);
static const struct uframe run = F("tokio::runtime::run", "_ZN2rt8executor3runE", false);
static const struct uframe mainf = F("main", "main", false);
static const struct uframe park = {.name = "epoll_wait",
				   .module = "/usr/lib/x86_64-linux-gnu/libc.so.6"};

static const char *names(const struct pstack *s, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < s->nframes; i++)
		at +=
		    (size_t)snprintf(buf + at, len - at, "%s%s", i ? ";" : "", s->frames[i]->name);
	return buf;
}

/* Walks kept until the end: each distinct one (pcs and reason) once. */
static void test_walk_table(void)
{
	static const uint64_t a[] = {0x1000, 0x2000, 0x3000}, b[] = {0x1000, 0x2000, 0x3001};
	struct walk_table t;
	int64_t i, j;

	walk_table__init(&t);
	i = walk_table__add(&t, a, 3, UNWIND_COMPLETE);
	CHECK(i == 0);
	CHECK(walk_table__add(&t, a, 3, UNWIND_COMPLETE) == i);
	CHECK((j = walk_table__add(&t, a, 3, UNWIND_STACK_SHORT)) != i && j >= 0);
	CHECK(walk_table__add(&t, a, 2, UNWIND_COMPLETE) > j);
	CHECK(walk_table__add(&t, b, 3, UNWIND_COMPLETE) > j);
	CHECK(walk_table__add(&t, NULL, 0, UNWIND_NO_REGS) >= 0);
	CHECK_EQ_U64(t.nr, 5);
	CHECK(t.walks[j].reason == UNWIND_STACK_SHORT && t.walks[j].n == 3 &&
	      t.walks[j].stack == -1);
	for (int k = 0; k < 3000; k++) { /* growth keeps what was there */
		uint64_t pc = 0x5000 + (uint64_t)k;

		CHECK(walk_table__add(&t, &pc, 1, UNWIND_COMPLETE) == 5 + k);
	}
	CHECK(walk_table__add(&t, b, 3, UNWIND_COMPLETE) == 3);
	walk_table__free(&t);
}

int main(void)
{
	struct model m;
	struct projector *p;
	struct profile_data d = {0};
	struct projected_sample s = {.weight = 1, .pid = 1, .tid = 1};
	char buf[1024];
	int64_t a, b, c, e, u, o;

	test_walk_table();
	build_model(&m);
	p = must(projector__new(&m, true));

	/* leaf work under task → middle → leaf, through Pin and the runtime harness */
	const struct uframe *hot[] = {&spin, &leaf, &middle, &pin, &task, &harness, &run, &mainf};
	a = projector__add(p, hot, 8, &s);
	CHECK(a == 0);
	b = projector__add(p, hot, 8, &s);
	CHECK(b == a); /* interned: the same stack */

	/* only the runtime's futures (a worker loop): all of them are [runtime] */
	const struct uframe *idle[] = {&park, &harness, &run, &mainf};
	c = projector__add(p, idle, 4, &s);

	/* no poll at all */
	const struct uframe *plain[] = {&park, &run, &mainf};
	e = projector__add(p, plain, 3, &s);

	/* nothing unwound */
	u = projector__add(p, NULL, 0, &s);
	CHECK(a >= 0 && c >= 0 && e >= 0 && u >= 0);
	CHECK(a != c && c != e && e != u);

	projector__fill(p, &d);
	CHECK_EQ_U64(d.nstacks, 4);
	CHECK_EQ_U64(d.nsamples, 5);
	CHECK_STR(names(&d.stacks[a], buf, sizeof(buf)),
		  "[runtime];demo::task;demo::middle;demo::leaf;demo::spin");
	CHECK_EQ_U64(d.stacks[a].samples, 2);
	CHECK_EQ_U64(d.stacks[a].weight, 2);
	CHECK_EQ_U64(d.stacks[a].frames[0]->kind, PFRAME_RUNTIME);
	CHECK_EQ_U64(d.stacks[a].frames[1]->kind, PFRAME_FUTURE);
	CHECK_EQ_U64(d.stacks[a].frames[1]->origin, PORIGIN_USER);
	CHECK_EQ_U64(d.stacks[a].frames[4]->kind, PFRAME_FUNCTION);
	CHECK_STR(names(&d.stacks[c], buf, sizeof(buf)), "[runtime];epoll_wait");
	CHECK_EQ_U64(d.stacks[c].frames[1]->origin, PORIGIN_STD);
	CHECK_STR(names(&d.stacks[e], buf, sizeof(buf)),
		  "[not in a poll];main;tokio::runtime::run;epoll_wait");
	CHECK_EQ_U64(d.stacks[e].frames[2]->origin, PORIGIN_RUNTIME);
	CHECK_STR(names(&d.stacks[u], buf, sizeof(buf)), "[unknown]");
	/* frames are shared between stacks */
	CHECK(d.stacks[a].frames[0] == d.stacks[c].frames[0]);
	CHECK(d.samples[2].stack == (uint32_t)c);

	projector__stack_text(&d.stacks[a], buf, sizeof(buf));
	CHECK_STR(buf, "demo::task → demo::middle → demo::leaf (in demo::spin)");

	/* off-CPU stacks are kept apart, and weighted by time summed elsewhere: counted,
	 * not kept one by one */
	{
		struct projected_sample off = {.weight = 0, .offcpu = true, .intern_only = true};

		o = projector__add(p, hot, 8, &off);
		CHECK(o >= 0 && o != a);
		projector__fill(p, &d);
		CHECK_EQ_U64(d.nsamples, 5);
		CHECK_EQ_U64(d.stacks[o].samples, 0);
		CHECK(projector__add_aggregate(p, (uint32_t)o, 1, 5000) == 0);
		CHECK(projector__add_aggregate(p, 999, 1, 5000) < 0);
		projector__fill(p, &d);
		CHECK_EQ_U64(d.nsamples, 5);
	}

	/* a stack copy too short: what was found, under [stack cut short] instead of
	 * [runtime] or [not in a poll] (the task's root future is not known) */
	{
		struct projected_sample cut = s;
		const struct uframe *top_lost[] = {&spin, &leaf, &middle};
		const struct uframe *no_poll[] = {&park, &run};
		int64_t t, q;

		cut.cut_short = true;
		t = projector__add(p, top_lost, 3, &cut);
		q = projector__add(p, no_poll, 2, &cut);
		projector__fill(p, &d);
		CHECK(t >= 0 && q >= 0);
		CHECK_STR(names(&d.stacks[t], buf, sizeof(buf)),
			  "[stack cut short];demo::middle;demo::leaf;demo::spin");
		CHECK_STR(names(&d.stacks[q], buf, sizeof(buf)),
			  "[stack cut short];tokio::runtime::run;epoll_wait");
		CHECK_EQ_U64(d.stacks[t].frames[0]->kind, PFRAME_SPECIAL);
	}

	/* folded: on-CPU only, sorted, weights */
	{
		char *text = NULL;
		size_t len = 0;
		FILE *f = must(open_memstream(&text, &len));

		projector__fill(p, &d);
		CHECK(folded__write(f, &d, 0) == 0);
		fclose(f);
		CHECK_STR(text, "[not in a poll];main;tokio::runtime::run;epoll_wait 1\n"
				"[runtime];demo::task;demo::middle;demo::leaf;demo::spin 2\n"
				"[runtime];epoll_wait 1\n"
				"[stack cut short];demo::middle;demo::leaf;demo::spin 1\n"
				"[stack cut short];tokio::runtime::run;epoll_wait 1\n"
				"[unknown] 1\n");
		free(text);
		f = must(open_memstream(&text, &len));
		CHECK(folded__write(f, &d, 1) == 0);
		fclose(f);
		CHECK_STR(text, "[runtime];demo::task;demo::middle;demo::leaf;demo::spin 5000\n");
		CHECK_EQ_U64(d.stacks[o].samples, 1); /* the off-CPU stack: one block */
		free(text);
	}

	/* folded text: ';' inside a name, inlined leaf functions, equal lines merged */
	{
		static const struct uframe arr = {.name = "demo::sum<[u8; 4]>",
						  .linkage = "_ZN4demo3sumE",
						  .inlined = true,
						  .module = "/bin/demo"};
		static const struct uframe arr2 = {.name = "demo::sum<[u8; 4]>",
						   .linkage = "_ZN4demo3sumE",
						   .inlined = true,
						   .module = "/bin/other"};
		const struct uframe *a1[] = {&arr, &leaf, &middle, &task};
		const struct uframe *a2[] = {&arr2, &leaf, &middle, &task};
		struct projector *q = must(projector__new(&m, false));
		struct profile_data dq = {0};
		char *text = NULL;
		size_t len = 0;
		FILE *f;

		CHECK(projector__add(q, a1, 4, &s) >= 0);
		CHECK(projector__add(q, a2, 4, &s) >= 0); /* another module: another stack */
		projector__fill(q, &dq);
		CHECK_EQ_U64(dq.nstacks, 2);
		f = must(open_memstream(&text, &len));
		CHECK(folded__write(f, &dq, 0) == 0);
		fclose(f);
		CHECK_STR(
		    text,
		    "[runtime];demo::task;demo::middle;demo::leaf;demo::sum<[u8, 4]>_[i] 2\n");
		free(text);
		projector__free(q);
	}

	/* one stack of 600 frames never seen before: the frame tables grow mid-stack */
	{
		static struct uframe deep[600];
		static char names_buf[600][32];
		const struct uframe *st[602];
		struct projector *q = must(projector__new(&m, false));
		struct profile_data dq = {0};

		for (int i = 0; i < 600; i++) {
			snprintf(names_buf[i], sizeof(names_buf[i]), "demo::f%d", i);
			deep[i] = (struct uframe){.name = names_buf[i], .module = "/bin/demo"};
			st[i] = &deep[i];
		}
		st[600] = &task; /* the task polls all of it */
		st[601] = &run;
		CHECK(projector__add(q, st, 602, &s) == 0);
		projector__fill(q, &dq);
		CHECK_EQ_U64(dq.stacks[0].nframes, 2 + 600);
		CHECK_STR(dq.stacks[0].frames[1]->name, "demo::task");
		CHECK_STR(dq.stacks[0].frames[2]->name, "demo::f599");
		CHECK_STR(dq.stacks[0].frames[601]->name, "demo::f0");
		projector__free(q);
	}

	/* no model: everything is outside a poll */
	{
		struct projector *q = must(projector__new(NULL, false));
		struct profile_data dq = {0};

		CHECK(projector__add(q, hot, 8, &s) == 0);
		projector__fill(q, &dq);
		CHECK_EQ_U64(dq.nsamples, 0);
		CHECK(dq.stacks[0].frames[0]->kind == PFRAME_SPECIAL);
		projector__free(q);
	}
	projector__free(p);
	model__free(&m);
	TEST_MAIN_END();
}
