# SPDX-License-Identifier: GPL-2.0
"""Cancellation (docs/tracing.md, "Cancellation"): a future dropped while suspended
at an await is cancelled there. `CRATE cancel N` cancels N `slow_op`s with the
runtime's timeout and N `select_loser`s with a select, each at its one marked await,
and counts them itself; `handwritten cancel` cancels `stalled` (a race's loser) and
`abandoned_task` (dropped by its executor) and lists them. The summary must count
exactly those, at the marked lines; "pending at the end" must not list them; the
Perfetto and Chrome traces carry one instant per cancellation."""
import json

import pytest

import util

N = 5
RUNTIMES = ["tokio_mt", "async_std_app", "smol_app"]


@pytest.fixture(scope="module")
def features():
    return util.require_trace_features()


def entries(summary, crate):
    return {f["name"][len(crate) + 2:]: f for f in summary["futures"] if f["name"].startswith(f"{crate}::")}


def marker(crate, caller):
    marks = util.fixture_source(crate).markers_of(caller)
    assert len(marks) == 1, (caller, marks)
    return marks[0].line


@pytest.mark.parametrize("crate", RUNTIMES)
def test_cancelled_at_the_marked_await(tmp_path, features, crate):
    proc, paths = util.run_traced(tmp_path, util.fixture_binary("debug", crate), "cancel", str(N))
    assert proc.returncode == 0, util.describe(proc)
    truth = util.ground_truth(proc.stdout)
    assert truth["timeouts"] == N and truth["select_losers"] == N, truth
    summary = util.load_summary(paths)
    assert summary["cancellation"]["watched"], summary["cancellation"]
    by = entries(summary, crate)
    for name, count in (("slow_op", truth["timeouts"]), ("select_loser", truth["select_losers"])):
        c = by[name]["cancel"]
        assert c["cancelled"] == count and c["drops"] == count, (name, c)
        assert [(a["line"], a["count"]) for a in c["at"]] == [(marker(crate, name), count)], (name, c)
        assert c["at"][0]["file"].endswith("src/main.rs"), c
    # the winners finish: dropped, never cancelled
    assert by["fast_op"]["cancel"]["cancelled"] == 0, by["fast_op"]["cancel"]
    # cancelled futures are gone, not pending
    pending = {g["name"] for g in summary["pending_at_end"]["groups"]}
    assert not pending & {f"{crate}::slow_op", f"{crate}::select_loser"}, pending
    # one instant per cancellation, named after the line
    trace = util.check_pftrace(paths["pftrace"], summary["totals"]["records"])
    instants = [name for (_, _, name, _) in trace.instants if name.startswith("cancelled at ")]
    assert len(instants) == 2 * N, instants
    for n in ("slow_op", "select_loser"):
        at = f"src/main.rs:{marker(crate, n)}"
        assert sum(i.endswith(at) for i in instants) == N, (n, instants)
    with open(paths["chrome"], encoding="utf-8") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "cancel"]
    assert len(events) == 2 * N and all(e["ph"] == "i" for e in events), events
    for n in ("slow_op", "select_loser"):
        at = f"src/main.rs:{marker(crate, n)}"
        assert sum(e["name"].endswith(at) for e in events) == N, (n, events)


def test_handwritten_cancellations(tmp_path, features):
    proc, paths = util.run_traced(tmp_path, util.fixture_binary("debug", "handwritten"), "cancel")
    assert proc.returncode == 0, util.describe(proc)
    truth = util.ground_truth(proc.stdout)
    summary = util.load_summary(paths)
    by = entries(summary, "handwritten")
    cancelled = {name for name, e in by.items() if e["cancel"]["cancelled"]}
    # the fixture's own list of cancelled async fns, and the hand-written futures they
    # were awaiting (their last poll Pending), nothing else
    assert {c["name"] for c in truth["cancelled"]} <= cancelled, (truth, cancelled)
    assert cancelled - {c["name"] for c in truth["cancelled"]} <= {"YieldNow", "CountDown"}, cancelled
    for c in truth["cancelled"]:
        at = by[c["name"]]["cancel"]["at"]
        assert [a["line"] for a in at] == [marker("handwritten", c["name"])], (c, at)
    assert summary["pending_at_end"]["pending"] == 0, summary["pending_at_end"]


def test_no_cancel_switch(tmp_path, features):
    """--no-cancel: no drop probes; the cancelled futures then look pending at the end
    (why the probes matter)."""
    proc, paths = util.run_traced(tmp_path, util.fixture_binary("debug", "tokio_mt"), "cancel", str(N),
                                  extra=("--no-cancel",))
    assert proc.returncode == 0, util.describe(proc)
    summary = util.load_summary(paths)
    assert not summary["cancellation"]["watched"] and summary["cancellation"]["drops"] == 0
    assert "cancellations: not watched (--no-cancel)" in proc.stderr + proc.stdout
    pending = {g["name"]: g["count"] for g in summary["pending_at_end"]["groups"]}
    by = entries(summary, "tokio_mt")
    # each new instance reuses the last one's memory: the older ones are counted
    # abandoned (found Unresumed again), the last one is listed as pending
    for name in ("slow_op", "select_loser"):
        assert pending.get(f"tokio_mt::{name}", 0) + by[name]["abandoned"] == N, (name, pending, by[name])
        assert pending.get(f"tokio_mt::{name}", 0) >= 1, pending
