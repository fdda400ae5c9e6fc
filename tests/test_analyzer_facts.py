# SPDX-License-Identifier: GPL-2.0
"""Tier 2: analyzer facts on the Rust fixtures (tests/fixtures), debug and release.

Expected values come from the fixtures' own sources (`// AWAIT caller->callee`
markers, `async fn` definitions, spawn/block_on calls; tests/fixtures/README.md)
and from binutils/llvm-dwarfdump reading the same binary, never from asyncbpf's
output. Each binary is analyzed once per session (conftest.py).
"""
import functools
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

import util
from util import FUTURE_POLL_SUFFIX, last_segment, split_path, strip_generics

STD_CRATES = {"std", "core", "alloc"}


@functools.lru_cache(maxsize=None)
def disassembly(binary, addr, size):
    return tuple(util.disassemble(binary, addr, addr + size))


def prefetch_disassembly(binary, polls):
    """objdump once per poll, two at a time (the suite's budget is 2 cores)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda p: disassembly(binary, p["addr"], p["size"]), polls))


def edge_target_answers(model, edge, callee, crate):
    """Does this await edge go where the marker's callee says? (docs/json-schema.md edges)"""
    if callee == "dyn":
        return edge["to"] is None
    if edge["to"] is None:
        return False
    target = model.futures[edge["to"]]
    if callee.endswith("{block}") or callee.endswith("{closure}"):
        return util.caller_name(target, crate) == callee
    if callee[:1].islower():
        # an async fn: its display name ends with ::NAME or ::NAME<...>
        return last_segment(target["name"]) == callee
    # a type: the target is it, or (a wrapper looked through) the awaitee is it
    return (last_segment(target["name"]) == callee or last_segment(target["path"] or "") == callee
            or last_segment(edge["awaitee_type"] or "") == callee)


def normalized_segments(path):
    """Path segments, generics dropped, every closure/env segment spelled {closure}."""
    return ["{closure}" if util.CLOSURE_LIKE.match(s) else s for s in split_path(strip_generics(path))]


# ---------------------------------------------------------------------------
# 14. The run itself and the document's shape
# ---------------------------------------------------------------------------


def test_analyze_exits_0_without_sanitizer_report(build):
    util.assert_no_sanitizer_report(build.proc)
    assert build.proc.returncode == util.EXIT_OK, util.describe(build.proc)


def test_json_matches_documented_schema(model):
    errors = util.schema_errors(model.doc)
    assert not errors, "JSON departs from docs/json-schema.md:\n" + "\n".join(errors[:40])


def test_model_is_self_consistent(model):
    doc, futures, polls, edges = model.doc, model.futures, model.polls, model.edges
    stats = doc["stats"]
    assert (stats["futures"], stats["polls"], stats["edges"], stats["roots"]) == (
        len(futures), len(polls), len(edges), len(doc["roots"]))
    assert stats["inlined_only"] == sum(f["inlined_only"] for f in futures)
    assert doc["binary"]["has_dwarf"] and not doc["binary"]["symbols_only"]
    # both profiles build with `debug = true` (tests/fixtures/Cargo.toml)
    crates = {c["crate"]: c for c in doc["debuginfo"]["crates"]}
    assert crates[model.crate]["own"] and crates[model.crate]["level"] == "full", doc["debuginfo"]
    assert doc["debuginfo"]["level"] == "full" and doc["debuginfo"]["note"] is None, doc["debuginfo"]
    assert stats["cu_errors"] == 0, doc["warnings"][:10]
    awaited = {e["to"] for e in edges if e["to"] is not None and e["to"] != e["from"]}
    problems = []
    for f in futures:
        mine = [p["id"] for p in polls if p["future"] == f["id"]]
        out_of_line = [i for i in mine if not polls[i]["inlined_only"]]
        if f["polls"] != mine:
            problems.append(f"{f['name']}: polls {f['polls']} but polls[].future says {mine}")
        if f["poll"] != (out_of_line[0] if out_of_line else None):
            problems.append(f"{f['name']}: poll {f['poll']}, out-of-line polls {out_of_line}")
        if f["inlined_only"] != (bool(mine) and not out_of_line):
            problems.append(f"{f['name']}: inlined_only {f['inlined_only']} with polls {mine}")
        if f["root"] != (f["id"] not in awaited):
            problems.append(f"{f['name']}: root {f['root']} but awaited: {f['id'] in awaited}")
    for p in polls:
        if p["inlined_only"] != (p["addr"] == 0):
            problems.append(f"poll {p['name']}: inlined_only {p['inlined_only']} at {p['addr']:#x}")
    assert doc["roots"] == [f["id"] for f in futures if f["root"]]
    assert not problems, "\n".join(problems)


def test_display_names_follow_documented_rule(model):
    """futures[].name: an async fn's path without `::{async_fn_env#N}` (generics kept),
    `{async_block#N}` / `{async_closure#N}` for blocks and closures (json-schema.md)."""
    wrong = []
    for f in model.futures:
        if f["path"] is None:
            continue
        want = util.expected_display_name(f["path"], f["kind"])
        if f["name"] != want:
            wrong.append(f"{f['path']}\n    name {f['name']!r}\n    want {want!r}")
    assert not wrong, f"{len(wrong)} display name(s) differ from the documented rule:\n" + "\n".join(wrong[:10])


REF_PREFIX = re.compile(r"^(&mut |&|\*const |\*mut )")


