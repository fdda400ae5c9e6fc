# SPDX-License-Identifier: GPL-2.0
"""Task mode (`trace --tasks`, docs/tracing.md "Task mode"): one probe pair per task
poll, each task's tree of futures read from memory at the poll's start and end.

Ground truth comes from the programs themselves: the fixtures' marked await lines
(`// AWAIT caller->callee`) and the counts they print, and hyper's server's own
request and connection counts against http_server's client. What task mode cannot
see (a future that starts and finishes inside one task poll; the Ready of an
instance replaced at the same place before a poll ended; polls of one task on two
threads at once) is bounded by what it counts of it (`went_back`,
`concurrent_polls`), never guessed.
"""
import json
import re
import subprocess
import time

import pytest

import conformance_lib as C
import servers_lib as S
import util

pytestmark = pytest.mark.usefixtures("trace_features")

PARKED = {  # park_main's tasks and the futures below them, each parked for good
    "dead_a": 1, "dead_b": 1, "chan_task": 1, "timer_task": 1, "nest_task": 1, "nest_middle": 1,
    "nest_leaf": 1, "lost_task": 1, "lost_leaf": 1, "many_task": None, "many_leaf": None,
}
PARK_N = 3
PARK_TASKS = ("dead_a", "dead_b", "chan_task", "timer_task", "nest_task", "lost_task", "many_task")


@pytest.fixture(scope="module")
def trace_features():
    util.require_trace_features()


I = (util.INT,)
TM_FIELDS = {k: I for k in ("task_polls", "lost", "not_read", "finished_polls", "concurrent_polls", "cut", "unknown_task_polls",
                            "unknown_dyn", "untracked_tasks", "untracked_instances", "wakes_unlinked")}
TM_FIELDS.update({k: (util.LIST,) for k in ("futures", "tasks", "pending_at_end")})
TM_FUTURE = {k: I for k in ("future", "polls", "started", "went_back", "ready", "ended", "pending")}
TM_FUTURE["parked_at"] = (util.LIST,)
TM_FUTURE.update({"name": (util.STR,), "path": (util.STR,)})
TM_TASK = {k: I for k in ("root", "tasks", "completed", "cancelled", "polls", "busy_ns", "offcpu_ns", "p50_ns", "p99_ns", "max_ns",
                          "wakes", "self_wakes", "delay_p50_ns", "delay_p99_ns", "delay_max_ns", "blocked",
                          "blocked_ns", "preempted_ns", "tracer_ns", "polls_over_threshold")}
TM_TASK["name"] = (util.STR,)
TM_PENDING = {"name": (util.STR,), "future": I, "count": I, "await": (util.INT, util.NULL)}


def task_mode(summary_path):
    """The summary of a task-mode run, its task_mode section checked against
    docs/json-schema.md."""
    doc = util.load_json(summary_path)
    assert doc["schema"] == "asyncbpf-trace-summary/2", doc["schema"]
    assert "task_mode" in doc, sorted(doc)
    tm, errors = doc["task_mode"], []
    util.check_shape(tm, TM_FIELDS, "task_mode", errors)
    for key, shape in (("futures", TM_FUTURE), ("tasks", TM_TASK), ("pending_at_end", TM_PENDING)):
        for i, row in enumerate(tm.get(key, [])):
            util.check_shape(row, shape, f"task_mode.{key}[{i}]", errors)
    for i, row in enumerate(tm.get("pending_at_end", [])):
        if ("file" in row) != ("line" in row):
            errors.append(f"task_mode.pending_at_end[{i}]: a file without a line, or the reverse")
    for k in ("task_trees", "task_trees_dropped"):
        util.check_shape(doc["totals"], {k: I}, "totals", errors)
    assert not errors, "\n".join(errors)
    return doc, tm


def by_name(rows, crate):
    """Rows of the crate's own futures by their short name (`tokio_mt::load_leaf`)."""
    return {r["name"][len(crate) + 2:]: r for r in rows if r["name"].startswith(crate + "::")}


def analyze(binary, tmp_path):
    """The analyzer's model of binary (analyze --json), for what is out of line."""
    out = tmp_path / "model.json"
    proc = util.run_asyncbpf("analyze", binary, "--json", out, timeout=300)
    assert proc.returncode == 0, util.describe(proc)
    return util.load_json(out)


