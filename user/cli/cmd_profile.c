// SPDX-License-Identifier: GPL-2.0
/*
 * asyncbpf profile -p PID | -- CMD ARGS...: sample the target's threads N times a
 * second (no probe on any poll), unwind each sample with DWARF CFI, project it onto
 * its async stack and write a flame graph (SVG, folded, pprof, Perfetto); print the
 * top async stacks and what was lost. docs/profile.md. The run itself is
 * profile_run.c; several processes (-p A,B, --exe) profile_fleet.c.
 */
#include "cli/commands.h"
#include "cli/profile_args.h"
#include "cli/profile_fleet.h"
#include "cli/profile_run.h"
#include "lib/exitcodes.h"
#include "lib/privilege.h"
#include "session/session.h"

static int profile(const struct profile_args *a)
{
	struct profile_run r = {.a = a, .cpu_start = -1, .cpu_end = -1};
	struct session_hooks hooks;
	int status;

	if ((status = profile_run__open_session(&r)) || (status = profile_run__start(&r)))
		goto out;
	profile_run__hooks(&r, &hooks);
	session__run(r.s, r.rb, &r.budget, &hooks);
	profile_run__stop(&r);
	status = profile_run__report(&r, true);
	status = session__finish(r.s, status);
	if (a->verbose || a->replay_rounds)
		profile_run__print_stats(&r);
out:
	profile_run__free(&r);
	return status;
}

int cmd_profile(int argc, char **argv)
{
	struct profile_args a = {0};
	int r = profile_args__parse(argc, argv, &a);

	if (r)
		return r < 0 ? EXIT_OK : r;
	if (!privilege__bpf_ok()) {
		privilege__explain("profile");
		return EXIT_NO_PERMISSION;
	}
	if (a.nr_pids > 1 || a.exe)
		return profile_fleet__run(&a);
	return profile(&a);
}
