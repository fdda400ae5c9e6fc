# SPDX-License-Identifier: GPL-2.0
"""Emulated exit sites (--exits emulated, the default) against the reference mode
(--exits ret, a probe on every `ret`): on every fixture, debug and release, the two
modes must record the same polls apart from timings. A fixture whose own runs differ
from one another (threads, timers) is compared on what the two reference runs agree
on, for the poll fns whose probes differ between the modes (those with a `ret`
replaced by branch sites): the emulated run has no kind of record (poll fn, result,
await point, states) that no reference run saw (up to two more reference runs are made before a rare
kind counts as new; depth is left out: which poll a runtime nests in which
depends on scheduling). These fixtures' exact counts are checked against their
own output by the other tests, which run in the default (emulated) mode. Also: the sites the
analyzer chose are checked against the code (objdump), and the tracer says how many
probes are emulated."""
import collections
import json
import re

import pytest

import util

CRATES = ("handwritten", "outputs", "tokio_ct", "tokio_mt", "async_std_app", "smol_app", "demo")
# one thread, their own executor, no timers: every run records the same polls
DETERMINISTIC = ("handwritten", "outputs")
FIXTURES = [(p, c) for p in ("debug", "release") for c in CRATES]
# release builds inline these fixtures' own polls: trace the runtimes' too
EXTRA = {"async_std_app": ("--all-crates",), "smol_app": ("--all-crates",)}


def trace_records(tmp_path, binary, mode, n, extra=()):
    rec = tmp_path / f"{mode}-{n}.jsonl"
    proc = util.run_asyncbpf("trace", "--exits", mode, "--records", rec, "-o",
                             tmp_path / f"{mode}-{n}.pftrace", *extra, "--", binary, timeout=180)
    assert proc.returncode == 0, util.describe(proc)
    return [json.loads(line) for line in rec.read_text().splitlines()], proc


def exact(records):
    """Everything but timings, addresses and thread ids."""
    return collections.Counter((r["poll"], r["result"], r["await_index"], r["depth"], r["state_before"],
                                r["state_after"], r["unknown_reason"]) for r in records)


def kinds(records, polls):
    """The kinds of completed polls of poll fns `polls` (not truncated or still open), without depth."""
    return {(r["poll"], r["result"], r["await_index"], r["state_before"], r["state_after"], r["unknown_reason"])
            for r in records if r["result"] not in (4, 5) and r["poll"] in polls}


def covered_polls(binary, extra):
    """Poll fns with at least one ret replaced by branch sites, or leaves (a return
    probe): the only ones whose probes differ between the modes (the others have the
    very same probes)."""
    doc = json.loads(util.run_asyncbpf("analyze", "-q", "--json", "-", *extra, binary).stdout)
    return {i for i, p in enumerate(doc["polls"]) if p.get("rets_covered") or p.get("leaf")}


def problems(records, polls=None):
    """Results of poll fns `polls` (all: None) that are unknown (3) or truncated (4)."""
    return sum(1 for r in records if r["result"] in (3, 4) and (polls is None or r["poll"] in polls))


@pytest.mark.parametrize("profile,crate", FIXTURES, ids=[f"{p}-{c}" for p, c in FIXTURES])
def test_emulated_records_equal_ret_records(tmp_path, profile, crate):
    util.require_trace_features()
    binary = util.fixture_binary(profile, crate)
    extra = EXTRA.get(crate, ())
    ref1, _ = trace_records(tmp_path, binary, "ret", 1, extra)
    ref2, _ = trace_records(tmp_path, binary, "ret", 2, extra)
    emu, proc = trace_records(tmp_path, binary, "emulated", 1, extra)
    assert re.search(r"\d+ of \d+ \(\d+%\) on instructions the kernel emulates", proc.stderr), proc.stderr
    assert ref1, "the reference run recorded nothing"
    polls = None
    if crate in DETERMINISTIC:
        assert exact(ref1) == exact(ref2), f"{profile}/{crate} is not deterministic: the test needs another fixture"
        assert exact(emu) == exact(ref1), (
            f"{profile}/{crate}: the emulated exits recorded other polls than `ret` probes: "
            f"only emulated {exact(emu) - exact(ref1)}, only ret {exact(ref1) - exact(emu)}")
    else:
        polls = covered_polls(binary, tuple(a for a in extra if a == "--all-crates"))
        seen, ref_seen = kinds(emu, polls), kinds(ref1, polls) | kinds(ref2, polls)
        for n in (3, 4):
            if seen <= ref_seen:
                break
            ref_seen |= kinds(trace_records(tmp_path, binary, "ret", n, extra)[0], polls)
        assert seen <= ref_seen, f"{profile}/{crate}: never seen by `ret` probes: {seen - ref_seen}"
    assert problems(emu, polls) <= max(problems(ref1, polls), problems(ref2, polls)), \
        f"{profile}/{crate}: more unknown or truncated"


