# SPDX-License-Identifier: GPL-2.0
"""asyncbpf top --prometheus (docs/metrics.md) against a real Prometheus server
(Debian's `prometheus`, started here on a free port, scraping every second) and
`promtool check metrics`. Ground truth: `tokio_mt park N` spawns N many_task tasks,
each polled once and parked for good, and prints its own count (many_task: N) once
all have parked; it then waits for EOF on stdin, so the counters stand still while
Prometheus scrapes them. The endpoint must not let clients stall the tracer: 1,000
connections, slow writers and a huge request while top prints its tables."""
import json
import os
import re
import resource
import select
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

import util
from prom_lib import finish, page, prom_query, read_until, samples, start_asyncbpf_top, start_prometheus, wait_query

@pytest.fixture(scope="module")
def features():
    return util.require_trace_features()


def start_top(args, command):
    return start_asyncbpf_top([*args, "--", *command], stdin=subprocess.PIPE)


def stop_top(proc, err):
    proc.stdin.close()  # the fixture exits at EOF; top with it
    proc.stdin = None
    return finish(proc, err)


@pytest.mark.parametrize("profile", ["debug", "release"])
def test_prometheus_server_reads_the_fixtures_counts(features, tmp_path, profile):
    util.need_tool("prometheus")
    util.need_tool("promtool")
    n = 40
    proc, url, err = start_top(["--prometheus", "127.0.0.1:0", "--quiet", "-i", "0.5"],
                               [str(util.fixture_binary(profile, "tokio_mt")), "park", str(n)])
    prom = None
    try:
        truth = json.loads(read_until(proc.stdout, re.compile(r"^(\{.*\"mode\":\"park\".*\})$"), 60, []).group(1))
        assert truth["many_task"] == n, truth
        prom, base = start_prometheus(tmp_path, url)
        query = 'asyncbpf_future_polls_total{job="asyncbpf",future=~"tokio_mt::many_task.*"}'
        got = wait_query(base, query, n)
        assert len(got) == 1 and float(got[0]["value"][1]) == n, (got, "".join(err))
        labels = got[0]["metric"]
        children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        assert [labels["pid"]] == children, (labels, children)  # the fixture: top's one child
        assert labels["exe"] == os.path.realpath(util.fixture_binary(profile, "tokio_mt")), labels
        for metric in ("asyncbpf_future_started_total", "asyncbpf_future_live", "asyncbpf_future_pending_total"):
            r = prom_query(base, f'{metric}{{future=~"tokio_mt::many_task.*"}}')
            assert len(r) == 1 and float(r[0]["value"][1]) == n, (metric, r)
        r = prom_query(base, 'asyncbpf_future_ready_total{future=~"tokio_mt::many_task.*"}')
        assert len(r) == 1 and float(r[0]["value"][1]) == 0, r
        r = prom_query(base, 'asyncbpf_future_poll_duration_seconds_count{future=~"tokio_mt::many_task.*"}')
        assert len(r) == 1 and float(r[0]["value"][1]) == n, r
        r = prom_query(base, 'up{job="asyncbpf"}')
        assert len(r) == 1 and r[0]["value"][1] == "1", r
        # the page itself passes promtool's checks
        with urllib.request.urlopen(url, timeout=5) as resp:
            assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4"), resp.headers
            page = resp.read().decode()
        check = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True, text=True,
                               timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr
    finally:
        if prom:
            prom.terminate()
            prom.wait(timeout=30)
        done = stop_top(proc, err)
    assert done.stdout.strip().count("\n") == 0, "--quiet printed tables:\n" + done.stdout


def per_task(text, metric, crate, kinds=("abort_victim", "abort_finisher")):
    """metric's values by the abort fixture's task kinds (abort_victim,
    abort_finisher; or midabort's): the series whose root future names the crate's
    async fn (tokio's task is the fn; async-task's is spawn's block around it),
    summed."""
    out = {}
    for labels, v in samples(text, metric):
        for kind in kinds:
            if f"{crate}::{kind}" in labels["future"]:
                out[kind] = out.get(kind, 0) + v
    return out


