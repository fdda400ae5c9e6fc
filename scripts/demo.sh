#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make demo: analyze the bundled demo service, then trace it for a few seconds
# (launch mode) and render its await graphs. Needs root (the tracer loads BPF).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=tests/fixtures/bin/debug/demo
out=.output/demo
seconds="${DEMO_SECONDS:-3}"
mkdir -p "$out"

./.output/asyncbpf analyze "$bin" --json "$out/demo.json" --dot "$out/demo.dot" >"$out/demo-model.txt"
dot -Tsvg "$out/demo.dot" -o "$out/demo-await-graph.svg"
echo "asyncbpf: demo: the async model of $bin is in $out/demo-model.txt (text),"
echo "asyncbpf: demo: $out/demo.json and $out/demo-await-graph.svg"
echo
echo "asyncbpf: demo: tracing $bin for $seconds s (launch mode), every poll of its futures (--deep)"
./.output/asyncbpf trace --deep -o "$out/demo.pftrace" --summary-json "$out/demo-summary.json" \
	--folded "$out/demo.folded" --dot "$out/demo-live.dot" -- "$bin" --seconds "$seconds"
dot -Tsvg "$out/demo-live.dot" -o "$out/demo-live.svg"
echo
echo "asyncbpf: demo: Perfetto trace $out/demo.pftrace (open it in ui.perfetto.dev),"
echo "asyncbpf: demo: summary $out/demo-summary.json, flame-graph stacks $out/demo.folded,"
echo "asyncbpf: demo: the await graph seen at run time $out/demo-live.svg"
