# SPDX-License-Identifier: GPL-2.0
"""asyncbpf stacks -p PID (docs/stacks.md): every task of a live process, where it is
parked, read from outside. Ground truth: `handwritten park N` parks N tasks for good
(two of every three in park_task -> park_middle -> park_leaf -> Parked, the others in
park_shallow -> Parked) and prints its own counts; every await line is the source's
`// AWAIT caller->callee` marker. The target must run on afterwards (it exits when
its stdin closes)."""
import json
import os
import subprocess
import sys
import time

import pytest

import util

PARK = {"park_task": ["park_task", "park_middle", "park_leaf"], "park_shallow": ["park_shallow"]}


def marker_line(caller):
    fs = util.fixture_source("handwritten")
    marks = fs.markers_of(caller)
    assert len(marks) == 1, (caller, marks)
    return marks[0].line


class Parked:
    """A running `handwritten park N`; stop() closes its stdin and checks it exits 0."""

    def __init__(self, profile, n, user=None):
        cmd = [str(util.fixture_binary(profile, "handwritten")), "park", str(n)]
        if user:
            cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.counts = json.loads(self.proc.stdout.readline())
        assert self.counts["tasks"] == n, self.counts

    def state(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]

    def threads_state(self):
        return util.threads_state(self.proc.pid)

    def stop(self):
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0


@pytest.fixture
def parked_factory():
    made = []

    def make(profile, n, user=None):
        p = Parked(profile, n, user)
        made.append(p)
        return p

    yield make
    for p in made:
        if p.proc.poll() is None:
            p.proc.kill()
            p.proc.wait()


def stacks(tmp_path, pid, *extra, name="stacks.json"):
    out = tmp_path / name
    proc = util.run_asyncbpf("stacks", "-p", pid, "--json", out, *extra, timeout=120)
    doc = json.loads(out.read_text()) if out.exists() else None
    return proc, doc


def check_tasks(doc, counts):
    """Every task's full stack and lines against the markers; the counts against the
    fixture's."""
    assert doc["schema"] == "asyncbpf-stacks/1"
    seen = {"park_task": 0, "park_shallow": 0}
    for t in doc["tasks"]:
        frames = t["frames"]
        root = frames[0]["future"].split("::")[-1]
        assert root in PARK, t
        chain = PARK[root]
        assert [f["future"] for f in frames] == [f"handwritten::{c}" for c in chain] + ["handwritten::Parked"], t
        for f, caller in zip(frames, chain):
            assert f["state"] == "suspended" and f["line"] == marker_line(caller), (f, caller)
            assert f["file"].endswith("src/main.rs"), f
        assert frames[-1]["state"] == "opaque" and frames[-1]["line"] is None, frames[-1]
        assert t["state"] == "suspended" and not t["cut"], t
        seen[root] += 1
    assert seen == {"park_task": counts["park_task"], "park_shallow": counts["park_shallow"]}, seen


@pytest.mark.parametrize("profile", ["debug", "release"])
def test_every_parked_task_and_its_lines(tmp_path, parked_factory, profile):
    target = parked_factory(profile, 30)
    proc, doc = stacks(tmp_path, target.proc.pid)
    assert proc.returncode == 0, util.describe(proc)
    check_tasks(doc, target.counts)
    assert doc["paused"] and doc["paused_us"] <= doc["read_us"], doc
    # the text view: the two groups, biggest first, with the counts
    text = proc.stdout
    assert text.startswith(f"30 tasks in pid {target.proc.pid}"), text
    first, second = text.index(f"{target.counts['park_task']} tasks parked at"), \
        text.index(f"{target.counts['park_shallow']} tasks parked at")
    assert first < second, text
    # it runs on: no thread left stopped, and it exits when asked
    assert all(s not in ("t", "T") for s in target.threads_state()), target.threads_state()
    target.stop()


def test_no_pause_reads_the_same(tmp_path, parked_factory):
    target = parked_factory("debug", 9)
    proc, doc = stacks(tmp_path, target.proc.pid, "--no-pause")
    assert proc.returncode == 0, util.describe(proc)
    assert not doc["paused"] and "not paused: the snapshot may be torn" in proc.stdout, proc.stdout
    check_tasks(doc, target.counts)
    target.stop()


