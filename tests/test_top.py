# SPDX-License-Identifier: GPL-2.0
"""asyncbpf top (docs/top.md) against a running fixture: `tokio_mt pingpong N` keeps
producer_task and consumer_task waking each other. `top --batch` prints one table per
interval from the BPF statistics only (no records): both tasks with their poll and
wake rates (each poll of one follows a wake by the other), the scheduling delay,
sorted by the chosen key; the target runs on. Without patterns or --deep, top runs in
task mode: one row per task type (TASK, DONE/S), wakes sampled; LIVE counts tasks."""
import json
import re
import subprocess
import time

import pytest

import util

NUM = r"([\d.]+|-)"  # "-": not measured in that interval
ROW = re.compile(r"^\s*" + r"\s+".join([NUM] * 8) + r"\s+(\d+)\s+(.+?)\s*$")
COLS = ["polls_s", "busy", "p50", "p99", "blocked", "wakes_s", "delay99", "ends_s", "live"]


def value(v):
    return None if v == "-" else float(v)


@pytest.fixture(scope="module")
def features():
    return util.require_trace_features()


@pytest.fixture
def pingpong():
    proc = subprocess.Popen([str(util.fixture_binary("debug", "tokio_mt")), "pingpong", "100000000"],
                            stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    yield proc
    proc.kill()
    proc.wait()


def tables(text):
    out = []
    for chunk in text.split("asyncbpf top: ")[1:]:
        rows = {}
        for line in chunk.splitlines()[2:]:
            m = ROW.match(line)
            if m:
                rows[m.group(10)] = dict(zip(COLS, map(value, m.groups()[:9])))
        out.append((chunk.splitlines()[0], rows, [ROW.match(ln).group(10) for ln in chunk.splitlines()[2:] if ROW.match(ln)]))
    return out


def test_batch_tables(features, pingpong):
    """Per-future rows (--deep): every wake seen, so wakes/s track polls/s."""
    proc = util.run_asyncbpf("top", "-p", pingpong.pid, "--deep", "--batch", "-n", "3", "-i", "0.4",
                             timeout=120)
    assert proc.returncode == 0, util.describe(proc)
    assert "CANCEL/S" in proc.stdout and "FUTURE" in proc.stdout, proc.stdout
    t = tables(proc.stdout)
    assert len(t) == 3, proc.stdout
    for header, rows, order in t:
        assert "sorted by busy" in header, header
        for me in ("tokio_mt::consumer_task", "tokio_mt::producer_task"):
            r = rows[me]
            assert r["polls_s"] > 100 and r["wakes_s"] > 100, (me, r)
            # every poll of a task after the first follows a wake by the other
            assert abs(r["polls_s"] - r["wakes_s"]) <= 0.2 * r["polls_s"], (me, r)
            assert r["delay99"] > 0 and r["p50"] <= r["p99"], (me, r)
        busy = [rows[n]["busy"] for n in order]
        assert busy == sorted(busy, reverse=True), order
    assert pingpong.poll() is None  # it runs on


def test_task_mode_tables(features, pingpong):
    """The default: task mode, one row per task type. pingpong's two tasks each live
    (polled, Pending, not finished: 1 each), polled often; the wake probes attached
    part of each second, their wakes per poll scaled by all the polls: each poll of
    one follows a wake by the other, so wakes/s track polls/s in every table whose
    interval held a sample window, and the table says it was sampled."""
    proc = util.run_asyncbpf("top", "-p", pingpong.pid, "--batch", "-n", "3", "-i", "1", timeout=120)
    assert proc.returncode == 0, util.describe(proc)
    assert "top: task mode" in proc.stderr, proc.stderr
    assert "DONE/S" in proc.stdout and "TASK" in proc.stdout, proc.stdout
    t = tables(proc.stdout)
    assert len(t) == 3, proc.stdout
    sampled = 0
    for header, rows, order in t:
        for me in ("tokio_mt::consumer_task", "tokio_mt::producer_task"):
            r = rows[me]
            assert r["polls_s"] > 100 and r["live"] == 1 and r["ends_s"] == 0, (me, r)
            assert r["p50"] <= r["p99"], (me, r)
            if r["wakes_s"] is not None and r["wakes_s"] > 0:
                sampled += 1
                assert abs(r["polls_s"] - r["wakes_s"]) <= 0.25 * r["polls_s"], (me, r)
                assert r["delay99"] is not None and r["delay99"] > 0, (me, r)
        busy = [rows[n]["busy"] for n in order]
        assert busy == sorted(busy, reverse=True), order
    assert sampled >= 2, proc.stdout  # a 1 s interval holds ~0.1 s of windows
    assert proc.stdout.count("wakes sampled: probes attached") == 3, proc.stdout
    assert pingpong.poll() is None


def test_task_mode_all_wakes(features, pingpong):
    """--wake-sample 100: every wake seen, no sampling line; wakes/s track polls/s."""
    proc = util.run_asyncbpf("top", "-p", pingpong.pid, "--batch", "-n", "2", "-i", "0.4",
                             "--wake-sample", "100", timeout=120)
    assert proc.returncode == 0, util.describe(proc)
    assert "wakes sampled" not in proc.stdout, proc.stdout
    for header, rows, order in tables(proc.stdout):
        for me in ("tokio_mt::consumer_task", "tokio_mt::producer_task"):
            r = rows[me]
            assert r["polls_s"] > 100 and r["wakes_s"] is not None, (me, r)
            assert abs(r["polls_s"] - r["wakes_s"]) <= 0.2 * r["polls_s"], (me, r)


def test_task_mode_live_is_parked_tasks(features):
    """Launch mode, `tokio_mt park 5`: the fixture parks its tasks for good and prints
    how many of each kind (its JSON line); top's LIVE per task type is that count,
    in every table once they are parked. The target exits at EOF on stdin, and top
    with it."""
    proc = subprocess.Popen([str(util.ASYNCBPF), "top", "--batch", "-i", "0.3", "--",
                             str(util.fixture_binary("debug", "tokio_mt")), "park", "5"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, counts, raw, after = [], None, "", 0
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            out.append(line)
            if line.startswith('{"mode":"park"'):
                counts, raw = json.loads(line), line
            elif counts and line.startswith("asyncbpf top: "):
                after += 1
                if after == 4:  # three whole tables after the line
                    break
        proc.stdin.close()  # EOF: the fixture exits
        proc.stdin = None  # communicate() must not flush it
        rest, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    text = "".join(out) + rest
    assert proc.returncode == 0, (text, err)
    assert counts, text
    assert "Sanitizer" not in err, err
    last = tables(text.split(raw)[1])
    assert len(last) >= 3, text
    for header, rows, order in last[:3]:
        for kind in ("dead_a", "dead_b", "chan_task", "timer_task", "nest_task", "lost_task", "many_task"):
            assert rows[f"tokio_mt::{kind}"]["live"] == counts[kind], (kind, rows)


def test_sort_key(features, pingpong):
    proc = util.run_asyncbpf("top", "-p", pingpong.pid, "--batch", "-n", "2", "-i", "0.3", "-s", "polls",
                             timeout=120)
    assert proc.returncode == 0, util.describe(proc)
    for header, rows, order in tables(proc.stdout):
        assert "sorted by polls" in header
        polls = [rows[n]["polls_s"] for n in order]
        assert polls == sorted(polls, reverse=True), order


def test_usage():
    for args in (["-s", "nope"], ["-i", "0"], ["-n", "0"], [], ["--tasks", "--deep"],
                 ["--wake-sample", "0"], ["--wake-sample", "10", "--no-wakes"]):
        proc = util.run_asyncbpf("top", "-p", "1", *args) if args else util.run_asyncbpf("top")
        assert proc.returncode == util.EXIT_USAGE, util.describe(proc)


@pytest.mark.parametrize("mode", [["--all-crates"], []], ids=["per-future", "tasks"])
def test_hyper_live_is_connections(features, tmp_path, mode):
    """hyper's server (tests/conformance/hyper_server) with 8 keep-alive connections
    held busy by a client: LIVE of hyper's connection task (a hand-written future, no
    __state; in task mode the task type whose root it is) is the number of connections
    open, however many requests each serves; nothing blocks; the cost line in every
    table; messages say top:."""
    server = util.conformance_binary("debug", "hyper_server")
    client_bin = util.conformance_binary("debug", "http_server")
    util.require_file(server, "the conformance programs", "run 'make conformance'")
    conns = 8
    srv = subprocess.Popen([str(server), "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    client = None
    try:
        port = json.loads(srv.stdout.readline())["listening"]
        client = subprocess.Popen([str(client_bin), "client", str(port), str(conns), "100000000"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)  # the connections are open and busy: a steady state
        proc = util.run_asyncbpf("top", "-p", srv.pid, *mode, "--batch", "-n", "2", "-i", "1",
                                 timeout=180)
    finally:
        for p in (client, srv):
            if p is not None:
                p.kill()
                p.wait()
    assert proc.returncode == 0, util.describe(proc)
    assert "asyncbpf: trace:" not in proc.stderr and "asyncbpf: top:" in proc.stderr, proc.stderr
    t = tables(proc.stdout)
    assert len(t) == 2, proc.stdout
    for header, rows, order in t:
        svc = [r for name, r in rows.items() if "NewSvcTask<" in name]
        assert len(svc) == 1, rows.keys()
        assert svc[0]["polls_s"] > 0 and svc[0]["live"] == conns, svc
        # hyper never blocks in a syscall inside a poll; a rare real wait does happen
        # under probes (malloc's mprotect behind the mmap lock another thread's uprobe
        # handling holds: a millisecond in a 1 s interval), so the bound is 1 % of
        # the interval, as for trace's hyper runs (test_conformance.py); preemption or the
        # tracer's own stalls taken for blocking would be hundreds of ms/s here
        assert all(r["blocked"] < 10.0 for r in rows.values()), rows
    assert proc.stdout.count("the tracer's probes: ~") == 2, proc.stdout
    assert "the tracer's own cost" in proc.stderr
