// SPDX-License-Identifier: GPL-2.0
/* The profiler's BPF lifecycle (profiler.h). */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "lib/log.h"
#include "profile.skel.h"
#include "profile/profiler.h"

struct profiler {
	struct profiler_opts o;
	struct profile_bpf *skel;
	int *perf_fds;
	struct bpf_link **links;
	struct bpf_link *offcpu_link;
	struct bpf_link *exec_link;
	int nr_cpus;
	int nr_attached;
	const char *event; /* "cycles" or "cpu-clock" */
	int stats_fd;	   /* BPF_ENABLE_STATS while held, or 0 */
};

/* The off-CPU ring, in --ringbuf-size (docs/profile.md, "Off-CPU"). */
#define OFFCPU_RING_FACTOR 8

static bool libbpf_verbose;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (!libbpf_verbose || level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static uint32_t round_pow2(uint64_t size)
{
	uint64_t r = (uint64_t)sysconf(_SC_PAGESIZE);

	while (r < size && r < (1ull << 30))
		r <<= 1;
	return (uint32_t)r;
}

static int shrink_offcpu_maps(struct profile_bpf *skel)
{
	struct bpf_map *maps[] = {skel->maps.unwind_rules, skel->maps.offcpu_stacks,
				  skel->maps.offcpu_times, skel->maps.offcpu_start};
	int r = 0;

	for (size_t i = 0; !r && i < sizeof(maps) / sizeof(maps[0]); i++)
		r = bpf_map__set_max_entries(maps[i], 1);
	return r;
}

struct profiler *profiler__new(const struct profiler_opts *o)
{
	struct profiler *p = calloc(1, sizeof(*p));

	if (p)
		p->o = *o;
	return p;
}

int profiler__load(struct profiler *p, char *err, size_t errlen)
{
	const struct profiler_opts *o = &p->o;
	struct profile_bpf *skel;
	uint32_t ring;
	int r;

	libbpf_verbose = o->verbose;
	libbpf_set_print(libbpf_print);
	p->skel = skel = profile_bpf__open();
	if (!skel) {
		r = -errno;
		snprintf(err, errlen, "opening the profiler's BPF object failed: %s", strerror(-r));
		return r;
	}
	skel->rodata->target_tgid = (__u32)o->pid;
	skel->rodata->stack_size = o->stack_size;
	skel->rodata->offcpu_enabled = o->offcpu;
	ring = round_pow2(o->ringbuf_size ? o->ringbuf_size : PROFILE_DEFAULT_RINGBUF);
	/* the consumer polls every 100 ms; a quarter full wakes it sooner */
	skel->rodata->wake_bytes = ring / 4;
	r = bpf_map__set_max_entries(skel->maps.profile_events, ring);
	/* the off-CPU ring holds the stacks sent before the first rules come back: the
	 * consumer's first walk sets libdw up (~10 ms), and a target blocking every
	 * ~7 us sends 1,000-4,000 stacks meanwhile (handwritten switch, 2 CPUs), more
	 * than a ring as large as the samples' holds */
	if (!r)
		r = bpf_map__set_max_entries(skel->maps.offcpu_events,
					     !o->offcpu ? round_pow2(1)
					     : ring <= (1u << 30) / OFFCPU_RING_FACTOR
						 ? OFFCPU_RING_FACTOR * ring
						 : (1u << 30));
	if (!r && !o->offcpu) /* its tables are never used: one entry each */
		r = shrink_offcpu_maps(skel);
	if (r) {
		snprintf(err, errlen, "sizing the BPF maps failed: %s", strerror(-r));
		return r;
	}
	if (!o->offcpu)
		bpf_program__set_autoload(skel->progs.profile_sched_switch, false);
	r = profile_bpf__load(skel);
	if (r) {
		snprintf(err, errlen,
			 "loading the profiler's BPF programs failed: %s (run 'asyncbpf check'; "
			 "-v shows libbpf's log)",
			 strerror(-r));
		return r;
	}
	return 0;
}

static int open_event(bool hardware, uint32_t freq, int cpu)
{
	struct perf_event_attr attr = {
	    .size = sizeof(attr),
	    .disabled = 0,
	    .exclude_hv = 1,
	};

	if (hardware) {
		attr.type = PERF_TYPE_HARDWARE;
		attr.config = PERF_COUNT_HW_CPU_CYCLES;
		attr.freq = 1;
		attr.sample_freq = freq;
	} else {
		/* cpu-clock counts nanoseconds: a fixed period is the exact frequency */
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = PERF_COUNT_SW_CPU_CLOCK;
		attr.sample_period = 1000000000ull / freq;
	}
	return (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Without it an exec is noticed only at the target's exit: said, not fatal. */
static void attach_exec(struct profiler *p)
{
	p->exec_link = bpf_program__attach(p->skel->progs.profile_exec);
	if (!p->exec_link)
		pr_warn("profile: cannot watch the target's execs (raw_tp/sched_process_exec: "
			"%s): profiling will not stop when it runs another program\n",
			strerror(errno));
}

int profiler__attach(struct profiler *p, char *err, size_t errlen)
{
	const struct profiler_opts *o = &p->o;
	int ncpu = libbpf_num_possible_cpus(), fd, r = 0;
	bool hardware = true;

	if (ncpu <= 0) {
		snprintf(err, errlen, "cannot count the CPUs: %s", strerror(-ncpu));
		return ncpu ? ncpu : -EINVAL;
	}
	p->perf_fds = calloc((size_t)ncpu, sizeof(*p->perf_fds));
	p->links = calloc((size_t)ncpu, sizeof(*p->links));
	if (!p->perf_fds || !p->links) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->nr_cpus = ncpu;
	for (int c = 0; c < ncpu; c++)
		p->perf_fds[c] = -1;
	/* hardware cycles where the PMU exists (not in most VMs), else cpu-clock */
	fd = open_event(true, o->freq_hz, 0);
	if (fd < 0) {
		hardware = false;
		pr_debug("profile: no hardware cycles event (%s): sampling cpu-clock\n",
			 strerror(errno));
	} else {
		close(fd);
	}
	p->event = hardware ? "cycles" : "cpu-clock";
	for (int c = 0; c < ncpu; c++) {
		fd = open_event(hardware, o->freq_hz, c);
		if (fd < 0) {
			if (errno == ENODEV) /* an offline CPU */
				continue;
			r = -errno;
			snprintf(err, errlen,
				 "perf_event_open(%s, cpu %d) failed: %s (see "
				 "/proc/sys/kernel/perf_event_paranoid; 'asyncbpf check' tests "
				 "sampling)",
				 p->event, c, strerror(-r));
			return r;
		}
		p->perf_fds[c] = fd;
		p->links[c] = bpf_program__attach_perf_event(p->skel->progs.profile_sample, fd);
		if (!p->links[c]) {
			r = -errno;
			snprintf(err, errlen,
				 "attaching the sampler to the %s event of cpu %d failed: %s",
				 p->event, c, strerror(-r));
			return r;
		}
		p->perf_fds[c] = -1; /* the link owns the event now: libbpf closes it */
		p->nr_attached++;
	}
	if (!p->nr_attached) {
		snprintf(err, errlen, "no online CPU accepted a %s event", p->event);
		return -ENODEV;
	}
	if (o->offcpu) {
		p->offcpu_link = bpf_program__attach(p->skel->progs.profile_sched_switch);
		if (!p->offcpu_link) {
			r = -errno;
			snprintf(err, errlen,
				 "attaching tp_btf/sched_switch for --off-cpu failed: %s (run "
				 "'asyncbpf check')",
				 strerror(-r));
			return r;
		}
	}
	attach_exec(p);
	return 0;
}

int profiler__ringbuf_fd(const struct profiler *p)
{
	return bpf_map__fd(p->skel->maps.profile_events);
}

void profiler__offcpu_fds(const struct profiler *p, struct profiler_offcpu_fds *fds)
{
	struct profile_bpf *skel = p->skel;

	*fds = (struct profiler_offcpu_fds){-1, -1, -1, -1, -1};
	if (!skel || !p->o.offcpu)
		return;
	fds->events = bpf_map__fd(skel->maps.offcpu_events);
	fds->rules = bpf_map__fd(skel->maps.unwind_rules);
	fds->stacks = bpf_map__fd(skel->maps.offcpu_stacks);
	fds->times = bpf_map__fd(skel->maps.offcpu_times);
	fds->pending = bpf_map__fd(skel->maps.offcpu_start);
}

uint32_t profiler__exec_count(const struct profiler *p)
{
	if (!p->skel || !p->skel->bss)
		return 0;
	return __atomic_load_n(&p->skel->bss->exec_count, __ATOMIC_RELAXED);
}

const char *profiler__event(const struct profiler *p)
{
	return p->event ? p->event : "?";
}
int profiler__nr_attached(const struct profiler *p)
{
	return p->nr_attached;
}

int profiler__read_counters(const struct profiler *p, uint64_t *counters)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *values;

	memset(counters, 0, PCOUNTER_COUNT * sizeof(*counters));
	if (ncpu <= 0 || !p->skel)
		return -EINVAL;
	values = calloc((size_t)ncpu, sizeof(*values));
	if (!values)
		return -ENOMEM;
	for (__u32 k = 0; k < PCOUNTER_COUNT; k++) {
		if (bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.profile_counters), &k, values)) {
			int r = -errno;

			free(values);
			return r;
		}
		for (int c = 0; c < ncpu; c++)
			counters[k] += values[c];
	}
	free(values);
	return 0;
}

