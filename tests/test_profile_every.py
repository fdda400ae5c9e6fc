# SPDX-License-Identifier: GPL-2.0
"""asyncbpf profile --every S --pprof-dir DIR (docs/profile.md, "Continuous
profiling"): one pprof file per interval, named by the time, read by `go tool pprof`
(Debian's golang-go). Ground truth is the fixture's own source, as in
test_profile.py: in `hot` mode tokio_ct spins in hot_leaf, awaited by middle_hot,
awaited by the task hot_task. Retention (--keep) leaves the newest files; a full disk
(a small tmpfs) loses intervals loudly, sampling goes on, and the run exits 8."""
import os
import re
import shutil
import signal
import subprocess

import pytest

import util
import json

from profile_lib import hot_chain_from_source, hot_command, offcpu_counts
from prom_lib import Held, cleanup, read_until

NAME = re.compile(r"^asyncbpf-(\d{8}T\d{6}\.\d{3}Z)-(\d+)\.pb$")


@pytest.fixture(scope="module")
def sampling():
    if os.geteuid() != 0:
        pytest.skip("asyncbpf profile loads BPF programs: run the suite as root")
    util.require_file(util.ASYNCBPF, "the sanitizer build", "run 'make san'")


def pprof_files(d):
    names = sorted(n for n in os.listdir(d) if not n.startswith("."))
    for n in names:
        assert NAME.match(n), (n, names)  # ours only, no temporaries left behind
    return names


def go_pprof(*args):
    util.need_tool("go")
    proc = subprocess.run(["go", "tool", "pprof", *map(str, args)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HOME": os.environ.get("HOME", "/root"), "PPROF_TMPDIR": "/tmp"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def traces(text):
    """go tool pprof -traces: each trace's frames, leaf first."""
    out = []
    for block in text.split("-----------+")[1:]:
        frames = []
        for line in block.splitlines()[1:]:
            if "cpu_state:" in line or not line.strip() or line.startswith("-"):
                continue
            m = re.match(r"^\s+(?:[\d.]+\w*s\s+)?(.+?)\s*$", line)
            if m:
                frames.append(m.group(1))
        if frames:
            out.append(frames)
    return out


@pytest.mark.parametrize("profile", util.PROFILES)
def test_a_pprof_per_interval_that_go_pprof_reads(sampling, tmp_path, profile):
    chain = hot_chain_from_source("tokio_ct")
    d = tmp_path / "prof"
    proc = util.run_asyncbpf("profile", "-F", "199", "--every", "1", "--pprof-dir", d, "--",
                             *hot_command(profile, "tokio_ct", 3500), timeout=180)
    assert proc.returncode == 0, util.describe(proc)
    assert '"mode":"hot"' in proc.stdout, util.describe(proc)
    names = pprof_files(d)
    # 3.5 s of spinning, a file a second, and the last part when it exits
    assert 3 <= len(names) <= 6, (names, util.describe(proc))
    assert all(NAME.match(n).group(2) == NAME.match(names[0]).group(2) for n in names), names
    pid = NAME.match(names[0]).group(2)
    assert f"--every: pid {pid}: {len(names)} profiles written to {d}" in proc.stderr, util.describe(proc)
    # a full interval in the middle: its samples are under the fixture's chain
    middle = d / names[1]
    top = go_pprof("-top", middle)
    assert re.search(r"Duration: (0\.[89]\d*|1(\.\d+)?)s,", top), top
    assert "tokio_ct::hot_leaf" in top, top
    found = [t for t in traces(go_pprof("-traces", middle)) if "tokio_ct::hot_leaf" in t]
    assert found, top
    for t in found:  # leaf first: hot_leaf, then middle_hot, then hot_task
        # inlined frames (release) read "name (inline)"
        bare = [f.removesuffix(" (inline)") for f in t]
        names_in = [bare.index(f"tokio_ct::{fn}") for fn in reversed(chain)]
        assert names_in == sorted(names_in), t


def test_keep_leaves_the_newest(sampling, tmp_path):
    d = tmp_path / "prof"
    proc = util.run_asyncbpf("profile", "-F", "99", "--every", "1", "--pprof-dir", d, "--keep", "2", "--",
                             *hot_command("debug", "tokio_ct", 4500), timeout=180)
    assert proc.returncode == 0, util.describe(proc)
    m = re.search(r"--every: pid \d+: (\d+) profiles written to \S+, (\d+) removed", proc.stderr)
    assert m, util.describe(proc)
    written, removed = int(m.group(1)), int(m.group(2))
    names = pprof_files(d)
    assert len(names) == 2 and written >= 4 and removed == written - 2, (names, written, removed)
    # --keep-size: the newest whatever its size, older ones while the total fits
    d2 = tmp_path / "sized"
    proc = util.run_asyncbpf("profile", "-F", "99", "--every", "1", "--pprof-dir", d2, "--keep", "0",
                             "--keep-size", "4K", "--", *hot_command("debug", "tokio_ct", 3500), timeout=180)
    assert proc.returncode == 0, util.describe(proc)
    names = pprof_files(d2)
    sizes = [os.path.getsize(d2 / n) for n in names]
    assert names and (len(names) == 1 or sum(sizes) <= 4096), (names, sizes)


def test_a_full_disk_loses_intervals_loudly(sampling, tmp_path):
    d = tmp_path / "small"
    d.mkdir()
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(d)], capture_output=True, text=True)
    if mount.returncode:
        pytest.skip(f"cannot mount a small tmpfs here: {mount.stderr.strip()}")
    try:
        proc = util.run_asyncbpf("profile", "-F", "199", "--every", "1", "--pprof-dir", d, "--",
                                 *hot_command("debug", "tokio_ct", 4500), timeout=180)
        names = pprof_files(d)
    finally:
        subprocess.run(["umount", str(d)], check=False)
    assert proc.returncode == util.EXIT_OUTPUT, util.describe(proc)
    assert "profile is LOST" in proc.stderr and "the disk is full" in proc.stderr, util.describe(proc)
    assert re.search(r"\d+ intervals' profiles could NOT be written", proc.stderr), util.describe(proc)
    assert '"mode":"hot"' in proc.stdout, util.describe(proc)  # the target ran to its end
    assert 1 <= len(names) <= 2, names


