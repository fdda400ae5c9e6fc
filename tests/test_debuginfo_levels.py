# SPDX-License-Identifier: GPL-2.0
"""Every command on binaries built with less debuginfo than `debug = true`
(docs/analyzer.md, "Debug info levels").

The fixtures: `tests/fixtures/bin/{nodebug,linetables,limited}/{handwritten,tokio_mt}`,
release builds whose profiles in tests/fixtures/Cargo.toml set `debug = false` (with
`strip = false`: the file keeps the standard library's DWARF, none of the program's),
`debug = "line-tables-only"` and `debug = "limited"`.

Ground truth: the level each profile asks for (Cargo.toml, read here, mapped with
Cargo's documented meaning of `debug`); which poll fns exist out of line (`nm` and
`c++filt`: `crate::f::{{closure}}`, `<T as core::future::future::Future>::poll`); the
fixtures' sources (`async fn` lines, `// AWAIT` markers) and their own output (the
executor's poll counts per task, the parked tasks' counts); `readelf` for sections.
"""
import json
import os
import re
import subprocess
import tomllib

import pytest

import util
from util import uprobes  # noqa: F401 (a pytest fixture)

CRATES = ["handwritten", "tokio_mt"]
VARIANTS = ["nodebug", "linetables", "limited"]
LEVELS = util.DEBUGINFO_LEVELS  # lowest first
BUILDS = [(v, c) for v in VARIANTS for c in CRATES]
BUILD_IDS = [f"{v}-{c}" for v, c in BUILDS]

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="trace and profile load BPF programs: run the suite as root")


def cargo_level(variant):
    """The level Cargo's `debug` value of the fixture profile asks for (Cargo's docs:
    false/0/"none", "line-tables-only", 1/"limited", true/2/"full")."""
    with open(util.FIXTURES / "Cargo.toml", "rb") as f:
        profile = tomllib.load(f)["profile"][variant]
    debug = profile["debug"]
    return {False: "none", 0: "none", "none": "none", "line-tables-only": "line-tables-only",
            1: "limited", "limited": "limited", True: "full", 2: "full", "full": "full"}[debug]


def binary(variant, crate):
    path = util.fixture_binary(variant, crate)
    util.require_file(path, "the fixture", "run 'make fixtures' (tests/fixtures/build.sh)")
    return path


_models = {}


def analyze(variant, crate):
    """(proc, doc) of `analyze --json -` on the fixture, once per session."""
    if (variant, crate) not in _models:
        proc = util.run_asyncbpf("analyze", "--json", "-", binary(variant, crate))
        assert proc.returncode == util.EXIT_OK, util.describe(proc)
        _models[(variant, crate)] = (proc, json.loads(proc.stdout))
    return _models[(variant, crate)]


def source(crate):
    return (util.FIXTURES / crate / "src" / "main.rs").read_text(encoding="utf-8").splitlines()


def async_fn_lines(crate):
    """{async fn name: its line} from the fixture's source."""
    out = {}
    for i, line in enumerate(source(crate), 1):
        m = util.ASYNC_FN_DEF.match(line)
        if m and "MACRO-BODY" not in line:
            out[m.group(1)] = i
    return out


def markers(crate):
    """{line: [callees]} of the source's `// AWAIT caller->callee` markers."""
    out = {}
    for i, line in enumerate(source(crate), 1):
        m = util.MARKER.search(line)
        if m:
            out[i] = m.group(2).split("|")
    return out


def block_fns(crate):
    """Plain fns holding an async block: the markers' `f{block}` callers."""
    return {m.group(1)[:-len("{block}")] for line in source(crate) if (m := util.MARKER.search(line))
            and m.group(1).endswith("{block}")} - set(async_fn_lines(crate))


