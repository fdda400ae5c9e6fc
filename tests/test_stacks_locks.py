# SPDX-License-Identifier: GPL-2.0
"""asyncbpf stacks: locks held and awaited, and deadlocks (docs/stacks.md, "Resources
and deadlocks"). Ground truth: `tokio_mt locks` parks three ring_tasks that each hold
their own tokio Mutex and wait for the next one's (a deadlock of three), hold_task
holding a Mutex at a `pending()` with wait_task queued on it (contention, no cycle),
and stale_task parked after dropping its guard (rustc keeps the guard's slot: the
lock is free); it prints each lock's address itself. Every line is the source's
`// AWAIT caller->callee` marker. `tokio_mt park`'s dead_a/dead_b are the deadlock of
two of test_stacks_runtimes.py."""
import json
import subprocess

import pytest

import util


class Locks:
    """A running `tokio_mt locks`: its own line; stop() closes stdin, checks exit 0."""

    def __init__(self, profile):
        self.proc = subprocess.Popen([str(util.fixture_binary(profile, "tokio_mt")), "locks"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.truth = json.loads(self.proc.stdout.readline())
        assert self.truth["mode"] == "locks" and self.truth["tasks"] == 6, self.truth

    def stop(self):
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0


@pytest.fixture
def locks():
    made = []

    def make(profile):
        made.append(Locks(profile))
        return made[-1]

    yield make
    for t in made:
        if t.proc.poll() is None:
            t.proc.kill()
            t.proc.wait()


def stacks(tmp_path, pid, *extra):
    out, folded = tmp_path / "s.json", tmp_path / "s.folded"
    proc = util.run_asyncbpf("stacks", "-p", pid, "--json", out, "--folded", folded, *extra,
                             timeout=180)
    assert proc.returncode == util.EXIT_OK, util.describe(proc)
    return proc, json.loads(out.read_text()), folded.read_text()


def line_of(caller, callee, nth=-1):
    marks = [m for m in util.fixture_source("tokio_mt").markers_of(caller) if callee in m.callees]
    assert marks, (caller, callee)
    return marks[nth].line


def root(doc, task_id):
    t = [t for t in doc["tasks"] if t["id"] == task_id]
    assert len(t) == 1, task_id
    return t[0]["frames"][0]["future"]


@pytest.mark.parametrize("profile", ["debug", "release"])
def test_locks_holders_waiters_and_the_deadlock(tmp_path, locks, profile):
    target = locks(profile)
    truth = target.truth
    addr = {int(a, 16): name for name, a in
            [("ring0", truth["ring"][0]), ("ring1", truth["ring"][1]), ("ring2", truth["ring"][2]),
             ("held", truth["held"]), ("stale", truth["stale"])]}
    proc, doc, folded = stacks(tmp_path, target.proc.pid)
    res = {r["id"]: r for r in doc["resources"]}
    by_addr = {r["addr"]: r for r in doc["resources"] if r["addr"] is not None}
    ring_parked = line_of("ring_task", "lock")  # the second lock(): where each waits

    # the deadlock: the three ring_tasks, each queued on the next one's lock and
    # holding its own (its guard g kept across that very await)
    assert len(doc["deadlocks"]) == 1, doc["deadlocks"]
    edges = doc["deadlocks"][0]["edges"]
    assert len(edges) == 3, edges
    assert sorted(res[e["resource"]]["addr"] for e in edges) == sorted(
        int(a, 16) for a in truth["ring"]), (edges, truth)
    for k, e in enumerate(edges):
        assert root(doc, e["task"]) == "tokio_mt::ring_task", e
        assert e["queued"] and e["line"] == ring_parked and e["file"].endswith("tokio_mt/src/main.rs"), e
        nxt = edges[(k + 1) % 3]
        assert e["held_by"] == nxt["task"] != e["task"], edges
        h = e["holder"]
        assert h["task"] == nxt["task"] and h["guard"] == "g" and h["held"], h
        assert h["frame"] == "tokio_mt::ring_task" and h["line"] == ring_parked, h
        assert res[e["resource"]]["locked"] and res[e["resource"]]["kind"] == "exclusive", res[e["resource"]]
    # a ring_task holds its own lock and waits for the next one's: never the same one
    held_by_task = {}
    for t in doc["tasks"]:
        for h in t["holds"]:
            if h["held"]:
                held_by_task.setdefault(t["id"], []).append(res[h["resource"]]["addr"])
    for e in edges:
        assert held_by_task[e["task"]] != [res[e["resource"]]["addr"]], (e, held_by_task)

    # contention without a cycle: hold_task holds `held`, wait_task is queued on it
    held = by_addr[int(truth["held"], 16)]
    assert held["locked"] and held["kind"] == "exclusive", held
    holders = [h for h in held["holders"] if h["held"]]
    assert len(holders) == 1 and root(doc, holders[0]["task"]) == "tokio_mt::hold_task", held
    assert holders[0]["line"] == line_of("hold_task", "pending") and holders[0]["guard"] == "g", holders
    assert len(held["waiters"]) == 1 and root(doc, held["waiters"][0]["task"]) == "tokio_mt::wait_task", held
    assert held["waiters"][0]["queued"] and held["waiters"][0]["line"] == line_of("wait_task", "lock"), held
    in_cycles = {e["task"] for d in doc["deadlocks"] for e in d["edges"]}
    assert holders[0]["task"] not in in_cycles and held["waiters"][0]["task"] not in in_cycles

    # stale_task dropped its guard before parking: the slot may be kept, but the lock
    # is free, so nothing is said to hold it
    stale = [t for t in doc["tasks"] if t["frames"][0]["future"] == "tokio_mt::stale_task"]
    assert len(stale) == 1 and not any(h["held"] for h in stale[0]["holds"]), stale
    for r in doc["resources"]:
        if r["addr"] == int(truth["stale"], 16):
            assert r["locked"] is False and not [h for h in r["holders"] if h["held"]], r
    # every lock named is one of the fixture's
    assert all(r["addr"] in addr for r in doc["resources"] if r["addr"] is not None), (doc["resources"], addr)

    # the text and the folded view say the same
    assert proc.stdout.count("DEADLOCK: 3 tasks wait for each other's locks") == 1, proc.stdout
    assert f"tokio::sync::mutex::Mutex<u64> at {truth['held']}: locked, 1 waiting" in proc.stdout, proc.stdout
    dl = [line for line in folded.splitlines() if line.startswith("[deadlock];")]
    assert len(dl) == 1 and dl[0].count(f"tokio_mt::ring_task (src/main.rs:{ring_parked})") == 3, folded
    assert dl[0].endswith(" 1"), dl
    target.stop()


def test_watch_says_how_long_the_deadlock_stands(tmp_path, locks):
    target = locks("debug")
    proc, doc, _ = stacks(tmp_path, target.proc.pid, "--watch", "0.3", "--count", "3")
    assert proc.stdout.count("DEADLOCK: 3 tasks") == 3, proc.stdout
    last = proc.stdout.split("DEADLOCK: 3 tasks")[-1].splitlines()[0]
    assert "unchanged for >= " in last, last
    assert len(doc["deadlocks"]) == 1 and doc["deadlocks"][0]["unchanged_s"] >= 0.5, doc["deadlocks"]
    target.stop()


@pytest.mark.parametrize("profile", ["debug", "release"])
@pytest.mark.parametrize("crate", ["tokio_mt", "tokio_ct"])
def test_park_deadlock_of_two(tmp_path, parked, crate, profile):
    """dead_a holds m1 (g1) and waits for m2 at its last lock(); dead_b the other way."""
    target = parked(profile, crate, 2)
    _, doc, _ = stacks(tmp_path, target.proc.pid)
    src = util.fixture_source(crate)
    assert len(doc["deadlocks"]) == 1, doc["deadlocks"]
    edges = doc["deadlocks"][0]["edges"]
    names = {root(doc, e["task"]): e for e in edges}
    assert sorted(names) == [f"{crate}::dead_a", f"{crate}::dead_b"], edges
    for name, guard in (("dead_a", "g1"), ("dead_b", "g2")):
        e = names[f"{crate}::{name}"]
        last = src.markers_of(name)[-1].line
        assert e["queued"] and e["line"] == last, e
        other_name = "dead_b" if name == "dead_a" else "dead_a"
        other = names[f"{crate}::{other_name}"]
        assert e["held_by"] == other["task"], e
        # the holder of what this one waits for keeps its guard across its own last await
        h = e["holder"]
        assert h["guard"] == ("g2" if name == "dead_a" else "g1") and h["held"], h
        assert h["line"] == src.markers_of(other_name)[-1].line, h
    # and each holds its own guard (g1 / g2) on the lock the other waits for
    for name, guard in (("dead_a", "g1"), ("dead_b", "g2")):
        mine = [t for t in doc["tasks"] if t["frames"][0]["future"] == f"{crate}::{name}"][0]
        assert [h["guard"] for h in mine["holds"] if h["held"]] == [guard], mine["holds"]
    target.stop()
