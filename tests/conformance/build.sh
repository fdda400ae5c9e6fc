#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the conformance programs offline from Debian's crates, in both profiles,
# and copy them to stable paths (like tests/fixtures/build.sh):
#   tests/conformance/bin/{debug,release}/tokio_<test>       tokio's integration tests
#   tests/conformance/bin/{debug,release}/async_std_<example>, smol_<example>
#   tests/conformance/bin/{debug,release}/http_server
# CARGO_TARGET_DIR defaults to tests/conformance/target. Idempotent.
# Exit status: 0 built; 1 the build failed; 3 no (recent enough) cargo.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# the same toolchain rule as the fixtures
CARGO="$("$here/../fixtures/build.sh" --print-cargo)" || exit 3
export PATH="$(dirname "$CARGO"):$PATH"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
case "$CARGO_TARGET_DIR" in
/*) ;;
*) CARGO_TARGET_DIR="$PWD/$CARGO_TARGET_DIR" ;;
esac
cd "$here"
log="$(mktemp "${TMPDIR:-/tmp}/asyncbpf-conformance.XXXXXX")"
trap 'rm -f "$log"' EXIT

install_bin() { # SRC DST: copy when changed, by rename (a running copy is left alone)
	if ! cmp -s "$1" "$2"; then
		cp -p "$1" "$2.tmp.$$"
		mv -f "$2.tmp.$$" "$2"
	fi
}

for profile in debug release; do
	flags=()
	[ "$profile" = release ] && flags=(--release)
	start=$(date +%s%N)
	mkdir -p "bin/$profile"
	if ! "$CARGO" build --offline "${flags[@]}" -p third_party --examples >"$log" 2>&1 ||
		! "$CARGO" build --offline "${flags[@]}" -p http_server -p hyper_server >>"$log" 2>&1 ||
		! "$CARGO" test --offline "${flags[@]}" -p third_party --no-run \
			--message-format=json >"$log.json" 2>>"$log"; then
		cat "$log" >&2
		rm -f "$log.json"
		echo "asyncbpf: conformance: cargo build ($profile) failed" >&2
		exit 1
	fi
	# test executables: from cargo's own report (their names carry a hash)
	python3 - "$log.json" "bin/$profile" <<'PY'
import json, os, shutil, sys, filecmp
out = sys.argv[2]
for line in open(sys.argv[1]):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        dst = os.path.join(out, m["target"]["name"])
        if not os.path.exists(dst) or not filecmp.cmp(m["executable"], dst, shallow=False):
            shutil.copy2(m["executable"], dst + ".tmp")
            os.replace(dst + ".tmp", dst)
PY
	rm -f "$log.json"
	for ex in "$CARGO_TARGET_DIR/$profile/examples/"*; do
		name="$(basename "$ex")"
		case "$name" in *-*|*.d) continue ;; esac
		install_bin "$ex" "bin/$profile/$name"
	done
	install_bin "$CARGO_TARGET_DIR/$profile/http_server" "bin/$profile/http_server"
	install_bin "$CARGO_TARGET_DIR/$profile/hyper_server" "bin/$profile/hyper_server"
	ms=$((($(date +%s%N) - start) / 1000000))
	printf 'asyncbpf: conformance: %-7s in %d.%01d s -> tests/conformance/bin/%s/\n' \
		"$profile" $((ms / 1000)) $((ms % 1000 / 100)) "$profile"
done