def check_clean(doc, tm):
    """Nothing lost, dropped, cut or unattributed: the counts below are all there is."""
    t = doc["totals"]
    assert t["task_trees"] > 0 and t["task_trees_dropped"] == 0 and t["dropped"] == 0, t
    assert tm["lost"] == 0 and tm["cut"] == 0 and tm["unknown_dyn"] == 0 and tm["not_read"] == 0, tm
    assert tm["untracked_tasks"] == 0 and tm["untracked_instances"] == 0, tm


def trace_until_eof(argv):
    """A trace of a fixture mode that prints one JSON line of its own counts and then
    waits for EOF on stdin: (that line, the finished run). The line comes from inside
    a poll: that poll and the tasks' last ones end before the EOF is sent (after it
    the fixture exits in a poll)."""
    tracer = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=util.san_env())
    try:
        truth = json.loads(tracer.stdout.readline())
        time.sleep(0.5)
        tracer.stdin.close()  # EOF: the fixture exits
        tracer.stdin = None
        out, err = tracer.communicate(timeout=120)
    finally:
        if tracer.poll() is None:
            tracer.kill()
            tracer.wait()
    proc = subprocess.CompletedProcess(argv, tracer.returncode, out.decode(), err.decode())
    util.assert_no_sanitizer_report(proc)
    assert proc.returncode == 0, util.describe(proc)
    return truth, proc


@pytest.mark.parametrize("profile", util.PROFILES)
def test_park_pending_at_marked_lines(profile, tmp_path):
    """tokio_mt park: every parked future is pending at the end at its final marked
    await (the line it parks on), once per parked instance; every spawned task is
    counted once and none completed."""
    b = util.fixture_binary(profile, "tokio_mt")
    src = util.fixture_source("tokio_mt")
    summary = tmp_path / "s.json"
    argv = [str(util.ASYNCBPF), "trace", "--tasks", "-o", str(tmp_path / "r.pftrace"), "--chrome",
            str(tmp_path / "r.json"), "--summary-json", str(summary), "--", str(b), "park", str(PARK_N)]
    truth, proc = trace_until_eof(argv)
    assert truth["mode"] == "park" and truth["many_task"] == PARK_N, truth
    doc, tm = task_mode(summary)
    check_clean(doc, tm)

    tasks = by_name(tm["tasks"], "tokio_mt")
    assert sum(truth[name] for name in PARK_TASKS) == truth["tasks"]
    for name in PARK_TASKS:
        assert name in tasks, (name, sorted(tasks))
        assert tasks[name]["tasks"] == truth[name] and tasks[name]["completed"] == 0, tasks[name]
    pending = {}
    for row in tm["pending_at_end"]:
        if row["name"].startswith("tokio_mt::"):
            pending.setdefault(row["name"][len("tokio_mt::"):], []).append(row)
    parked = dict(PARKED)
    for name, count in parked.items():
        final = src.markers_of(name)[-1]
        assert name in pending, (name, sorted(pending))
        rows = pending[name]
        assert len(rows) == 1, rows  # one await line for every instance
        row = rows[0]
        assert row["file"].endswith("tokio_mt/src/" + final.file) and row["line"] == final.line, (row, final)
        assert row["count"] == (PARK_N if count is None else count), row
    # park_main is block_on's future: a task of task mode where its poll has a function
    # of its own to probe (debug), pending at its last marked await like the others
    model = analyze(b, tmp_path)
    main = [f for f in model["futures"] if f["name"] == "tokio_mt::park_main"][0]
    assert main["block_on_root"], main
    if main["poll"] is None or model["polls"][main["poll"]]["inlined_only"]:
        assert "park_main" not in tasks
    else:
        assert tasks["park_main"]["tasks"] == 1 and tasks["park_main"]["completed"] == 0, tasks
        final = src.markers_of("park_main")[-1]
        assert [(r["line"], r["count"]) for r in pending["park_main"]] == [(final.line, 1)], pending
    check_perfetto_chains(tmp_path / "r.pftrace", tm, src)
    # the Chrome trace: the same slices with the same chains
    chrome = [e for e in util.load_json(tmp_path / "r.json")["traceEvents"] if e.get("ph") == "X" and e["cat"] == "poll"]
    assert len(chrome) == tm["task_polls"] and all(e["args"]["depth"] == 0 for e in chrome), len(chrome)
    stacks = {e["name"]: e["args"]["await_stack"] for e in sorted(chrome, key=lambda e: e["ts"])}
    assert stacks["tokio_mt::nest_task"].startswith("tokio_mt::nest_task ("), stacks


