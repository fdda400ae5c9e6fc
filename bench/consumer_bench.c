// SPDX-License-Identifier: GPL-2.0
/*
 * consumer_bench: the tracer consumer's capacity. A synthetic producer
 * (producer.bpf.c, BPF_PROG_TYPE_SYSCALL run with BPF_PROG_TEST_RUN) writes real
 * struct poll_records into a ring buffer of the tracer's default size, with its
 * wake-up policy, at a controlled rate from the main thread; the real consumer path
 * (trace_consumer__handle → Perfetto writer to a file + summary) drains it on
 * another thread, polling as `asyncbpf trace` does (epoll, 100 ms timeout, then
 * consume). For each rate step: records produced, dropped and received, and the
 * consumer thread's CPU time (CLOCK_THREAD_CPUTIME_ID) per record.
 *
 *   consumer_bench [--rates 0.5,1,2] [--seconds S] [-o FILE] [--null-consumer] BINARY
 *
 * BINARY gives the model the records refer to (names in the Perfetto trace). Rates
 * are in millions of records per second. --null-consumer only counts the records
 * (the ring buffer's own ceiling, without decoding and writing). --wakeup-bytes N
 * changes the producer's wake-up threshold (default: the tracer's, a quarter of the
 * buffer; 0 wakes on every record, a huge value never forces one);
 * --wakeup-on-crossing forces it only for the record that crosses the threshold
 * (the tracer's rule since it was measured here; the default is the first rule,
 * forcing a wake-up for every record past the threshold). One JSON line per step on stdout. Exit
 * status: 0; 1 when the accounting does not add up (received != produced -
 * dropped, or malformed records); 2 usage; 7 the kernel refused.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench_common.h"
#include "cli/commands.h"
#include "lib/exitcodes.h"
#include "lib/log.h"
#include "producer.skel.h"

#define MAX_RATES 32
#define TICK_NS	  1000000ull /* the producer runs one batch per millisecond */

struct produce_args {
	__u64 count; /* 64 bits: bpf_loop reads the whole register (a __u32 field's
		      * neighbour ends up in the upper half otherwise) */
	__u32 pid, tid;
	__u32 task_poll, child_poll;
	__u64 seq;
};

struct consumer_thread {
	struct ring_buffer *rb;
	struct trace_consumer *consumer;
	volatile int stop;
	uint64_t received; /* written by the consumer thread, read atomically */
	bool null;	   /* --null-consumer: count records, decode nothing */
};

static int count_and_handle(void *ctx, void *data, size_t size)
{
	struct consumer_thread *ct = ctx;

	__atomic_add_fetch(&ct->received, 1, __ATOMIC_RELAXED);
	if (ct->null)
		return 0;
	return trace_consumer__handle(ct->consumer, data, size);
}

/* asyncbpf trace's loop: wait for a wake-up or 100 ms, then consume everything. */
static void *consume(void *arg)
{
	struct consumer_thread *ct = arg;
	struct pollfd pfd = {.fd = ring_buffer__epoll_fd(ct->rb), .events = POLLIN};

	while (!__atomic_load_n(&ct->stop, __ATOMIC_ACQUIRE)) {
		poll(&pfd, 1, 100);
		ring_buffer__consume(ct->rb);
	}
	ring_buffer__consume(ct->rb);
	return NULL;
}

static uint64_t cpu_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
			      .tv_nsec = (long)(ns % 1000000000ull)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int parse_rates(const char *s, double *rates, int *n)
{
	char *copy = strdup(s), *save = NULL, *tok, *end;

	if (!copy)
		return -1;
	*n = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		double v = strtod(tok, &end);

		if (*end || !(v > 0) || v > 100 || *n == MAX_RATES) {
			free(copy);
			return -1;
		}
		rates[(*n)++] = v;
	}
	free(copy);
	return *n ? 0 : -1;
}

