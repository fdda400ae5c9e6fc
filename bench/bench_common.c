// SPDX-License-Identifier: GPL-2.0
/* Helpers of the trace benchmark's tools (bench_common.h). */
#include "bench_common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "lib/exitcodes.h"
#include "analyze/panic_strategy.h"
#include "select/selection.h"
#include "lib/uprobe_multi.h"

uint64_t bench__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int bench__plan(const char *path, char **patterns, int nr_patterns, bool all_crates,
		enum bench_exits exits, struct model *m, struct trace_plan *plan)
{
	char why[256] = "";
	bool abort = exits == BENCH_EXITS_AUTO &&
		     panic_strategy__detect(path, why, sizeof(why)) == PANIC_STRATEGY_ABORT;
	enum plan_exits mode = exits == BENCH_EXITS_URETPROBE || abort ? PLAN_EXITS_URETPROBE
			       : exits == BENCH_EXITS_RET	       ? PLAN_EXITS_RET
								       : PLAN_EXITS_EMULATED;
	struct target_spec spec = {.path = path};
	struct selection sel = {0};
	char err[512] = "";
	int status, r;

	status = load_model("bench", &spec, m);
	if (status) {
		model__free(m);
		return status;
	}
	if (selection__init(&sel, m)) {
		fprintf(stderr, "bench: out of memory\n");
		status = EXIT_FAILURE_INTERNAL;
		goto fail;
	}
	for (int i = 0; i < nr_patterns; i++)
		if (!selection__add_pattern(&sel, m, patterns[i])) {
			fprintf(stderr, "bench: pattern '%s' matches no future of %s\n",
				patterns[i], path);
			status = EXIT_NO_MATCH;
			goto fail;
		}
	if (!nr_patterns)
		selection__add_default(&sel, m, all_crates);
	r = trace_plan__build(plan, m, &sel, mode, 0, err, sizeof(err));
	if (r) {
		fprintf(stderr, "bench: %s: %s\n", path, err);
		status = r == -ENOENT ? EXIT_NO_MATCH : EXIT_FAILURE_INTERNAL;
		goto fail;
	}
	selection__free(&sel);
	return EXIT_OK;
fail:
	selection__free(&sel);
	model__free(m);
	return status;
}

int bench__attach(int prog_fd, const char *path, const struct trace_plan *plan, pid_t pid,
		  int links[2])
{
	unsigned long *offsets = calloc(plan->nr ? plan->nr : 1, sizeof(*offsets));
	__u64 *cookies = calloc(plan->nr ? plan->nr : 1, sizeof(*cookies));
	int r = 0;

	links[0] = links[1] = -1;
	if (!offsets || !cookies) {
		r = -ENOMEM;
		goto out;
	}
	for (int ret = 0; ret < 2 && !r; ret++) {
		size_t n = 0;

		for (uint32_t i = 0; i < plan->nr; i++)
			if ((plan->returns && plan->returns[i]) == (bool)ret) {
				offsets[n] = plan->offsets[i];
				cookies[n++] = plan->cookies[i];
			}
		if (!n)
			continue;
		links[ret] = uprobe_multi__attach(prog_fd, path, offsets, cookies, n, pid, ret);
		if (links[ret] < 0) {
			r = links[ret];
			links[ret] = -1;
		}
	}
	if (r)
		for (int i = 0; i < 2; i++)
			if (links[i] >= 0) {
				close(links[i]);
				links[i] = -1;
			}
out:
	free(offsets);
	free(cookies);
	return r;
}
