# SPDX-License-Identifier: GPL-2.0
"""Helpers for the pytest suites: running asyncbpf under the sanitizers, reading the
fixtures' `// AWAIT` markers, and independent ground truth from binutils and
llvm-dwarfdump. Nothing here trusts asyncbpf's own output; see docs/testing.md.
"""
import bisect
import codecs
import functools
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ASYNCBPF = REPO / ".output" / "san" / "asyncbpf"
UNIT_TEST_DIR = REPO / ".output" / "san" / "tests"
FIXTURES = REPO / "tests" / "fixtures"
FIXTURE_BIN = FIXTURES / "bin"
CRATES = ["demo", "tokio_mt", "tokio_ct", "async_std_app", "smol_app", "handwritten"]
PROFILES = ["debug", "release"]
LLVM_DWARFDUMP = os.environ.get("LLVM_DWARFDUMP", "llvm-dwarfdump-16")

SAN_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}
SANITIZER_REPORTS = ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer")

# Exit statuses, docs/exit-codes.md (user/lib/exitcodes.h).
EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_NO_INPUT, EXIT_NO_PERMISSION = 0, 1, 2, 3, 4
EXIT_BAD_INPUT, EXIT_NO_MATCH, EXIT_KERNEL, EXIT_OUTPUT = 5, 6, 7, 8

FUTURE_POLL_SUFFIX = " as core::future::future::Future>::poll"


# ---------------------------------------------------------------------------
# Running things
# ---------------------------------------------------------------------------


def san_env(extra=None):
    env = dict(os.environ)
    env.update(SAN_ENV)
    # libdwfl would ask debuginfod servers; the tests must not touch the network.
    env.pop("DEBUGINFOD_URLS", None)
    if extra:
        env.update(extra)
    return env


def describe(proc):
    """A failed command's output, for assertion messages."""
    args = " ".join(str(a) for a in proc.args)
    out = proc.stdout if isinstance(proc.stdout, str) else (proc.stdout or b"").decode("utf-8", "replace")
    err = proc.stderr if isinstance(proc.stderr, str) else (proc.stderr or b"").decode("utf-8", "replace")
    return f"$ {args}\nexit status {proc.returncode}\n--- stdout ---\n{out[-4000:]}\n--- stderr ---\n{err[-6000:]}"


def assert_no_sanitizer_report(proc):
    err = proc.stderr if isinstance(proc.stderr, str) else (proc.stderr or b"").decode("utf-8", "replace")
    found = [r for r in SANITIZER_REPORTS if r in err]
    assert not found, f"sanitizer report ({', '.join(found)}):\n{describe(proc)}"
    # A signal (negative status) is a crash even when the sanitizer said nothing.
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}:\n{describe(proc)}"


def run_asyncbpf(*args, timeout=120, cwd=None, env=None, check_sanitizers=True):
    """Run the sanitizer build of asyncbpf; fail the test on any sanitizer report."""
    proc = subprocess.run(
        [str(ASYNCBPF), *[str(a) for a in args]],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        cwd=cwd,
        env=san_env(env),
    )
    if check_sanitizers:
        assert_no_sanitizer_report(proc)
    return proc


def tool(*args, input=None, timeout=120, check=True):
    """Run a ground-truth tool (binutils, llvm-dwarfdump, ...) and return its stdout."""
    proc = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, errors="replace", input=input, timeout=timeout
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"ground-truth tool failed:\n{describe(proc)}")
    return proc.stdout


def have_tool(name):
    return shutil.which(name) is not None


def need_tool(name):
    """Fail (saying why) when a ground-truth tool is not installed: `make deps`
    installs every one of them, so a missing tool is a broken setup, not a reason
    to skip (docs/testing.md)."""
    import pytest

    if not have_tool(name):
        pytest.fail(f"{name} is not installed: run 'make deps' as root")


def require_file(path, what, how):
    """A missing build product is a failure, not a skip: `make test` builds it."""
    import pytest

    if not os.path.exists(path):
        pytest.fail(f"{what} {path} is missing: {how}", pytrace=False)


def threads_state(pid):
    """Each thread's state letter (/proc/PID/task/TID/stat): 't' or 'T' is stopped."""
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            out.append(f.read().rsplit(")", 1)[1].split()[0])
    return out


def fixture_binary(profile, crate):
    return FIXTURE_BIN / profile / crate


def conformance_binary(profile, name):
    """A third-party conformance program (tests/conformance/build.sh)."""
    return REPO / "tests" / "conformance" / "bin" / profile / name


# ---------------------------------------------------------------------------
# Rust paths
# ---------------------------------------------------------------------------


def strip_generics(s):
    """Drop every <...> (nested), keeping the rest: 'a::B<C<D>>::f' -> 'a::B::f'.
    '->' inside generic arguments (fn types) is not a closing bracket."""
    out, depth = [], 0
    for i, ch in enumerate(s):
        if ch == "<":
            depth += 1
        elif ch == ">" and not (i > 0 and s[i - 1] == "-"):
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def generic_args(s):
    """The top-level generic arguments of the first <...> of s:
    'a::J<b::X<u8>, c::Y>' -> ['b::X<u8>', 'c::Y']."""
    start = s.find("<")
    if start < 0:
        return []
    args, depth, cur = [], 0, []
    for i in range(start + 1, len(s)):
        ch = s[i]
        if ch in "<([":
            depth += 1
        elif ch in ")]" or (ch == ">" and s[i - 1] != "-"):
            if depth == 0:
                break
            depth -= 1
        elif ch == "," and depth == 0:
            args.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    args.append("".join(cur).strip())
    return args


def split_path(s):
    """Top-level '::' segments, brackets (<>, (), []) respected."""
    parts, depth, cur, i = [], 0, [], 0
    while i < len(s):
        ch = s[i]
        if ch in "<([":
            depth += 1
        elif ch in ">)]" and not (ch == ">" and i > 0 and s[i - 1] == "-"):
            depth = max(0, depth - 1)
        if depth == 0 and s.startswith("::", i):
            parts.append("".join(cur))
            cur = []
            i += 2
            continue
        cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


def last_segment(name):
    """'tokio::time::sleep::Sleep' -> 'Sleep'; 'a::f<u8>' -> 'f' (generics dropped)."""
    return split_path(strip_generics(name))[-1]