PARK_CHAINS = {"dead_a": ["dead_a"], "dead_b": ["dead_b"], "chan_task": ["chan_task"], "timer_task": ["timer_task"],
               "nest_task": ["nest_task", "nest_middle", "nest_leaf"], "lost_task": ["lost_task", "lost_leaf"],
               "many_task": ["many_task", "many_leaf"]}


# what the abort fixtures' tasks await: (the victims' timer, the finishers' channel)
ABORT_AWAITS = {"tokio_mt": ("tokio::time::sleep::Sleep", "tokio::sync::oneshot::Receiver"),
                "smol_app": ("async_io::Timer", "async_channel::Recv<u64>")}


@pytest.mark.parametrize("profile", util.PROFILES)
@pytest.mark.parametrize("crate", sorted(ABORT_AWAITS))
def test_aborted_tasks_end_cancelled_not_ready(trace_features, crate, profile, tmp_path):
    """Ground truth: `CRATE abort N` parks N abort_victim tasks at a timer and
    cancels them (tokio's JoinHandle::abort, async-task's Task::cancel: the runtime
    drops the future in a poll that begins with the task's CANCELLED / CLOSED flag
    set), and lets N abort_finisher tasks return; it prints what their handles said.
    Each victim: a task, completed and cancelled, its root future and the timer it
    awaited ended, never Ready; each finisher: completed, not cancelled, its root
    and the channel it awaited Ready."""
    n = 6
    summary = tmp_path / "s.json"
    argv = [str(util.ASYNCBPF), "trace", "--tasks", "-o", str(tmp_path / "r.pftrace"), "--summary-json", str(summary),
            "--", str(util.fixture_binary(profile, crate)), "abort", str(n)]
    truth, proc = trace_until_eof(argv)
    assert truth == {"mode": "abort", "abort_victim": n, "cancelled": n, "abort_finisher": n, "returned": n}, truth
    doc, tm = task_mode(summary)
    check_clean(doc, tm)
    assert tm["concurrent_polls"] == 0, tm  # else a Ready may be counted apart

    def task_row(fn):  # tokio: the async fn is the root; async-task: spawn's block holds it
        rows = [r for r in tm["tasks"] if r["name"] == f"{crate}::{fn}" or f"{crate}::{fn}::{{async_fn_env" in r["name"]]
        assert len(rows) == 1, (fn, [r["name"] for r in tm["tasks"]])
        return rows[0]
    victim, finisher = task_row("abort_victim"), task_row("abort_finisher")
    assert (victim["tasks"], victim["completed"], victim["cancelled"]) == (n, n, truth["cancelled"]), victim
    assert (finisher["tasks"], finisher["completed"], finisher["cancelled"]) == (n, truth["returned"], 0), finisher
    futures = by_name(tm["futures"], crate)
    assert (futures["abort_victim"]["ready"], futures["abort_victim"]["ended"]) == (0, n), futures["abort_victim"]
    assert (futures["abort_finisher"]["ready"], futures["abort_finisher"]["ended"]) == (n, 0), futures["abort_finisher"]
    timer, channel = ABORT_AWAITS[crate]
    named = {r["name"]: r for r in tm["futures"]}
    # (abort_main's own timers go Ready where block_on's future is a task: debug)
    rows = [r for name, r in named.items() if name.startswith(timer)]
    assert len(rows) == 1 and rows[0]["ended"] == n, rows
    rows = [r for name, r in named.items() if name.startswith(channel)]
    assert len(rows) == 1 and (rows[0]["ready"], rows[0]["ended"]) == (n, 0), rows
    # the text says it too: TASKS COMPLETED CANCELLED
    row = [ln.split() for ln in proc.stderr.splitlines() if ln.endswith(victim["name"]) and
           ln.split()[11:] == victim["name"].split()]
    assert [r[:3] for r in row] == [[str(n), str(n), str(n)]], proc.stderr