def test_patterns_select_tasks(tmp_path, parked_factory):
    target = parked_factory("debug", 9)
    proc, doc = stacks(tmp_path, target.proc.pid, "handwritten::park_shallow")
    assert proc.returncode == 0, util.describe(proc)
    assert len(doc["tasks"]) == target.counts["park_shallow"], doc
    assert all(t["frames"][0]["future"] == "handwritten::park_shallow" for t in doc["tasks"])
    proc, _ = stacks(tmp_path, target.proc.pid, "no::such::*", name="none.json")
    assert proc.returncode == util.EXIT_NO_MATCH and "no task found" in proc.stderr, util.describe(proc)
    target.stop()


def test_ten_thousand_tasks(tmp_path, parked_factory):
    target = parked_factory("release", 10000)
    proc, doc = stacks(tmp_path, target.proc.pid)
    assert proc.returncode == 0, util.describe(proc)
    check_tasks(doc, target.counts)
    target.stop()


def test_bad_pid_and_a_process_without_tasks(tmp_path):
    proc, doc = stacks(tmp_path, 999999999)
    assert proc.returncode in (util.EXIT_USAGE, util.EXIT_NO_INPUT), util.describe(proc)
    assert doc is None
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        proc, doc = stacks(tmp_path, sleeper.pid)
        assert proc.returncode in (util.EXIT_NO_MATCH, util.EXIT_BAD_INPUT), util.describe(proc)
        assert "no `dyn Future` vtable" in proc.stderr or "DWARF" in proc.stderr, proc.stderr
        assert doc is None
        assert sleeper.poll() is None  # untouched
    finally:
        sleeper.kill()
        sleeper.wait()


def test_without_ptrace_access_says_so(tmp_path, parked_factory):
    """The target is root's; asyncbpf runs as nobody: no access, a clear message,
    exit 4, the target untouched."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run asyncbpf as another user")
    target = parked_factory("debug", 3)
    out = tmp_path / "x.json"
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           str(util.ASYNCBPF), "stacks", "-p", str(target.proc.pid)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == util.EXIT_NO_PERMISSION, util.describe(proc)
    assert f"pid {target.proc.pid}" in proc.stderr or str(target.proc.pid) in proc.stderr, proc.stderr
    assert not out.exists()
    assert all(s not in ("t", "T") for s in target.threads_state())
    target.stop()


def test_own_process_without_root(tmp_path, parked_factory):
    """Reading another process needs ptrace access, not BPF: a user reads their own."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run both as another user")
    target = parked_factory("debug", 6, user=65534)
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           str(util.ASYNCBPF), "stacks", "-p", str(target.proc.pid)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, util.describe(proc)
    assert proc.stdout.startswith(f"6 tasks in pid {target.proc.pid}"), proc.stdout
    target.stop()


SEIZE_AND_DIE = r"""
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_SEIZE, PTRACE_INTERRUPT = 0x4206, 0x4207
for tid in sorted(os.listdir(f"/proc/{sys.argv[1]}/task")):
    if libc.ptrace(PTRACE_SEIZE, int(tid), None, None) or libc.ptrace(PTRACE_INTERRUPT, int(tid), None, None):
        sys.exit(3)
    os.waitpid(int(tid), 0x40000000)  # __WALL
print("stopped", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_reader_leaves_the_target_running(tmp_path, parked_factory):
    """What stacks relies on if it is killed (SIGKILL) while the target is stopped:
    threads seized and interrupted the way pause__stop does are restarted by the
    kernel when their tracer dies."""
    target = parked_factory("debug", 3)
    proc = subprocess.run([sys.executable, "-c", SEIZE_AND_DIE, str(target.proc.pid)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == -9 and "stopped" in proc.stdout, util.describe(proc)
    for _ in range(100):
        if all(s not in ("t", "T") for s in target.threads_state()):
            break
        time.sleep(0.05)
    assert all(s not in ("t", "T") for s in target.threads_state()), target.threads_state()
    target.stop()
