# SPDX-License-Identifier: GPL-2.0
"""Wake-ups (docs/tracing.md, "Wake-ups"): `CRATE pingpong N` passes N messages from
`producer_task` to `consumer_task` over a bounded(1) channel of the runtime, so each
wakes the other through the runtime's waker. Every wake of one of them must be
linked to the woken task's next poll with the other as its waker, on tokio, async-std
and smol (async-task tasks are reached through the runtime's wrappers); the
scheduling delays must be consistent; Chrome and Perfetto carry one arrow per linked
wake."""
import json

import pytest

import util

N = 2000
RUNTIMES = ["tokio_mt", "async_std_app", "smol_app"]


@pytest.fixture(scope="module")
def features():
    return util.require_trace_features()


@pytest.mark.parametrize("crate", RUNTIMES)
def test_producer_and_consumer_wake_each_other(tmp_path, features, crate):
    proc, paths = util.run_traced(tmp_path, util.fixture_binary("debug", crate), "pingpong", str(N))
    assert proc.returncode == 0, util.describe(proc)
    truth = util.ground_truth(proc.stdout)
    assert truth["received"] == N, truth
    summary = util.load_summary(paths)
    wk = summary["wakeups"]
    assert wk["watched"] and wk["records"] > 0, wk
    # every wake of a task the model knows; at most the last ones find no poll after
    assert wk["unknown_task"] == 0 and wk["unmatched"] <= 2, wk
    by = {f["name"]: f for f in summary["futures"]}
    linked = 0
    for me, other in (("consumer_task", "producer_task"), ("producer_task", "consumer_task")):
        e = by[f"{crate}::{me}"]
        w = e["wakes"]
        # each poll but the first follows a wake: by the other task (a message, or room
        # for one), or by itself (a runtime's cooperative budget: tokio's recv yields)
        assert w["wakes"] >= 0.9 * (e["polls"] - 1) and w["wakes"] <= e["polls"] - 1, (me, w, e["polls"])
        wakers = {x["name"]: x["count"] for x in w["wakers"]}
        assert set(wakers) <= {f"{crate}::{other}", f"{crate}::{me}"}, w
        assert wakers.get(f"{crate}::{me}", 0) == w["self_wakes"], w
        assert wakers[f"{crate}::{other}"] >= 0.9 * w["wakes"], w
        assert w["delays"] == w["wakes"] - w["self_wakes"], w
        assert 0 < w["delay_p50_ns"] <= w["delay_p99_ns"] <= w["delay_max_ns"], w
        linked += w["wakes"]
    # arrows: a flow start at each linked wake, its end on the woken task's poll
    with open(paths["chrome"], encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    starts = [e for e in events if e.get("cat") == "wake" and e["ph"] == "s"]
    ends = [e for e in events if e.get("cat") == "wake" and e["ph"] == "f"]
    total = sum(f["wakes"]["wakes"] for f in summary["futures"])
    assert len(starts) == len(ends) == total >= linked, (len(starts), len(ends), total)
    assert {e["id"] for e in starts} == {e["id"] for e in ends}
    trace = util.check_pftrace(paths["pftrace"], summary["totals"]["records"])
    assert sum(name == "woke a task" for (_, _, name, _) in trace.instants) == total


def test_no_wakes_switch(tmp_path, features):
    proc, paths = util.run_traced(tmp_path, util.fixture_binary("debug", "tokio_mt"), "pingpong", "100",
                                  extra=("--no-wakes",))
    assert proc.returncode == 0, util.describe(proc)
    summary = util.load_summary(paths)
    assert not summary["wakeups"]["watched"] and summary["wakeups"]["records"] == 0
    assert "wake-ups: not watched" in proc.stderr + proc.stdout
    assert all(f["wakes"]["wakes"] == 0 for f in summary["futures"])


def test_hand_written_executor_std_wake(tmp_path, features):
    """The hand-written executor wakes its tasks through std's `Wake` (an Arc<W>):
    no task header, so each wake is matched to the next task poll whose Context
    carries a waker of the same data. Every task's polls but the first follow a wake,
    all by the task itself (YieldNow and CountDown wake their task while it polls)."""
    proc, paths = util.run_traced(tmp_path, util.fixture_binary("debug", "handwritten"))
    assert proc.returncode == 0, util.describe(proc)
    truth = util.ground_truth(proc.stdout)
    summary = util.load_summary(paths)
    assert summary["wakeups"]["watched"] and summary["wakeups"]["unmatched"] == 0, summary["wakeups"]
    by = {f["name"]: f for f in summary["futures"]}
    for task in truth["executor"]["tasks"]:
        w = by[f"handwritten::{task['name']}"]["wakes"]
        assert w["wakes"] == task["root_polls"] - 1 == w["self_wakes"], (task, w)
        assert all(x["name"].startswith("handwritten::") for x in w["wakers"]), w
