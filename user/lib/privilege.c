// SPDX-License-Identifier: GPL-2.0
/* Privilege checks for the BPF-loading commands (privilege.h). */
#include <linux/capability.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/privilege.h"
#include "lib/sysfacts.h"

bool privilege__bpf_ok(void)
{
	return sysfacts__in_initial_user_namespace() &&
	       (sysfacts__has_capability(CAP_SYS_ADMIN) ||
		(sysfacts__has_capability(CAP_BPF) && sysfacts__has_capability(CAP_PERFMON)));
}

void privilege__explain(const char *cmd)
{
	char missing[256] = "", lockdown[64] = "", how[256] = "";
	struct utsname uts;
	int unpriv = sysfacts__unprivileged_bpf_disabled();

	if (!sysfacts__has_capability(CAP_BPF))
		sysfacts__add_fact(missing, sizeof(missing), "CAP_BPF");
	if (!sysfacts__has_capability(CAP_PERFMON))
		sysfacts__add_fact(missing, sizeof(missing), "CAP_PERFMON");
	if (!sysfacts__has_capability(CAP_SYS_ADMIN))
		sysfacts__add_fact(missing, sizeof(missing), "CAP_SYS_ADMIN");
	pr_warn("%s: needs root, or CAP_BPF+CAP_PERFMON (CAP_SYS_ADMIN too for perf-event "
		"uprobes on kernels without uprobe_multi); running as uid %u without %s%s: run "
		"it with sudo\n",
		cmd, (unsigned)getuid(), missing[0] ? missing : "them",
		sysfacts__in_initial_user_namespace()
		    ? ""
		    : ", in a user namespace whose capabilities do not grant BPF");
	if (unpriv > 0)
		pr_warn("%s: note: kernel.unprivileged_bpf_disabled = %d (%s): without those "
			"capabilities no setting of yours can load BPF\n",
			cmd, unpriv, sysfacts__unprivileged_bpf_meaning(unpriv));
	if (uname(&uts) == 0) {
		sysfacts__lockdown(uts.release, lockdown, sizeof(lockdown), how, sizeof(how));
		if (!strcmp(lockdown, "confidentiality"))
			pr_warn("%s: note: the kernel is locked down (confidentiality, %s): "
				"reading user memory from BPF is refused even to root\n",
				cmd, how);
	}
}
