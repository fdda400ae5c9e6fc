# SPDX-License-Identifier: GPL-2.0
"""The trace benchmark's tools (bench/README.md), run once briefly so they do not rot.

`make bench-trace` is not part of `make test`; these runs are: the floor tool
attaches to asyncbpf's probe sites of the handwritten fixture and its probes fire
twice per poll (entry and exit, counted against the fixture's own poll count); the
tracer's parts time on the same plan; the synthetic consumer run at a low rate
loses nothing (received == produced, zero drops); trace_helper.py's strace parser
on a hand-made trace. Needs root except the last.
"""
import json
import os
import subprocess

import pytest

import util

BENCH_OUT = util.REPO / ".output" / "bench"
HANDWRITTEN = util.fixture_binary("debug", "handwritten")
HELPER = util.REPO / "bench" / "trace_helper.py"

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the bench tools load BPF programs: run as root")


@pytest.fixture(scope="module")
def tools():
    """Build the bench tools (`make bench-tools`): a build failure is a test failure."""
    util.require_file(HANDWRITTEN, "the handwritten fixture", "run 'make fixtures'")
    proc = subprocess.run(["make", "-C", str(util.REPO), "--no-print-directory", "bench-tools"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, util.describe(proc)
    return {"floor": BENCH_OUT / "floor", "consumer": BENCH_OUT / "consumer_bench"}


def tool_json(stderr, prefix):
    lines = [l[len(prefix):] for l in stderr.splitlines() if l.startswith(prefix)]
    assert len(lines) == 1, f"expected one '{prefix}' line in:\n{stderr}"
    return json.loads(lines[0])


def fixture_result(stdout):
    return json.loads(next(l for l in stdout.splitlines() if l.startswith('{"mode":"loop"')))


@needs_root
def test_floor_probes_fire_on_every_entry_and_exit(tools):
    polls = 2000
    proc = subprocess.run([str(tools["floor"]), "--count", "*Trivial*", "--", str(HANDWRITTEN), "loop", str(polls)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, util.describe(proc)
    assert fixture_result(proc.stdout)["futures"]["Trivial"]["polls"] == polls
    floor = tool_json(proc.stderr, "floor: ")
    # Trivial::poll has one entry site and one `ret` (docs/tracing.md's probe plan)
    assert (floor["entries"], floor["exits"], floor["probes"]) == (1, 1, 2), floor
    assert floor["hits"] == 2 * polls, floor
    assert floor["program"] == "floor_count"


@needs_root
def test_floor_without_count_is_the_empty_program(tools):
    proc = subprocess.run([str(tools["floor"]), "*Trivial*", "--", str(HANDWRITTEN), "loop", "100"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, util.describe(proc)
    floor = tool_json(proc.stderr, "floor: ")
    assert floor["program"] == "floor_empty" and floor["hits"] == 0 and floor["status"] == 0


@needs_root
def test_floor_times_the_tracers_own_parts(tools):
    proc = subprocess.run([str(tools["floor"]), "--tracer", "--attach-only", str(HANDWRITTEN), "*Trivial*"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, util.describe(proc)
    t = tool_json(proc.stderr, "tracer: ")
    assert t["probes"] == 2 and t["multi"] is True, t
    assert t["verified_insns"] > 0
    for k in ("load_ms", "fill_ms", "fill_batch_ms", "attach_ms", "detach_ms"):
        assert t[k] >= 0, t


@needs_root
@pytest.mark.parametrize("rule", [[], ["--wakeup-on-crossing"], ["--wakeup-bytes", "0xffffffffffff"]],
                         ids=["tracer-wakeups", "crossing", "never-forced"])
def test_consumer_bench_low_rate_loses_nothing(tools, tmp_path, rule):
    out = tmp_path / "consumer.pftrace"
    proc = subprocess.run([str(tools["consumer"]), *rule, "--rates", "0.02,0.05", "--seconds", "0.5", "-o",
                           str(out), str(HANDWRITTEN)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, util.describe(proc)
    lines = [json.loads(l) for l in proc.stdout.splitlines()]
    steps = [s for s in lines if "target_rate" in s]
    assert len(steps) == 2
    size, = [s for s in lines if "pftrace_bytes" in s]
    assert size["pftrace_bytes"] == out.stat().st_size
    assert size["records"] == sum(s["received"] for s in steps)
    for s in steps:
        assert s["dropped"] == 0, s
        assert s["received"] == s["produced"], s
        # one batch per millisecond for half a second
        assert s["produced"] >= 0.9 * s["target_rate"] * 0.5, s
        assert s["consumer_ns_per_record"] > 0, s
    assert out.stat().st_size > 0


@needs_root
def test_consumer_bench_null_consumer_counts_everything(tools, tmp_path):
    proc = subprocess.run([str(tools["consumer"]), "--null-consumer", "--rates", "0.1", "--seconds", "0.3", "-o",
                           str(tmp_path / "c.pftrace"), str(HANDWRITTEN)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, util.describe(proc)
    s = json.loads(proc.stdout.splitlines()[0])
    assert s["dropped"] == 0 and s["received"] == s["produced"] > 0, s


def test_trace_helper_strace_spans(tmp_path):
    """Attach: first uprobe perf_event_open to the last ioctl on those fds; detach:
    first close of one of them to the last (other perf events and fds are ignored)."""
    trace = tmp_path / "s.txt"
    trace.write_text(
        "100 1.000000 perf_event_open({type=0x8 /* PERF_TYPE_??? */, size=0x88}, -1, 0, -1, PERF_FLAG_FD_CLOEXEC) = 5 <0.001000>\n"
        "100 1.002000 perf_event_open({type=PERF_TYPE_SOFTWARE, size=0x88}, -1, 0, -1, PERF_FLAG_FD_CLOEXEC) = 6 <0.001000>\n"
        "100 1.010000 ioctl(5, PERF_EVENT_IOC_SET_BPF, 7) = 0 <0.000500>\n"
        "100 1.020000 perf_event_open({type=0x8 /* PERF_TYPE_??? */, size=0x88}, -1, 0, -1, PERF_FLAG_FD_CLOEXEC) = 8 <0.001000>\n"
        "100 1.030000 ioctl(8, PERF_EVENT_IOC_ENABLE, 0) = 0 <0.001000>\n"
        "100 2.000000 close(6) = 0 <0.000010>\n"
        "100 3.000000 close(5) = 0 <0.100000>\n"
        "100 3.200000 close(8) = 0 <0.100000>\n")
    proc = subprocess.run(["/usr/bin/python3", str(HELPER), "strace-spans", str(trace), "8"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, util.describe(proc)
    d = json.loads(proc.stdout)
    assert d["probes"] == 2 and d["left_open"] == 0
    assert d["attach_ms"] == pytest.approx(31.0)
    assert d["detach_ms"] == pytest.approx(300.0)
