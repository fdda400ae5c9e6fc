// SPDX-License-Identifier: GPL-2.0
#include "analyze/mapped_section.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Is [p, p+len) inside one mapping of a file (an inode, not anonymous memory)? */
static bool in_file_mapping(const void *p, size_t len)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096];
	bool ok = false;
	uintptr_t a = (uintptr_t)p;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		uintptr_t lo, hi;
		unsigned long inode;
		char perms[8];
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %*s %*s %lu", &lo, &hi, perms,
			   &inode) != 4)
			continue;
		if (a >= lo && a < hi) {
			/* private and not writable: libelf never modifies these bytes */
			ok = inode != 0 && a + len <= hi && perms[3] == 'p';
			break;
		}
	}
	fclose(f);
	return ok;
}

void mapped_section__init(struct mapped_section *s, Elf *elf, const char *name)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	memset(s, 0, sizeof(*s));
	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *n;
		if (!gelf_getshdr(scn, &sh) || !(n = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strcmp(n, name) != 0)
			continue;
		if (sh.sh_flags & SHF_COMPRESSED)
			return; /* decompressed into malloc'd memory */
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_type != ELF_T_BYTE)
			return;
		s->base = d->d_buf;
		s->size = d->d_size;
		s->releasable = in_file_mapping(s->base, s->size);
		return;
	}
}

void mapped_section__release(const struct mapped_section *s, uint64_t from, uint64_t to)
{
	long page = sysconf(_SC_PAGESIZE);

	if (!s->releasable || page <= 0 || from >= to || to > s->size)
		return;
	uintptr_t lo = ((uintptr_t)s->base + from + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
	uintptr_t hi = ((uintptr_t)s->base + to) & ~((uintptr_t)page - 1);
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED); /* advice: failure is harmless */
}
