// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF side's lifecycle: open → size maps, fill rodata → load → fill specs →
 * attach → ready; detach in reverse. See docs/tracing.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "lib/log.h"
#include "lib/procmaps.h"
#include "trace.skel.h"
#include "trace/task_maps.h"
#include "trace/tracer.h"
#include "trace/tracer_impl.h"

#include "lib/uprobe_multi.h"

static bool libbpf_verbose;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG && !libbpf_verbose)
		return 0;
	return libbpf_verbose ? vfprintf(stderr, fmt, args) : 0;
}

static uint64_t round_ringbuf_size(uint64_t size)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), r = page;

	while (r < size && r < (1ull << 31))
		r <<= 1;
	return r;
}

/* One BPF_MAP_UPDATE_BATCH for every spec (5,000 single updates cost ~8 ms here). */
static int fill_specs(int fd, const struct trace_plan *plan, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = BPF_ANY);
	__u32 *keys = calloc(plan->nr, sizeof(*keys)), count = plan->nr;
	int r = 0;

	if (!keys) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (__u32 i = 0; i < plan->nr; i++)
		keys[i] = i;
	if (bpf_map_update_batch(fd, keys, plan->specs, &count, &opts)) {
		/* kernels without batch ops on arrays: one update per spec */
		for (__u32 i = 0; i < plan->nr && !r; i++)
			if (bpf_map_update_elem(fd, &i, &plan->specs[i], BPF_ANY))
				r = -errno;
	}
	free(keys);
	if (r)
		snprintf(err, errlen, "filling the probe specs failed: %s", strerror(-r));
	return r;
}

