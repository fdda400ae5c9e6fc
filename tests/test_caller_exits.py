# SPDX-License-Identifier: GPL-2.0
"""Tier 2: exits in the caller and the task polls' exits (docs/disasm.md, "Exits in
the caller", "Task polls") on the Rust fixtures and on hyper's server, debug and
release.

Ground truth is the binary itself: objdump's listing of the whole executable (what
every call calls, every direct branch target), readelf's dynamic relocations (what
each GOT slot holds once loaded), nm, and for the task polls llvm-dwarfdump
(Header.vtable and the vtable's poll slot, which code is an inlined RawTask::poll).
Never what asyncbpf printed.
"""
import collections
import functools
import os
import re

import pytest

import util

CONFORMANCE = [("debug", "hyper_server"), ("release", "hyper_server")]

# what the kernel emulates (docs/disasm.md, "What the kernel emulates")
KERNEL_NOPS = {bytes.fromhex(h) for h in (
    "90", "6690", "0f1f00", "0f1f4000", "0f1f440000", "660f1f440000", "0f1f8000000000",
    "0f1f840000000000")}
DIRECT = re.compile(r"^\S+\s+([0-9a-f]+)\b")
RIP_COMMENT = re.compile(r"\(%rip\).*#\s+([0-9a-f]+)")
NOT_FALLTHROUGH = ("call", "ret", "jmp", "push", "pop", "leave", "enter", "ud2", "int3", "hlt", "syscall")


class Listing:
    """objdump -d of the whole executable, with what the tests ask of it."""

    def __init__(self, binary):
        self.insns = [i for i in util.disassemble(binary, 0, 1 << 56) if i.text]
        self.index = {i.addr: k for k, i in enumerate(self.insns)}
        self.branch_targets = set()  # every direct jmp/jcc/call/loop target
        self.direct_calls = collections.defaultdict(list)  # callee -> call addrs
        self.direct_jumps = collections.defaultdict(list)  # target -> jmp/jcc addrs
        self.rip_refs = collections.defaultdict(list)  # address -> insns naming it (rip-relative)
        for i in self.insns:
            m = DIRECT.match(i.text)
            if m and "*" not in i.text and (i.mnemonic.startswith(("j", "loop")) or i.mnemonic == "call"):
                t = int(m.group(1), 16)
                self.branch_targets.add(t)
                (self.direct_calls if i.mnemonic == "call" else self.direct_jumps)[t].append(i.addr)
            r = RIP_COMMENT.search(i.text)
            if r:
                self.rip_refs[int(r.group(1), 16)].append(i)

    def at(self, addr):
        k = self.index.get(addr)
        return None if k is None else self.insns[k]

    def next(self, insn):
        k = self.index[insn.addr] + 1
        return self.insns[k] if k < len(self.insns) else None

    def prev(self, insn):
        k = self.index[insn.addr] - 1
        return self.insns[k] if k >= 0 else None


@functools.lru_cache(maxsize=None)
def listing(binary):
    return Listing(binary)


@functools.lru_cache(maxsize=None)
def relocations(binary):
    """{where: value} of the dynamic relocations whose value is known here
    (RELATIVE: the addend; GLOB_DAT, JUMP_SLOT, 64: a defined symbol's value + addend)."""
    out = {}
    for line in util.tool("readelf", "-rW", binary).splitlines():
        p = line.split()
        if len(p) >= 4 and p[2] == "R_X86_64_RELATIVE":
            out[int(p[0], 16)] = int(p[3], 16)
        elif len(p) >= 7 and p[2] in ("R_X86_64_GLOB_DAT", "R_X86_64_JUMP_SLOT", "R_X86_64_64") \
                and int(p[3], 16) != 0 and p[5] == "+":
            out[int(p[0], 16)] = int(p[3], 16) + int(p[6], 16)
    return out