def self_type_matches(self_type, path):
    """T of `<T as Future>::poll` (legacy demangling prints generic parameters by
    name) against the future's path: equal modulo generic arguments, and a bare
    generic parameter (`F` in `<&mut F as Future>::poll`) stands for any type
    behind the same reference prefix."""
    m = re.fullmatch(r"(&mut |&|\*const |\*mut )?[A-Z][A-Za-z0-9_]*", self_type)
    if m:
        return path.startswith(m.group(1) or "") and len(path) > len(m.group(1) or "")
    return normalized_segments(self_type) == normalized_segments(path)


def test_future_paths_are_full_rust_paths(model):
    """`path` is the type's full Rust path as in DWARF: it starts with its crate, and
    `crate` is that first segment. A path without a namespace means the type's
    namespaces were lost."""
    bad = []
    for f in model.futures:
        if f["path"] is None:
            continue
        # a reference type is a type too: `impl Future for &mut F` polls `&mut X`
        segs = split_path(strip_generics(REF_PREFIX.sub("", f["path"])))
        crate = segs[0].lstrip("<&*").split(" ")[-1] if f["path"].startswith("<") else segs[0]
        if len(segs) < 2 or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", crate) or f["crate"] != crate:
            bad.append(f"{f['path']!r} (crate {f['crate']!r}, class {f['crate_class']})")
    assert not bad, "futures whose path is not a full Rust path:\n" + "\n".join(bad[:15])


# ---------------------------------------------------------------------------
# 1. Every async fn of the fixture's sources is a future
# ---------------------------------------------------------------------------


def test_every_async_fn_is_found(model, build):
    fs = util.fixture_source(build.crate)
    by_caller = model.by_caller()
    problems = []
    for name, (file, line) in sorted(fs.async_fns.items()):
        found = [f for f in by_caller.get(name, []) if f["kind"] == "async_fn"]
        if found:
            for f in found:
                if last_segment(f["name"]) != name:
                    problems.append(f"{file}:{line} async fn {name}: display name {f['name']!r}")
                if build.profile == "debug" and f["poll"] is None:
                    problems.append(f"{file}:{line} async fn {name}: no out-of-line poll in a debug build")
                if f["poll"] is None and not f["inlined_only"]:
                    symbol = f"{build.crate}::{name}::{{{{closure}}}}"
                    names = tuple(util.nm_symbols(build.binary))
                    if symbol in util.demangled(names):
                        problems.append(f"{file}:{line} async fn {name}: nm has {symbol} but the model "
                                        "has neither an out-of-line nor an inlined poll")
            continue
        if build.profile == "debug":
            problems.append(f"{file}:{line} async fn {name}: no {build.crate}::{name}::{{async_fn_env#N}} future")
        elif f"{build.crate}::{name}" in util.dwarf_async_fn_envs(build.binary):
            problems.append(f"{file}:{line} async fn {name}: its env type is in the DWARF "
                            f"({util.LLVM_DWARFDUMP}) but not in the model")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("crate", util.CRATES)
def test_debug_polls_are_the_closure_symbols(crate, analyses):
    """Debug builds keep every async fn's poll out of line: `nm` shows it as
    `crate::NAME::{{closure}}`, and the future's poll is at that symbol's address."""
    build = analyses.get("debug", crate)
    model = build.model
    syms = util.nm_symbols(build.binary)
    names = tuple(syms)
    addrs_of = {}
    for raw, d in zip(names, util.demangled(names)):
        addrs_of.setdefault(d, set()).update(syms[raw])
    by_caller = model.by_caller()
    problems = []
    for name in sorted(util.fixture_source(build.crate).async_fns):
        want = addrs_of.get(f"{build.crate}::{name}::{{{{closure}}}}", set())
        for f in by_caller.get(name, []):
            p = model.polls[f["poll"]] if f["poll"] is not None else None
            if p is None or p["addr"] not in want:
                problems.append(f"{name}: poll at {p and hex(p['addr'])}, nm has {sorted(hex(a) for a in want)}")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------
# 2. Await points: Suspend states against the markers
# ---------------------------------------------------------------------------


def test_await_lines_match_markers(model, build):
    fs = util.fixture_source(build.crate)
    by_caller = model.by_caller()
    problems = []
    for caller in fs.callers:
        marks = fs.markers_of(caller)
        if caller not in by_caller:
            problems.append(f"caller {caller} ({marks[0]}): no future in the model")
            continue
        for f in by_caller[caller]:
            states = model.suspend_states(f)
            if [s["index"] for s in states] != list(range(len(states))):
                problems.append(f"{f['name']}: Suspend indices {[s['index'] for s in states]}")
            if len(states) != len(marks):
                problems.append(f"{f['name']}: {len(states)} await points, {len(marks)} markers for {caller}: "
                                f"{[(s['file'], s['line']) for s in states]} vs {[str(m) for m in marks]}")
                continue
            want = {(m.file, m.line) for m in marks if not m.is_macro}
            got = set()
            for s, m in zip(states, marks):  # Suspend k is the k-th marker in source order
                src = util.is_fixture_source_file(s["file"], build.crate)
                if m.is_macro:
                    # join!/select!: rustc names the macro's own source; checked by targets
                    edges = model.edges_from(f["id"], s["index"])
                    reached = {c for c in m.callees
                               if any(edge_target_answers(model, e, c, build.crate) for e in edges)}
                    if reached != set(m.callees):
                        targets = [model.futures[e["to"]]["name"] if e["to"] is not None else None for e in edges]
                        problems.append(f"{f['name']} await {s['index']} ({m}): edges to {targets} "
                                        "do not reach every joined future")
                    continue
                if src is None:
                    problems.append(f"{f['name']} await {s['index']}: file {s['file']!r} is not a fixture source ({m})")
                got.add((src, s["line"]))
            if got != want:
                problems.append(f"{f['name']}: await lines {sorted(got)} != marker lines {sorted(want)}")
    # the other direction: every await of a fixture-source future has a marker
    for f in model.futures:
        if f["kind"] == "handwritten" or not util.is_fixture_source_file(f["file"], build.crate):
            continue
        caller = util.caller_name(f, build.crate)
        if model.suspend_states(f) and caller not in fs.callers:
            problems.append(f"{f['name']} ({f['file']}:{f['line']}) has await points but no marker names {caller}")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------
