# SPDX-License-Identifier: GPL-2.0
"""The trace summary's lifetimes, futures pending at the end and tasks, end to end as
root on the deterministic `handwritten` fixture (docs/tracing.md, "Summary").

Ground truth is the fixture's own JSON line (completions of every async fn, Ready
results of the hand-written futures, the executor's completed root tasks and their
polls) and its source (it runs every task to completion). Where the fixture cannot
know a number (a lifetime in nanoseconds), the summary is checked against what it
must satisfy: an instance lives at least as long as its polls ran, recomputed here
from the decoded records (`--records`), and a task's busy plus idle time is its span.
"""
import json
import os
import signal
import subprocess
import time
from collections import defaultdict

import pytest

import util

HANDWRITTEN = util.fixture_binary("debug", "handwritten")
POLL_READY = 0  # enum poll_result (user/model/trace_event.h)

FUTURE_FIELDS = {k: (util.INT,) for k in (
    "poll", "polls", "ready", "pending", "panicked", "truncated", "running", "unknown", "busy_ns", "p50_ns",
    "p99_ns", "max_ns", "dropped", "lifetimes", "lifetime_min_ns", "lifetime_p50_ns", "lifetime_p99_ns",
    "lifetime_max_ns", "abandoned", "lifetimes_started_before")}
FUTURE_FIELDS.update({"name": (util.STR,), "path": (util.STR, util.NULL), "kind": (util.STR,),
                      "percentiles_from": (util.STR,), "bpf_records": (util.INT, util.NULL),
                      "hist_log2_ns": (util.LIST,)})
TASK_FIELDS = {k: (util.INT,) for k in (
    "poll", "self", "polls", "all_polls", "busy_ns", "idle_ns", "span_ns", "first_start_ns", "last_end_ns",
    "first_seen_ns", "last_seen_ns")}
TASK_FIELDS.update({"name": (util.STR,), "completed": (util.BOOL,)})
PENDING_FIELDS = {k: (util.INT,) for k in ("pending", "running", "truncated", "unknown")}
PENDING_FIELDS["groups"] = (util.LIST,)
TOTALS_FIELDS = {k: (util.INT,) for k in (
    "records", "dropped", "truncated", "running_at_stop", "probes_attached", "probes_failed",
    "unprobeable_exits", "unmatched_exits", "stack_overflow", "no_storage", "bpf_records", "probe_hits",
    "malformed_records", "untracked_instance_polls", "max_live_instances", "untracked_task_polls", "max_tasks",
    "duration_ns")}