def out_of_line(path, crate, blocks=False):
    """From nm + c++filt: {f: addresses} of the `crate::f::{{closure}}` symbols of the
    source's async fns (with blocks, of its plain fns holding an async block too),
    and {T: addresses} of `<T as Future>::poll` in crate."""
    syms = util.nm_symbols(str(path))
    names = tuple(syms)
    fns, handwritten = {}, {}
    wanted = set(async_fn_lines(crate)) | (block_fns(crate) if blocks else set())
    for raw, d in zip(names, util.demangled(names)):
        m = re.fullmatch(rf"{crate}::(\w+)::\{{\{{closure\}}\}}", d)
        if m and m.group(1) in wanted:
            fns.setdefault(m.group(1), set()).update(syms[raw])
        if d.startswith(f"<{crate}::") and d.endswith(util.FUTURE_POLL_SUFFIX):
            handwritten.setdefault(d[1:-len(util.FUTURE_POLL_SUFFIX)], set()).update(syms[raw])
    return fns, handwritten


_dwarf_fns = {}


def dwarf_functions(path):
    """Addresses of the DW_TAG_subprograms with code (llvm-dwarfdump): with line tables
    only, LLVM leaves out the functions that inline nothing, which binutils cannot say."""
    if path not in _dwarf_fns:
        out, in_sub = set(), False
        for line in util.tool(util.LLVM_DWARFDUMP, "--debug-info", str(path)).splitlines():
            if re.match(r"^0x[0-9a-f]+:\s+DW_TAG_", line):
                in_sub = "DW_TAG_subprogram" in line
            elif in_sub and (m := re.match(r"^\s+DW_AT_low_pc\s+\((0x[0-9a-f]+)\)", line)):
                if int(m.group(1), 16):
                    out.add(int(m.group(1), 16))
        _dwarf_fns[path] = out
    return _dwarf_fns[path]


def own_futures(doc, crate):
    return [f for f in doc["futures"] if f["crate"] == crate and f["crate_class"] == "user"]


def says_what_to_rebuild_with(text, crate, docs=True):
    assert crate in text, text
    assert "debug = true" in text and "[profile.release]" in text, text
    if docs:
        assert 'docs/analyzer.md, "Debug info levels"' in text, text


# ---------------------------------------------------------------------------
# analyze: the level, per crate, and what is read at it
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("variant,crate", BUILDS, ids=BUILD_IDS)
def test_level_is_the_profiles(variant, crate):
    proc, doc = analyze(variant, crate)
    assert not util.schema_errors(doc), util.schema_errors(doc)[:20]
    want = cargo_level(variant)
    di = doc["debuginfo"]
    crates = {c["crate"]: c for c in di["crates"]}
    assert di["level"] == want and crate in di["own_crates"].split(", "), di
    assert crates[crate]["own"] and crates[crate]["level"] == want, crates[crate]
    # only the program's crates are its own: std's and the runtime's are not
    assert not crates["std"]["own"] and crates["std"]["toolchain"], crates["std"]
    assert all(not c["own"] for c in di["crates"] if c["crate"] in ("tokio", "core", "alloc"))
    # every command says what is missing and what to rebuild with
    says_what_to_rebuild_with(di["note"] + "; " + di["advice"], crate, docs=False)
    says_what_to_rebuild_with(proc.stderr, crate)
    summary = util.run_asyncbpf("analyze", binary(variant, crate))
    assert f"debug info of your crates ({crate}): {want}" in summary.stdout, util.describe(summary)


