// SPDX-License-Identifier: GPL-2.0
/*
 * The code asyncbpf check's uprobes fire on (check_target.h): a function in assembly,
 * so that each probe lands on a known instruction, and the file offsets a uprobe
 * needs for those instructions, from /proc/self/maps.
 */
#include "lib/probe_target.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/*
 * What the uprobes fire on, in assembly so each probe lands on a known
 * instruction: an entry the kernel emulates (nop), a mid-function instruction it
 * single-steps, and the `ret` asyncbpf probes for exits. Returns value + 42.
 */
int check_probe_target(int value);
extern const char check_probe_target_insn[], check_probe_target_ret[];

#if defined(__x86_64__)
#define CHECK_TARGET_BODY   "nop\n" LABEL(insn) "leal 42(%rdi), %eax\n" LABEL(ret) "ret\n"
#define CHECK_FUNCTION_TYPE "@function"
#elif defined(__aarch64__)
#define CHECK_TARGET_BODY   "nop\n" LABEL(insn) "add w0, w0, #42\n" LABEL(ret) "ret\n"
#define CHECK_FUNCTION_TYPE "%function"
#else
#error "asyncbpf check: no probe target for this architecture"
#endif
#define LABEL(name)                                                                                \
	".globl check_probe_target_" #name "\n.hidden check_probe_target_" #name                   \
	"\ncheck_probe_target_" #name ":\n"

__asm__(".pushsection .text\n"
	".globl check_probe_target\n"
	".hidden check_probe_target\n"
	".type check_probe_target, " CHECK_FUNCTION_TYPE "\n"
	".p2align 4\n"
	"check_probe_target:\n" CHECK_TARGET_BODY ".size check_probe_target, .-check_probe_target\n"
	".popsection\n");

/* /proc/self/maps arithmetic. */
int probe_target__resolve(char *path, size_t size, unsigned long *entry, unsigned long *insn,
			  unsigned long *ret)
{
	const uintptr_t addrs[3] = {(uintptr_t)check_probe_target,
				    (uintptr_t)check_probe_target_insn,
				    (uintptr_t)check_probe_target_ret};
	unsigned long *offsets[3] = {entry, insn, ret};
	char line[PATH_MAX + 128], *name;
	unsigned long start, end, pgoff;
	int found = 0, name_at;
	FILE *maps;

	maps = fopen("/proc/self/maps", "re");
	if (!maps)
		return -errno;
	while (found < 3 && fgets(line, sizeof(line), maps)) {
		name_at = 0;
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &start, &end, &pgoff, &name_at) <
			3 ||
		    !name_at)
			continue;
		name = line + name_at;
		name[strcspn(name, "\n")] = '\0';
		for (int i = 0; i < 3; i++) {
			if (addrs[i] < start || addrs[i] >= end)
				continue;
			if (name[0] != '/' || strstr(name, " (deleted)")) {
				fclose(maps);
				return -ESTALE; /* not a file we can probe, or replaced since */
			}
			snprintf(path, size, "%s", name);
			*offsets[i] = addrs[i] - start + pgoff;
			found++;
		}
	}
	fclose(maps);
	return found == 3 ? 0 : -ENOENT;
}

void probe_target__call(int times)
{
	volatile int sink = 0;

	for (int i = 0; i < times; i++)
		sink += check_probe_target(i);
	(void)sink;
}