ENV_SEGMENT = re.compile(r"^\{async_(fn|block|closure)_env#(\d+)\}$")
CLOSURE_LIKE = re.compile(r"^(\{\{closure\}\}|\{async_(fn|block|closure)(_env)?#\d+\}|\{closure(_env)?#\d+\})$")


def expected_display_name(path, kind):
    """docs/json-schema.md `futures[].name`: an async fn's path without its env segment
    (generics kept), a block's/closure's env segment shown as {async_block#N} /
    {async_closure#N}, a hand-written future's type path as is."""
    if kind == "handwritten":
        return path
    # The env segment is the last top-level segment; its generic arguments follow it.
    cut = len(path)
    for i, ch in enumerate(path):
        if ch == "<" and i > 0 and path[i - 1] == "}":
            cut = i
            break
    head, generics = path[:cut], path[cut:]
    segs = split_path(head)
    m = ENV_SEGMENT.match(segs[-1])
    assert m, f"{path!r}: last segment {segs[-1]!r} is not an env"
    if m.group(1) == "fn":
        return "::".join(segs[:-1]) + generics
    return "::".join(segs[:-1] + [f"{{async_{m.group(1)}#{m.group(2)}}}"]) + generics


def caller_name(fut, crate):
    """The marker caller name a compiler future of the crate answers to: 'leaf',
    'block_task{block}', 'closure_task{closure}'; None for other futures."""
    path = fut.get("path") or ""
    if fut["kind"] == "handwritten" or not strip_generics(path).startswith(crate + "::"):
        return None
    segs = split_path(strip_generics(path))
    names = [s for s in segs[1:] if not s.startswith("{")]
    if not names:
        return None
    suffix = {"async_fn": "", "async_block": "{block}", "async_closure": "{closure}"}[fut["kind"]]
    return names[-1] + suffix


def future_answers_to(fut, callee, crate):
    """Does this future answer to a marker callee name (an async fn's name, a type's
    last path component, 'fn{block}', 'fn{closure}')?"""
    if callee.endswith("{block}") or callee.endswith("{closure}"):
        return caller_name(fut, crate) == callee
    return last_segment(fut["name"]) == callee


# ---------------------------------------------------------------------------
# Fixture sources: // AWAIT markers (tests/fixtures/README.md)
# ---------------------------------------------------------------------------

MARKER = re.compile(r"//\s*AWAIT\s+(\S+)->(\S+)\s*$")
ASYNC_FN_DEF = re.compile(r"^\s*(?:pub\s+)?async fn (\w+)")
MACRO_BODY = re.compile(r"//\s*MACRO-BODY\s+(\S+)")
STRUCT_DEF = re.compile(r"^\s*(?:pub\s+)?struct (\w+)")
# Where a future becomes a task: spawn(f(..)), spawn("name", f(..)), block_on(f(..)).
TASK_ENTRY = re.compile(r"\b(?:spawn|block_on)\(\s*(?:\"[^\"]*\"\s*,\s*)?(\w+)\(")


@dataclass(frozen=True)
class Marker:
    file: str  # source file name, relative to the crate's src/
    line: int
    caller: str
    callees: tuple
    inner: tuple = ()  # the crate's async fns called on the line inside a wrapper: timeout(.., f())

    @property
    def is_macro(self):
        return len(self.callees) > 1

    def __str__(self):
        return f"{self.file}:{self.line} {self.caller}->{'|'.join(self.callees)}"

    @property
    def awaited(self):
        """Everything this await waits for: the callees and, inside a wrapper, inner fns."""
        return self.callees + self.inner


@dataclass
class FixtureSource:
    crate: str
    files: list
    markers: list = dc_field(default_factory=list)  # in source order
    async_fns: dict = dc_field(default_factory=dict)  # name -> (file, line)
    macro_bodies: dict = dc_field(default_factory=dict)  # caller -> (file, line)
    task_entries: set = dc_field(default_factory=set)  # caller names spawned / block_on'd
    types: set = dc_field(default_factory=set)  # struct names defined in the crate

    def markers_of(self, caller):
        return [m for m in self.markers if m.caller == caller]

    @property
    def callers(self):
        return sorted({m.caller for m in self.markers})

    def graph(self, inner=True):
        """caller -> set of what it awaits, as the markers say; with inner, also the
        crate's async fns a wrapper awaits for it (`timeout(d, f())`, `Join2::new(a(), b())`)."""
        g = {}
        for m in self.markers:
            g.setdefault(m.caller, set()).update(m.callees + (m.inner if inner else ()))
        return g

    def names(self):
        """Every name of a future of the crate itself: async fns, blocks, closures, types."""
        return (set(self.callers) | set(self.async_fns) | self.types
                | {c for m in self.markers for c in m.callees if c.endswith(("{block}", "{closure}"))})


@functools.lru_cache(maxsize=None)
def fixture_source(crate):
    src = FIXTURES / crate / "src"
    files = sorted(p.name for p in src.glob("*.rs"))
    fs = FixtureSource(crate=crate, files=files)
    lines = {name: (src / name).read_text().splitlines() for name in files}
    for name in files:
        for line in lines[name]:
            d = ASYNC_FN_DEF.match(line)
            if d and not MACRO_BODY.search(line):
                fs.async_fns[d.group(1)] = None
            t = STRUCT_DEF.match(line)
            if t:
                fs.types.add(t.group(1))
    for name in files:
        for i, line in enumerate(lines[name], 1):
            m = MARKER.search(line)
            if m:
                callees = tuple(m.group(2).split("|"))
                code = line.split("//")[0]
                inner = tuple(sorted(f for f in fs.async_fns if f not in callees and f != m.group(1)
                                     and re.search(r"\b" + f + r"\(", code)))
                fs.markers.append(Marker(name, i, m.group(1), callees, inner))
            mb = MACRO_BODY.search(line)
            if mb:
                fs.macro_bodies[mb.group(1)] = (name, i)
                fs.task_entries.add(mb.group(1))  # #[tokio::main]: block_on(body)
                continue
            d = ASYNC_FN_DEF.match(line)
            if d:
                fs.async_fns[d.group(1)] = (name, i)
            code = line.split("//")[0]
            for t in TASK_ENTRY.finditer(code):
                fs.task_entries.add(t.group(1))
    return fs


def is_fixture_source_file(path, crate):
    """Does a DWARF file name (absolute, or relative to the compile dir) name one of
    the crate's own sources? Returns the file name under src/, or None."""
    if not path:
        return None
    p = os.path.normpath(path)
    for name in fixture_source(crate).files:
        rel = f"{crate}/src/{name}"
        if p == rel or p.endswith("/" + rel) or p == str(FIXTURES / crate / "src" / name):
            return name
    return None


