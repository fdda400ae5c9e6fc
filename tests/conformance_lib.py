# SPDX-License-Identifier: GPL-2.0
"""Running programs nobody here wrote under `asyncbpf trace --all-crates`, and the
checks that need no knowledge of them (tests/test_conformance.py, and
bench/conformance.py for the before/after figures).

What must hold whatever the program:
  - it behaves as untraced: same exit status, same output (normalized where the
    program's output is not deterministic);
  - no result is impossible: no unknown result for a reason that means a value was
    misread (a __state that is no state, a discriminant that is neither Pending's
    nor Ready's, an await point the future does not have);
  - compiler futures' records are continuous: an instance's next poll starts from
    the state its previous poll left (`state_before` = the last `state_after`), and
    no instance is polled again after it returned Ready (rustc panics on that);
  - nothing was dropped.
"""
import json
import os
import re
import signal
import socket
import subprocess
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFORMANCE = REPO / "tests" / "conformance"
BIN = CONFORMANCE / "bin"

# tokio 1.24.2's tests whose dev-dependencies Debian packages and that run async
# code (sync_once_cell, io_split and unwindsafe have none: nothing to trace)
# libtest arguments per suite: the stress tests that poll millions of times a second
# (a traced poll costs two traps: minutes under the sanitizer build) are left out
TOKIO_TEST_ARGS = {
    "rt_common": ["--skip", "ping_pong_saturation"],
    "rt_threaded": ["--skip", "many_oneshot_futures", "--skip", "many_multishot_futures"],
}

TOKIO_TESTS = ["sync_mpsc_weak", "task_abort", "sync_semaphore", "sync_semaphore_owned",
               "tcp_into_split", "tcp_split", "io_mem_stream", "task_local", "time_rt", "macros_test",
               "join_handle_panic", "task_join_set", "io_write_int",
               "rt_common", "rt_threaded", "sync_mpsc"]

RESULT_READY, RESULT_PENDING, RESULT_UNKNOWN = 0, 1, 3
BAD_REASONS = ("bad_state", "bad_discriminant", "bad_await")


def binary(profile, name):
    return BIN / profile / name


def normalize_libtest(out):
    """libtest's summary line without its timing (tests run in parallel: their own
    lines come in any order)."""
    lines = [re.sub(r"; finished in [0-9.]+s", "", line) for line in out.splitlines() if line.startswith("test result:")]
    return "\n".join(lines)


def _wait_line(stream, pattern, timeout):
    deadline = time.time() + timeout
    buf = b""
    while time.time() < deadline:
        chunk = os.read(stream.fileno(), 4096)
        if not chunk:
            break
        buf += chunk
        m = re.search(pattern, buf)
        if m:
            return m, buf
    raise TimeoutError(f"no {pattern!r} in {buf[-2000:]!r}")


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def wait_port(port, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {port}")


def echo_exchange(port, lines, udp=False):
    """Send each line to an echo server and read it back; returns the echoes."""
    out = []
    if udp:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(5)
            for line in lines:
                s.sendto(line.encode(), ("127.0.0.1", port))
                out.append(s.recvfrom(4096)[0].decode())
        return out
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        for line in lines:
            s.sendall(line.encode())
            got = b""
            while len(got) < len(line):
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
            out.append(got.decode())
    return out


class Run:
    """One program, untraced or under asyncbpf (launch mode)."""

    def __init__(self, asyncbpf, env, tmp):
        self.asyncbpf, self.env, self.tmp = asyncbpf, env, Path(tmp)

    def traced_argv(self, tag):
        self.records = self.tmp / f"{tag}.records"
        self.summary = self.tmp / f"{tag}.summary.json"
        self.pftrace = self.tmp / f"{tag}.pftrace"
        self.model = self.tmp / f"{tag}.model.json"
        return [str(self.asyncbpf), "trace", "--all-crates", "--records", str(self.records), "--summary-json",
                str(self.summary), "-o", str(self.pftrace), "--"]


def run_plain(argv, timeout=120, stdin=None):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, input=stdin)


def run_traced(asyncbpf, env, tmp, tag, argv, timeout=180, stdin=None):
    r = Run(asyncbpf, env, tmp)
    proc = subprocess.run(r.traced_argv(tag) + [str(a) for a in argv], capture_output=True, text=True,
                          timeout=timeout, env=env, input=stdin)
    subprocess.run([str(asyncbpf), "analyze", str(argv[0]), "--json", str(r.model)], capture_output=True,
                   env=env, timeout=120, check=True)
    return proc, r