@pytest.mark.parametrize("crate", CRATES)
def test_nodebug_holds_only_std_dwarf(crate):
    """The confusing case: the file has .debug_info, none of it the program's."""
    path = binary("nodebug", crate)
    assert ".debug_info" in util.section_headers(str(path))
    _, doc = analyze("nodebug", crate)
    assert doc["binary"]["has_dwarf"] and not doc["binary"]["symbols_only"]
    assert doc["binary"]["debug_info_size"] > 0
    mine = {c["crate"]: c for c in doc["debuginfo"]["crates"]}[crate]
    assert mine["compile_units"] == 0 and mine["fns_without_dwarf"] > 0, mine
    assert "only Rust's standard library's" in doc["debuginfo"]["note"], doc["debuginfo"]
    assert "line-tables-only" in doc["debuginfo"]["advice"]
    # what is read: hand-written futures by their poll symbols, no async fn
    fns, handwritten = out_of_line(path, crate)
    assert fns, f"{crate}: nm shows no async fn poll, the fixture changed shape"
    polled = [f for f in own_futures(doc, crate) if f["poll"] is not None]
    assert all(f["kind"] == "handwritten" for f in polled), polled
    assert {util.strip_generics(f["path"]) for f in polled} == {util.strip_generics(t) for t in handwritten}
    # the async fns' polls are there, by their symbols, with no future
    by_addr = {p["addr"]: p for p in doc["polls"]}
    for fn, addrs in fns.items():
        for a in addrs:
            assert a in by_addr and by_addr[a]["future"] is None, (fn, a, by_addr.get(a))
    assert not doc["edges"] and all(not f["states"] for f in doc["futures"])


@pytest.mark.parametrize("crate", CRATES)
@pytest.mark.parametrize("variant", ["linetables", "limited"])
def test_futures_named_after_their_poll_fns(variant, crate):
    """No types: each poll fn's future is named after it, at the source's async fn
    line; out-of-line ones are exactly nm's that DWARF has a function for (line
    tables: the others are read by their symbols, no future); no states, layouts
    or await graph."""
    path = binary(variant, crate)
    _, doc = analyze(variant, crate)
    fns, handwritten = out_of_line(path, crate)
    described = dwarf_functions(path)
    by_addr = {p["addr"]: p for p in doc["polls"]}
    for fn in list(fns):
        for a in fns[fn] - described:
            assert variant == "linetables" and by_addr[a]["future"] is None, (fn, a, by_addr.get(a))
        fns[fn] &= described
        if not fns[fn]:
            del fns[fn]
    decl = async_fn_lines(crate)
    polls = doc["polls"]
    found = {}
    for f in own_futures(doc, crate):
        if f["kind"] != "async_fn":
            continue
        name = util.strip_generics(f["path"]).split("::")[1]
        assert util.strip_generics(f["path"]) == f"{crate}::{name}::{{async_fn_env#0}}", f["path"]
        assert name in decl, f"{f['path']}: no `async fn {name}` in the source"
        assert f["line"] == decl[name], (f["path"], f["line"], decl[name])
        assert f["state"] is None and f["states"] == [] and f["size"] == 0, f
        if f["poll"] is not None:
            found.setdefault(name, set()).add(polls[f["poll"]]["addr"])
        else:
            assert variant == "limited" and f["inlined_only"], f  # named only with limited
    # the out-of-line ones: exactly the async fns nm has a poll symbol for, there
    assert found == {n: a for n, a in fns.items()}, (sorted(found), sorted(fns))
    mine = {util.strip_generics(f["path"]) for f in own_futures(doc, crate) if f["kind"] == "handwritten"
            and f["poll"] is not None}
    assert mine == {util.strip_generics(t) for t in handwritten}, (mine, handwritten)
    assert not doc["edges"] and not doc["vtables"], (doc["edges"][:3], doc["vtables"][:3])
    assert all(p["return"] is None for p in polls), [p["name"] for p in polls if p["return"]]