# ---------------------------------------------------------------------------
# Model helpers
# ---------------------------------------------------------------------------


class Model:
    """An `analyze --json` document with indexes."""

    def __init__(self, doc, crate=None, binary=None):
        self.doc = doc
        self.crate = crate
        self.binary = binary
        self.futures = doc["futures"]
        self.polls = doc["polls"]
        self.edges = doc["edges"]

    def edges_from(self, fid, await_index=None):
        return [e for e in self.edges if e["from"] == fid and (await_index is None or e["await_index"] == await_index)]

    def edges_to(self, fid):
        return [e for e in self.edges if e["to"] == fid]

    def crate_futures(self):
        return [f for f in self.futures if f["path"] and strip_generics(f["path"]).startswith(self.crate + "::")]

    def by_caller(self):
        out = {}
        for f in self.futures:
            c = caller_name(f, self.crate)
            if c:
                out.setdefault(c, []).append(f)
        return out

    def suspend_states(self, fut):
        return sorted((s for s in fut["states"] if s["kind"] == "suspend"), key=lambda s: s["index"])

    def out_of_line_polls(self):
        return [p for p in self.polls if not p["inlined_only"]]


# ---------------------------------------------------------------------------
# Ground truth from binutils
# ---------------------------------------------------------------------------

RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")


@functools.lru_cache(maxsize=None)
def nm_symbols(binary):
    """{linkage name: set of addresses} of defined symbols, from `nm --defined-only`."""
    syms = {}
    for line in tool("nm", "--defined-only", binary).splitlines():
        parts = line.split()
        if len(parts) == 3:
            syms.setdefault(parts[2], set()).add(int(parts[0], 16))
    return syms


@functools.lru_cache(maxsize=None)
def demangled(names):
    """c++filt over a tuple of symbols, Rust legacy hashes dropped."""
    out = tool("c++filt", input="\n".join(names) + "\n").splitlines()
    assert len(out) == len(names)
    return tuple(RUST_HASH.sub("", d) for d in out)


@functools.lru_cache(maxsize=None)
def func_symbols(binary):
    """Defined FUNC symbols with a size, from `readelf -sW`: sorted [(addr, size, name)]."""
    funcs = set()
    for line in tool("readelf", "-sW", binary).splitlines():
        parts = line.split()
        # Num: Value Size Type Bind Vis Ndx Name
        if len(parts) >= 8 and parts[3] == "FUNC" and parts[6] != "UND":
            size = int(parts[2], 0)
            if size:
                funcs.add((int(parts[1], 16), size, parts[7]))
    return sorted(funcs)


@functools.lru_cache(maxsize=None)
def _func_starts(binary):
    return [f[0] for f in func_symbols(binary)]


def containing_function(binary, addr):
    """The defined FUNC symbol whose [value, value + size) holds addr, or None."""
    funcs, starts = func_symbols(binary), _func_starts(binary)
    i = bisect.bisect_right(starts, addr) - 1
    for j in range(i, max(-1, i - 64), -1):
        start, size, _ = funcs[j]
        if start <= addr < start + size:
            return funcs[j]
    return None


@dataclass(frozen=True)
class LoadSegment:
    offset: int
    vaddr: int
    filesz: int
    memsz: int
    flags: str


@functools.lru_cache(maxsize=None)
def load_segments(binary):
    """PT_LOAD program headers, from `readelf -lW`."""
    segs = []
    for line in tool("readelf", "-lW", binary).splitlines():
        parts = line.split()
        if parts and parts[0] == "LOAD":
            # LOAD Offset VirtAddr PhysAddr FileSiz MemSiz Flg... Align
            flags = "".join(parts[6:-1])
            segs.append(LoadSegment(int(parts[1], 16), int(parts[2], 16), int(parts[4], 16), int(parts[5], 16), flags))
    return segs


def file_offset_of(binary, addr):
    """offset = addr - p_vaddr + p_offset of the executable PT_LOAD containing addr."""
    for s in load_segments(binary):
        if "E" in s.flags and s.vaddr <= addr < s.vaddr + s.filesz:
            return addr - s.vaddr + s.offset
    return None


@functools.lru_cache(maxsize=None)
def section_headers(binary):
    """{name: (file offset, size)} from `readelf -SW`."""
    secs = {}
    for line in tool("readelf", "-SW", binary).splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m:
            secs[m.group(1)] = (int(m.group(2), 16), int(m.group(3), 16))
    return secs


@dataclass(frozen=True)
class Insn:
    addr: int
    raw: bytes
    mnemonic: str  # with prefixes dropped ('ret', 'jmp', 'push', ...)
    text: str  # objdump's AT&T text


INSN_LINE = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f ]+?)\s*(?:\t(.*))?$")
PREFIXES = {"rep", "repz", "repe", "repnz", "repne", "bnd", "notrack", "lock", "data16", "cs", "ds", "ss", "es", "fs", "gs"}


def disassemble(binary, start, stop):
    """objdump -d over [start, stop): the instructions, continuation lines merged."""
    out = tool("objdump", "-d", "-w", f"--start-address={start:#x}", f"--stop-address={stop:#x}", binary)
    insns = []
    for line in out.splitlines():
        m = INSN_LINE.match(line)
        if not m:
            continue
        addr, raw, text = int(m.group(1), 16), bytes.fromhex(m.group(2).replace(" ", "")), (m.group(3) or "").strip()
        if not text and insns:  # a long instruction's bytes continued on the next line
            prev = insns[-1]
            insns[-1] = Insn(prev.addr, prev.raw + raw, prev.mnemonic, prev.text)
            continue
        words = text.split()
        while words and words[0] in PREFIXES:
            words = words[1:]
        mnemonic = words[0] if words else ""
        insns.append(Insn(addr, raw, mnemonic, text))
    return insns


# ---------------------------------------------------------------------------
# Ground truth from llvm-dwarfdump (only where binutils cannot say)
# ---------------------------------------------------------------------------

DIE_LINE = re.compile(r"^(0x[0-9a-f]+):(\s+)(DW_TAG_\w+|NULL)")
NAME_LINE = re.compile(r'^\s+DW_AT_name\s+\("(.*)"\)$')


