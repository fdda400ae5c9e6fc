# SPDX-License-Identifier: GPL-2.0
"""asyncbpf top --locks (docs/top.md, "Locks"): task mode's trees read at the end of
each task poll, their locks followed over time, a second table per interval: the
tasks waiting for each lock now and the longest of those waits, the waits and holds
that ended in the interval, and the holder now with the guard and the await it is
kept across. Ground truth: `CRATE park` ends with dead_a and dead_b each holding one
Mutex (dead_a its g1, dead_b its g2, kept across their second `lock().await`, marked
`// AWAIT`) and waiting for the other's, for good; `tokio_mt contend 8 N` has 8 tasks
take one tokio Mutex in turn, each holding it across a 1 ms sleep."""
import json
import queue
import re
import subprocess
import threading
import time

import pytest

import util

HEAD = "WAITING  LONGEST_MS"
ROW = re.compile(r"^\s*(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+|-)\s+([\d.]+)\s+(.+? at 0x[0-9a-f]+)\s*$")
HELD = re.compile(r"^\s+held ([\d.]+) ms by (\S+) \(its (\w+), kept across (\S+):(\d+)\)\s*$")


@pytest.fixture(scope="module")
def features():
    return util.require_trace_features()


def lock_tables(text):
    """Every locks table: a list of rows (dicts), each with the line under it."""
    out = []
    for chunk in text.split(HEAD)[1:]:
        lines, rows = chunk.splitlines()[1:], []
        for k, line in enumerate(lines):
            if line.startswith("asyncbpf top: "):
                break
            m = ROW.match(line)
            if m:
                under = lines[k + 1] if k + 1 < len(lines) else ""
                h = HELD.match(under)
                rows.append({"waiting": int(m.group(1)), "longest_ms": float(m.group(2)),
                             "waits_s": float(m.group(3)),
                             "avg_wait_ms": None if m.group(4) == "-" else float(m.group(4)),
                             "holds_s": float(m.group(5)), "lock": m.group(6), "under": under.strip(),
                             "held": h and {"ms": float(h.group(1)), "by": h.group(2), "guard": h.group(3),
                                            "file": h.group(4), "line": int(h.group(5))}})
        out.append(rows)
    return out


def watch_parked(tmp_path, argv, mode):
    """top --locks --batch -i 0.3 on a launched fixture that parks its tasks for good
    and prints its JSON line (mode): that line (parsed) and the text of the three
    whole tables after it. The fixture exits at EOF on stdin, and top with it."""
    err_path = tmp_path / "top.err"
    with open(err_path, "w") as err_file:
        proc = subprocess.Popen([str(util.ASYNCBPF), "top", "--locks", "--batch", "-i", "0.3", "--"] +
                                [str(a) for a in argv],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err_file, text=True,
                                env=util.san_env())
    lines = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(x) for x in iter(proc.stdout.readline, "")] + [lines.put(None)],
                              daemon=True)
    reader.start()
    out, raw, after = [], None, 0
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.time()))
            except queue.Empty:
                break
            if line is None:
                break
            out.append(line)
            if line.startswith('{"mode":"%s"' % mode):
                raw = line
            elif raw and line.startswith("asyncbpf top: "):
                after += 1
                if after == 4:  # three whole tables after the line
                    break
        proc.stdin.close()  # EOF: the fixture exits, and top with it
        proc.wait(timeout=60)
        reader.join(timeout=10)
    finally:
        proc.kill()
    while not lines.empty():
        line = lines.get()
        out.append(line or "")
    text, err = "".join(out), err_path.read_text()
    util.assert_no_sanitizer_report(subprocess.CompletedProcess(proc.args, proc.returncode, text, err))
    assert proc.returncode == 0, (text, err)
    assert raw, (text, err)
    return json.loads(raw), text.split(raw)[1]


@pytest.mark.parametrize("profile", ["debug", "release"])
@pytest.mark.parametrize("crate", ["tokio_mt", "tokio_ct", "async_std_app", "smol_app"])
def test_deadlocked_pair(features, tmp_path, crate, profile):
    """Once parked (the fixture's line), every table shows the two Mutexes, each with one
    task waiting since then and held by the other task's guard at its second lock
    await; no wait or hold ends."""
    _, after = watch_parked(tmp_path, [util.fixture_binary(profile, crate), "park", "2"], "park")
    mutex = "tokio::sync::mutex::Mutex<u64>" if crate.startswith("tokio") else "async_lock::mutex::Mutex<u64>"
    src = util.fixture_source(crate)
    second = {who: [m.line for m in src.markers_of(who) if "lock" in m.callees][1] for who in ("dead_a", "dead_b")}
    tables = lock_tables(after)
    assert len(tables) >= 3, after
    for rows in tables[:3]:
        mine = [r for r in rows if r["lock"].startswith(mutex + " at ")]
        assert len(mine) == 2 and mine[0]["lock"] != mine[1]["lock"], rows
        holders = {}
        for r in mine:
            assert r["waiting"] == 1 and r["longest_ms"] > 0, r
            assert r["waits_s"] == 0 and r["holds_s"] == 0 and r["avg_wait_ms"] is None, r
            h = r["held"]
            assert h, r
            # (from the start of the poll at whose end it was first seen held: no
            # later than the hold began, so not always before the other's wait)
            assert h["ms"] > 0, r
            holders[h["by"]] = h
        assert set(holders) == {f"{crate}::dead_a", f"{crate}::dead_b"}, holders
        for who, guard in (("dead_a", "g1"), ("dead_b", "g2")):
            h = holders[f"{crate}::{who}"]
            assert h["guard"] == guard and h["line"] == second[who] and h["file"] == "src/main.rs", (who, h)


