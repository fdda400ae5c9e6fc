# SPDX-License-Identifier: GPL-2.0
"""asyncbpf stacks --tree on live processes (docs/stacks.md, "Future trees"): each
task's whole tree of futures, walked from its root with the model's future-tree
table (model/future_tree.h) over the process's memory.

Ground truth: the await chain `stacks` decodes on its own (itself checked against
the markers by test_stacks*.py) must be a path of the tree, each suspended frame's
node holding `__state` = 3 + its await index (rustc's numbering, docs/design.md);
for hyper's server (hyper 0.14.19 src/server/server.rs, src/common/drain.rs: a
connection task is `NewSvcTask { state: Connected { future: Watching { future:
UpgradeableConnection, watch: Pin<Box<dyn Future>> (an async block awaiting
rx.changed()) } } }`), the tree's shape from those sources, and where each child
lies re-read here from /proc/PID/mem at the member offsets llvm-dwarfdump gives."""
import json
import socket
import struct
import subprocess
import time

import pytest

import util

PROFILES = ["debug", "release"]


def stacks(tmp_path, pid, *extra):
    out = tmp_path / "stacks.json"
    proc = util.run_asyncbpf("stacks", "-p", pid, "--json", out, *extra, timeout=180)
    return proc, json.loads(out.read_text()) if out.exists() else None


def children_of(tree, i):
    return [k for k, n in enumerate(tree["nodes"]) if n["parent"] == i]


def ancestors(tree, i):
    out = []
    while tree["nodes"][i]["parent"] is not None:
        i = tree["nodes"][i]["parent"]
        out.append(i)
    return out


def check_chain_in_tree(t):
    """The task's await chain is a path of its tree: the root is frames[0], each
    later frame a node below the previous frame's node; a suspended frame's node
    holds __state 3 + k."""
    tree, frames = t["tree"], t["frames"]
    nodes = tree["nodes"]
    assert nodes and nodes[0]["parent"] is None, t
    assert (nodes[0]["future"], nodes[0]["addr"]) == (frames[0]["future"], frames[0]["addr"]), t
    for i, n in enumerate(nodes[1:], 1):
        assert n["parent"] is not None and n["parent"] < i and n["member"], n
    prev = 0
    for f in frames:
        if f["state"] in ("unknown_dyn", "type_only"):
            break
        at = [i for i, n in enumerate(nodes) if (n["future"], n["addr"]) == (f["future"], f["addr"])]
        assert len(at) == 1, (f, nodes)
        assert at[0] == prev or prev in ancestors(tree, at[0]), (f, nodes)
        if f["state"] == "suspended":
            assert nodes[at[0]]["discr"] == 3 + f["await_index"], (f, nodes[at[0]])
        prev = at[0]
    assert tree["cut_nodes"] == 0 and tree["unreadable"] == 0, tree


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("crate", ["tokio_mt", "smol_app"])
def test_runtime_task_trees_hold_their_stacks(profile, crate, parked, tmp_path):
    target = parked(profile, crate, 3)
    proc, doc = stacks(tmp_path, target.proc.pid, "--tree")
    util.assert_no_sanitizer_report(proc)
    assert proc.returncode == util.EXIT_OK, util.describe(proc)
    own = [t for t in doc["tasks"] if any(f["future"].startswith(crate + "::") for f in t["frames"])]
    assert len(own) == target.counts["tasks"], (len(own), target.counts)
    for t in doc["tasks"]:
        if t["frames"]:
            check_chain_in_tree(t)
    # the text shows a tree under each group
    # (the groups: not the deadlock and lock sections that follow them)
    sections = ("DEADLOCK:", "Locks held or awaited", "Channels and notifications")
    groups = [g for g in proc.stdout.split("\n\n")[1:] if g.strip() and not g.startswith(sections)]
    assert proc.stdout.count("future tree") == len(groups), proc.stdout
    target.stop()


@pytest.mark.parametrize("profile", PROFILES)
def test_handwritten_task_trees_hold_their_stacks(profile, parked, tmp_path):
    """Boxed dyn Future tasks of a hand-written executor (release: the polls inlined)."""
    target = parked(profile, "handwritten", 6)
    proc, doc = stacks(tmp_path, target.proc.pid, "--tree")
    assert proc.returncode == util.EXIT_OK, util.describe(proc)
    assert len(doc["tasks"]) == target.counts["tasks"], doc["runtimes"]
    for t in doc["tasks"]:
        check_chain_in_tree(t)
        # park_task -> park_middle -> park_leaf -> Parked: the tree is that chain
        assert len(t["tree"]["nodes"]) == len(t["frames"]), t
    target.stop()