@functools.lru_cache(maxsize=None)
def got_ranges(binary):
    ranges = []
    for line in util.tool("readelf", "-SW", binary).splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if m and m.group(1) in (".got", ".got.plt"):
            ranges.append((int(m.group(2), 16), int(m.group(2), 16) + int(m.group(3), 16)))
    return ranges


def in_got(binary, addr):
    return any(lo <= addr < hi for lo, hi in got_ranges(binary))


def callee(binary, call):
    """What a call instruction calls, by the listing and the relocations; None if
    the code does not say (a register, a vtable)."""
    lst, rel = listing(binary), relocations(binary)
    m = DIRECT.match(call.text)
    if m and "*" not in call.text:
        return int(m.group(1), 16)
    r = RIP_COMMENT.search(call.text)
    if r:
        return rel.get(int(r.group(1), 16))
    reg = re.fullmatch(r"call\s+\*(%r\w+)", call.text)
    prev = lst.prev(call)
    if reg and prev and prev.mnemonic == "mov" and prev.text.split("#")[0].rstrip().endswith("," + reg.group(1)):
        r = RIP_COMMENT.search(prev.text)
        if r:
            return rel.get(int(r.group(1), 16))
    return None


def calls_of(binary, fn):
    """Every call of fn the listing shows: direct, through a GOT slot holding fn, and
    `mov slot(%rip), %reg; call *%reg`."""
    lst, rel = listing(binary), relocations(binary)
    found = set(lst.direct_calls.get(fn, ()))
    for slot in (w for w, v in rel.items() if v == fn):
        for i in lst.rip_refs.get(slot, ()):
            if i.mnemonic == "call":
                found.add(i.addr)
            elif i.mnemonic == "mov":
                n = lst.next(i)
                if n and n.mnemonic == "call" and callee(binary, n) == fn:
                    found.add(n.addr)
    return found


def emulated(insn):
    """The kernel emulates a uprobe on it (since v6.16): jmp/jcc/call rel, push reg, nop."""
    if insn.raw in KERNEL_NOPS:
        return True
    if insn.mnemonic == "push":
        return (len(insn.raw) == 1 and 0x50 <= insn.raw[0] <= 0x57) or \
            (len(insn.raw) == 2 and insn.raw[0] == 0x41 and 0x50 <= insn.raw[1] <= 0x57)
    branch = insn.mnemonic == "call" or insn.mnemonic.startswith("j")
    return branch and "*" not in insn.text and insn.raw[0] not in (0x66, 0x2e, 0x3e) and \
        DIRECT.match(insn.text) is not None


@functools.lru_cache(maxsize=None)
def symbol_names(binary):
    """{address: [mangled symbol names]} by nm."""
    out = collections.defaultdict(list)
    for name, addrs in util.nm_symbols(binary).items():
        for a in addrs:
            out[a].append(name)
    return out


def freed(insn):
    """Bytes `add $N,%rsp` or `pop %reg` free from the stack; None for anything else."""
    t = insn.text.split("#")[0].strip()
    m = re.fullmatch(r"add\s+\$(0x[0-9a-f]+),%rsp", t)
    if m:
        return int(m.group(1), 16)
    if re.fullmatch(r"pop\s+%r\w+", t) and not t.endswith("%rsp"):
        return 8
    return None


def passable(binary, insn):
    """A call the continuation may pass over (disasm.md, rule 5): through a GOT slot,
    to a function with a symbol that polls nothing: no `<F as Future>::poll`, no
    async body (a closure), no task vtable's poll."""
    if insn.mnemonic != "call" or not RIP_COMMENT.search(insn.text) or "*" not in insn.text:
        return False
    fn = callee(binary, insn)
    names = symbol_names(binary).get(fn, []) if fn else []
    polls = ("Future$GT$4poll", "closure", "3raw4poll")
    return bool(names) and not any(p in n for n in names for p in polls)


