# SPDX-License-Identifier: GPL-2.0
"""asyncbpf trace, end to end as root (docs/tracing.md).

Expected values come from the fixtures themselves: `handwritten` prints its own
ground truth (polls of each hand-written future, starts and completions of each
async fn) and the traced run must print the same bytes as an untraced one. The
Perfetto output is decoded with `protoc --decode_raw`, the Chrome JSON with `json`,
and leftover links are looked up with `bpftool`, not asked of asyncbpf.
"""
import json
import os
import re
import signal
import subprocess
import time

import pytest

import util
from util import (check_chrome, check_pftrace, fixture_name, ground_truth, load_summary,  # noqa: F401
                  run_traced, untraced, uprobes)

HANDWRITTEN = util.fixture_binary("debug", "handwritten")
DEMO = util.fixture_binary("debug", "demo")

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="asyncbpf trace loads BPF programs: run the suite as root")


@needs_root
def test_launch_handwritten_matches_ground_truth(uprobes, tmp_path):
    util.require_file(HANDWRITTEN, "the fixture", "run 'make fixtures'")
    plain = untraced(HANDWRITTEN)
    assert plain.returncode == 0, plain.stderr
    proc, paths = run_traced(tmp_path, HANDWRITTEN)
    assert proc.returncode == plain.returncode, util.describe(proc)
    # the traced program's own output, byte for byte (the summary goes to stderr)
    assert proc.stdout == plain.stdout, util.describe(proc)
    truth = ground_truth(plain.stdout)
    summary = load_summary(paths)
    totals = summary["totals"]
    assert totals["dropped"] == 0, totals
    assert totals["truncated"] == 0, totals
    assert totals["bpf_records"] == totals["records"] + totals["dropped"], totals
    assert totals["unprobeable_exits"] == 0
    assert totals["probes_attached"] > 0

    by_name = {}
    for entry in summary["futures"]:
        name = fixture_name(entry)
        if name:
            assert name not in by_name, f"two summary entries answer to {name}"
            by_name[name] = entry
    # hand-written futures: every poll is a call of the out-of-line poll fn (debug build)
    for name, counts in truth["futures"].items():
        if counts["polls"] == 0:
            assert name not in by_name, by_name.get(name)
            continue
        assert name in by_name, f"{name}: no polls traced; summary has {sorted(by_name)}"
        assert by_name[name]["polls"] == counts["polls"], (name, by_name[name], counts)
        # Ready from the Poll<T> return value where it is decoded (unknown otherwise)
        entry = by_name[name]
        if entry["unknown"] == 0:
            assert entry["ready"] == counts["ready"], (name, entry, counts)
    # async fns, blocks, closures: one Ready per completion, one first poll per start
    for name, counts in truth["async_fns"].items():
        assert name in by_name, f"{name}: no polls traced; summary has {sorted(by_name)}"
        entry = by_name[name]
        assert entry["ready"] == counts["completions"], (name, entry, counts)
        assert entry["panicked"] == 0 and entry["truncated"] == 0 and entry["unknown"] == 0, entry
        assert entry["polls"] == entry["ready"] + entry["pending"], entry
        assert entry["polls"] >= counts["starts"], entry
    # the executor's calls of the root tasks' polls
    roots = {t["name"]: t["root_polls"] for t in truth["executor"]["tasks"]}
    for task, polls in roots.items():
        assert by_name[task]["polls"] == polls, (task, by_name[task], polls)

    check_pftrace(paths["pftrace"], totals["records"])
    check_chrome(paths["chrome"], totals["records"])
    for p in paths.values():
        assert (os.stat(p).st_mode & 0o777) == 0o600, p


@needs_root
def test_launch_handwritten_folded_and_dot(uprobes, tmp_path):
    """--folded and --dot on the fixture's marker graph: middle awaits leaf."""
    util.require_file(HANDWRITTEN, "the fixture", "run 'make fixtures'")
    folded, dot = tmp_path / "run.folded", tmp_path / "run.dot"
    proc, _ = run_traced(tmp_path, HANDWRITTEN, extra=("--folded", folded, "--dot", dot))
    assert proc.returncode == 0, util.describe(proc)
    stacks = {}
    for line in folded.read_text(encoding="utf-8").splitlines():
        stack, count = line.rsplit(" ", 1)
        assert stack and count.isdigit() and int(count) > 0, line
        assert stack not in stacks, f"stack written twice: {line}"
        stacks[stack] = int(count)
    assert any(s.endswith(";handwritten::middle;handwritten::leaf") for s in stacks), sorted(stacks)

    util.need_tool("dot")
    text = dot.read_text(encoding="utf-8")
    rendered = subprocess.run(["dot", "-Tsvg", str(dot)], capture_output=True, timeout=60)
    assert rendered.returncode == 0 and rendered.stdout.lstrip().startswith(b"<"), rendered.stderr
    assert not rendered.stderr, rendered.stderr
    nodes = dict(re.findall(r'^\t(\w+) \[label="([^"\\]*)\\n', text, re.M))
    middle = [n for n, name in nodes.items() if name == "handwritten::middle"]
    leaf = [n for n, name in nodes.items() if name == "handwritten::leaf"]
    assert len(middle) == 1 and len(leaf) == 1, nodes
    edge = re.search(rf'^\t{middle[0]} -> {leaf[0]} \[label="(\d+) polls?"\]', text, re.M)
    assert edge and int(edge.group(1)) > 0, text


