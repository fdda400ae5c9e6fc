// SPDX-License-Identifier: GPL-2.0
/*
 * uprobe_multi links by raw BPF_LINK_CREATE: 89ae89f53d20 "bpf: Add multi uprobe
 * link" (Linux 6.6), with 0b779b61f651 "bpf: Add cookies support for uprobe_multi
 * link" and b733eeade420 "bpf: Add pid filter support for uprobe_multi link" in the
 * same release. libbpf 1.1 has no API for them and Debian's linux-libc-dev 6.1 lacks
 * the uapi, so the attach type and the link_create layout are spelled out here, under
 * our own names so that a newer <linux/bpf.h> cannot clash: prog_fd, target_fd,
 * attach_type and flags, then the uprobe_multi member of the union at offset 16.
 */
#include "lib/uprobe_multi.h"

#include <errno.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#define UPROBE_MULTI_F_RETURN 1 /* BPF_F_UPROBE_MULTI_RETURN */

struct uprobe_multi_link_create {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;	       /* const char * */
	__u64 offsets;	       /* const unsigned long *, file offsets */
	__u64 ref_ctr_offsets; /* const unsigned long *, optional */
	__u64 cookies;	       /* const __u64 *, optional */
	__u32 cnt;
	__u32 uprobe_flags; /* BPF_F_UPROBE_MULTI_RETURN = 1 */
	__u32 pid;
	__u32 padding;
};
_Static_assert(__builtin_offsetof(struct uprobe_multi_link_create, path) == 16,
	       "uprobe_multi sits after the four common link_create fields");

int uprobe_multi__attach(int prog_fd, const char *path, const unsigned long *offsets,
			 const __u64 *cookies, size_t count, pid_t pid, bool retprobe)
{
	struct uprobe_multi_link_create attr = {
	    .prog_fd = prog_fd,
	    .attach_type = UPROBE_MULTI_ATTACH_TYPE,
	    .path = (uintptr_t)path,
	    .offsets = (uintptr_t)offsets,
	    .cookies = (uintptr_t)cookies,
	    .cnt = (__u32)count,
	    .uprobe_flags = retprobe ? UPROBE_MULTI_F_RETURN : 0,
	    .pid = pid,
	};
	int fd;

	if (count > UINT32_MAX)
		return -E2BIG; /* attr.cnt is 32 bits */
	fd = syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}
