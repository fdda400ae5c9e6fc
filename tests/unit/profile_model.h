/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The hand-made profile the profile writers' tests share (test_flamegraph_svg.c,
 * test_pprof.c, test_perfetto_profile.c, and tests/test_profile_writers.py through
 * their `--write FILE`). Stacks, root first:
 *
 *   S0 [runtime] handler fetch(inlined) parse            on   50
 *   S1 [runtime] handler fetch(inlined) from_utf8        on   30
 *   S2 [runtime] handler parse                           on   10
 *   S3 [not in a poll] EVIL                              on    5
 *   S4 [runtime] handler fetch(inlined)                  off   4 samples, 4 ms
 *   S5 [runtime] tokio park                              off   2 samples, 1 ms
 *   S6 [runtime] HUGE (a 20000-byte name)                on    1
 *   S7 [runtime] handler' fetch parse                    on    5
 *
 * handler' is another frame (pc 0x1010, line 12) named like handler: merged with it
 * in the flame graph, the same pprof Function but another Location. fetch is inlined
 * into handler (same pc 0x1000), not into handler' (another pc).
 * On-CPU total 101 samples; off-CPU 6 samples, 5,000,000 ns. Lost and cut short
 * (metadata only): 7 dropped, 3 unwind failed, 5 cut short by a 128 KiB stack copy,
 * 2 off-CPU blocks lost (1.5 ms).
 */
#ifndef ASYNCBPF_TEST_PROFILE_MODEL_H
#define ASYNCBPF_TEST_PROFILE_MODEL_H

#include "model/profile_data.h"
#include "testlib.h"

#define PM_PID	    4242
#define PM_MAIN_RS  "/src/demo/src/main.rs"
#define PM_DEMO_BIN "/usr/bin/demo"
#define PM_HUGE_LEN 20000
/* '<', '&', quotes, a control character, a lone 0xff, a truncated sequence */
#define PM_EVIL_NAME "evil<&\"'\x01\xff>::Fut<\xe2\x82>"
/* the same as valid UTF-8: each byte that is not UTF-8 is U+FFFD */
#define PM_EVIL_UTF8 "evil<&\"'\x01\xef\xbf\xbd>::Fut<\xef\xbf\xbd\xef\xbf\xbd>"

enum pm_frame {
	PM_RUNTIME,
	PM_HANDLER,
	PM_FETCH,
	PM_PARSE,
	PM_FROM_UTF8,
	PM_NOT_IN_POLL,
	PM_EVIL,
	PM_PARK,
	PM_HUGE,
	PM_HANDLER2,
	PM_FETCH2,
	PM_NFRAMES,
};

struct profile_model {
	struct pframe frames[PM_NFRAMES];
	const struct pframe *stack_frames[8][4];
	struct pstack stacks[8];
	struct psample samples[12];
	struct pthread_name threads[2];
	struct profile_data p;
	char *huge;
};

