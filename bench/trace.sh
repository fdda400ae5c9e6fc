#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Tracer benchmark (issue 4, §6), side by side in one run. See bench/README.md.
#
#   bench/trace.sh        (`make bench-trace` builds asyncbpf, the fixtures and the
#                          bench tools first; needs root)
#
# 1. poll rate: `handwritten loop N` (debug and release) untraced, under asyncbpf
#    trace '*Trivial*', under bench/floor (the same probe sites, empty programs,
#    one uprobe_multi link) and under bpftrace (uprobe + uretprobe with a duration
#    histogram on the same function); ns/poll as the fixture prints it;
# 2. BPF run time per program with kernel.bpf_stats_enabled=1 (restored on exit),
#    and of pieces of poll_probe's work (floor --program) to say where it goes;
# 3. the consumer's CPU per record and the highest rate it sustains with zero drops
#    (bench/consumer_bench: a synthetic BPF producer into a 16 MiB ring buffer);
# 4. attach and detach of 5,000+ probes (bench/manyasync.sh generates the binary)
#    by asyncbpf, and by bpftrace on a subset (extrapolated, labelled);
# 5. a tokio HTTP server (tests/conformance http_server, 2 workers) under keep-alive
#    load from its own 2-thread client: requests/s untraced, with `asyncbpf trace
#    -p PID` (default selection, default exits) attached, with --exits ret, and with
#    --exits uretprobe (the kernel's cheapest exits, unsafe for unwinding: reference);
#    the share of exits single-stepped by frequency (the summary's stepped_exits)
#    there and on the release fixtures (issue 10).
#
# 6. blocking inside polls (issue 12): per traced poll, `handwritten loop` with
#    blocking watched against --no-blocking; per context switch of a target thread
#    inside a poll, `handwritten switch` (every poll blocks once in a pipe read) the
#    same, and the programs' own run time (kernel.bpf_stats_enabled); other
#    processes' context switches: `perf bench sched pipe` with and without a trace
#    of an idle target attached.
#
# 7. task mode against per-future probes (issue 18): release servers under wrk
#    (keep-alive, -c16, BENCH_WRK_SECONDS each), requests/s untraced, with `trace
#    --tasks -p` (wake-ups sampled, the default), `--tasks --no-wakes`, `--tasks
#    --wake-sample 100`, and the per-future probes (`--deep`: the default selection,
#    exits in the callers where their own would be single-stepped), and `top -p`
#    (task mode, its default: statistics in the kernel, a table a second), and
#    `top -p --quiet --prometheus` scraped every second (docs/metrics.md), and
#    `profile -p` at 99 Hz once and with `--every 1 --pprof-dir` (continuous
#    profiling), interleaved; ratios to untraced, the exits single-stepped by
#    frequency.
#
# BENCH_PARTS (default 1,2,3,4,5,6,7) runs some parts only.
# Environment: BENCH_RUNS (default 5), BENCH_POLLS (traced polls per run, default
# 30000), BENCH_BPFTRACE_FNS (functions for bpftrace's attach test, default 100),
# BENCH_RATES (consumer steps, M records/s, default 0.1,0.25,0.5,1,2).
# Results: a table on stdout and in .output/bench/trace-results.txt; raw samples in
# .output/bench/trace-samples.jsonl.
# Exit status: 0 measured (a missed target is reported as MISS; BENCH_STRICT=1 makes
# a MISS exit 1); 2 a tool is missing or a measured command failed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/.output/bench"
asyncbpf="$root/.output/asyncbpf"
floor="$out/floor"
consumer="$out/consumer_bench"
helper="$root/bench/trace_helper.py"
runs="${BENCH_RUNS:-5}"
polls="${BENCH_POLLS:-30000}"
bt_fns="${BENCH_BPFTRACE_FNS:-100}"
rates="${BENCH_RATES:-0.1,0.25,0.5,1,2}"
parts=",${BENCH_PARTS:-1,2,3,4,5,6,7},"
part() { [[ "$parts" == *",$1,"* ]]; }
http_conns="${BENCH_HTTP_CONNS:-8}"
http_reqs="${BENCH_HTTP_REQS:-3000}"
samples="$out/trace-samples.jsonl"
results="$out/trace-results.txt"
work="$out/trace-work"

die() {
	echo "bench: $*" >&2
	exit 2
}

[ "$(id -u)" = 0 ] || die "needs root (BPF programs, uprobes, kernel.bpf_stats_enabled)"
for t in bpftool bpftrace strace /usr/bin/python3 sysctl; do
	command -v "$t" >/dev/null || die "$t not found: run 'make deps' (scripts/deps.sh)"
done
if [ ! -x "$asyncbpf" ] || [ ! -x "$floor" ] || [ ! -x "$consumer" ]; then
	make -C "$root" --no-print-directory all bench-tools >&2 || die "cannot build asyncbpf and the bench tools"
fi
for b in debug release; do
	[ -x "$root/tests/fixtures/bin/$b/handwritten" ] || die "no tests/fixtures/bin/$b/handwritten: make fixtures"
done
mkdir -p "$out" "$work"

