#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Fuzz the analyzer (tests/fuzz/fuzz_analyzer.c) for SECONDS, starting from the
# committed seeds (tests/fuzz/corpus/) and the regression inputs
# (tests/fuzz/crashers/). `make fuzz-long FUZZ_SECONDS=600` runs this.
#
#   tests/fuzz/run.sh [SECONDS [LIBFUZZER_FLAG...]]     (default 600 s)
#
# Extra flags go to libFuzzer after the defaults (-max_total_time=SECONDS
# -rss_limit_mb=2048 -timeout=10 -max_len=1048576), so they can override them.
# The committed corpus is never written: libFuzzer works on a copy in a temporary
# directory, which is kept (and printed) only when something was found.
# Environment: FUZZ_JOBS=N runs N fuzzer processes in parallel (default 1);
# FUZZ_KEEP=1 keeps the work directory (the grown corpus) in any case.
# Exit status: 0 no crash; 1 a crash, leak, timeout or OOM (the reproducer's
# path is printed; copy it into tests/fuzz/crashers/ once understood);
# 2 usage or build error.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
seconds="${1:-600}"
[ $# -gt 0 ] && shift
jobs="${FUZZ_JOBS:-1}"
fuzzer="$root/.output/fuzz/fuzz_analyzer"

case "$seconds" in
'' | *[!0-9]*)
	echo "usage: tests/fuzz/run.sh [SECONDS [LIBFUZZER_FLAG...]]" >&2
	exit 2
	;;
esac

# Build if needed (make is a no-op when up to date).
if ! make -C "$root" --no-print-directory fuzz >&2; then
	echo "fuzz: cannot build $fuzzer (make fuzz failed)" >&2
	exit 2
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/asyncbpf-fuzz.XXXXXX")"
mkdir -p "$work/corpus" "$work/artifacts"
cp "$here"/corpus/* "$work/corpus/"
# regression inputs join the starting corpus (the .gitkeep is not an input)
find "$here/crashers" -maxdepth 1 -type f ! -name '.*' -exec cp {} "$work/corpus/" \; 2>/dev/null || true

echo "fuzz: $fuzzer for ${seconds}s, $(ls "$work/corpus" | wc -l) starting inputs, work dir $work"
status=0
(
	cd "$work"
	args=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=1048576
		-artifact_prefix="$work/artifacts/" -print_final_stats=1)
	if [ "$jobs" -gt 1 ]; then
		args+=(-fork="$jobs" -ignore_crashes=0)
	fi
	exec "$fuzzer" "${args[@]}" "$@" "$work/corpus"
) >"$work/fuzz.log" 2>&1 || status=$?

tail -n 25 "$work/fuzz.log"
artifacts=("$work"/artifacts/*)
if [ "$status" -ne 0 ] || [ -e "${artifacts[0]}" ]; then
	echo
	echo "fuzz: FAILED (libFuzzer exit status $status); log: $work/fuzz.log"
	for a in "${artifacts[@]}"; do
		[ -e "$a" ] || continue
		echo "fuzz: reproducer: $a"
		echo "fuzz:   replay: $fuzzer $a"
	done
	exit 1
fi
echo "fuzz: no crash in ${seconds}s ($(ls "$work/corpus" | wc -l) inputs in the grown corpus)"
if [ "${FUZZ_KEEP:-0}" = 1 ]; then
	echo "fuzz: grown corpus kept in $work/corpus"
else
	rm -rf "$work"
fi