@functools.lru_cache(maxsize=None)
def dwarf_async_fn_envs(binary):
    """Namespace paths of every `{async_fn_env#N}` struct in the DWARF, generics
    dropped: {'handwritten::leaf', 'tokio::...::recv', ...}."""
    text = tool(LLVM_DWARFDUMP, "--regex", r"--name=^\{async_fn_env#[0-9]+\}", "--show-parents", binary,
                timeout=300)
    found, stack, cur = set(), [], None
    for line in text.splitlines():
        m = DIE_LINE.match(line)
        if m:
            depth = len(m.group(2))
            while stack and stack[-1][0] >= depth:
                stack.pop()
            cur = [depth, m.group(3), None]
            stack.append(cur)
            continue
        n = NAME_LINE.match(line)
        if n and cur is not None and cur[2] is None:
            cur[2] = n.group(1)
            if cur[1] == "DW_TAG_structure_type" and cur[2].startswith("{async_fn_env#"):
                names = [s[2] for s in stack[:-1] if s[1] in ("DW_TAG_namespace", "DW_TAG_structure_type") and s[2]]
                found.add(strip_generics("::".join(names)))
    return found


DIE_ATTR = re.compile(r"^\s+(DW_AT_\w+)\s+\((.*)\)$")


@dataclass
class Die:
    """One DIE as llvm-dwarfdump prints it, with its children (dwarf_die)."""
    offset: int
    tag: str
    attrs: dict = dc_field(default_factory=dict)
    children: list = dc_field(default_factory=list)

    @property
    def name(self):
        v = self.attrs.get("DW_AT_name")
        return v[1:-1] if v and v.startswith('"') else None

    def ref(self, attr="DW_AT_type"):
        """The DIE offset an attribute refers to (DW_AT_type, DW_AT_discr), or None."""
        v = self.attrs.get(attr)
        return int(v.split()[0], 16) if v else None

    def number(self, attr):
        v = self.attrs.get(attr)
        return int(v.split()[0], 0) if v else None


@functools.lru_cache(maxsize=None)
def dwarf_die(binary, offset, levels=3):
    """The DIE at `offset` and its descendants `levels` deep, parsed from
    llvm-dwarfdump's own output (nesting from its indentation)."""
    text = tool(LLVM_DWARFDUMP, f"--debug-info={offset}", "-c", "-r", str(levels), binary, timeout=60)
    root, stack = None, []
    for line in text.splitlines():
        m = DIE_LINE.match(line)
        if m:
            depth = len(m.group(2))
            while stack and stack[-1][0] >= depth:
                stack.pop()
            if m.group(3) == "NULL":
                continue
            die = Die(int(m.group(1), 16), m.group(3))
            if stack:
                stack[-1][1].children.append(die)
            elif root is None:
                root = die
            stack.append((depth, die))
            continue
        a = DIE_ATTR.match(line)
        if a and stack:
            stack[-1][1].attrs[a.group(1)] = a.group(2)
    assert root is not None and root.offset == offset, f"{LLVM_DWARFDUMP} shows no DIE at {offset:#x} in {binary}"
    return root


def dwarf_byte_size(binary, type_offset):
    t = dwarf_die(binary, type_offset)
    while t.tag in ("DW_TAG_typedef", "DW_TAG_const_type", "DW_TAG_volatile_type"):
        t = dwarf_die(binary, t.ref())
    return t.number("DW_AT_byte_size")


def dwarf_variant_condition(binary, part, variant):
    """(kind, offset, size, lo, hi) under which a variant of a variant part is live;
    None when it always is. The untagged variant of a niche enum: outside the
    range of the others' values (which must then have no hole)."""
    if part.ref("DW_AT_discr") is None:  # a variant part of one variant (ProtoServer's H1)
        assert "DW_AT_discr_value" not in variant.attrs, variant
        return None
    discr = next(c for c in part.children if c.offset == part.ref("DW_AT_discr"))
    off = discr.number("DW_AT_data_member_location") or 0
    size = dwarf_byte_size(binary, discr.ref())
    values = [v.number("DW_AT_discr_value") for v in part.children
              if v.tag == "DW_TAG_variant" and "DW_AT_discr_value" in v.attrs]
    if "DW_AT_discr_value" in variant.attrs:
        v = variant.number("DW_AT_discr_value")
        return ("in", off, size, v, v)
    if not values:
        return None
    assert max(values) - min(values) + 1 == len(set(values)), ("values with a hole", values)
    return ("not_in", off, size, min(values), max(values))


def dwarf_member(binary, struct, name):
    """The member `name` of a struct, directly or in one of its enum variants (a
    compiler future's Suspend variant is named by its type: `Suspend0`), with the
    variant's condition."""
    for c in struct.children:
        if c.tag == "DW_TAG_member" and c.name == name:
            return c, None
    for part in (c for c in struct.children if c.tag == "DW_TAG_variant_part"):
        for v in (v for v in part.children if v.tag == "DW_TAG_variant"):
            for m in (m for m in v.children if m.tag == "DW_TAG_member"):
                if m.name == name or dwarf_die(binary, m.ref()).name == name:
                    return m, dwarf_variant_condition(binary, part, v)
    raise AssertionError(f"no member {name!r} in {struct.name!r} at {struct.offset:#x}")


# ---------------------------------------------------------------------------
# The documented JSON shape (docs/json-schema.md)
# ---------------------------------------------------------------------------

INT = "int"
STR = "str"
BOOL = "bool"
NULL = "null"
OBJ = "obj"
LIST = "list"

SCHEMA_TOP = {"schema": (STR,), "binary": (OBJ,), "debuginfo": (OBJ,), "stats": (OBJ,), "warnings": (LIST,),
              "futures": (LIST,),
              "polls": (LIST,), "edges": (LIST,), "vtables": (LIST,), "runtimes": (OBJ,),
              "task_types": (LIST,), "wake_fns": (LIST,), "task_polls": (OBJ,), "task_poll_exits": (LIST,),
              "roots": (LIST,)}
SCHEMA_RUNTIME_LAYOUT = {"header_state": (INT,), "header_vtable": (INT,), "vtable_fn": (INT,)}
SCHEMA_TASK_TYPE = {"runtime": (STR,), "future": (INT, NULL), "fn": (STR,), "fn_addr": (INT,),
                    "vtable": (INT, NULL), "future_offset": (INT, NULL), "boxed": (BOOL,)}