def run_server(asyncbpf, env, tmp, tag, argv, ready, client, traced=True, timeout=120, pass_pid=False):
    """Start a server (traced: under asyncbpf, launch mode), wait for `ready` (a
    regex on its stdout, or a port to accept), run client(match), then SIGTERM the
    server and collect its output (pass_pid: client(match, server pid)). Returns
    (proc-like, Run or None, client result)."""
    r = Run(asyncbpf, env, tmp)
    cmd = (r.traced_argv(tag) if traced else []) + [str(a) for a in argv]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        if isinstance(ready, int):
            wait_port(ready)
            m = None
        else:
            m, _ = _wait_line(p.stdout, ready, 60)
        server = children(p.pid)[0] if traced else p.pid
        got = client(m, server) if pass_pid else client(m)
        os.kill(server, signal.SIGTERM)
        out, err = p.communicate(timeout=timeout)
    except BaseException:
        p.kill()
        p.communicate()
        raise
    if m is not None:
        out = m.string.decode() + out.decode()
    else:
        out = out.decode()
    proc = subprocess.CompletedProcess(cmd, p.returncode, out, err.decode())
    if traced:
        subprocess.run([str(asyncbpf), "analyze", str(argv[0]), "--json", str(r.model)], capture_output=True,
                       env=env, timeout=120, check=True)
    return proc, (r if traced else None), got


def load(r):
    with open(r.summary) as f:
        summary = json.load(f)
    with open(r.model) as f:
        model = json.load(f)
    records = [json.loads(line) for line in open(r.records)]
    return summary, model, records


def impossible(summary, model, records):
    """Every impossible value in a run, as sentences (empty when none)."""
    problems = []
    for row in summary["futures"]:
        bad = {k: v for k, v in row.get("unknown_reasons", {}).items() if k in BAD_REASONS and v}
        if bad:
            problems.append(f"{row['name']}: results misread {bad}")
    if summary["totals"]["dropped"]:
        problems.append(f"{summary['totals']['dropped']} records dropped")
    futures = model["futures"]
    state_futures = {i for i, f in enumerate(futures) if f["state"] is not None}
    awaits = {i: {s["index"] for s in futures[i]["states"] if s["kind"] == "suspend"} for i in state_futures}
    bad_await = Counter(futures[r["future"]]["name"] for r in records
                        if r["result"] == RESULT_PENDING and r["future"] in state_futures
                        and r["await_index"] not in awaits[r["future"]])
    for name, n in bad_await.items():
        problems.append(f"{name}: {n} polls pending at an await point it does not have")
    last = {}
    breaks = Counter()
    after_ready = Counter()
    by_thread_order = sorted(records, key=lambda r: r["end_ns"])
    for rec in by_thread_order:
        if rec["future"] not in state_futures or rec["result"] not in (RESULT_READY, RESULT_PENDING):
            last.pop((rec["poll"], rec["self"]), None)
            continue
        key = (rec["poll"], rec["self"])
        prev = last.get(key)
        name = futures[rec["future"]]["name"]
        if prev is not None:
            if prev["result"] == RESULT_READY and rec["state_before"] != 0:
                after_ready[name] += 1
            elif (prev["result"] == RESULT_PENDING and rec["state_before"] != prev["state_after"]
                  and rec["state_before"] != 0):  # 0: a new instance at a reused address
                breaks[name] += 1
        last[key] = rec
    for name, n in breaks.items():
        problems.append(f"{name}: {n} polls did not start from the state the previous poll left")
    for name, n in after_ready.items():
        problems.append(f"{name}: {n} polls of an instance after it returned Ready")
    return problems


def figures(summary, records, pftrace):
    """What the closing note reports per run."""
    t = summary["totals"]
    return {
        "records": t["records"],
        "unknown": sum(1 for r in records if r["result"] == RESULT_UNKNOWN),
        "unknown_reasons": {k: v for k, v in t.get("unknown_reasons", {}).items() if v},
        "bytes_per_poll": round(os.path.getsize(pftrace) / max(1, t["records"]), 1),
    }
