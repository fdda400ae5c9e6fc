# SPDX-License-Identifier: GPL-2.0
"""Calling conventions (issue 8): where self arrives and how Poll<T> comes back.

Two kinds of ground truth:
  - tests/abi_oracle.py reads each out-of-line poll fn's convention from objdump's
    text by tracing values backward (no code or method shared with the analyzer's
    forward dataflow): wherever it can tell, asyncbpf must say the same;
  - the `outputs` fixture (tests/fixtures/outputs) returns 24 shapes of output from
    async fns and hand-written futures and counts, itself, every poll and result:
    the tracer's Ready/Pending counts must equal them exactly, in debug and release.
"""
import json
import re
import subprocess
from collections import Counter, defaultdict

import pytest

import abi_oracle
import util

CRATES = util.CRATES + ["outputs"]


def analyze(tmp_path, binary):
    out = tmp_path / "model.json"
    util.run_asyncbpf("analyze", binary, "--json", out)
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def our_convention(p):
    if p["self_arg_reg"] is None:
        return "unknown"
    if p["return"] is not None and p["return"]["in_memory"] is not None:
        return "memory" if p["return"]["in_memory"] else "registers"
    return "memory" if p["self_arg_reg"] == "rsi" else "registers"


@pytest.mark.parametrize("profile", util.PROFILES)
def test_conventions_agree_with_an_independent_reading(profile, tmp_path):
    decided = total = 0
    disagree = []
    for crate in CRATES:
        binary = util.fixture_binary(profile, crate)
        util.require_file(binary, "the fixture", "run 'make fixtures'")
        m = analyze(tmp_path, binary)
        for p in m["polls"]:
            if p["inlined_only"] or not p["size"] or p["disasm_error"]:
                continue
            f = m["futures"][p["future"]] if p["future"] is not None else None
            st = f["state"] if f else None
            v = abi_oracle.read(str(binary), p["addr"], p["size"], st and st["offset"], st and st["size"])
            total += 1
            decided += v.ret != "unknown" or v.self_reg is not None
            ours = our_convention(p)
            if v.ret != "unknown" and v.ret != ours:
                disagree.append(f"{crate}: {p['name']}: returns in {v.ret} {v.votes}, asyncbpf: {ours}")
            if v.self_reg and v.self_reg != p["self_arg_reg"]:
                disagree.append(f"{crate}: {p['name']}: self in {v.self_reg} {v.votes}, "
                                f"asyncbpf: {p['self_arg_reg']}")
    assert not disagree, "\n".join(disagree)
    # the oracle must not be vacuous: it decides most functions of these programs
    assert total > 100 and decided >= total // 2, (decided, total)


@pytest.mark.parametrize("profile", util.PROFILES)
def test_every_fixture_poll_has_a_known_convention(profile, tmp_path):
    unknown = {}
    for crate in CRATES:
        m = analyze(tmp_path, util.fixture_binary(profile, crate))
        if m["stats"]["abi_unknown"]:
            unknown[crate] = [p["name"] for p in m["polls"] if p["abi"]["source"] == "unknown"]
    assert not unknown, unknown


@pytest.mark.parametrize("profile", util.PROFILES)
def test_output_shapes_are_all_decoded(profile, tmp_path):
    """Every async fn and hand-written future of the fixture's source is in the
    model with an out-of-line poll fn whose convention is known (release builds
    may fold identical code: then the future names the poll fn it shares)."""
    source = (util.FIXTURES / "outputs" / "src" / "main.rs").read_text()
    hand = re.findall(r"^handwritten!\((\w+),", source, re.M)
    fns = re.findall(r"^async_fn!\((\w+),", source, re.M)
    assert len(hand) == len(fns) >= 20
    m = analyze(tmp_path, util.fixture_binary(profile, "outputs"))
    by_name = {f["name"]: f for f in m["futures"]}
    for name in [f"outputs::{h}" for h in hand] + [f"outputs::{a}" for a in fns]:
        f = by_name.get(name)
        assert f is not None, f"{name} not in the model"
        assert f["poll"] is not None, f"{name} has no out-of-line poll fn"
        p = m["polls"][f["poll"]]
        assert p["abi"]["source"] != "unknown", (name, p["abi"])


