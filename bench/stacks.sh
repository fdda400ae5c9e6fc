#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `asyncbpf stacks` benchmark: the time to snapshot a process and how long it stays
# paused, against its number of parked tasks (100, 10,000, 100,000) and the memory
# copied, on a hand-written executor (`handwritten park N`: boxed dyn Futures) and
# on tokio (`tokio_mt park N`: task headers). See bench/README.md.
#
#   bench/stacks.sh          (`make bench-stacks` runs it after `make all fixtures`)
#
# Each point: the release fixture parks N tasks, then `asyncbpf stacks -p PID
# --json F` runs BENCH_RUNS times (default 5); the medians of the JSON's read_us
# and paused_us are reported with the bytes copied (scan.bytes) and the copy rate
# (bytes / paused time: the pause is the copy). Every run must find all N tasks.
# Targets (the issue's, on this VM): 10,000 tasks read and decoded in <= 100 ms,
# paused <= 50 ms; memory copied at >= 1 GB/s. Results also go to
# .output/bench/stacks-results.txt.
# Exit status: 0 measured (a missed target is MISS, not an error; BENCH_STRICT=1
# makes a MISS exit 1); 2 a binary is missing or a run failed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/.output/bench"
asyncbpf="$root/.output/asyncbpf"
runs="${BENCH_RUNS:-5}"
sizes="${BENCH_TASKS:-100 10000 100000}"

die() {
	echo "bench: $*" >&2
	exit 2
}

[ -x "$asyncbpf" ] || die "$asyncbpf missing: make all"
mkdir -p "$out"
results="$out/stacks-results.txt"
: >"$results"
miss=0

# one fixture at one size: prints "tasks bytes read_us paused_us" (medians)
measure() {
	local bin="$1" n="$2" pid fifo json="$out/stacks-bench.json"
	[ -x "$bin" ] || die "$bin missing: make fixtures"
	fifo="$(mktemp -u)"
	mkfifo "$fifo"
	"$bin" park "$n" <"$fifo" >"$out/stacks-bench.counts" &
	pid=$!
	exec 9>"$fifo" # holds its stdin open until we are done
	rm -f "$fifo"
	for _ in $(seq 600); do [ -s "$out/stacks-bench.counts" ] && break; sleep 0.1; done
	[ -s "$out/stacks-bench.counts" ] || die "$bin park $n did not start"
	local rows=()
	for _ in $(seq "$runs"); do
		"$asyncbpf" stacks -p "$pid" --json "$json" >/dev/null 2>&1 ||
			{ exec 9>&-; wait "$pid" || true; die "asyncbpf stacks -p $pid failed on $bin park $n"; }
		rows+=("$(python3 - "$json" "$n" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
parked = sum(1 for t in d["tasks"] if any(f["future"].split("::")[-1] in ("park_task", "park_shallow", "many_task", "many_leaf", "dead_a", "dead_b", "chan_task", "timer_task", "nest_task", "lost_task") for f in t["frames"]))
print(parked, d["scan"]["bytes"], d["read_us"], d["paused_us"])
PY
)")
	done
	exec 9>&-
	wait "$pid" || die "$bin park $n did not exit 0"
	printf '%s\n' "${rows[@]}" | python3 -c '
import statistics, sys
rows = [list(map(int, l.split())) for l in sys.stdin if l.strip()]
med = lambda k: int(statistics.median(r[k] for r in rows))
print(min(r[0] for r in rows), med(1), med(2), med(3))'
}

printf '%-12s %8s %10s %10s %12s %10s\n' fixture tasks "copied MB" "paused ms" "read ms" "GB/s" | tee -a "$results"
for fx in handwritten tokio_mt; do
	for n in $sizes; do
		read -r found bytes read_us paused_us < <(measure "$root/tests/fixtures/bin/release/$fx" "$n")
		# tokio_mt parks 6 tasks of its own besides the N
		want=$n
		[ "$fx" = tokio_mt ] && want=$((n + 6))
		[ "$found" -ge "$want" ] || die "$fx park $n: found $found of $want tasks"
		rate="$(python3 -c "print(f'{$bytes / max($paused_us, 1) / 1e3:.2f}')")"
		printf '%-12s %8s %10.1f %10.1f %12.1f %10s\n' "$fx" "$n" \
			"$(python3 -c "print($bytes/1e6)")" "$(python3 -c "print($paused_us/1e3)")" \
			"$(python3 -c "print($read_us/1e3)")" "$rate" | tee -a "$results"
		if [ "$n" = 10000 ]; then
			v=()
			for cond in "$read_us <= 100000" "$paused_us <= 50000" "$rate >= 1.0"; do
				if python3 -c "import sys; sys.exit(0 if $cond else 1)"; then v+=(PASS); else v+=(MISS); miss=1; fi
			done
			echo "  $fx 10,000 tasks: read ${read_us} us <= 100 ms: ${v[0]}; paused ${paused_us} us <= 50 ms: ${v[1]}; copy ${rate} GB/s >= 1: ${v[2]}" | tee -a "$results"
		fi
	done
done
[ "$miss" = 0 ] || [ "${BENCH_STRICT:-0}" != 1 ] || exit 1
exit 0