SCHEMA_BINARY = {"path": (STR, NULL), "elf_path": (STR, NULL), "debuginfo_path": (STR, NULL),
                 "build_id": (STR, NULL), "pie": (BOOL,), "has_dwarf": (BOOL,), "symbols_only": (BOOL,),
                 "debug_info_size": (INT,)}
SCHEMA_DEBUGINFO = {"level": (STR,), "own_crates": (STR,), "unnamed_polls": (INT,), "note": (STR, NULL),
                    "advice": (STR, NULL), "crates": (LIST,)}
SCHEMA_CRATE_DEBUGINFO = {"crate": (STR,), "class": (STR,), "own": (BOOL,), "level": (STR,),
                          "compile_units": (INT,), "fns_without_dwarf": (INT,), "toolchain": (BOOL,)}
DEBUGINFO_LEVELS = ["none", "line-tables-only", "limited", "full"]  # lowest first
SCHEMA_STATS = {k: (INT,) for k in ("compile_units", "dies", "cu_errors", "limits_hit", "futures", "polls",
                                    "edges", "vtables", "task_types", "roots", "inlined_only", "abi_from_code",
                                    "abi_from_dwarf", "abi_from_size", "abi_unknown", "abi_rule_overridden")}
SCHEMA_STATS["rets_kept"] = (OBJ,)
SCHEMA_STATS["caller_exits"] = (OBJ,)
SCHEMA_STATS_CALLER_EXITS = {"index_built": (BOOL,), **{k: (INT,) for k in (
    "functions", "code_bytes", "instructions", "calls", "undecoded_runs", "undecoded_bytes", "polls",
    "polls_callers_known", "polls_ok", "sites", "sites_usable")}}
SCHEMA_CALLER_EXIT = {"call_addr": (INT,), "call": (STR,), "caller": (STR, NULL), "usable": (BOOL,),
                      "why": (STR, NULL), "addr": (INT, NULL), "file_offset": (INT, NULL), "insn": (STR, NULL),
                      "distance": (INT, NULL), "sp_delta": (INT, NULL), "rax": (OBJ, NULL), "rdx": (OBJ, NULL)}
SCHEMA_TASK_POLLS = {"dispatchers": (INT,), "calls": (INT,), "usable": (INT,), "complete": (BOOL,),
                     "why": (STR, NULL)}
CALL_KINDS = {"direct", "slot", "vtable"}
CALLER_RESULTS = {"not_needed", "readable", "lost", "unknown"}
SCHEMA_STATS["trees"] = (OBJ,)
SCHEMA_FUTURE = {"id": (INT,), "path": (STR, NULL), "name": (STR,), "crate": (STR, NULL), "crate_class": (STR,),
                 "kind": (STR,), "die_offset": (INT,), "size": (INT,), "state": (OBJ, NULL), "states": (LIST,),
                 "file": (STR, NULL), "line": (INT,), "drop_in_place": (OBJ, NULL), "poll": (INT, NULL),
                 "polls": (LIST,), "inlined_only": (BOOL,), "root": (BOOL,), "folded_into": (INT, NULL),
                 "tree": (OBJ, NULL)}
SCHEMA_TREE = {"discr": (OBJ, NULL), "slots": (LIST,), "cut": (INT,)}
SCHEMA_TREE_SLOT = {"child": (INT, NULL), "dyn": (OBJ, NULL), "await_index": (INT, NULL), "member": (STR,),
                    "conds": (LIST,), "steps": (LIST,)}
SCHEMA_TREE_COND = {"at_step": (INT,), "offset": (INT,), "size": (INT,), "kind": (STR,), "lo": (INT,),
                    "hi": (INT,)}
SCHEMA_STATE = {"discr": (INT,), "kind": (STR,), "name": (STR, NULL), "file": (STR, NULL), "line": (INT,),
                "awaitee": (STR, NULL), "awaitee_offset": (INT, NULL), "awaitee_size": (INT, NULL)}
SCHEMA_POLL = {"id": (INT,), "name": (STR, NULL), "linkage_name": (STR, NULL), "crate": (STR, NULL),
               "crate_class": (STR,), "addr": (INT,), "size": (INT,), "file_offset": (INT,), "file": (STR, NULL),
               "line": (INT,), "future": (INT, NULL), "inlined_only": (BOOL,), "inline_sites": (LIST,),
               "inline_sites_total": (INT,), "exits": (LIST,), "entry": (OBJ, NULL),
               "self_arg_reg": (STR, NULL), "return": (OBJ, NULL), "abi": (OBJ,), "folded": (INT,),
               "disasm_error": (STR, NULL), "callers_known": (BOOL,), "caller_exits_ok": (BOOL,),
               "caller_exits_why": (STR, NULL), "caller_exits": (LIST,)}
SCHEMA_INLINE_SITE = {"addr": (INT,), "caller": (STR, NULL), "file": (STR, NULL), "line": (INT,)}
SCHEMA_EXIT = {"addr": (INT,), "file_offset": (INT,), "kind": (STR,)}
SCHEMA_ENTRY = {"addr": (INT,), "file_offset": (INT,), "emulated": (BOOL,), "insn": (STR,), "sp_delta": (INT,),
                "self": (OBJ,)}
SCHEMA_SELF = {"kind": (STR,), "reg": (STR, NULL), "sp_offset": (INT, NULL)}
SCHEMA_RETURN = {"size": (INT,), "discr_offset": (INT,), "discr_size": (INT,), "pending_value": (INT, NULL),
                 "ready_value": (INT, NULL), "in_memory": (BOOL, NULL)}
SCHEMA_ABI = {"source": (STR,), "convention": (STR,), "code_convention": (STR,), "code_self": (STR, NULL),
              "dwarf_self": (STR, NULL), "size_rule": (STR,), "size_rule_overridden": (BOOL,), "rets": (INT,),
              "rets_hidden_pointer": (INT,), "rets_constant": (INT,), "rets_result_unset": (INT,),
              "state_via_rdi": (INT,),
              "state_via_rsi": (INT,), "self_slot_via_rdi": (INT,), "self_slot_via_rsi": (INT,),
              "discr_match": (INT,), "discr_mismatch": (INT,)}
SCHEMA_VTABLE = {"type": (STR,), "future": (INT, NULL), "addr": (INT,), "drop": (INT,), "size": (INT,),
                 "align": (INT,), "poll": (INT,), "poll_fn": (INT, NULL)}
