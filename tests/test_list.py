# SPDX-License-Identifier: GPL-2.0
"""Tier 2: `asyncbpf list` on the fixtures: default selection, globs, expansion along
the await graph, whitelist files, and `-p PID`. Expected selections come from the
fixture sources (crate names, `async fn` definitions, the `// AWAIT` marker graph),
docs/selection.md says how they combine."""
import json
import os
import re
import signal
import subprocess
import time

import pytest

import util

ROW = re.compile(r"^0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\d+)\s+(\S+)\s+(.*?)  \((.*):(\d+)\)$")
NOT_USER = {"std", "core", "alloc", "tokio", "async_std", "async_executor", "async_global_executor", "async_io",
            "async_task", "async_lock", "blocking", "smol", "futures_lite", "async_channel"}


class Listing:
    """One `asyncbpf list ... -o WL` run: the rows printed and the whitelist written."""

    def __init__(self, proc, whitelist_path):
        self.proc = proc
        self.rows = []  # (addr, file_offset, exits, entry, name)
        for line in proc.stdout.splitlines():
            m = ROW.match(line)
            if m:
                self.rows.append((int(m.group(1), 16), int(m.group(2), 16), int(m.group(3)), m.group(4), m.group(5)))
        self.whitelist = util.load_json(whitelist_path) if proc.returncode == 0 else None

    @property
    def selected(self):
        """Future paths with "trace": true in the whitelist written with -o."""
        return {e["future"] for e in self.whitelist["futures"] if e["trace"]}

    @property
    def printed(self):
        return {r[4] for r in self.rows}


def run_list(build, tmp_path, *args, name="wl.json"):
    out = tmp_path / name
    proc = util.run_asyncbpf("list", build.binary, *args, "-o", out)
    assert proc.returncode == util.EXIT_OK, util.describe(proc)
    return Listing(proc, out)


def paths_of(model, names):
    return {f["path"] for f in model.futures if f["name"] in names}


def fixture_futures(model, crate):
    """name -> paths of the crate's own futures: compiler futures by caller name
    ('leaf', 'block_task{block}'), hand-written ones by type name ('YieldNow')."""
    out = {}
    for f in model.futures:
        c = util.caller_name(f, crate)
        if c is None and f["kind"] == "handwritten" and util.strip_generics(f["path"] or "").startswith(crate + "::"):
            c = util.last_segment(f["path"])
        if c:
            out.setdefault(c, set()).add(f["path"])
    return out


def marker_closure(fs, seeds, reverse=False):
    """Names reachable from seeds along the marker graph (awaiter -> awaited, or the
    reverse), wrappers looked through (`timeout(d, f())` awaits f), seeds included."""
    graph = {}
    for caller, awaited in fs.graph(inner=True).items():
        for c in awaited:
            a, b = (c, caller) if reverse else (caller, c)
            graph.setdefault(a, set()).add(b)
    seen, todo = set(), list(seeds)
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(graph.get(n, ()))
    return seen


# ---------------------------------------------------------------------------
# Default selection
# ---------------------------------------------------------------------------


def test_default_selection_is_the_fixture_crate(build, tmp_path):
    """No pattern: the fixture crate's futures that have poll code (out of line or
    inlined), and nothing from tokio, async-std, smol or std."""
    model = build.model
    listing = run_list(build, tmp_path)
    want = {f["path"] for f in model.crate_futures() if f["polls"]}
    assert listing.selected == want, (f"selected but not expected: {sorted(listing.selected - want)}\n"
                                      f"expected but not selected: {sorted(want - listing.selected)}")
    crates = {util.split_path(util.strip_generics(p))[0] for p in listing.selected}
    assert crates == {build.crate} and not crates & NOT_USER
    # every caller of the markers with poll code is in it
    by_caller = fixture_futures(model, build.crate)
    for caller in util.fixture_source(build.crate).callers:
        assert by_caller.get(caller), f"marker caller {caller} has no future"
    # the rows are the selected futures' out-of-line polls, at the model's addresses
    polls = {(p["addr"], p["file_offset"], len(p["exits"]), model.futures[p["future"]]["name"])
             for p in model.out_of_line_polls() if p["future"] is not None
             and model.futures[p["future"]]["path"] in want}
    assert {(r[0], r[1], r[2], r[4]) for r in listing.rows} == polls, listing.proc.stdout


