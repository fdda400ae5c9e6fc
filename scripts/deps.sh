#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Install every Debian package asyncbpf's build, tests, fixtures and benchmarks need.
# Idempotent; installing needs root (make deps), checking does not.
set -euo pipefail

PACKAGES=(
	# build
	make gcc pkg-config clang-16 llvm-16 libclang-rt-16-dev bpftool
	libbpf-dev libelf-dev libdw-dev zlib1g-dev libcjson-dev libcapstone-dev libiberty-dev
	libseccomp-dev # syscall names (blocking inside polls)
	libmicrohttpd-dev # top --prometheus's endpoint
	# tests and tools the tests compare against
	python3 python3-pytest binutils elfutils protobuf-compiler python3-protobuf graphviz bpftrace
	linux-perf libxml2-utils time file procps util-linux
	# top --prometheus read by a real Prometheus server and promtool (tests/test_metrics.py)
	prometheus
	# profile --every's pprof files read by go tool pprof (tests/test_profile_every.py)
	golang-go
	# the SVG flame graph's script, run in jsdom (tests/test_profile_writers.py)
	nodejs node-jsdom
	# make bench-trace: bpftrace attach/detach timing
	strace
	# Rust fixtures, built offline from Debian's crates
	librust-tokio-dev librust-async-std-dev librust-smol-dev librust-futures-dev
	# third-party conformance: hyper 0.14 (tests/conformance/hyper_server), tokio's own
	# rt_common, rt_threaded and sync_mpsc tests (their dev-dependencies), and a load generator
	librust-hyper-dev librust-tokio-test-dev librust-tokio-stream-dev wrk
)

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

# A Rust toolchain >= 1.85 for the fixtures: the one on PATH or rustup's if recent
# enough, else Debian's rustc-web/cargo-web (bookworm's plain rustc is 1.63).
rust_ok() {
	local v
	v="$(PATH="$(dirname "$1"):$PATH" rustc --version 2>/dev/null | awk '{print $2}')" || return 1
	[ -n "$v" ] && [ "$(printf '1.85\n%s\n' "${v%%-*}" | sort -V | head -n1)" = 1.85 ]
}
have_rust=no
for c in "$(command -v cargo 2>/dev/null || true)" "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" \
	/usr/bin/cargo; do
	if [ -n "$c" ] && [ -x "$c" ] && rust_ok "$c"; then
		have_rust=yes
		break
	fi
done
if [ "$have_rust" = no ]; then
	missing+=(cargo-web rustc-web)
fi

if [ ${#missing[@]} -eq 0 ]; then
	echo "asyncbpf: deps: all packages present"
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "asyncbpf: deps: missing packages: ${missing[*]}; installing them needs root: run 'sudo make deps'" >&2
	exit 4
fi
echo "asyncbpf: deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
