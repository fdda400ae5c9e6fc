# SPDX-License-Identifier: GPL-2.0
"""asyncbpf stacks on the real runtimes (docs/stacks.md, "Runtimes"): tokio 1.x
(multi-thread and current-thread) and async-task 4.x (async-std, smol), debug and
release. Ground truth: `CRATE park N` parks its tasks for good and prints its own
counts (a deadlock of two tasks on two mutexes, a channel receive, a timer, nested
async fns three deep, a lost waker, N more); every await line is the source's
`// AWAIT caller->callee` marker, and a task is parked at its fns' last marked
await. The target must run on afterwards (it exits when its stdin closes)."""
import json
import subprocess
import time

import pytest

import util

CRATES = ["tokio_mt", "tokio_ct", "async_std_app", "smol_app"]
RUNTIME = {"tokio_mt": "tokio", "tokio_ct": "tokio", "async_std_app": "async-task",
           "smol_app": "async-task"}
# each parked task's own async fns, outermost first
CHAINS = {
    "dead_a": ["dead_a"],
    "dead_b": ["dead_b"],
    "chan_task": ["chan_task"],
    "timer_task": ["timer_task"],
    "nest_task": ["nest_task", "nest_middle", "nest_leaf"],
    "lost_task": ["lost_task", "lost_leaf"],
    "many_task": ["many_task", "many_leaf"],
}


def parked_line(crate, caller):
    marks = util.fixture_source(crate).markers_of(caller)
    assert marks, (crate, caller)
    return marks[-1].line


def stacks(tmp_path, pid, *extra):
    out, folded = tmp_path / "stacks.json", tmp_path / "stacks.folded"
    proc = util.run_asyncbpf("stacks", "-p", pid, "--json", out, "--folded", folded, *extra,
                             timeout=180)
    doc = json.loads(out.read_text()) if out.exists() else None
    return proc, doc, folded.read_text() if folded.exists() else None


def check_tasks(target, doc):
    """Every task of the fixture's own, its whole chain of own frames and their lines
    against the markers, its runtime and its waker; the counts against its own."""
    crate = target.crate
    own = f"{crate}::"
    seen = {k: 0 for k in CHAINS}
    assert doc["schema"] == "asyncbpf-stacks/1" and doc["paused"], doc
    for t in doc["tasks"]:
        frames = t["frames"]
        mine = [f for f in frames if f["future"].startswith(own)]
        if not mine:  # the runtime's own tasks (tokio's blocking workers)
            assert all(f["crate_class"] in ("runtime", "std") for f in frames), t
            continue
        assert t["runtime"] == RUNTIME[crate], t
        root = mine[0]["future"][len(own):]
        assert root in CHAINS, t
        chain = CHAINS[root]
        suspended = [f for f in mine if f["state"] == "suspended"]
        assert [f["future"] for f in suspended] == [own + c for c in chain], (root, frames)
        for f, caller in zip(suspended, chain):
            assert f["line"] == parked_line(crate, caller), (f, caller)
            assert f["file"].endswith("src/main.rs"), f
        # below the last fn of the fixture: what it awaits, a frame the model names
        last = frames.index(suspended[-1])
        assert last + 1 < len(frames) and frames[last + 1]["state"] != "bad_state", frames
        if root == "lost_task":
            assert frames[last + 1]["future"] == own + "Lost", frames
        assert t["state"] == "parked" and not t["cut"], t
        # only tokio counts the references that tell a lost waker
        assert t["no_waker"] == (root == "lost_task" and RUNTIME[crate] == "tokio"), t
        seen[root] += 1
    assert seen == {k: target.counts[k] for k in CHAINS}, (seen, target.counts)


@pytest.mark.parametrize("profile", ["debug", "release"])
@pytest.mark.parametrize("crate", CRATES)
def test_every_task_of_the_runtime(tmp_path, parked, crate, profile):
    target = parked(profile, crate, 3)
    proc, doc, folded = stacks(tmp_path, target.proc.pid)
    assert proc.returncode == 0, util.describe(proc)
    check_tasks(target, doc)
    # the text: biggest group first (the N many_tasks), NO WAKER said for tokio
    text = proc.stdout
    assert text.splitlines()[2].startswith("3 tasks parked at"), text
    assert ("NO WAKER" in text) == (RUNTIME[crate] == "tokio"), text
    # tokio_mt's runtime has 2 workers (its Builder says so), tokio_ct none
    assert doc["tokio_workers"] == {"tokio_mt": 2}.get(crate, 0), doc["tokio_workers"]
    # folded: one line per group, weighted by its tasks; together every task
    weights = [int(line.rsplit(" ", 1)[1]) for line in folded.splitlines()]
    assert sum(weights) == len(doc["tasks"]), folded
    many = [line for line in folded.splitlines() if f"{crate}::many_leaf (" in line]
    assert len(many) == 1 and many[0].endswith(" 3"), folded
    target.stop()


def test_watch_marks_unchanged_tasks(tmp_path, parked):
    target = parked("debug", "tokio_ct", 2)
    t0 = time.monotonic()
    proc, doc, _ = stacks(tmp_path, target.proc.pid, "--watch", "0.3", "--count", "3")
    assert proc.returncode == 0, util.describe(proc)
    assert time.monotonic() - t0 >= 0.6
    assert proc.stdout.count(" tasks in pid ") == 3, proc.stdout
    # nothing moves in a parked program: every group of the last two is unchanged
    last = proc.stdout.split(f" tasks in pid {target.proc.pid}")[-1]
    groups = [line for line in last.splitlines() if " parked at" in line]
    assert groups and all("unchanged for >= " in g for g in groups), last
    check_tasks(target, doc)
    assert all(t["unchanged_s"] >= 0.5 for t in doc["tasks"]), doc["tasks"]
    target.stop()


