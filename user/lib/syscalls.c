// SPDX-License-Identifier: GPL-2.0
/* Syscall names through libseccomp, cached (syscalls.h). */
#include "lib/syscalls.h"

#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHED 1024

static char *names[CACHED];
static char unknown[CACHED][24];

const char *syscall__name(int nr)
{
	static char other[32];

	if (nr < 0)
		return "none";
	if (nr >= CACHED) {
		snprintf(other, sizeof(other), "syscall %d", nr);
		return other;
	}
	if (names[nr])
		return names[nr];
	if (unknown[nr][0])
		return unknown[nr];
	/* the native table: asyncbpf traces processes of its own architecture */
	names[nr] = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
	if (names[nr])
		return names[nr];
	snprintf(unknown[nr], sizeof(unknown[nr]), "syscall %d", nr);
	return unknown[nr];
}
