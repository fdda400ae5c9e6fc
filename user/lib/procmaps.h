/* SPDX-License-Identifier: GPL-2.0 */
/* A live process's executable mapping and memory, read from outside. */
#ifndef ASYNCBPF_LIB_PROCMAPS_H
#define ASYNCBPF_LIB_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The load bias of pid's executable (0 for a non-PIE one): 0 or -errno. */
int proc__load_bias(pid_t pid, bool pie, uint64_t *bias);
/*
 * The run-time addresses of file offsets of pid's executable, through its executable
 * mappings (/proc/PID/maps): addrs[i] for offsets[i], 0 where no executable mapping
 * of the file covers it. 0, or -errno when the maps cannot be read.
 */
int proc__exe_offsets_to_addrs(pid_t pid, const unsigned long *offsets, uint64_t *addrs, size_t n);
/* len bytes of pid's memory at addr (process_vm_readv): 0 or -errno. */
int proc__read(pid_t pid, uint64_t addr, void *buf, size_t len);

#endif