@needs_root
def test_launch_panic_keeps_behaviour(uprobes, tmp_path):
    """The uretprobe hazard guard: a panic unwinding through traced polls must not kill
    the program or change what it prints."""
    util.require_file(HANDWRITTEN, "the fixture", "run 'make fixtures'")
    env = dict(os.environ, RUST_BACKTRACE="0")
    plain = subprocess.run([str(HANDWRITTEN), "panic"], capture_output=True, text=True, timeout=60, env=env)
    proc, paths = run_traced(tmp_path, HANDWRITTEN, "panic")
    assert proc.returncode == plain.returncode == 0, util.describe(proc)
    assert proc.stdout == plain.stdout, util.describe(proc)
    assert "caught panic in task panicky_task" in proc.stdout
    assert "will_panic: deliberate panic" in proc.stderr
    assert "fatal runtime error" not in proc.stderr
    summary = load_summary(paths)
    by_name = {fixture_name(e): e for e in summary["futures"]}
    for name in ("will_panic", "panicky_task"):
        entry = by_name[name]
        # the poll that panicked never returned: never Ready
        assert entry["ready"] == 0, entry
        assert entry["panicked"] + entry["truncated"] >= 1, entry
    assert by_name["survivor_task"]["ready"] == 1
    assert summary["totals"]["dropped"] == 0


@needs_root
def test_tail_called_result(uprobes, tmp_path):
    """Release builds compile tokio's `<Notified as Future>::poll` to `mov rsi, [rsi];
    jmp Notified::poll_notified`: the Poll<()> is computed after the jump, so the poll
    ends at poll_notified's ret (docs/tracing.md, "Tail calls"). The demo's only
    Notified is its cache refresher's `stop.changed()`, polled on every tick: nothing
    notifies it but the one stop at the end, so it returns Ready at most once (once,
    unless the stop lands while refresh_cache runs: changed() then sees the new
    value without waiting). Read at the jump, rax made up Readies and bad values."""
    demo = util.fixture_binary("release", "demo")
    util.require_file(demo, "the fixture", "run 'make fixtures'")
    proc, paths = run_traced(tmp_path, demo, "--seconds", "2", extra=("--all-crates",))
    assert proc.returncode == 0, util.describe(proc)
    assert "tail-jump to" in proc.stderr, util.describe(proc)
    assert re.search(r"[1-9]\d* cache refreshes", proc.stdout), proc.stdout
    rows = [row for row in load_summary(paths)["futures"] if row["name"] == "tokio::sync::notify::Notified"]
    assert len(rows) == 1, rows
    row = rows[0]
    assert row["unknown"] == 0 and row["truncated"] == 0, row
    assert row["ready"] + row["pending"] == row["polls"], row
    assert row["ready"] <= 1, row
    assert row["polls"] >= 2, row  # polled while waiting, and at least once more