/* Two out-of-line polls of the model for the records (a task and a child). */
static void pick_polls(const struct model *m, __u32 *task, __u32 *child)
{
	uint32_t found = 0;

	*task = *child = 0;
	for (uint32_t p = 0; p < m->nr_polls && found < 2; p++) {
		if (m->polls[p].inlined_only || m->polls[p].future < 0)
			continue;
		if (found++ == 0)
			*task = p;
		else
			*child = p;
	}
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list args)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, args) : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"rates", required_argument, NULL, 'r'},
	    {"seconds", required_argument, NULL, 's'},
	    {"output", required_argument, NULL, 'o'},
	    {"null-consumer", no_argument, NULL, 'n'},
	    {"wakeup-bytes", required_argument, NULL, 'w'},
	    {"wakeup-on-crossing", no_argument, NULL, 'x'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	double rates[MAX_RATES] = {0.25, 0.5, 1, 2, 4}, seconds = 2;
	int nr_rates = 5, c, status = EXIT_OK, r;
	char *end;
	const char *out_path = ".output/bench/consumer-bench.pftrace";
	struct target_spec spec = {0};
	struct model m;
	struct producer_bpf *skel = NULL;
	struct trace_summary sum = {0};
	struct trace_consumer *consumer = NULL;
	struct consumer_thread ct = {0};
	struct perfetto_writer *pw = NULL;
	struct produce_args pa = {0};
	struct trace_totals totals = {0};
	pthread_t thread;
	bool thread_started = false;
	clockid_t consumer_clock;
	FILE *out = NULL;
	/* as trace_loader.c: force a wake-up once a quarter of the buffer waits */
	uint64_t wakeup_bytes = TRACE_DEFAULT_RINGBUF_SIZE / 4;
	bool wakeup_on_crossing = false;
	uint64_t all_produced = 0, all_dropped = 0;

	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (parse_rates(optarg, rates, &nr_rates)) {
				fprintf(stderr,
					"consumer_bench: --rates takes M records/s, "
					"comma-separated, not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 's':
			seconds = strtod(optarg, &end);
			if (*end || !(seconds > 0) || seconds > 600) {
				fprintf(stderr, "consumer_bench: bad --seconds '%s'\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'o': out_path = optarg; break;
		case 'n': ct.null = true; break;
		case 'w':
			wakeup_bytes = strtoull(optarg, &end, 0);
			if (*end || end == optarg) {
				fprintf(stderr, "consumer_bench: bad --wakeup-bytes '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'x': wakeup_on_crossing = true; break;
		case 'h':
			printf("Usage: consumer_bench [--rates 0.5,1,2] [--seconds S] [-o FILE] "
			       "BINARY\n");
			return EXIT_OK;
		default: return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "Usage: consumer_bench [--rates 0.5,1,2] [--seconds S] [-o FILE] "
				"BINARY\n");
		return EXIT_USAGE;
	}
	log_verbosity = 0;
	libbpf_set_print(libbpf_quiet);
	spec.path = argv[optind];
	status = load_model("consumer_bench", &spec, &m);
	if (status) {
		model__free(&m);
		return status;
	}

	skel = producer_bpf__open();
	if (!skel) {
		fprintf(stderr, "consumer_bench: opening the BPF object failed: %s\n",
			strerror(errno));
		status = EXIT_KERNEL;
		goto out;
	}
	skel->rodata->wakeup_bytes = wakeup_bytes;
	skel->rodata->wakeup_on_crossing = wakeup_on_crossing;
	bpf_map__set_max_entries(skel->maps.bench_events, TRACE_DEFAULT_RINGBUF_SIZE);
	if ((r = producer_bpf__load(skel))) {
		fprintf(stderr, "consumer_bench: loading the producer failed: %s\n", strerror(-r));
		status = EXIT_KERNEL;
		goto out;
	}
	out = fopen(out_path, "w");
	if (out) /* as the tracer's outputs are (user/lib/outfile.c) */
		setvbuf(out, NULL, _IOFBF, 256 << 10);
	if (!out) {
		fprintf(stderr, "consumer_bench: %s: %s\n", out_path, strerror(errno));
		status = EXIT_OUTPUT;
		goto out;
	}
	pw = perfetto_writer__new(out, &m, (uint32_t)getpid(), "consumer_bench");
	if (!pw || trace_summary__init(&sum, &m) ||
	    !(consumer = trace_consumer__new(
		  &m, getpid(), &(struct trace_sinks){.summary = &sum, .perfetto = pw}))) {
		fprintf(stderr, "consumer_bench: out of memory\n");
		status = EXIT_FAILURE_INTERNAL;
		goto out;
	}
	ct.consumer = consumer;
	ct.rb = ring_buffer__new(bpf_map__fd(skel->maps.bench_events), count_and_handle, &ct, NULL);
	if (!ct.rb) {
		fprintf(stderr, "consumer_bench: ring_buffer__new: %s\n", strerror(errno));
		status = EXIT_KERNEL;
		goto out;
	}
	if ((r = pthread_create(&thread, NULL, consume, &ct)) ||
	    (r = pthread_getcpuclockid(thread, &consumer_clock))) {
		fprintf(stderr, "consumer_bench: consumer thread: %s\n", strerror(r));
		status = EXIT_FAILURE_INTERNAL;
		goto out;
	}
	thread_started = true;

	pa.pid = (__u32)getpid();
	pa.tid = (__u32)syscall(SYS_gettid);
	pick_polls(&m, &pa.task_poll, &pa.child_poll);
	for (int i = 0; i < nr_rates; i++) {
		uint64_t per_tick = (uint64_t)(rates[i] * 1e6 * TICK_NS / 1e9 + 0.5);
		uint64_t p0 = skel->bss->produced, d0 = skel->bss->dropped;
		uint64_t recv0 = __atomic_load_n(&ct.received, __ATOMIC_RELAXED);
		uint64_t cpu0 = cpu_ns(consumer_clock), prod_cpu0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
		uint64_t start = bench__now_ns(), end = start + (uint64_t)(seconds * 1e9);
		uint64_t tick = start, now, produced, dropped, received, drained_at, cpu;

		if (!per_tick)
			per_tick = 1;
		while ((now = bench__now_ns()) < end) {
			LIBBPF_OPTS(bpf_test_run_opts, topts, .ctx_in = &pa,
				    .ctx_size_in = sizeof(pa));

			pa.count = per_tick;
			if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.produce), &topts)) {
				fprintf(stderr, "consumer_bench: BPF_PROG_TEST_RUN: %s\n",
					strerror(errno));
				status = EXIT_KERNEL;
				goto out;
			}
			if (skel->bss->loop_result < 0) {
				fprintf(stderr,
					"consumer_bench: bpf_loop in the producer failed: %s\n",
					strerror((int)-skel->bss->loop_result));
				status = EXIT_KERNEL;
				goto out;
			}
			pa.seq += per_tick;
			tick += TICK_NS;
			if (tick > now)
				sleep_until(tick);
		}
		now = bench__now_ns();
		produced = skel->bss->produced - p0;
		dropped = skel->bss->dropped - d0;
		/* let the consumer drain what is left (it polls every 100 ms) */
		do {
			received = __atomic_load_n(&ct.received, __ATOMIC_RELAXED) - recv0;
			if (received >= produced - dropped)
				break;
			usleep(1000);
		} while (bench__now_ns() - now < 5000000000ull);
		drained_at = bench__now_ns();
		cpu = cpu_ns(consumer_clock) - cpu0;
		all_produced += produced;
		all_dropped += dropped;
		printf(
		    "{\"target_rate\":%.0f,\"rate\":%.0f,\"seconds\":%.3f,\"produced\":%" PRIu64
		    ",\"dropped\":%" PRIu64 ",\"received\":%" PRIu64 ",\"consumer_cpu_ns\":%" PRIu64
		    ",\"consumer_ns_per_record\":%.1f"
		    ",\"consumer_busy\":%.3f,\"producer_ns_per_record\":%.1f,\"drain_ms\":%.1f}\n",
		    rates[i] * 1e6, (double)produced * 1e9 / (double)(now - start),
		    (double)(now - start) / 1e9, produced, dropped, received, cpu,
		    received ? (double)cpu / (double)received : 0.0,
		    (double)cpu / (double)(drained_at - start),
		    produced
			? (double)(cpu_ns(CLOCK_THREAD_CPUTIME_ID) - prod_cpu0) / (double)produced
			: 0.0,
		    (double)(drained_at - now) / 1e6);
		fflush(stdout);
	}
out:
	if (thread_started) {
		__atomic_store_n(&ct.stop, 1, __ATOMIC_RELEASE);
		pthread_join(thread, NULL);
	}
	if (pw && status == EXIT_OK) {
		uint64_t received = __atomic_load_n(&ct.received, __ATOMIC_RELAXED);

		totals.polls = sum.records;
		totals.dropped = all_dropped;
		if (perfetto_writer__finish(pw, &totals) || trace_consumer__write_err(consumer)) {
			fprintf(stderr, "consumer_bench: writing %s failed\n", out_path);
			status = EXIT_OUTPUT;
		}
		if (received != all_produced - all_dropped || sum.bad_records) {
			fprintf(stderr,
				"consumer_bench: accounting mismatch: produced %" PRIu64
				", dropped %" PRIu64 ", received %" PRIu64 ", malformed %" PRIu64
				"\n",
				all_produced, all_dropped, received, sum.bad_records);
			status = EXIT_FAILURE_INTERNAL;
		}
		fprintf(stderr,
			"consumer_bench: total produced %" PRIu64 ", dropped %" PRIu64
			", received %" PRIu64 ", summarized %" PRIu64 "\n",
			all_produced, all_dropped, received, sum.records);
		/* the Perfetto file's size per record (the writer has flushed it) */
		long bytes = ftell(out);
		if (bytes >= 0 && received)
			printf("{\"pftrace_bytes\":%ld,\"records\":%" PRIu64
			       ",\"bytes_per_record\":%.1f}\n",
			       bytes, received, (double)bytes / (double)received);
	}
	ring_buffer__free(ct.rb);
	trace_consumer__free(consumer);
	perfetto_writer__free(pw);
	if (out)
		fclose(out);
	if (sum.polls)
		trace_summary__free(&sum);
	producer_bpf__destroy(skel);
	model__free(&m);
	return status;
}