TOTALS_FIELDS["out_of_memory"] = (util.BOOL,)


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """One launch-mode run of the debug `handwritten` fixture with --summary-json and
    --records; skipped (saying why) when this kernel cannot trace."""
    if os.geteuid() != 0:
        pytest.skip("asyncbpf trace loads BPF programs: run the suite as root")
    util.require_file(util.ASYNCBPF, "the sanitizer build", "run 'make san'")
    util.require_file(HANDWRITTEN, "the fixture", "run 'make fixtures'")
    report = {f["name"]: f for f in json.loads(util.run_asyncbpf("check", "--json").stdout)["features"]}
    if "ok" not in (report["uprobe"]["status"], report["uprobe_multi"]["status"]):
        pytest.skip(f"no uprobes on this kernel: {report['uprobe']['detail']}")
    for name in ("ringbuf", "task_storage", "bpf_cookie"):
        if report[name]["status"] != "ok":
            pytest.skip(f"{name} unavailable: {report[name]['detail']}")

    tmp = tmp_path_factory.mktemp("summary")
    summary_path, records_path = tmp / "summary.json", tmp / "records.jsonl"
    proc = util.run_asyncbpf("trace", "--deep", "-o", tmp / "run.pftrace", "--summary-json", summary_path, "--records",
                             records_path, "--", HANDWRITTEN)
    assert proc.returncode == 0, util.describe(proc)
    truth_lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(truth_lines) == 1, f"the fixture printed no ground truth line:\n{util.describe(proc)}"
    with open(summary_path, encoding="utf-8") as f:
        summary = json.load(f)
    with open(records_path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    return {"proc": proc, "truth": json.loads(truth_lines[0]), "summary": summary, "records": records}


def fixture_name(entry):
    """The fixture's name for a summary future: 'YieldNow', 'leaf', 'sum_twice<u32>',
    'block_task{block}', 'closure_task{closure}'."""
    if entry["kind"] == "handwritten":
        return util.last_segment(entry["path"] or "")
    if entry["kind"] == "async_fn":
        assert entry["name"].startswith("handwritten::"), entry["name"]
        return entry["name"][len("handwritten::"):]
    return util.caller_name({"path": entry["path"] or "", "kind": entry["kind"], "name": entry["name"]},
                            "handwritten")


def by_fixture_name(summary):
    out = {}
    for entry in summary["futures"]:
        name = fixture_name(entry)
        if name:
            assert name not in out, f"two summary entries answer to {name}"
            out[name] = entry
    return out


def nearest_rank(values, pct):
    """Nearest-rank percentile (the summary's definition, docs/tracing.md)."""
    if not values:
        return 0
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[rank - 1]


def completed_instances(records):
    """Per poll fn, (lifetime, summed poll durations) of every instance that returned
    Ready: an instance is (poll, self) from its first poll to the Ready one."""
    open_ = {}
    done = defaultdict(list)
    for r in sorted(records, key=lambda r: (r["start_ns"], r["end_ns"])):
        key = (r["poll"], r["self"])
        first, busy = open_.get(key, (r["start_ns"], 0))
        busy += r["end_ns"] - r["start_ns"]
        if r["result"] == POLL_READY:
            done[r["poll"]].append((r["end_ns"] - first, busy))
            open_.pop(key, None)
        else:
            open_[key] = (first, busy)
    return done


def test_schema_and_fields(traced):
    summary, errors = traced["summary"], []
    assert summary["schema"] == "asyncbpf-trace-summary/2", summary["schema"]
    for i, entry in enumerate(summary["futures"]):
        util.check_shape(entry, FUTURE_FIELDS, f"futures[{i}]", errors)
        assert entry["percentiles_from"] in ("records", "histogram"), entry
    util.check_shape(summary["pending_at_end"], PENDING_FIELDS, "pending_at_end", errors)
    for i, task in enumerate(summary["tasks"]["list"]):
        util.check_shape(task, TASK_FIELDS, f"tasks.list[{i}]", errors)
    util.check_shape(summary["totals"], TOTALS_FIELDS, "totals", errors)
    assert not errors, "\n".join(errors)
    totals = summary["totals"]
    # a lossless run: nothing dropped, so the percentiles are exact, and nothing untracked
    assert totals["dropped"] == 0 and totals["truncated"] == 0, totals
    assert totals["untracked_instance_polls"] == 0 and totals["untracked_task_polls"] == 0, totals
    assert all(e["percentiles_from"] == "records" for e in summary["futures"]), summary["futures"]
    # the BPF histogram counts every record of its poll fn
    for entry in summary["futures"]:
        assert sum(count for _, count in entry["hist_log2_ns"]) == entry["bpf_records"] == entry["polls"], entry


def test_lifetimes_match_the_fixtures_completions(traced):
    by_name, truth = by_fixture_name(traced["summary"]), traced["truth"]
    # launch mode attaches before the command runs any code: no future predates tracing
    for entry in traced["summary"]["futures"]:
        assert entry["lifetimes_started_before"] == 0 and entry["abandoned"] == 0, entry
    for name, counts in truth["async_fns"].items():
        assert name in by_name, f"{name}: not in the summary; it has {sorted(by_name)}"
        assert by_name[name]["lifetimes"] == counts["completions"], (name, by_name[name], counts)
    # a hand-written future is never polled after Ready: one lifetime per Ready, where decoded
    for name, counts in truth["futures"].items():
        if counts["polls"] == 0 or by_name[name]["unknown"]:
            continue
        assert by_name[name]["ready"] == counts["ready"], (name, by_name[name], counts)
        assert by_name[name]["lifetimes"] == counts["ready"], (name, by_name[name], counts)


def test_lifetimes_cover_their_polls(traced):
    """Each instance lives at least as long as its polls ran: recomputed from the
    records, and the summary's percentiles agree with that recomputation."""
    done = completed_instances(traced["records"])
    for entry in traced["summary"]["futures"]:
        instances = done.get(entry["poll"], [])
        for lifetime, busy in instances:
            assert lifetime >= busy, (entry["name"], lifetime, busy)
        lifetimes = [lt for lt, _ in instances]
        busies = [b for _, b in instances]
        assert entry["lifetimes"] == len(instances), (entry, len(instances))
        for pct, key in ((50, "lifetime_p50_ns"), (99, "lifetime_p99_ns"), (100, "lifetime_max_ns")):
            assert entry[key] == nearest_rank(lifetimes, pct), (entry["name"], key, entry[key], sorted(lifetimes))
            # every lifetime >= its busy time, so every rank of lifetimes >= that rank of busy times
            assert entry[key] >= nearest_rank(busies, pct), (entry["name"], key, entry[key], sorted(busies))


def test_nothing_pending_at_the_end(traced):
    """The fixture runs every task to completion (it exits 1 if one stalls)."""
    pending = traced["summary"]["pending_at_end"]
    assert pending["pending"] == 0 and pending["running"] == 0, pending
    assert pending["groups"] == [], pending["groups"]
    assert pending["truncated"] == 0, pending
    assert traced["summary"]["totals"]["running_at_stop"] == 0, traced["summary"]["totals"]
    assert "no future pending at the end" in traced["proc"].stderr, traced["proc"].stderr


def test_tasks_match_the_executor(traced):
    executor, tasks = traced["truth"]["executor"], traced["summary"]["tasks"]
    listed = tasks["list"]
    assert tasks["count"] == len(listed), tasks
    # the depth-0 futures that returned Ready are the root tasks the executor completed
    assert tasks["completed"] == executor["completed"], (tasks["completed"], executor)
    assert sum(t["completed"] for t in listed) == executor["completed"], listed
    assert sum(t["polls"] for t in listed) == executor["root_polls"], (listed, executor)
    own = defaultdict(int)
    for t in listed:
        assert t["name"].startswith("handwritten::"), t
        own[t["name"][len("handwritten::"):]] += t["polls"]
    expected = {t["name"]: t["root_polls"] for t in executor["tasks"]}
    assert dict(own) == expected, (dict(own), expected)
    records = traced["records"]
    for t in listed:
        assert t["busy_ns"] + t["idle_ns"] == t["span_ns"], t
        assert t["span_ns"] == t["last_end_ns"] - t["first_start_ns"], t
        under = [r for r in records if r["task_poll"] == t["poll"] and r["task_self"] == t["self"]]
        assert t["all_polls"] == len(under) >= t["polls"], (t, len(under))
        # busy: each own poll's duration less the probes of traced polls inside it
        # (probe_ns, docs/tracing.md "Probe cost"), never below 0
        assert t["busy_ns"] == sum(max(0, r["end_ns"] - r["start_ns"] - r["probe_ns"])
                                   for r in under if r["depth"] == 0), t
    stderr = traced["proc"].stderr
    assert f"tasks: {len(expected)} ({executor['completed']} completed)" in stderr, stderr


def test_stopped_early_lists_what_is_left(traced, tmp_path):
    """`handwritten hot 3000` traced for 1 s: hot_task runs for 3 s, so at the stop it is
    neither Ready nor gone: either inside a poll (running, resumed from its await) or
    suspended at its await (the source's `// AWAIT hot_task->middle_hot` line).
    Whatever else is listed must be one of its callees, at one of their own AWAIT lines."""
    summary_path = tmp_path / "summary.json"
    proc = util.run_asyncbpf("trace", "--deep", "-o", tmp_path / "run.pftrace", "--summary-json", summary_path,
                             "--duration", "1", "--", HANDWRITTEN, "hot", "3000")
    assert proc.returncode == 0, util.describe(proc)
    with open(summary_path, encoding="utf-8") as f:
        summary = json.load(f)
    source = util.fixture_source("handwritten")
    chain = ("hot_task", "middle_hot", "hot_leaf", "YieldNow")
    pending = summary["pending_at_end"]
    groups = pending["groups"]
    listed = defaultdict(int)
    for g in groups:
        name = g["name"].split("::")[-1]
        assert name in chain, (g, chain)
        listed[name] += g["count"]
        assert g["state"] in ("pending", "running"), g
        if name == "YieldNow" or g["await_index"] is None:
            # hand-written (its declaration instead), or running in its first poll
            continue
        # pending at an await, or running after resuming from one: an AWAIT line of its own
        lines = {m.line for m in source.markers_of(name)}
        assert os.path.basename(g["file"]) == "main.rs" and g["line"] in lines, (g, sorted(lines))
    assert listed["hot_task"] == 1, groups
    assert pending["pending"] + pending["running"] == sum(g["count"] for g in groups), pending
    assert summary["totals"]["running_at_stop"] == pending["running"], (summary["totals"], pending)
    tasks = summary["tasks"]
    assert tasks["count"] == 1 and tasks["completed"] == 0, tasks
    task = tasks["list"][0]
    assert task["name"] == "handwritten::hot_task", task
    assert task["busy_ns"] + task["idle_ns"] == task["span_ns"], task
    by_name = {e["name"].split("::")[-1]: e for e in summary["futures"]}
    assert by_name["hot_task"]["lifetimes"] == 0, by_name["hot_task"]
    assert "futures still pending at the end" in proc.stderr, proc.stderr


def histogram_percentile(hist, pct):
    """Nearest rank over [bucket_low, count] pairs: the upper bound of the bucket holding
    it (bucket i is [2^i, 2^(i+1)); the first, low 0, is [0, 2))."""
    total = sum(count for _, count in hist)
    rank = max(1, -(-total * pct // 100))
    seen = 0
    for low, count in hist:
        seen += count
        if seen >= rank:
            return 2 if low == 0 else low * 2
    raise AssertionError(f"rank {rank} past the histogram {hist}")


def test_dropped_records_use_the_bpf_histogram(traced, tmp_path):
    """A 4 KiB ring buffer under `handwritten loop` (tens of thousands of polls a second)
    overflows: the BPF histogram still counts every poll the fixture made, and the
    summary's percentiles come from it."""
    polls = 100000
    summary_path = tmp_path / "summary.json"
    # asyncbpf is stopped for a while mid-run (SIGSTOP): its consumer cannot drain the
    # 4 KiB buffer, so records are dropped however fast this machine is
    tracer = subprocess.Popen([str(util.ASYNCBPF), "trace", "--deep", "-o", str(tmp_path / "run.pftrace"),
                               "--summary-json", str(summary_path), "--ringbuf-size", "4K", "--",
                               str(HANDWRITTEN), "loop", str(polls)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    early = []
    for line in tracer.stderr:  # until the probes are attached and the loop runs
        early.append(line)
        if "trace: attached" in line:
            break
    time.sleep(0.2)
    tracer.send_signal(signal.SIGSTOP)
    time.sleep(0.5)
    tracer.send_signal(signal.SIGCONT)
    out, err = tracer.communicate(timeout=300)
    proc = subprocess.CompletedProcess(tracer.args, tracer.returncode, out, "".join(early) + err)
    assert proc.returncode == 0, util.describe(proc)
    truth = json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][0])
    assert truth["futures"]["Trivial"]["polls"] == polls, truth
    with open(summary_path, encoding="utf-8") as f:
        summary = json.load(f)
    totals = summary["totals"]
    assert totals["dropped"] > 0, totals
    trivial = by_fixture_name(summary)["Trivial"]
    hist = trivial["hist_log2_ns"]
    # exact despite the drops: every poll the fixture made, in BPF's counters
    assert sum(count for _, count in hist) == trivial["bpf_records"] == polls, trivial
    assert trivial["polls"] + trivial["dropped"] == polls, trivial
    assert trivial["dropped"] == totals["dropped"], (trivial, totals)
    assert trivial["percentiles_from"] == "histogram", trivial
    assert [low for low, _ in hist] == sorted(low for low, _ in hist), hist
    assert all(low == 0 or low & (low - 1) == 0 for low, _ in hist), hist
    assert trivial["p50_ns"] == histogram_percentile(hist, 50), (trivial["p50_ns"], hist)
    assert trivial["p99_ns"] == histogram_percentile(hist, 99), (trivial["p99_ns"], hist)
    assert trivial["max_ns"] == histogram_percentile(hist, 100), (trivial["max_ns"], hist)
    # the fixture's Trivial is never Ready: its one instance is left pending
    assert truth["futures"]["Trivial"]["ready"] == 0 and trivial["lifetimes"] == 0, trivial
    groups = [g for g in summary["pending_at_end"]["groups"] if g["name"] == trivial["name"]]
    assert len(groups) == 1 and groups[0]["count"] == 1 and groups[0]["state"] == "pending", groups
    assert "records DROPPED" in proc.stderr and "\u2248" in proc.stderr, proc.stderr