# Everything we start runs in the background only while we wait for it; the
# sysctl is restored whatever happens.
old_stats="$(sysctl -n kernel.bpf_stats_enabled)"
bg_pids=()
cleanup() {
	sysctl -q -w kernel.bpf_stats_enabled="$old_stats" || echo "bench: could not restore kernel.bpf_stats_enabled=$old_stats" >&2
	for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -f "$work"/*.pftrace "$out"/consumer-bench.pftrace
}
trap cleanup EXIT
trap 'exit 2' INT TERM

: >"$samples"
sample() { echo "$1" >>"$samples"; }
sample "{\"part\":\"targets\",\"runs\":$runs,\"floor_ratio\":1.05,\"bpf_ns\":300,\"bpf_ratio\":0.5,\"consumer_ns\":1000,\"rate\":2000000,\"attach_ms\":100,\"probes\":5000}"

# ---- 1. poll rate ----------------------------------------------------------------

bpftrace_prog() { # the issue's script: entry + exit, a duration histogram
	local bin="$1" sym="$2"
	printf 'uprobe:%s:"%s" { @s[tid] = nsecs; } uretprobe:%s:"%s" /@s[tid]/ { @h = hist(nsecs - @s[tid]); delete(@s[tid]); }' \
		"$bin" "$sym" "$bin" "$sym"
}

# run_poll BUILD TOOL N: one run; prints the fixture's ns/poll
run_poll() {
	local build="$1" tool="$2" n="$3" bin="$root/tests/fixtures/bin/$1/handwritten" o="$work/$1-$2.out"
	case "$tool" in
	untraced) "$bin" loop "$n" >"$o" 2>"$o.err" ;;
	asyncbpf | asyncbpf-ret)
		local exits=emulated
		[ "$tool" = asyncbpf-ret ] && exits=ret
		"$asyncbpf" trace '*Trivial*' --exits "$exits" -o "$work/loop.pftrace" --summary-json "$work/loop-summary.json" \
			-- "$bin" loop "$n" >"$o" 2>"$o.err" || die "asyncbpf trace failed: $(tail -n 3 "$o.err")"
		/usr/bin/python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["totals"]; sys.exit(0 if t["dropped"]==0 and t["records"]==int(sys.argv[2]) else 1)' \
			"$work/loop-summary.json" "$n" || die "asyncbpf trace: records or drops wrong ($work/loop-summary.json)"
		;;
	floor) "$floor" '*Trivial*' -- "$bin" loop "$n" >"$o" 2>"$o.err" || die "floor failed: $(tail -n 3 "$o.err")" ;;
	bpftrace)
		bpftrace -e "$(bpftrace_prog "$bin" "$sym")" -c "$bin loop $n" >"$o" 2>"$o.err" ||
			die "bpftrace failed: $(tail -n 3 "$o.err")"
		grep -q '^@h:' "$o" || die "bpftrace printed no histogram ($o)"
		;;
	esac
	"$helper" fixture-ns "$o" || die "no result from $tool ($o, $o.err)"
}

for build in debug release; do
	part 1 || part 2 || break
	bin="$root/tests/fixtures/bin/$build/handwritten"
	"$asyncbpf" analyze "$bin" --json "$work/$build-model.json" >/dev/null 2>&1 || die "asyncbpf analyze $bin failed"
	site="$("$helper" poll-site "$work/$build-model.json" 'handwritten::Trivial as')" || die "no Trivial::poll in $bin"
	sym="$(echo "$site" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["linkage_name"])')"
	addr="$(nm "$bin" | awk -v s="$sym" '$3 == s && !a { a = $1 } END { print a }')"
	first="$(objdump -d --no-show-raw-insn -M intel --start-address=0x"$addr" --stop-address=$((0x$addr + 16)) "$bin" |
		awk -F'\t' '/^ *[0-9a-f]+:/ && !i { i = $2 } END { print i }' | sed 's/ \+/ /g')"
	sample "$(echo "$site" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); d.update(part="site", build=sys.argv[1], first_insn=sys.argv[2]); print(json.dumps(d))' "$build" "$first")"
	echo "bench: poll rate, $build: $runs x (untraced, asyncbpf, floor, bpftrace), $polls traced polls each" >&2
	part 1 || continue
	for ((i = 1; i <= runs; i++)); do
		# asyncbpf and the floor always back to back, alternately first: their ratio is
		# taken per run, so drifting machine load cancels; the order flips every run
		if ((i % 2)); then order=(untraced asyncbpf floor asyncbpf-ret bpftrace); else order=(bpftrace asyncbpf-ret floor asyncbpf untraced); fi
		for tool in "${order[@]}"; do
			n="$polls"
			[ "$tool" = untraced ] && n=$((polls * 100))
			ns="$(run_poll "$build" "$tool" "$n")"
			sample "{\"part\":\"poll\",\"build\":\"$build\",\"tool\":\"$tool\",\"run\":$i,\"ns\":$ns}"
		done
	done
done

# ---- 2. BPF run time per program -----------------------------------------------------

# sample_progs PID FILE: while PID runs, keep in FILE its BPF programs' counters at
# the sample with the most runs; its exit status
sample_progs() {
	local pid="$1"
	bg_pids+=("$pid")
	rm -f "$2"
	while kill -0 "$pid" 2>/dev/null; do
		"$helper" prog-stats "$pid" "$2" 2>/dev/null || true
		sleep 0.05
	done
	wait "$pid"
}

# stats_run BUILD TOOL: run TOOL once in the background, sample its programs' counters
# every 0.05 s until it exits; record the sample with the most runs. At least 30,000
# polls: the sampler must see the programs run for a while.
stats_polls=$((polls > 30000 ? polls : 30000))
stats_run() {
	local build="$1" tool="$2" bin="$root/tests/fixtures/bin/$1/handwritten" pid last="" s
	local o="$work/stats-$1-$2.out"
	case "$tool" in
	asyncbpf) "$asyncbpf" trace '*Trivial*' -o "$work/stats.pftrace" -- "$bin" loop "$stats_polls" >"$o" 2>"$o.err" & ;;
	floor*) "$floor" --program "${tool#floor:}" '*Trivial*' -- "$bin" loop "$stats_polls" >"$o" 2>"$o.err" & ;;
	bpftrace) bpftrace -e "$(bpftrace_prog "$bin" "$sym")" -c "$bin loop $stats_polls" >"$o" 2>"$o.err" & ;;
	esac
	sample_progs $! "$o.progs" || die "$tool failed under bpf_stats: $(tail -n 3 "$o.err")"
	[ -s "$o.progs" ] && last="$(cat "$o.progs")"
	if [ "${tool%%:*}" = floor ]; then # exact: the floor reads its counters before detaching
		last="$(sed -n 's/^floor: //p' "$o.err" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
print(json.dumps([{"name": d["program"], "run_time_ns": d["run_time_ns"], "run_cnt": d["run_cnt"]}]))')"
	fi
	[ -n "$last" ] || die "no BPF program counters sampled for $tool"
	# polls the sampled counters cover: asyncbpf and the floor run twice per poll (entry,
	# exit); bpftrace's entry program runs once per poll
	/usr/bin/python3 -c '
import json, sys
progs = json.loads(sys.argv[3])
tool = sys.argv[2]
cnt = max((p.get("run_cnt") or 0) for p in progs if tool != "asyncbpf" or p.get("name") == "poll_probe")
polls = cnt if tool == "bpftrace" else cnt / 2
print(json.dumps({"part": "bpfstats", "build": sys.argv[1], "tool": tool, "progs": progs, "polls_seen": polls}))' \
		"$build" "$tool" "$last" >>"$samples"
}

if part 2; then
sysctl -q -w kernel.bpf_stats_enabled=1 || die "cannot set kernel.bpf_stats_enabled=1"
for build in debug release; do
	sym="$("$helper" poll-site "$work/$build-model.json" 'handwritten::Trivial as' |
		/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["linkage_name"])')"
	echo "bench: BPF run time, $build: asyncbpf, floor, bpftrace with kernel.bpf_stats_enabled=1" >&2
	for tool in asyncbpf floor:floor_empty bpftrace; do stats_run "$build" "$tool"; done
done
# what poll_probe's run time is made of: one piece of its work each, same sites
echo "bench: BPF run time of poll_probe's pieces (floor --program), release" >&2
for tool in floor:floor_ktime floor:floor_task_storage floor:floor_fixed; do stats_run release "$tool"; done
sysctl -q -w kernel.bpf_stats_enabled="$old_stats"
fi

# ---- 3. consumer ---------------------------------------------------------------------

if part 3; then
echo "bench: consumer: rates $rates M records/s, 1 s each (the tracer's rule: forced on crossing a quarter; the first rule: forced on every record past it; never forced; null consumer)" >&2
consumer_run() { # MODE ARGS...
	local mode="$1"
	shift
	"$consumer" "$@" --seconds 1 -o "$out/consumer-bench.pftrace" "$root/tests/fixtures/bin/debug/handwritten" \
		>"$work/consumer-$mode.out" 2>"$work/consumer-$mode.err" ||
		die "consumer_bench ($mode) failed: $(tail -n 3 "$work/consumer-$mode.err")"
	/usr/bin/python3 -c '
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l); d.update(part="consumer", mode=sys.argv[2]); print(json.dumps(d))' \
		"$work/consumer-$mode.out" "$mode" >>"$samples"
	rm -f "$out/consumer-bench.pftrace"
}
consumer_run tracer-crossing --rates "$rates" --wakeup-on-crossing
consumer_run forced-past-quarter --rates "$rates"
consumer_run never-forced --rates "$rates" --wakeup-bytes 0xffffffffffffff
consumer_run null-consumer --rates 1,2,4 --null-consumer
fi

# ---- 4. attach and detach --------------------------------------------------------------

if part 4; then
many="$("$root/bench/manyasync.sh")" || die "cannot build the generated binary (bench/manyasync.sh)"
echo "bench: attach/detach on $many, $runs runs each" >&2
# asyncbpf's own lines: "attached N probes ... in A ms through ... (BPF load and
# verification L ms)" and "detached N probes in D ms" → {"probes","attach_ms","load_ms","detach_ms"}
printed_times() {
	/usr/bin/python3 -c '
import json, re, sys
text = open(sys.argv[1]).read()
a = re.search(r"attached (\d+) probes .*? in ([\d.]+) ms through", text)
l = re.search(r"BPF load and verification ([\d.]+) ms", text)
d = re.search(r"detached \d+ probes in ([\d.]+) ms", text)
if not a or not d:
    sys.exit(1)
print(json.dumps({"probes": int(a[1]), "attach_ms": float(a[2]), "detach_ms": float(d[1]),
                  "load_ms": float(l[1]) if l else None}))' "$1"
}
attach_sample() { # WHAT JSON
	/usr/bin/python3 -c '
import json, sys
d = json.loads(sys.argv[2]); d.update(part="attach", what=sys.argv[1]); print(json.dumps(d))' "$1" "$2" >>"$samples"
}
for ((i = 1; i <= runs; i++)); do
	# asyncbpf launch mode, as it prints it: attach (tracer__attach: the links), and
	# separately the BPF load and verification (tracer__load, specs filled)
	"$asyncbpf" trace --deep -o "$work/many.pftrace" -- "$many" >/dev/null 2>"$work/many.err" ||
		die "asyncbpf trace of $many failed: $(tail -n 3 "$work/many.err")"
	times="$(printed_times "$work/many.err")" || die "asyncbpf printed no attach/detach times ($work/many.err)"
	attach_sample "asyncbpf trace (launch), as it prints" "$times"

	# asyncbpf -p on a running process (breakpoints written into its memory at attach)
	"$many" wait 60 >/dev/null &
	mpid=$!
	bg_pids+=("$mpid")
	sleep 0.3
	"$asyncbpf" trace --deep -p "$mpid" -d 0.3 -o "$work/many-p.pftrace" >/dev/null 2>"$work/many-p.err" ||
		die "asyncbpf trace -p of $many failed: $(tail -n 3 "$work/many-p.err")"
	times="$(printed_times "$work/many-p.err")" || die "asyncbpf printed no attach/detach times ($work/many-p.err)"
	attach_sample "asyncbpf trace -p (running), as it prints" "$times"
	# the tracer's parts, and the floor's bare link, on the same running process
	"$floor" --tracer -p "$mpid" 2>"$work/floor.err" || die "floor --tracer failed: $(cat "$work/floor.err")"
	attach_sample "tracer parts (-p): poll_probe" "$(sed -n 's/^tracer: //p' "$work/floor.err")"
	"$floor" -p "$mpid" 2>"$work/floor.err" || die "floor -p failed: $(cat "$work/floor.err")"
	attach_sample "floor link (-p): empty program" "$(sed -n 's/^floor: //p' "$work/floor.err")"
	kill "$mpid" 2>/dev/null || true
	wait "$mpid" 2>/dev/null || true
done

# bpftrace: one perf event per probe; a subset, extrapolated
"$asyncbpf" analyze "$many" --json "$work/many-model.json" >/dev/null 2>&1 || die "asyncbpf analyze $many failed"
mapfile -t syms < <("$helper" symbols "$work/many-model.json" manyasync "$bt_fns")
prog=""
for s in "${syms[@]}"; do prog+="uprobe:$many:\"$s\","; done
prog="${prog%,} { @e = count(); } "
for s in "${syms[@]}"; do prog+="uretprobe:$many:\"$s\","; done
prog="${prog%,} { @r = count(); } interval:s:1 { exit(); }"
echo "bench: bpftrace attach/detach of ${#syms[@]} uprobes + ${#syms[@]} uretprobes (strace -f -ttt -T)" >&2
strace -f -ttt -T -e trace=perf_event_open,ioctl,close -o "$work/bpftrace.strace" \
	bpftrace -e "$prog" >"$work/bpftrace-attach.out" 2>&1 || die "bpftrace attach test failed: $(tail -n 3 "$work/bpftrace-attach.out")"
spans="$("$helper" strace-spans "$work/bpftrace.strace" "$(cat /sys/bus/event_source/devices/uprobe/type)")" ||
	die "bpftrace attach test: $spans"
/usr/bin/python3 -c '
import json, sys
d = json.loads(sys.argv[1]); d.update(part="bpftrace-attach", fns=int(sys.argv[2])); print(json.dumps(d))' "$spans" "${#syms[@]}" >>"$samples"

fi

# ---- 5. an HTTP server under -p, exits by frequency -------------------------------------

# http_run BUILD MODE RUN: one client run against a fresh server; MODE untraced, or an
# --exits mode with `asyncbpf trace -p` attached before the load and stopped after it
http_run() {
	local build="$1" mode="$2" run="$3" srv="$root/tests/conformance/bin/$1/http_server"
	local so="$work/http-$1-$2.srv" ao="$work/http-$1-$2.asyncbpf" port spid apid="" t0 t1
	"$srv" --port 0 --workers 2 >"$so" 2>&1 &
	spid=$!
	bg_pids+=("$spid")
	for ((k = 0; k < 100; k++)); do
		port="$(sed -n 's/.*"listening":\([0-9]*\).*/\1/p' "$so")"
		[ -n "$port" ] && break
		sleep 0.05
	done
	[ -n "$port" ] || die "http_server did not start ($so)"
	if [ "$mode" != untraced ]; then
		"$asyncbpf" trace -p "$spid" --exits "$mode" -o "$work/http.pftrace" --summary-json "$work/http-summary.json" \
			>"$ao.out" 2>"$ao" &
		apid=$!
		bg_pids+=("$apid")
		for ((k = 0; k < 600; k++)); do
			grep -q 'trace: attached' "$ao" && break
			kill -0 "$apid" 2>/dev/null || die "asyncbpf trace -p http_server failed: $(tail -n 3 "$ao")"
			sleep 0.05
		done
		grep -q 'trace: attached' "$ao" || die "asyncbpf trace -p http_server did not attach ($ao)"
	fi
	t0="$(date +%s%N)"
	"$srv" client "$port" "$http_conns" "$http_reqs" >"$work/http-client.out" 2>&1 ||
		die "http_server client failed ($mode): $(tail -n 3 "$work/http-client.out")"
	t1="$(date +%s%N)"
	if [ -n "$apid" ]; then
		kill -INT "$apid"
		wait "$apid" || die "asyncbpf trace -p http_server exited with $? ($ao)"
	fi
	kill -TERM "$spid"
	wait "$spid" || true
	/usr/bin/python3 -c '
import json, sys
build, mode, run, ns, n, summ = sys.argv[1:7]
d = {"part": "http", "build": build, "mode": mode, "run": int(run), "requests": int(n),
     "seconds": int(ns) / 1e9}
if mode != "untraced":
    t = json.load(open(summ))["totals"]
    d.update(records=t["records"], dropped=t["dropped"], exits=t.get("exits"), stepped_exits=t.get("stepped_exits"))
print(json.dumps(d))' "$build" "$mode" "$run" "$((t1 - t0))" "$((http_conns * http_reqs))" "$work/http-summary.json" >>"$samples"
}