/* Open, size, load (for uprobe_multi or for perf-event uprobes) and fill the specs. */
static int load_skeleton(struct tracer *t, const struct trace_plan *plan,
			 const struct tracer_opts *o, bool multi, char *err, size_t errlen)
{
	/* top's statistics-only programs write no record: its ring buffer stays empty */
	uint64_t rb_size =
	    round_ringbuf_size(o->ringbuf_size			  ? o->ringbuf_size
			       : o->stats_only && !o->stats_trees ? TRACE_STATS_RINGBUF_SIZE
								  : TRACE_DEFAULT_RINGBUF_SIZE);
	struct trace_bpf *skel;
	int r;

	trace_bpf__destroy(t->skel);
	t->skel = skel = trace_bpf__open();
	if (!skel) {
		r = -errno;
		snprintf(err, errlen, "opening the BPF object failed: %s", strerror(-r));
		return r;
	}
	skel->rodata->target_tgid = (__u32)o->pid;
	skel->rodata->nr_specs = plan->nr;
	skel->rodata->stats_only = o->stats_only;
	skel->rodata->stats_trees = o->stats_only && o->stats_trees;
	/* a task poll reads its Context's waker only for std's Wake (its wakes are
	 * matched by that data): not on every task poll of a tokio program */
	bool std_wakes = false;
	for (uint32_t i = 0; i < plan->nr && !std_wakes; i++)
		std_wakes =
		    (plan->specs[i].kind & PROBE_WAKE) && plan->specs[i].future == TASK_RT_STD_WAKE;
	skel->rodata->ctx_known = t->m->waker_layout.known && std_wakes;
	skel->rodata->ctx_waker_off = t->m->waker_layout.ctx_waker;
	skel->rodata->waker_raw_off = t->m->waker_layout.waker_raw;
	skel->rodata->raw_data_off = t->m->waker_layout.raw_data;
	skel->rodata->wakes_enabled = plan->nr_wakes > 0;
	skel->rodata->roots_known = plan->roots_known;
	skel->rodata->task_mode = plan->task_mode;
	/* blocking: a tp_btf program, which makes libbpf read the kernel's BTF; not
	 * loaded at all when it is off (then the load reads no BTF) */
	if (o->blocking && !t->blocking_off[0] && access("/sys/kernel/btf/vmlinux", R_OK))
		snprintf(t->blocking_off, sizeof(t->blocking_off),
			 "the kernel has no BTF (/sys/kernel/btf/vmlinux) for tp_btf/sched_switch");
	bool blocking = o->blocking && !t->blocking_off[0];
	skel->rodata->block_enabled = blocking;
	bpf_program__set_autoload(skel->progs.on_switch, blocking);
	/* a quarter of the buffer waiting: wake the consumer well before it fills */
	skel->rodata->wakeup_bytes = rb_size / 4;
	for (int k = 0; k < TASK_RT_MAX && k < 4; k++) {
		const struct runtime_layout *l = &t->m->runtimes[k];
		/* a state word read where the DWARF (or tokio's usual layout) puts it */
		bool word = l->known || l->assumed;

		skel->rodata->header_vtable[k] = l->header_vtable;
		skel->rodata->header_state[k] = l->header_state;
		skel->rodata->cancel_bit[k] =
		    word ? task_runtime__cancel_bit((enum task_runtime)k) : 0;
		skel->rodata->done_bit[k] = word ? task_runtime__done_bit((enum task_runtime)k) : 0;
	}
	if ((r = bpf_map__set_max_entries(skel->maps.wake_types,
					  t->nr_wake_types ? t->nr_wake_types : 1)) ||
	    (r = bpf_map__set_max_entries(skel->maps.trace_specs, plan->nr)) ||
	    (r = bpf_map__set_max_entries(skel->maps.probe_addrs, plan->nr ? plan->nr : 1)) ||
	    (r = bpf_map__set_max_entries(skel->maps.tree_nodes, task_maps__nr_nodes(&t->locks))) ||
	    (r = bpf_map__set_max_entries(skel->maps.tree_slots, task_maps__nr_slots(&t->locks))) ||
	    (r = bpf_map__set_max_entries(skel->maps.dyn_vtables, task_maps__nr_dyn(t->m))) ||
	    (r = bpf_map__set_max_entries(skel->maps.task_infos,
					  task_maps__nr_infos(t->m, plan->nr_root_types))) ||
	    (r = bpf_map__set_max_entries(skel->maps.task_vtables,
					  task_maps__nr_infos(t->m, plan->nr_root_types))) ||
	    (r = bpf_map__set_max_entries(skel->maps.trace_stats, t->nr_polls)) ||
	    (r = bpf_map__set_max_entries(skel->maps.task_stats, t->nr_task_stats)) ||
	    (r = bpf_map__set_max_entries(skel->maps.trace_events, (__u32)rb_size))) {
		snprintf(err, errlen, "sizing the BPF maps failed: %s", strerror(-r));
		return r;
	}
	/* one program serves every probe: task mode's or the per-future tracer's */
	t->prog = plan->task_mode ? skel->progs.task_probe : skel->progs.poll_probe;
	bpf_program__set_autoload(plan->task_mode ? skel->progs.poll_probe : skel->progs.task_probe,
				  false);
	/* libbpf 1.1 knows no "uprobe.multi" section: set the attach type by hand */
	if (multi)
		bpf_program__set_expected_attach_type(
		    t->prog, (enum bpf_attach_type)UPROBE_MULTI_ATTACH_TYPE);
	/* -v: the verifier's statistics for each program (log level 4: stats only) */
	static char vlog[4][512];
	struct bpf_program *prog;
	int nprog = 0;

	if (o->verbose)
		bpf_object__for_each_program(prog, skel->obj)
		{
			if (nprog >= 4)
				break;
			vlog[nprog][0] = 0;
			bpf_program__set_log_buf(prog, vlog[nprog], sizeof(vlog[nprog]));
			bpf_program__set_log_level(prog, 4);
			nprog++;
		}
	r = trace_bpf__load(skel);
	if (r && blocking) {
		/* the blocking programs refused (an old kernel's verifier, no tp_btf):
		 * trace without them, and say so */
		snprintf(t->blocking_off, sizeof(t->blocking_off),
			 "loading tp_btf/sched_switch failed: %s", strerror(-r));
		return load_skeleton(t, plan, o, multi, err, errlen);
	}
	nprog = 0;
	if (o->verbose && !r)
		bpf_object__for_each_program(prog, skel->obj)
		{
			if (nprog >= 4)
				break;
			vlog[nprog][strcspn(vlog[nprog], "\n")] = 0;
			pr_debug("trace: verifier, %s: %s\n", bpf_program__name(prog), vlog[nprog]);
			bpf_program__set_log_buf(prog, NULL, 0);
			nprog++;
		}
	if (r) {
		snprintf(err, errlen,
			 "loading the BPF programs failed: %s (run 'asyncbpf check'; -v shows "
			 "libbpf's log)",
			 strerror(-r));
		return r;
	}
	t->multi = multi;
	if (plan->task_mode &&
	    ((r = task_maps__fill_table(bpf_map__fd(skel->maps.tree_nodes),
					bpf_map__fd(skel->maps.tree_slots), &t->locks)) ||
	     (r = task_maps__fill_infos(bpf_map__fd(skel->maps.task_infos), t->m, plan->root_types,
					plan->nr_root_types)))) {
		snprintf(err, errlen, "filling the future-tree table failed: %s", strerror(-r));
		return r;
	}
	t->task_mode = plan->task_mode;
	return fill_specs(bpf_map__fd(skel->maps.trace_specs), plan, err, errlen);
}