# 3. Await edges: what each await resolves to
# ---------------------------------------------------------------------------


def test_await_edges_match_markers(model, build):
    fs = util.fixture_source(build.crate)
    by_caller = model.by_caller()
    problems = []
    for caller in fs.callers:
        marks = fs.markers_of(caller)
        for f in by_caller.get(caller, []):
            for k, m in enumerate(marks):
                edges = model.edges_from(f["id"], k)
                if not edges:
                    problems.append(f"{f['name']} await {k} ({m}): no edge")
                    continue
                for callee in m.callees:
                    if not any(edge_target_answers(model, e, callee, build.crate) for e in edges):
                        got = [(model.futures[e["to"]]["name"] if e["to"] is not None else None, e["awaitee_type"])
                               for e in edges]
                        problems.append(f"{f['name']} await {k} ({m}): no edge to {callee}; edges {got}")
    # every edge of a fixture future belongs to an await point of its states
    for f in model.futures:
        if util.caller_name(f, build.crate) in fs.callers:
            indices = {s["index"] for s in model.suspend_states(f)}
            stray = [e["await_index"] for e in model.edges_from(f["id"]) if e["await_index"] not in indices]
            if stray:
                problems.append(f"{f['name']}: edges for await indices {stray} it does not have")
    assert not problems, "\n".join(problems)


def test_generic_wrapper_futures_are_await_targets(model, build):
    """analyzer.md: a generic hand-written future with futures inside (Timeout<F>,
    Join2<A, B>) is a wrapper, 'a target itself unless it is std's'. Markers name
    such wrappers: `run->Timeout`, `join_task->Join2`."""
    fs = util.fixture_source(build.crate)
    by_caller = model.by_caller()
    problems = []
    for caller in fs.callers:
        for k, m in enumerate(fs.markers_of(caller)):
            if m.is_macro or not m.callees[0][:1].isupper():
                continue
            for f in by_caller.get(caller, []):
                edges = model.edges_from(f["id"], k)
                awaitee = edges[0]["awaitee_type"] if edges else None
                if not awaitee or "<" not in awaitee or last_segment(awaitee) != m.callees[0]:
                    continue  # not a generic awaitee of that name
                if split_path(awaitee)[0] in STD_CRATES:
                    continue
                targets = [model.futures[e["to"]]["name"] for e in edges if e["to"] is not None]
                if not any(last_segment(t) == m.callees[0] for t in targets):
                    problems.append(f"{f['name']} await {k} ({m}): awaitee {awaitee} is not a target; "
                                    f"targets {targets}")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------
# 4. Poll functions and their futures
# ---------------------------------------------------------------------------


def test_poll_names_match_their_futures(model):
    problems = []
    for p in model.polls:
        if p["future"] is None or p["name"] is None:
            continue
        f = model.futures[p["future"]]
        if f["path"] is None:
            continue
        if f["kind"] == "handwritten":
            if not (p["name"].startswith("<") and p["name"].endswith(FUTURE_POLL_SUFFIX)):
                problems.append(f"{p['name']}: not <T as Future>::poll for hand-written {f['path']}")
                continue
            self_type = p["name"][1:-len(FUTURE_POLL_SUFFIX)]
            if not self_type_matches(self_type, f["path"]):
                problems.append(f"{p['name']}: T is not {f['path']} (modulo generic arguments)")
            continue
        psegs, fsegs = normalized_segments(p["name"]), normalized_segments(f["path"])
        n_poll = next((i for i, s in enumerate(reversed(psegs)) if s != "{closure}"), len(psegs))
        n_fut = next((i for i, s in enumerate(reversed(fsegs)) if s != "{closure}"), len(fsegs))
        if n_poll == 0 or n_poll != n_fut:
            problems.append(f"{p['name']}: {n_poll} closure segments, future {f['path']} has {n_fut}")
            continue
        head_p, head_f = psegs[:-n_poll], fsegs[:-n_fut]
        if "{impl#" not in f["path"] and not p["name"].startswith("<"):
            # the plain case: the poll's name without its closures is a prefix of the path
            if head_p != head_f:
                problems.append(f"{p['name']}: {'::'.join(head_p)} is not the namespace of {f['path']}")
        elif head_p[-1:] != head_f[-1:] or (not p["name"].startswith("<") and head_p[:1] != head_f[:1]):
            problems.append(f"{p['name']}: fn/crate differ from {f['path']}")
    assert not problems, "\n".join(problems[:20])


def test_poll_names_are_the_demangled_linkage_names(model):
    """`name` is the demangled linkage name (c++filt agrees, hash aside)."""
    polls = [p for p in model.polls if p["linkage_name"]]
    want = util.demangled(tuple(p["linkage_name"] for p in polls))
    wrong = [f"{p['linkage_name']}: name {p['name']!r}, c++filt says {w!r}"
             for p, w in zip(polls, want) if p["name"] != w]
    assert not wrong, "\n".join(wrong[:20])


