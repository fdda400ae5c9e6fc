# SPDX-License-Identifier: GPL-2.0
"""An independent reading of a poll function's calling convention, for the tests.

asyncbpf's analyzer reads the convention with Capstone and a forward dataflow over
the function's control-flow graph (user/analyze/abi.c). This reads it another way,
from `objdump -d -M intel` text, by tracing values BACKWARD from where they are
used: what rax holds at each `ret`, and which incoming register the future's
`__state` is reached through. It shares no code or method with the analyzer.

It only answers where the text makes it plain:
  - rax at a `ret` traced back to the incoming rdi (a register copy or a stack
    slot written only from rdi) -> a hidden return pointer: returned in memory;
  - rax at a `ret` traced back to a constant (mov eax, imm / xor eax, eax, or a
    stack slot written with an immediate) on some path -> returned in registers;
  - an access [REG + state_offset] with REG traced back to the incoming rdi / rsi
    -> that register is self.
Anything else (a value from a call, arithmetic, an indirect jump) is no answer.
"""
import re
import subprocess
from dataclasses import dataclass, field

LINE = re.compile(r"^\s*([0-9a-f]+):\t(?:[0-9a-f]{2} )+\s*\t?(.*)$")
GPR64 = ["rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12",
         "r13", "r14", "r15"]
ALIASES = {}
for i, r in enumerate(["rax", "rbx", "rcx", "rdx"]):
    b = r[1]
    ALIASES.update({f"e{b}x": r, f"{b}x": r, f"{b}l": r, f"{b}h": r})
for r in ["rsi", "rdi", "rbp", "rsp"]:
    ALIASES.update({"e" + r[1:]: r, r[1:]: r, r[1:] + "l": r})
for n in range(8, 16):
    ALIASES.update({f"r{n}d": f"r{n}", f"r{n}w": f"r{n}", f"r{n}b": f"r{n}"})
for r in GPR64:
    ALIASES[r] = r
CALLER_SAVED = {"rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11"}
BRANCHES = re.compile(r"^(j[a-z]+|loop[a-z]*)$")
PREFIX_WORDS = {"rep", "repz", "repe", "repnz", "repne", "bnd", "notrack", "lock", "data16"}


@dataclass
class Ins:
    addr: int
    op: str
    args: list
    text: str


@dataclass
class Verdict:
    ret: str = "unknown"  # "memory", "registers", "unknown"
    self_reg: str = None  # "rdi", "rsi", None
    votes: dict = field(default_factory=dict)