@pytest.mark.parametrize("profile", util.PROFILES)
@pytest.mark.parametrize("crate", ["tokio_mt", "smol_app"])
def test_aborts_landing_inside_a_poll(trace_features, crate, profile, tmp_path):
    """Ground truth: `CRATE midabort N` has N midpoll_victim tasks cancel themselves
    while they run and then yield (tokio: their own AbortHandle; async-task: their own
    `Task` dropped): the poll returns Pending and the runtime drops the future at its
    end; N late_abort tasks cancel themselves and then return: Ready first (tokio's
    JoinHandle says Ok; async-task: COMPLETED). It prints its own counts (the
    JoinHandles; smol: a guard in each future). The cancel flag is clear when each of
    those polls begins and set when it ends, either way: only what the runtime left
    tells them apart (tokio's Stage, async-task's COMPLETED). Each victim: completed
    and cancelled, its root future ended, never Ready; each late one: completed,
    Ready, not cancelled; none left unsure."""
    n = 6
    summary = tmp_path / "s.json"
    argv = [str(util.ASYNCBPF), "trace", "--tasks", "-o", str(tmp_path / "r.pftrace"), "--summary-json", str(summary),
            "--", str(util.fixture_binary(profile, crate)), "midabort", str(n)]
    truth, proc = trace_until_eof(argv)
    assert truth == {"mode": "midabort", "midpoll_victim": n, "cancelled": n, "late_abort": n, "returned": n,
                     "late_cancelled": 0}, truth
    doc, tm = task_mode(summary)
    check_clean(doc, tm)
    assert tm["concurrent_polls"] == 0, tm

    def task_row(fn):  # tokio: the async fn is the root; async-task: spawn's block holds it
        rows = [r for r in tm["tasks"] if r["name"] == f"{crate}::{fn}" or f"{crate}::{fn}::{{async_fn_env" in r["name"]]
        assert len(rows) == 1, (fn, [r["name"] for r in tm["tasks"]])
        return rows[0]
    victim, late = task_row("midpoll_victim"), task_row("late_abort")
    assert (victim["tasks"], victim["completed"], victim["cancelled"], victim["end_unsure"]) == \
        (n, n, truth["cancelled"], 0), victim
    assert (late["tasks"], late["completed"], late["cancelled"], late["end_unsure"]) == \
        (n, truth["returned"], truth["late_cancelled"], 0), late
    futures = by_name(tm["futures"], crate)
    assert (futures["midpoll_victim"]["ready"], futures["midpoll_victim"]["ended"]) == (0, n), futures["midpoll_victim"]
    assert (futures["late_abort"]["ready"], futures["late_abort"]["ended"]) == (n, 0), futures["late_abort"]


def check_perfetto_chains(pftrace, tm, src):
    """Task mode's Perfetto trace, read by a reader that shares no code with the
    writer: one slice per task poll (as many as the summary counts, none nested in
    another), named by the task's root future, with the tree it was left in as
    `await_stack`: each parked task's last slice names its chain of the fixture's own
    futures, root first, each at its final marked await line."""
    import perfetto_reader
    t = perfetto_reader.read(pftrace)
    threads = t.thread_tracks()
    polls = [s for s in t.slices if s.track in threads and "result" in s.args]
    assert len(polls) == tm["task_polls"], (len(polls), tm["task_polls"])
    assert all(s.depth == 0 and "await_stack" in s.args and "state" not in s.args for s in polls), \
        [(s.name, s.depth, s.args) for s in polls if s.depth or "await_stack" not in s.args][:5]
    last = {}
    for s in sorted(polls, key=lambda s: s.ts):
        last.setdefault(s.name, []).append(s)
    part = re.compile(r"^(?P<name>.+?)(?: \((?P<file>[^()]+):(?P<line>\d+)\))?$")
    for task, chain in PARK_CHAINS.items():
        name = "tokio_mt::" + task
        assert name in last, (name, sorted(last))
        s = last[name][-1]
        assert s.args["result"] == "pending", s.args
        parts = [part.match(p).groupdict() for p in s.args["await_stack"].split(" → ")]
        assert len(parts) > len(chain), s.args["await_stack"]  # the runtime's future below
        for want, got in zip(chain, parts):
            final = src.markers_of(want)[-1]
            assert got["name"] == "tokio_mt::" + want, (want, s.args["await_stack"])
            assert got["file"].endswith("tokio_mt/src/" + final.file) and int(got["line"]) == final.line, \
                (want, final, s.args["await_stack"])