def test_handwritten_poll_symbols_are_found(model, build):
    """Every out-of-line `<T as core::future::future::Future>::poll` that nm lists
    (T outside std/core/alloc) is a poll in the model, at that address, polling T."""
    syms = util.nm_symbols(build.binary)
    names = tuple(syms)
    by_addr = {p["addr"]: p for p in model.out_of_line_polls()}
    missing, total = [], 0
    for raw, d in zip(names, util.demangled(names)):
        if not (d.startswith("<") and d.endswith(FUTURE_POLL_SUFFIX)):
            continue
        self_type = d[1:-len(FUTURE_POLL_SUFFIX)]
        if split_path(strip_generics(self_type.lstrip("&*").replace("mut ", "", 1)))[0] in STD_CRATES:
            continue
        for addr in syms[raw]:
            total += 1
            p = by_addr.get(addr)
            if p is None:
                missing.append(f"{addr:#x} {d}")
            elif p["future"] is None or not self_type_matches(
                    self_type, model.futures[p["future"]]["path"] or ""):
                missing.append(f"{addr:#x} {d}: polls {p['future'] and model.futures[p['future']]['path']}")
    assert not missing, (f"{len(missing)} of {total} hand-written poll functions in nm are not polls in the model:\n"
                         + "\n".join(missing[:15]))


# ---------------------------------------------------------------------------
# 5-7. Addresses, file offsets, exit and entry sites (binutils)
# ---------------------------------------------------------------------------


def symbol_addresses(syms, linkage_name):
    """Addresses nm shows for a linkage name. ThinLTO promotes local symbols with a
    `.llvm.<hash>` suffix that DWARF's DW_AT_linkage_name does not carry: same symbol."""
    addrs = set(syms.get(linkage_name, ()))
    prefix = linkage_name + ".llvm."
    for name, a in syms.items():
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            addrs |= a
    return addrs


def test_poll_symbols_and_file_offsets(model, build):
    """nm has the poll's symbol at `addr`; `file_offset` is the PT_LOAD arithmetic of
    readelf -l; the file's bytes there are the bytes objdump shows at `addr`."""
    polls = model.out_of_line_polls()
    prefetch_disassembly(build.binary, polls)
    syms = util.nm_symbols(build.binary)
    problems = []
    with open(build.binary, "rb") as elf:
        for p in polls:
            where = f"{p['name']} at {p['addr']:#x}"
            if p["linkage_name"] and p["addr"] not in symbol_addresses(syms, p["linkage_name"]):
                problems.append(f"{where}: nm has {p['linkage_name']} at "
                                f"{sorted(hex(a) for a in symbol_addresses(syms, p['linkage_name']))}")
            want = util.file_offset_of(build.binary, p["addr"])
            if p["file_offset"] != want:
                problems.append(f"{where}: file_offset {p['file_offset']}, PT_LOAD arithmetic gives {want}")
                continue
            shown = b"".join(i.raw for i in disassembly(build.binary, p["addr"], p["size"]))
            elf.seek(want)
            in_file = elf.read(len(shown))
            if not shown or in_file[:8] != shown[:8] or in_file != shown:
                problems.append(f"{where}: bytes at file offset {want:#x} {in_file[:8].hex()}... "
                                f"!= objdump's {shown[:8].hex()}...")
    assert not problems, "\n".join(problems[:20])


JMP_TARGET = re.compile(r"^\S+\s+([0-9a-f]+)\b")


def test_exit_sites(model, build):
    polls = model.out_of_line_polls()
    prefetch_disassembly(build.binary, polls)
    problems = []
    for p in polls:
        where = f"{p['name']} [{p['addr']:#x}, +{p['size']})"
        if p["disasm_error"]:
            problems.append(f"{where}: disasm_error {p['disasm_error']!r}")
            continue
        insns = {i.addr: i for i in disassembly(build.binary, p["addr"], p["size"])}
        lo, hi = p["addr"], p["addr"] + p["size"]
        exits = {x["addr"]: x for x in p["exits"]}
        for x in p["exits"]:
            i = insns.get(x["addr"])
            if i is None:
                problems.append(f"{where}: exit {x['addr']:#x} is not an instruction boundary")
                continue
            if x["file_offset"] != util.file_offset_of(build.binary, x["addr"]):
                problems.append(f"{where}: exit {x['addr']:#x} file_offset {x['file_offset']:#x}")
            if x["kind"] == "ret" and not i.mnemonic.startswith("ret"):
                problems.append(f"{where}: exit {x['addr']:#x} 'ret' is {i.text!r}")
            elif x["kind"] == "tail_jmp":
                m = JMP_TARGET.match(i.text)
                if not i.mnemonic.startswith("jmp") or "*" in i.text or not m:
                    problems.append(f"{where}: exit {x['addr']:#x} 'tail_jmp' is {i.text!r}")
                elif int(m.group(1), 16) != x["target"] or lo <= x["target"] < hi:
                    problems.append(f"{where}: tail_jmp {x['addr']:#x} target {x['target']:#x}, objdump {i.text!r}")
            elif x["kind"] == "tail_jmp_indirect" and not (i.mnemonic.startswith("jmp") and "*" in i.text):
                problems.append(f"{where}: exit {x['addr']:#x} 'tail_jmp_indirect' is {i.text!r}")
        for i in insns.values():  # completeness: every ret, every direct jmp out of the function
            if i.mnemonic.startswith("ret") and i.addr not in exits:
                problems.append(f"{where}: {i.addr:#x} {i.text!r} is not among the exits")
            m = JMP_TARGET.match(i.text)
            if i.mnemonic == "jmp" and "*" not in i.text and m and not lo <= int(m.group(1), 16) < hi \
                    and i.addr not in exits:
                problems.append(f"{where}: tail jump {i.addr:#x} {i.text!r} is not among the exits")
    assert not problems, "\n".join(problems[:20])