@pytest.mark.parametrize("crate", CRATES)
@pytest.mark.parametrize("variant", ["linetables", "limited"])
def test_inlined_polls_sit_at_await_lines(variant, crate):
    """An inlined copy of a poll fn is called where its caller awaits it: the call
    line is an `// AWAIT` marker line (naming it, where the model knows its name) or
    a hand-written future's `.poll(cx)` line. With line tables only they have no
    name: counted, kept unnamed."""
    _, doc = analyze(variant, crate)
    src, marks = source(crate), markers(crate)
    syms = tuple(util.nm_symbols(str(binary(variant, crate))))
    callers = set(util.demangled(syms))  # an inline site's caller is a function of nm's
    unnamed = [p for p in doc["polls"] if p["future"] is None and p["name"].startswith("{async_")]
    assert doc["debuginfo"]["unnamed_polls"] == len(unnamed)
    assert bool(unnamed) == (variant == "linetables"), [p["name"] for p in unnamed][:5]
    checked = 0
    for p in doc["polls"]:
        fut = doc["futures"][p["future"]] if p["future"] is not None else None
        if not (p in unnamed or (fut and fut["crate"] == crate and fut["kind"] == "async_fn")):
            continue
        for s in p["inline_sites"]:
            if not s["file"] or not s["file"].endswith(f"{crate}/src/main.rs") or s["line"] == 0:
                continue
            checked += 1
            line = src[s["line"] - 1]
            assert s["line"] in marks or ".poll(cx)" in line, (p["name"], s, line)
            if fut and s["line"] in marks:
                name = util.strip_generics(fut["path"]).split("::")[1]
                assert name in marks[s["line"]], (fut["path"], s, line)
            assert s["caller"] in callers, s
    assert checked, "no inline site in the fixture's source: it changed shape"


# ---------------------------------------------------------------------------
# list
# ---------------------------------------------------------------------------


def whitelist(tmp_path, variant, crate, *args):
    out = tmp_path / f"{variant}-{crate}.json"
    proc = util.run_asyncbpf("list", binary(variant, crate), *args, "-o", out)
    doc = json.loads(out.read_text()) if proc.returncode == 0 else None
    return proc, doc


@pytest.mark.parametrize("variant", ["nodebug", "linetables"])
def test_list_names_what_is_traceable(tmp_path, variant):
    """handwritten: the default selection is every out-of-line poll fn nm shows."""
    crate = "handwritten"
    proc, doc = whitelist(tmp_path, variant, crate)
    assert proc.returncode == util.EXIT_OK, util.describe(proc)
    says_what_to_rebuild_with(proc.stderr, crate)
    path = binary(variant, crate)
    fns, handwritten = out_of_line(path, crate, blocks=True)
    chosen = {util.strip_generics(e["future"]) for e in doc["futures"] if e["trace"] and e["traceable"]}
    want = {util.strip_generics(t) for t in handwritten}
    if variant == "linetables":  # the async fns and blocks DWARF has a function for
        blocks = block_fns(crate)
        want |= {f"{crate}::{n}::{{async_{'block' if n in blocks else 'fn'}_env#0}}"
                 for n, addrs in fns.items() if addrs & dwarf_functions(path)}
    assert chosen == want, (sorted(chosen ^ want))


def test_list_nodebug_without_selectable_future_exits_5():
    """tokio_mt's own code has no hand-written poll symbol left: nothing to select,
    and the missing DWARF is why (issue: it used to exit 6, "try --all-crates")."""
    crate = "tokio_mt"
    _, handwritten = out_of_line(binary("nodebug", crate), crate)
    assert not handwritten, "the fixture changed shape: pick another case"
    proc = util.run_asyncbpf("list", binary("nodebug", crate))
    assert proc.returncode == util.EXIT_BAD_INPUT, util.describe(proc)
    assert "nothing selected" in proc.stderr and "no DWARF for its own crates" in proc.stderr, proc.stderr
    says_what_to_rebuild_with(proc.stderr, crate)
    # --all-crates finds hand-written futures of other crates by their symbols
    proc = util.run_asyncbpf("list", binary("nodebug", crate), "--all-crates")
    assert proc.returncode == util.EXIT_OK, util.describe(proc)
    says_what_to_rebuild_with(proc.stderr, crate)