@pytest.mark.parametrize("profile", util.PROFILES)
def test_load_counts_within_what_the_trees_can_see(profile, tmp_path):
    """tokio_mt load 1 (64 spawned load_task -> 8 x load_middle -> 2 x load_leaf on two
    workers): tasks and completions exact; each leaf's Ready seen (its awaiter, an
    async fn, moves on); load_middle's Readies seen only where the next instance did
    not take the old one's place at an earlier await within one task poll, and those
    are counted (went_back); the hand-written YieldOnce exact but for polls one
    thread's trees span with another's (concurrent polls, counted)."""
    b = util.fixture_binary(profile, "tokio_mt")
    proc, paths = util.run_traced(tmp_path, b, "load", "1", extra=["--tasks"], timeout=180)
    util.assert_no_sanitizer_report(proc)
    assert proc.returncode == 0, util.describe(proc)
    truth = util.ground_truth(proc.stdout)
    doc, tm = task_mode(paths["summary"])
    check_clean(doc, tm)
    fns = truth["async_fns"]
    assert truth["spawned"] == truth["completed"] == fns["load_task"]["completions"] > 0, truth

    tasks = by_name(tm["tasks"], "tokio_mt")
    assert tasks["load_task"]["tasks"] == truth["spawned"], tasks["load_task"]
    assert tasks["load_task"]["completed"] == truth["completed"], tasks["load_task"]
    futs = by_name(tm["futures"], "tokio_mt")
    concurrent = tm["concurrent_polls"]
    assert futs["load_task"]["ready"] == fns["load_task"]["completions"], futs["load_task"]
    assert futs["load_leaf"]["ready"] == fns["load_leaf"]["completions"], futs["load_leaf"]
    assert futs["load_leaf"]["ended"] == futs["load_middle"]["ended"] == 0
    mid = futs["load_middle"]
    assert mid["went_back"] > 0, mid
    assert mid["ready"] <= fns["load_middle"]["completions"] <= mid["ready"] + mid["went_back"] + concurrent, mid
    y = futs["YieldOnce"]
    ready = truth["futures"]["YieldOnce"]["ready"]
    assert y["ready"] <= ready <= y["ready"] + concurrent, (y, ready, concurrent)
    assert y["polls"] <= truth["futures"]["YieldOnce"]["polls"], y
    # load returns after all its tasks completed: none of their futures is left pending
    assert not any(r["name"].startswith("tokio_mt::load_") for r in tm["pending_at_end"]), tm["pending_at_end"]
    assert tm["task_polls"] >= tasks["load_task"]["polls"] > 0, tm


def server_under_tasks(profile, server, tmp_path, conns, per_conn):
    """A server under `trace --tasks -p` while http_server's client loads it, every
    response right and the server's own counts matching the client's, the run clean:
    (proc, summary, its task_mode, the server's counts)."""
    total = conns * per_conn
    proc, r, load, counts, _ = S.trace_server_under_load(profile, server, tmp_path, conns, per_conn,
                                                          extra=["--tasks"])
    util.assert_no_sanitizer_report(proc)
    assert proc.returncode == 0, util.describe(proc)
    assert load == {"connections": conns, "requests": total, "ok": total}
    assert counts["connections"] == conns and counts["requests"] == total, counts
    doc, tm = task_mode(r.summary)
    check_clean(doc, tm)
    return proc, doc, tm, counts


@pytest.mark.parametrize("profile", util.PROFILES)
def test_hyper_server_tasks_under_p(profile, tmp_path):
    """hyper 0.14's server under `trace --tasks -p` with http_server's client: one
    task per connection (hyper's NewSvcTask, from hyper's own source), each one's
    Ready seen as the client closes; every /work request's handler started once (its
    future is created and first parked inside a connection's task poll). hyper's
    dispatcher, a hand-written future, holds the handler: when it leaves, the trees
    cannot say Ready from dropped, and task mode says `ended`, never Ready."""
    conns, per_conn = 16, 40
    total = conns * per_conn
    proc, doc, tm, counts = server_under_tasks(profile, "hyper_server", tmp_path, conns, per_conn)
    root = S.hyper_connection_task()
    conn = [t for t in tm["tasks"] if t["name"].startswith(root)]
    assert len(conn) == 1, [t["name"] for t in tm["tasks"]]
    assert conn[0]["tasks"] == conns and conn[0]["completed"] == conns, conn[0]
    futs = {f["name"]: f for f in tm["futures"]}
    svc = [f for n, f in futs.items() if n.startswith(root)]
    assert len(svc) == 1 and svc[0]["ready"] == conns, svc
    handle = futs.get("hyper_server::handle")
    work_requests = counts["routes"]["/work"]
    assert handle is not None and work_requests > 0, sorted(futs)
    assert handle["started"] == work_requests, (handle, counts)
    assert handle["ready"] == 0 and handle["ended"] == work_requests, handle
    assert handle["pending"] <= handle["polls"], handle
    sample = doc["wakeups"]["sample"]  # task mode samples wake-ups (10% by default) and says so
    assert sample["sampled"] is True and sample["fraction_planned"] == 0.1, sample
    assert sample["windows"] > 0 and sample["failed_windows"] == 0, sample
    assert 0 < sample["attached_s"] < sample["run_s"], sample


