# SPDX-License-Identifier: GPL-2.0
"""Locks over time in task mode (docs/tracing.md, "Locks"): the lock a task waits for
and the locks its guards keep across awaits, read with each task's tree at the end
of its polls. Ground truth: `tokio_mt contend` takes one tokio Mutex TASKS x ROUNDS
times, each time holding it across a sleep, and counts itself the lock() calls that
had to wait (`CountParks`: the first Pending of each call); it prints the lock's
address. `CRATE park`'s dead_a/dead_b end holding one Mutex each, each waiting for the
other's."""
import json
import subprocess

import pytest

import util

pytestmark = pytest.mark.usefixtures("trace_features")


@pytest.fixture(scope="module")
def trace_features():
    util.require_trace_features()


LOCK = {k: (util.INT,) for k in ("key", "waits", "wait_ns", "wait_max_ns", "waiting_at_end", "open_wait_ns", "holds",
                                 "hold_max_ns", "open_hold_ns", "conflicts")}
LOCK.update({"type": (util.STR, util.NULL), "addr": (util.INT, util.NULL), "family": (util.STR,),
             "held_at_end": (util.BOOL,)})


def trace(tmp_path, argv, stdin=None):
    summary = tmp_path / "s.json"
    cmd = [str(util.ASYNCBPF), "trace", "--tasks", "-o", str(tmp_path / "t.pftrace"), "--summary-json",
           str(summary), "--"] + [str(a) for a in argv]
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=300, env=util.san_env())
    util.assert_no_sanitizer_report(proc)
    assert proc.returncode == 0, util.describe(proc)
    doc = util.load_json(summary)
    tm = doc["task_mode"]
    assert tm["lost"] == 0 and tm["cut"] == 0 and tm["not_read"] == 0, tm
    errors = []
    for lock in tm["locks"]:
        util.check_shape(lock, LOCK, "task_mode.locks[]", errors)
    assert not errors, errors
    return proc, tm


@pytest.mark.parametrize("profile", ["debug", "release"])
def test_contended_mutex(tmp_path, profile):
    proc, tm = trace(tmp_path, [util.fixture_binary(profile, "tokio_mt"), "contend"])
    truth = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith('{"mode":"contend"')))
    src = util.fixture_source("tokio_mt")
    assert len(tm["locks"]) == 1, tm["locks"]
    lock = tm["locks"][0]
    assert lock["addr"] == int(truth["lock"], 16) and lock["type"] == "tokio::sync::mutex::Mutex<u64>", lock
    assert lock["family"] == "tokio" and lock["conflicts"] == 0, lock
    # every acquisition held it across its sleep; every lock() that waited, a wait
    assert lock["holds"] == truth["acquisitions"], (lock, truth)
    assert lock["waits"] == truth["waits"], (lock, truth)
    assert lock["waiting_at_end"] == 0 and not lock["held_at_end"], lock
    assert 0 < lock["hold_max_ns"] and 0 < lock["wait_max_ns"] <= lock["wait_ns"], lock
    sleep = [m.line for m in src.markers_of("contend_task") if "Sleep" in m.callees]
    hold = lock["longest_hold"]
    assert hold["guard"] == "g" and hold["line"] == sleep[0] and hold["file"].endswith("tokio_mt/src/main.rs"), hold
    assert hold["by"].startswith("tokio_mt::contend_task"), hold
    text = proc.stdout + proc.stderr
    assert f"tokio::sync::mutex::Mutex<u64> at {truth['lock']}" in text, text


@pytest.mark.parametrize("profile", ["debug", "release"])
@pytest.mark.parametrize("crate", ["tokio_mt", "tokio_ct", "async_std_app", "smol_app"])
def test_deadlock_still_standing_at_the_end(tmp_path, crate, profile):
    """dead_a and dead_b each hold one Mutex and wait for the other's until the end:
    tokio's (its semaphore), async-lock's (async-std's, smol's)."""
    _, tm = trace(tmp_path, [util.fixture_binary(profile, crate), "park", "2"], stdin="")
    mutex = "tokio::sync::mutex::Mutex<u64>" if crate.startswith("tokio") else "async_lock::mutex::Mutex<u64>"
    locks = [x for x in tm["locks"] if x["type"] == mutex]
    assert len(locks) == 2, tm["locks"]
    for x in locks:
        assert x["held_at_end"] and x["waiting_at_end"] == 1 and x["holds"] == 0 and x["waits"] == 0, x
        # the hold counts from the start of the poll at whose end it is first seen held:
        # mostly before the other's wait began, but on async-std twice in ~6 clean-clone
        # CI runs 0.07 ms after it (first seen one poll late, docs/tracing.md): within 1 ms
        assert x["open_wait_ns"] > 0 and x["open_hold_ns"] >= x["open_wait_ns"] - 1_000_000, x
