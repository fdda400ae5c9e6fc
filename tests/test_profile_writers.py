# SPDX-License-Identifier: GPL-2.0
"""Tier 1: the profile writers' output read by tools that share no code with them.

The unit test binaries write the hand-made profile of tests/unit/profile_model.h on
request (`--write FILE`): the SVG flame graph goes through Python's XML parser and
`xmllint`, and its boxes are checked against the profile's stacks merged here by
prefix; the pprof file through `protoc --decode_raw` and `protoc --decode` against
tests/data/profile.proto (pprof's schema); the Perfetto trace through `protoc
--decode_raw` and `protoc --decode` against a subset of Perfetto's schema, then
structurally (tracks declared before use, interned ids defined before use).
Ground truth: STACKS, SAMPLES and THREADS below, restated from profile_model.h.
docs/profile-formats.md describes the formats.
"""
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

import util
from util import PERFETTO_SCHEMA, field, fields, parse_text_format, require_protoc, unquote, write_sample

SVG_TEST = util.UNIT_TEST_DIR / "test_flamegraph_svg"
PPROF_TEST = util.UNIT_TEST_DIR / "test_pprof"
PERFETTO_TEST = util.UNIT_TEST_DIR / "test_perfetto_profile"
PPROF_SCHEMA = util.REPO / "tests" / "data" / "profile.proto"

HUGE = "".join(chr(ord("a") + i % 26) for i in range(20000))
# PM_EVIL_NAME as valid UTF-8: each byte that is not UTF-8 is U+FFFD
EVIL = "evil<&\"'\x01\ufffd>::Fut<\ufffd\ufffd>"
# (frames root first, off-CPU, samples, weight): profile_model.h
STACKS = [
    (["[runtime]", "demo::handler", "demo::fetch", "demo::parse"], False, 50, 50),
    (["[runtime]", "demo::handler", "demo::fetch", "core::str::from_utf8"], False, 30, 30),
    (["[runtime]", "demo::handler", "demo::parse"], False, 10, 10),
    (["[not in a poll]", EVIL], False, 5, 5),
    (["[runtime]", "demo::handler", "demo::fetch"], True, 4, 4000000),
    (["[runtime]", "tokio::runtime::park"], True, 2, 1000000),
    (["[runtime]", HUGE], False, 1, 1),
    (["[runtime]", "demo::handler", "demo::fetch", "demo::parse"], False, 5, 5),
]
# (time ns, tid, stack index)
SAMPLES = [(1100000000, 100, 0), (1200000000, 100, 1), (1300000000, 101, 2), (1400000000, 100, 3),
           (1500000000, 101, 4), (1600000000, 102, 5), (1700000000, 100, 6), (1800000000, 101, 7),
           (1900000000, 100, 0), (2000000000, 102, 0), (2100000000, 101, 4), (2200000000, 100, 1)]
THREADS = {100: "worker-1", 101: "worker<2>"}
PID = 4242
PERIOD_NS = 1000000
FRAME_WIDTH = 1180.0  # the graph's full width in the SVG (1200 px less the margins)
EPS = 0.01


def short(text, n=200):
    return text if len(text) <= n else text[:n] + f"...({len(text)} chars)"


def run_protoc(path, *args, cwd=None):
    require_protoc()
    with open(path, "rb") as f:
        proc = subprocess.run(["protoc", *args], stdin=f, capture_output=True, text=True, timeout=60, cwd=cwd)
    assert proc.returncode == 0, util.describe(proc)
    return proc.stdout


def unknown_fields(text):
    return [line for line in text.splitlines() if re.match(r"\s*\d+\s*[:{]", line)]


# ---------------------------------------------------------------------------
# SVG flame graph
# ---------------------------------------------------------------------------

def svg_name(name, max_bytes=2000):
    """What the SVG shows of a name: control characters as \\xHH, cut at 2000 bytes."""
    out, used = "", 0
    for ch in name:
        size = len(ch.encode("utf-8"))
        if used + size > max_bytes:
            return out + "..."
        out += f"\\x{ord(ch):02X}" if ord(ch) < 0x20 or ord(ch) == 0x7F else ch
        used += size
    return out