def test_usage_and_bad_directories(sampling, tmp_path):
    binary = util.fixture_binary("debug", "tokio_ct")
    for args in (["--every", "1"], ["--pprof-dir", tmp_path], ["--every", "0.5", "--pprof-dir", tmp_path],
                 ["--every", "1", "--pprof-dir", tmp_path, "-o", tmp_path / "x.svg"],
                 ["--keep", "3"], ["--every", "1", "--pprof-dir", tmp_path, "--keep-size", "12"]):
        proc = util.run_asyncbpf("profile", *args, "--", binary, timeout=60)
        assert proc.returncode == util.EXIT_USAGE, util.describe(proc)
    f = tmp_path / "a-file"
    f.write_text("")
    proc = util.run_asyncbpf("profile", "--every", "1", "--pprof-dir", f, "--", binary, "hot", "100", timeout=60)
    assert proc.returncode == util.EXIT_OUTPUT and "--pprof-dir" in proc.stderr, util.describe(proc)
    assert "sampling pid" not in proc.stderr, util.describe(proc)


def total_of(text):
    m = re.search(r"Showing nodes accounting for ([\d.]+)(\w*), [\d.]+% of ([\d.]+)(\w*) total", text)
    assert m, text
    return float(m.group(3)), m.group(4)


@pytest.mark.parametrize("profile", util.PROFILES)
def test_off_cpu_intervals_add_up_to_the_kernels_sums(sampling, tmp_path, profile):
    """`handwritten switch N` blocks in read thousands of times (test_profile.py's
    off-CPU test): the kernel sums them per stack and never resets; each interval's
    file holds what grew since the last. So the blocks over all the files are exactly
    the blocks the run summed, none twice, none lost between intervals. 400,000
    switches take 2-6 s (7-15 us each on these VMs): several 1 s intervals."""
    d = tmp_path / "prof"
    proc = util.run_asyncbpf("profile", "--off-cpu", "--every", "1", "--pprof-dir", d, "--",
                             util.fixture_binary(profile, "handwritten"), "switch", "400000", timeout=180)
    if proc.returncode and "tp_btf" in proc.stderr:
        pytest.skip("tp_btf unavailable, no off-CPU profiling")
    assert proc.returncode == 0, util.describe(proc)
    run = json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])
    assert run["mode"] == "switch" and run["polls"] == 400000, proc.stdout
    assert run["elapsed_ns"] > 1.5e9, run  # (else fewer than two intervals: a faster machine)
    n = offcpu_counts(proc.stderr)
    names = pprof_files(d)
    assert len(names) >= 2, (names, util.describe(proc))
    switches = ns = 0.0
    for name in names:
        count, unit = total_of(go_pprof("-sample_index=switches", "-top", d / name))
        assert unit == "", unit
        switches += count
        t, unit = total_of(go_pprof("-sample_index=off_cpu", "-unit=ms", "-top", d / name))
        assert unit == "ms", unit
        ns += t * 1e6
    assert switches == n["summed"], (switches, n, names)
    assert abs(ns / 1e6 - n["summed_ms"]) <= 0.02 * n["summed_ms"] + 1, (ns, n)