def start_demo(seconds):
    util.require_file(DEMO, "the fixture", "run 'make fixtures'")
    demo = subprocess.Popen([str(DEMO), "--seconds", str(seconds)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    time.sleep(0.3)  # past its start-up, into the serving loop
    assert demo.poll() is None, demo.communicate()
    return demo


@needs_root
def test_pid_mode_on_demo(uprobes, tmp_path):
    demo = start_demo(4)
    try:
        out, summary_path = tmp_path / "demo.pftrace", tmp_path / "demo-summary.json"
        chrome, records_path = tmp_path / "demo.json", tmp_path / "demo.jsonl"
        proc = util.run_asyncbpf("trace", "--deep", "-p", demo.pid, "--duration", "2", "-o", out, "--chrome", chrome,
                                 "--summary-json", summary_path, "--records", records_path, timeout=60)
        assert proc.returncode == util.EXIT_OK, util.describe(proc)
        assert "FUTURE" in proc.stdout  # the summary table: stdout in -p mode
        with open(summary_path, encoding="utf-8") as f:
            summary = json.load(f)
        totals = summary["totals"]
        assert totals["records"] > 0, totals
        assert totals["dropped"] == 0, totals
        assert totals["bpf_records"] == totals["records"] + totals["dropped"], totals
        check_pftrace(out)
        check_chrome(chrome, totals["records"])
        with open(records_path, encoding="utf-8") as f:
            records = [json.loads(line) for line in f]
        assert len(records) == totals["records"]
        for r in records:
            assert r["pid"] == demo.pid, r
            assert r["self"] != 0 and r["end_ns"] >= r["start_ns"], r
            if r["depth"] == 0:
                assert r["parent_self"] == 0 and r["parent_poll"] == -1, r
                assert (r["task_self"], r["task_poll"]) == (r["self"], r["poll"]), r
            else:
                assert r["parent_self"] != 0 and r["parent_poll"] >= 0, r
                assert r["task_self"] != 0, r
        # the demo's handlers await fetch_user/query_db: nesting must show up
        assert max(r["depth"] for r in records) >= 1
    finally:
        out_demo, err_demo = demo.communicate(timeout=30)
    assert demo.returncode == 0, err_demo


def link_ids_of(pid):
    """BPF link ids held open by a process (from its fdinfo)."""
    ids = set()
    fd_dir = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fd_dir):
        try:
            with open(os.path.join(fd_dir, fd)) as f:
                m = re.search(r"^link_id:\s*(\d+)", f.read(), re.M)
        except OSError:
            continue
        if m:
            ids.add(int(m.group(1)))
    return ids


def live_link_ids():
    util.need_tool("bpftool")
    out = subprocess.run(["bpftool", "-j", "link", "show"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return {link["id"] for link in json.loads(out.stdout or "[]")}


@needs_root
def test_sigkill_leaves_target_and_no_probe(uprobes, tmp_path):
    demo = start_demo(4)
    tracer = subprocess.Popen([str(util.ASYNCBPF), "trace", "--deep", "-p", str(demo.pid), "-o", str(tmp_path / "k.pftrace")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=util.san_env())
    watch = util.StderrWatch(tracer)
    try:
        # its links once it says it attached: before that it also holds the
        # short-lived link of its probe-cost calibration, gone by then
        assert watch.wait("trace: attached", timeout=60), watch.text
        ids = link_ids_of(tracer.pid)
        assert ids, "the tracer held no BPF link once attached"
        assert ids <= live_link_ids()
        time.sleep(0.5)  # tracing
        tracer.send_signal(signal.SIGKILL)
        tracer.wait(timeout=30)
        time.sleep(0.3)
        assert not (ids & live_link_ids()), f"links {ids & live_link_ids()} outlived the tracer"
    finally:
        if tracer.poll() is None:
            tracer.kill()
            tracer.wait()
        out, err = demo.communicate(timeout=30)
    assert demo.returncode == 0, err
    assert "done after" in out
    # no complete-looking output was left behind by the killed run
    assert not (tmp_path / "k.pftrace").exists()


@needs_root
def test_nonexistent_pid(uprobes):
    pid = 4194304 + 7  # above pid_max's limit: never a process
    proc = util.run_asyncbpf("trace", "-p", pid, "--duration", "1")
    assert proc.returncode == util.EXIT_NO_INPUT, util.describe(proc)
    assert "no such process" in proc.stderr


@needs_root
def test_missing_command():
    proc = util.run_asyncbpf("trace", "--", "/nonexistent/asyncbpf-test-command")
    assert proc.returncode == util.EXIT_NO_INPUT, util.describe(proc)


def test_not_root_is_refused(tmp_path):
    util.require_file(util.ASYNCBPF, "the sanitizer build", "run 'make san'")
    if os.geteuid() == 0:
        if not util.have_tool("setpriv"):
            pytest.skip("setpriv is not installed")
        prefix = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--inh-caps=-all"]
    else:
        prefix = []
    proc = subprocess.run(prefix + [str(util.ASYNCBPF), "-p", str(os.getpid())], capture_output=True, text=True,
                          timeout=60, env=util.san_env(), cwd=tmp_path)
    util.assert_no_sanitizer_report(proc)
    assert proc.returncode == util.EXIT_NO_PERMISSION, util.describe(proc)
    assert "needs root" in proc.stderr and "CAP_BPF" in proc.stderr, proc.stderr


def test_usage_errors():
    util.require_file(util.ASYNCBPF, "the sanitizer build", "run 'make san'")
    for args in (["trace"], ["trace", "-p", "1", "--", "true"], ["trace", "-p", "abc"],
                 ["trace", "-p", "1", "--duration", "-1"], ["trace", "-p", "1", "--ringbuf-size", "12x"],
                 ["trace", "--"]):
        proc = util.run_asyncbpf(*args)
        assert proc.returncode == util.EXIT_USAGE, util.describe(proc)
