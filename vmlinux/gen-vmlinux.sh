#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Regenerate vmlinux/<arch>/vmlinux.h from the running kernel's BTF, for CO-RE.
#
# Usage: vmlinux/gen-vmlinux.sh [BTF-FILE]   (default /sys/kernel/btf/vmlinux)
# Environment: BPFTOOL (default: bpftool on PATH, else /usr/sbin/bpftool).
#
# Exit status: 0 written; 2 bad usage; 3 no BTF file (kernel built without
# CONFIG_DEBUG_INFO_BTF); 5 architecture not supported by asyncbpf's BPF build;
# 1 bpftool missing or failed (the old header is left untouched).
set -euo pipefail

die() {
	local status=$1
	shift
	echo "asyncbpf: gen-vmlinux: $*" >&2
	exit "$status"
}

[ $# -le 1 ] || die 2 "usage: $0 [BTF-FILE]"
btf=${1:-/sys/kernel/btf/vmlinux}

machine=$(uname -m)
case "$machine" in
x86_64) arch=x86 ;;
aarch64) arch=arm64 ;;
*) die 5 "architecture '$machine' is not supported (known: x86_64 -> x86, aarch64 -> arm64)" ;;
esac

if [ ! -r "$btf" ]; then
	[ $# -eq 1 ] && die 3 "cannot read BTF file '$btf'"
	die 3 "cannot read '$btf': this kernel exposes no BTF (built without" \
		"CONFIG_DEBUG_INFO_BTF). Run this on a kernel with BTF, or pass a BTF file as argument."
fi

bpftool=${BPFTOOL:-$(command -v bpftool || true)}
[ -n "$bpftool" ] || [ ! -x /usr/sbin/bpftool ] || bpftool=/usr/sbin/bpftool
[ -n "$bpftool" ] || die 1 "bpftool not found: run 'make deps' as root"

dir=$(cd "$(dirname "$0")" && pwd)/$arch
mkdir -p "$dir"
tmp=$(mktemp "$dir/vmlinux.h.XXXXXX")
trap 'rm -f "$tmp"' EXIT
"$bpftool" btf dump file "$btf" format c >"$tmp" ||
	die 1 "'$bpftool btf dump file $btf format c' failed"
[ -s "$tmp" ] || die 1 "bpftool wrote nothing for '$btf'"
chmod 0644 "$tmp"
mv "$tmp" "$dir/vmlinux.h"
trap - EXIT
echo "asyncbpf: gen-vmlinux: wrote $dir/vmlinux.h ($(wc -l <"$dir/vmlinux.h") lines) from $btf ($machine, kernel $(uname -r))" >&2