def merged(offcpu):
    """The profile's stacks of one kind merged by prefix: path -> (weight, samples)."""
    boxes = {}
    for frames, off, samples, weight in STACKS:
        if off != offcpu:
            continue
        for depth in range(1, len(frames) + 1):
            path = tuple(svg_name(f) for f in frames[:depth])
            w, s = boxes.get(path, (0, 0))
            boxes[path] = (w + weight, s + samples)
    return boxes


@pytest.fixture(scope="module")
def svg_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("profiles") / "profile.svg"
    write_sample(SVG_TEST, path)
    return path


def test_svg_xmllint(svg_file):
    if not shutil.which("xmllint"):
        pytest.fail("xmllint not found in PATH (Debian: libxml2-utils): run 'make deps'")
    proc = subprocess.run(["xmllint", "--noout", str(svg_file)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and not proc.stderr, util.describe(proc)


def svg_graphs(svg_file):
    ns = {"s": "http://www.w3.org/2000/svg"}
    root = ET.parse(svg_file).getroot()
    graphs = []
    for graph in root.iterfind(".//s:g[@class='graph']", ns):
        boxes = []
        for g in graph.iterfind("s:g[@class='f']", ns):
            rect, title = g.find("s:rect", ns), g.find("s:title", ns)
            assert rect is not None and title is not None and g.find("s:text", ns) is not None
            boxes.append({"name": title.text.split("\n")[0], "title": title.text, "depth": int(g.get("data-d")),
                          "x": float(rect.get("x")), "y": float(rect.get("y")), "w": float(rect.get("width"))})
        heading = graph.find("s:text[@class='heading']", ns).text
        graphs.append((heading, boxes))
    return root, ns, graphs


def box_paths(boxes):
    """Each box's path of names from the root, found by geometry alone (the parent
    is the box one level down whose x range holds it)."""
    paths = {}
    for b in sorted(boxes, key=lambda b: b["depth"]):
        if b["depth"] == 0:
            paths[id(b)] = (b["name"],)
            continue
        parents = [p for p in boxes if p["depth"] == b["depth"] - 1
                   and p["x"] - EPS <= b["x"] and b["x"] + b["w"] <= p["x"] + p["w"] + EPS]
        assert len(parents) == 1, f"{short(b['name'])} at depth {b['depth']}: {len(parents)} boxes hold it"
        paths[id(b)] = paths[id(parents[0])] + (b["name"],)
    return paths


def test_svg_structure(svg_file):
    root, ns, graphs = svg_graphs(svg_file)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    script = root.find("s:script", ns)
    assert script is not None and "function zoom" in script.text and "function search" in script.text
    # self-contained: no link, image, external stylesheet or URL
    text = svg_file.read_text(encoding="utf-8")
    assert not re.search(r"(xlink:)?href=|url\(|@import|<image", text)
    assert re.findall(r"https?://[^\"'\s]*", text) == ["http://www.w3.org/2000/svg"]
    subtitle = root.find("s:text[@class='subtitle']", ns).text
    assert "7 dropped" in subtitle and "3 unwind failed" in subtitle and "101 on-CPU samples" in subtitle
    assert "5 cut short by the 128 KiB stack copy" in subtitle and "2 off-CPU blocks lost (1.500 ms)" in subtitle
    assert root.find("s:text[@class='title']", ns).text == "demo <profile> & co"
    # on-CPU and off-CPU: two graphs, labelled, never mixed
    assert [h.split(":")[0] for h, _ in graphs] == ["On-CPU", "Off-CPU"]


@pytest.mark.parametrize("graph_index,offcpu", [(0, False), (1, True)])
def test_svg_boxes_match_the_stacks(svg_file, graph_index, offcpu):
    _, _, graphs = svg_graphs(svg_file)
    _, boxes = graphs[graph_index]
    expected = merged(offcpu)
    total = sum(w for path, (w, _) in expected.items() if len(path) == 1)
    paths = box_paths(boxes)

    assert sorted(paths.values()) == sorted(expected), "the boxes are not the stacks merged by prefix"
    for b in boxes:
        weight, samples = expected[paths[id(b)]]
        assert abs(b["w"] - FRAME_WIDTH * weight / total) < EPS, f"{short(b['name'])}: width not proportional"
        pct = f"({100.0 * weight / total:.2f}%)"
        assert (f"{samples} switches {pct}" if offcpu else f"{samples} samples {pct}") in b["title"]
    # the root level spans the whole width: total width = total weight
    assert abs(sum(b["w"] for b in boxes if b["depth"] == 0) - FRAME_WIDTH) < EPS
    # siblings (same parent) never overlap; one row per depth, the root at the bottom
    by_parent = {}
    for b in boxes:
        by_parent.setdefault(paths[id(b)][:-1], []).append(b)
    for parent, sibs in by_parent.items():
        sibs.sort(key=lambda b: b["x"])
        for a, b in zip(sibs, sibs[1:]):
            assert a["x"] + a["w"] <= b["x"] + EPS, f"siblings under {short(str(parent))} overlap"
    rows = {}
    for b in boxes:
        rows.setdefault(b["depth"], set()).add(b["y"])
    assert all(len(ys) == 1 for ys in rows.values())
    ys = [rows[d].pop() for d in sorted(rows)]
    assert ys == sorted(ys, reverse=True)


def run_script(svg_file, zoom, search):
    """The SVG's own script, run by tests/flamegraph_script.js in jsdom."""
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        pytest.fail("node not found in PATH (Debian: nodejs): run 'make deps'")
    env = dict(os.environ)
    env["NODE_PATH"] = os.pathsep.join(p for p in ("/usr/share/nodejs", "/usr/lib/nodejs", env.get("NODE_PATH")) if p)
    probe = subprocess.run([node, "-e", "require('jsdom')"], capture_output=True, text=True, env=env, timeout=60)
    if probe.returncode != 0:
        pytest.fail("jsdom not found (Debian: node-jsdom): run 'make deps'")
    proc = subprocess.run([node, str(util.REPO / "tests" / "flamegraph_script.js"), str(svg_file), zoom, search],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, util.describe(proc)
    return json.loads(proc.stdout)


def fits(box):
    """The box's text is as much of its name as fits its width (12px monospace)."""
    room = int((box["w"] - 6) // 7.08)
    if room < 3:
        return box["text"] == ""
    return box["text"] == box["name"] if len(box["name"]) <= room else (
        box["text"].endswith("...") and box["name"].startswith(box["text"][:-3]) and len(box["text"]) <= room)


def test_svg_script_zoom_and_search(svg_file):
    steps = run_script(svg_file, "demo::fetch", "demo::")
    initial = steps["initial"]["boxes"]
    assert all(fits(b) for b in initial)
    on_cpu = merged(False)
    expected = {path[-1]: w for path, (w, _) in on_cpu.items()}

    # zoom on fetch (85 samples): it spans the graph, its children scale by 1180/85,
    # the boxes below it stay at full width, faded; the rest of its graph is hidden
    zoomed = steps["zoomed"]["boxes"]
    fetch = next(b for b in zoomed if b["name"] == "demo::fetch")
    assert (fetch["x"], fetch["w"], fetch["hidden"], fetch["faded"]) == (10, FRAME_WIDTH, False, False)
    for b in zoomed:
        if b["graph"] != fetch["graph"]:
            assert not b["hidden"] and b == next(i for i in initial if i["graph"] == b["graph"] and
                                                     i["name"] == b["name"] and i["depth"] == b["depth"])
        elif (b["name"], b["depth"]) in (("[runtime]", 0), ("demo::handler", 1)):  # fetch's ancestors
            assert b["faded"] and not b["hidden"] and (b["x"], b["w"]) == (10, FRAME_WIDTH)
        elif b["depth"] > fetch["depth"] and not b["hidden"]:
            assert b["name"] in ("demo::parse", "core::str::from_utf8")
            assert abs(b["w"] - FRAME_WIDTH * on_cpu[("[runtime]", "demo::handler", "demo::fetch", b["name"])][0] / 85) < EPS
            assert 10 - EPS <= b["x"] and b["x"] + b["w"] <= 10 + FRAME_WIDTH + EPS
        elif b is not fetch:
            assert b["hidden"], f"{short(b['name'])} outside the zoomed box is shown"
        assert b["hidden"] or fits(b)
    shown = sorted(b["name"] for b in zoomed if b["graph"] == fetch["graph"] and not b["hidden"])
    assert shown == sorted(["[runtime]", "demo::handler", "demo::fetch", "demo::parse", "core::str::from_utf8"])
    assert expected["demo::fetch"] == 85

    # reset zoom: back to the layout the C wrote
    assert steps["unzoomed"]["boxes"] == initial
    # search: every box whose name matches, magenta; the share of each graph matched,
    # nested matches once: all of handler's 95 of 101 on-CPU, 4 of 5 ms off-CPU
    searched = steps["searched"]
    hits = sorted((b["graph"], b["name"]) for b in searched["boxes"] if b["fill"] == "rgb(230,0,230)")
    assert hits == sorted([("graph0", "demo::handler"), ("graph0", "demo::fetch"), ("graph0", "demo::parse"),
                           ("graph0", "demo::parse"), ("graph1", "demo::handler"), ("graph1", "demo::fetch")])
    assert searched["matched"] == ["Matched: 94.06%", "Matched: 80.00%"]
    assert searched["search_button"] == "Reset Search"
    assert steps["unsearched"]["boxes"] == initial and steps["unsearched"]["matched"] == ["", ""]
    # an invalid expression is reported, changes nothing
    assert len(steps["alerts"]) == 1 and "regular expression" in steps["alerts"][0]
    assert steps["bad_search"]["boxes"] == initial


# ---------------------------------------------------------------------------
# pprof
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pprof_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("profiles") / "profile.pb"
    write_sample(PPROF_TEST, path)
    return path


def test_pprof_decode_raw(pprof_file):
    top = parse_text_format(run_protoc(pprof_file, "--decode_raw"))
    assert {k for k, _ in top} <= {str(n) for n in range(1, 16)}, "fields outside Profile's numbers"


def test_pprof_typed_decode(pprof_file):
    text = run_protoc(pprof_file, f"--proto_path={PPROF_SCHEMA.parent}", "--decode=perftools.profiles.Profile",
                      PPROF_SCHEMA.name)
    assert not unknown_fields(text), "fields outside pprof's schema:\n" + "\n".join(unknown_fields(text)[:20])
    prof = parse_text_format(text)
    strings = [unquote(s) for s in fields(prof, "string_table")]
    assert strings[0] == "", "string_table[0] must be empty"

    def s(index):
        return strings[int(index)]

    types = [(s(field(t, "type", "0")), s(field(t, "unit", "0"))) for t in fields(prof, "sample_type")]
    assert types == [("samples", "count"), ("cpu", "nanoseconds"), ("switches", "count"), ("off_cpu", "nanoseconds")]
    assert s(field(prof, "default_sample_type")) == "cpu"
    period_type = field(prof, "period_type")
    assert (s(field(period_type, "type")), s(field(period_type, "unit"))) == ("cpu", "nanoseconds")
    assert int(field(prof, "period")) == PERIOD_NS
    assert int(field(prof, "duration_nanos")) == 2000000000
    comments = [s(c) for c in fields(prof, "comment")]
    assert any("dropped samples: 7" in c for c in comments) and any("unwind failed: 3" in c for c in comments)
    # the model's samples cut short by its 128 KiB stack copy, its off-CPU blocks lost
    assert any(c.startswith("cut short: 5 samples (the 131072-byte stack copy") for c in comments), comments
    assert "off-CPU blocks lost: 2 (1500000 ns)" in comments, comments

    functions = {field(f, "id"): f for f in fields(prof, "function")}
    locations = {field(loc, "id"): loc for loc in fields(prof, "location")}
    mappings = {field(m, "id"): m for m in fields(prof, "mapping")}
    # dedup: one Function per (name, file), one Location per (address, lines)
    keys = [(field(f, "name"), field(f, "filename", "0")) for f in functions.values()]
    assert len(keys) == len(set(keys)) == len(fields(prof, "function"))
    loc_keys = [(field(loc, "address", "0"), str(fields(loc, "line"))) for loc in locations.values()]
    assert len(loc_keys) == len(set(loc_keys)) == len(fields(prof, "location"))
    for loc in locations.values():
        assert field(loc, "mapping_id") is None or field(loc, "mapping_id") in mappings
    assert sorted(s(field(m, "filename")) for m in mappings.values()) == ["/usr/bin/demo", "/usr/lib/libtokio.so"]

    samples = fields(prof, "sample")
    assert len(samples) == len(STACKS)
    sums = [0, 0, 0, 0]
    for sample, (frames, offcpu, count, weight) in zip(samples, STACKS):
        values = [int(v) for v in fields(sample, "value")]
        want = [0, 0, count, weight] if offcpu else [count, weight * PERIOD_NS, 0, 0]
        assert values == want, f"values of {short(str(frames))}"
        sums = [a + b for a, b in zip(sums, values)]
        # leaf first: each location's lines are innermost first, so the whole
        # sample read backwards is the stack root first
        names = []
        for loc_id in fields(sample, "location_id"):
            lines = fields(locations[loc_id], "line")
            names += [s(field(functions[field(ln, "function_id")], "name")) for ln in lines]
        assert names[::-1] == frames, f"sample of {short(str(frames))}: {short(str(names))}"
        label = field(sample, "label")
        assert s(field(label, "key")) == "cpu_state" and s(field(label, "str")) == ("off-cpu" if offcpu else "on-cpu")
    assert sums == [101, 101 * PERIOD_NS, 6, 5000000]
    # fetch is inlined into handler (one pc): one Location with two lines
    first = [locations[i] for i in fields(samples[0], "location_id")]
    assert [len(fields(loc, "line")) for loc in first] == [1, 2, 1]


# ---------------------------------------------------------------------------
# Perfetto
# ---------------------------------------------------------------------------



def perfetto_packets(path, tmp_path):
    raw = parse_text_format(run_protoc(path, "--decode_raw"))
    assert raw and all(k == "1" for k, _ in raw), "a Trace is a sequence of field-1 packets"
    text = run_protoc(path, f"--proto_path={PERFETTO_SCHEMA.parent}", "--decode=asyncbpf_check.Trace",
                      PERFETTO_SCHEMA.name)
    assert not unknown_fields(text), "fields outside Perfetto's schema:\n" + "\n".join(unknown_fields(text)[:20])
    return [p for _, p in parse_text_format(text)]


def replay(packets):
    """Reads the packets as trace_processor does, checking each reference against
    what earlier packets (or this packet's interned data) defined."""
    state = {"names": {}, "mappings": set(), "frames": {}, "callstacks": {}, "tracks": {}, "threads": {},
             "samples": [], "instants": []}
    for i, p in enumerate(packets):
        assert field(p, "trusted_packet_sequence_id") == "1"
        interned = field(p, "interned_data")
        if interned is not None:
            assert int(field(p, "sequence_flags", "0")) & 2, f"packet {i}: interned data without NEEDS_INCREMENTAL_STATE"
            for kind, key in (("function_names", "names"), ("frames", "frames"), ("callstacks", "callstacks")):
                for e in fields(interned, kind):
                    assert field(e, "iid") not in state[key], f"packet {i}: {kind} iid {field(e, 'iid')} defined twice"
                    state[key][field(e, "iid")] = e
            paths = {field(e, "iid") for e in fields(interned, "mapping_paths")}
            for m in fields(interned, "mappings"):
                assert set(fields(m, "path_string_ids")) <= paths
                state["mappings"].add(field(m, "iid"))
            for iid, fr in state["frames"].items():
                assert field(fr, "function_name_id") in state["names"], f"packet {i}: frame {iid}: name undefined"
                assert field(fr, "mapping_id") in state["mappings"], f"packet {i}: frame {iid}: mapping undefined"
            for iid, cs in state["callstacks"].items():
                assert all(f in state["frames"] for f in fields(cs, "frame_ids")), f"callstack {iid}: frame undefined"
        desc = field(p, "track_descriptor")
        if desc is not None:
            parent = field(desc, "parent_uuid")
            assert parent is None or parent in state["tracks"], f"packet {i}: parent track not declared yet"
            state["tracks"][field(desc, "uuid")] = desc
            thread = field(desc, "thread")
            if thread is not None:
                state["threads"][int(field(thread, "tid"))] = unquote(field(thread, "thread_name", '""'))
        sample = field(p, "perf_sample")
        if sample is not None:
            tid, cs = int(field(sample, "tid")), field(sample, "callstack_iid")
            assert tid in state["threads"], f"packet {i}: thread {tid} sampled before its track"
            assert cs in state["callstacks"], f"packet {i}: callstack {cs} used before it is defined"
            assert field(p, "timestamp_clock_id") == "3"
            names = [unquote(field(state["names"][field(state["frames"][f], "function_name_id")], "str"))
                     for f in fields(state["callstacks"][cs], "frame_ids")]
            state["samples"].append((int(field(p, "timestamp")), int(field(sample, "pid")), tid, names))
        event = field(p, "track_event")
        if event is not None:
            assert field(event, "track_uuid") in state["tracks"], f"packet {i}: track used before its descriptor"
            state["instants"].append((int(field(p, "timestamp")), event))
    return state


def test_perfetto_samples(tmp_path):
    path = tmp_path / "profile.pftrace"
    write_sample(PERFETTO_TEST, path)
    packets = perfetto_packets(path, tmp_path)
    assert field(packets[0], "first_packet_on_sequence") == "true"
    assert field(field(packets[0], "clock_snapshot"), "primary_trace_clock") == "BUILTIN_CLOCK_MONOTONIC"  # 3
    state = replay(packets)

    process = [d for d in state["tracks"].values() if field(d, "process")]
    assert len(process) == 1
    assert unquote(field(field(process[0], "process"), "process_name")) == "demo-proc"
    assert state["threads"] == {**THREADS, 102: ""}
    got = [(ts, pid, tid, names) for ts, pid, tid, names in state["samples"]]
    want = []
    for ts, tid, stack in SAMPLES:
        frames, offcpu, _, _ = STACKS[stack]
        want.append((ts, PID, tid, (["[off-CPU]"] if offcpu else []) + frames))
    assert got == want
    assert len(state["callstacks"]) == len({stack for _, _, stack in SAMPLES}), "callstacks not deduplicated"
    last = state["instants"][-1][1]
    assert unquote(field(last, "name")) == "asyncbpf profile: 7 samples DROPPED, 3 unwind failed, 5 cut short, 2 off-CPU blocks lost"


def test_perfetto_aggregate(tmp_path):
    path = tmp_path / "aggregate.pftrace"
    util.require_file(PERFETTO_TEST, "the unit test binary", "run 'make san' (it builds .output/san/tests/)")
    proc = subprocess.run([str(PERFETTO_TEST), "--write", str(path), "--aggregate"], capture_output=True,
                          text=True, errors="replace", timeout=120, env=util.san_env())
    util.assert_no_sanitizer_report(proc)
    assert proc.returncode == 0, util.describe(proc)
    state = replay(perfetto_packets(path, tmp_path))
    assert state["samples"] == []
    events = [e for _, e in state["instants"]][:-1]
    assert len(events) == len(STACKS)
    for event, (frames, offcpu, samples, _) in zip(events, STACKS):
        notes = {unquote(field(a, "name")): a for a in fields(event, "debug_annotations")}
        assert unquote(field(notes["stack"], "string_value")) == "\n".join(frames)
        assert int(field(notes["samples"], "uint_value")) == samples
        assert unquote(field(notes["cpu_state"], "string_value")) == ("off-cpu" if offcpu else "on-cpu")
