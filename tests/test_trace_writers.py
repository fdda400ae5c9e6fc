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

import util

PERFETTO_TEST = util.UNIT_TEST_DIR / "test_perfetto"
CHROME_TEST = util.UNIT_TEST_DIR / "test_chrome_trace"

# The subset of Perfetto's schema the trace writers use, shared with
# test_profile_writers.py (field numbers and types as in Perfetto's protos).
PERFETTO_SCHEMA = util.REPO / "tests" / "data" / "perfetto_subset.proto"


def require_protoc():
    if not shutil.which("protoc"):
        pytest.fail("protoc not found in PATH (Debian: protobuf-compiler): run 'make deps'")


def write_sample(binary, path):
    util.require_file(binary, "the unit test binary", "run 'make san' (it builds .output/san/tests/)")
    proc = subprocess.run([str(binary), "--write", str(path)], capture_output=True, text=True, errors="replace",
                          timeout=120, env=util.san_env())
    util.assert_no_sanitizer_report(proc)
    assert proc.returncode == 0, util.describe(proc)


def parse_text_format(text):
    """protoc's text output as nested lists of (key, value); value a str or a list."""
    root, stack = [], []
    node = root
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            node = stack.pop()
        elif line.endswith("{"):
            child = []
            node.append((line[:-1].strip(), child))
            stack.append(node)
            node = child
        else:
            key, _, value = line.partition(": ")
            node.append((key, value))
    assert not stack, "unbalanced braces in protoc output"
    return root


def unquote(value):
    """A text-format string literal ("...", C escapes, octal bytes) as text."""
    assert value.startswith('"') and value.endswith('"'), value
    return codecs.escape_decode(value[1:-1])[0].decode("utf-8")


def field(msg, key, default=None):
    return next((v for k, v in msg if k == key), default)


def fields(msg, key):
    return [v for k, v in msg if k == key]


@pytest.fixture(scope="module")
def perfetto_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("traces") / "sample.pftrace"
    write_sample(PERFETTO_TEST, path)
    return path


def test_perfetto_decode_raw(perfetto_trace):
    require_protoc()
    with open(perfetto_trace, "rb") as f:
        proc = subprocess.run(["protoc", "--decode_raw"], stdin=f, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, util.describe(proc)
    packets = parse_text_format(proc.stdout)
    assert packets and all(k == "1" for k, _ in packets), "a Trace is a sequence of field-1 packets"
    # every packet on sequence 1; the first one starts it
    assert all(field(p, "10") == "1" for _, p in packets)
    assert field(packets[0][1], "87") == "1" and field(packets[0][1], "13") == "1"
    events = [field(p, "11") for _, p in packets if field(p, "11") is not None]
    descriptors = [field(p, "60") for _, p in packets if field(p, "60") is not None]
    assert events and descriptors
    # every track event carries a timestamp on CLOCK_MONOTONIC (58: 3)
    assert all(field(p, "58") == "3" and field(p, "8") is not None for _, p in packets if field(p, "11"))


def test_perfetto_typed_decode(perfetto_trace, tmp_path):
    require_protoc()
    with open(perfetto_trace, "rb") as f:
        proc = subprocess.run(["protoc", f"--proto_path={PERFETTO_SCHEMA.parent}", "--decode=asyncbpf_check.Trace",
                               PERFETTO_SCHEMA.name], stdin=f, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, util.describe(proc)
    unknown = [line for line in proc.stdout.splitlines() if re.match(r"\s*\d+\s*[:{]", line)]
    assert not unknown, "fields outside Perfetto's schema or with the wrong wire type:\n" + "\n".join(unknown[:20])

    packets = [p for _, p in parse_text_format(proc.stdout)]
    tracks, event_names, annotation_names = {}, {}, {}
    per_track = {}
    for i, p in enumerate(packets):
        for interned in fields(p, "interned_data"):
            for e in fields(interned, "event_names"):
                event_names[field(e, "iid")] = unquote(field(e, "name"))
            for e in fields(interned, "debug_annotation_names"):
                annotation_names[field(e, "iid")] = unquote(field(e, "name"))
        desc = field(p, "track_descriptor")
        if desc is not None:
            parent = field(desc, "parent_uuid")
            assert parent is None or parent in tracks, f"packet {i}: parent track {parent} not declared yet"
            tracks[field(desc, "uuid")] = desc
        ev = field(p, "track_event")
        if ev is None:
            continue
        uuid = field(ev, "track_uuid")
        assert uuid in tracks, f"packet {i}: track {uuid} used before its descriptor"
        name_iid = field(ev, "name_iid")
        assert name_iid is None or name_iid in event_names, f"packet {i}: event name iid {name_iid} undefined"
        for a in fields(ev, "debug_annotations"):
            assert field(a, "name_iid") in annotation_names, f"packet {i}: annotation name undefined"
        if name_iid is not None:
            assert int(field(p, "sequence_flags", "0")) & 2, "interned data used without SEQ_NEEDS_INCREMENTAL_STATE"
        per_track.setdefault(uuid, []).append((int(field(p, "timestamp")), field(ev, "type")))

    # what trace_processor does: stable sort by time; every END closes an open slice
    begins = ends = 0
    for uuid, evs in per_track.items():
        depth = 0
        for _, kind in sorted(evs, key=lambda e: e[0]):
            if kind == "TYPE_SLICE_BEGIN":
                depth, begins = depth + 1, begins + 1
            elif kind == "TYPE_SLICE_END":
                assert depth > 0, f"track {uuid}: END without an open slice"
                depth, ends = depth - 1, ends + 1
        assert depth == 0, f"track {uuid}: {depth} slices never end"
    assert begins == ends > 0

    first = packets[0]
    assert field(first, "first_packet_on_sequence") == "true"
    assert field(field(first, "clock_snapshot"), "primary_trace_clock") == "BUILTIN_CLOCK_MONOTONIC"
    names = {unquote(field(field(d, "thread"), "thread_name", '""')) for d in tracks.values() if field(d, "thread")}
    assert {"worker-1", "late-name"} <= names
    process = [d for d in tracks.values() if field(d, "process")]
    main = [d for d in process if unquote(field(field(d, "process"), "process_name", '""')) == "demo-proc"]
    assert len(main) == 1 and field(field(main[0], "process"), "pid") == "4242"
    task_tracks = [unquote(field(d, "name")) for d in tracks.values()
                   if field(d, "name") and field(d, "parent_uuid") == field(main[0], "uuid")]
    assert task_tracks.count("demo::task @ 0xa000") == 2  # the task, and a later one at its address
    assert {"demo::task", "demo::middle", "demo::leaf"} <= set(event_names.values())
    last = field(packets[-1], "track_event")
    assert field(last, "type") == "TYPE_INSTANT"
    assert unquote(field(last, "name")) == "asyncbpf: 3 records DROPPED"


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
