/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The binary to analyze: a path or a running process, opened with libdwfl so that
 * separate debuginfo is found by build-id and .gnu_debuglink.
 */
#ifndef ASYNCBPF_TARGET_H
#define ASYNCBPF_TARGET_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/hashmap.h"

#define TARGET_MAX_SEGMENTS 64

struct load_segment {
	uint64_t vaddr, memsz, filesz, offset;
	uint32_t flags; /* PF_X, PF_W, PF_R */
};

struct target {
	char display[PATH_MAX];	    /* what the user named: "/bin/x" or "pid 42 (/bin/x)" */
	char path[PATH_MAX];	    /* the file opened */
	char search_path[PATH_MAX]; /* where debuglink lookups start (resolved through
				       /proc/PID/root) */
	int fd;
	Elf *elf; /* the executable itself (ours, not dwfl's) */
	GElf_Ehdr ehdr;
	Dwfl *dwfl;
	Dwfl_Module *module;
	Dwarf *dwarf;	 /* NULL when there is no DWARF */
	Dwarf_Addr bias; /* dwfl_module_* addresses minus link-time addresses */
	const char *debuginfo_path;
	char build_id[2 * 64 + 1];
	bool pie;
	uint64_t debug_info_size;
	char debuglink[256]; /* .gnu_debuglink name, "" if none */
	struct load_segment segs[TARGET_MAX_SEGMENTS];
	unsigned nr_segs;
	struct u64_map *relocs; /* link-time address -> value the loader writes (target__pointer) */
	bool relocs_read;
};

struct target_opts {
	bool search_debuginfo; /* false: only DWARF inside the file itself (the fuzzer) */
};

/*
 * Open an ELF file / a process's executable. Return 0 or -errno with a message in
 * err: -ENOENT (no such file), -ESRCH (no such process), -EACCES/-EPERM,
 * -ENOEXEC (not an ELF, truncated, corrupt), -ENOMEM.
 */
int target__open_path(struct target *t, const char *path, const struct target_opts *o, char *err,
		      size_t errlen);
int target__open_pid(struct target *t, pid_t pid, const struct target_opts *o, char *err,
		     size_t errlen);
/* Open an already-open descriptor (memfd in the fuzzer); takes ownership of fd. */
int target__open_fd(struct target *t, int fd, const char *name, const struct target_opts *o,
		    char *err, size_t errlen);
void target__close(struct target *t);

/* libdwfl find_debuginfo callback: build-id and .gnu_debuglink lookups on local disk
 * only (never debuginfod). Also used by the profiler's unwinder (unwind.c). */
int target__find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			   const char *file_name, const char *debuglink_file,
			   GElf_Word debuglink_crc, char **debuginfo_file_name);

/* File offset of a virtual address inside an executable PT_LOAD, or -ENOENT. */
int target__file_offset(const struct target *t, uint64_t addr, uint64_t *offset);
/* Bytes of [addr, addr+size) from the executable's sections; -ENOENT / -ERANGE. */
int target__code(const struct target *t, uint64_t addr, uint64_t size, const uint8_t **bytes);
/* Bytes of [addr, addr+size) from any section loaded at run time (.rodata: jump
 * tables); -ENOENT / -ERANGE. */
int target__data(const struct target *t, uint64_t addr, uint64_t size, const uint8_t **bytes);
/*
 * The 8-byte value at a link-time address as the program sees it once loaded:
 * what a dynamic relocation writes there (position-independent binaries keep
 * vtables as R_X86_64_RELATIVE relocations over zeros), else the file's bytes.
 * Returns 0, -ENOENT (not in the file) or -ENOMEM.
 */
int target__pointer(struct target *t, uint64_t addr, uint64_t *value);
/*
 * Every 8-byte word of the loaded image that will hold one of `values` (keys of the
 * map): the dynamic relocations that write it, or (no relocations: a non-PIE static
 * image) the data words that hold it. cb(ctx, link-time address, value); a non-zero
 * return stops the walk and is returned.
 */
int target__words_holding(struct target *t, const struct u64_map *values,
			  int (*cb)(void *ctx, uint64_t at, uint64_t value), void *ctx);
/* The same, from the file's own data words only (8-byte aligned, every allocated
 * PROGBITS section that is not code): what a non-PIE image holds without a
 * relocation. */
int target__data_words_holding(struct target *t, const struct u64_map *values,
			       int (*cb)(void *ctx, uint64_t at, uint64_t value), void *ctx);
/* Why there is no DWARF: a sentence for the user (debuglink/build-id findings). */
void target__explain_missing_dwarf(const struct target *t, char *buf, size_t len);

#endif
