# SPDX-License-Identifier: GPL-2.0
"""Blocking inside polls (docs/tracing.md, "Blocking"): `CRATE blocking MS` runs,
side by side, a future that blocks its executor thread in std::thread::sleep, one
that blocks in a pipe read, and one that awaits the runtime's timer as long; it
measures each itself. The summary's blocked time by syscall must be within 10% of
those measurements, the awaiting one about nothing; the BLOCKING warnings, the
nested Perfetto and Chrome slices and the folded [blocked:SYSCALL] leaves must say
the same. tokio multi-thread (debug and release), async-std and smol (debug: their
release builds inline every poll of the fixture into the runtime)."""
import json

import pytest

import util

MS = 200
CASES = [("tokio_mt", "debug"), ("tokio_mt", "release"), ("async_std_app", "debug"),
         ("smol_app", "debug")]


@pytest.fixture(scope="module")
def features():
    return util.require_trace_features(extra=("tp_btf",))


def by_syscall(summary, crate, needle):
    """{syscall: ns} over the crate's futures whose name contains needle."""
    out = {}
    for f in summary["futures"]:
        if f["name"].startswith(f"{crate}::") and needle in f["name"]:
            for s in f["blocking"]["by_syscall"]:
                out[s["syscall"]] = out.get(s["syscall"], 0) + s["ns"]
    return out


def near(measured_ns, truth_us, tolerance=0.10):
    return abs(measured_ns - truth_us * 1000) <= tolerance * truth_us * 1000


@pytest.mark.parametrize("crate,profile", CASES)
def test_blocked_time_by_syscall(tmp_path, features, crate, profile):
    folded = tmp_path / "run.folded"
    proc, paths = util.run_traced(tmp_path, util.fixture_binary(profile, crate), "blocking", str(MS),
                                  extra=("--folded", folded))
    assert proc.returncode == 0, util.describe(proc)
    truth = util.ground_truth(proc.stdout)
    summary = util.load_summary(paths)
    assert summary["blocking"]["watched"], summary["blocking"]
    sleepy = by_syscall(summary, crate, "sleepy_")
    reader = by_syscall(summary, crate, "reader_")
    awaiter = by_syscall(summary, crate, "awaiter_")
    assert near(sleepy.get("clock_nanosleep", 0), truth["sleepy_blocked_us"]), (sleepy, truth)
    assert near(reader.get("read", 0), truth["reader_blocked_us"]), (reader, truth)
    # the one that awaits as long never blocks its thread
    assert sum(awaiter.values()) < 0.02 * MS * 1e6, (awaiter, truth)
    assert truth["awaiter_waited_us"] >= MS * 1000 * 0.95, truth
    # BLOCKING warnings name them, with the syscall
    text = proc.stderr + proc.stdout
    for who, call in (("sleepy_", "clock_nanosleep"), ("reader_", "read")):
        lines = [ln for ln in text.splitlines() if ln.startswith(f"BLOCKING: {crate}::{who}")]
        assert len(lines) == 1 and f"({call}, thread " in lines[0], (who, text)
    assert not any(ln.startswith(f"BLOCKING: {crate}::awaiter_") for ln in text.splitlines()), text
    # Perfetto: every poll a slice, every off-CPU interval a slice nested in one
    totals = summary["totals"]
    trace = util.check_pftrace(paths["pftrace"], totals["records"], summary["blocking"]["records"])
    names = [s.name for s in trace.slices]
    assert "blocked in clock_nanosleep" in names and "blocked in read" in names, set(names)
    # Chrome: the same slices, with the syscall
    with open(paths["chrome"], encoding="utf-8") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "blocked"]
    sleeps = [e for e in events if e["name"] == "blocked in clock_nanosleep" and "sleepy_" in e["args"]["future"]]
    assert sleeps and near(sum(e["dur"] for e in sleeps) * 1000, truth["sleepy_blocked_us"]), sleeps
    # folded: the blocked time as a leaf under the future that blocked (µs)
    weights = {}
    for line in folded.read_text().splitlines():
        stack, w = line.rsplit(" ", 1)
        frames = stack.split(";")
        if frames[-1].startswith("[blocked:"):
            key = (frames[-1], any("sleepy_" in fr for fr in frames), any("reader_" in fr for fr in frames))
            weights[key] = weights.get(key, 0) + int(w)
    assert near(weights.get(("[blocked:clock_nanosleep]", True, False), 0) * 1000,
                truth["sleepy_blocked_us"]), weights
    assert near(weights.get(("[blocked:read]", False, True), 0) * 1000, truth["reader_blocked_us"]), weights


def test_no_blocking_switch(tmp_path, features):
    proc, paths = util.run_traced(tmp_path, util.fixture_binary("debug", "tokio_mt"), "blocking", "50",
                                  extra=("--no-blocking",))
    assert proc.returncode == 0, util.describe(proc)
    summary = util.load_summary(paths)
    assert not summary["blocking"]["watched"] and summary["blocking"]["records"] == 0, summary["blocking"]
    assert "blocking inside polls: off (--no-blocking)" in proc.stderr + proc.stdout
    assert all(f["blocking"]["blocked"] == 0 for f in summary["futures"])
    trace = util.check_pftrace(paths["pftrace"], summary["totals"]["records"], 0)
    assert not any(util.is_block_slice_name(s.name) for s in trace.slices)


def test_threshold(tmp_path, features):
    """--block-threshold: a block shorter than it is counted, not warned about."""
    proc, paths = util.run_traced(tmp_path, util.fixture_binary("debug", "tokio_mt"), "blocking", "50",
                                  extra=("--block-threshold", "0.5"))
    assert proc.returncode == 0, util.describe(proc)
    summary = util.load_summary(paths)
    assert summary["blocking"]["threshold_ns"] == 500_000_000
    assert "BLOCKING:" not in proc.stderr + proc.stdout
    sleepy = by_syscall(summary, "tokio_mt", "sleepy_")
    assert sleepy.get("clock_nanosleep", 0) > 40e6, sleepy


def test_check_lists_the_part(features):
    proc = util.run_asyncbpf("check", "--json")
    parts = {p["name"]: p for p in json.loads(proc.stdout)["parts"]}
    part = parts["trace: blocking inside polls"]
    assert part["needs"] == "tp_btf" and part["status"] == "ok", part


def test_blocked_when_tracing_stops(tmp_path, features):
    """`handwritten block 2500` under -d 1: sleepy_leaf's poll is still blocked in
    clock_nanosleep when tracing stops; that interval has no end, is not counted, and
    the summary says so."""
    proc, paths = util.run_traced(tmp_path, util.fixture_binary("debug", "handwritten"), "block", "2500",
                                  extra=("-d", "1"))
    assert proc.returncode == 0, util.describe(proc)
    summary = util.load_summary(paths)
    assert summary["blocking"]["blocked_at_stop"] == 1 and summary["blocking"]["records"] == 0, summary["blocking"]
    assert "off-CPU inside a poll when tracing stopped" in proc.stderr + proc.stdout
