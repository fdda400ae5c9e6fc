# SPDX-License-Identifier: GPL-2.0
"""File offsets of a non-PIE (ET_EXEC) binary: the fixtures are all PIE, so this
builds the dependency-free `handwritten` fixture with rustc directly, statically
relocated, and checks every poll's file offset and first bytes independently
(readelf PT_LOAD arithmetic, the file's own bytes against objdump)."""
import json
import shutil
import subprocess
from pathlib import Path

import pytest

import util

SOURCE = Path(__file__).resolve().parent / "fixtures" / "handwritten" / "src" / "main.rs"


def find_rustc():
    for c in (shutil.which("rustc"), str(Path.home() / ".cargo" / "bin" / "rustc"), "/usr/bin/rustc"):
        if c and Path(c).exists():
            v = subprocess.run([c, "--version"], capture_output=True, text=True).stdout.split()
            if len(v) > 1 and tuple(int(x) for x in v[1].split("-")[0].split(".")[:2]) >= (1, 85):
                return c
    return None


@pytest.fixture(scope="module")
def nonpie(tmp_path_factory):
    rustc = find_rustc()
    if not rustc:
        pytest.fail("no rustc >= 1.85 (make deps installs one)")
    out = tmp_path_factory.mktemp("nonpie") / "handwritten-nopie"
    subprocess.run([rustc, "--edition", "2021", "-g", "-C", "opt-level=0", "-C", "relocation-model=static",
                    "-C", "link-arg=-no-pie", "-o", str(out), str(SOURCE)], check=True, capture_output=True)
    return out


def test_nonpie_binary_is_et_exec(nonpie):
    assert "EXEC" in util.tool("readelf", "-hW", nonpie), "rustc did not produce an ET_EXEC binary"


def test_nonpie_file_offsets(nonpie, tmp_path):
    js = tmp_path / "m.json"
    proc = util.run_asyncbpf("analyze", "-q", nonpie, "--json", js)
    assert proc.returncode == 0, util.describe(proc)
    doc = json.loads(js.read_text())
    assert doc["binary"]["pie"] is False
    polls = [p for p in doc["polls"] if not p["inlined_only"]]
    assert polls, "no out-of-line polls in an opt-level 0 build"
    data = Path(nonpie).read_bytes()
    for p in polls:
        want = util.file_offset_of(str(nonpie), p["addr"])
        assert want is not None and p["file_offset"] == want, (p["name"], hex(p["addr"]), p["file_offset"], want)
        insns = util.disassemble(str(nonpie), p["addr"], p["addr"] + min(p["size"], 16))
        assert insns, p["name"]
        first = insns[0]
        assert first.addr == p["addr"]
        assert first.raw and data[want:want + len(first.raw)] == first.raw, p["name"]