# ---------------------------------------------------------------------------
# Patterns
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("profile", util.PROFILES)
def test_glob_pattern_selects_matching_futures(profile, analyses, tmp_path):
    build = analyses.get(profile, "handwritten")
    fs = util.fixture_source("handwritten")
    listing = run_list(build, tmp_path, "handwritten::le*")
    want_fns = {n for n in fs.async_fns if n.startswith("le")}
    assert want_fns == {"leaf", "left"}  # the fixture's own fns, from the source
    want = {p for n in want_fns for p in fixture_futures(build.model, "handwritten")[n]}
    assert listing.selected == want


@pytest.mark.parametrize("profile", util.PROFILES)
def test_glob_pattern_on_generic_instantiations(profile, analyses, tmp_path):
    build = analyses.get(profile, "handwritten")
    listing = run_list(build, tmp_path, "handwritten::sum_twice<*>")
    assert {util.last_segment(p) for p in listing.selected} == {"{async_fn_env#0}"}
    assert {p.rsplit("<", 1)[1] for p in listing.selected} == {"u32>", "u8>"}


@pytest.mark.parametrize("profile", util.PROFILES)
def test_pattern_matching_nothing_exits_6(profile, analyses, tmp_path):
    build = analyses.get(profile, "handwritten")
    out = tmp_path / "wl.json"
    proc = util.run_asyncbpf("list", build.binary, "nothing::here::*", "-o", out)
    assert proc.returncode == util.EXIT_NO_MATCH, util.describe(proc)
    assert "nothing::here::*" in proc.stderr and "matches no future" in proc.stderr, proc.stderr
    assert not os.listdir(tmp_path), "a whitelist was written although nothing matched"


# ---------------------------------------------------------------------------
# Expansion along the await graph
# ---------------------------------------------------------------------------


def expansion_cases():
    """Seeds, from the sources: for --expand down every task entry that awaits the
    crate's own futures, for --expand up every async fn that awaits none of them; in
    debug all of them, in release (same graph, many polls inlined) the one with the
    largest closure per crate. Generic fns are left out (a glob needs their <..>)."""
    down, up = [], []
    for crate in util.CRATES:
        fs = util.fixture_source(crate)
        names = fs.names()
        fns = set(fs.async_fns) - {"sum_twice"}
        d = [s for s in sorted(fs.task_entries & fns) if len(marker_closure(fs, [s]) & names) > 1]
        u = [s for s in sorted(fns) if not (set(fs.graph().get(s, ())) & names - {s})
             and any(s in m.awaited for m in fs.markers if m.caller != s)]
        down += [("debug", crate, s) for s in d]
        up += [("debug", crate, s) for s in u]
        if d:
            down.append(("release", crate, max(d, key=lambda s: (len(marker_closure(fs, [s]) & names), s))))
        if u:
            up.append(("release", crate, max(u, key=lambda s: (len(marker_closure(fs, [s], True) & names), s))))
    return down, up


DOWN_CASES, UP_CASES = expansion_cases()


def expected_selection(model, fs, crate, reach):
    """Paths of the crate's futures answering to the reached names; every reached name
    of the crate's own futures must have one."""
    mine = fixture_futures(model, crate)
    missing = sorted(n for n in reach & fs.names() if not mine.get(n))
    return {p for n in reach for p in mine.get(n, ())}, missing


@pytest.mark.parametrize("profile,crate,seed", DOWN_CASES, ids=[f"{p}-{c}-{s}" for p, c, s in DOWN_CASES])
def test_expand_down_reaches_the_leaves(profile, crate, seed, analyses, tmp_path):
    build = analyses.get(profile, crate)
    model, fs = build.model, util.fixture_source(crate)
    listing = run_list(build, tmp_path, f"{crate}::{seed}", "--expand", "down")
    reach = marker_closure(fs, [seed])
    want, missing = expected_selection(model, fs, crate, reach)
    got = {p for p in listing.selected if util.strip_generics(p).startswith(crate + "::")}
    assert not missing, f"the marker graph from {seed} reaches {missing}, which are not futures of the model"
    assert got == want, (f"--expand down from {seed}: marker graph reaches {sorted(reach)}\n"
                         f"extra: {sorted(got - want)}\nmissing: {sorted(want - got)}")
    # and what those futures await, as the model resolved it, is selected too
    ids = {f["id"] for f in model.futures if f["path"] in got}
    targets = {model.futures[e["to"]]["path"] for e in model.edges if e["from"] in ids and e["to"] is not None}
    assert targets <= listing.selected, sorted(targets - listing.selected)