ABI_SOURCES = {"none", "code", "dwarf", "size", "unknown"}
CONVENTIONS = {"unknown", "registers", "memory"}
SCHEMA_EDGE = {"from": (INT, NULL), "to": (INT, NULL), "await_index": (INT,), "file": (STR, NULL), "line": (INT,),
               "awaitee_type": (STR, NULL), "via": (STR, NULL), "steps": (LIST, NULL), "dyn": (BOOL,)}

CRATE_CLASSES = {"user", "std", "runtime", "dependency"}
FUTURE_KINDS = {"async_fn", "async_block", "async_closure", "handwritten"}
STATE_KINDS = {"unresumed", "returned", "panicked", "suspend", "other"}
EXIT_KINDS = {"ret", "tail_jmp", "tail_jmp_indirect"}
SELF_KINDS = {"register", "stack", "unknown"}


def _type_ok(v, t):
    if t == INT:
        return isinstance(v, int) and not isinstance(v, bool)
    if t == STR:
        return isinstance(v, str)
    if t == BOOL:
        return isinstance(v, bool)
    if t == NULL:
        return v is None
    if t == OBJ:
        return isinstance(v, dict)
    if t == LIST:
        return isinstance(v, list)
    raise ValueError(t)


def check_shape(obj, shape, where, errors):
    if not isinstance(obj, dict):
        errors.append(f"{where}: not an object")
        return
    for key, types in shape.items():
        if key not in obj:
            errors.append(f"{where}: missing member {key!r}")
        elif not any(_type_ok(obj[key], t) for t in types):
            errors.append(f"{where}.{key}: {obj[key]!r} is not {' or '.join(types)}")


def _caller_exit_errors(x, where, errors):
    check_shape(x, SCHEMA_CALLER_EXIT, where, errors)
    if x.get("call") not in CALL_KINDS:
        errors.append(f"{where}.call {x.get('call')!r}")
    site = ("addr", "file_offset", "insn", "distance", "sp_delta")
    if x.get("usable") is True and (x.get("why") is not None or any(x.get(k) is None for k in site)):
        errors.append(f"{where}: a usable site has a why or lacks {site}")
    if x.get("usable") is False and (x.get("why") is None or any(x.get(k) is not None for k in site)):
        errors.append(f"{where}: an unusable site has no why, or site members")
    for k in ("rax", "rdx"):
        if isinstance(x.get(k), dict):
            check_shape(x[k], {"reg": (STR,), "bytes": (INT,)}, f"{where}.{k}", errors)


