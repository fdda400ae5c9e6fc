# SPDX-License-Identifier: GPL-2.0
"""asyncbpf stacks: locks held and awaited, and deadlocks (docs/stacks.md, "Resources
and deadlocks"). Ground truth: `tokio_mt locks` parks three ring_tasks that each hold
their own tokio Mutex and wait for the next one's (a deadlock of three), hold_task
holding a Mutex at a `pending()` with wait_task queued on it (contention, no cycle),
stale_task parked after dropping its guard (rustc keeps the guard's slot: the lock
is free), and join_a holding a Mutex while it awaits join_b's JoinHandle, join_b
waiting for that Mutex (a deadlock through a join); it prints each lock's address
itself. Every line is the source's
`// AWAIT caller->callee` marker. `tokio_mt park`'s dead_a/dead_b are the deadlock of
two of test_stacks_runtimes.py. tokio_mt's `locks`, `rwlocks` and `semaphores` run on
its multi-thread runtime and, given `ct`, on a current-thread one (tokio's other
scheduler: another task header, another schedule vtable)."""
import json
import subprocess
import time

import pytest

import util


class Locks:
    """A running `CRATE locks`: its own line; stop() closes stdin, checks exit 0.
    tokio_mt's modes run on a multi-thread runtime, or with `ct` on a current-thread
    one (flavor), which their line says."""

    def __init__(self, profile, crate="tokio_mt", mode="locks", flavor=None):
        self.proc = subprocess.Popen([str(util.fixture_binary(profile, crate)), mode] + (["ct"] if flavor == "ct" else []),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.truth = json.loads(self.proc.stdout.readline())
        if crate == "tokio_mt":
            assert self.truth["runtime"] == ("current_thread" if flavor == "ct" else "multi_thread"), self.truth
        tasks = {("tokio_mt", "locks"): 8, ("smol_app", "locks"): 2, ("async_std_app", "locks"): 2,
                 ("tokio_mt", "rwlocks"): 9, ("tokio_mt", "semaphores"): 25, ("smol_app", "semaphores"): 25,
                 ("async_std_app", "semaphores"): 25, ("tokio_ct", "futlocks"): 4}[(crate, mode)]
        assert self.truth["mode"] == mode and self.truth["tasks"] == tasks, self.truth

    def stop(self):
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0


@pytest.fixture
def locks():
    made = []

    def make(profile, crate="tokio_mt", mode="locks", flavor=None):
        made.append(Locks(profile, crate, mode, flavor))
        return made[-1]

    yield make
    for t in made:
        if t.proc.poll() is None:
            t.proc.kill()
            t.proc.wait()


def busy(doc):
    """Tasks running or scheduled in a snapshot (tokio's blocking-pool threads aside)."""
    return [t["id"] for t in doc["tasks"] if (t.get("runtime_state") or {}).get("running") or
            (t.get("runtime_state") or {}).get("scheduled")
            if not t["frames"] or not t["frames"][0]["future"].startswith("tokio::runtime::blocking::task::BlockingTask")]


def stacks(tmp_path, pid, *extra):
    """One snapshot; without extra options, one with every task parked: the fixtures
    print their line 100 ms after each task reached its last await, and on a loaded
    machine a task may still be on its way there, or a busy one (busy_holder's timer)
    be caught running, which makes `stacks` prove no count (docs/stacks.md): such a
    snapshot is taken again, up to 10 times."""
    out, folded = tmp_path / "s.json", tmp_path / "s.folded"
    for attempt in range(10):
        proc = util.run_asyncbpf("stacks", "-p", pid, "--json", out, "--folded", folded, *extra,
                                 timeout=180)
        assert proc.returncode == util.EXIT_OK, util.describe(proc)
        doc = json.loads(out.read_text())
        if extra or not busy(doc):
            break
        time.sleep(0.3)
    return proc, doc, folded.read_text()


def line_of(caller, callee, nth=-1, crate="tokio_mt"):
    marks = [m for m in util.fixture_source(crate).markers_of(caller) if callee in m.callees]
    assert marks, (caller, callee)
    return marks[nth].line


def root(doc, task_id, crate="tokio_mt"):
    """The task's outermost future of the fixture's own (past the runtime's wrappers)."""
    t = [t for t in doc["tasks"] if t["id"] == task_id]
    assert len(t) == 1, task_id
    own = [f["future"] for f in t[0]["frames"] if f["future"].startswith(crate + "::")]
    return own[0] if own else t[0]["frames"][0]["future"]


@pytest.mark.parametrize("profile", ["debug", "release"])
@pytest.mark.parametrize("flavor", ["mt", "ct"])
def test_locks_holders_waiters_and_the_deadlock(tmp_path, locks, flavor, profile):
    target = locks(profile, flavor=flavor)
    truth = target.truth
    addr = {int(a, 16): name for name, a in
            [("ring0", truth["ring"][0]), ("ring1", truth["ring"][1]), ("ring2", truth["ring"][2]),
             ("held", truth["held"]), ("stale", truth["stale"]), ("joined", truth["joined"])]}
    proc, doc, folded = stacks(tmp_path, target.proc.pid)
    res = {r["id"]: r for r in doc["resources"]}
    by_addr = {r["addr"]: r for r in doc["resources"] if r["addr"] is not None}
    ring_parked = line_of("ring_task", "lock")  # the second lock(): where each waits

    # two deadlocks: the ring of three and the join
    assert sorted(len(d["edges"]) for d in doc["deadlocks"]) == [2, 3], doc["deadlocks"]
    # the ring: the three ring_tasks, each queued on the next one's lock and holding
    # its own (its guard g kept across that very await)
    edges = [d for d in doc["deadlocks"] if len(d["edges"]) == 3][0]["edges"]
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

    # the join: join_a holds `joined` (g, at its JoinHandle await) and waits for join_b
    # to finish; join_b is queued on `joined`
    join = [d for d in doc["deadlocks"] if len(d["edges"]) == 2][0]["edges"]
    by_root = {root(doc, e["task"]): e for e in join}
    assert sorted(by_root) == ["tokio_mt::join_a", "tokio_mt::join_b"], join
    a, b = by_root["tokio_mt::join_a"], by_root["tokio_mt::join_b"]
    assert a["joins"] == b["task"] and a["resource"] is None and a["held_by"] is None, a
    assert a["line"] == line_of("join_a", "JoinHandle"), a
    assert res[b["resource"]]["addr"] == int(truth["joined"], 16) and res[b["resource"]]["locked"], b
    assert b["held_by"] == a["task"] and b["line"] == line_of("join_b", "lock"), b
    assert b["holder"]["guard"] == "g" and b["holder"]["line"] == line_of("join_a", "JoinHandle"), b
    assert f"waits for task {b['task']} tokio_mt::join_b to finish (joins it)" in proc.stdout, proc.stdout

    # contention without a cycle: hold_task holds `held`, wait_task is queued on it
    held = by_addr[int(truth["held"], 16)]
    assert held["locked"] and held["kind"] == "exclusive", held
    holders = [h for h in held["holders"] if h["held"]]
    assert len(holders) == 1 and root(doc, holders[0]["task"]) == "tokio_mt::hold_task", held
    assert holders[0]["line"] == line_of("hold_task", "Pending") and holders[0]["guard"] == "g", holders
    assert len(held["waiters"]) == 1 and root(doc, held["waiters"][0]["task"]) == "tokio_mt::wait_task", held
    assert held["waiters"][0]["queued"] and held["waiters"][0]["line"] == line_of("wait_task", "lock"), held
    in_cycles = {e["task"] for d in doc["deadlocks"] for e in d["edges"]}
    assert len(in_cycles) == 5, doc["deadlocks"]
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
    assert proc.stdout.count("DEADLOCK: 3 tasks wait for each other") == 1, proc.stdout
    assert proc.stdout.count("DEADLOCK: 2 tasks wait for each other") == 1, proc.stdout
    assert f"tokio::sync::mutex::Mutex<u64> at {truth['held']}: locked, 1 waiting" in proc.stdout, proc.stdout
    # folded: each deadlocked task a line of its own (weight 1), ending with what it
    # waits for and who holds it; every task still weighed once
    weights = [int(line.rsplit(" ", 1)[1]) for line in folded.splitlines()]
    assert sum(weights) == len(doc["tasks"]), folded
    dl = [line for line in folded.splitlines() if ";[deadlock: waits for " in line]
    assert len(dl) == 5, folded
    assert [x for x in dl if x.endswith(f";[deadlock: waits for task {b['task']} to finish] 1")], dl
    for e in edges:
        lock = res[e["resource"]]
        want = f"tokio 1.x;tokio_mt::ring_task (src/main.rs:{ring_parked});"
        line = [x for x in dl if x.endswith(f"at {lock['addr']:#x} held by task {e['held_by']}] 1")]
        assert len(line) == 1 and want in line[0], (line, dl, e)
    assert proc.stdout.count("DEADLOCK (task ") == 5, proc.stdout
    target.stop()


@pytest.mark.parametrize("profile", ["debug", "release"])
@pytest.mark.parametrize("flavor", ["mt", "ct"])
def test_rwlock_write_guards_and_a_deadlock_of_three(tmp_path, locks, flavor, profile):
    """`tokio_mt rwlocks` (it prints each lock's address): wr_a holds l1 to write and
    waits for the Mutex m, mx_b holds m and waits to write l2, wr_c holds l2 to write
    and waits to read l1: one deadlock of three, each edge's task, line, lock and
    holder's guard the source's. rw_hold holds `held` to write, rw_read queued to read
    it: its holder, no cycle. `shared`: wr_stale's write guard was dropped (its slot
    kept, pointing at it), two rd_holds read it, wr_wait is queued to write and given
    the permits the readers left: no permit available, yet no write guard holds it,
    and stacks says none does."""
    target = locks(profile, mode="rwlocks", flavor=flavor)
    truth = target.truth
    proc, doc, folded = stacks(tmp_path, target.proc.pid)
    res = {r["id"]: r for r in doc["resources"]}
    by_addr = {r["addr"]: r for r in doc["resources"] if r["addr"] is not None}
    lock = {name: by_addr.get(int(truth[name], 16)) for name in ("l1", "l2", "m", "held", "shared")}
    assert all(lock.values()), (lock, doc["resources"])

    assert len(doc["deadlocks"]) == 1, doc["deadlocks"]
    edges = {root(doc, e["task"]): e for e in doc["deadlocks"][0]["edges"]}
    assert sorted(edges) == ["tokio_mt::mx_b", "tokio_mt::wr_a", "tokio_mt::wr_c"], edges
    # (waiter, what it waits at, the lock, its holder, the holder's guard)
    want = (("wr_a", "lock", "m", "mx_b", "g"), ("mx_b", "write", "l2", "wr_c", "w"),
            ("wr_c", "read", "l1", "wr_a", "w"))
    waits_at = {waiter: at for waiter, at, _, _, _ in want}
    for waiter, at, name, holder, guard in want:
        e = edges[f"tokio_mt::{waiter}"]
        assert e["queued"] and e["line"] == line_of(waiter, at) and res[e["resource"]]["id"] == lock[name]["id"], e
        assert e["held_by"] == edges[f"tokio_mt::{holder}"]["task"], (e, edges)
        h = e["holder"]
        assert h["guard"] == guard and h["held"] and h["frame"] == f"tokio_mt::{holder}", h
        # the guard is kept across the holder's own wait in the cycle
        assert h["line"] == line_of(holder, waits_at[holder]), h
        assert lock[name]["locked"] and lock[name]["kind"] == "exclusive", lock[name]
    assert lock["l1"]["type"].startswith("tokio::sync::rwlock::RwLock<"), lock["l1"]
    assert proc.stdout.count("DEADLOCK: 3 tasks wait for each other") == 1, proc.stdout

    # contention: rw_hold holds `held` (w), rw_read queued to read it, no cycle
    held = lock["held"]
    holders = [h for h in held["holders"] if h["held"]]
    assert len(holders) == 1 and root(doc, holders[0]["task"]) == "tokio_mt::rw_hold", held
    assert holders[0]["guard"] == "w" and holders[0]["line"] == line_of("rw_hold", "Pending"), holders
    assert [root(doc, w["task"]) for w in held["waiters"]] == ["tokio_mt::rw_read"], held
    assert held["waiters"][0]["queued"] and held["waiters"][0]["line"] == line_of("rw_read", "read"), held
    in_cycles = {e["task"] for e in edges.values()}
    assert holders[0]["task"] not in in_cycles and held["waiters"][0]["task"] not in in_cycles

    # shared: taken in part by the queued writer; wr_stale's kept slot holds nothing,
    # nor do the readers' guards (a shared lock's state names no reader)
    shared = lock["shared"]
    assert shared["locked"] and not [h for h in shared["holders"] if h["held"]], shared
    slots = sorted(root(doc, h["task"]) for h in shared["holders"])
    assert slots == ["tokio_mt::rd_hold", "tokio_mt::rd_hold", "tokio_mt::wr_stale"], shared
    assert [root(doc, w["task"]) for w in shared["waiters"]] == ["tokio_mt::wr_wait"], shared
    assert shared["waiters"][0]["line"] == line_of("wr_wait", "write"), shared
    # every lock named is one of the fixture's
    mine = {int(truth[n], 16) for n in ("l1", "l2", "m", "held", "shared")}
    assert all(r["addr"] in mine for r in doc["resources"] if r["addr"] is not None), doc["resources"]
    target.stop()


@pytest.mark.parametrize("profile", ["debug", "release"])
@pytest.mark.parametrize("crate,flavor", [("tokio_mt", "mt"), ("tokio_mt", "ct"), ("smol_app", None),
                                          ("async_std_app", None)])
def test_semaphore_and_read_guard_cycles(tmp_path, locks, crate, flavor, profile):
    """`CRATE semaphores` (it prints each lock's address and the permits left), on
    tokio and on async-lock (smol's and async-std's locks):
    sm_a keeps the only permit of `sem` and waits for the Mutex m, sm_b keeps m and
    waits to write the RwLock l, sm_c keeps l to write and waits for a permit of
    `sem`: a cycle of three through a Mutex, a RwLock and a Semaphore, reported as a
    possible deadlock (a Semaphore does not say who holds its permits: nothing in
    memory proves sm_a's slot is not stale), with each edge's task, line and lock.
    rd_x reads `read` and waits for m2, mx_y keeps m2 and waits to write `read`: the
    RwLock's permits add up (tokio: its `mr`; async-lock: its count of readers), so
    the read guard is held and the deadlock proven. `pair` has two permits, pm_idle
    keeps one at a pending(), pm_cyc the other waiting for m3, pm_w keeps m3 waiting
    for `pair`: pm_idle waits for no lock, so nothing there is called deadlocked.
    ch_a keeps the only sender of a channel and waits for the Mutex m4, ch_b keeps
    m4 and waits for a message on that channel: a possible deadlock (the channel
    counts one sender, ch_a's slot, and no weak one; but a stale slot and a sender
    out of sight would count alike). cx_a and cx_b do the same on a
    channel main keeps another sender of: not a deadlock. busy_holder keeps m6 while
    it keeps working (a 1 ms timer in a loop) with 10 busy_waiters queued on it:
    contention, not a deadlock. behind_a keeps m7 and waits for m2 (mx_y's),
    behind_b waits for m7: stuck behind the read cycle, listed under it, in none."""
    target = locks(profile, crate, mode="semaphores", flavor=flavor)
    truth = target.truth
    assert truth["sem_available"] == 0 and truth["pair_available"] == 0, truth
    proc, doc, folded = stacks(tmp_path, target.proc.pid)
    res = {r["id"]: r for r in doc["resources"]}
    by_addr = {r["addr"]: r for r in doc["resources"] if r["addr"] is not None}
    names = ("sem", "m", "l", "read", "m2", "pair", "m3", "m4", "m5", "m6", "m7")
    lock = {name: by_addr.get(int(truth[name], 16)) for name in names}
    assert all(lock.values()), (lock, doc["resources"])
    tokio = crate == "tokio_mt"
    sem_type = "tokio::sync::semaphore::Semaphore" if tokio else "async_lock::semaphore::Semaphore"
    assert lock["sem"]["type"] == sem_type, lock["sem"]
    rw_type = "tokio::sync::rwlock::RwLock<" if tokio else "async_lock::rwlock::RwLock<"
    assert lock["read"]["type"].startswith(rw_type), lock["read"]

    cycles = {}
    for d in doc["deadlocks"]:
        cycles[tuple(sorted(root(doc, e["task"], crate) for e in d["edges"]))] = d
    sem_cycle = (f"{crate}::sm_a", f"{crate}::sm_b", f"{crate}::sm_c")
    read_cycle = (f"{crate}::mx_y", f"{crate}::rd_x")
    chan_cycle = (f"{crate}::ch_a", f"{crate}::ch_b")
    assert sorted(cycles) == sorted([sem_cycle, read_cycle, chan_cycle]), doc["deadlocks"]
    # (waiter, what it waits at, the lock, its holder, the holder's guard, proven)
    want = {sem_cycle: (("sm_a", "lock", "m", "sm_b", "g", True), ("sm_b", "write", "l", "sm_c", "w", True),
                        ("sm_c", "acquire", "sem", "sm_a", "p", False)),
            read_cycle: (("rd_x", "lock", "m2", "mx_y", "g", True), ("mx_y", "write", "read", "rd_x", "r", True)),
            chan_cycle: (("ch_a", "lock", "m4", "ch_b", "g", True),
                         ("ch_b", "recv" if tokio else "Recv", None, "ch_a", "tx", False))}
    for key, edges_want in want.items():
        d = cycles[key]
        edges = {root(doc, e["task"], crate): e for e in d["edges"]}
        waits_at = {waiter: at for waiter, at, *_ in edges_want}
        assert d["proven"] == all(p for *_, p in edges_want), d
        for waiter, at, name, holder, guard, proven in edges_want:
            e = edges[f"{crate}::{waiter}"]
            assert e["queued"] and e["line"] == line_of(waiter, at, crate=crate), e
            if name is None:  # the channel: its senders are all ch_a's
                chan = res[e["resource"]]
                assert e["what"] == "channel" and chan["kind"] == "sender" and chan["senders"] == 1, chan
                assert chan["senders_add_up"] and [root(doc, h["task"], crate) for h in chan["holders"]] == \
                    [f"{crate}::ch_a"], chan
            else:
                assert res[e["resource"]]["id"] == lock[name]["id"], (e, lock[name])
            assert e["held_by"] == edges[f"{crate}::{holder}"]["task"] and e["proven"] == proven, e
            h = e["holder"]
            held = proven or name is None  # a channel's senders, counted, are its slots'
            assert h["guard"] == guard and h["held"] == held and h["frame"] == f"{crate}::{holder}", h
            assert h["line"] == line_of(holder, waits_at[holder], crate=crate), h
    assert lock["sem"]["locked"] and lock["sem"]["kind"] == "permits", lock["sem"]
    assert not lock["sem"]["permits_add_up"] and lock["sem"]["total_permits"] is None, lock["sem"]
    assert lock["sem"]["available_permits"] == truth["sem_available"], lock["sem"]
    # the read side: its permits add up to the lock's own count (tokio), its readers (async-lock)
    assert lock["read"]["permits_add_up"], lock["read"]
    assert (lock["read"]["total_permits"] > 1) if tokio else (lock["read"]["total_permits"] is None), lock["read"]
    assert proc.stdout.count("POSSIBLE DEADLOCK: 3 tasks wait for each other") == 1, proc.stdout
    assert proc.stdout.count("POSSIBLE DEADLOCK: 2 tasks wait for each other") == 1, proc.stdout
    assert proc.stdout.count("\nDEADLOCK: 2 tasks wait for each other") == 1, proc.stdout
    assert proc.stdout.count(f"not proven: {sem_type} at " + truth["sem"]) == 1, proc.stdout
    assert folded.count(";[possible deadlock: waits for ") == 5, folded
    assert folded.count(";[deadlock: waits for ") == 2, folded
    assert folded.count(";[possible deadlock: waits for a message on ") == 1, folded

    # pair: both permits' slots listed, neither proven; pm_w waits for it, no cycle
    pair = lock["pair"]
    slots = sorted(root(doc, h["task"], crate) for h in pair["holders"])
    assert slots == [f"{crate}::pm_cyc", f"{crate}::pm_idle"] and not any(h["held"] for h in pair["holders"]), pair
    assert [root(doc, w["task"], crate) for w in pair["waiters"]] == [f"{crate}::pm_w"], pair
    assert pair["waiters"][0]["line"] == line_of("pm_w", "acquire", crate=crate), pair
    in_cycles = {root(doc, e["task"], crate) for d in doc["deadlocks"] for e in d["edges"]}
    assert not in_cycles & {f"{crate}::pm_idle", f"{crate}::pm_cyc", f"{crate}::pm_w"}, in_cycles
    # cx_b's channel: main keeps another sender; not counted, no edge
    assert not in_cycles & {f"{crate}::cx_a", f"{crate}::cx_b"}, in_cycles
    cx_b = [t for t in doc["tasks"] if root(doc, t["id"], crate) == f"{crate}::cx_b"]
    assert len(cx_b) == 1 and cx_b[0]["waits_on"]["what"] == "channel", cx_b
    cx_chan = res[cx_b[0]["waits_on"]["resource"]]
    assert cx_chan["senders"] == 2 and not cx_chan["senders_add_up"], cx_chan
    # m6: its holder working, its 10 waiters queued, none deadlocked
    m6 = lock["m6"]
    assert [root(doc, h["task"], crate) for h in m6["holders"] if h["held"]] == [f"{crate}::busy_holder"], m6
    waiters = [w for w in m6["waiters"] if w["queued"]]
    assert len(waiters) == 10 == truth["busy_waiter"], m6
    assert all(root(doc, w["task"], crate) == f"{crate}::busy_waiter" and w["line"] == line_of("busy_waiter", "lock",
                                                                                                crate=crate)
               for w in waiters), m6
    assert not in_cycles & {f"{crate}::busy_holder", f"{crate}::busy_waiter"}, in_cycles
    # behind the read cycle, in none: behind_a queued on m2 (mx_y's), behind_b on m7
    # (behind_a's); listed under that deadlock only, each with its lock and line
    assert not in_cycles & {f"{crate}::behind_a", f"{crate}::behind_b"}, in_cycles
    read_dl = cycles[read_cycle]
    behind = {root(doc, b["task"], crate): b for b in read_dl["behind"]}
    assert sorted(behind) == [f"{crate}::behind_a", f"{crate}::behind_b"], read_dl["behind"]
    assert all(not d["behind"] for d in doc["deadlocks"] if d is not read_dl), doc["deadlocks"]
    mx_y = {e["task"] for e in read_dl["edges"] if root(doc, e["task"], crate) == f"{crate}::mx_y"}
    ba, bb = behind[f"{crate}::behind_a"], behind[f"{crate}::behind_b"]
    assert res[ba["resource"]]["id"] == lock["m2"]["id"] and ba["waits_for"] in mx_y, (ba, mx_y)
    assert ba["queued"] and ba["line"] == line_of("behind_a", "lock", crate=crate), ba
    assert res[bb["resource"]]["id"] == lock["m7"]["id"] and bb["waits_for"] == ba["task"], (bb, ba)
    assert bb["queued"] and bb["line"] == line_of("behind_b", "lock", crate=crate), bb
    assert proc.stdout.count("2 more tasks wait behind it (stuck while it stands):") == 1, proc.stdout
    # and each one's group says so, pointing at the deadlock's first task
    first = read_dl["edges"][0]["task"]
    assert proc.stdout.count(f"behind the DEADLOCK of task {first} (stuck while it stands)") == 2, proc.stdout
    mine = {int(truth[n], 16) for n in names}
    assert all(r["addr"] in mine for r in doc["resources"] if r["addr"] is not None and r["what"] == "lock"), \
        doc["resources"]
    target.stop()


def test_no_pause_says_a_deadlock_wants_confirming(tmp_path, locks):
    target = locks("release")
    proc, doc, _ = stacks(tmp_path, target.proc.pid, "--no-pause")
    assert not doc["paused"] and len(doc["deadlocks"]) == 2, doc["deadlocks"]
    assert proc.stdout.count("read with --no-pause") == 2, proc.stdout
    target.stop()


def test_watch_says_how_long_the_deadlock_stands(tmp_path, locks):
    target = locks("debug")
    proc, doc, _ = stacks(tmp_path, target.proc.pid, "--watch", "0.3", "--count", "3")
    assert proc.stdout.count("DEADLOCK: 3 tasks") == 3, proc.stdout
    last = proc.stdout.split("DEADLOCK: 3 tasks")[-1].splitlines()[0]
    assert "unchanged for >= " in last, last
    assert len(doc["deadlocks"]) == 2 and all(d["unchanged_s"] >= 0.5 for d in doc["deadlocks"]), \
        doc["deadlocks"]
    target.stop()


@pytest.mark.parametrize("profile", ["debug", "release"])
@pytest.mark.parametrize("crate", ["tokio_mt", "tokio_ct", "async_std_app", "smol_app"])
def test_park_deadlock_of_two(tmp_path, parked, crate, profile):
    """dead_a holds m1 (g1) and waits for m2 at its last lock(); dead_b the other way:
    tokio's Mutex (its batch semaphore) and async-lock's (async-std's, smol's)."""
    target = parked(profile, crate, 2)
    proc, doc, _ = stacks(tmp_path, target.proc.pid)
    family = "tokio" if crate.startswith("tokio") else "async-lock"
    src = util.fixture_source(crate)
    assert len(doc["deadlocks"]) == 1, doc["deadlocks"]
    edges = doc["deadlocks"][0]["edges"]
    names = {root(doc, e["task"], crate): e for e in edges}
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
        lock = [r for r in doc["resources"] if r["id"] == e["resource"]][0]
        assert lock["family"] == family and lock["locked"] and lock["kind"] == "exclusive", lock
    # and each holds its own guard (g1 / g2) on the lock the other waits for
    for name, guard in (("dead_a", "g1"), ("dead_b", "g2")):
        mine = [t for t in doc["tasks"] if root(doc, t["id"], crate) == f"{crate}::{name}"][0]
        assert [h["guard"] for h in mine["holds"] if h["held"]] == [guard], mine["holds"]
    assert proc.stdout.count("DEADLOCK: 2 tasks wait for each other") == 1, proc.stdout
    target.stop()


@pytest.mark.parametrize("profile", ["debug", "release"])
@pytest.mark.parametrize("crate,handle", [("smol_app", "Task"), ("async_std_app", "JoinHandle")])
def test_join_deadlock_on_async_task(tmp_path, locks, crate, handle, profile):
    """CRATE locks: join_a holds an async-lock Mutex and awaits join_b's handle
    (smol: async-task's Task; async-std: its JoinHandle, which holds one), join_b waits
    for that Mutex."""
    target = locks(profile, crate)
    proc, doc, folded = stacks(tmp_path, target.proc.pid)
    assert len(doc["deadlocks"]) == 1, doc["deadlocks"]
    edges = doc["deadlocks"][0]["edges"]
    by_root = {root(doc, e["task"], crate): e for e in edges}
    assert sorted(by_root) == [f"{crate}::join_a", f"{crate}::join_b"], edges
    a, b = by_root[f"{crate}::join_a"], by_root[f"{crate}::join_b"]
    assert a["joins"] == b["task"] and a["resource"] is None, a
    assert a["line"] == line_of("join_a", handle, crate=crate), a
    lock = [r for r in doc["resources"] if r["id"] == b["resource"]][0]
    assert lock["addr"] == int(target.truth["joined"], 16) and lock["locked"], lock
    assert lock["family"] == "async-lock" and lock["type"] == "async_lock::mutex::Mutex<u64>", lock
    assert b["held_by"] == a["task"] and b["line"] == line_of("join_b", "lock", crate=crate), b
    assert b["holder"]["guard"] == "g" and b["holder"]["line"] == a["line"], b
    assert f"waits for task {b['task']} {crate}::join_b to finish (joins it)" in proc.stdout, proc.stdout
    target.stop()


@pytest.mark.parametrize("profile", ["debug", "release"])
@pytest.mark.parametrize("crate", ["tokio_mt", "tokio_ct", "async_std_app", "smol_app"])
def test_park_waits_on_channels(tmp_path, parked, crate, profile):
    """chan_task waits on its channel's receive; the N many_tasks all on one other
    thing nobody signals (tokio: a Notify; async-std, smol: a channel), each at its
    fn's last marked await; neither has a holder or a deadlock."""
    target = parked(profile, crate, 3)
    proc, doc, _ = stacks(tmp_path, target.proc.pid)
    src = util.fixture_source(crate)
    waits = {}
    for t in doc["tasks"]:
        name = root(doc, t["id"], crate)
        if name in (f"{crate}::chan_task", f"{crate}::many_task"):
            waits.setdefault(name.split("::")[-1], []).append(t["waits_on"])
    assert len(waits["chan_task"]) == 1 and len(waits["many_task"]) == 3, waits
    res = {r["id"]: r for r in doc["resources"]}
    chan = waits["chan_task"][0]
    assert chan["what"] == "channel" and chan["line"] == src.markers_of("chan_task")[-1].line, chan
    many_what = "notify" if crate.startswith("tokio") else "channel"
    assert all(w["what"] == many_what and w["line"] == src.markers_of("many_leaf")[-1].line
               for w in waits["many_task"]), waits
    assert len({w["resource"] for w in waits["many_task"]}) == 1, waits
    many = res[waits["many_task"][0]["resource"]]
    assert many["what"] == many_what and len(many["waiters"]) == 3, many
    assert res[chan["resource"]]["id"] != many["id"] and not res[chan["resource"]]["holders"], res
    assert "Channels and notifications parked tasks wait on" in proc.stdout, proc.stdout
    target.stop()


@pytest.mark.parametrize("profile", ["debug", "release"])
@pytest.mark.parametrize("crate,guard,family", [("tokio_mt", "tokio::sync::mutex::MutexGuard<u64>", "tokio"),
                                                ("smol_app", "async_lock::mutex::MutexGuard<u64>", "async-lock")])
def test_analyzer_guards_per_await(tmp_path, crate, guard, family, profile):
    """`analyze --json`: the guards each await keeps (states[].holds), against the
    source: dead_a keeps g1 across its second and third awaits, not its first (where
    it takes it); dead_b keeps g2 the same way; the way to the lock is known."""
    out = tmp_path / "m.json"
    proc = util.run_asyncbpf("analyze", util.fixture_binary(profile, crate), "--json", out, "-q")
    assert proc.returncode == util.EXIT_OK, util.describe(proc)
    model = json.loads(out.read_text())
    src = util.fixture_source(crate)
    for fn, name in (("dead_a", "g1"), ("dead_b", "g2")):
        fut = [f for f in model["futures"] if f["name"] == f"{crate}::{fn}"]
        assert len(fut) == 1, fn
        lines = [m.line for m in src.markers_of(fn)]
        held = {s["line"]: [h["name"] for h in s["holds"]] for s in fut[0]["states"] if s["kind"] == "suspend"}
        assert held == {lines[0]: [], lines[1]: [name], lines[2]: [name]}, (fn, held, lines)
        for s in fut[0]["states"]:
            for h in s["holds"]:
                assert h["type"] == guard and h["lock"] == "exclusive" and h["family"] == family, h
                assert h["steps"] and h["steps"][0]["deref"], h
    # the futures a task waits in: the lock's, with its way and state word
    waits = {f["wait"]["what"] for f in model["futures"] if f["wait"]}
    assert "lock" in waits and "join" in waits, waits
    lock = [f for f in model["futures"] if f["wait"] and f["wait"]["what"] == "lock"]
    assert all(f["wait"]["state_offset"] is not None for f in lock), lock
    # a Mutex's waits are its family's (async-lock's RwLock and Semaphore have their own)
    mutex = [f for f in lock if "::mutex::" in f["name"] or "batch_semaphore" in f["name"]]
    assert mutex and all(f["wait"]["family"] == family for f in mutex), lock
    assert all(f["wait"]["family"] in (family, "async-lock-rwlock", "async-lock-semaphore") for f in lock), lock


@pytest.mark.parametrize("profile", ["debug", "release"])
def test_futures_util_mutex(tmp_path, locks, profile):
    """`tokio_ct futlocks`: futures-util's Mutex (futures::lock), which any runtime
    can use: fut_a keeps m1 (g) and waits for m2 at its last lock(), fut_b the other
    way: a proven deadlock (bit 0 of each Mutex's state says locked, one guard slot
    points at each); fut_hold keeps `held` at a pending() with fut_wait queued on it:
    its holder and waiter, no cycle. Addresses: the fixture's own printout."""
    crate = "tokio_ct"
    target = locks(profile, crate, mode="futlocks")
    truth = target.truth
    proc, doc, _ = stacks(tmp_path, target.proc.pid)
    by_addr = {r["addr"]: r for r in doc["resources"] if r["addr"] is not None}
    lock = {n: by_addr.get(int(truth[n], 16)) for n in ("m1", "m2", "held")}
    assert all(lock.values()), (lock, doc["resources"])
    for x in lock.values():
        assert x["type"] == "futures_util::lock::mutex::Mutex<u64>" and x["family"] == "futures-util", x
        assert x["locked"] and x["kind"] == "exclusive", x
    assert len(doc["deadlocks"]) == 1 and doc["deadlocks"][0]["proven"], doc["deadlocks"]
    edges = {root(doc, e["task"], crate): e for e in doc["deadlocks"][0]["edges"]}
    assert sorted(edges) == [f"{crate}::fut_a", f"{crate}::fut_b"], edges
    for me, other, waits in (("fut_a", "fut_b", "m2"), ("fut_b", "fut_a", "m1")):
        e = edges[f"{crate}::{me}"]
        last = line_of(me, "MutexLockFuture", crate=crate)
        assert e["queued"] and e["line"] == last and e["resource"] == lock[waits]["id"], e
        assert e["held_by"] == edges[f"{crate}::{other}"]["task"] and e["proven"], e
        h = e["holder"]
        assert h["guard"] == "g" and h["held"] and h["line"] == line_of(other, "MutexLockFuture", crate=crate), h
    held = lock["held"]
    holders = [h for h in held["holders"] if h["held"]]
    assert [root(doc, h["task"], crate) for h in holders] == [f"{crate}::fut_hold"], held
    assert holders[0]["guard"] == "g" and holders[0]["line"] == line_of("fut_hold", "Pending", crate=crate), holders
    assert [root(doc, w["task"], crate) for w in held["waiters"]] == [f"{crate}::fut_wait"], held
    assert held["waiters"][0]["line"] == line_of("fut_wait", "MutexLockFuture", crate=crate), held
    assert proc.stdout.count("\nDEADLOCK: 2 tasks wait for each other") == 1, proc.stdout
    target.stop()
