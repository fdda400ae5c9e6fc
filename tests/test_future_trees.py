# SPDX-License-Identifier: GPL-2.0
"""Tier 2: the future trees (docs/analyzer.md, "Future trees"; `futures[].tree` in
docs/json-schema.md) on the fixtures, debug and release.

Ground truth, never asyncbpf's own output:
- which futures each await point holds: the fixtures' `// AWAIT` markers;
- which fields of a hand-written future hold futures: the types' sources (the
  handwritten fixture's Join2 and Race2, hyper 0.14.19's NewSvcTask, Connection,
  Dispatcher, tokio 1.24.2's Timeout, as quoted below);
- where they are and under which condition: llvm-dwarfdump's reading of the same
  binary, each slot's member path resolved member by member here (offsets,
  pointers, enum variants and their discriminants), then folded into steps and
  conditions by the rules docs/analyzer.md states.
"""
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

import util
from util import last_segment, strip_generics

PROFILES = ["debug", "release"]
DYN_FUTURE = re.compile(r"^\(?dyn core::future::future::Future")


def binaries():
    out = []
    for p in PROFILES:
        out.append((p, "handwritten", util.fixture_binary(p, "handwritten")))
        out.append((p, "tokio_mt", util.fixture_binary(p, "tokio_mt")))
    return out


@pytest.fixture(scope="module")
def hyper(tmp_path_factory):
    """hyper_server's models (the conformance binary), debug and release."""
    models = {}
    for p in PROFILES:
        binary = util.conformance_binary(p, "hyper_server")
        util.require_file(binary, "the conformance binary", "run 'make conformance'")
        json_path = tmp_path_factory.mktemp("trees") / f"{p}-hyper.json"
        proc = util.run_asyncbpf("analyze", binary, "--json", json_path)
        assert proc.returncode == util.EXIT_OK, util.describe(proc)
        models[p] = (str(binary), util.Model(util.load_json(json_path), "hyper_server", str(binary)))
    return models


# ---------------------------------------------------------------------------
# An independent reading of a slot's member path in llvm-dwarfdump's output
# ---------------------------------------------------------------------------


def through_pointers(binary, type_offset):
    """The struct a member's type leads to, and the pointers on the way."""
    t, derefs = util.dwarf_die(binary, type_offset), 0
    for _ in range(16):
        if t.tag in ("DW_TAG_typedef", "DW_TAG_const_type", "DW_TAG_volatile_type"):
            t = util.dwarf_die(binary, t.ref())
        elif t.tag == "DW_TAG_pointer_type":
            derefs += 1
            t = util.dwarf_die(binary, t.ref())
        else:
            return t, derefs
    raise AssertionError(f"type chain at {type_offset:#x} too long")


def resolve(binary, root_offset, member_path):
    """What a slot with this member path must say, read off the DWARF: its steps, its
    conditions, its dyn halves (or None) and the child's type DIE. The rules
    (docs/analyzer.md): offsets add up; each pointer is a step {offset so far,
    deref}; a condition is read where the steps so far lead, at the offset so far
    plus its discriminant's; a last member that is a fat pointer's data half to a
    dyn Future gives its data and vtable halves' offsets instead."""
    cur, acc, steps, conds = util.dwarf_die(binary, root_offset), 0, [], []
    segs = member_path.split(".")
    for i, name in enumerate(segs):
        if name == "*":  # the future is a pointer (`&mut F`)
            assert cur.tag == "DW_TAG_pointer_type", cur
            steps.append({"offset": acc, "deref": True})
            acc = 0
            cur, _ = through_pointers(binary, cur.ref())
            continue
        m, cond = util.dwarf_member(binary, cur, name)
        if cond:
            kind, off, size, lo, hi = cond
            conds.append({"at_step": len(steps), "offset": acc + off, "size": size, "kind": kind,
                          "lo": lo, "hi": hi})
        at = m.number("DW_AT_data_member_location") or 0
        t, derefs = through_pointers(binary, m.ref())
        if i == len(segs) - 1 and DYN_FUTURE.match(t.name or ""):
            vtable, _ = util.dwarf_member(binary, cur, "vtable")
            return steps, conds, {"data": acc + at,
                                  "vtable": acc + vtable.number("DW_AT_data_member_location")}, t
        acc += at
        for _ in range(derefs):
            steps.append({"offset": acc, "deref": True})
            acc = 0
        cur = t
    if acc:
        steps.append({"offset": acc, "deref": False})
    return steps, conds, None, cur


