# SPDX-License-Identifier: GPL-2.0
"""top on several processes and on every process of an executable (docs/top.md
"Several processes", docs/metrics.md "Following an executable"), with a real
Prometheus server as the client. Ground truth: `tokio_mt park N` spawns N many_task
tasks, each polled once and parked for good, prints its own count once all have
parked, and exits at EOF on stdin. The fixtures are started held at their exec
(ptrace), so that top attaches before they run a single instruction; then released."""
import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

import util
from prom_lib import (Held, cleanup, finish, page, prom_query, read_until, start_asyncbpf_top, start_prometheus, stop_prometheus,
                      wait_query)

TRUTH = re.compile(rb"^(\{.*\"mode\":\"park\".*\})$")
MANY = 'future=~"tokio_mt::many_task.*"'


@pytest.fixture(scope="module")
def features():
    return util.require_trace_features()


def start_top(args):
    return start_asyncbpf_top(args)


def stop_top(proc, err):
    proc.send_signal(signal.SIGINT)
    return finish(proc, err)


def truth_of(held):
    """The fixture's own counts, once all its tasks have parked."""
    line = read_until(held.stdout, re.compile(r'^(\{.*"mode":"park".*\})$'), 60, []).group(1)
    return json.loads(line)


def attached(proc, err, pid):
    read_until(proc.stderr, re.compile(rf"attached \d+ probes to .*\(pid {pid}\)"), 120, err)


def test_two_processes_one_page(features, tmp_path):
    """top -p A,B: one page, each process's series under its own pid, each equal to
    that process's own count."""
    util.need_tool("prometheus")
    binary = str(util.fixture_binary("debug", "tokio_mt"))
    counts = (11, 13)
    held = [Held([binary, "park", str(n)]) for n in counts]
    proc = prom = None
    try:
        proc, url, err = start_top(["-p", f"{held[0].pid},{held[1].pid}", "--prometheus", "127.0.0.1:0",
                                    "--quiet", "-i", "0.5"])
        for h in held:
            attached(proc, err, h.pid)
        for h, n in zip(held, counts):
            h.release()
            assert truth_of(h)["many_task"] == n
        prom, base = start_prometheus(tmp_path, url)
        for h, n in zip(held, counts):
            got = wait_query(base, f'asyncbpf_future_polls_total{{{MANY},pid="{h.pid}"}}', n)
            assert len(got) == 1 and float(got[0]["value"][1]) == n, (got, "".join(err))
            assert got[0]["metric"]["exe"] == os.path.realpath(binary), got
            r = prom_query(base, f'asyncbpf_future_live{{{MANY},pid="{h.pid}"}}')
            assert len(r) == 1 and float(r[0]["value"][1]) == n, r
        r = prom_query(base, 'asyncbpf_info{job="asyncbpf"}')
        assert sorted(x["metric"]["pid"] for x in r) == sorted(str(h.pid) for h in held), r
        # the second process reused the first one's analysis (the same file)
        assert "its analysis reused" in "".join(err), "".join(err)
        # one exits: top goes on with the other; its series leave the page
        held[0].close_stdin()
        assert held[0].wait() == 0
        read_until(proc.stderr, re.compile(rf"pid {held[0].pid} .*exited: letting go"), 30, err)
        time.sleep(1.5)
        with __import__("urllib.request").request.urlopen(url, timeout=5) as resp:
            page = resp.read().decode()
        assert f'pid="{held[0].pid}"' not in page and f'pid="{held[1].pid}"' in page, page[-2000:]
        assert proc.poll() is None
        # the last one exits: top stops by itself
        held[1].close_stdin()
        assert held[1].wait() == 0
        out, rest = proc.communicate(timeout=60)
        err.append(rest.decode("utf-8", "replace"))
        assert proc.returncode == 0 and "every process exited" in "".join(err), "".join(err)
        proc = None
    finally:
        stop_prometheus(prom)
        for h in held:
            h.kill()
        if proc:
            stop_top(proc, err)


