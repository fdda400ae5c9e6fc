/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Syscall numbers to names for the machine asyncbpf runs on (libseccomp's table:
 * maintained with the kernel's, every architecture). "syscall 451" for a number it
 * does not know, "none" for -1.
 */
#ifndef ASYNCBPF_LIB_SYSCALLS_H
#define ASYNCBPF_LIB_SYSCALLS_H

const char *syscall__name(int nr);

#endif
