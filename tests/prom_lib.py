# SPDX-License-Identifier: GPL-2.0
"""Helpers for the tests of top's Prometheus endpoint (test_metrics.py, test_fleet.py):
a real Prometheus server on a free port scraping every second, its HTTP API, lines read
from a pipe until one matches, and programs held right after their exec (ptrace) so
that a tracer that finds them by scanning /proc sees them from their first instruction."""
import ctypes
import json
import os
import re
import select
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import util

URL = re.compile(r"serving Prometheus metrics on (http://\S+)")
PTRACE_TRACEME = 0
PTRACE_DETACH = 17


def start_asyncbpf_top(args, stdin=subprocess.DEVNULL):
    """asyncbpf top ARGS with --prometheus: (its process, the endpoint's URL it printed,
    its stderr so far)."""
    proc = subprocess.Popen([str(util.ASYNCBPF), "top", *args], stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=util.san_env())
    err = []
    url = read_until(proc.stderr, URL, 60, err).group(1)
    return proc, url, err


def finish(proc, err):
    """The asyncbpf process's end once it was told to stop: a CompletedProcess with all
    its stderr, after checking for sanitizer reports and a 0 exit."""
    out, rest = proc.communicate(timeout=60)
    err.append(rest.decode("utf-8", "replace"))
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out.decode("utf-8", "replace"), "".join(err))
    util.assert_no_sanitizer_report(done)
    assert done.returncode == 0, util.describe(done)
    return done


def cleanup(held, proc):
    """After a test: the held programs killed, the asyncbpf process too if still there."""
    for h in held:
        h.kill()
    if proc:
        proc.kill()
        proc.wait()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_LEFT = {}  # per pipe: what was read after the last line matched, seen by the next call


def read_until(stream, pattern, timeout, seen):
    """Lines of a pipe until one matches pattern (a compiled regex): the match. Every
    chunk read is appended to seen; the lines after the match are kept for the next
    call on the same pipe."""
    deadline = time.time() + timeout
    buf = _LEFT.pop((id(stream), stream.fileno()), b"")
    while True:
        lines = buf.split(b"\n")
        for i, line in enumerate(lines[:-1]):
            m = pattern.search(line.decode("utf-8", "replace"))
            if m:
                _LEFT[(id(stream), stream.fileno())] = b"\n".join(lines[i + 1:])
                return m
        if time.time() >= deadline:
            break
        r, _, _ = select.select([stream], [], [], 0.2)
        if not r:
            continue
        chunk = os.read(stream.fileno(), 65536)
        if not chunk:
            break
        buf += chunk
        seen.append(chunk.decode("utf-8", "replace"))
    raise AssertionError(f"no line matching {pattern.pattern!r} in {timeout} s:\n{''.join(seen)[-4000:]}")


def page(url):
    """The metrics page served at url, as text."""
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.read().decode()


SAMPLE = re.compile(r'^(\w+)\{(.*)\} (\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def samples(text, metric):
    """The page's samples of one metric: [(labels dict, value)]."""
    out = []
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m and m.group(1) == metric:
            out.append((dict(LABEL.findall(m.group(2))), float(m.group(3))))
    return out


def prom_query(base, query):
    with urllib.request.urlopen(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": query}), timeout=5) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]["result"]


def start_prometheus(tmp_path, url):
    """A Prometheus server scraping url (http://HOST:PORT/PATH) every second: (its
    process, its base URL)."""
    target = urllib.parse.urlparse(url)
    port = free_port()
    (tmp_path / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: asyncbpf\n"
        f"    metrics_path: {target.path}\n"
        f"    static_configs:\n      - targets: ['{target.netloc}']\n")
    prom = subprocess.Popen(["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return prom, f"http://127.0.0.1:{port}"


def stop_prometheus(prom):
    if prom:
        prom.terminate()
        prom.wait(timeout=30)


def wait_query(base, query, want, timeout=60):
    """The query's result once its one series has the value want (or the last result
    when the time is up)."""
    got, deadline = [], time.time() + timeout
    while time.time() < deadline:
        try:
            got = prom_query(base, query)
            if len(got) == 1 and float(got[0]["value"][1]) == want:
                break
        except OSError:
            pass  # Prometheus is still starting
        time.sleep(0.5)
    return got


class Held:
    """argv started under ptrace: stopped right after its exec, before its first
    instruction (/proc/PID/exe is already the program), until release(). stdin and
    stdout are pipes (stdin: the fixtures exit at its EOF)."""

    def __init__(self, argv):
        libc = ctypes.CDLL(None, use_errno=True)
        r_in, self._w_in = os.pipe()
        self._r_out, w_out = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: traced by the test, it stops at its exec
            try:
                os.dup2(r_in, 0)
                os.dup2(w_out, 1)
                libc.ptrace(PTRACE_TRACEME, 0, None, None)
                os.execv(argv[0], argv)
            finally:
                os._exit(127)
        os.close(r_in)
        os.close(w_out)
        self.stdout = os.fdopen(self._r_out, "rb", buffering=0)
        self._libc = libc
        _, status = os.waitpid(self.pid, 0)
        assert os.WIFSTOPPED(status), f"{argv} did not stop at its exec: status {status:#x}"
        self.status = None

    def release(self):
        """Let it run (the tracer is detached: its exit is its own)."""
        assert self._libc.ptrace(PTRACE_DETACH, self.pid, None, None) == 0, ctypes.get_errno()

    def close_stdin(self):
        if self._w_in is not None:
            os.close(self._w_in)
            self._w_in = None

    def wait(self, timeout=60):
        """Its exit status (close_stdin first for a fixture waiting for EOF)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
                return self.status
            time.sleep(0.05)
        raise AssertionError(f"pid {self.pid} did not exit in {timeout} s")

    def kill(self):
        if self.status is None:
            try:
                os.kill(self.pid, 9)
                self._libc.ptrace(PTRACE_DETACH, self.pid, None, None)  # still held: let it die
            except (ProcessLookupError, OSError):
                pass
            try:
                self.wait(10)
            except (AssertionError, ChildProcessError):
                pass
        self.close_stdin()
        self.stdout.close()