def check_slot(binary, model, fut, slot):
    """A slot against llvm-dwarfdump: '' when it agrees, else what differs."""
    steps, conds, dyn, child_die = resolve(binary, fut["die_offset"], slot["member"])
    problems = []
    if slot["steps"] != steps:
        problems.append(f"steps {slot['steps']} != DWARF's {steps}")
    if slot["conds"] != conds:
        problems.append(f"conds {slot['conds']} != DWARF's {conds}")
    if slot["dyn"] != dyn:
        problems.append(f"dyn {slot['dyn']} != DWARF's {dyn}")
    if dyn is None:
        child = model.futures[slot["child"]] if slot["child"] is not None else None
        if child is None or not (child["path"] or "").endswith(child_die.name or "?"):
            problems.append(f"child {child and child['path']} is not DWARF's {child_die.name}")
    elif slot["child"] is not None:
        problems.append("a dyn slot with a child type")
    return "; ".join(problems)


def slots_of(fut):
    return fut["tree"]["slots"] if fut["tree"] else []


# ---------------------------------------------------------------------------
# Every slot of the fixtures' own futures and of the runtimes' wrappers
# ---------------------------------------------------------------------------


def check_slots(binary, model, futures):
    """Every slot of these futures against llvm-dwarfdump, two at a time (the suite's
    budget is 2 cores): (number checked, problems)."""
    work = [(f, s) for f in futures for s in slots_of(f)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        whys = list(pool.map(lambda fs: check_slot(binary, model, *fs), work))
    return len(work), [f"{f['name']} slot {s['member']}: {why}" for (f, s), why in zip(work, whys) if why]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("crate", ["handwritten", "tokio_mt"])
def test_every_slot_matches_dwarfdump(profile, crate, analyses):
    """Each slot of the fixture's own futures, and of every hand-written future of
    the binary, resolved member by member in llvm-dwarfdump's output."""
    a = analyses.get(profile, crate)
    futures = [f for f in a.model.futures
               if (f["path"] or "").startswith(crate + "::") or f["kind"] == "handwritten"]
    checked, problems = check_slots(a.binary, a.model, futures)
    assert not problems, "\n".join(problems[:20])
    assert checked >= 25, checked


@pytest.mark.parametrize("profile", PROFILES)
def test_hyper_slots_match_dwarfdump(profile, hyper):
    """Every slot of hyper_server's hand-written futures (hyper's and tokio's
    wrappers: NewSvcTask, Connecting, Watching, UpgradeableConnection, ProtoServer,
    Dispatcher, Graceful, PollFn, Pin<..>) and of its own async fns."""
    binary, m = hyper[profile]
    futures = [f for f in m.futures
               if f["kind"] == "handwritten" or (f["path"] or "").startswith("hyper_server::")]
    checked, problems = check_slots(binary, m, futures)
    assert not problems, "\n".join(problems[:20])
    assert checked >= 15, checked


# ---------------------------------------------------------------------------
# Which children: the sources
# ---------------------------------------------------------------------------


def future_named(model, prefix):
    found = [f for f in model.futures if (f["path"] or "").startswith(prefix)]
    assert found, f"no future {prefix}* in the model"
    return found


def children(model, fut):
    """{member path: child's path or 'dyn'} of a future's slots."""
    return {s["member"]: ("dyn" if s["dyn"] else model.futures[s["child"]]["path"]) for s in slots_of(fut)}


@pytest.mark.parametrize("profile", PROFILES)
def test_handwritten_combinators(profile, analyses):
    """tests/fixtures/handwritten: `struct Join2 { a: Pin<Box<A>>, b: Pin<Box<B>>, a_out,
    b_out }` holds A and B behind their Boxes; `struct Race2 { a: Option<Pin<Box<A>>>,
    b: Option<Pin<Box<B>>>, .. }` holds each while its Option is Some (the niche:
    the pointer is not 0, from DWARF's None variant value)."""
    a = analyses.get(profile, "handwritten")
    m = a.model
    for j in future_named(m, "handwritten::Join2<"):
        args = util.generic_args(j["path"])
        assert children(m, j) == {"a.pointer": args[0], "b.pointer": args[1]}, children(m, j)
    for r in future_named(m, "handwritten::Race2<"):
        args = util.generic_args(r["path"])
        assert children(m, r) == {"a.Some.__0.pointer": args[0], "b.Some.__0.pointer": args[1]}
        for s in slots_of(r):
            assert [c["kind"] for c in s["conds"]] == ["not_in"] and s["conds"][0]["lo"] == 0
    # Pin<Box<dyn Future>>: a dyn child, with its fat pointer's halves
    dyns = [s for f in m.futures for s in slots_of(f) if s["dyn"]]
    assert dyns and all(s["dyn"]["vtable"] == s["dyn"]["data"] + 8 for s in dyns), dyns


@pytest.mark.parametrize("profile", PROFILES)
def test_tokio_timeout(profile, analyses):
    """tokio 1.24.2 src/time/timeout.rs: `struct Timeout<T> { value: T, delay: Sleep }`:
    both are futures it holds and polls."""
    m = analyses.get(profile, "tokio_mt").model
    for t in future_named(m, "tokio::time::timeout::Timeout<"):
        assert children(m, t) == {"value": util.generic_args(t["path"])[0],
                                  "delay": "tokio::time::sleep::Sleep"}, children(m, t)


@pytest.mark.parametrize("profile", PROFILES)
def test_hyper_connection_chain(profile, hyper):
    """hyper 0.14.19: `NewSvcTask { state: State }`, `enum State { Connecting {
    connecting: Connecting, watcher }, Connected { future: W::Future } }` (server.rs);
    `UpgradeableConnection { inner: Connection }`, `Connection { conn:
    Option<ProtoServer>, .. }`, `enum ProtoServer { H1 { h1: Dispatcher }, .. }`
    (conn.rs; only H1 is built here); `Dispatcher { conn, dispatch: Server { in_flight:
    Pin<Box<Option<S::Future>>>, .. }, .. }` with `conn.state.h1_header_read_timeout_fut:
    Option<Pin<Box<Sleep>>>` (proto/h1). Each future holds the next; the variants'
    conditions are DWARF's (test_hyper_slots_match_dwarfdump)."""
    binary, m = hyper[profile]
    for t in future_named(m, "hyper::server::server::new_svc::NewSvcTask<"):
        kids = children(m, t)
        assert last_segment(strip_generics(kids.pop("state.Connecting.connecting"))) == "Connecting"
        assert last_segment(strip_generics(kids.pop("state.Connected.future"))) == "Watching"
        assert not kids, kids
        kinds = sorted(s["conds"][0]["kind"] for s in slots_of(t))
        assert kinds == ["in", "not_in"], slots_of(t)  # Connecting tagged, Connected the niche's
    for u in future_named(m, "hyper::server::conn::upgrades::UpgradeableConnection<"):
        assert [last_segment(strip_generics(p)) for p in children(m, u).values()] == ["ProtoServer"]
        assert list(children(m, u)) == ["inner.conn.Some.__0"]
    for p in future_named(m, "hyper::server::conn::ProtoServer<"):
        if p["tree"]:
            assert [last_segment(strip_generics(c)) for c in children(m, p).values()] == ["Dispatcher"]
    for d in future_named(m, "hyper::proto::h1::dispatch::Dispatcher<"):
        kids = children(m, d)
        assert kids.get("dispatch.in_flight.pointer.Some.__0") == "hyper_server::handle::{async_fn_env#0}", kids
        assert kids.get("conn.state.h1_header_read_timeout_fut.Some.__0.pointer") == \
            "tokio::time::sleep::Sleep", kids


# ---------------------------------------------------------------------------
# Compiler futures: the Suspend states' awaitees, per the markers
# ---------------------------------------------------------------------------


def answers(model, fut, callee, crate):
    if callee.endswith("{block}") or callee.endswith("{closure}"):
        return util.caller_name(fut, crate) == callee
    if callee[:1].islower():
        return last_segment(fut["name"]) == callee
    return last_segment(strip_generics(fut["path"] or "")) == callee


def held_below(model, slots):
    """The futures reachable from slots through hand-written futures' own slots (a
    wrapper holds what it polls; a compiler future is an answer, not looked into),
    and whether a dyn child was met."""
    seen, todo, dyn = set(), [s for s in slots], False
    while todo:
        s = todo.pop()
        if s["dyn"]:
            dyn = True
            continue
        if s["child"] in seen:
            continue
        seen.add(s["child"])
        child = model.futures[s["child"]]
        if child["kind"] == "handwritten":
            todo.extend(slots_of(child))
    return seen, dyn


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("crate", util.CRATES)
def test_await_slots_match_markers(profile, crate, analyses):
    """For every compiler future of the fixture's source and every marked await k:
    its slots with await_index k hold, directly or through the hand-written wrappers
    in between (join!'s PollFn and MaybeDone, Timeout, Join2), every future the
    marker names; each such slot is under `__state == Suspend k's value`; and no
    slot belongs to an await the future does not have."""
    a = analyses.get(profile, crate)
    m = a.model
    fs = util.fixture_source(crate)
    problems, checked = [], 0
    for caller in fs.callers:
        for f in m.by_caller().get(caller, []):
            states = {s["index"]: s for s in m.suspend_states(f)}
            slots = slots_of(f)
            stray = {s["await_index"] for s in slots} - set(states)
            if stray:
                problems.append(f"{f['name']}: slots for awaits {stray} it does not have")
            for k, mark in enumerate(fs.markers_of(caller)):
                mine = [s for s in slots if s["await_index"] == k]
                st = states.get(k)
                if not mine or st is None:
                    problems.append(f"{f['name']} await {k} ({mark}): no slot")
                    continue
                want = {"at_step": 0, "offset": f["state"]["offset"], "size": f["state"]["size"],
                        "kind": "in", "lo": st["discr"], "hi": st["discr"]}
                if any(s["conds"][:1] != [want] for s in mine):
                    problems.append(f"{f['name']} await {k}: conditions {[s['conds'] for s in mine]}")
                held, dyn = held_below(m, mine)
                for callee in mark.callees:
                    ok = dyn if callee == "dyn" else any(answers(m, m.futures[i], callee, crate) for i in held)
                    if not ok:
                        problems.append(f"{f['name']} await {k} ({mark}): {callee} not held; held "
                                        f"{[m.futures[i]['name'] for i in held]}")
                checked += 1
    assert not problems, "\n".join(problems[:20])
    assert checked >= 3, checked


@pytest.mark.parametrize("profile", PROFILES)
def test_every_compiler_future_has_its_awaits(profile, analyses):
    """Every compiler future of every fixture binary with a known layout: each Suspend
    state with an __awaitee offset has at least one slot (the awaited future, or a
    dyn one), and every slot of it is under one Suspend state's condition."""
    problems = []
    for crate in util.CRATES:
        m = analyses.get(profile, crate).model
        for f in m.futures:
            if f["kind"] == "handwritten" or not f["tree"]:
                continue
            slots = slots_of(f)
            for s in m.suspend_states(f):
                if s["awaitee_offset"] is not None and not [x for x in slots if x["await_index"] == s["index"]]:
                    problems.append(f"{crate}: {f['name']} await {s['index']}: no slot")
            for x in slots:
                if x["await_index"] is None or not x["conds"] or x["conds"][0]["offset"] != f["state"]["offset"]:
                    problems.append(f"{crate}: {f['name']} slot {x['member']} is under no Suspend state")
    assert not problems, "\n".join(problems[:20])


def test_tree_stats_add_up(model):
    """stats.trees against the futures' trees."""
    t = model.doc["stats"]["trees"]
    known = [f for f in model.futures if f["tree"]]
    assert t["futures"] == len(known)
    assert t["no_layout"] == len(model.futures) - len(known)
    assert t["with_slots"] == sum(1 for f in known if f["tree"]["slots"])
    assert t["slots"] == sum(len(f["tree"]["slots"]) for f in known)
    assert t["dyn_slots"] == sum(1 for f in known for s in f["tree"]["slots"] if s["dyn"])
    for f in known:
        assert len(f["tree"]["slots"]) <= 16
        for s in f["tree"]["slots"]:
            assert len(s["steps"]) <= 8 and len(s["conds"]) <= 3
            assert (s["child"] is None) == (s["dyn"] is not None)