def branch_sites(binary):
    """The emulated exit sites of every poll fn, from analyze --json."""
    doc = json.loads(util.run_asyncbpf("analyze", "-q", "--json", "-", binary).stdout)
    for p in doc["polls"]:
        for x in p.get("fast_exits") or []:
            yield p, x


@pytest.mark.parametrize("profile", ["debug", "release"])
def test_branch_sites_are_branches_before_a_ret(profile):
    """Read independently of the analyzer (objdump): a branch site is a jmp/jcc inside
    its function whose target lies inside it, and the ret it stands for follows in the
    same function; a plain exit is a ret or a jump out."""
    binary = util.fixture_binary(profile, "handwritten")
    seen = 0
    for p, x in branch_sites(binary):
        lo, hi = p["addr"], p["addr"] + p["size"]
        listing = util.disassemble(binary, x["addr"], x["addr"] + 16)
        first = listing[0]
        assert first.addr == x["addr"], (p["name"], x)
        if x["kind"] == "branch":
            seen += 1
            assert re.fullmatch(r"j[a-z]+", first.mnemonic), (p["name"], first)
            words = first.text.split()
            target = int(words[words.index(first.mnemonic) + 1], 16)
            assert lo <= target < hi, (p["name"], first)
            assert lo <= x["covers"] < hi and x["covers"] != x["addr"], (p["name"], x)
            ret = util.disassemble(binary, x["covers"], x["covers"] + 1)[0]
            assert ret.mnemonic.startswith("ret"), (p["name"], ret)
            assert x["sp_delta"] <= 0
        else:
            assert x["cond"] == 255 and x["sp_delta"] == 0
    if profile == "release":
        assert seen, "no branch exit site in the release handwritten fixture"


@pytest.mark.parametrize("profile,crate", [(p, c) for p in ("debug", "release") for c in ("handwritten", "outputs")])
def test_leaves_have_no_call_and_no_jump_out(profile, crate):
    """A leaf (its exit a return probe in the default mode: no unwind can pass through
    it) read independently (abi_oracle's objdump reader): no call, no jump out of the
    function. Conversely a function with no call and no jump at all that leaves it
    (direct or indirect) must be a leaf."""
    import abi_oracle

    binary = util.fixture_binary(profile, crate)
    doc = json.loads(util.run_asyncbpf("analyze", "-q", "--json", "-", binary).stdout)
    leaves = 0
    for p in doc["polls"]:
        if not p.get("size") or p.get("inlined_only") or p.get("disasm_error"):
            continue
        lo, hi = p["addr"], p["addr"] + p["size"]
        insns = abi_oracle.disassemble(binary, lo, p["size"])
        calls = [i for i in insns if i.op.startswith("call")]
        out = []
        indirect = []
        for i in insns:
            if i.op.startswith("j"):
                try:
                    target = int(i.args[0].split()[0], 16)
                except (ValueError, IndexError):
                    indirect.append(i)
                    continue
                if not lo <= target < hi:
                    out.append(i)
        if p["leaf"]:
            leaves += 1
            assert not calls and not out, (p["name"], calls, out)
        elif not calls and not out and not indirect:
            pytest.fail(f"{p['name']}: no call and no jump out, but not a leaf")
    if profile == "release" and crate == "handwritten":
        assert leaves, "release handwritten: Trivial::poll (inc; ret) is a leaf"