def hot_files(d, pid):
    """The files of one process that `go tool pprof -top` shows spinning in hot_leaf."""
    names = [n for n in pprof_files(d) if NAME.match(n).group(2) == str(pid)]
    return names, [n for n in names if "tokio_ct::hot_leaf" in go_pprof("-top", d / n)]


def start_profile(args):
    return subprocess.Popen([str(util.ASYNCBPF), "profile", *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=util.san_env())


def test_several_processes_each_its_own_files(sampling, tmp_path):
    """profile -p A,B --every 1: each process's intervals in files of its own (its pid
    in the name), each read by go tool pprof with the process's hot future; a process
    let go as it exits (its last partial interval written), the run ends with the
    last one. The fixtures are held at their exec until the profiler is attached."""
    d = tmp_path / "prof"
    held = [Held(hot_command("debug", "tokio_ct", 2500)) for _ in range(2)]
    proc, err = None, []
    try:
        proc = start_profile(["-F", "199", "--every", "1", "--pprof-dir", str(d), "-p",
                              f"{held[0].pid},{held[1].pid}"])
        for h in held:
            read_until(proc.stderr, re.compile(rf"sampling pid {h.pid} "), 120, err)
        for h in held:
            h.release()
        for h in held:
            h.close_stdin()
            assert h.wait(60) == 0
        out, rest = proc.communicate(timeout=60)
        err.append(rest.decode("utf-8", "replace"))
        text = "".join(err)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(), text)
        util.assert_no_sanitizer_report(done)
        assert proc.returncode == 0 and "every process exited" in text, util.describe(done)
        proc = None
        for h in held:
            names, hot = hot_files(d, h.pid)
            assert len(names) >= 2 and hot, (h.pid, pprof_files(d), text)
            assert re.search(rf"--every: pid {h.pid}: {len(names)} profiles written", text), text
        assert "its analysis reused" in text, text  # one binary, analysed once
    finally:
        cleanup(held, proc)


def test_exe_follows_a_restart(sampling, tmp_path):
    """profile --exe PATH --every 1: a process of the file attached as it starts and let
    go as it exits, then its restart (another pid) the same, the analysis reused: both
    processes' files in the directory, each with the hot future; Ctrl-C ends it."""
    d = tmp_path / "prof"
    app = tmp_path / "app"
    shutil.copy(hot_command("debug", "tokio_ct", 1)[0], app)
    proc, err, runs = None, [], []
    try:
        proc = start_profile(["-F", "199", "--every", "1", "--pprof-dir", str(d), "--exe", str(app)])
        read_until(proc.stderr, re.compile(r"waiting for one"), 60, err)
        for _ in range(2):
            h = Held([str(app), "hot", "2000"])
            runs.append(h)
            read_until(proc.stderr, re.compile(rf"sampling pid {h.pid} "), 120, err)
            h.release()
            h.close_stdin()
            assert h.wait(60) == 0
            read_until(proc.stderr, re.compile(rf"pid {h.pid} .*exited: letting go"), 30, err)
        proc.send_signal(signal.SIGINT)
        out, rest = proc.communicate(timeout=60)
        err.append(rest.decode("utf-8", "replace"))
        text = "".join(err)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(), text)
        util.assert_no_sanitizer_report(done)
        assert proc.returncode == 0, util.describe(done)
        proc = None
        for h in runs:
            names, hot = hot_files(d, h.pid)
            assert names and hot, (h.pid, pprof_files(d), text)
        assert re.search(rf"pid {runs[1].pid} runs the binary analysed for pid {runs[0].pid}", text), text
    finally:
        cleanup(runs, proc)


def test_several_processes_need_every(sampling):
    for args in (["-p", "1,2"], ["--exe", "/bin/true"]):
        proc = util.run_asyncbpf("profile", *args, timeout=60)
        assert proc.returncode == util.EXIT_USAGE and "--every" in proc.stderr, util.describe(proc)