@pytest.mark.parametrize("profile,crate,seed", UP_CASES, ids=[f"{p}-{c}-{s}" for p, c, s in UP_CASES])
def test_expand_up_reaches_the_task_roots(profile, crate, seed, analyses, tmp_path):
    build = analyses.get(profile, crate)
    model, fs = build.model, util.fixture_source(crate)
    listing = run_list(build, tmp_path, f"{crate}::{seed}", "--expand", "up")
    reach = marker_closure(fs, [seed], reverse=True)
    want, missing = expected_selection(model, fs, crate, reach)
    got = {p for p in listing.selected if util.strip_generics(p).startswith(crate + "::")}
    assert not missing, f"the marker graph from {seed} reaches {missing}, which are not futures of the model"
    assert got == want, (f"--expand up from {seed}: marker graph reaches {sorted(reach)}\n"
                         f"extra: {sorted(got - want)}\nmissing: {sorted(want - got)}")
    assert reach & fs.task_entries, f"no task entry awaits {seed} transitively (fixture changed?)"
    roots = {f["path"] for f in model.futures if f["root"]}
    assert roots & listing.selected, f"--expand up from {seed} reached no root"


@pytest.mark.parametrize("profile", util.PROFILES)
def test_expand_both_is_the_union_of_up_and_down(profile, analyses, tmp_path):
    """docs/selection.md: both = up ∪ down, each from the original seeds (not down-of-up)."""
    build = analyses.get(profile, "tokio_ct")
    up = run_list(build, tmp_path, "tokio_ct::load", "--expand", "up", name="up.json").selected
    down = run_list(build, tmp_path, "tokio_ct::load", "--expand", "down", name="down.json").selected
    both = run_list(build, tmp_path, "tokio_ct::load", "--expand", "both", name="both.json").selected
    assert both == up | down
    # load's sibling `store` is awaited by load's caller `handle`, but is not up or down of load
    store = fixture_futures(build.model, "tokio_ct")["store"]
    assert not store & both


# ---------------------------------------------------------------------------
# Whitelist files
# ---------------------------------------------------------------------------


def test_whitelist_round_trip(build, tmp_path):
    first = run_list(build, tmp_path, name="wl.json")
    again = run_list(build, tmp_path, "--whitelist", tmp_path / "wl.json", name="wl2.json")
    assert again.selected == first.selected
    assert again.rows == first.rows
    assert again.whitelist["futures"] == first.whitelist["futures"]


@pytest.mark.parametrize("profile", util.PROFILES)
def test_whitelist_edits_change_the_selection(profile, analyses, tmp_path):
    build = analyses.get(profile, "handwritten")
    mine = fixture_futures(build.model, "handwritten")
    base = run_list(build, tmp_path, "handwritten::leaf", "--all-crates", name="wl.json")
    assert base.selected == mine["leaf"]
    doc = json.loads((tmp_path / "wl.json").read_text())
    entries = {e["future"]: e for e in doc["futures"]}
    assert mine["middle"] <= set(entries), "with --all-crates every future is a candidate"
    for p in mine["leaf"]:
        entries[p]["trace"] = False
    for p in mine["middle"]:
        entries[p]["trace"] = True
    (tmp_path / "edited.json").write_text(json.dumps(doc, indent=1))
    edited = run_list(build, tmp_path, "--whitelist", tmp_path / "edited.json", name="wl2.json")
    assert edited.selected == mine["middle"]
    assert edited.printed <= {"handwritten::middle"}