def source_line(path, pattern, after=None):
    """The line number of the first line matching pattern (after the first match of
    `after`, when given) in the program's own source."""
    lines = path.read_text().splitlines()
    start = 0
    if after:
        start = next(i for i, ln in enumerate(lines) if re.search(after, ln))
    return next(i + 1 for i, ln in enumerate(lines) if i >= start and re.search(pattern, ln))


@pytest.mark.parametrize("profile", util.PROFILES)
def test_http_server_handlers(profile, tmp_path):
    """tests/conformance/http_server (tokio; in release every handler future inlined
    into the connection task's block) under `trace --tasks -p`,
    loaded by its client: one task per connection, each completed; `serve` Ready once
    per connection the server counts completed; `work` Ready at most once per /work
    request the server counts (a Ready replaced at the same await inside one task
    poll is not seen, and the summary says so); `route` Ready for at least the `work`s
    seen and at most every request; each future parked only
    at await lines of its own source: work at its yield_now, route at work(n), serve
    at read_request or route, read_request at its read_lines, the connection block at
    serve."""
    conns, per_conn = 8, 40
    total = conns * per_conn
    proc, doc, tm, counts = server_under_tasks(profile, "http_server", tmp_path, conns, per_conn)
    src = util.REPO / "tests" / "conformance" / "http_server" / "src" / "main.rs"
    futs = {k.split("<")[0]: v for k, v in by_name(tm["futures"], "http_server").items()}
    conn = [t for t in tm["tasks"] if t["name"].startswith("http_server::accept_loop::")]
    assert len(conn) == 1, [t["name"] for t in tm["tasks"]]
    assert conn[0]["tasks"] == conns and conn[0]["completed"] == counts["connections_completed"] == conns, conn
    work_requests = counts["routes"]["/work"]
    assert futs["serve"]["ready"] == counts["connections_completed"], futs["serve"]
    # each /work parks at its yields, but a task poll that answers one request and is
    # parked in the next one's work at the same line hides that Ready and that start
    # (docs/tracing.md, "What it cannot see"): lower bounds, and the summary says so
    w = futs["work"]
    assert 0 < w["ready"] <= w["started"] <= work_requests, (w, work_requests)
    assert "READY counts the Readies the trees saw" in proc.stdout + proc.stderr
    assert w["ready"] <= futs["route"]["ready"] <= total, futs["route"]

    def parked(name):
        return {(a["file"].rsplit("/", 1)[-1], a["line"]) for a in futs[name]["parked_at"]}

    def at(*lines):
        return {("main.rs", n) for n in lines}

    assert parked("work") == at(source_line(src, r"yield_now\(\)\.await", after=r"async fn work")), parked("work")
    assert parked("route") == at(source_line(src, r"work\(n\)\.await")), parked("route")
    assert parked("serve") <= at(source_line(src, r"read_request\(&mut rd\)\.await"),
                                 source_line(src, r"route\(&req\.path\)\.await"),
                                 *[source_line(src, rf"wr\.write_all\({w}\.as_bytes\(\)\)\.await") for w in ("head", "body")]), \
        parked("serve")
    assert parked("read_request") <= at(source_line(src, r"read_line\(&mut line\)\.await"),
                                        source_line(src, r"read_line\(&mut h\)\.await")), parked("read_request")
    assert parked("read_request"), futs["read_request"]
    assert not [p for p in tm["pending_at_end"] if p["name"] in ("http_server::serve", "http_server::route")], \
        tm["pending_at_end"]


