/* SPDX-License-Identifier: GPL-2.0 */
/* Documented exit statuses (docs/exit-codes.md): scripts rely on them. */
#ifndef ASYNCBPF_EXITCODES_H
#define ASYNCBPF_EXITCODES_H

enum asyncbpf_exit {
	EXIT_OK = 0,
	EXIT_FAILURE_INTERNAL = 1, /* a bug or out of memory */
	EXIT_USAGE = 2,		   /* bad command line */
	EXIT_NO_INPUT = 3,	   /* file or process not found */
	EXIT_NO_PERMISSION = 4,	   /* cannot read the file/process, or not privileged */
	EXIT_BAD_INPUT = 5,	   /* not ELF, truncated, corrupt, unsupported */
	EXIT_NO_MATCH = 6,	   /* nothing matched the selection */
	EXIT_KERNEL = 7,	   /* a kernel feature the command needs is missing */
	EXIT_OUTPUT = 8,	   /* an output file could not be written */
};

/* Map a negative errno from a loader to the exit status above. */
int exit_code_from_errno(int err);

#endif