def split_args(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def disassemble(binary, start, size):
    out = subprocess.run(["objdump", "-d", "-w", "-M", "intel", "--no-show-raw-insn",
                          f"--start-address={start:#x}", f"--stop-address={start + size:#x}", binary],
                         capture_output=True, text=True, check=True).stdout
    insns = []
    for line in out.splitlines():
        m = re.match(r"^\s*([0-9a-f]+):\t(.*)$", line)
        if not m:
            continue
        text = m.group(2).split("#")[0].strip()
        if not text or text.startswith("(bad)"):
            continue
        words = text.split(None, 1)
        while words and words[0] in PREFIX_WORDS:
            words = words[1].split(None, 1) if len(words) > 1 else []
        if not words:
            continue
        op = words[0]
        args = split_args(words[1]) if len(words) > 1 else []
        insns.append(Ins(int(m.group(1), 16), op, args, text))
    return insns


def reg(a):
    return ALIASES.get(a)


MEM = re.compile(r"^(?:(?:BYTE|WORD|DWORD|QWORD|XMMWORD|YMMWORD) PTR )?(?:[a-z]s:)?\[([^\]]*)\]$")


def mem(a):
    """'QWORD PTR [rsp+0x20]' -> ('rsp', 0x20, None); [rax+rcx*4+8] -> (rax, 8, rcx*4)."""
    m = MEM.match(a)
    if not m:
        return None
    base, disp, index = None, 0, None
    for term in re.findall(r"[+-]?[^+-]+", m.group(1).replace(" ", "")):
        sign = -1 if term.startswith("-") else 1
        t = term.lstrip("+-")
        if t.startswith("0x") or t.isdigit():
            disp += sign * int(t, 0)
        elif "*" in t:
            index = t
        elif base is None:
            base = t
        else:
            index = t
    return base, disp, index


def imm(a):
    try:
        return int(a, 0)
    except ValueError:
        return None


class Function:
    def __init__(self, insns):
        self.insns = insns
        self.index = {ins.addr: i for i, ins in enumerate(insns)}
        start, end = insns[0].addr, insns[-1].addr
        leaders = {0}
        self.preds = {}
        for i, ins in enumerate(insns):
            target = self.target(ins)
            if target is not None and target in self.index:
                leaders.add(self.index[target])
            if ins.op in ("jmp", "ret", "ud2", "int3") or BRANCHES.match(ins.op):
                leaders.add(i + 1)
        self.block_start = []
        cur = 0
        for i in range(len(insns)):
            if i in leaders:
                cur = i
            self.block_start.append(cur)
        for i, ins in enumerate(insns):
            target = self.target(ins)
            if target is not None and target in self.index:
                self.preds.setdefault(self.index[target], []).append(i)
            falls = not (ins.op in ("jmp", "ret", "ud2", "int3") or ins.op.startswith("jmp"))
            if falls and i + 1 < len(insns) and (i + 1) in leaders:
                self.preds.setdefault(i + 1, []).append(i)
        # rsp distance from entry, along the entry block only (where it moves)
        self.entry_sp = {}
        sp = 0
        for i in range(len(insns)):
            if self.block_start[i] != 0:
                break
            self.entry_sp[i] = sp
            ins = insns[i]
            if ins.op == "push":
                sp -= 8
            elif ins.op == "pop":
                sp += 8
            elif ins.op in ("sub", "add") and ins.args and ins.args[0] == "rsp" and imm(ins.args[1]) is not None:
                sp += -imm(ins.args[1]) if ins.op == "sub" else imm(ins.args[1])
        self.body_sp = sp  # rsp in the other blocks (frames that set it once)

    @staticmethod
    def target(ins):
        if (ins.op in ("jmp", "call") or BRANCHES.match(ins.op)) and ins.args:
            m = re.match(r"^([0-9a-f]+)", ins.args[0])
            if m and not ins.args[0].startswith(("QWORD", "r", "e")):
                return int(m.group(1), 16)
        return None

    def sp_at(self, i):
        return self.entry_sp.get(i, self.body_sp)

    def slot_of(self, i, operand):
        """The rsp-at-entry-relative offset a [rsp+X] operand names at instruction i."""
        m = mem(operand)
        if not m or m[0] != "rsp" or m[2]:
            return None
        return self.sp_at(i) + m[1]

    def origin(self, loc, i, seen=None, depth=0):
        """What loc ('rax' or ('slot', off)) holds just before instruction i."""
        return self.scan(loc, i - 1, self.block_start[i], seen or set(), depth)

    def scan(self, loc, j, start, seen, depth):
        """Back from instruction j to its block's start, then into its predecessors."""
        if depth > 12 or (loc, j) in seen:
            return "?"
        seen.add((loc, j))
        while j >= start:
            w = self.writes(self.insns[j], j, loc)
            if w is not None:
                return self.value_of(w, j, seen, depth)
            j -= 1
        if start == 0:
            return "arg:" + loc if isinstance(loc, str) else "uninit"
        results = {self.scan(loc, p, self.block_start[p], seen, depth + 1)
                   for p in self.preds.get(start, [])}
        if not results:
            return "?"
        if len(results) == 1:
            return results.pop()
        return ("mixed", frozenset(results))

    def writes(self, ins, j, loc):
        """If ins writes loc: how ('copy', src) / ('const', v) / 'other'; else None."""
        args = ins.args
        if isinstance(loc, str):
            if ins.op == "call":
                return "other" if loc in CALLER_SAVED else None
            if not args or reg(args[0]) != loc:
                if ins.op in ("xchg",) and any(reg(a) == loc for a in args):
                    return "other"
                return None
            if ins.op == "mov" and len(args) == 2:
                if args[0] in GPR64 and args[1] in GPR64:
                    return ("copy", args[1])
                if args[0] in GPR64 and args[1].startswith("QWORD PTR"):
                    s = self.slot_of(j, args[1])
                    return ("copy", ("slot", s)) if s is not None else "other"
                if imm(args[1]) is not None and args[0] in GPR64 + [a for a in ALIASES if a.startswith("e") or a.endswith("d")]:
                    return ("const", imm(args[1]))
                return "other"
            if ins.op == "xor" and len(args) == 2 and args[0] == args[1]:
                return ("const", 0)
            if ins.op in ("cmp", "test", "push"):
                return None
            return "other"
        # a stack slot: stores by [rsp+X] to it
        if ins.op == "call" or not args:
            return None
        s = self.slot_of(j, args[0])
        if s is None or s != loc[1]:
            return None
        if ins.op == "mov" and len(args) == 2:
            if not args[0].startswith("QWORD PTR"):
                return "other"
            if args[1] in GPR64:
                return ("copy", args[1])
            if imm(args[1]) is not None:
                return ("const", imm(args[1]))
        return "other"

    def value_of(self, w, j, seen, depth):
        if w == "other":
            return "?"
        kind, v = w
        if kind == "const":
            return ("const", v)
        return self.origin(v, j, seen, depth + 1)


def has(value, pred):
    if isinstance(value, tuple) and value[0] == "mixed":
        return any(has(v, pred) for v in value[1])
    return pred(value)


def every(value, pred):
    if isinstance(value, tuple) and value[0] == "mixed":
        return all(every(v, pred) for v in value[1])
    return pred(value)


def read(binary, addr, size, state_offset=None, state_size=None):
    """The convention of the function at addr, as far as its text shows."""
    f = Function(disassemble(binary, addr, size))
    v = Verdict(votes={"memory": 0, "registers": 0, "self_rdi": 0, "self_rsi": 0})
    for i, ins in enumerate(f.insns):
        if ins.op == "ret":
            rax = f.origin("rax", i)
            if every(rax, lambda x: x == "arg:rdi"):
                v.votes["memory"] += 1
            elif has(rax, lambda x: isinstance(x, tuple) and x[0] == "const"):
                v.votes["registers"] += 1
        if state_offset is None:
            continue
        width = {1: "BYTE", 2: "WORD", 4: "DWORD", 8: "QWORD"}.get(state_size)
        for a in ins.args:
            m = mem(a)
            if not m or not a.startswith(f"{width} PTR") or m[2] or m[1] != state_offset or m[0] not in GPR64:
                continue
            o = f.origin(m[0], i)
            if o == "arg:rdi":
                v.votes["self_rdi"] += 1
            elif o == "arg:rsi":
                v.votes["self_rsi"] += 1
    if v.votes["memory"] and not v.votes["registers"]:
        v.ret = "memory"
    elif v.votes["registers"] and not v.votes["memory"]:
        v.ret = "registers"
    if v.votes["self_rdi"] and not v.votes["self_rsi"]:
        v.self_reg = "rdi"
    elif v.votes["self_rsi"] and not v.votes["self_rdi"]:
        v.self_reg = "rsi"
    return v
