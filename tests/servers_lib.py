# SPDX-License-Identifier: GPL-2.0
"""Servers under load for the tests (hyper's server and tests/conformance/http_server,
built by tests/conformance/build.sh): start one, trace or profile it with -p while
http_server's client loads it with exact counts, and read the kernel's own counts."""
import json
import os
import re
import signal
import subprocess
from pathlib import Path

import conformance_lib as C
import util


def require(profile, name):
    b = C.binary(profile, name)
    util.require_file(b, "the conformance programs", "run 'make conformance'")
    return b


HYPER_READY = rb'\{"listening":\d+,"pid":\d+\}'


def http_client(profile, conns, per_conn):
    """http_server's load generator (exact counts: every response checked) as a
    run_server client: its JSON result."""
    client_bin = require(profile, "http_server")

    def client(m):
        port = json.loads(m.group(0))["listening"]
        got = C.run_plain([client_bin, "client", port, conns, per_conn], timeout=600)
        assert got.returncode == 0, got.stdout + got.stderr
        return json.loads(got.stdout)
    return client


def voluntary_switches(pid):
    """The kernel's own count of pid's voluntary context switches, its threads summed."""
    n = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                n += int(re.search(r"^voluntary_ctxt_switches:\s*(\d+)", f.read(), re.M).group(1))
        except OSError:
            pass
    return n


def trace_server_under_load(profile, server, tmp_path, conns, per_conn, extra=(), server_args=()):
    """A server (its first line {"listening":PORT,"pid":PID}) traced with -p while
    http_server's client loads it: (tracer's CompletedProcess, Run paths, the client's
    result, the server's last line as JSON, the kernel's voluntary switches of the
    server over the trace)."""
    b = require(profile, server)
    srv = subprocess.Popen([str(b), "--port", "0", *server_args], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    tracer = None
    try:
        m, _ = C._wait_line(srv.stdout, HYPER_READY, 60)
        r = C.Run(util.ASYNCBPF, util.san_env(), tmp_path)
        argv = r.traced_argv(server)[:-1] + list(extra) + ["-p", str(srv.pid)]
        before = voluntary_switches(srv.pid)
        tracer = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=util.san_env())
        watch = util.StderrWatch(tracer)
        assert watch.wait("trace: attached", timeout=120), watch.text
        load = http_client(profile, conns, per_conn)(m)
        tracer.send_signal(signal.SIGINT)
        out = tracer.stdout.read()
        tracer.wait(timeout=300)
        proc = subprocess.CompletedProcess(argv, tracer.returncode, out, watch.finish())
        switches = voluntary_switches(srv.pid) - before
        srv.send_signal(signal.SIGTERM)
        srv_out, srv_err = srv.communicate(timeout=60)
    finally:
        for p in (tracer, srv):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    assert srv.returncode == 0, srv_err
    subprocess.run([str(util.ASYNCBPF), "analyze", str(b), "--json", str(r.model)], capture_output=True,
                   env=util.san_env(), timeout=120, check=True)
    return proc, r, load, json.loads(srv_out.decode().strip().splitlines()[-1]), switches


def hyper_connection_task():
    """hyper's own source says where a connection's work runs: Server::poll_watch
    wraps each accepted connection in `new_svc::NewSvcTask` and hands it to the
    executor (`exec.execute_new_svc(fut)`, a tokio::spawn): one task per connection,
    whose root future is that type. The path is read from the hyper the server was
    built with (Cargo.lock, Debian's registry)."""
    lock = (C.CONFORMANCE / "Cargo.lock").read_text()
    version = re.search(r'name = "hyper"\nversion = "([^"]+)"', lock).group(1)
    src = Path(f"/usr/share/cargo/registry/hyper-{version}/src/server/server.rs")
    util.require_file(src, f"hyper {version}'s source", "apt-get install librust-hyper-dev")
    text = src.read_text()
    assert "pub(crate) mod new_svc" in text and "pub struct NewSvcTask" in text, src
    assert "NewSvcTask::new(connecting" in text and "exec.execute_new_svc(fut)" in text, src
    return "hyper::server::server::new_svc::NewSvcTask<"