def wrapper_tail(binary, wrapper, fn):
    """In `wrapper`: the call of fn reached straight from its entry (no branch, no
    branch target before it) and followed by a `ret` with nothing between that
    branches, calls or moves rsp but `add rsp`/`pop`s: (the call's address, the bytes
    freed after it), or a problem (str)."""
    lst = listing(binary)
    i = lst.at(wrapper)
    for _ in range(64):
        if i is None or i.mnemonic.startswith(("j", "ret")) or (i.addr != wrapper and i.addr in lst.branch_targets):
            return f"wrapper {wrapper:#x}: a branch before its call of {fn:#x}"
        if i.mnemonic == "call" and callee(binary, i) == fn:
            call = i.addr
            break
        i = lst.next(i)
    else:
        return f"wrapper {wrapper:#x}: no call of {fn:#x} near its entry"
    total, i = 0, lst.next(i)
    while i is not None and i.mnemonic != "ret":
        n = freed(i)
        if i.addr in lst.branch_targets or (n is None and (
                i.mnemonic in NOT_FALLTHROUGH or i.mnemonic.startswith("j") or re.search(r"%rsp$", i.text))):
            return f"wrapper {wrapper:#x}: {i.text!r} between its call and its ret"
        total += n or 0
        i = lst.next(i)
    if i is None or i.addr in lst.branch_targets:
        return f"wrapper {wrapper:#x}: no ret"
    return call, total


def site_problems(binary, x, want_callee):
    """Why this exit site is not what docs/disasm.md promises, by the listing."""
    lst = listing(binary)
    where = f"call {x['call_addr']:#x}"
    tail = 0
    if x.get("via_addr"):  # the poll returns through a wrapper: the call is the wrapper's
        tail = wrapper_tail(binary, x["via_addr"], want_callee)
        if isinstance(tail, str):
            return [f"{where}: {tail}"]
        tail = tail[1] + 8  # what it freed, and its own ret
        want_callee = x["via_addr"]
    call = lst.at(x["call_addr"])
    if call is None or call.mnemonic != "call":
        return [f"{where}: not a call instruction: {call and call.text!r}"]
    if want_callee is not None and callee(binary, call) != want_callee:
        return [f"{where}: {call.text!r} calls {callee(binary, call)}, not {want_callee:#x}"]
    if not x["usable"]:
        return []
    site = lst.at(x["addr"])
    if site is None:
        return [f"{where}: site {x['addr']:#x} is not an instruction"]
    problems = []
    if x.get("stepped"):  # the return address itself, single-stepped: only the return reaches it
        if site.addr != lst.next(call).addr or x["distance"] != 0 or x["sp_delta"] != 8:
            problems.append(f"{where}: a stepped site {site.addr:#x} that is not the return address")
        if site.addr in lst.branch_targets:
            problems.append(f"{where}: the return address {site.addr:#x} is a branch target")
        return problems
    if not emulated(site):
        problems.append(f"{where}: site {x['addr']:#x} {site.text!r} is not emulated")
    if x["file_offset"] != util.file_offset_of(binary, x["addr"]):
        problems.append(f"{where}: file_offset {x['file_offset']:#x}")
    between, i = [], lst.next(call)
    while i is not None and i.addr < site.addr and len(between) < 16:
        between.append(i)
        i = lst.next(i)
    if i is None or i.addr != site.addr:
        return problems + [f"{where}: site {site.addr:#x} is not on the fall-through path"]
    if len(between) != x["distance"]:
        problems.append(f"{where}: distance {x['distance']}, objdump has {len(between)} insns before the site")
    sp, passed = 8 + tail, 0
    for b in between:
        if freed(b) is not None:
            sp += freed(b)
        elif passable(binary, b):
            passed += 1
        elif b.mnemonic in NOT_FALLTHROUGH or b.mnemonic.startswith("j") or re.search(r"%rsp$", b.text):
            problems.append(f"{where}: {b.addr:#x} {b.text!r} before the site")
    if x["sp_delta"] != sp:
        problems.append(f"{where}: sp_delta {x['sp_delta']}, the listing says {sp}")
    if x["calls_passed"] != passed:
        problems.append(f"{where}: calls_passed {x['calls_passed']}, the listing has {passed}")
    for a in [b.addr for b in between] + [site.addr]:
        if a in lst.branch_targets:
            problems.append(f"{where}: {a:#x} between the return and the site is a branch target")
    return problems