struct tracer *tracer__new(const struct tracer_opts *o)
{
	struct tracer *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->o = *o;
	t->multi_fd = -1;
	t->multi_ret_fd = -1;
	return t;
}

int tracer__load(struct tracer *t, const struct trace_plan *plan, const struct model *m, char *err,
		 size_t errlen)
{
	const struct tracer_opts *o = &t->o;
	int r;

	t->nr_polls = m->nr_polls ? m->nr_polls : 1;
	t->nr_task_stats = task_maps__nr_infos(m, plan->nr_root_types);
	t->m = m;
	lock_table__free(&t->locks);
	if (plan->task_mode && lock_table__build(&t->locks, m)) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (!plan->task_mode)
		t->locks.m = m; /* an empty table: the maps keep one entry */
	free(t->site_offsets);
	t->nr_sites = 0;
	t->site_offsets = malloc((plan->nr ? plan->nr : 1) * sizeof(*t->site_offsets));
	if (!t->site_offsets) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(t->site_offsets, plan->offsets, plan->nr * sizeof(*t->site_offsets));
	t->nr_sites = plan->nr;
	free(t->traced);
	t->traced = calloc(m->nr_futures ? m->nr_futures : 1, 1);
	for (uint32_t i = 0; t->traced && i < plan->nr; i++)
		if ((plan->specs[i].kind & PROBE_ENTRY) && plan->specs[i].future < m->nr_futures)
			t->traced[plan->specs[i].future] = 1;
	t->nr_wake_types = 0;
	for (uint32_t i = 0; i < m->nr_task_types; i++)
		t->nr_wake_types +=
		    m->task_types[i].vtable && m->task_types[i].future_offset != FUTURE_NO_OFFSET;
	libbpf_verbose = o->verbose;
	libbpf_set_print(libbpf_print);
	if (o->attach == ATTACH_PERF)
		return load_skeleton(t, plan, o, false, err, errlen);
	r = load_skeleton(t, plan, o, true, err, errlen);
	if (r && o->attach == ATTACH_AUTO) {
		/* kernels before 6.6 refuse the attach type: perf-event uprobes instead */
		pr_info("trace: %s; retrying for perf-event uprobes\n", err);
		r = load_skeleton(t, plan, o, false, err, errlen);
	}
	return r;
}

static int attach_perf(struct tracer *t, const struct trace_plan *plan, const struct tracer_opts *o,
		       char *err, size_t errlen)
{
	t->links = calloc(plan->nr, sizeof(*t->links));
	if (!t->links) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < plan->nr; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = plan->cookies[i],
			    .retprobe = plan->returns[i]);

		if (o->progress && i && i % 1000 == 0)
			o->progress(i, plan->nr);
		t->links[i] = bpf_program__attach_uprobe_opts(t->prog, o->pid, o->path,
							      plan->offsets[i], &opts);
		if (!t->links[i]) {
			int r = -errno;

			snprintf(err, errlen, "prog '%s': failed to attach to %s+0x%lx: %s",
				 bpf_program__name(t->prog), o->name ? o->name : o->path,
				 plan->offsets[i], strerror(-r));
			t->probes_failed = plan->nr - i;
			return r;
		}
		t->nr_links = i + 1;
		t->probes_attached++;
	}
	return 0;
}