@pytest.mark.parametrize("crate", CRATES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_list_pattern_on_an_inlined_async_fn(variant, crate):
    """An async fn whose poll exists only inlined (nm has no symbol for it): named
    with limited DWARF (listed, exit 0), unnameable below (exit 5, saying why)."""
    fns, _ = out_of_line(binary(variant, crate), crate)
    inlined = sorted(set(async_fn_lines(crate)) - set(fns) - {"main"})
    assert inlined, "every async fn kept out of line: the fixture changed shape"
    _, doc = analyze("limited", crate)
    named = {util.strip_generics(f["path"]).split("::")[1] for f in own_futures(doc, crate) if f["inlined_only"]}
    name = next(n for n in inlined if n in named)
    proc = util.run_asyncbpf("list", binary(variant, crate), f"{crate}::{name}")
    if variant == "limited":
        assert proc.returncode == util.EXIT_OK, util.describe(proc)
        assert f"{crate}::{name}" in proc.stdout and "inlined only" in proc.stdout, proc.stdout
    else:
        assert proc.returncode == util.EXIT_BAD_INPUT, util.describe(proc)
        assert f"pattern '{crate}::{name}' matches no future" in proc.stderr, proc.stderr
        says_what_to_rebuild_with(proc.stderr, crate)


def test_list_limited_no_match_is_still_6():
    proc = util.run_asyncbpf("list", binary("limited", "handwritten"), "handwritten::no_such_fn")
    assert proc.returncode == util.EXIT_NO_MATCH, util.describe(proc)


# ---------------------------------------------------------------------------
# stacks
# ---------------------------------------------------------------------------


class Parked:
    def __init__(self, variant, crate, n=3):
        self.proc = subprocess.Popen([str(binary(variant, crate)), "park", str(n)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.counts = json.loads(self.proc.stdout.readline())

    def stop(self):
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0


@pytest.fixture
def parked():
    made = []

    def make(variant, crate):
        made.append(Parked(variant, crate))
        return made[-1]

    yield make
    for p in made:
        if p.proc.poll() is None:
            p.proc.kill()
            p.proc.wait()


@pytest.mark.parametrize("variant", VARIANTS)
def test_stacks_without_types(tmp_path, parked, variant):
    """Boxed `dyn Future`s (handwritten) need DWARF types: exit 5, saying what to
    rebuild with. tokio's tasks are found by symbols: by type and state only."""
    hw = parked(variant, "handwritten")
    proc = util.run_asyncbpf("stacks", "-p", hw.proc.pid)
    assert proc.returncode == util.EXIT_BAD_INPUT, util.describe(proc)
    assert "no task of" in proc.stderr and "DWARF types" in proc.stderr, proc.stderr
    says_what_to_rebuild_with(proc.stderr, "handwritten")
    hw.stop()

    tk = parked(variant, "tokio_mt")
    out = tmp_path / "s.json"
    proc = util.run_asyncbpf("stacks", "-p", tk.proc.pid, "--json", out)
    assert proc.returncode == util.EXIT_OK, util.describe(proc)
    assert "not where they wait" in proc.stderr, proc.stderr
    says_what_to_rebuild_with(proc.stderr, "tokio_mt")
    doc = json.loads(out.read_text())
    assert all(t["runtime"] == "tokio" and len(t["frames"]) == 1 and t["frames"][0]["state"] == "type_only"
               for t in doc["tasks"]), doc["tasks"]
    # every parked task, each by its root future's name where that poll fn has a
    # symbol (nm); one inlined into tokio's harness has no type to name
    parked_tasks = [t for t in doc["tasks"] if t["state"] == "parked"]
    assert len(parked_tasks) == tk.counts["tasks"], (parked_tasks, tk.counts)
    fns, _ = out_of_line(binary(variant, "tokio_mt"), "tokio_mt")
    names = [t["frames"][0]["future"] for t in parked_tasks]
    for root, n in tk.counts.items():
        if root not in ("mode", "tasks"):
            name = f"tokio_mt::{root}" + ("::{{closure}}" if variant == "nodebug" else "")
            assert names.count(name) == (n if root in fns else 0), (root, names)
    tk.stop()


# ---------------------------------------------------------------------------
# trace, top, profile (root)
# ---------------------------------------------------------------------------


@needs_root
@pytest.mark.parametrize("variant", ["linetables", "limited"])
def test_trace_counts_polls_results_unknown(uprobes, tmp_path, variant):
    """The root tasks' polls (out of line: the executor calls them through their
    vtable) counted as the executor counts them; every result unknown, no_layout."""
    path = binary(variant, "handwritten")
    plain = util.untraced(path)
    assert plain.returncode == 0, plain.stderr
    proc, paths = util.run_traced(tmp_path, path)
    assert proc.returncode == 0 and proc.stdout == plain.stdout, util.describe(proc)
    says_what_to_rebuild_with(proc.stderr, "handwritten")
    assert "recorded as unknown (reason no_layout)" in proc.stderr, proc.stderr
    truth = util.ground_truth(plain.stdout)
    summary = util.load_summary(paths)
    by_name = {e["name"]: e for e in summary["futures"]}
    for task in truth["executor"]["tasks"]:
        entry = by_name[f"handwritten::{task['name']}"]
        assert entry["polls"] == task["root_polls"], (task, entry)
        assert entry["unknown"] == entry["polls"] and entry["ready"] == entry["pending"] == 0, entry
    totals = summary["totals"]
    assert totals["dropped"] == 0 and totals["unknown_results"] == totals["unknown_reasons"]["no_layout"], totals


@needs_root
def test_trace_and_top_exit_5_without_dwarf(uprobes):
    path = binary("nodebug", "tokio_mt")
    for args in (("trace", "--deep", "--duration", "5"), ("top", "--batch", "-n", "1")):
        proc = util.run_asyncbpf(*args, "--", path)
        assert proc.returncode == util.EXIT_BAD_INPUT, util.describe(proc)
        assert "nothing selected" in proc.stderr, proc.stderr
        says_what_to_rebuild_with(proc.stderr, "tokio_mt")


HOT_CHAIN = ("hot_task", "middle_hot", "hot_leaf")  # tests/test_profile.py, from the source


@needs_root
@pytest.mark.parametrize("variant", VARIANTS)
def test_profile_names_what_the_level_names(tmp_path, variant):
    """`handwritten hot`: hot_leaf spins under middle_hot under hot_task (the source's
    markers). Each level names the chain as far as it can: poll fns nm has a symbol
    for by name (`{{closure}}` symbols without any DWARF), inlined ones by their path
    with limited DWARF, as bare `{async_fn#0}` with line tables, not at all without."""
    report = {f["name"]: f for f in json.loads(util.run_asyncbpf("check", "--json").stdout)["features"]}
    for name in ("perf_event", "ringbuf"):
        if report[name]["status"] != "ok":
            pytest.skip(f"{name} unavailable, asyncbpf profile cannot sample: {report[name]['detail']}")
    src = "\n".join(source("handwritten"))
    for caller, callee in zip(HOT_CHAIN, HOT_CHAIN[1:]):
        assert f"// AWAIT {caller}->{callee}" in src
    path = binary(variant, "handwritten")
    fns, _ = out_of_line(path, "handwritten")
    want = []
    for fn in HOT_CHAIN:
        if fn in fns:
            want.append(f"handwritten::{fn}" + ("::{{closure}}" if variant == "nodebug" else ""))
        elif variant == "limited":
            want.append(f"handwritten::{fn}")
        elif variant == "linetables":
            want.append("{async_fn#0}")
    assert want and want[0].startswith("handwritten::hot_task"), (want, sorted(fns))
    folded = tmp_path / "p.folded"
    proc = util.run_asyncbpf("profile", "-F", "499", "--folded", folded, "-o", tmp_path / "p.svg",
                             "--", path, "hot", "1500", timeout=120)
    assert proc.returncode == 0, util.describe(proc)
    if variant != "limited":
        says_what_to_rebuild_with(proc.stderr, "handwritten")
    total = hot = 0
    for line in folded.read_text().splitlines():
        stack, weight = line.rsplit(" ", 1)
        frames = stack.split(";")
        total += int(weight)
        if frames[:1] == ["[runtime]"] and frames[1:1 + len(want)] == want and \
                (len(frames) == 1 + len(want) or not frames[1 + len(want)].startswith(("handwritten::", "{async_"))):
            hot += int(weight)
    assert total and hot >= 0.8 * total, f"{hot}/{total} samples under [runtime];{';'.join(want)}:\n" + \
        folded.read_text()[:3000]