def why_holds(binary, fn, why):
    """Does the reason given for unknown callers hold, by the listing and relocations?"""
    lst, rel = listing(binary), relocations(binary)
    nums = [int(n, 16) for n in re.findall(r"0x([0-9a-f]+)", why)]
    if why.startswith("tail-called by the jump at") and nums:
        return nums[0] in lst.direct_jumps.get(fn, ())
    if why.startswith("its address is taken by the code at") and nums:
        return any(i.addr == nums[0] and i.mnemonic != "call" for i in lst.rip_refs.get(fn, ()))
    if why.startswith("its address is held by the data word at") and nums:
        return rel.get(nums[0]) == fn and not in_got(binary, nums[0])
    if why.startswith("its GOT slot at") and len(nums) >= 2:
        return rel.get(nums[0]) == fn and in_got(binary, nums[0]) and \
            any(i.addr == nums[1] and i.mnemonic != "call" for i in lst.rip_refs.get(nums[0], ()))
    return False


def check_polls(binary, model):
    """The problems found, and how many usable sites were checked."""
    problems, checked = [], 0
    rel_values = collections.defaultdict(list)
    for w, v in relocations(binary).items():
        rel_values[v].append(w)
    for p in model["polls"]:
        if p["inlined_only"] or not p["addr"]:
            continue
        name = f"{p['name']} at {p['addr']:#x}"
        found = {x["call_addr"] for x in p["caller_exits"]}
        want = calls_of(binary, p["addr"])
        # a call in a wrapper that returns at once stands for the wrapper's own calls
        for w in {x["via_addr"] for x in p["caller_exits"] if x.get("via_addr")}:
            t = wrapper_tail(binary, w, p["addr"])
            if isinstance(t, str):
                problems.append(f"{name}: {t}")
                continue
            want = (want - {t[0]}) | calls_of(binary, w)
        for x in p["caller_exits"]:
            problems += [f"{name}: {s}" for s in site_problems(binary, x, p["addr"])]
            checked += x["usable"]
        if p["callers_known"]:
            if found != want:
                problems.append(f"{name}: calls {sorted(map(hex, found))}, objdump/readelf have "
                                f"{sorted(map(hex, want))}")
            if listing(binary).direct_jumps.get(p["addr"]):
                problems.append(f"{name}: callers known, but jumped to from {listing(binary).direct_jumps[p['addr']]}")
            if any(not in_got(binary, w) for w in rel_values.get(p["addr"], ())):
                problems.append(f"{name}: callers known, but a data word outside the GOT holds it")
            if p["caller_exits_ok"] != (bool(found) and all(x["usable"] for x in p["caller_exits"])):
                problems.append(f"{name}: caller_exits_ok {p['caller_exits_ok']}")
        else:
            if not found <= want:
                problems.append(f"{name}: calls {sorted(map(hex, found - want))} do not call it")
            if p["caller_exits_ok"] or not why_holds(binary, p["addr"], p["caller_exits_why"] or ""):
                problems.append(f"{name}: callers unknown because {p['caller_exits_why']!r}: "
                                "objdump/readelf do not show that")
    return problems, checked


@functools.lru_cache(maxsize=None)
def conformance_model(profile, name):
    binary = util.conformance_binary(profile, name)
    util.require_file(binary, "the conformance program", "run 'make conformance'")
    util.require_file(util.ASYNCBPF, "the sanitizer build", "run 'make san'")
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"asyncbpf-caller-exits-{os.getpid()}-{profile}-{name}.json")
    proc = util.run_asyncbpf("analyze", "-q", binary, "--json", out, timeout=300)
    assert proc.returncode == util.EXIT_OK, util.describe(proc)
    try:
        return str(binary), util.load_json(out)
    finally:
        os.unlink(out)