EMULATED = ("push", "jmp", "call", "j", "nop")


def test_entry_sites(model, build):
    polls = model.out_of_line_polls()
    prefetch_disassembly(build.binary, polls)
    problems = []
    for p in polls:
        where = f"{p['name']} [{p['addr']:#x}, +{p['size']})"
        e = p["entry"]
        if e is None:
            problems.append(f"{where}: no entry site")
            continue
        insns = {i.addr: i for i in disassembly(build.binary, p["addr"], p["size"])}
        i = insns.get(e["addr"])
        if not p["addr"] <= e["addr"] < p["addr"] + p["size"] or i is None:
            problems.append(f"{where}: entry {e['addr']:#x} is not an instruction of the function")
            continue
        if e["file_offset"] != util.file_offset_of(build.binary, e["addr"]):
            problems.append(f"{where}: entry file_offset {e['file_offset']:#x}")
        if e["emulated"] and not i.mnemonic.startswith(EMULATED):
            problems.append(f"{where}: entry {e['addr']:#x} marked emulated but is {i.text!r}")
        intel = e["insn"].split()[0] if e["insn"] else ""
        att = i.mnemonic
        if intel != att and not (att[:-1] == intel and att[-1] in "bwlq"):
            problems.append(f"{where}: entry insn {e['insn']!r}, objdump {i.text!r}")
    assert not problems, "\n".join(problems[:20])


# ---------------------------------------------------------------------------
# 8. Inlined-only polls (release)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("crate", util.CRATES)
def test_release_reports_inlined_only_user_futures(crate, analyses):
    model = analyses.get("release", crate).model
    inlined = [f for f in model.futures
               if f["kind"] == "async_fn" and f["crate_class"] == "user" and f["inlined_only"]
               and sum(model.polls[p]["inline_sites_total"] for p in f["polls"]) >= 1]
    assert inlined, "release build: no user async fn is reported inlined_only with an inline site"


SYMBOL_SUFFIX = re.compile(r"(\.llvm\.\d+|\.cold(\.\d+)?)+$")


def test_inline_sites_are_inside_functions(model, build):
    """Every inlined-only poll has inline sites; each site's address lies inside a
    defined FUNC symbol (readelf -s), the function its `caller` names."""
    inlined = [p for p in model.polls if p["inlined_only"]]
    names = tuple(s[2] for s in util.func_symbols(build.binary))
    readable = dict(zip(names, util.demangled(tuple(SYMBOL_SUFFIX.sub("", n) for n in names))))
    problems = []
    for p in inlined:
        if p["inline_sites_total"] < 1 or not p["inline_sites"]:
            problems.append(f"{p['name']}: inlined_only, but no inline sites (size {p['size']})")
        for s in p["inline_sites"]:
            fn = util.containing_function(build.binary, s["addr"])
            if fn is None:
                problems.append(f"{p['name']}: inline site {s['addr']:#x} (into {s['caller']}) is in no function")
            elif s["caller"] and readable[fn[2]] != s["caller"]:
                problems.append(f"{p['name']}: inline site {s['addr']:#x} is in {readable[fn[2]]}, "
                                f"caller says {s['caller']}")
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems[:20])


# ---------------------------------------------------------------------------
# 9-12. Generics, recursion, roots, drop glue
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("profile", util.PROFILES)
def test_generic_async_fn_has_one_future_per_instantiation(profile, analyses):
    model = analyses.get(profile, "handwritten").model
    file, line = util.fixture_source("handwritten").async_fns["sum_twice"]
    found = {f["name"]: f for f in model.futures if f["kind"] == "async_fn"
             and util.caller_name(f, "handwritten") == "sum_twice"}
    assert set(found) == {"handwritten::sum_twice<u32>", "handwritten::sum_twice<u8>"}, sorted(found)
    assert len({f["path"] for f in found.values()}) == 2
    for f in found.values():
        assert util.is_fixture_source_file(f["file"], "handwritten") == file and f["line"] == line, \
            f"{f['name']} declared at {f['file']}:{f['line']}, source says {file}:{line}"


@pytest.mark.parametrize("profile", util.PROFILES)
def test_recursion_edges(profile, analyses):
    """descend awaits Box::pin(descend(..)): an edge to itself; recurse_dyn{block}
    awaits a Pin<Box<dyn Future>>: unresolved. Derived from the markers."""
    model = analyses.get(profile, "handwritten").model
    fs = util.fixture_source("handwritten")
    by_caller = model.by_caller()
    recursive = [(k, m) for c in fs.callers for k, m in enumerate(fs.markers_of(c))
                 if m.callees == (m.caller,) or m.callees == ("dyn",)]
    assert any(m.callees == (m.caller,) for _, m in recursive), "fixture lost its self-recursive await"
    problems = []
    for k, m in recursive:
        for f in by_caller.get(m.caller, []):
            edges = model.edges_from(f["id"], k)
            if m.callees == ("dyn",):
                if not any(e["to"] is None and "dyn " in (e["awaitee_type"] or "") for e in edges):
                    problems.append(f"{m}: no unresolved edge for the dyn Future: {edges}")
            elif not any(e["to"] == f["id"] for e in edges):
                problems.append(f"{m}: no edge from {f['name']} to itself: {edges}")
    assert not problems, "\n".join(problems)