@pytest.mark.parametrize("crate", ["tokio_mt", "smol_app"])
def test_ten_thousand_runtime_tasks(tmp_path, parked, crate):
    target = parked("release", crate, 10000)
    proc, doc, _ = stacks(tmp_path, target.proc.pid)
    assert proc.returncode == 0, util.describe(proc)
    check_tasks(target, doc)
    target.stop()


def test_usage_errors():
    for args in (["--watch", "0"], ["--count", "2"], ["--watch", "x"], ["--watch", "1", "--count", "0"]):
        proc = util.run_asyncbpf("stacks", "-p", "1", *args)
        assert proc.returncode == util.EXIT_USAGE, util.describe(proc)
        assert "stacks:" in proc.stderr, proc.stderr


def relative_relocs(binary):
    """readelf's R_X86_64_RELATIVE relocations: {where: addend}."""
    out = util.tool("readelf", "-rW", str(binary))
    relocs = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[2] == "R_X86_64_RELATIVE":
            relocs[int(parts[0], 16)] = int(parts[3], 16)
    return relocs


@pytest.mark.parametrize("profile", ["debug", "release"])
@pytest.mark.parametrize("crate", CRATES)
def test_task_types_against_readelf(tmp_path, crate, profile):
    """Every async fn the fixture spawns has a task type whose vtable holds, at the
    runtime's function slot, the address of that function: readelf's relocations say
    the loader writes it there."""
    binary = util.fixture_binary(profile, crate)
    out = tmp_path / "model.json"
    proc = util.run_asyncbpf("analyze", binary, "--json", out)
    assert proc.returncode == 0, util.describe(proc)
    doc = json.loads(out.read_text())
    assert not util.schema_errors(doc)
    layout = doc["runtimes"][RUNTIME[crate]]
    assert layout is not None, doc["runtimes"]
    relocs = relative_relocs(binary)
    roots = set()
    for t in doc["task_types"]:
        if t["vtable"] is None or t["future"] is None:
            continue
        assert t["runtime"] == RUNTIME[crate], t
        assert relocs.get(t["vtable"] + layout["vtable_fn"]) == t["fn_addr"], t
        path = doc["futures"][t["future"]]["path"]
        for root in CHAINS:
            if f"{crate}::{root}::{{async_fn_env#0}}" in path:
                roots.add(root)
    assert roots == set(CHAINS), roots


@pytest.mark.parametrize("profile", ["debug", "release"])
def test_symbols_only_lists_tasks_by_type(tmp_path, profile):
    """Without DWARF the layouts and await points are unknown: tokio's tasks are
    listed by their future's type (found from raw::poll's calls) and their state,
    and stacks says what is missing; NO WAKER still works (the state word)."""
    crate = "tokio_ct"
    binary = tmp_path / crate
    util.tool("objcopy", "--strip-debug", str(util.fixture_binary(profile, crate)), str(binary))
    proc = subprocess.Popen([str(binary), "park", "2"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        counts = json.loads(proc.stdout.readline())
        res = util.run_asyncbpf("stacks", "-p", proc.pid, "--json", tmp_path / "s.json")
        assert res.returncode == 0, util.describe(res)
        assert "symbols but no DWARF" in res.stderr and "not where they wait" in res.stderr, res.stderr
        doc = json.loads((tmp_path / "s.json").read_text())
        assert len(doc["tasks"]) == counts["tasks"], (doc["tasks"], counts)
        names = {}
        for t in doc["tasks"]:
            assert t["runtime"] == "tokio" and t["state"] == "parked", t
            assert len(t["frames"]) == 1 and t["frames"][0]["state"] == "type_only", t
            names[t["frames"][0]["future"]] = names.get(t["frames"][0]["future"], 0) + 1
        named = 0
        for root in CHAINS:
            n = names.get(f"{crate}::{root}::{{{{closure}}}}", 0)
            # a poll the optimizer inlined into tokio's harness cannot be named
            assert n in (0, counts[root]), (root, names)
            named += n
        unnamed = [k for k in names if k.startswith("tokio task (no DWARF")]
        assert named + sum(names[k] for k in unnamed) == counts["tasks"], names
        if profile == "debug":
            assert not unnamed, names
        lost = [t for t in doc["tasks"] if t["no_waker"]]
        assert len(lost) == 1 and lost[0]["frames"][0]["future"] in (
            f"{crate}::lost_task::{{{{closure}}}}", *unnamed), lost
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_no_pause_on_a_busy_runtime(tmp_path):
    """Under --no-pause the task list changes while it is read (tokio_mt load keeps
    both workers spawning and finishing tasks): every read ends cleanly, says it may
    be torn, and never reports a state word or a frame it could not validate. The
    load outlasts the 5 reads (each ~1 s under the sanitizers, more on a loaded
    machine): a target gone mid-read is another test's business."""
    proc = subprocess.Popen([str(util.fixture_binary("debug", "tokio_mt")), "load", "12"],
                            stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        for i in range(5):
            out = tmp_path / f"s{i}.json"
            res = util.run_asyncbpf("stacks", "-p", proc.pid, "--no-pause", "--json", out)
            assert res.returncode in (0, util.EXIT_NO_MATCH), util.describe(res)
            if res.returncode == 0:
                assert "may be torn" in res.stdout
                doc = json.loads(out.read_text())
                for t in doc["tasks"]:
                    assert t["runtime"] == "tokio" and t["runtime_state"]["refs"] >= 1, t
                    assert all(f["state"] != "bad_state" or f is t["frames"][-1] for f in t["frames"]), t
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
