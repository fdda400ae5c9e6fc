/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The privilege check of the commands that load BPF (trace, profile): done before
 * anything else, with a message that names what is missing and why.
 */
#ifndef ASYNCBPF_PRIVILEGE_H
#define ASYNCBPF_PRIVILEGE_H

#include <stdbool.h>

/* Root, or CAP_BPF + CAP_PERFMON, in the initial user namespace. */
bool privilege__bpf_ok(void);
/*
 * Explain on stderr, as `cmd`, what is missing: the capabilities, a user namespace,
 * and the system settings that would still stop an unprivileged user
 * (unprivileged_bpf_disabled) or even root (lockdown=confidentiality).
 */
void privilege__explain(const char *cmd);

#endif