def traced_counts(records, model):
    counts = defaultdict(Counter)
    for line in records.read_text().splitlines():
        r = json.loads(line)
        f = model["futures"][r["future"]]
        counts[f["name"].split("::")[-1]][r["result"]] += 1
        counts[f["name"].split("::")[-1]]["polls"] += 1
    return counts


@pytest.mark.parametrize("profile", util.PROFILES)
def test_traced_results_equal_the_fixture_counts(profile, tmp_path):
    util.require_trace_features()
    binary = util.fixture_binary(profile, "outputs")
    plain = subprocess.run([str(binary), "2"], capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0, plain.stderr
    records = tmp_path / "records.jsonl"
    summary = tmp_path / "summary.json"
    proc = util.run_asyncbpf("trace", "--deep", "--records", records, "--summary-json", summary, "-o",
                             tmp_path / "t.pftrace", "--", binary, "2")
    assert proc.returncode == 0, util.describe(proc)
    assert proc.stdout == plain.stdout  # the program's own output, untouched
    truth = json.loads(plain.stdout.strip().splitlines()[-1])["futures"]
    m = analyze(tmp_path, binary)
    got = traced_counts(records, m)
    # futures whose poll code the compiler folded into another's are counted there
    owner = {}
    for f in m["futures"]:
        if f["folded_into"] is not None:
            owner[f["name"].split("::")[-1]] = m["futures"][f["folded_into"]]["name"].split("::")[-1]
    expected = defaultdict(Counter)
    for name, t in truth.items():
        key = owner.get(name, name)
        expected[key]["polls"] += t["polls"]
        expected[key][0] += t["ready"]  # enum poll_result: 0 ready, 1 pending, 3 unknown
        expected[key][1] += t["pending"]
    wrong = []
    for name, e in sorted(expected.items()):
        g = got.get(name, Counter())
        if (g["polls"], g[0], g[1], g[3]) != (e["polls"], e[0], e[1], 0):
            wrong.append(f"{name}: traced polls {g['polls']} ready {g[0]} pending {g[1]} unknown {g[3]}; "
                         f"the fixture counted polls {e['polls']} ready {e[0]} pending {e[1]}")
    assert not wrong, "\n".join(wrong)
    # the Perfetto trace holds the same results, read back independently
    import perfetto_reader
    t = perfetto_reader.read(tmp_path / "t.pftrace")
    threads = t.thread_tracks()
    in_file = defaultdict(Counter)
    for sl in t.slices:
        if sl.track in threads and not util.is_block_slice_name(sl.name):
            in_file[sl.name.split("::")[-1]][sl.args["result"]] += 1
    for name, e in expected.items():
        f = in_file.get(name, Counter())
        assert (f["ready"], f["pending"], sum(f.values())) == (e[0], e[1], e["polls"]), (name, f, e)
    with open(summary, encoding="utf-8") as f:
        s = json.load(f)
    assert s["totals"]["unknown_results"] == 0
    assert s["totals"]["dropped"] == 0
    for name, key in owner.items():
        row = next(r for r in s["futures"] if r["name"].endswith("::" + key))
        assert any(n.endswith("::" + name) for n in row["folded"]), row
        assert "folded the identical poll code" in proc.stderr
    # Diverge's poll has no ret (it always panics): skipped, and said why
    diverge = [p for p in m["polls"] if p["name"] == "<outputs::Diverge as core::future::future::Future>::poll"]
    assert len(diverge) == 1 and diverge[0]["exits"] == [], diverge
    assert re.search(r"<outputs::Diverge as core::future::future::Future>::poll \(file offset 0x[0-9a-f]+\): "
                     r"never returns \(no ret", proc.stderr), proc.stderr