# fixture_exits BUILD CRATE: one traced run of a fixture, its exits by frequency
fixture_exits() {
	local build="$1" crate="$2" bin="$root/tests/fixtures/bin/$1/$2" s="$work/fx-summary.json"
	shift 2
	"$asyncbpf" trace --deep "$@" -o "$work/fx.pftrace" --summary-json "$s" -- "$bin" >/dev/null 2>"$work/fx.err" ||
		die "asyncbpf trace $bin failed: $(tail -n 3 "$work/fx.err")"
	/usr/bin/python3 -c '
import json, sys
t = json.load(open(sys.argv[3]))["totals"]
print(json.dumps({"part": "fixture-exits", "build": sys.argv[1], "crate": sys.argv[2], "exits": t["exits"],
                  "stepped_exits": t["stepped_exits"], "records": t["records"]}))' "$build" "$crate" "$s" >>"$samples"
}

if part 5; then
	for build in release debug; do
		[ -x "$root/tests/conformance/bin/$build/http_server" ] || die "no tests/conformance/bin/$build/http_server: make conformance"
		echo "bench: http_server ($build) under keep-alive load, $runs x (untraced, -p default, -p --exits ret), $http_conns x $http_reqs requests" >&2
		for ((i = 1; i <= runs; i++)); do
			# uretprobe: the kernel's cheapest exits, for reference only (a panic unwinding
			# through one aborts the target: never a default for a binary that unwinds)
			if ((i % 2)); then order=(untraced emulated ret uretprobe); else order=(uretprobe ret emulated untraced); fi
			for mode in "${order[@]}"; do http_run "$build" "$mode" "$i"; done
		done
	done
	echo "bench: exits by frequency on the release fixtures" >&2
	for crate in handwritten outputs tokio_ct tokio_mt demo; do fixture_exits release "$crate"; done
	fixture_exits release async_std_app --all-crates
	fixture_exits release smol_app --all-crates
