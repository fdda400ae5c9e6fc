// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for everything a hostile binary reaches: target (libelf/libdwfl
 * opening, program headers, .gnu_debuglink, build-id), the analyzer's DWARF walk
 * and await resolution, the disassembly of poll fns, the call-site index and the
 * exits in the callers, and both exporters' string
 * escaping of what the walk interned.
 *
 * The input is the whole ELF file, put in a memfd (target__open_fd takes ownership
 * of it). Separate debuginfo is never searched: only the input is read.
 *
 * Per-input invariants besides ASan/UBSan/LSan: no file descriptor survives an
 * iteration (checked, aborts), and the analyzer returns 0 or a negative errno with
 * a message. Run through tests/fuzz/run.sh or tests/test_fuzz.py.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "analyze/analyzer.h"
#include "export/export.h"
#include "model/model.h"
#include "analyze/target.h"

/* the lowest descriptors, checked for leaks after each input (memfd, its dup) */
#define FD_LEAK_WINDOW 64

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	elf_version(EV_CURRENT);
	/* libdwfl must never go to the network, whatever the environment says */
	unsetenv("DEBUGINFOD_URLS");
	unsetenv("ASYNCBPF_DEBUGINFOD");
	unsetenv("ASYNCBPF_DEBUG_AWAITS");
	devnull = fopen("/dev/null", "w");
	if (!devnull) {
		perror("fuzz_analyzer: /dev/null");
		abort();
	}
	return 0;
}

static void write_all(int fd, const uint8_t *data, size_t size)
{
	while (size) {
		ssize_t n = write(fd, data, size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			perror("fuzz_analyzer: write to memfd");
			abort();
		}
		data += n;
		size -= (size_t)n;
	}
}

/* Both exporters over the model, with a selection derived from the model so the
 * selected-neighbour paths of the DOT writer run too. */
static void export_model(const struct model *m)
{
	if (export_json__write(m, devnull) && ferror(devnull))
		clearerr(devnull);
	export_dot__write(m, NULL, devnull);
	if (m->nr_futures) {
		bool *selected = calloc(m->nr_futures, sizeof(*selected));
		if (selected) {
			for (uint32_t i = 0; i < m->nr_futures; i += 2)
				selected[i] = true;
			export_dot__write(m, selected, devnull);
			free(selected);
		}
	}
	char name[64];
	for (uint32_t i = 0; i < m->nr_futures; i++)
		future__display_name(&m->futures[i], name, sizeof(name));
	fflush(devnull);
	clearerr(devnull);
}

/* Which of the lowest FD_LEAK_WINDOW descriptors are open: the process may have
 * inherited some with gaps, so leaks are found by comparing before and after. */
static uint64_t open_fds(void)
{
	uint64_t bits = 0;

	for (int fd = 0; fd < FD_LEAK_WINDOW; fd++)
		if (fcntl(fd, F_GETFD) != -1)
			bits |= 1ULL << fd;
	return bits;
}

static void check_no_fd_leak(uint64_t before)
{
	uint64_t leaked = open_fds() & ~before;

	for (int fd = 0; fd < FD_LEAK_WINDOW; fd++) {
		if (!(leaked & (1ULL << fd)))
			continue;
		char link[64], dest[256] = "?";
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, dest, sizeof(dest) - 1);
		if (n > 0)
			dest[n] = '\0';
		fprintf(stderr,
			"fuzz_analyzer: fd %d (%s) still open after the input was closed: "
			"descriptor leak\n",
			fd, dest);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct target t; /* ~12 KiB of paths: not on the stack */
	/* only DWARF inside the input itself: never a debuginfo search */
	const struct target_opts target_opts = {.search_debuginfo = false};
	const struct analyzer_opts analyzer_opts = {.progress = false, .caller_exits = true};
	struct model m;
	char err[512];

	uint64_t fds_before = open_fds();
	int fd = memfd_create("fuzz-input", MFD_CLOEXEC);
	if (fd < 0) {
		perror("fuzz_analyzer: memfd_create");
		abort();
	}
	write_all(fd, data, size);
	if (lseek(fd, 0, SEEK_SET) != 0) {
		perror("fuzz_analyzer: lseek");
		abort();
	}

	memset(&t, 0, sizeof(t));
	t.fd = -1;
	err[0] = '\0';
	int r = target__open_fd(&t, fd, "fuzz-input", &target_opts, err, sizeof(err));
	if (r == 0) {
		model__init(&m);
		err[0] = '\0';
		r = analyzer__analyze(&t, &analyzer_opts, &m, err, sizeof(err));
		if (r > 0 || (r < 0 && !err[0])) {
			fprintf(stderr,
				"fuzz_analyzer: analyzer__analyze returned %d with message '%s'\n",
				r, err);
			abort();
		}
		if (r == 0) /* callers export only a finished model */
			export_model(&m);
		model__free(&m);
	} else if (r > 0 || !err[0]) {
		fprintf(stderr, "fuzz_analyzer: target__open_fd returned %d with message '%s'\n", r,
			err);
		abort();
	}
	target__close(&t);
	check_no_fd_leak(fds_before);
	return 0;
}