def test_caller_exits_of_fixtures(model, build):
    """Every caller exit site is an emulated instruction reached only by falling
    through from a call of that poll fn; with callers known, they are all its calls."""
    problems, checked = check_polls(build.binary, model.doc)
    assert not problems, "\n".join(problems[:25])
    assert checked, "no usable exit in a caller to check"


@pytest.mark.parametrize("profile,name", CONFORMANCE, ids=[f"{p}-{n}" for p, n in CONFORMANCE])
def test_caller_exits_of_hyper_server(profile, name):
    binary, doc = conformance_model(profile, name)
    problems, checked = check_polls(binary, doc)
    assert not problems, "\n".join(problems[:25])
    assert checked, "no usable exit in a caller to check"


# ---------------------------------------------------------------------------
# Task polls: the runtimes' calls of a task's vtable poll function
# ---------------------------------------------------------------------------

DIE = re.compile(r"^0x[0-9a-f]+:(\s+)(DW_TAG_\w+|NULL)")
ATTR = re.compile(r"^\s+(DW_AT_\w+)\s+\((.*)\)$")


@functools.lru_cache(maxsize=None)
def member_offset(binary, path, struct_prefix, member):
    """DW_AT_data_member_location of `member` in the struct named struct_prefix...
    inside namespace `path`, by llvm-dwarfdump; None if the DWARF has none."""
    text = util.tool(util.LLVM_DWARFDUMP, "--regex", f"--name=^{re.escape(struct_prefix)}", "--show-children",
                     "--show-parents", binary, timeout=300)
    stack, cur, in_struct = [], None, None
    for line in text.splitlines():
        m = DIE.match(line)
        if m:
            depth = len(m.group(1))
            while stack and stack[-1]["depth"] >= depth:
                stack.pop()
            cur = {"depth": depth, "tag": m.group(2), "attrs": {}}
            stack.append(cur)
            if in_struct is not None and depth <= in_struct["depth"]:
                in_struct = None
            continue
        a = ATTR.match(line)
        if not a or cur is None:
            continue
        cur["attrs"][a.group(1)] = a.group(2).strip('"')
        if a.group(1) == "DW_AT_name" and cur["tag"] == "DW_TAG_structure_type" and \
                cur["attrs"]["DW_AT_name"].startswith(struct_prefix):
            names = [s["attrs"].get("DW_AT_name") for s in stack[:-1] if s["tag"] == "DW_TAG_namespace"]
            if "::".join(names) == path:
                in_struct = cur
        if a.group(1) == "DW_AT_data_member_location" and in_struct is not None and \
                cur["tag"] == "DW_TAG_member" and cur["depth"] > in_struct["depth"] and \
                cur["attrs"].get("DW_AT_name") == member:
            return int(a.group(2), 16)
    return None


RUNTIMES = {
    # dispatcher symbol, (Header.vtable), (the vtable's poll/run slot)
    "tokio": (re.compile(r"^_ZN5tokio7runtime4task3raw7RawTask4poll17h[0-9a-f]{16}E$"),
              ("tokio::runtime::task::core", "Header", "vtable"),
              ("tokio::runtime::task::raw", "Vtable", "poll")),
    "async-task": (re.compile(r"^_ZN10async_task8runnable\w*Runnable\w*3run17h[0-9a-f]{16}E$"),
                   ("async_task::header", "Header", "vtable"),
                   ("async_task::raw", "TaskVTable", "run")),
}


def mem_operand(off, reg):
    return f"{off:#x}({reg})" if off else f"({reg})"