fi

# ---- 6. blocking inside polls --------------------------------------------------------

block_report=""
if part 6; then
	bin="$root/tests/fixtures/bin/release/handwritten"
	blk_polls=$((polls * 10))
	echo "bench: blocking and top: $runs x (loop: trace, trace --no-blocking, top; switch: on, off, untraced), $blk_polls loop polls, 20000 switch polls" >&2
	# block_run MODE(on|off|untraced) WHAT(loop|switch) N: ns per poll, as the fixture says
	block_run() {
		local o="$work/block-$1-$2.out" x=()
		[ "$1" = off ] && x=(--no-blocking)
		if [ "$1" = untraced ]; then
			"$bin" "$2" "$3" >"$o" 2>"$o.err" || die "$bin $2 failed"
		elif [ "$1" = top ]; then # stats only, no table within the run
			"$asyncbpf" top '*Trivial*' --batch -i 600 -- "$bin" "$2" "$3" >"$o" 2>"$o.err" ||
				die "asyncbpf top failed: $(tail -n 3 "$o.err")"
		else
			local sel='*Trivial*'
			[ "$2" = switch ] && sel='*Switcher*'
			"$asyncbpf" trace "$sel" "${x[@]}" -o "$work/block.pftrace" -- "$bin" "$2" "$3" >"$o" 2>"$o.err" ||
				die "asyncbpf trace ($1) failed: $(tail -n 3 "$o.err")"
		fi
		"$helper" fixture-ns "$o"
	}
	for ((i = 1; i <= runs; i++)); do
		if ((i % 2)); then order=(on off top); else order=(top off on); fi
		for m in "${order[@]}"; do
			sample "{\"part\":\"block\",\"what\":\"loop\",\"mode\":\"$m\",\"run\":$i,\"ns\":$(block_run "$m" loop "$blk_polls")}"
		done
		if ((i % 2)); then order=(on off untraced); else order=(untraced off on); fi
		for m in "${order[@]}"; do
			sample "{\"part\":\"block\",\"what\":\"switch\",\"mode\":\"$m\",\"run\":$i,\"ns\":$(block_run "$m" switch 20000)}"
		done
	done
	# other processes' context switches: perf bench sched pipe, with and without a
	# trace (blocking on) of an idle process attached
	"$bin" park 3 </dev/zero >/dev/null 2>&1 &
	idle=$!
	bg_pids+=("$idle")
	sleep 0.5
	for ((i = 1; i <= runs; i++)); do
		for m in without with; do
			tpid=""
			if [ "$m" = with ]; then
				"$asyncbpf" trace -p "$idle" -o "$work/idle.pftrace" >"$work/idle.out" 2>&1 &
				tpid=$!
				bg_pids+=("$tpid")
				sleep 1.5
			fi
			us="$(perf bench sched pipe -l 100000 2>/dev/null | awk '/usecs\/op/ {print $1}')"
			[ -n "$us" ] || die "perf bench sched pipe printed nothing"
			[ -n "$tpid" ] && { kill -INT "$tpid"; wait "$tpid" || true; }
			sample "{\"part\":\"block\",\"what\":\"others\",\"mode\":\"$m\",\"run\":$i,\"ns\":$(/usr/bin/python3 -c "print($us*1000)")}"
		done
	done
	kill "$idle" 2>/dev/null || true
	# the programs' own time per run, while a traced poll blocks 20000 times
	sysctl -q -w kernel.bpf_stats_enabled=1 || die "cannot set kernel.bpf_stats_enabled=1"
	o="$work/block-stats.out"
	"$asyncbpf" trace '*Switcher*' -o "$work/block.pftrace" -- "$bin" switch 20000 >"$o" 2>"$o.err" &
	sample_progs $! "$o.progs" || die "asyncbpf trace under bpf_stats failed: $(tail -n 3 "$o.err")"
	sample "{\"part\":\"blockstats\",\"progs\":$(cat "$o.progs" 2>/dev/null || echo '[]')}"
	sysctl -q -w kernel.bpf_stats_enabled="$old_stats"
	block_report="$(/usr/bin/python3 - "$samples" <<'PY'
