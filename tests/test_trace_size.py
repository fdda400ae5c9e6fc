# SPDX-License-Identifier: GPL-2.0
"""The Perfetto trace's size (issue 8): bytes per poll, --max-size, --ring.

Ground truth: the `handwritten` fixture's `loop N` mode polls its Trivial future
exactly N times and says so ({"polls": N, ...}); every file is read back by
tests/perfetto_reader.py, which shares no code with the writer.
"""
import json
import re

import pytest

import perfetto_reader
import util

LOOP = util.fixture_binary("release", "handwritten")


@pytest.fixture(scope="module", autouse=True)
def trace_features():
    util.require_trace_features()
    util.require_file(LOOP, "the fixture", "run 'make fixtures'")


def loop(tmp_path, n, *extra):
    summary = tmp_path / "summary.json"
    proc = util.run_asyncbpf("trace", "--deep", "--summary-json", summary, *extra, "--", LOOP, "loop", n, timeout=300)
    assert proc.returncode == 0, util.describe(proc)
    truth = json.loads(proc.stdout.strip().splitlines()[-1])
    assert truth["polls"] == n
    return proc, json.loads(summary.read_text())


def thread_slices(trace):
    """The polls' slices on the thread tracks (not the off-CPU slices nested in them)."""
    threads = trace.thread_tracks()
    return [s for s in trace.slices if s.track in threads and not util.is_block_slice_name(s.name)]


def test_bytes_per_poll(tmp_path):
    """≤ 64 bytes a poll by default (every poll here is a task's own poll, the
    most expensive kind: it carries the flow to its next poll)."""
    n = 20000
    out = tmp_path / "t.pftrace"
    _, s = loop(tmp_path, n, "-o", out)
    assert s["totals"]["records"] == n and s["totals"]["dropped"] == 0
    t = perfetto_reader.read(out)
    assert len(thread_slices(t)) == n
    assert t.size / n <= 64, f"{t.size / n:.1f} bytes per poll"


def test_max_size_stops_tracing(tmp_path):
    out = tmp_path / "s.pftrace"
    limit = 256 << 10
    proc, s = loop(tmp_path, 200000, "--max-size", "256K", "-o", out)
    assert "reached --max-size" in proc.stderr, proc.stderr
    t = perfetto_reader.read(out)
    assert t.size <= limit
    (_, _, name, args), = t.instants
    not_written = args["not_written"]
    assert name == f"asyncbpf: {not_written} polls not written (--max-size)"
    # every poll the tracer saw is either in the file or counted as not written
    assert len(thread_slices(t)) + not_written == s["totals"]["records"]
    assert s["totals"]["records"] < 200000  # it stopped


def test_ring_keeps_the_newest_files(tmp_path):
    n = 200000
    base = tmp_path / "r.pftrace"
    proc, s = loop(tmp_path, n, "--max-size", "1M", "--ring", "4", "-o", base)
    assert s["totals"]["records"] == n and s["totals"]["dropped"] == 0
    files = sorted(tmp_path.glob("r.pftrace.*"), key=lambda p: int(p.suffix[1:]))
    assert len(files) == 4, files
    numbers = [int(p.suffix[1:]) for p in files]
    assert numbers == list(range(numbers[0], numbers[0] + 4)) and numbers[0] > 1
    assert re.search(rf"wrote {re.escape(str(base))}\.{numbers[0]} to {re.escape(str(base))}\.{numbers[-1]}, "
                     rf"the newest 4 of {numbers[-1]} files", proc.stderr), proc.stderr
    last_end, total = 0, 0
    for i, f in enumerate(files):
        t = perfetto_reader.read(f)  # each a complete trace of its own
        assert t.size <= (1 << 20) // 4
        sl = thread_slices(t)
        assert sl and sl[0].ts >= last_end  # newer data in later files
        last_end = max(x.ts + x.dur for x in sl)
        total += len(sl)
        (_, _, name, _), = t.instants
        assert name == ("asyncbpf totals" if i == 3 else "asyncbpf: continued in the next file")
    assert total < n  # the oldest files are gone


@pytest.mark.parametrize("args", [["--max-size", "1K"], ["--ring", "4", "--max-size", "128K"],
                                  ["--ring", "1"], ["--ring", "2", "--chrome", "x.json"],
                                  ["--ring", "2", "--max-size", "0"]])
def test_size_usage_errors(args, tmp_path):
    proc = util.run_asyncbpf("trace", "--deep", *args, "--", LOOP, "loop", "1", cwd=tmp_path)
    assert proc.returncode == 2, util.describe(proc)
    assert "trace: --" in proc.stderr