def test_exe_follows_restarts_and_new_builds(features, tmp_path):
    """top --exe PATH: processes of the file attached as they start, let go as they
    exit; a restart (new pid, same file) continues the same series, the analysis
    reused; a new build at the same path (another file there) is analysed anew and
    its futures join their series by name. Through Prometheus: the many_task polls
    are the three processes' own counts added up, the series never reset."""
    util.need_tool("prometheus")
    app = tmp_path / "app"
    shutil.copy(util.fixture_binary("debug", "tokio_mt"), app)
    proc = prom = None
    runs = []
    try:
        proc, url, err = start_top(["--exe", str(app), "--prometheus", "127.0.0.1:0", "--quiet", "-i", "0.5"])
        prom, base = start_prometheus(tmp_path, url)
        total = 0
        for n, build in ((5, "debug"), (7, "debug"), (9, "release")):
            if build == "release":  # a deploy: the new file renamed over the old one
                shutil.copy(util.fixture_binary("release", "tokio_mt"), tmp_path / "app.new")
                os.rename(tmp_path / "app.new", app)
            h = Held([str(app), "park", str(n)])
            runs.append(h)
            attached(proc, err, h.pid)
            h.release()
            assert truth_of(h)["many_task"] == n
            total += n
            got = wait_query(base, f'asyncbpf_future_polls_total{{{MANY}}}', total)
            assert len(got) == 1 and float(got[0]["value"][1]) == total, (n, got, "".join(err))
            assert "pid" not in got[0]["metric"] and got[0]["metric"]["exe"] == str(app), got
            h.close_stdin()
            assert h.wait() == 0
            read_until(proc.stderr, re.compile(rf"pid {h.pid} .*exited: letting go"), 30, err)
        text = "".join(err)
        # the restart reused the analysis; the new build did not
        assert text.count("its analysis reused") == 1, text
        assert re.search(rf"pid {runs[1].pid} runs the binary analysed for pid {runs[0].pid}", text), text
        got = wait_query(base, 'asyncbpf_processes_seen_total{job="asyncbpf"}', 3)
        assert len(got) == 1 and float(got[0]["value"][1]) == 3, got
        r = wait_query(base, f'asyncbpf_future_live{{{MANY}}}', 0)
        assert len(r) == 1 and float(r[0]["value"][1]) == 0, r  # all gone
        r = prom_query(base, f'resets(asyncbpf_future_polls_total{{{MANY}}}[10m])')
        assert len(r) == 1 and float(r[0]["value"][1]) == 0, r
        assert proc.poll() is None  # --exe waits for the next one
        done = stop_top(proc, err)
        proc = None
        assert done.returncode == 0
    finally:
        stop_prometheus(prom)
        cleanup(runs, proc)