def test_roots(model, build):
    fs = util.fixture_source(build.crate)
    by_caller = model.by_caller()
    problems = []
    # A future another future awaits (per the markers) is not a root.
    for m in fs.markers:
        for callee in m.callees:
            if callee == m.caller:
                continue
            for f in by_caller.get(callee, []):
                if f["root"]:
                    problems.append(f"{f['name']} is a root, but {m.caller} awaits it ({m})")
    # Task entry futures (spawned, block_on'd) are roots, or, where the runtime wraps
    # them (async-executor's spawn/run), reached from a runtime root only.
    up = {}
    for e in model.edges:
        if e["to"] is not None and e["to"] != e["from"]:
            up.setdefault(e["to"], set()).add(e["from"])
    for entry in sorted(fs.task_entries):
        for f in by_caller.get(entry, []):
            if f["root"]:
                continue
            awaiters = [model.futures[i] for i in up.get(f["id"], ())]
            if any(a["crate_class"] == "user" for a in awaiters):
                problems.append(f"task entry {f['name']} is awaited by user code: {[a['name'] for a in awaiters]}")
            seen, todo = set(), [f["id"]]
            while todo:
                i = todo.pop()
                if i not in seen:
                    seen.add(i)
                    todo.extend(up.get(i, ()))
            if not any(model.futures[i]["root"] for i in seen):
                problems.append(f"task entry {f['name']}: no root above it")
    assert not problems, "\n".join(problems)


def test_drop_in_place_symbols(model, build):
    syms = util.nm_symbols(build.binary)
    bad, checked = [], 0
    for f in model.futures:
        d = f["drop_in_place"]
        if d is None:
            continue
        checked += 1
        if d["addr"] not in symbol_addresses(syms, d["symbol"]):
            bad.append(f"{f['name']}: {d['symbol']} at {d['addr']:#x}; nm: "
                       f"{sorted(hex(a) for a in symbol_addresses(syms, d['symbol'])) or 'no such symbol'}")
    if build.profile == "debug":
        assert checked, "a debug build without any future's drop_in_place"
    assert not bad, "\n".join(bad[:20])


# ---------------------------------------------------------------------------
# 13. The DOT export
# ---------------------------------------------------------------------------

DOT_CLUSTER = re.compile(r'^\s*subgraph cluster_(\d+) \{\s*$')
DOT_LABEL = re.compile(r'^\s*label="((?:[^"\\]|\\.)*)";\s*$')
DOT_NODE = re.compile(r'^\s*([fu]\d+) \[')
DOT_EDGE = re.compile(r'^\s*(f\d+) -> ([fu]\d+) \[label="await (\d+)')


