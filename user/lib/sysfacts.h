/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Facts about the running system that explain why a BPF feature may not work: kernel
 * config options, the lockdown LSM, unprivileged_bpf_disabled, capabilities, user
 * namespaces, tracefs. Each is read from the system (procfs, sysfs, the kernel
 * config), never guessed; a fact that cannot be read says so.
 */
#ifndef ASYNCBPF_SYSFACTS_H
#define ASYNCBPF_SYSFACTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

/*
 * Append "; fact" to a list of facts in buf (NUL-terminated, size bytes), or just
 * "fact" when the list is empty. A full list is left as it is, or truncated.
 */
__attribute__((format(printf, 3, 4))) void sysfacts__add_fact(char *buf, size_t size,
							      const char *fmt, ...);

/* CLOCK_MONOTONIC in ns (the clock of bpf_ktime_get_ns). */
uint64_t sysfacts__now_ns(void);
bool sysfacts__path_exists(const char *path);
/*
 * CPU time (user + system, every thread, ns) process pid has used so far, from
 * /proc/PID/stat (still readable while it is a zombie); -1 if unreadable.
 */
int64_t sysfacts__process_cpu_ns(int pid);

/*
 * The kernel's voluntary and involuntary context-switch counts of pid's threads
 * (voluntary_ctxt_switches and nonvoluntary_ctxt_switches of every
 * /proc/PID/task/TID/status, summed: the threads alive now). 0 or -errno.
 */
int sysfacts__process_switches(int pid, uint64_t *voluntary, uint64_t *involuntary);

/*
 * The first line of a small file (procfs, sysfs) without its newline, truncated to
 * size - 1 bytes. Returns 0 or -errno when the file cannot be opened.
 */
int sysfacts__read_small_file(const char *path, char *buf, size_t size);

/*
 * Is CONFIG_ option `name` set (to anything) in /proc/config.gz, else in
 * /boot/config-<release>? Returns 1 set, 0 not set, -ENOENT when neither file can be
 * read. *source, when source is not NULL, names the file consulted for a message:
 * "/proc/config.gz" or "/boot/config".
 */
int sysfacts__kernel_config(const char *release, const char *name, const char **source);

/*
 * The lockdown LSM's state ("none", "integrity", "confidentiality"; "unknown" when
 * nothing tells) into state, and how it was learnt into how: from securityfs, else
 * from lockdown= on the command line, else from the kernel config of `release`.
 */
void sysfacts__lockdown(const char *release, char *state, size_t state_size, char *how,
			size_t how_size);

/* /proc/sys/kernel/unprivileged_bpf_disabled, or -1 when it cannot be read. */
int sysfacts__unprivileged_bpf_disabled(void);
/* What a value of unprivileged_bpf_disabled means, for a person. */
const char *sysfacts__unprivileged_bpf_meaning(int value);

/*
 * Are we in the initial user namespace? Capabilities held in any other do not let a
 * process load BPF. True on a kernel without user namespaces.
 */
bool sysfacts__in_initial_user_namespace(void);
/* Is capability `cap` (CAP_* from <linux/capability.h>) in our effective set? */
bool sysfacts__has_capability(int cap);
/* CAP_BPF+CAP_PERFMON (Linux 5.8) or CAP_SYS_ADMIN, in the effective set. */
bool sysfacts__bpf_privileged(void);

/* Where tracefs is mounted (with its events), or NULL when it is not. */
const char *sysfacts__tracefs_dir(void);

#endif
