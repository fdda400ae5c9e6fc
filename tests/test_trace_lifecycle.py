# SPDX-License-Identifier: GPL-2.0
"""asyncbpf trace's lifecycle as root (docs/tracing.md): the target replacing its
image (exec), a target in a PID namespace, the probe limit, per-symbol plan
problems, and the privilege message. Facts come from the processes themselves (the
demo's own output, /proc, `unshare`), not from asyncbpf.
"""
import json
import os
import subprocess
import time

import pytest

import util
from util import uprobes  # noqa: F401  (the skip-with-reason fixture)

DEMO = util.fixture_binary("debug", "demo")
HANDWRITTEN = util.fixture_binary("debug", "handwritten")


def test_launch_mode_stops_at_exec(uprobes, tmp_path):  # noqa: F811
    """demo --then-exec: tracing stops when the target executes /bin/sleep, the
    outputs are complete, and asyncbpf answers with the command's (sleep's) status."""
    out = tmp_path / "run.pftrace"
    summary = tmp_path / "summary.json"
    start = time.monotonic()
    proc = util.run_asyncbpf("trace", "--deep", "-o", out, "--summary-json", summary, "--", DEMO, "--seconds", "1",
                             "--then-exec", "/bin/sh", "-c", "sleep 1; exit 7", timeout=60)
    assert proc.returncode == 7, proc.stderr
    assert "executed another program" in proc.stderr, proc.stderr
    assert "demo: done after" in proc.stdout
    totals = json.loads(summary.read_text())["totals"]
    assert totals["records"] > 0 and totals["dropped"] == 0
    assert out.stat().st_size > 0
    # it stopped at the exec, then waited for the shell: not before the demo's second
    assert time.monotonic() - start >= 2.0


def test_pid_mode_stops_at_exec(uprobes, tmp_path):  # noqa: F811
    # the exec comes 3 s in: well after asyncbpf has attached, even under ASan
    target = subprocess.Popen([str(DEMO), "--seconds", "3", "--then-exec", "/bin/sleep", "4"],
                              stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.3)
        start = time.monotonic()
        proc = util.run_asyncbpf("trace", "--deep", "-p", target.pid, "-o", tmp_path / "p.pftrace", timeout=60)
        stopped_after = time.monotonic() - start
        assert proc.returncode == 0, proc.stderr
        assert "executed another program" in proc.stderr, proc.stderr
        # the exec happens ~2.7 s after we start; the sleep lasts 4 s more: tracing
        # must stop at the exec, not at the sleep's exit
        assert 2.0 < stopped_after < 5.5, stopped_after
        assert target.poll() is None, "the target (now sleep) must still be running"
    finally:
        target.kill()
        target.wait()


def test_pid_namespace_is_reported(uprobes, tmp_path):  # noqa: F811
    util.need_tool("unshare")
    outer = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", str(DEMO), "--seconds", "3"],
                             stdout=subprocess.PIPE, text=True)
    try:
        inner = None
        for _ in range(50):
            children = subprocess.run(["pgrep", "-P", str(outer.pid)], capture_output=True, text=True).stdout.split()
            if children:
                inner = int(children[0])
                break
            time.sleep(0.05)
        assert inner, "unshare did not start the demo"
        nspid = [line for line in open(f"/proc/{inner}/status") if line.startswith("NSpid:")][0].split()[1:]
        assert len(nspid) == 2, nspid
        proc = util.run_asyncbpf("trace", "--deep", "-p", inner, "-d", "1", "-o", tmp_path / "ns.pftrace",
                                 "--records", tmp_path / "r.jsonl", timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert f"pid {inner} is pid {nspid[1]} in its PID namespace" in proc.stderr, proc.stderr
        records = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
        assert records and all(r["pid"] == inner for r in records), "records must carry host pids"
    finally:
        outer.kill()
        outer.wait()


def test_probe_limit(uprobes, tmp_path):  # noqa: F811
    proc = util.run_asyncbpf("trace", "--deep", "--max-probes", "3", "-o", tmp_path / "x.pftrace", "--", HANDWRITTEN)
    assert proc.returncode == 2, proc.stderr
    assert "more than the limit of 3" in proc.stderr and "--max-probes" in proc.stderr
    assert not (tmp_path / "x.pftrace").exists()
    # the command was never run (it would have printed its ground truth)
    assert '"mode"' not in proc.stdout


def test_privilege_message_names_settings(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to drop to another user")
    util.need_tool("setpriv")
    proc = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                           str(util.ASYNCBPF), "trace", "--deep", "-p", "1"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 4, proc.stderr
    assert "CAP_BPF" in proc.stderr and "CAP_PERFMON" in proc.stderr
    value = int(open("/proc/sys/kernel/unprivileged_bpf_disabled").read())
    if value > 0:
        assert f"unprivileged_bpf_disabled = {value}" in proc.stderr, proc.stderr