def schema_errors(doc):
    """Every way the document departs from docs/json-schema.md's shape."""
    errors = []
    check_shape(doc, SCHEMA_TOP, "$", errors)
    if errors:
        return errors
    if doc["schema"] != "asyncbpf-model/1":
        errors.append(f"$.schema is {doc['schema']!r}")
    if next(iter(doc)) != "schema":
        errors.append("$: 'schema' is not the first member")
    check_shape(doc["binary"], SCHEMA_BINARY, "$.binary", errors)
    check_shape(doc["stats"], SCHEMA_STATS, "$.stats", errors)
    check_shape(doc["debuginfo"], SCHEMA_DEBUGINFO, "$.debuginfo", errors)
    if errors:
        return errors
    di = doc["debuginfo"]
    if di["level"] not in DEBUGINFO_LEVELS:
        errors.append(f"$.debuginfo.level {di['level']!r}")
    if (di["level"] == "full") != (di["note"] is None) or (di["note"] is None) != (di["advice"] is None):
        errors.append("$.debuginfo: note and advice are null exactly at level full")
    for k, c in enumerate(di["crates"]):
        check_shape(c, SCHEMA_CRATE_DEBUGINFO, f"$.debuginfo.crates[{k}]", errors)
        if c.get("level") not in DEBUGINFO_LEVELS or c.get("class") not in CRATE_CLASSES:
            errors.append(f"$.debuginfo.crates[{k}]: level or class {c!r}")
        elif c["own"] and c["class"] != "user":
            errors.append(f"$.debuginfo.crates[{k}]: own but of class {c['class']}")
    own = [c for c in di["crates"] if isinstance(c, dict) and c.get("own")]
    if own and di["level"] != min((c["level"] for c in own), key=DEBUGINFO_LEVELS.index):
        errors.append(f"$.debuginfo.level {di['level']} is not the lowest of the own crates'")
    if len(doc["warnings"]) > 1000 or not all(isinstance(w, str) for w in doc["warnings"]):
        errors.append("$.warnings: not an array of at most 1000 strings")
    nf, np_ = len(doc["futures"]), len(doc["polls"])

    def ref(v, n, where):
        if v is not None and not (isinstance(v, int) and 0 <= v < n):
            errors.append(f"{where}: {v!r} is not an id below {n}")

    for i, f in enumerate(doc["futures"]):
        w = f"$.futures[{i}]"
        check_shape(f, SCHEMA_FUTURE, w, errors)
        if errors:
            continue
        if f["id"] != i:
            errors.append(f"{w}.id is {f['id']}")
        if f["crate_class"] not in CRATE_CLASSES:
            errors.append(f"{w}.crate_class {f['crate_class']!r}")
        if f["kind"] not in FUTURE_KINDS:
            errors.append(f"{w}.kind {f['kind']!r}")
        if f["state"] is not None:
            check_shape(f["state"], {"offset": (INT,), "size": (INT,)}, w + ".state", errors)
        for k, s in enumerate(f["states"]):
            check_shape(s, SCHEMA_STATE, f"{w}.states[{k}]", errors)
            if s.get("kind") not in STATE_KINDS:
                errors.append(f"{w}.states[{k}].kind {s.get('kind')!r}")
            if (s.get("kind") == "suspend") != ("index" in s):
                errors.append(f"{w}.states[{k}]: 'index' present iff kind is suspend")
        if f["drop_in_place"] is not None:
            check_shape(f["drop_in_place"], {"symbol": (STR,), "addr": (INT,)}, w + ".drop_in_place", errors)
        ref(f["poll"], np_, w + ".poll")
        for p in f["polls"]:
            ref(p, np_, w + ".polls[]")
        if f["polls"] != sorted(f["polls"]):
            errors.append(f"{w}.polls not ascending")
        if f["tree"] is not None:
            check_shape(f["tree"], SCHEMA_TREE, w + ".tree", errors)
            for k, slot in enumerate(f["tree"].get("slots", [])):
                check_shape(slot, SCHEMA_TREE_SLOT, f"{w}.tree.slots[{k}]", errors)
                ref(slot.get("child"), nf, f"{w}.tree.slots[{k}].child")
                for c in slot.get("conds", []):
                    check_shape(c, SCHEMA_TREE_COND, f"{w}.tree.slots[{k}].conds[]", errors)
                    if c.get("kind") not in ("in", "not_in"):
                        errors.append(f"{w}.tree.slots[{k}].conds[].kind {c.get('kind')!r}")
    for i, p in enumerate(doc["polls"]):
        w = f"$.polls[{i}]"
        check_shape(p, SCHEMA_POLL, w, errors)
        if errors:
            continue
        if p["id"] != i:
            errors.append(f"{w}.id is {p['id']}")
        ref(p["future"], nf, w + ".future")
        for k, s in enumerate(p["inline_sites"]):
            check_shape(s, SCHEMA_INLINE_SITE, f"{w}.inline_sites[{k}]", errors)
        if p["inline_sites_total"] < len(p["inline_sites"]):
            errors.append(f"{w}.inline_sites_total < len(inline_sites)")
        for k, x in enumerate(p["exits"]):
            check_shape(x, SCHEMA_EXIT, f"{w}.exits[{k}]", errors)
            if x.get("kind") not in EXIT_KINDS:
                errors.append(f"{w}.exits[{k}].kind {x.get('kind')!r}")
            if (x.get("kind") == "tail_jmp") != ("target" in x):
                errors.append(f"{w}.exits[{k}]: 'target' present iff kind is tail_jmp")
        if p["entry"] is not None:
            check_shape(p["entry"], SCHEMA_ENTRY, w + ".entry", errors)
            if isinstance(p["entry"].get("self"), dict):
                check_shape(p["entry"]["self"], SCHEMA_SELF, w + ".entry.self", errors)
                if p["entry"]["self"].get("kind") not in SELF_KINDS:
                    errors.append(f"{w}.entry.self.kind {p['entry']['self'].get('kind')!r}")
            if isinstance(p["entry"].get("sp_delta"), int) and p["entry"]["sp_delta"] > 0:
                errors.append(f"{w}.entry.sp_delta > 0")
        if p["return"] is not None:
            check_shape(p["return"], SCHEMA_RETURN, w + ".return", errors)
        check_shape(p["abi"], SCHEMA_ABI, w + ".abi", errors)
        if p["abi"].get("source") not in ABI_SOURCES:
            errors.append(f"{w}.abi.source {p['abi'].get('source')!r}")
        for k in ("convention", "code_convention", "size_rule"):
            if p["abi"].get(k) not in CONVENTIONS:
                errors.append(f"{w}.abi.{k} {p['abi'].get(k)!r}")
        if (p["self_arg_reg"] is None) != (p["abi"].get("source") in ("none", "unknown")):
            errors.append(f"{w}.self_arg_reg is null exactly when abi.source is none or unknown")
        for k, x in enumerate(p["caller_exits"]):
            _caller_exit_errors(x, f"{w}.caller_exits[{k}]", errors)
            if x.get("result") not in CALLER_RESULTS:
                errors.append(f"{w}.caller_exits[{k}].result {x.get('result')!r}")
        if p["caller_exits_ok"] != (p["caller_exits_why"] is None):
            errors.append(f"{w}: caller_exits_why is null exactly when caller_exits_ok")
    for i, e in enumerate(doc["edges"]):
        w = f"$.edges[{i}]"
        check_shape(e, SCHEMA_EDGE, w, errors)
        if errors:
            continue
        ref(e["from"], nf, w + ".from")
        ref(e["to"], nf, w + ".to")
    for i, v in enumerate(doc["vtables"]):
        w = f"$.vtables[{i}]"
        check_shape(v, SCHEMA_VTABLE, w, errors)
        if errors:
            continue
        ref(v["future"], nf, w + ".future")
        ref(v["poll_fn"], np_, w + ".poll_fn")
    for k in ("tokio", "async-task"):
        lay = doc["runtimes"].get(k, "missing")
        if lay == "missing":
            errors.append(f"$.runtimes: missing member {k!r}")
        elif lay is not None:
            check_shape(lay, SCHEMA_RUNTIME_LAYOUT, f"$.runtimes.{k}", errors)
    for i, t in enumerate(doc["task_types"]):
        w = f"$.task_types[{i}]"
        check_shape(t, SCHEMA_TASK_TYPE, w, errors)
        if not errors:
            ref(t["future"], nf, w + ".future")
    check_shape(doc["stats"].get("caller_exits"), SCHEMA_STATS_CALLER_EXITS, "$.stats.caller_exits", errors)
    for k in ("tokio", "async-task"):
        t = doc["task_polls"].get(k, "missing")
        if t == "missing":
            errors.append(f"$.task_polls: missing member {k!r}")
        elif t is not None:
            check_shape(t, SCHEMA_TASK_POLLS, f"$.task_polls.{k}", errors)
    for i, x in enumerate(doc["task_poll_exits"]):
        w = f"$.task_poll_exits[{i}]"
        _caller_exit_errors(x, w, errors)
        check_shape(x, {"runtime": (STR,), "dispatcher": (STR,)}, w, errors)
    for i, f in enumerate(doc["futures"]):
        ref(f.get("folded_into"), nf, f"$.futures[{i}].folded_into")
    for r in doc["roots"]:
        ref(r, nf, "$.roots[]")
    if doc["roots"] != sorted(doc["roots"]):
        errors.append("$.roots not ascending")
    return errors


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


# ---------------------------------------------------------------------------
# Kernel features (skips say why)
# ---------------------------------------------------------------------------


def require_trace_features(extra=()):
    """Skip the calling test, saying why, unless this kernel runs asyncbpf trace
    (root, uprobes, ring buffer, task storage, BPF cookies, and `extra` features,
    per `asyncbpf check --json`). Returns the check report by feature name."""
    import pytest

    if os.geteuid() != 0:
        pytest.skip("asyncbpf trace loads BPF programs: run the suite as root")
    require_file(ASYNCBPF, "the sanitizer build", "run 'make san'")
    proc = run_asyncbpf("check", "--json")
    report = {f["name"]: f for f in json.loads(proc.stdout)["features"]}
    if "ok" not in (report["uprobe"]["status"], report["uprobe_multi"]["status"]):
        pytest.skip(f"no uprobes on this kernel: {report['uprobe']['detail']}")
    for name in ("ringbuf", "task_storage", "bpf_cookie", *extra):
        if report[name]["status"] != "ok":
            pytest.skip(f"{name} unavailable: {report[name]['detail']}")
    return report