def last_write(lst, insn, reg, limit=6):
    """The instruction that last wrote reg before insn on the straight-line path back
    (no branch, call or branch target between), or None."""
    i = insn
    for _ in range(limit):
        if i.addr in lst.branch_targets:
            return None
        i = lst.prev(i)
        if i is None or i.mnemonic in ("call", "ret") or i.mnemonic.startswith("j"):
            return None
        ops = i.text.split("#")[0].split(None, 1)
        if len(ops) == 2 and re.search(r"(^|,)" + re.escape(reg) + r"$", ops[1].strip()):
            return i
    return None


def loads(i, off, dst):
    """`mov off(%base),dst`: returns %base or None."""
    if i is None or i.mnemonic != "mov":
        return None
    m = re.fullmatch(r"mov\s+(0x[0-9a-f]+)?\((%r\w+)\),(%r\w+)", i.text.split("#")[0].strip())
    if not m or m.group(3) != dst or int(m.group(1) or "0", 16) != off:
        return None
    return m.group(2)


def vtable_calls(binary, header_vtable, slot):
    """Calls through [vtable + slot] whose vtable was loaded from [header + Header.vtable]."""
    lst, found = listing(binary), []
    for i in lst.insns:
        if i.mnemonic != "call" or "*" not in i.text:
            continue
        t = i.text.split("#")[0].strip()
        m = re.fullmatch(r"call\s+\*(0x[0-9a-f]+)?\((%r\w+)\)", t)
        if m and int(m.group(1) or "0", 16) == slot:
            if loads(last_write(lst, i, m.group(2)), header_vtable, m.group(2)):
                found.append(i.addr)
            continue
        m = re.fullmatch(r"call\s+\*(%r\w+)", t)
        if m:
            load = last_write(lst, i, m.group(1))
            vt = loads(load, slot, m.group(1))
            if vt and loads(last_write(lst, load, vt), header_vtable, vt):
                found.append(i.addr)
    return found


@functools.lru_cache(maxsize=None)
def in_dispatcher(binary, addr, symbol):
    """llvm-dwarfdump --lookup: is addr inside an inlined copy of the dispatcher?"""
    out = util.tool(util.LLVM_DWARFDUMP, f"--lookup={addr:#x}", binary, timeout=120)
    return any("DW_AT_abstract_origin" in l and symbol.search(l.split('"')[1] if '"' in l else "")
               for l in out.splitlines())


def expected_task_calls(binary, runtime):
    """The task-poll calls of a runtime, by objdump, nm, readelf and llvm-dwarfdump:
    vtable calls inside the dispatcher's code (out of line or inlined), and the
    calls of an out-of-line dispatcher that tail-jumps through the vtable.
    {call address: the callee the listing shows (None: through the vtable)}."""
    symbol, hv_at, slot_at = RUNTIMES[runtime]
    hv, slot = member_offset(binary, *hv_at), member_offset(binary, *slot_at)
    if hv is None or slot is None:
        return None
    syms = util.nm_symbols(binary)
    own = {a for name, addrs in syms.items() if symbol.match(name) for a in addrs}
    lst, want = listing(binary), {}
    fns = sorted((a, name) for name, addrs in syms.items() for a in addrs)
    for call in vtable_calls(binary, hv, slot):
        owner = max(((a, n) for a, n in fns if a <= call), default=(0, ""))
        if owner[0] in own or in_dispatcher(binary, call, symbol):
            want[call] = None
    for fn in own:
        first = lst.at(fn)
        second = first and lst.next(first)
        base = loads(first, hv, "%rax") if first else None
        if second and base == "%rdi" and second.mnemonic == "jmp" and \
                second.text.split("#")[0].strip().endswith("*" + mem_operand(slot, "%rax")):
            for c in calls_of(binary, fn):
                want[c] = fn
    return want


TASK_BUILDS = [(p, c) for p in util.PROFILES for c in ("demo", "tokio_mt", "tokio_ct", "async_std_app", "smol_app")]