@pytest.mark.parametrize("profile", util.PROFILES)
def test_handwritten_executor_roots(profile, tmp_path):
    """The hand-written executor (no runtime's task header: its tasks are the futures
    it polls itself) in task mode: each root task's polls are task polls, counted
    exactly as the executor counts its calls of a root task's poll, each task once,
    completed once."""
    b = util.fixture_binary(profile, "handwritten")
    proc, paths = util.run_traced(tmp_path, b, extra=["--tasks"])
    util.assert_no_sanitizer_report(proc)
    assert proc.returncode == 0, util.describe(proc)
    ex = util.ground_truth(proc.stdout)["executor"]
    assert ex["spawned"] == ex["completed"] > 0 and ex["panicked"] == 0, ex
    doc, tm = task_mode(paths["summary"])
    check_clean(doc, tm)
    tasks = by_name(tm["tasks"], "handwritten")
    assert sorted(tasks) == sorted(t["name"] for t in ex["tasks"]), (sorted(tasks), ex["tasks"])
    for t in ex["tasks"]:
        row = tasks[t["name"]]
        assert (row["tasks"], row["completed"], row["polls"]) == (1, 1, t["root_polls"]), (row, t)
    assert tm["task_polls"] == ex["root_polls"], (tm["task_polls"], ex)
    assert "root futures" in proc.stderr, proc.stderr


def test_tasks_options_conflict(tmp_path):
    """--wake-sample with --no-wakes, or out of range, and --tasks with --deep are usage
    errors (exit 2)."""
    b = util.fixture_binary("debug", "tokio_mt")
    for extra in (["--wake-sample", "50", "--no-wakes"], ["--wake-sample", "0"], ["--wake-sample", "101"],
                  ["--wake-sample", "x"], ["--deep"]):
        proc = util.run_asyncbpf("trace", "--tasks", *extra, "--", b, timeout=60)
        assert proc.returncode == 2, (extra, util.describe(proc))
        assert extra[0] in proc.stderr, proc.stderr


def trace_default(tmp_path, binary, *args, options=()):
    summary = tmp_path / "default.json"
    proc = util.run_asyncbpf("trace", *options, "-o", tmp_path / "d.pftrace", "--summary-json", summary, "--",
                             binary, *args, timeout=180)
    util.assert_no_sanitizer_report(proc)
    assert proc.returncode == 0, util.describe(proc)
    return proc, util.load_json(summary)


def test_default_mode(tmp_path):
    """Without patterns, a whitelist or --deep, trace runs task mode where it leaves no
    task out (tokio, release: every task counted, and said so; async-std's release
    build, one exit single-stepped); with a pattern, or where task mode would leave
    tasks out (a root future it cannot follow), the per-future probes, saying why."""
    b = util.fixture_binary("release", "tokio_mt")
    proc, doc = trace_default(tmp_path, b, "load", "1")
    truth = util.ground_truth(proc.stdout)
    assert "task mode (the default" in proc.stderr, proc.stderr
    assert by_name(doc["task_mode"]["tasks"], "tokio_mt")["load_task"]["tasks"] == truth["spawned"]
    proc, doc = trace_default(tmp_path, b, "load", "1", options=("tokio_mt::*",))
    assert "task mode" not in proc.stderr and "task_mode" not in doc, proc.stderr
    assert doc["totals"]["records"] > 0, doc["totals"]
    # a root future task mode cannot follow (the outputs fixture's): per-future, said
    o = util.fixture_binary("release", "outputs")
    proc, doc = trace_default(tmp_path, o)
    assert "per-future probes (the default where task mode would leave tasks out: root futures" in proc.stderr, \
        proc.stderr
    assert "task_mode" not in doc, sorted(doc)
    # async-std's release build: one call of async-task's run has no emulated exit
    # (a join comes first); its return address, single-stepped, is the exit, and task
    # mode sees every task: the 4 workers the fixture says it ran
    a = util.fixture_binary("release", "async_std_app")
    proc, doc = trace_default(tmp_path, a)
    assert "task mode (the default" in proc.stderr, proc.stderr
    m = re.search(r"(\d+) task-poll exit sites \((\d+) on instructions the kernel emulates\)", proc.stderr)
    assert m and int(m.group(2)) < int(m.group(1)), proc.stderr
    workers = int(re.search(r"(\d+) workers done", proc.stdout).group(1))
    spawned = [t for t in doc["task_mode"]["tasks"] if t["name"].startswith("async_executor::")]
    assert sum(t["tasks"] for t in spawned) == workers, doc["task_mode"]["tasks"]
    assert doc["task_mode"]["lost"] == 0 and doc["totals"]["unmatched_exits"] == 0, doc["totals"]