/* A wake probe the caller attaches part of the time (tracer_opts.wakes_apart). */
static bool apart(const struct tracer *t, const struct poll_spec *spec)
{
	return t->o.wakes_apart && (spec->kind & PROBE_WAKE);
}

bool tracer__wakes_apart(const struct tracer *t)
{
	return t->multi && t->o.wakes_apart;
}

/* The plan's probes of one kind (uretprobes or not) through one uprobe_multi link. */
static int attach_multi_kind(struct tracer *t, const struct trace_plan *plan,
			     const struct tracer_opts *o, bool ret)
{
	uint32_t n = 0, k = 0;
	unsigned long *offsets;
	__u64 *cookies;
	int fd;

	for (uint32_t i = 0; i < plan->nr; i++)
		n += plan->returns[i] == ret && !apart(t, &plan->specs[i]);
	if (!n)
		return -ENODATA;
	offsets = calloc(n, sizeof(*offsets));
	cookies = calloc(n, sizeof(*cookies));
	if (!offsets || !cookies) {
		free(offsets);
		free(cookies);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < plan->nr; i++)
		if (plan->returns[i] == ret && !apart(t, &plan->specs[i])) {
			offsets[k] = plan->offsets[i];
			cookies[k++] = plan->cookies[i];
		}
	fd = uprobe_multi__attach(bpf_program__fd(t->prog), o->path, offsets, cookies, n, o->pid,
				  ret);
	free(offsets);
	free(cookies);
	return fd;
}

/* Watch the target's execs (tp_btf): without it, an exec is noticed only at its exit. */
static void attach_exec(struct tracer *t)
{
	if (!t->exec_link) {
		t->exec_link = bpf_program__attach(t->skel->progs.on_exec);
		if (!t->exec_link)
			pr_warn("trace: cannot watch the target's execs "
				"(tp_btf/sched_process_exec: %s): tracing will not stop when it "
				"runs another program\n",
				strerror(errno));
	}
	if (!t->thread_exit_link) {
		t->thread_exit_link = bpf_program__attach(t->skel->progs.on_thread_exit);
		if (!t->thread_exit_link)
			pr_warn("trace: cannot watch the target's threads exit "
				"(tp_btf/sched_process_exit: %s): polls a panic cut short on a "
				"thread that never polls again are not reported\n",
				strerror(errno));
	}
}

static int attach_probes(struct tracer *t, const struct trace_plan *plan,
			 const struct tracer_opts *o, char *err, size_t errlen)
{
	int fd = -ENODATA, r;

	if (t->multi) {
		if (plan->nr_returns) {
			fd = attach_multi_kind(t, plan, o, true);
			if (fd >= 0)
				t->multi_ret_fd = fd;
		}
		if (fd >= 0 || fd == -ENODATA)
			fd = attach_multi_kind(t, plan, o, false);
		if (fd >= 0 || (fd == -ENODATA && t->multi_ret_fd >= 0)) {
			t->multi_fd = fd;
			t->probes_attached = plan->nr;
			return 0;
		}
		if (t->multi_ret_fd >= 0) {
			close(t->multi_ret_fd);
			t->multi_ret_fd = -1;
		}
		snprintf(err, errlen,
			 "BPF_LINK_CREATE(BPF_TRACE_UPROBE_MULTI) of %u probes in %s failed: %s",
			 plan->nr, o->name ? o->name : o->path, strerror(-fd));
		if (fd == -ESRCH || fd == -ENOENT || fd == -EACCES || fd == -EPERM ||
		    o->attach == ATTACH_MULTI)
			return fd; /* the target or the file is gone, or not allowed: no fallback */
		pr_warn("trace: %s; falling back to perf-event uprobes\n", err);
		/* the program was loaded for uprobe_multi: perf-event links need a reload */
		r = load_skeleton(t, plan, o, false, err, errlen);
		if (r)
			return r;
	}
	if (o->attach == ATTACH_PERF)
		pr_info("trace: --attach=perf: attaching %u probes with one perf-event link each "
			"(slow: detaching takes ~0.1 s per probe here)\n",
			plan->nr);
	else
		pr_warn("trace: uprobe_multi is unavailable: attaching %u probes with one "
			"perf-event link each (slow: detaching takes ~0.1 s per probe here)\n",
			plan->nr);
	return attach_perf(t, plan, o, err, errlen);
}

