# SPDX-License-Identifier: GPL-2.0
"""Tier 1: the trace writers' output read by tools that share no code with them.

The unit test binaries write their sample traces on request (`--write FILE`, from
tests/unit/test_perfetto.c and test_chrome_trace.c); here the Perfetto trace goes
through `protoc --decode_raw` and through `protoc --decode` against a schema written
below from Perfetto's .proto field numbers, and the Chrome JSON through Python's
strict json module. Ground truth for the values: the hand-made polls in those C
files (docs/trace-formats.md describes the layout).
"""
import codecs
import json
import re
import shutil
import subprocess

import pytest

import perfetto_reader
import util
from util import PERFETTO_SCHEMA, field, parse_text_format, require_protoc, write_sample

PERFETTO_TEST = util.UNIT_TEST_DIR / "test_perfetto"
CHROME_TEST = util.UNIT_TEST_DIR / "test_chrome_trace"



@pytest.fixture(scope="module")
def perfetto_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("traces") / "sample.pftrace"
    write_sample(PERFETTO_TEST, path, "sample")
    return path


def test_perfetto_decode_raw(perfetto_trace):
    require_protoc()
    with open(perfetto_trace, "rb") as f:
        proc = subprocess.run(["protoc", "--decode_raw"], stdin=f, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, util.describe(proc)
    packets = parse_text_format(proc.stdout)
    assert packets and all(k == "1" for k, _ in packets), "a Trace is a sequence of field-1 packets"
    # every packet names its sequence; the first one starts the global sequence
    assert all(field(p, "10") is not None for _, p in packets)
    assert field(packets[0][1], "10") == "1"
    assert field(packets[0][1], "87") == "1" and field(packets[0][1], "13") == "1"


def test_perfetto_typed_decode(perfetto_trace):
    require_protoc()
    with open(perfetto_trace, "rb") as f:
        proc = subprocess.run(["protoc", f"--proto_path={PERFETTO_SCHEMA.parent}", "--decode=asyncbpf_check.Trace",
                               PERFETTO_SCHEMA.name], stdin=f, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, util.describe(proc)
    unknown = [line for line in proc.stdout.splitlines() if re.match(r"\s*\d+\s*[:{]", line)]
    assert not unknown, "fields outside Perfetto's schema or with the wrong wire type:\n" + "\n".join(unknown[:20])


# The sample's polls (tests/unit/test_perfetto.c): (tid, depth, start, end, name,
# result, await line or None, self, state or None), for the thread tracks
MAIN_RS = "/src/demo/src/main.rs"
SAMPLE = [
    (100, 2, 1100, 1200, "demo::leaf", "pending", 32, 0xc000, "Unresumed (0) -> Suspend0 (3)"),
    (100, 1, 1050, 1300, "demo::middle", "pending", 24, 0xb000, "Unresumed (0) -> Suspend1 (4)"),
    (100, 0, 1000, 1400, "demo::task", "pending", 12, 0xa000, "Unresumed (0) -> Suspend0 (3)"),
    (101, 2, 2100, 2200, "demo::leaf", "ready", None, 0xc000, "Suspend0 (3) -> Returned (1)"),
    (101, 1, 2050, 2300, "demo::middle", "pending", 22, 0xb000, "Suspend1 (4) -> Suspend0 (3)"),
    (101, 0, 2000, 2400, "demo::task", "pending", 12, 0xa000, "Suspend0 (3) -> Suspend0 (3)"),
    (100, 2, 3000, 3100, "demo::leaf", "ready", None, 0xc100, "Unresumed (0) -> Returned (1)"),
    (100, 1, 3000, 3300, "demo::middle", "ready", None, 0xb000, "Suspend0 (3) -> Returned (1)"),
    (100, 0, 3000, 3400, "demo::task", "ready", None, 0xa000, "Suspend0 (3) -> Returned (1)"),
    (100, 0, 5000, 5100, "demo::task", "pending", 12, 0xa000, "Unresumed (0) -> Suspend0 (3)"),
    (100, 0, 6000, 6100, "demo::task", "ready", None, 0xa000, "Suspend0 (3) -> Returned (1)"),
    (101, 1, 7000, 7500, "demo::leaf", "truncated", None, 0xe000, "Suspend0 (3) -> Suspend0 (3)"),
    (101, 0, 6900, 7500, "demo::middle", "truncated", None, 0xd000, "Suspend0 (3) -> Suspend0 (3)"),
    (102, 0, 8000, 8050, "<Unknown as core::future::future::Future>::poll", "unknown", None, 0xf000, None),
    (102, 0, 9700, 9800, "(unknown poll)", "pending", None, 0xf200, None),
]


def thread_slices(trace, tid):
    uuids = [u for u, d in trace.thread_tracks().items() if d.thread.tid == tid and d.thread.pid == 4242]
    assert len(uuids) == 1, f"thread {tid}: {len(uuids)} tracks"
    return [s for s in trace.slices if s.track == uuids[0]]


def test_perfetto_sample_read_back(perfetto_trace):
    """Every value of the sample, as an independent reader sees it."""
    t = perfetto_reader.read(perfetto_trace)
    procs = {d.process.pid: (u, d) for u, d in t.tracks.items() if d.HasField("process")}
    assert set(procs) == {4242, 4343}
    proc_uuid = procs[4242][0]
    assert procs[4242][1].process.process_name == "demo-proc"
    names = {d.thread.tid: d.thread.thread_name for d in t.thread_tracks().values()}
    assert names[100] == "worker-1" and names[101] == "late-name" and 4343 in names
    for d in t.thread_tracks().values():
        if d.thread.pid == 4242:
            assert d.parent_uuid == proc_uuid
    # every sane poll on its thread's track: exact times, depth from nesting, values
    for tid, depth, start, end, name, result, line, self_, state in SAMPLE:
        got = [s for s in thread_slices(t, tid) if s.ts == start and s.name == name]
        assert len(got) == 1, (tid, start, name, [(s.ts, s.name) for s in thread_slices(t, tid)])
        s = got[0]
        assert (s.dur, s.depth) == (end - start, depth), s
        assert s.args["result"] == result and s.args["self"] == self_, s.args
        assert s.args.get("await") == (f"{MAIN_RS}:{line}" if line else None), s.args
        assert s.args.get("state") == state, s.args
    # the hostile name: non-UTF-8 bytes replaced, the rest kept
    evil = [s for s in thread_slices(t, 102) if s.ts == 9000]
    assert len(evil) == 1 and evil[0].name.startswith('evil"q\\\n\x01\ufffd|\ufffd\ufffd|\ufffd|caf\u00e9::Fut<')
    # the child that outlived its parent: clamped into it
    assert [s.ts + s.dur <= 10050 for s in thread_slices(t, 103) if s.ts == 10000] == [True]

    # no task tracks by default: a flow links a task's own polls, across threads; the
    # poll that ends the task ends it; nested polls have none
    assert not [u for u, d in t.tracks.items() if not d.HasField("thread") and not d.HasField("process")]
    task_a = sorted((s for s in thread_slices(t, 100) + thread_slices(t, 101)
                     if s.name == "demo::task"), key=lambda s: s.ts)
    f1, f2, f3, f4, f5 = task_a
    assert f1.flows and f2.flows == f1.flows and f3.terminating_flows == f1.flows
    assert f4.flows and f4.flows != f1.flows and f5.terminating_flows == f4.flows
    assert not any(s.flows or s.terminating_flows for s in t.slices if s.depth > 0)
    # totals: an instant on the process track at the last slice's end
    (ts, track, name, args), = t.instants
    assert (ts, track, name) == (10500, proc_uuid, "asyncbpf: 3 records DROPPED")
    assert args == {"polls": 19, "dropped": 3, "truncated": 2, "probes_attached": 12, "probes_failed": 1,
                    "duration_ns": 1000000000}


def test_perfetto_task_tracks(tmp_path):
    """--task-tracks: a track per task with a copy of its own polls."""
    path = tmp_path / "tasks.pftrace"
    write_sample(PERFETTO_TEST, path, "task-tracks")
    t = perfetto_reader.read(path)
    procs = {d.process.pid: (u, d) for u, d in t.tracks.items() if d.HasField("process")}
    proc_uuid = procs[4242][0]
    # task tracks: a task's own polls, unless it was done in one. Task A's first life
    # (1000, 2000, 3000, across threads 100 and 101), its second life at the same
    # address (5000, 6000), and the pending ones left at the end; no nested poll.
    tasks = {u: d for u, d in t.tracks.items() if not d.HasField("thread") and not d.HasField("process")}
    assert all(d.parent_uuid in (proc_uuid, procs[4343][0]) for d in tasks.values())
    on_task, on_task_by_uuid = {}, {}
    for s in t.slices:
        if s.track in tasks:
            on_task.setdefault(tasks[s.track].name, []).append([s.ts, s.dur, s.name, s.depth])
            on_task_by_uuid.setdefault(s.track, []).append([s.ts, s.dur, s.name, s.depth])
    life = [[x] for u in tasks if tasks[u].name == "demo::task @ 0xa000" and tasks[u].parent_uuid == proc_uuid
            for x in on_task_by_uuid.get(u, [])]
    assert [tasks[u].name for u in tasks if tasks[u].parent_uuid == proc_uuid].count("demo::task @ 0xa000") == 2
    assert sorted(x for xs in life for x in xs) == sorted(
        [[1000, 400, "demo::task", 0], [2000, 400, "demo::task", 0], [3000, 400, "demo::task", 0],
         [5000, 100, "demo::task", 0], [6000, 100, "demo::task", 0]])
    assert all(x[3] == 0 for xs in on_task.values() for x in xs)  # no nested poll
    assert "demo::middle @ 0xd000" not in on_task  # B: truncated at its first poll
    assert not any(s.flows or s.terminating_flows for s in t.slices)  # the tracks link them


def test_perfetto_task_mode(tmp_path):
    """Task mode's slices (tests/unit/test_perfetto.c `task-mode`): one per task poll,
    no nesting, the chain each was given as `await_stack` (kept by the writer: the
    caller's buffer was overwritten after each add), no `state`; the file decodes
    against Perfetto's schema."""
    require_protoc()
    path = tmp_path / "task-mode.pftrace"
    write_sample(PERFETTO_TEST, path, "task-mode")
    with open(path, "rb") as f:
        proc = subprocess.run(["protoc", f"--proto_path={PERFETTO_SCHEMA.parent}", "--decode=asyncbpf_check.Trace",
                               PERFETTO_SCHEMA.name], stdin=f, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, util.describe(proc)
    t = perfetto_reader.read(path)
    slices = sorted((s for s in t.slices if s.track in t.thread_tracks()), key=lambda s: s.ts)
    a = "demo::task (/src/demo/src/main.rs:10) → demo::middle (/src/demo/src/main.rs:20) → demo::leaf"
    b = "demo::task (/src/demo/src/main.rs:11) → demo::middle"
    assert [(s.ts, s.dur, s.depth, s.args["await_stack"]) for s in slices] == [
        (20000, 500, 0, a), (21000, 500, 0, b), (22000, 500, 0, a)]
    assert all("state" not in s.args and s.args["result"] == "pending" for s in slices)


def test_perfetto_no_drops(tmp_path):
    path = tmp_path / "nodrops.pftrace"
    write_sample(PERFETTO_TEST, path, "no-drops")
    (_, _, name, args), = perfetto_reader.read(path).instants
    assert name == "asyncbpf totals" and args["dropped"] == 0


def test_perfetto_overflow(tmp_path):
    """More nested polls than a thread holds are written before their parent, whose
    BEGIN then lies before the thread's clock: still exact and nested when read."""
    path = tmp_path / "overflow.pftrace"
    write_sample(PERFETTO_TEST, path, "overflow")
    t = perfetto_reader.read(path)
    n = 4096 + 10
    slices = [s for s in t.slices if s.track in t.thread_tracks()]
    assert len(slices) == n + 1
    parent = [s for s in slices if s.depth == 0]
    assert [(p.ts, p.dur) for p in parent] == [(99999, 100000 + 10 * n - 99999)]
    kids = sorted(s.ts for s in slices if s.depth == 1)
    assert kids == [100000 + 10 * i for i in range(n)]


def test_chrome_json(tmp_path):
    path = tmp_path / "sample.json"
    write_sample(CHROME_TEST, path)
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    assert doc["displayTimeUnit"] == "ns"
    assert doc["otherData"]["dropped"] == 7 and doc["otherData"]["lossless"] is False
    events = doc["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert complete
    for e in complete:
        assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0, e
        assert {"name", "pid", "tid", "args"} <= e.keys()
        assert {"future", "result", "self", "task", "depth"} <= e["args"].keys()

    # slices on one thread nest: sorted by start, longest first on ties
    by_tid = {}
    for e in complete:
        by_tid.setdefault((e["pid"], e["tid"]), []).append(e)
    for key, evs in by_tid.items():
        stack = []
        for e in sorted(evs, key=lambda e: (e["ts"], -e["dur"])):
            end = e["ts"] + e["dur"]
            while stack and stack[-1] <= e["ts"] + 1e-9:
                stack.pop()
            assert not stack or end <= stack[-1] + 1e-9, f"thread {key}: {e['name']} overlaps its parent"
            stack.append(end)

    # flows: "s" and "f" paired by id, the finish after the start
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts and starts.keys() == finishes.keys()
    assert len(starts) == sum(1 for e in events if e["ph"] == "s"), "flow ids reused"
    for fid, s in starts.items():
        f = finishes[fid]
        assert f["ts"] >= s["ts"] and f.get("bp") == "e" and f["name"] == s["name"] and f["cat"] == s["cat"]
        # both ends sit on a poll's slice: its start
        assert any(x["tid"] == s["tid"] and x["ts"] == s["ts"] for x in complete)
        assert any(x["tid"] == f["tid"] and x["ts"] == f["ts"] for x in complete)
    meta = {(e["name"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M"}
    assert meta[("thread_name", 100)] == "worker-1"
    assert events[-1]["ph"] == "i" and events[-1]["name"] == "asyncbpf: 7 records DROPPED"