@pytest.mark.parametrize("profile", ["debug", "release"])
@pytest.mark.parametrize("crate", ["tokio_mt", "smol_app"])
def test_task_mode_tells_aborted_tasks_from_finished_ones(features, crate, profile):
    """Ground truth: `CRATE abort N` parks N abort_victim tasks and cancels them
    (tokio's JoinHandle::abort, async-task's Task::cancel: the runtime drops the
    future in a poll that begins with the task's CANCELLED / CLOSED flag set), and
    lets N abort_finisher tasks return; it prints what their handles said. On the
    page: the victims cancelled N and Ready 0, the finishers Ready N and cancelled 0;
    both started N (each parked first) and live 0."""
    n = 7
    proc, url, err = start_top(["--prometheus", "127.0.0.1:0", "--quiet", "-i", "0.2"],
                               [str(util.fixture_binary(profile, crate)), "abort", str(n)])
    try:
        truth = json.loads(read_until(proc.stdout, re.compile(r"^(\{.*\"mode\":\"abort\".*\})$"), 60, []).group(1))
        assert truth == {"mode": "abort", "abort_victim": n, "cancelled": n, "abort_finisher": n, "returned": n}, truth
        # the handles wake the fixture inside the tasks' last polls: the probes at
        # those polls' ends may come after the line; the page follows each interval
        deadline, want = time.time() + 20, {"abort_victim": n, "abort_finisher": n}
        while True:
            text = page(url)
            ready = per_task(text, "asyncbpf_future_ready_total", crate)
            cancelled = per_task(text, "asyncbpf_future_cancelled_total", crate)
            if {k: ready.get(k, 0) + cancelled.get(k, 0) for k in want} == want or time.time() > deadline:
                break
            time.sleep(0.2)
        assert (ready["abort_victim"], cancelled["abort_victim"]) == (0, truth["cancelled"]), text
        assert (ready["abort_finisher"], cancelled["abort_finisher"]) == (truth["returned"], 0), text
        for metric, value in (("asyncbpf_future_started_total", n), ("asyncbpf_future_live", 0)):
            got = per_task(text, metric, crate)
            assert got["abort_victim"] == got["abort_finisher"] == value, (metric, got)
    finally:
        done = stop_top(proc, err)
    assert done.stdout.strip().count("\n") == 0, done.stdout


@pytest.mark.parametrize("profile", ["debug", "release"])
@pytest.mark.parametrize("crate", ["tokio_mt", "smol_app"])
def test_task_mode_tells_aborts_inside_a_poll(features, crate, profile):
    """Ground truth: `CRATE midabort N`: N midpoll_victim tasks cancel themselves and
    then yield (the runtime drops the future at the end of that poll: cancelled), N
    late_abort tasks cancel themselves and then return (Ready); it prints its own
    counts (tokio: the JoinHandles; smol: a guard in each future). The cancel flag is set at the end of both
    kinds of poll: the page must still say victims cancelled N and Ready 0, late ones
    Ready N and cancelled 0, and nothing lost as unsure."""
    n = 7
    proc, url, err = start_top(["--prometheus", "127.0.0.1:0", "--quiet", "-i", "0.2"],
                               [str(util.fixture_binary(profile, crate)), "midabort", str(n)])
    try:
        truth = json.loads(read_until(proc.stdout, re.compile(r"^(\{.*\"mode\":\"midabort\".*\})$"), 60,
                                      []).group(1))
        assert truth == {"mode": "midabort", "midpoll_victim": n, "cancelled": n, "late_abort": n, "returned": n,
                         "late_cancelled": 0}, truth
        deadline, want = time.time() + 20, {"midpoll_victim": n, "late_abort": n}
        while True:
            text = page(url)
            ready = per_task(text, "asyncbpf_future_ready_total", crate, tuple(want))
            cancelled = per_task(text, "asyncbpf_future_cancelled_total", crate, tuple(want))
            if {k: ready.get(k, 0) + cancelled.get(k, 0) for k in want} == want or time.time() > deadline:
                break
            time.sleep(0.2)
        assert (ready.get("midpoll_victim", 0), cancelled.get("midpoll_victim", 0)) == (0, truth["cancelled"]), text
        assert (ready.get("late_abort", 0), cancelled.get("late_abort", 0)) == (truth["returned"], 0), text
        assert not re.search(r'^asyncbpf_lost_events_total\{[^}]*reason="task_end_unsure"[^}]*\} [1-9]', text, re.M), text
    finally:
        done = stop_top(proc, err)
    assert done.stdout.strip().count("\n") == 0, done.stdout