static inline void profile_model__build(struct profile_model *m)
{
	static const uint8_t shape[8][5] = {
	    /* nframes, frames... */
	    {4, PM_RUNTIME, PM_HANDLER, PM_FETCH, PM_PARSE},
	    {4, PM_RUNTIME, PM_HANDLER, PM_FETCH, PM_FROM_UTF8},
	    {3, PM_RUNTIME, PM_HANDLER, PM_PARSE},
	    {2, PM_NOT_IN_POLL, PM_EVIL},
	    {3, PM_RUNTIME, PM_HANDLER, PM_FETCH},
	    {2, PM_RUNTIME, PM_PARK},
	    {2, PM_RUNTIME, PM_HUGE},
	    {4, PM_RUNTIME, PM_HANDLER2, PM_FETCH2, PM_PARSE},
	};
	static const struct {
		bool offcpu;
		uint64_t samples, weight;
	} totals[8] = {{0, 50, 50},	{0, 30, 30},	 {0, 10, 10}, {0, 5, 5},
		       {1, 4, 4000000}, {1, 2, 1000000}, {0, 1, 1},   {0, 5, 5}};
	/* time, tid, stack */
	static const uint64_t timeline[12][3] = {
	    {1100000000, 100, 0}, {1200000000, 100, 1}, {1300000000, 101, 2}, {1400000000, 100, 3},
	    {1500000000, 101, 4}, {1600000000, 102, 5}, {1700000000, 100, 6}, {1800000000, 101, 7},
	    {1900000000, 100, 0}, {2000000000, 102, 0}, {2100000000, 101, 4}, {2200000000, 100, 1},
	};
	struct pframe *f = m->frames;

	memset(m, 0, sizeof(*m));
	m->huge = must(malloc(PM_HUGE_LEN + 1));
	for (size_t i = 0; i < PM_HUGE_LEN; i++)
		m->huge[i] = (char)('a' + i % 26);
	m->huge[PM_HUGE_LEN] = '\0';

	f[PM_RUNTIME] =
	    (struct pframe){.name = "[runtime]", .kind = PFRAME_RUNTIME, .origin = PORIGIN_RUNTIME};
	f[PM_HANDLER] = (struct pframe){"demo::handler", PM_MAIN_RS, 10,     PFRAME_FUTURE,
					PORIGIN_USER,	 false,	     0x1000, PM_DEMO_BIN};
	f[PM_FETCH] = (struct pframe){"demo::fetch", PM_MAIN_RS, 20,	 PFRAME_FUTURE,
				      PORIGIN_USER,  true,	 0x1000, PM_DEMO_BIN};
	f[PM_PARSE] = (struct pframe){"demo::parse", PM_MAIN_RS, 40,	 PFRAME_FUNCTION,
				      PORIGIN_USER,  false,	 0x2000, PM_DEMO_BIN};
	f[PM_FROM_UTF8] = (struct pframe){"core::str::from_utf8",
					  "/rustc/library/core/src/str.rs",
					  87,
					  PFRAME_FUNCTION,
					  PORIGIN_STD,
					  false,
					  0x3000,
					  PM_DEMO_BIN};
	f[PM_NOT_IN_POLL] = (struct pframe){
	    .name = "[not in a poll]", .kind = PFRAME_SPECIAL, .origin = PORIGIN_OTHER};
	f[PM_EVIL] = (struct pframe){PM_EVIL_NAME,    "/src/evil&<.rs", 7,
				     PFRAME_FUNCTION, PORIGIN_OTHER,	false,
				     0x4000,	      PM_DEMO_BIN};
	f[PM_PARK] = (struct pframe){"tokio::runtime::park", NULL,  0,	    PFRAME_FUNCTION,
				     PORIGIN_RUNTIME,	     false, 0x5000, "/usr/lib/libtokio.so"};
	f[PM_HUGE] = (struct pframe){m->huge,	   NULL,  0,	  PFRAME_FUNCTION,
				     PORIGIN_USER, false, 0x6000, PM_DEMO_BIN};
	f[PM_HANDLER2] = f[PM_HANDLER];
	f[PM_HANDLER2].addr = 0x1010;
	f[PM_HANDLER2].line = 12;
	f[PM_FETCH2] = f[PM_FETCH];
	f[PM_FETCH2].addr = 0x1020;
	f[PM_FETCH2].inlined = false;

	for (int s = 0; s < 8; s++) {
		for (int i = 0; i < shape[s][0]; i++)
			m->stack_frames[s][i] = &f[shape[s][i + 1]];
		m->stacks[s] = (struct pstack){m->stack_frames[s], shape[s][0], totals[s].offcpu,
					       totals[s].samples, totals[s].weight};
	}
	for (int i = 0; i < 12; i++) {
		uint32_t s = (uint32_t)timeline[i][2];
		m->samples[i] = (struct psample){timeline[i][0], PM_PID, (uint32_t)timeline[i][1],
						 s, m->stacks[s].offcpu ? 1000000 : 1};
	}
	m->threads[0] = (struct pthread_name){100, "worker-1"};
	m->threads[1] = (struct pthread_name){101, "worker<2>"};
	m->p = (struct profile_data){
	    .stacks = m->stacks,
	    .nstacks = 8,
	    .samples = m->samples,
	    .nsamples = 12,
	    .threads = m->threads,
	    .nthreads = 2,
	    .pid = PM_PID,
	    .process_name = "demo-proc",
	    .event = "cpu-clock",
	    .freq_hz = 1000,
	    .start_ns = 1000000000,
	    .end_ns = 3000000000,
	    .period_ns = 1000000,
	    .dropped = 7,
	    .unwind_failed = 3,
	    .cut_short = 5,
	    .stack_size = 128 << 10,
	    .offcpu_lost = 2,
	    .offcpu_lost_ns = 1500000,
	};
}

static inline void profile_model__free(struct profile_model *m)
{
	free(m->huge);
	m->huge = NULL;
}

/* Writes what write() makes of p into memory; *len its size; returns write()'s result. */
static inline int profile_model__write_mem(int (*write)(FILE *, const struct profile_data *),
					   const struct profile_data *p, char **buf, size_t *len)
{
	FILE *f = must(open_memstream(buf, len));
	int err = write(f, p);

	fclose(f);
	return err;
}

#endif