import json, statistics, sys
S = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
B = [s for s in S if s.get("part") == "block"]
def med(what, mode):
    v = [s["ns"] for s in B if s["what"] == what and s["mode"] == mode]
    return statistics.median(v) if v else float("nan")
lo, lf = med("loop", "on"), med("loop", "off")
so, sf, su = med("switch", "on"), med("switch", "off"), med("switch", "untraced")
ow, oo = med("others", "with"), med("others", "without")
progs = next((s["progs"] for s in reversed(S) if s.get("part") == "blockstats"), [])
per = {p["name"]: (p["run_time_ns"] or 0) / max(p["run_cnt"] or 1, 1) for p in progs}
cnt = {p["name"]: p["run_cnt"] or 0 for p in progs}
print("blocking inside polls (issue 12), medians of the runs:")
print(f"  per traced poll (handwritten loop): watched {lo:.0f} ns, --no-blocking {lf:.0f} ns: "
      f"{lo / lf:.3f}x (target <= 1.05x: {'PASS' if lo / lf <= 1.05 else 'MISS'})")
print(f"  a poll that blocks once (handwritten switch): watched {so:.0f} ns, --no-blocking {sf:.0f} ns, "
      f"untraced {su:.0f} ns: {so - sf:+.0f} ns per switch out and in (noise: a switch costs ~{su / 1000:.0f} us here)")
