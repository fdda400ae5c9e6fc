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
/* len bytes of pid's memory at addr (process_vm_readv): 0 or -errno. */
int proc__read(pid_t pid, uint64_t addr, void *buf, size_t len);

#endif
