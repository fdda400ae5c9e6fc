// SPDX-License-Identifier: GPL-2.0
/* errno → documented exit status (exitcodes.h, docs/exit-codes.md). */
#include "lib/exitcodes.h"

#include <errno.h>

int exit_code_from_errno(int err)
{
	switch (err < 0 ? -err : err) {
	case 0: return EXIT_OK;
	case ENOENT:
	case ESRCH: return EXIT_NO_INPUT;
	case EACCES:
	case EPERM: return EXIT_NO_PERMISSION;
	case ENOEXEC:
	case EINVAL:
	case EFBIG:
	case EISDIR: return EXIT_BAD_INPUT;
	case ENOSYS:
	case EOPNOTSUPP: return EXIT_KERNEL;
	default: return EXIT_FAILURE_INTERNAL;
	}
}