def wait_ok(url, timeout=30):
    """The endpoint's status once it answers 200 (503 until the probes are attached)."""
    deadline, status = time.time() + timeout, None
    while time.time() < deadline and status != 200:
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                status = resp.status
        except OSError:
            time.sleep(0.2)
    return status


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def test_hostile_clients_cannot_stall_the_tracer(features):
    util.need_tool("promtool")
    """While eight slow writers hold connections, a 1 MiB header and a GET with a body
    are refused and 1,000 more connections pile up, top keeps printing a table every
    interval and its memory stays put; once they are gone a scrape succeeds, and
    unknown paths and methods get their status codes. (The slow writers send a line
    every 0.2 s: never idle for the 10 s timeout, they hold their connections.)"""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    interval = 0.25
    # 1,000,000 rounds: long enough for the clients, and it ends once they are done
    # (stop_top waits for the fixture's end)
    proc, url, err = start_top(["--prometheus", "0", "--batch", "-i", str(interval), "--deep", "--prometheus-top", "2"],
                               [str(util.fixture_binary("debug", "tokio_mt")), "pingpong", "1000000"])
    target = urllib.parse.urlparse(url)
    host, port = target.hostname, target.port
    assert host == "127.0.0.1", url  # the default address is loopback
    socks = []
    try:
        assert wait_ok(url) == 200
        time.sleep(1.0)
        before = rss_kb(proc.pid)
        tables_before = len(os.read(proc.stdout.fileno(), 1 << 24).decode().split("asyncbpf top: ")) - 1
        start = time.time()
        slow = []  # first, so that they hold connections: writers that never finish
        for _ in range(8):
            s = socket.create_connection((host, port), timeout=5)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            slow.append(s)
        # a 1 MiB header: 431 or closed, never read whole
        big = socket.create_connection((host, port), timeout=5)
        try:
            big.sendall(b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n")
        except OSError:
            pass  # closed on us
        try:
            answer = big.recv(64)
        except OSError:
            answer = b""
        assert answer == b"" or b" 431 " in answer or b" 413 " in answer, answer
        # a GET with a body: 400
        body = socket.create_connection((host, port), timeout=5)
        body.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        try:
            answer = body.recv(64)
        except OSError:
            answer = b""
        assert answer.startswith(b"HTTP/1.1 400 "), answer
        for _ in range(1000):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex((host, port))
            socks.append(s)
        out = ""
        while time.time() - start < 4.0:
            for s in slow:
                try:
                    s.send(b"X-Slow: 1\r\n")
                except OSError:
                    pass
            r, _, _ = select.select([proc.stdout], [], [], 0.2)
            if r:
                out += os.read(proc.stdout.fileno(), 1 << 20).decode("utf-8", "replace")
        elapsed = time.time() - start
        tables = out.count("asyncbpf top: ")
        assert proc.poll() is None, "".join(err)
        # a table every interval: a stalled tracer would print none
        assert tables >= int(elapsed / interval) - 3, (tables, elapsed, tables_before)
        after = rss_kb(proc.pid)
        assert after - before < 32 * 1024, (before, after)
        big.close()
        body.close()
        for s in socks + slow:
            s.close()
        socks = []
        # the endpoint serves again once they are gone, a page promtool accepts
        assert wait_ok(url, 20) == 200
        with urllib.request.urlopen(url, timeout=5) as resp:
            page = resp.read().decode()
        assert 'future="other"' in page, page[:2000]
        check = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True, text=True,
                               timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr
        for path, method, want in (("/nothing", "GET", 404), (target.path, "POST", 405)):
            req = urllib.request.Request(f"http://{host}:{port}{path}", method=method, data=b"" if method == "POST" else None)
            try:
                urllib.request.urlopen(req, timeout=5)
                code = 200
            except urllib.error.HTTPError as e:
                code = e.code
            assert code == want, (path, method, code)
    finally:
        for s in socks:
            s.close()
        children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        proc.send_signal(signal.SIGINT)  # Ctrl-C: top detaches and exits
        try:
            proc.wait(timeout=60)
        finally:
            for pid in children:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_bad_address_and_busy_port(features):
    """A spec that is not [ADDR:]PORT is a usage error; a port taken is exit 8 and
    nothing is attached (the endpoint is opened first)."""
    binary = util.fixture_binary("debug", "tokio_mt")
    for spec in ("nope", "1.2.3.4:99999", "::1:80", ":"):
        proc = util.run_asyncbpf("top", "--prometheus", spec, "-q", "--", binary, timeout=60)
        assert proc.returncode == util.EXIT_USAGE and "--prometheus" in proc.stderr, util.describe(proc)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        proc = util.run_asyncbpf("top", "--prometheus", f"127.0.0.1:{s.getsockname()[1]}", "-q", "--", binary,
                                 timeout=60)
    assert proc.returncode == util.EXIT_OUTPUT and "cannot listen" in proc.stderr, util.describe(proc)
    assert "attached" not in proc.stderr, util.describe(proc)
    proc = util.run_asyncbpf("top", "-q", "--", binary, timeout=60)
    assert proc.returncode == util.EXIT_USAGE and "--quiet" in proc.stderr, util.describe(proc)