def test_bad_lists_and_paths(features):
    """-p lists and --exe refuse what they cannot mean, with the documented codes."""
    binary = str(util.fixture_binary("debug", "tokio_mt"))
    for bad in ("1,", ",1", "1,,2", "x", "1,-2"):
        proc = util.run_asyncbpf("top", "-p", bad, "-q", "--prometheus", "0", timeout=60)
        assert proc.returncode == util.EXIT_USAGE and "invalid PID" in proc.stderr, util.describe(proc)
    proc = util.run_asyncbpf("top", "-p", ",".join(str(i) for i in range(1, 70)), timeout=60)
    assert proc.returncode == util.EXIT_USAGE and "more than 64" in proc.stderr, util.describe(proc)
    proc = util.run_asyncbpf("top", "--exe", "/no/such/app", timeout=60)
    assert proc.returncode == util.EXIT_NO_INPUT and "/no/such/app" in proc.stderr, util.describe(proc)
    proc = util.run_asyncbpf("top", "--exe", binary, "-p", "1", timeout=60)
    assert proc.returncode == util.EXIT_USAGE and "one of" in proc.stderr, util.describe(proc)
    # a -p list with a process that does not exist: nothing attached, exit 3
    with subprocess.Popen([binary, "park", "1"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL) as p:
        try:
            proc = util.run_asyncbpf("top", "-p", f"{p.pid},999999999", "-b", "-n", "1", timeout=120)
        finally:
            p.stdin.close()
    assert proc.returncode == util.EXIT_NO_INPUT, util.describe(proc)
    assert "999999999" in proc.stderr, util.describe(proc)


def table_rows(out, pid):
    """top --batch's tables of one process: each a list of (LIVE, TASK) pairs."""
    tables = []
    for block in out.split("asyncbpf top: ")[1:]:
        if not block.startswith(f"pid {pid},"):
            continue
        rows = []
        for line in block.splitlines():
            cols = line.split()
            if len(cols) >= 10 and cols[8].isdigit():
                rows.append((int(cols[8]), " ".join(cols[9:])))
        tables.append(rows)
    return tables


def test_exe_through_a_switched_symlink_with_tables(features, tmp_path):
    """--exe releases' symlinked path: a deploy switches the symlink to a new release;
    the new release's process is found (the path resolved again), and a process of
    the old release started after the switch still is. Tables (--batch) for each
    process, its LIVE many_task the process's own count; the page's series labelled
    with the path as given, their polls the processes' counts added up."""
    for rel, build in (("a", "debug"), ("b", "release")):
        (tmp_path / rel).mkdir()
        shutil.copy(util.fixture_binary(build, "tokio_mt"), tmp_path / rel / "app")
    current = tmp_path / "current"
    os.symlink(tmp_path / "a", current)
    proc, err, runs = None, [], []
    try:
        proc, url, err = start_top(["--exe", str(current / "app"), "--batch", "-i", "0.3",
                                    "--prometheus", "127.0.0.1:0"])
        counts = ((6, "a"), (8, "b"), (4, "a-after"))
        for n, rel in counts:
            if rel == "b":  # the deploy: the symlink switched
                os.symlink(tmp_path / "b", tmp_path / "next")
                os.rename(tmp_path / "next", current)
            # the old release's own path, after the switch: still the service's
            path = tmp_path / "a" / "app" if rel == "a-after" else current / "app"
            h = Held([str(path), "park", str(n)])
            runs.append(h)
            attached(proc, err, h.pid)
            h.release()
            assert truth_of(h)["many_task"] == n
        time.sleep(1.5)  # a page and tables with both
        text = page(url)
        m = re.search(r'asyncbpf_future_polls_total\{future="tokio_mt::many_task[^"]*",exe="([^"]*)"\} (\d+)', text)
        assert m and m.group(1) == str(current / "app") and int(m.group(2)) == 6 + 8 + 4, text[-3000:]
        assert re.search(rf'asyncbpf_processes\{{exe="{re.escape(str(current / "app"))}"\}} 3\n', text), text[-3000:]
        for h in runs:
            h.close_stdin()
            assert h.wait() == 0
        for h in runs:
            read_until(proc.stderr, re.compile(rf"pid {h.pid} .*exited: letting go"), 30, err)
        done = stop_top(proc, err)
        proc = None
        for h, (n, _) in zip(runs, counts):
            tables = table_rows(done.stdout, h.pid)
            lives = [live for rows in tables for live, task in rows if task.startswith("tokio_mt::many_task")]
            assert n in lives, (h.pid, tables, done.stdout[-3000:])
    finally:
        cleanup(runs, proc)


def test_exe_by_name(features, tmp_path):
    """--exe NAME: a process whose executable has that base name is followed."""
    name = f"asyncbpf-fleet-{os.getpid()}"
    shutil.copy(util.fixture_binary("debug", "tokio_mt"), tmp_path / name)
    proc, err, h = None, [], None
    try:
        proc, url, err = start_top(["--exe", name, "--quiet", "--prometheus", "127.0.0.1:0", "-i", "0.3"])
        h = Held([str(tmp_path / name), "park", "3"])
        attached(proc, err, h.pid)
        h.release()
        assert truth_of(h)["many_task"] == 3
        time.sleep(1.0)
        text = page(url)
        assert re.search(rf'asyncbpf_future_live\{{future="tokio_mt::many_task[^"]*",exe="{name}"\}} 3\n', text), \
            text[-3000:]
        h.close_stdin()
        assert h.wait() == 0
        stop_top(proc, err)
        proc = None
    finally:
        cleanup([h] if h else [], proc)
