// SPDX-License-Identifier: GPL-2.0
/* Facts of a live process's mappings (procmaps.h). */
#include "lib/procmaps.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

int proc__load_bias(pid_t pid, bool pie, uint64_t *bias)
{
	char path[64], exe[PATH_MAX], line[PATH_MAX + 128];
	unsigned long start, end, off;
	ssize_t n;
	FILE *f;
	int name_at;

	*bias = 0;
	if (!pie)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n < 0)
		return -errno;
	exe[n] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		name_at = 0;
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &start, &end, &off, &name_at) < 3 ||
		    !name_at)
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (off == 0 && !strcmp(line + name_at, exe)) {
			*bias = start;
			fclose(f);
			return 0;
		}
	}
	fclose(f);
	return -ENOENT;
}

#define MAX_EXEC_MAPS 16

int proc__exe_offsets_to_addrs(pid_t pid, const unsigned long *offsets, uint64_t *addrs, size_t n)
{
	char path[64], exe[PATH_MAX], line[PATH_MAX + 128], perms[8];
	struct {
		unsigned long start, end, off;
	} maps[MAX_EXEC_MAPS];
	unsigned long start, end, off;
	size_t nr = 0;
	ssize_t len;
	FILE *f;
	int name_at;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	len = readlink(path, exe, sizeof(exe) - 1);
	if (len < 0)
		return -errno;
	exe[len] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (nr < MAX_EXEC_MAPS && fgets(line, sizeof(line), f)) {
		name_at = 0;
		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &start, &end, perms, &off,
			   &name_at) < 4 ||
		    !name_at || perms[2] != 'x')
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (!strcmp(line + name_at, exe))
			maps[nr].start = start, maps[nr].end = end, maps[nr++].off = off;
	}
	fclose(f);
	for (size_t i = 0; i < n; i++) {
		addrs[i] = 0;
		for (size_t k = 0; k < nr; k++)
			if (offsets[i] >= maps[k].off &&
			    offsets[i] - maps[k].off < maps[k].end - maps[k].start) {
				addrs[i] = maps[k].start + (offsets[i] - maps[k].off);
				break;
			}
	}
	return 0;
}

int proc__read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}