if per:
    sw = per.get("on_switch", float("nan"))
    print(f"  BPF run time per run (bpf_stats, its own two clock reads included): on_switch {sw:.0f} ns "
          f"over {cnt.get('on_switch', 0)} runs (every switch of the machine while the target switched); "
          f"each context switch of a target thread inside a poll (out, and in again: two switches) "
          f"runs it once: {sw:.0f} ns a switch (target <= 300 ns: {'PASS' if sw <= 300 else 'MISS'})")
lt = med("loop", "top")
print(f"  top's stats-only mode (handwritten loop): {lt:.0f} ns per poll against trace's {lo:.0f} ns: "
      f"{lt / lo:.3f}x (target <= 0.8x: {'PASS' if lt / lo <= 0.8 else 'MISS'})")
print(f"  other processes (perf bench sched pipe, 100000 loops, 2 switches an op): {ow / 1000:.2f} us/op with a "
      f"trace of an idle target attached, {oo / 1000:.2f} us/op without: {ow / oo:.3f}x "
      f"({(ow - oo) / 2:+.0f} ns a switch)")
PY
)"
fi

# ---- 7. task mode against per-future probes on loaded servers ------------------------

task_report=""
# wrk_run SERVER MODE RUN: requests/s of wrk against a fresh release SERVER, traced by
# MODE (untraced; tasks; tasks-nowakes; tasks-allwakes; deep; top; top-locks; top-prom; top-exe;
# profile; profile-every) attached before the load
wrk_run() {
	local server="$1" mode="$2" run="$3" srv="$root/tests/conformance/bin/release/$1"
	local so="$work/wrk-$1.srv" ao="$work/wrk-$1-$2.asyncbpf" port spid apid="" rps args=() cmd
	"$srv" --port 0 >"$so" 2>&1 &
	spid=$!
	bg_pids+=("$spid")
	for ((k = 0; k < 100; k++)); do
		port="$(sed -n 's/.*"listening":\([0-9]*\).*/\1/p' "$so")"
		[ -n "$port" ] && break
		sleep 0.05
	done
	[ -n "$port" ] || die "$server did not start ($so)"
	case "$mode" in
	tasks) args=(--tasks) ;;
	tasks-nowakes) args=(--tasks --no-wakes) ;;
	tasks-allwakes) args=(--tasks --wake-sample 100) ;;
	deep) args=(--deep) ;;
	esac
	cmd=(trace "${args[@]}" -p "$spid" -o "$work/wrk.pftrace" --summary-json "$work/wrk-summary.json")
	[ "$mode" = top ] && cmd=(top -p "$spid" --batch -i 1)
	# top --locks: the trees read at every task poll's end, for their locks
	[ "$mode" = top-locks ] && cmd=(top -p "$spid" --locks --batch -i 1)
	# top --prometheus, headless, scraped every second as a Prometheus server would
	[ "$mode" = top-prom ] && cmd=(top -p "$spid" --quiet --prometheus 127.0.0.1:0 -i 1)
	# the same, following the server's executable (--exe) instead of its pid
	[ "$mode" = top-exe ] && cmd=(top --exe "$srv" --quiet --prometheus 127.0.0.1:0 -i 1)
	# the sampling profiler at its default 99 Hz: once, and continuous (a pprof a second)
	[ "$mode" = profile ] && cmd=(profile -p "$spid" -o "$work/wrk-profile.svg")
	[ "$mode" = profile-every ] && rm -rf "$work/wrk-every" &&
		cmd=(profile -p "$spid" --every 1 --pprof-dir "$work/wrk-every")
	if [ "$mode" != untraced ]; then
		: >"$ao" # there before the polling below reads it
		"$asyncbpf" "${cmd[@]}" >"$ao.out" 2>"$ao" &
		apid=$!
		bg_pids+=("$apid")
		for ((k = 0; k < 600; k++)); do
			grep -q ': attached\|: sampling pid' "$ao" && break
			kill -0 "$apid" 2>/dev/null || break
			sleep 0.05
		done
		if ! grep -q ': attached\|: sampling pid' "$ao"; then
			# nothing to probe in this mode (e.g. every selected future inlined): said
			kill "$apid" 2>/dev/null || true
			wait "$apid" 2>/dev/null || true
			kill -TERM "$spid"
			wait "$spid" || true
			sample "{\"part\":\"wrk\",\"server\":\"$server\",\"mode\":\"$mode\",\"run\":$run,\"rps\":null,\"why\":$(tail -n 1 "$ao" | /usr/bin/python3 -c 'import json,sys; print(json.dumps(sys.stdin.read().strip()))')}"
			return
		fi
	fi
	local scraper="" url
	if [ "$mode" = top-prom ] || [ "$mode" = top-exe ]; then
		url="$(sed -n 's/.*serving Prometheus metrics on \(http:[^ ]*\).*/\1/p' "$ao")"
		/usr/bin/python3 -c '
