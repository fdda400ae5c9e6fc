// SPDX-License-Identifier: GPL-2.0
/* The verbosity every module's pr_info/pr_debug obeys (log.h); the command line sets it. */
#include "lib/log.h"

int log_verbosity = 1;