# ---------------------------------------------------------------------------
# The tracer, end to end (test_trace*.py)
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def uprobes():
    """Skip (saying why) when this kernel cannot run uprobes, per `asyncbpf check`."""
    if os.geteuid() != 0:
        pytest.skip("asyncbpf trace loads BPF programs: run the suite as root")
    require_file(ASYNCBPF, "the sanitizer build", "run 'make san'")
    proc = run_asyncbpf("check", "--json")
    report = {f["name"]: f for f in json.loads(proc.stdout)["features"]}
    if "ok" not in (report["uprobe"]["status"], report["uprobe_multi"]["status"]):
        pytest.skip(f"no uprobes on this kernel: {report['uprobe']['detail']}")
    for name in ("ringbuf", "task_storage", "bpf_cookie"):
        if report[name]["status"] != "ok":
            pytest.skip(f"{name} unavailable: {report[name]['detail']}")
    return report


def run_traced(tmp_path, *command, extra=(), timeout=120):
    """Launch mode: asyncbpf trace [extra] -- command, with the per-future probes
    (--deep) unless extra asks for task mode. Returns (proc, paths)."""
    paths = {
        "pftrace": tmp_path / "run.pftrace",
        "chrome": tmp_path / "run.json",
        "summary": tmp_path / "summary.json",
    }
    mode = () if "--tasks" in extra else ("--deep",)
    proc = run_asyncbpf("trace", *mode, "-o", paths["pftrace"], "--chrome", paths["chrome"], "--summary-json",
                             paths["summary"], *extra, "--", *command, timeout=timeout)
    return proc, paths


def untraced(*command, timeout=60):
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=timeout)


def ground_truth(stdout):
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1, stdout
    return json.loads(lines[0])


def fixture_name(entry):
    """The name `handwritten` uses for a summary entry: 'YieldNow', 'leaf',
    'sum_twice<u32>', 'block_task{block}', 'closure_task{closure}'; None if none."""
    path, kind = entry["path"] or "", entry["kind"]
    if kind == "handwritten":
        return last_segment(path)
    if kind == "async_fn":
        name = entry["name"]
        assert name.startswith("handwritten::"), name
        return name[len("handwritten::"):]
    return caller_name({"path": path, "kind": kind, "name": entry["name"]}, "handwritten")


def is_block_slice_name(name):
    """The off-CPU slices nested in polls (docs/tracing.md, "Blocking"): blocked,
    preempted, or inside the tracer's own probe handling."""
    return (name in ("preempted", "blocked", "in asyncbpf's probe (the tracer's cost)")
            or name.startswith("blocked in "))


def check_pftrace(path, polls=None, blocks=None):
    """Read back by tests/perfetto_reader.py (interning, incremental clocks, nesting
    checked); with polls, one slice per poll on the thread tracks (and with blocks, one
    per off-CPU interval besides). Returns the Trace."""
    need_tool("protoc")
    import perfetto_reader

    trace = perfetto_reader.read(path)
    assert trace.packets, f"{path} is empty"
    if polls is not None:
        threads = trace.thread_tracks()
        on_threads = [s for s in trace.slices if s.track in threads]
        assert sum(not is_block_slice_name(s.name) for s in on_threads) == polls
        if blocks is not None:
            assert sum(is_block_slice_name(s.name) for s in on_threads) == blocks
    return trace


def check_chrome(path, polls):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    slices = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") not in ("blocked", "tracer")]
    assert len(slices) == polls, (len(slices), polls)
    assert doc["otherData"]["dropped"] == 0
    return doc


def load_summary(paths):
    with open(paths["summary"], encoding="utf-8") as f:
        return json.load(f)


# ---------------------------------------------------------------------------
# protoc's text format (test_trace_writers.py, test_profile_writers.py)
# ---------------------------------------------------------------------------

# The subset of Perfetto's schema the writers use (field numbers and types as in
# Perfetto's protos)
PERFETTO_SCHEMA = REPO / "tests" / "data" / "perfetto_subset.proto"


def require_protoc():
    if not shutil.which("protoc"):
        pytest.fail("protoc not found in PATH (Debian: protobuf-compiler): run 'make deps'")


def write_sample(binary, path, kind=None):
    require_file(binary, "the unit test binary", "run 'make san' (it builds .output/san/tests/)")
    proc = subprocess.run([str(binary), "--write", *([kind] if kind else []), str(path)], capture_output=True, text=True, errors="replace",
                          timeout=120, env=san_env())
    assert_no_sanitizer_report(proc)
    assert proc.returncode == 0, describe(proc)


def parse_text_format(text):
    """protoc's text output as nested lists of (key, value); value a str or a list."""
    root, stack = [], []
    node = root
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            node = stack.pop()
        elif line.endswith("{"):
            child = []
            node.append((line[:-1].strip(), child))
            stack.append(node)
            node = child
        else:
            key, _, value = line.partition(": ")
            node.append((key, value))
    assert not stack, "unbalanced braces in protoc output"
    return root


def unquote(value):
    """A text-format string literal ("...", C escapes, octal bytes) as text."""
    assert value.startswith('"') and value.endswith('"'), value
    return codecs.escape_decode(value[1:-1])[0].decode("utf-8")


def field(msg, key, default=None):
    return next((v for k, v in msg if k == key), default)


def fields(msg, key):
    return [v for k, v in msg if k == key]


class StderrWatch:
    """Reads a running process's stderr in a thread, so that a test can wait for a line
    (the moment a tool says it is attached) instead of guessing a moment of its start-up
    from the outside. `text` is everything read so far; `wait(needle)` blocks until a
    line containing needle arrived (True), the process ended, or the timeout passed."""

    def __init__(self, proc):
        import threading
        self.proc = proc
        self.lines = []
        self.cond = threading.Condition()
        self.done = False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stderr:
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()
        with self.cond:
            self.done = True
            self.cond.notify_all()

    def wait(self, needle, timeout=60):
        import time
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                if any(needle in line for line in self.lines):
                    return True
                left = deadline - time.monotonic()
                if self.done or left <= 0:
                    return False
                self.cond.wait(left)

    @property
    def text(self):
        with self.cond:
            return "".join(self.lines)

    def finish(self, timeout=60):
        """After the process ended: all of its stderr."""
        self.thread.join(timeout)
        return self.text
