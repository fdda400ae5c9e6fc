/* SPDX-License-Identifier: GPL-2.0 */
/*
 * asyncbpf check: load, attach and fire one minimal BPF program per kernel
 * feature, and report which work here and, for those that do not, why.
 * See docs/check.md.
 */
#ifndef ASYNCBPF_CHECK_H
#define ASYNCBPF_CHECK_H

/*
 * `asyncbpf check [-v] [--json]`; argv[0] is the subcommand name.
 * Returns the exit status: 0 when every feature asyncbpf requires works,
 * EXIT_KERNEL (7) when one does not, EXIT_NO_PERMISSION (4) without
 * CAP_BPF+CAP_PERFMON (or CAP_SYS_ADMIN), EXIT_USAGE (2) on a bad command line.
 */
int cmd_check(int argc, char **argv);

#endif