/* The context-switch program (blocking); off, and why, if it cannot attach. */
static void attach_blocking(struct tracer *t)
{
	if (!t->o.blocking || t->blocking_off[0])
		return;
	t->block_link = bpf_program__attach(t->skel->progs.on_switch);
	if (!t->block_link)
		snprintf(t->blocking_off, sizeof(t->blocking_off),
			 "attaching tp_btf/sched_switch failed: %s", strerror(errno));
}

/* probe_addrs: every site at its run-time address (on_switch: inside a probe?) */
static int fill_probe_addrs(struct tracer *t)
{
	uint64_t *addrs = calloc(t->nr_sites ? t->nr_sites : 1, sizeof(*addrs));
	int fd = bpf_map__fd(t->skel->maps.probe_addrs), r = 0;
	__u8 one = 1;

	if (!addrs)
		return -ENOMEM;
	r = proc__exe_offsets_to_addrs(t->o.pid, t->site_offsets, addrs, t->nr_sites);
	for (uint32_t i = 0; !r && i < t->nr_sites; i++)
		if (addrs[i] && bpf_map_update_elem(fd, &addrs[i], &one, BPF_ANY))
			r = -errno;
	free(addrs);
	return r;
}

int tracer__fill_wake_types(struct tracer *t)
{
	struct stat exe, held;
	char path[64];
	uint64_t bias;
	int fd, r;

	if ((t->wakes_filled || !t->nr_wake_types) && t->sites_filled &&
	    (!t->task_mode || t->tasks_filled))
		return 0;
	if (!t->skel)
		return 0;
	/* launch mode: until the command has exec'd, /proc/PID/exe is not the target */
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)t->o.pid);
	if (stat(path, &exe) || stat(t->o.path, &held) || exe.st_dev != held.st_dev ||
	    exe.st_ino != held.st_ino || proc__load_bias(t->o.pid, t->m->pie, &bias))
		return -EAGAIN;
	if (!t->sites_filled) {
		if ((r = fill_probe_addrs(t)))
			return r;
		t->sites_filled = true;
	}
	if (t->task_mode && !t->tasks_filled) {
		if ((r = task_maps__fill_addresses(bpf_map__fd(t->skel->maps.task_vtables),
						   bpf_map__fd(t->skel->maps.dyn_vtables), t->m,
						   bias)))
			return r;
		t->tasks_filled = true;
	}
	if (t->wakes_filled || !t->nr_wake_types)
		return 0;
	fd = bpf_map__fd(t->skel->maps.wake_types);
	for (uint32_t i = 0; i < t->m->nr_task_types; i++) {
		const struct task_type *tt = &t->m->task_types[i];
		struct wake_type v = {0};
		__u64 key = tt->vtable + bias;

		if (!tt->vtable || tt->future_offset == FUTURE_NO_OFFSET ||
		    tt->future_offset > UINT32_MAX)
			continue;
		v.future_offset = (__u32)tt->future_offset;
		v.boxed = tt->boxed;
		int32_t traced = -1;

		v.descend = trace_plan__task_descend(t->m, t->traced, tt->future, &traced);
		if (v.descend == UINT32_MAX || traced < 0)
			continue; /* no traced future inside: its wakes stay unlinked */
		v.poll = t->m->futures[traced].poll >= 0 ? (__u32)t->m->futures[traced].poll : ~0u;
		if (bpf_map_update_elem(fd, &key, &v, BPF_ANY))
			return -errno;
	}
	pr_debug("trace: wake-ups: %u task types, load bias 0x%" PRIx64 "\n", t->nr_wake_types,
		 bias);
	t->wakes_filled = true;
	return 0;
}