def check_task_polls(binary, doc):
    problems, checked = [], 0
    for runtime in RUNTIMES:
        want = expected_task_calls(binary, runtime)
        got = {x["call_addr"]: x for x in doc["task_poll_exits"] if x["runtime"] == runtime}
        if want is None:
            if got:
                problems.append(f"{runtime}: no {runtime} types in the DWARF, but task calls {sorted(map(hex, got))}")
            continue
        if set(got) != set(want):
            problems.append(f"{runtime}: task-poll calls {sorted(map(hex, got))}, objdump/DWARF have "
                            f"{sorted(map(hex, want))}")
        for addr, x in got.items():
            problems += [f"{runtime}: {s}" for s in site_problems(binary, x, want.get(addr))]
            checked += x["usable"]
        s = doc["task_polls"][runtime]
        if want and (s is None or s["calls"] != len(got) or s["usable"] != sum(x["usable"] for x in got.values())):
            problems.append(f"{runtime}: task_polls {s} does not count task_poll_exits")
    return problems, checked


@pytest.mark.parametrize("profile,crate", TASK_BUILDS, ids=[f"{p}-{c}" for p, c in TASK_BUILDS])
def test_task_poll_exits_of_fixtures(profile, crate, analyses):
    build = analyses.get(profile, crate)
    problems, _ = check_task_polls(build.binary, build.model.doc)
    assert not problems, "\n".join(problems[:25])


@pytest.mark.parametrize("profile,name", CONFORMANCE, ids=[f"{p}-{n}" for p, n in CONFORMANCE])
def test_task_poll_exits_of_hyper_server(profile, name):
    """Release: the `call *(%rax)` sites after `mov 0x10(%rX),%rax` (Header.vtable) inside
    the inlined RawTask::poll copies (run_task's two among them), each followed by an
    emulated cmp/jcc; debug: the call inside RawTask::poll's own code."""
    binary, doc = conformance_model(profile, name)
    problems, checked = check_task_polls(binary, doc)
    assert not problems, "\n".join(problems[:25])
    run_task = [x for x in doc["task_poll_exits"] if x["caller"] and x["caller"].endswith("worker::Context::run_task")]
    if profile == "release":
        assert len(run_task) == 2 and checked >= 2, doc["task_poll_exits"]


# ---------------------------------------------------------------------------
# How much the exits in the callers cover (docs/disasm.md quotes these numbers)
# ---------------------------------------------------------------------------


def coverage(doc, user_only=False):
    polls = [p for p in doc["polls"] if not p["inlined_only"] and p["addr"]
             and (not user_only or p["crate_class"] == "user")]
    return (len(polls), sum(p["callers_known"] for p in polls), sum(p["caller_exits_ok"] for p in polls))


COVERAGE = [("fixture", p, "tokio_mt") for p in util.PROFILES] + [("conformance", p, n) for p, n in CONFORMANCE]


@pytest.mark.parametrize("kind,profile,name", COVERAGE, ids=[f"{p}-{n}" for _, p, n in COVERAGE])
def test_caller_exit_coverage(kind, profile, name, analyses):
    """stats.caller_exits counts what polls[] says; the shares are printed (-s)."""
    doc = analyses.get(profile, name).model.doc if kind == "fixture" else conformance_model(profile, name)[1]
    s = doc["stats"]["caller_exits"]
    n, known, ok = coverage(doc)
    sites = [x for p in doc["polls"] for x in p["caller_exits"]]
    assert (s["polls"], s["polls_callers_known"], s["polls_ok"]) == (n, known, ok)
    assert (s["sites"], s["sites_usable"]) == (len(sites), sum(x["usable"] for x in sites))
    assert s["index_built"] and s["undecoded_bytes"] == 0 and s["functions"] > 0
    un, uknown, uok = coverage(doc, user_only=True)
    print(f"\n{profile} {name}: out-of-line poll fns {n}, callers known {known}, usable exits in "
          f"the callers {ok}; of the user's crates {un}, {uknown}, {uok}; call sites {len(sites)}, "
          f"usable {sum(x['usable'] for x in sites)}")