@pytest.mark.parametrize("profile", ["debug", "release"])
def test_futures_util_mutex(features, tmp_path, profile):
    """`tokio_ct futlocks`: futures-util's Mutex. Its three locks at the fixture's own
    addresses: m1 and m2 each waited for by one of fut_a/fut_b and held by the other
    (its g, kept across its last lock await), `held` by fut_hold at its pending()
    with fut_wait waiting."""
    truth, after = watch_parked(tmp_path, [util.fixture_binary(profile, "tokio_ct"), "futlocks"], "futlocks")
    src = util.fixture_source("tokio_ct")
    last = {who: [m.line for m in src.markers_of(who) if "MutexLockFuture" in m.callees][-1] for who in ("fut_a", "fut_b")}
    pending = [m.line for m in src.markers_of("fut_hold") if "Pending" in m.callees][0]
    want = {"m1": ("fut_a", last["fut_a"]), "m2": ("fut_b", last["fut_b"]), "held": ("fut_hold", pending)}
    tables = lock_tables(after)
    assert len(tables) >= 3, after
    for rows in tables[:3]:
        by_lock = {r["lock"]: r for r in rows}
        for name, (holder, line) in want.items():
            r = by_lock.get(f"futures_util::lock::mutex::Mutex<u64> at {truth[name]}")
            assert r and r["waiting"] == 1 and r["longest_ms"] > 0 and r["held"], (name, rows)
            h = r["held"]
            assert h["by"] == f"tokio_ct::{holder}" and h["guard"] == "g" and h["line"] == line, (name, h)


@pytest.mark.parametrize("profile", ["debug", "release"])
def test_contended_mutex(features, profile):
    """-p on `tokio_mt contend 8 N`: one lock; of its 8 tasks one holds it (its g, kept
    across the sleep) and at most the other 7 wait; each hold lasts at least the 1 ms
    sleep, so at most ~1,000 end a second; and by Little's law the waits' average is
    the tasks waiting over the waits ending a second."""
    target = subprocess.Popen([str(util.fixture_binary(profile, "tokio_mt")), "contend", "8", "10000"],
                              stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        proc = util.run_asyncbpf("top", "--locks", "--batch", "-n", "4", "-i", "0.5", "-p", target.pid,
                                 timeout=120)
        assert target.poll() is None  # it ran all along
    finally:
        target.kill()
        target.wait()
    assert proc.returncode == 0, util.describe(proc)
    src = util.fixture_source("tokio_mt")
    sleep = [m.line for m in src.markers_of("contend_task") if "Sleep" in m.callees]
    tables = lock_tables(proc.stdout)
    assert len(tables) == 4, proc.stdout
    for rows in tables[1:]:  # the first interval began at the attach
        assert len(rows) == 1 and rows[0]["lock"].startswith("tokio::sync::mutex::Mutex<u64> at "), rows
        r = rows[0]
        assert 1 <= r["waiting"] <= 7 and 0 < r["holds_s"] <= 1100 and r["waits_s"] > 0, r
        assert r["waits_s"] <= 1.2 * r["holds_s"] + 5, r  # a lock() waits at most once per hold
        little = 1000 * r["waiting"] / r["waits_s"]
        assert 0.4 * little <= r["avg_wait_ms"] <= 2.5 * little, (r, little)
        h = r["held"]
        if h:  # or between two holds at the table's instant
            assert h["by"] == "tokio_mt::contend_task" and h["guard"] == "g" and h["line"] in sleep, h
    assert sum(1 for rows in tables[1:] if rows[0]["held"]) >= 2, proc.stdout


def test_usage(features):
    for args, status in ((["--locks", "--deep"], util.EXIT_USAGE), (["--locks", "-q", "--prometheus", "0"],
                                                                  util.EXIT_USAGE)):
        proc = util.run_asyncbpf("top", "-p", "1", *args)
        assert proc.returncode == status, util.describe(proc)
    # a pattern selects per-future rows: no trees, so no locks; said before anything runs
    for sel in (["tokio_mt::*"], ["--all-crates"]):
        proc = util.run_asyncbpf("top", "--locks", "--batch", "-n", "1", *sel, "--",
                                 util.fixture_binary("debug", "tokio_mt"), "pingpong", "10")
        assert proc.returncode == util.EXIT_USAGE, util.describe(proc)
        assert "--locks" in proc.stderr and "--tasks" in proc.stderr, proc.stderr