int tracer__resolve_woken(struct tracer *t, uint8_t runtime, uint64_t header, uint64_t vtable,
			  uint64_t *self)
{
	struct wake_type v;
	uint64_t vt = vtable, p;

	*self = 0;
	if (runtime >= TASK_RT_MAX || runtime == TASK_RT_STD_WAKE || !header || !t->skel)
		return -EINVAL;
	if (tracer__fill_wake_types(t))
		return -EAGAIN;
	/* the vtable the BPF side read at the wake; else (an older record) the header
	 * read from the process now, while the task most likely still lives */
	if (!vt &&
	    proc__read(t->o.pid, header + t->m->runtimes[runtime].header_vtable, &vt, sizeof(vt)))
		return -ENOENT;
	if (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.wake_types), &vt, &v))
		return -ENOENT;
	p = header + v.future_offset;
	if (v.boxed && proc__read(t->o.pid, p, &p, sizeof(p)))
		return -ENOENT;
	*self = p ? p + v.descend : 0;
	return *self ? 0 : -ENOENT;
}

uint32_t tracer__blocked_at_stop(const struct tracer *t)
{
	return t->blocked_at_stop;
}

const char *tracer__blocking_off(const struct tracer *t)
{
	if (!t->o.blocking)
		return "off (--no-blocking)";
	return t->blocking_off[0] ? t->blocking_off : NULL;
}

int tracer__attach(struct tracer *t, const struct trace_plan *plan, char *err, size_t errlen)
{
	int r = attach_probes(t, plan, &t->o, err, errlen);

	if (!r) {
		attach_exec(t);
		attach_blocking(t);
	}
	return r;
}

uint32_t tracer__nr_polls(const struct tracer *t)
{
	return t->nr_polls;
}
uint64_t tracer__probes_attached(const struct tracer *t)
{
	return t->probes_attached;
}
uint64_t tracer__probes_failed(const struct tracer *t)
{
	return t->probes_failed;
}

int tracer__prog_fd(const struct tracer *t)
{
	return bpf_program__fd(t->prog);
}

int tracer__specs_fd(const struct tracer *t)
{
	return bpf_map__fd(t->skel->maps.trace_specs);
}

const char *tracer__links(const struct tracer *t)
{
	if (!t->multi)
		return "perf-event links";
	return t->multi_ret_fd >= 0 ? "two uprobe_multi links" : "one uprobe_multi link";
}

uint32_t tracer__exec_count(const struct tracer *t)
{
	if (!t->skel || !t->skel->bss)
		return 0;
	return __atomic_load_n(&t->skel->bss->exec_count, __ATOMIC_RELAXED);
}

void tracer__set_ready(struct tracer *t, bool ready)
{
	if (t->skel && t->skel->bss)
		__atomic_store_n(&t->skel->bss->trace_ready, ready ? 1 : 0, __ATOMIC_SEQ_CST);
}

void tracer__set_wake_window(struct tracer *t, bool open)
{
	if (t->skel && t->skel->bss)
		__atomic_store_n(&t->skel->bss->wake_window, open ? 1 : 0, __ATOMIC_SEQ_CST);
}

void tracer__detach(struct tracer *t)
{
	tracer__set_ready(t, false);
	if (t->multi_fd >= 0) {
		close(t->multi_fd);
		t->multi_fd = -1;
	}
	if (t->multi_ret_fd >= 0) {
		close(t->multi_ret_fd);
		t->multi_ret_fd = -1;
	}
	for (uint32_t i = t->nr_links; i > 0; i--)
		bpf_link__destroy(t->links[i - 1]);
	bpf_link__destroy(t->exec_link);
	t->exec_link = NULL;
	bpf_link__destroy(t->thread_exit_link);
	t->thread_exit_link = NULL;
	bpf_link__destroy(t->block_link);
	t->block_link = NULL;
	free(t->links);
	t->links = NULL;
	t->nr_links = 0;
}

int tracer__ringbuf_fd(const struct tracer *t)
{
	return bpf_map__fd(t->skel->maps.trace_events);
}

void tracer__free(struct tracer *t)
{
	if (!t)
		return;
	free(t->traced);
	free(t->site_offsets);
	lock_table__free(&t->locks);
	tracer__detach(t);
	trace_bpf__destroy(t->skel);
	free(t);
}