def read_u64(pid, addr):
    with open(f"/proc/{pid}/mem", "rb") as mem:
        mem.seek(addr)
        return struct.unpack("<Q", mem.read(8))[0]


def member_offset(binary, die_offset, *names):
    """The offset of a member path from a struct's start, per llvm-dwarfdump (each name
    a member, or an enum variant's member), and the last member's Die."""
    cur, off, m = util.dwarf_die(binary, die_offset), 0, None
    for name in names:
        m, _ = util.dwarf_member(binary, cur, name)
        off += m.number("DW_AT_data_member_location") or 0
        cur = util.dwarf_die(binary, m.ref())
    return off, m


@pytest.mark.parametrize("profile", PROFILES)
def test_hyper_connection_tree(profile, tmp_path):
    """An idle keep-alive connection of hyper_server: stacks alone sees NewSvcTask, a
    hand-written future (opaque); its tree holds the whole connection."""
    util.need_tool(util.LLVM_DWARFDUMP)
    binary = util.conformance_binary(profile, "hyper_server")
    util.require_file(binary, "the conformance binary", "run 'make conformance'")
    model_json = tmp_path / "hyper.json"
    a = util.run_asyncbpf("analyze", binary, "--json", model_json)
    assert a.returncode == util.EXIT_OK, util.describe(a)
    model = util.load_json(model_json)
    server = subprocess.Popen([str(binary), "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        hello = json.loads(server.stdout.readline())
        conn = socket.create_connection(("127.0.0.1", hello["listening"]))
        conn.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        assert conn.recv(4096).startswith(b"HTTP/1.1 200 OK")
        time.sleep(0.2)  # the connection task parks, waiting for the next request
        proc, doc = stacks(tmp_path, server.pid, "--tree")
        assert proc.returncode == util.EXIT_OK, util.describe(proc)
        util.assert_no_sanitizer_report(proc)
        tasks = [t for t in doc["tasks"]
                 if t["frames"][0]["future"].startswith("hyper::server::server::new_svc::NewSvcTask<")]
        assert len(tasks) == 1, [t["frames"][0]["future"][:60] for t in doc["tasks"]]
        t = tasks[0]
        assert t["frames"][0]["state"] == "opaque", t["frames"]
        tree = t["tree"]
        nodes = tree["nodes"]

        def kids(i):
            return {nodes[k]["member"]: k for k in children_of(tree, i)}

        def name_of(i):
            return util.last_segment(util.strip_generics(nodes[i]["future"] or "dyn"))

        # NewSvcTask -> Watching (its state is Connected) -> the connection and the watch
        w = kids(0)["state.Connected.future"]
        assert name_of(w) == "Watching", nodes[w]
        up, watch = kids(w)["future"], kids(w)["watch.pointer.pointer"]
        assert name_of(up) == "UpgradeableConnection", nodes[up]
        assert nodes[watch]["future"].startswith("hyper::common::drain::{impl#2}::watch::{async_block#0}<"), nodes[watch]
        proto = kids(up)["inner.conn.Some.__0"]
        assert name_of(proto) == "ProtoServer", nodes[proto]
        assert name_of(kids(proto)["H1.h1"]) == "Dispatcher"
        # the watch block awaits rx.changed() (drain.rs:67), which waits on a Notified
        changed = kids(watch)["Suspend0.__awaitee"]
        assert name_of(changed) == "changed", nodes[changed]
        # a future inside this task's tree is not a task of its own
        assert not [x for x in doc["tasks"] if x["frames"][0]["future"].startswith("hyper::common::drain::")]
        # hyper's server keeps no async lock: no lock held, no deadlock claimed; the
        # connection's drain watch waits on a watch channel
        assert doc["deadlocks"] == [] and not [h for t in doc["tasks"] for h in t["holds"] if h["held"]], doc

        # the addresses, from /proc/PID/mem and llvm-dwarfdump's member offsets
        by_path = {f["path"]: f for f in model["futures"]}
        svc = next(f for f in model["futures"]
                   if (f["path"] or "").startswith("hyper::server::server::new_svc::NewSvcTask<"))
        off, _ = member_offset(str(binary), svc["die_offset"], "state", "Connected", "future")
        assert nodes[w]["addr"] == nodes[0]["addr"] + off
        watching = by_path[next(p for p in by_path if (p or "").startswith("hyper::common::drain::Watching<"))]
        off, m = member_offset(str(binary), watching["die_offset"], "watch")
        assert nodes[up]["addr"] == nodes[w]["addr"] + member_offset(str(binary), watching["die_offset"],
                                                                     "future")[0]
        assert read_u64(server.pid, nodes[w]["addr"] + off) == nodes[watch]["addr"]
        conn.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
