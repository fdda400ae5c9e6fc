/* SPDX-License-Identifier: GPL-2.0 */
/*
 * uprobe_multi links: one BPF_LINK_CREATE attaches a program as u(ret)probes at many
 * offsets of one file, each with its own BPF cookie. Linux 6.6 and later (89ae89f53d20
 * "bpf: Add multi uprobe link"; cookies: 0b779b61f651). libbpf 1.1 has no API for it,
 * so this is the raw syscall (uprobe_multi.c has the layout).
 */
#ifndef ASYNCBPF_UPROBE_MULTI_H
#define ASYNCBPF_UPROBE_MULTI_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * BPF_TRACE_UPROBE_MULTI, under our own name so a newer <linux/bpf.h> cannot clash.
 * A program must be loaded with this expected attach type
 * (bpf_program__set_expected_attach_type()) before uprobe_multi__attach() takes it.
 */
#define UPROBE_MULTI_ATTACH_TYPE 48

/*
 * Attach the loaded program prog_fd as a uprobe (a uretprobe with retprobe) at each
 * of the count file offsets in path, in one link. cookies, when not NULL, holds count
 * values that bpf_get_attach_cookie() returns, one per offset. pid, when not 0, limits
 * the probes to that process (its tgid). Returns the link fd (close it to detach) or
 * -errno: BPF_LINK_CREATE's error (kernels before 6.6 refuse the attach type), or
 * -E2BIG when count does not fit the kernel's 32-bit count.
 */
int uprobe_multi__attach(int prog_fd, const char *path, const unsigned long *offsets,
			 const __u64 *cookies, size_t count, pid_t pid, bool retprobe);

#endif
