# SPDX-License-Identifier: GPL-2.0
"""Tier 1: the C unit tests (tests/unit/test_*.c), built with ASan+UBSan by `make san`
into .output/san/tests/. Each binary must exit 0 without a sanitizer report."""
import os
import subprocess

import pytest

import util


def unit_binaries():
    """One test per tests/unit/test_*.c; the binary comes from `make san`."""
    sources = sorted((util.REPO / "tests" / "unit").glob("test_*.c"))
    built = sorted(util.UNIT_TEST_DIR.glob("test_*")) if util.UNIT_TEST_DIR.is_dir() else []
    names = {s.stem for s in sources} | {b.name for b in built if os.access(b, os.X_OK) and b.is_file()}
    return sorted(names)


@pytest.mark.parametrize("name", unit_binaries() or ["(no unit tests found)"])
def test_unit_binary(name):
    binary = util.UNIT_TEST_DIR / name
    util.require_file(binary, "the unit test binary", "run 'make san' (it builds .output/san/tests/)")
    proc = subprocess.run([str(binary)], capture_output=True, text=True, errors="replace", timeout=300,
                          cwd=util.REPO, env=util.san_env())
    util.assert_no_sanitizer_report(proc)
    assert proc.returncode == 0, f"unit test {name} failed:\n{util.describe(proc)}"
