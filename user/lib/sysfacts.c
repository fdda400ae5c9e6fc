// SPDX-License-Identifier: GPL-2.0
/*
 * Facts about the running system (sysfacts.h), read from procfs, sysfs, securityfs
 * and the kernel config. They explain a failing BPF feature or a refused command:
 * what the kernel was built without, whether lockdown or a user namespace is in the
 * way, which capabilities we hold. Each function reads afresh; nothing is cached.
 */
#include "lib/sysfacts.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>

int sysfacts__kernel_config(const char *release, const char *name, const char **source)
{
	const char *config_source = "/proc/config.gz";
	char boot[PATH_MAX], line[512];
	size_t len = strlen(name);
	gzFile file;
	int found = 0;

	snprintf(boot, sizeof(boot), "/boot/config-%s", release);
	file = gzopen(config_source, "rb");
	if (!file) {
		config_source = "/boot/config";
		file = gzopen(boot, "rb");
	}
	if (source)
		*source = config_source;
	if (!file)
		return -ENOENT;
	while (!found && gzgets(file, line, sizeof(line)))
		found = strncmp(line, name, len) == 0 && line[len] == '=';
	gzclose(file);
	return found;
}

bool sysfacts__path_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

int sysfacts__read_small_file(const char *path, char *buf, size_t size)
{
	FILE *file = fopen(path, "re");
	size_t n;

	if (!file)
		return -errno;
	n = fread(buf, 1, size - 1, file);
	buf[n] = '\0';
	fclose(file);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

const char *sysfacts__tracefs_dir(void)
{
	if (sysfacts__path_exists("/sys/kernel/tracing/events"))
		return "/sys/kernel/tracing";
	if (sysfacts__path_exists("/sys/kernel/debug/tracing/events"))
		return "/sys/kernel/debug/tracing";
	return NULL;
}

void sysfacts__add_fact(char *buf, size_t size, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used + 3 >= size)
		return;
	if (used)
		used += snprintf(buf + used, size - used, "; ");
	va_start(ap, fmt);
	vsnprintf(buf + used, size - used, fmt, ap);
	va_end(ap);
}

void sysfacts__lockdown(const char *release, char *state, size_t state_size, char *how,
			size_t how_size)
{
	static const char *const forced[] = {"CONFIDENTIALITY", "INTEGRITY"};
	char buf[4096], option[64], *word, *end;
	const char *config_source;

	if (sysfacts__read_small_file("/sys/kernel/security/lockdown", buf, sizeof(buf)) == 0 &&
	    (word = strchr(buf, '[')) && (end = strchr(word, ']'))) {
		*end = '\0';
		snprintf(state, state_size, "%s", word + 1);
		snprintf(how, how_size, "/sys/kernel/security/lockdown");
		return;
	}
	snprintf(state, state_size, "unknown");
	snprintf(how, how_size, "%s",
		 sysfacts__path_exists("/sys/kernel/security/lsm") ? "lockdown LSM not active"
								   : "securityfs not mounted");
	if (sysfacts__read_small_file("/proc/cmdline", buf, sizeof(buf)) == 0 &&
	    (word = strstr(buf, "lockdown="))) {
		word += strlen("lockdown=");
		word[strcspn(word, " ")] = '\0';
		snprintf(state, state_size, "%s", word);
		sysfacts__add_fact(how, how_size, "lockdown= on the command line");
		return;
	}
	for (int i = 0; i < 2; i++) {
		snprintf(option, sizeof(option), "CONFIG_LOCK_DOWN_KERNEL_FORCE_%s", forced[i]);
		if (sysfacts__kernel_config(release, option, &config_source) == 1) {
			snprintf(state, state_size, "%s", i ? "integrity" : "confidentiality");
			sysfacts__add_fact(how, how_size, "%s=y in %s", option, config_source);
			return;
		}
	}
	if (sysfacts__kernel_config(release, "CONFIG_SECURITY_LOCKDOWN_LSM", &config_source) == 0) {
		snprintf(state, state_size, "none");
		sysfacts__add_fact(how, how_size, "CONFIG_SECURITY_LOCKDOWN_LSM not set in %s",
				   config_source);
	}
}

int sysfacts__unprivileged_bpf_disabled(void)
{
	char value[32];

	if (sysfacts__read_small_file("/proc/sys/kernel/unprivileged_bpf_disabled", value,
				      sizeof(value)))
		return -1;
	return atoi(value);
}

const char *sysfacts__unprivileged_bpf_meaning(int value)
{
	switch (value) {
	case 0: return "unprivileged users may load BPF programs";
	case 1: return "unprivileged BPF disabled until reboot";
	case 2: return "unprivileged BPF disabled; root may re-enable it";
	default: return "unknown value";
	}
}

/* Only the identity map "0 0 4294967295" in /proc/self/uid_map is the first namespace. */
bool sysfacts__in_initial_user_namespace(void)
{
	unsigned long inner, outer, count;
	char map[256];

	if (sysfacts__read_small_file("/proc/self/uid_map", map, sizeof(map)))
		return true; /* kernel without user namespaces */
	return sscanf(map, "%lu %lu %lu", &inner, &outer, &count) == 3 && inner == 0 &&
	       outer == 0 && count == 4294967295UL;
}

bool sysfacts__has_capability(int cap)
{
	struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};

	if (syscall(SYS_capget, &header, data))
		return false;
	return data[CAP_TO_INDEX(cap)].effective & CAP_TO_MASK(cap);
}

bool sysfacts__bpf_privileged(void)
{
	return sysfacts__has_capability(CAP_SYS_ADMIN) ||
	       (sysfacts__has_capability(CAP_BPF) && sysfacts__has_capability(CAP_PERFMON));
}

int64_t sysfacts__process_cpu_ns(int pid)
{
	char path[64], buf[1024];
	const char *p;
	unsigned long long utime, stime;
	long ticks = sysconf(_SC_CLK_TCK);

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (sysfacts__read_small_file(path, buf, sizeof(buf)) < 0 || ticks <= 0)
		return -1;
	/* the command name may hold spaces and parentheses: fields follow the last ')' */
	if (!(p = strrchr(buf, ')')))
		return -1;
	/* state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
		   &stime) != 2)
		return -1;
	return (int64_t)((utime + stime) * (1000000000ull / (unsigned long long)ticks));
}

int sysfacts__process_switches(int pid, uint64_t *voluntary, uint64_t *involuntary)
{
	char path[96], line[256];
	struct dirent *d;
	DIR *dir;
	FILE *f;
	unsigned long long v;

	*voluntary = *involuntary = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	if (!(dir = opendir(path)))
		return -errno;
	while ((d = readdir(dir))) {
		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/status", pid, d->d_name);
		if (!(f = fopen(path, "re")))
			continue; /* the thread exited meanwhile */
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1)
				*voluntary += v;
			else if (sscanf(line, "nonvoluntary_ctxt_switches: %llu", &v) == 1)
				*involuntary += v;
		}
		fclose(f);
	}
	closedir(dir);
	return 0;
}

uint64_t sysfacts__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