import sys, time, urllib.request
while True:
    with urllib.request.urlopen(sys.argv[1], timeout=5) as r:
        r.read()
    time.sleep(1)' "$url" 2>/dev/null &
		scraper=$!
		bg_pids+=("$scraper")
	fi
	rps="$(wrk -t1 -c16 -d"${BENCH_WRK_SECONDS:-4}"s "http://127.0.0.1:$port/hello" 2>/dev/null | awk '/Requests\/sec/{print $2}')"
	if [ -n "$scraper" ]; then
		kill "$scraper" 2>/dev/null || true
		wait "$scraper" 2>/dev/null || true
	fi
	if [ -n "$apid" ]; then
		kill -INT "$apid"
		wait "$apid" || die "asyncbpf ${cmd[0]} -p $server exited with $? ($ao)"
	fi
	kill -TERM "$spid"
	wait "$spid" || true
	/usr/bin/python3 -c '
import json, re, sys
server, mode, run, rps, summ, ao = sys.argv[1:7]
d = {"part": "wrk", "server": server, "mode": mode, "run": int(run), "rps": float(rps or 0)}
if mode in ("top", "top-locks", "top-prom", "top-exe"):  # its own cost, as it stated it at the end
    m = re.search(r"total ~[\d.]+ ms of the target.s CPU time: ([\d.]+)%", open(ao).read())
    d.update(cost=float(m.group(1)) if m else None)