def trace_tasks(tmp_path, tag, argv, timeout=300):
    """`trace --tasks` in launch mode (no selection): (CompletedProcess, summary)."""
    summary, pftrace = tmp_path / f"{tag}.summary.json", tmp_path / f"{tag}.pftrace"
    proc = subprocess.run([str(util.ASYNCBPF), "trace", "--tasks", "--summary-json", str(summary), "-o", str(pftrace),
                           "--", *[str(a) for a in argv]], capture_output=True, text=True, timeout=timeout,
                          env=util.san_env())
    util.assert_no_sanitizer_report(proc)
    return proc, (util.load_json(summary) if summary.exists() else None)


def check_task_trace(proc, doc, unwinds=0):
    """What a task-mode run on a third-party program must show: nothing dropped, no
    tree read torn, no unmatched exit, tasks completed never more than seen; task
    polls whose exit was never seen (`lost`) at most the panics the program unwinds
    on purpose through a root's poll (`unwinds`: its libtest `should panic` tests);
    those and task polls of a type the analyzer did not find, said in the summary's
    WARNING; no task poll at all only where every async fn is inlined into a
    block_on (release), and said so."""
    assert doc is not None, util.describe(proc)
    tm, t = doc["task_mode"], doc["totals"]
    assert t["task_trees_dropped"] == 0 and t["dropped"] == 0 and t["unmatched_exits"] == 0, t
    if tm["task_polls"] == 0:
        assert "task mode: no task poll completed" in proc.stdout + proc.stderr, util.describe(proc)
        return
    assert tm["lost"] <= unwinds and tm["not_read"] == 0 and tm["untracked_tasks"] == 0, (tm, unwinds)
    if tm["unknown_task_polls"] or tm["lost"]:  # what it could not follow, said
        assert f"task polls of an unknown task type {tm['unknown_task_polls']}" in proc.stdout + proc.stderr
        assert f"task polls whose exit was never seen {tm['lost']}" in proc.stdout + proc.stderr
    for row in tm["tasks"]:
        assert row["completed"] <= row["tasks"], row


@pytest.mark.parametrize("profile", util.PROFILES)
@pytest.mark.parametrize("test", C.TOKIO_TESTS)
def test_tokio_integration_tests_in_task_mode(profile, test, tmp_path):
    """tokio's own test suites (tests/conformance) under `trace --tasks`: every test
    passes as untraced (panicking tasks among them: tokio catches a task's panic below
    the probed function), and the task polls are all seen and paired."""
    b = util.conformance_binary(profile, "tokio_" + test)
    util.require_file(b, "the conformance programs", "run 'make conformance'")
    args = C.TOKIO_TEST_ARGS.get(test, [])
    plain = C.run_plain([b, *args])
    assert plain.returncode == 0, plain.stdout + plain.stderr
    proc, doc = trace_tasks(tmp_path, test, [b, *args])
    assert proc.returncode == plain.returncode, util.describe(proc)
    assert C.normalize_libtest(proc.stdout) == C.normalize_libtest(plain.stdout)
    check_task_trace(proc, doc, unwinds=plain.stdout.count(" - should panic ... ok"))


@pytest.mark.parametrize("profile", util.PROFILES)
@pytest.mark.parametrize("example,args", [("hello_world", []), ("task_local", []), ("task_name", []),
                                          ("line_count", [str(util.REPO / "README.md")])],
                         ids=["hello_world", "task_local", "task_name", "line_count"])
def test_async_std_examples_in_task_mode(profile, example, args, tmp_path):
    """async-std's examples under `trace --tasks`: the same output and status as
    untraced; where task mode leaves async-std's tasks out (release: see "What it
    covers") it says so, and what it probes (the block_on roots) is clean."""
    b = util.conformance_binary(profile, "async_std_" + example)
    util.require_file(b, "the conformance programs", "run 'make conformance'")
    plain = C.run_plain([b, *args])
    assert plain.returncode == 0, plain.stderr
    proc, doc = trace_tasks(tmp_path, example, [b, *args])
    assert proc.returncode == 0 and proc.stdout == plain.stdout, util.describe(proc)
    if "task mode: async-task:" in proc.stderr:  # its tasks left out, and said
        assert "a uretprobe is unsafe there" in proc.stderr, proc.stderr
    check_task_trace(proc, doc)
