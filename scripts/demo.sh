#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make demo: analyze the bundled demo service and render its await graph.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=tests/fixtures/bin/debug/demo
out=.output/demo
mkdir -p "$out"

./.output/asyncbpf analyze "$bin" --json "$out/demo.json" --dot "$out/demo.dot"
dot -Tsvg "$out/demo.dot" -o "$out/demo-await-graph.svg"
echo
echo "asyncbpf: demo: model in $out/demo.json, await graph in $out/demo-await-graph.svg"