elif mode in ("profile", "profile-every"):
    pass  # its cost: the ratio
elif mode != "untraced":
    t = json.load(open(summ))["totals"]
    d.update(exits=t.get("exits"), stepped_exits=t.get("stepped_exits"), dropped=t.get("dropped"),
             trees=t.get("task_trees"), cost=t.get("tracer_cost", {}).get("share_percent"))
print(json.dumps(d))' "$server" "$mode" "$run" "$rps" "$work/wrk-summary.json" "$ao" >>"$samples"
}

if part 7; then
	command -v wrk >/dev/null || die "wrk not found: run 'make deps' (scripts/deps.sh)"
	for server in http_server hyper_server; do
		[ -x "$root/tests/conformance/bin/release/$server" ] || die "no tests/conformance/bin/release/$server: make conformance"
		# BENCH_WRK_MODES (default: all) runs some modes only, e.g. "top top-locks";
		# untraced always (the ratios' base)
		all_modes=" untraced tasks tasks-nowakes tasks-allwakes deep top top-locks top-prom top-exe profile profile-every "
		modes=(untraced)
		for mode in ${BENCH_WRK_MODES:-$all_modes}; do
			[[ "$all_modes" == *" $mode "* ]] || die "BENCH_WRK_MODES: no mode '$mode' (modes:$all_modes)"
			[ "$mode" = untraced ] || modes+=("$mode")
		done
		echo "bench: $server (release) under wrk -c16, $runs x (${modes[*]})" >&2
		for ((i = 1; i <= runs; i++)); do
			order=()
			if ((i % 2)); then order=("${modes[@]}"); else for ((k = ${#modes[@]} - 1; k >= 0; k--)); do order+=("${modes[k]}"); done; fi
			for mode in "${order[@]}"; do wrk_run "$server" "$mode" "$i"; done
		done
	done
	task_report="$(/usr/bin/python3 - "$samples" <<'PY'
import json, statistics, sys
S = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
W = [s for s in S if s.get("part") == "wrk"]
print("task mode against per-future probes (issue 18), release servers under wrk -c16, medians:")
for server in sorted({s["server"] for s in W}):
    base = statistics.median([s["rps"] for s in W if s["server"] == server and s["mode"] == "untraced"])
    print(f"  {server}: untraced {base:,.0f} req/s")
    for mode, label, target in (("tasks", "--tasks (wake-ups sampled, 10%)", 0.75),
                                ("tasks-nowakes", "--tasks --no-wakes", None),
                                ("tasks-allwakes", "--tasks --wake-sample 100", None),
                                ("deep", "per-future probes (exits in the callers)", 0.6),
                                ("top", "top -p (task mode, wake-ups sampled)", 0.75),
                                ("top-locks", "top -p --locks (trees read for their locks)", None),
                                ("top-prom", "top -p --quiet --prometheus (scraped 1/s)", 0.75),
                                ("top-exe", "top --exe --quiet --prometheus (scraped 1/s)", 0.75),
                                ("profile", "profile -p (99 Hz)", None),
                                ("profile-every", "profile -p --every 1 --pprof-dir (99 Hz)", None)):
        R = [s for s in W if s["server"] == server and s["mode"] == mode]
        if not R:
            continue
        if all(s["rps"] is None for s in R):
            print(f"    {label:44s} n/a: {R[0].get('why', '')[:120]}")
            continue
        r = statistics.median([s["rps"] for s in R if s["rps"] is not None]) / base
        ex = sum(s.get("exits") or 0 for s in R)
        st = sum(s.get("stepped_exits") or 0 for s in R)
        extra = f", exits single-stepped {100 * st / ex:.1f}% by frequency" if mode == "deep" and ex else ""
        goal = f" (target >= {target}x: {'PASS' if r >= target else 'MISS'})" if target else ""
        costs = [s["cost"] for s in R if s.get("cost") is not None]
        if costs:
            extra += f", its stated cost {statistics.median(costs):.1f}% of the target CPU time"
        print(f"    {label:44s} {r:.3f}x{goal}{extra}")
PY
)"
fi

# ---- report -----------------------------------------------------------------------------

{
	"$helper" report "$samples"
	[ -z "$block_report" ] || printf '\n%s\n' "$block_report"
	[ -z "$task_report" ] || printf '\n%s\n' "$task_report"
	echo
	echo "date: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "asyncbpf: $asyncbpf ($(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')), $(bpftrace --version)"
	echo "command: make bench-trace (BENCH_RUNS=$runs BENCH_POLLS=$polls BENCH_BPFTRACE_FNS=$bt_fns BENCH_RATES=$rates)"
} | tee "$results"
echo "bench: results in $results; samples in $samples" >&2
if grep -q MISS "$results" && [ "${BENCH_STRICT:-0}" = 1 ]; then
	exit 1
fi
exit 0