def test_dot_export(model, build):
    util.need_tool("dot")
    proc = subprocess.run(["dot", "-Tsvg", build.dot_path, "-o", "/dev/null"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and not proc.stderr.strip(), util.describe(proc)
    lines = open(build.dot_path, encoding="utf-8").read().splitlines()
    clusters, nodes, edges, current = {}, set(), [], None
    for i, line in enumerate(lines):
        if DOT_CLUSTER.match(line):
            label = DOT_LABEL.match(lines[i + 1])
            current = label.group(1) if label else None
            clusters[current] = set()
            continue
        if line.strip() == "}":
            current = None
        n = DOT_NODE.match(line)
        if n:
            nodes.add(n.group(1))
            if current is not None:
                clusters[current].add(n.group(1))
        e = DOT_EDGE.match(line)
        if e:
            edges.append((e.group(1), e.group(2), int(e.group(3))))
    drawn = {f["id"] for f in model.futures if f["polls"]} | \
            {e["from"] for e in model.edges} | {e["to"] for e in model.edges if e["to"] is not None}
    problems = []
    for fid in sorted(drawn):
        f = model.futures[fid]
        if f"f{fid}" not in nodes:
            problems.append(f"future {f['name']} (f{fid}) has a poll or an edge but is not drawn")
        elif f["crate"] and f"f{fid}" not in clusters.get(f["crate"], ()):
            problems.append(f"future {f['name']} (f{fid}) is not in the cluster of crate {f['crate']}")
    for crate in sorted({model.futures[i]["crate"] for i in drawn if model.futures[i]["crate"]}):
        if crate not in clusters:
            problems.append(f"no cluster for crate {crate}")
    remaining = list(edges)
    for e in model.edges:
        src = f"f{e['from']}"
        match = next((d for d in remaining if d[0] == src and d[2] == e["await_index"]
                      and (d[1] == f"f{e['to']}" if e["to"] is not None else d[1].startswith("u"))), None)
        if match is None:
            problems.append(f"JSON edge {e['from']} -> {e['to']} (await {e['await_index']}) is not in the DOT file")
        else:
            remaining.remove(match)
    assert not problems, "\n".join(problems[:20])


# ---------------------------------------------------------------------------
# 15. Where each await point's awaited future lives (for reading parked tasks)
# ---------------------------------------------------------------------------

DUMP_DIE = re.compile(r"^(0x[0-9a-f]+):(\s+)(DW_TAG_\w+|NULL)")
DUMP_ATTR = re.compile(r"^\s+(DW_AT_\w+)\s+\((.*)\)$")


def dwarfdump_tree(binary, die_offset):
    """The DIE at die_offset and its descendants three levels down, from
    llvm-dwarfdump: [(offset, depth, tag, {attr: text})]."""
    text = util.tool(util.LLVM_DWARFDUMP, f"--debug-info={die_offset}", "-c", "-r", "3", binary, timeout=60)
    dies = []
    for line in text.splitlines():
        m = DUMP_DIE.match(line)
        if m:
            dies.append((int(m.group(1), 16), len(m.group(2)), m.group(3), {}))
            continue
        a = DUMP_ATTR.match(line)
        if a and dies:
            dies[-1][3][a.group(1)] = a.group(2)
    return dies


def number(text):
    return int(text.split()[0], 0)


def awaitee_offsets_from_dump(binary, die_offset):
    """{discr value: (offset of __awaitee in the future, its size or None)} of a
    compiler future, from its variant part: the variant's member offset plus
    __awaitee's offset in the variant's struct."""
    dies = dwarfdump_tree(binary, die_offset)
    by_offset = {d[0]: d for d in dies}
    structs = {}  # struct DIE offset -> {member name: (location, type offset)}
    current = None
    for off, depth, tag, attrs in dies:
        if tag == "DW_TAG_structure_type":
            current = structs.setdefault(off, {}), depth
        elif tag == "DW_TAG_member" and current and depth == current[1] + 2:
            name = attrs.get("DW_AT_name", "").strip('"')
            loc = attrs.get("DW_AT_data_member_location")
            typ = attrs.get("DW_AT_type")
            if loc is not None and typ:
                current[0][name] = (number(loc), int(typ.split()[0], 16))
    out, discr = {}, None
    for off, depth, tag, attrs in dies:
        if tag == "DW_TAG_variant":
            discr = number(attrs["DW_AT_discr_value"]) if "DW_AT_discr_value" in attrs else None
        elif tag == "DW_TAG_member" and discr is not None and "DW_AT_data_member_location" in attrs:
            vtype = int(attrs["DW_AT_type"].split()[0], 16)
            members = structs.get(vtype, {})
            if "__awaitee" in members:
                loc, atype = members["__awaitee"]
                size_attr = by_offset.get(atype, (0, 0, "", {}))[3].get("DW_AT_byte_size")
                out[discr] = (number(attrs["DW_AT_data_member_location"]) + loc,
                              number(size_attr) if size_attr else None)
            discr = None
    return out


@pytest.mark.parametrize("profile", ["debug", "release"])
def test_awaitee_offsets_match_dwarfdump(profile, analyses):
    """Every suspend state's awaitee_offset/awaitee_size against llvm-dwarfdump's
    reading of the same future type (its variant member's offset plus __awaitee's
    offset in the variant struct), on the handwritten fixture's own futures."""
    a = analyses.get(profile, "handwritten")
    checked = 0
    for f in a.model.futures:
        if f["kind"] == "handwritten" or not (f["path"] or "").startswith("handwritten::"):
            continue
        states = [s for s in f["states"] if s["kind"] == "suspend"]
        if not states:
            continue
        truth = awaitee_offsets_from_dump(a.binary, f["die_offset"])
        for s in states:
            assert s["discr"] in truth, (f["name"], s, truth)
            offset, size = truth[s["discr"]]
            assert s["awaitee_offset"] == offset, (f["name"], s, truth)
            if size is not None:
                assert s["awaitee_size"] == size, (f["name"], s, truth)
            assert offset + s["awaitee_size"] <= f["size"], (f["name"], s)
            checked += 1
    assert checked >= 10, f"only {checked} await points checked"


def member_offsets_from_dump(binary, die_offset):
    """{member name: offset} of a struct DIE, from llvm-dwarfdump."""
    dies = dwarfdump_tree(binary, die_offset)
    top = dies[0][1]
    return {attrs["DW_AT_name"].strip('"'): number(attrs["DW_AT_data_member_location"])
            for _, depth, tag, attrs in dies
            if tag == "DW_TAG_member" and depth == top + 2 and "DW_AT_data_member_location" in attrs}


@pytest.mark.parametrize("profile", ["debug", "release"])
def test_await_steps_reach_the_awaited_future(profile, analyses):
    """Where each awaited future is, from the state's __awaitee (edges[].steps), against
    the fixture's types (tests/fixtures/handwritten/src/main.rs) and llvm-dwarfdump:
    an awaitee that is the future itself: no step; `Pin<Box<F>>` (descend, deep, and
    recursion_task's `Pin<Box<dyn Future>>`): one pointer at 0; Join2's `a`/`b`
    (`Pin<Box<F>>` fields) and Race2's (`Option<Pin<Box<F>>>`, the niche keeps the
    pointer at the field's start): the pointer at that field's DWARF offset."""
    a = analyses.get(profile, "handwritten")
    m = a.model
    seen = set()
    for e in m.edges:
        src = m.futures[e["from"]]
        if not (src["path"] or "").startswith("handwritten::"):
            continue
        awaitee = e["awaitee_type"] or ""
        target = m.futures[e["to"]] if e["to"] is not None else None
        if target is not None and awaitee == target["path"]:
            assert e["steps"] == [], (src["name"], e)
            seen.add("direct")
        elif awaitee.startswith("core::pin::Pin<alloc::boxed::Box<"):
            assert e["steps"] == [{"offset": 0, "deref": True}], (src["name"], e)
            assert e["dyn"] == (target is None and "dyn " in awaitee), e
            seen.add("dyn" if e["dyn"] else "box")
        elif last_segment(strip_generics(awaitee)) in ("Join2", "Race2") and target is not None \
                and target["path"] != awaitee:
            wrapper = next(f for f in m.futures if f["path"] == awaitee)
            fields = member_offsets_from_dump(a.binary, wrapper["die_offset"])
            # the inner futures' types name which field holds which: a is the first
            inner = util.generic_args(awaitee)
            field = "a" if strip_generics(target["path"]) == strip_generics(inner[0]) else "b"
            assert e["steps"] == [{"offset": fields[field], "deref": True}], (src["name"], e, fields)
            seen.add(last_segment(strip_generics(awaitee)))
    assert {"direct", "box", "dyn", "Join2", "Race2"} <= seen, seen


def member_die(binary, struct, name):
    """The DW_TAG_member `name` of a struct DIE (util.Die), or None."""
    return next((c for c in struct.children if c.tag == "DW_TAG_member" and c.name == name), None)


def suspend_awaitee_die(binary, env_die_offset, discr):
    """The __awaitee member's type DIE of the variant with this discriminant value."""
    env = util.dwarf_die(binary, env_die_offset)
    part = next(c for c in env.children if c.tag == "DW_TAG_variant_part")
    variant = next(v for v in part.children if v.tag == "DW_TAG_variant"
                   and v.number("DW_AT_discr_value") == discr)
    vstruct = util.dwarf_die(binary, variant.children[0].ref(), 1)
    return util.dwarf_die(binary, member_die(binary, vstruct, "__awaitee").ref())


@pytest.mark.parametrize("profile", ["debug", "release"])
def test_await_steps_reach_the_awaitees_own_member(profile, analyses):
    """async-channel's `Recv { receiver: &Receiver, listener: Option<EventListener> }`
    (smol_app's `chan_task->Recv`) waits on its own `listener`; the Receiver behind the
    reference has a listener of its own (for its Stream impl). The edge to the
    EventListener must reach Recv's: `listener`'s offset plus `Some.__0`'s, per
    llvm-dwarfdump, no pointer on the way."""
    a = analyses.get(profile, "smol_app")
    m = a.model
    task = next(f for f in m.by_caller()["chan_task"] if f["kind"] == "async_fn")
    state = next(s for s in task["states"] if s["kind"] == "suspend" and s["index"] == 0)
    recv = suspend_awaitee_die(a.binary, task["die_offset"], state["discr"])
    assert recv.name.startswith("Recv<"), recv.name
    listener = member_die(a.binary, recv, "listener")
    option = util.dwarf_die(a.binary, listener.ref())
    part = next(c for c in option.children if c.tag == "DW_TAG_variant_part")
    some = next(mb for v in part.children if v.tag == "DW_TAG_variant"
                for mb in v.children if mb.tag == "DW_TAG_member" and mb.name == "Some")
    inner = member_die(a.binary, util.dwarf_die(a.binary, some.ref(), 1), "__0")
    at = sum(d.number("DW_AT_data_member_location") or 0 for d in (listener, some, inner))
    edges = [e for e in m.edges_from(task["id"], 0)
             if e["to"] is not None and last_segment(m.futures[e["to"]]["name"]) == "EventListener"]
    assert edges, m.edges_from(task["id"], 0)
    assert all(e["steps"] == ([{"offset": at, "deref": False}] if at else []) for e in edges), (edges, at)


@pytest.mark.parametrize("profile", ["debug", "release"])
def test_await_steps_through_a_pointer_to_a_pointer(profile, analyses):
    """tokio::select!'s closure holds `_ref__futures: &mut &mut (fast, slow)`: two
    pointers, two derefs (tokio_mt's `run->fast|slow`). Expected steps from
    llvm-dwarfdump: PollFn's `f`, the closure's `_ref__futures` (the pointer chain
    counted on its type DIEs), the tuple's `__0` / `__1`."""
    a = analyses.get(profile, "tokio_mt")
    m = a.model
    k = next(i for i, mk in enumerate(util.fixture_source("tokio_mt").markers_of("run"))
             if set(mk.callees) == {"fast", "slow"})
    run = next(f for f in m.by_caller()["run"] if f["kind"] == "async_fn")
    state = next(s for s in run["states"] if s["kind"] == "suspend" and s["index"] == k)
    pollfn = suspend_awaitee_die(a.binary, run["die_offset"], state["discr"])
    f = member_die(a.binary, pollfn, "f")
    closure = util.dwarf_die(a.binary, f.ref(), 1)
    refs = member_die(a.binary, closure, "_ref__futures")
    pointers, t = 0, util.dwarf_die(a.binary, refs.ref(), 1)
    while t.tag == "DW_TAG_pointer_type":
        pointers += 1
        t = util.dwarf_die(a.binary, t.ref(), 1)
    assert pointers == 2, (refs, t)
    first = f.number("DW_AT_data_member_location") + refs.number("DW_AT_data_member_location")
    for name, field in (("fast", "__0"), ("slow", "__1")):
        at = member_die(a.binary, t, field).number("DW_AT_data_member_location")
        want = [{"offset": first, "deref": True}, {"offset": 0, "deref": True}]
        if at:
            want.append({"offset": at, "deref": False})
        edges = [e for e in m.edges_from(run["id"], k)
                 if e["to"] is not None and last_segment(m.futures[e["to"]]["name"]) == name]
        assert edges and all(e["steps"] == want for e in edges), (name, edges, want)