int profiler__enable_run_stats(struct profiler *p)
{
	int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);

	if (fd < 0)
		return -errno;
	p->stats_fd = fd;
	return 0;
}

int profiler__run_stats(const struct profiler *p, uint64_t *run_ns, uint64_t *run_cnt)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (!p->skel ||
	    bpf_obj_get_info_by_fd(bpf_program__fd(p->skel->progs.profile_sample), &info, &len))
		return -errno ? -errno : -EINVAL;
	*run_ns = info.run_time_ns;
	*run_cnt = info.run_cnt;
	return 0;
}

void profiler__detach(struct profiler *p)
{
	bpf_link__destroy(p->exec_link);
	p->exec_link = NULL;
	bpf_link__destroy(p->offcpu_link);
	p->offcpu_link = NULL;
	for (int c = 0; c < p->nr_cpus; c++) {
		if (p->links) {
			bpf_link__destroy(p->links[c]);
			p->links[c] = NULL;
		}
		if (p->perf_fds && p->perf_fds[c] >= 0) {
			close(p->perf_fds[c]);
			p->perf_fds[c] = -1;
		}
	}
}

void profiler__free(struct profiler *p)
{
	if (!p)
		return;
	profiler__detach(p);
	free(p->links);
	free(p->perf_fds);
	profile_bpf__destroy(p->skel);
	if (p->stats_fd > 0)
		close(p->stats_fd);
	free(p);
}