MALFORMED = {
    "not_json": b"this is not json\n",
    "trailing_garbage": b'{"asyncbpf_whitelist": 1, "futures": []} x',
    "top_level_array": b"[1, 2]",
    "no_version": b'{"futures": []}',
    "version_2": b'{"asyncbpf_whitelist": 2, "futures": []}',
    "version_string": b'{"asyncbpf_whitelist": "1", "futures": []}',
    "futures_missing": b'{"asyncbpf_whitelist": 1}',
    "futures_object": b'{"asyncbpf_whitelist": 1, "futures": {}}',
    "trace_string": b'{"asyncbpf_whitelist": 1, "futures": [{"future": "x", "trace": "yes"}]}',
    "future_number": b'{"asyncbpf_whitelist": 1, "futures": [{"future": 7, "trace": true}]}',
    "entry_not_object": b'{"asyncbpf_whitelist": 1, "futures": ["handwritten::leaf"]}',
    "nul_byte": b'{"asyncbpf_whitelist": 1, "futures": []}\x00',
    "deep_nesting": b'{"asyncbpf_whitelist": 1, "futures": [], "x": ' + b"[" * 5000 + b"]" * 5000 + b"}",
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_malformed_whitelist_exits_5(kind, analyses, tmp_path):
    build = analyses.get("debug", "handwritten")
    wl = tmp_path / f"{kind}.json"
    wl.write_bytes(MALFORMED[kind])
    out = tmp_path / "out.json"
    proc = util.run_asyncbpf("list", build.binary, "--whitelist", wl, "-o", out)
    assert proc.returncode == util.EXIT_BAD_INPUT, util.describe(proc)
    assert str(wl) in proc.stderr or wl.name in proc.stderr, proc.stderr
    assert not out.exists()


def test_whitelist_that_is_a_directory_exits_5(analyses, tmp_path):
    """A directory is not a usable whitelist: BAD_INPUT (5), as for `analyze DIR`;
    exit status 1 means 'a bug or out of memory' (docs/exit-codes.md)."""
    build = analyses.get("debug", "handwritten")
    proc = util.run_asyncbpf("list", build.binary, "--whitelist", tmp_path)
    assert "Is a directory" in proc.stderr or "directory" in proc.stderr, proc.stderr
    assert proc.returncode == util.EXIT_BAD_INPUT, util.describe(proc)


def test_missing_whitelist_exits_3(analyses, tmp_path):
    build = analyses.get("debug", "handwritten")
    proc = util.run_asyncbpf("list", build.binary, "--whitelist", tmp_path / "nope.json")
    assert proc.returncode == util.EXIT_NO_INPUT, util.describe(proc)
    assert "nope.json" in proc.stderr


# ---------------------------------------------------------------------------
# A running process
# ---------------------------------------------------------------------------


@pytest.fixture
def running_demo():
    binary = util.fixture_binary("debug", "demo")
    util.require_file(binary, "the fixture", "run 'make fixtures'")
    proc = subprocess.Popen([str(binary), "--seconds", "10"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Popen returns once exec succeeded: /proc/PID/exe is the fixture
        deadline = time.monotonic() + 10
        while os.path.realpath(f"/proc/{proc.pid}/exe") != os.path.realpath(binary):
            assert proc.poll() is None and time.monotonic() < deadline, "demo did not start"
            time.sleep(0.05)
        yield proc
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)


def test_pid_gives_the_file_based_results(running_demo, analyses, tmp_path):
    build = analyses.get("debug", "demo")
    pid = running_demo.pid
    json_path = tmp_path / "pid.json"
    proc = util.run_asyncbpf("analyze", "-p", pid, "--json", json_path)
    assert proc.returncode == util.EXIT_OK, util.describe(proc)
    by_pid = util.load_json(json_path)
    by_file = build.model.doc

    def futures(doc):
        return sorted((f["path"], f["kind"], f["file"], f["line"], f["root"]) for f in doc["futures"])

    def polls(doc):
        return sorted((p["linkage_name"] or "", p["addr"], p["file_offset"], len(p["exits"])) for p in doc["polls"])

    def edges(doc):
        fs = doc["futures"]
        return sorted((fs[e["from"]]["path"], e["await_index"], fs[e["to"]]["path"] if e["to"] is not None else "")
                      for e in doc["edges"])

    assert futures(by_pid) == futures(by_file)
    assert polls(by_pid) == polls(by_file)
    assert edges(by_pid) == edges(by_file)
    assert by_pid["binary"]["build_id"] == by_file["binary"]["build_id"]
    assert os.path.realpath(by_pid["binary"]["path"]) == os.path.realpath(build.binary)

    listed = util.run_asyncbpf("list", "-p", pid, "-o", tmp_path / "pid-wl.json")
    assert listed.returncode == util.EXIT_OK, util.describe(listed)
    from_file = util.run_asyncbpf("list", build.binary, "-o", tmp_path / "file-wl.json")
    assert from_file.returncode == util.EXIT_OK, util.describe(from_file)
    assert Listing(listed, tmp_path / "pid-wl.json").rows == Listing(from_file, tmp_path / "file-wl.json").rows
    assert Listing(listed, tmp_path / "pid-wl.json").selected == Listing(from_file, tmp_path / "file-wl.json").selected
