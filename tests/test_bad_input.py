# SPDX-License-Identifier: GPL-2.0
"""Tier 3: hostile and unusual input. asyncbpf parses binaries as root, so every
input must end in a documented exit status (docs/exit-codes.md) with a message
naming the file, no sanitizer report, no crash, no hang, and no output file left
behind when it fails."""
import os
import random
import shutil
import subprocess

import pytest

import util

HELLO_C = '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n'


def analyze(target, tmp_path, *extra, cwd=None, timeout=120):
    """analyze TARGET --json OUT; returns (proc, model or None). A failed run must not
    leave OUT (or a temp file next to it) behind."""
    out = tmp_path / "out.json"
    if out.exists():
        out.unlink()
    before = set(os.listdir(tmp_path))
    proc = util.run_asyncbpf("analyze", "-q", target, "--json", out, *extra, cwd=cwd, timeout=timeout)
    if proc.returncode != util.EXIT_OK:
        assert not out.exists(), f"exit {proc.returncode} but {out} was written"
        assert set(os.listdir(tmp_path)) <= before, f"files left behind: {set(os.listdir(tmp_path)) - before}"
        return proc, None
    doc = util.load_json(out)
    errors = util.schema_errors(doc)
    assert not errors, "\n".join(errors[:20])
    return proc, doc


def copy_fixture(tmp_path, profile="debug", crate="handwritten", name=None):
    src = util.fixture_binary(profile, crate)
    util.require_file(src, "the fixture", "run 'make fixtures'")
    dst = tmp_path / (name or f"{crate}-{profile}")
    shutil.copyfile(src, dst)
    os.chmod(dst, 0o755)
    return dst


def assert_fails(proc, status, path):
    assert proc.returncode == status, util.describe(proc)
    assert str(path) in proc.stderr, f"the message does not name {path}:\n{proc.stderr}"


# ---------------------------------------------------------------------------
# Not a usable file
# ---------------------------------------------------------------------------


def test_nonexistent_file_exits_3(tmp_path):
    path = tmp_path / "does-not-exist"
    proc, _ = analyze(path, tmp_path)
    assert_fails(proc, util.EXIT_NO_INPUT, path)


def test_directory_exits_5(tmp_path):
    path = tmp_path / "a-directory"
    path.mkdir()
    proc, _ = analyze(path, tmp_path)
    assert_fails(proc, util.EXIT_BAD_INPUT, path)


def test_empty_file_exits_5(tmp_path):
    path = tmp_path / "empty"
    path.write_bytes(b"")
    proc, _ = analyze(path, tmp_path)
    assert_fails(proc, util.EXIT_BAD_INPUT, path)


@pytest.mark.parametrize("size", ["short", "long"])
def test_text_file_exits_5(size, tmp_path):
    path = tmp_path / "notes.txt"
    text = "not an ELF file\n" if size == "short" else "This is a text file, not an ELF binary.\n" * 200
    path.write_text(text)
    proc, _ = analyze(path, tmp_path)
    assert_fails(proc, util.EXIT_BAD_INPUT, path)


@pytest.mark.parametrize("cut", ["64", "4096", "half"])
def test_truncated_fixture(cut, tmp_path):
    """A truncated binary is refused (5) or analyzed with warnings (0); never a crash."""
    src = util.fixture_binary("debug", "handwritten")
    util.require_file(src, "the fixture", "run 'make fixtures'")
    data = src.read_bytes()
    n = len(data) // 2 if cut == "half" else int(cut)
    path = tmp_path / f"truncated-{cut}"
    path.write_bytes(data[:n])
    proc, doc = analyze(path, tmp_path)
    assert proc.returncode in (util.EXIT_OK, util.EXIT_BAD_INPUT), util.describe(proc)
    assert str(path) in proc.stderr, f"no message names {path}:\n{proc.stderr}"
    if proc.returncode == util.EXIT_OK:
        assert doc["warnings"], "a truncated binary analyzed without a single warning"


def corrupted_variants():
    """20 deterministic corruptions of the debug handwritten fixture's .debug_info and
    .debug_abbrev (sections found with readelf -S): (id, section, seed, bytes)."""
    return [(f"{sec[7:]}-{seed}", sec, seed, n)
            for seed, (sec, n) in enumerate([(s, n) for s in (".debug_info", ".debug_abbrev")
                                             for n in (1, 2, 4, 8, 16, 32, 64, 128, 256, 1024)])]


CORRUPTIONS = corrupted_variants()


@pytest.mark.parametrize("sec,seed,nbytes", [c[1:] for c in CORRUPTIONS], ids=[c[0] for c in CORRUPTIONS])
def test_corrupted_dwarf(sec, seed, nbytes, tmp_path):
    src = util.fixture_binary("debug", "handwritten")
    util.require_file(src, "the fixture", "run 'make fixtures'")
    offset, size = util.section_headers(str(src))[sec]
    data = bytearray(src.read_bytes())
    rng = random.Random(1000 + seed)
    if seed % 3 == 0:  # a run of garbage
        start = offset + rng.randrange(size - nbytes)
        data[start:start + nbytes] = bytes(rng.randrange(256) for _ in range(nbytes))
    else:  # scattered bytes
        for _ in range(nbytes):
            data[offset + rng.randrange(size)] = rng.randrange(256)
    path = tmp_path / f"corrupt-{sec[1:]}-{seed}"
    path.write_bytes(bytes(data))
    try:
        proc, doc = analyze(path, tmp_path, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"analyze did not finish within 30 s on {path.name}")
    assert proc.returncode in (util.EXIT_OK, util.EXIT_BAD_INPUT), util.describe(proc)
    if doc is not None:
        assert doc["stats"]["cu_errors"] == 0 or doc["warnings"], "skipped compile units without a warning"


# ---------------------------------------------------------------------------
# Binaries that are not what asyncbpf is for
# ---------------------------------------------------------------------------


def build_32bit_elf(tmp_path):
    """A 32-bit ELF executable: gcc -m32 if multilib works, else as --32 + ld -m elf_i386."""
    src = tmp_path / "hello.c"
    src.write_text(HELLO_C)
    out = tmp_path / "hello32"
    if util.have_tool("gcc"):
        r = subprocess.run(["gcc", "-m32", "-g", str(src), "-o", str(out)], capture_output=True, text=True)
        if r.returncode == 0:
            return out
    if util.have_tool("as") and util.have_tool("ld"):
        asm = tmp_path / "start.s"
        asm.write_text(".globl _start\n_start:\n  movl $1, %eax\n  xorl %ebx, %ebx\n  int $0x80\n")
        obj = tmp_path / "start.o"
        r1 = subprocess.run(["as", "--32", str(asm), "-o", str(obj)], capture_output=True, text=True)
        r2 = r1.returncode == 0 and subprocess.run(["ld", "-m", "elf_i386", str(obj), "-o", str(out)],
                                                   capture_output=True, text=True)
        if r1.returncode == 0 and r2 and r2.returncode == 0:
            return out
    pytest.skip("cannot build a 32-bit ELF here: gcc -m32 (multilib) and as --32/ld -m elf_i386 both failed")


def test_32bit_elf_exits_5(tmp_path):
    path = build_32bit_elf(tmp_path)
    assert "ELF32" in util.tool("readelf", "-h", path)
    proc, _ = analyze(path, tmp_path)
    assert_fails(proc, util.EXIT_BAD_INPUT, path)
    assert "32-bit" in proc.stderr, proc.stderr


def test_c_binary_has_no_futures(tmp_path):
    util.need_tool("gcc")
    src = tmp_path / "hello.c"
    src.write_text(HELLO_C)
    path = tmp_path / "hello"
    subprocess.run(["gcc", "-g", str(src), "-o", str(path)], check=True)
    proc, doc = analyze(path, tmp_path)
    assert proc.returncode == util.EXIT_OK, util.describe(proc)
    assert doc["binary"]["has_dwarf"]
    assert (doc["futures"], doc["polls"], doc["edges"]) == ([], [], [])
    listed = util.run_asyncbpf("list", path)
    assert listed.returncode == util.EXIT_NO_MATCH, util.describe(listed)


def handwritten_poll_symbols(path):
    """(address, Self type) of every `<T as core::future::future::Future>::poll` in nm."""
    syms = util.nm_symbols(str(path))
    names = tuple(syms)
    out = set()
    for raw, d in zip(names, util.demangled(names)):
        if d.startswith("<") and d.endswith(util.FUTURE_POLL_SUFFIX):
            for addr in syms[raw]:
                out.add((addr, d[1:-len(util.FUTURE_POLL_SUFFIX)]))
    return out


@pytest.mark.parametrize("profile", util.PROFILES)
def test_stripped_debuginfo_falls_back_to_symbols(profile, tmp_path):
    path = copy_fixture(tmp_path, profile, name="stripped-g")
    subprocess.run(["strip", "-g", str(path)], check=True)
    proc, doc = analyze(path, tmp_path)
    assert proc.returncode == util.EXIT_OK, util.describe(proc)
    assert "no DWARF" in proc.stderr and str(path) in proc.stderr, proc.stderr
    assert any("no DWARF" in w for w in doc["warnings"])
    b = doc["binary"]
    assert (b["has_dwarf"], b["symbols_only"], b["debuginfo_path"], b["debug_info_size"]) == (False, True, None, 0)
    assert not doc["edges"] and all(not f["states"] for f in doc["futures"])
    want = handwritten_poll_symbols(path)
    assert any("handwritten::" in t for _, t in want), "the fixture lost its hand-written futures"
    polls = {p["addr"]: p for p in doc["polls"]}
    missing = []
    for addr, self_type in sorted(want):
        p = polls.get(addr)
        f = doc["futures"][p["future"]] if p and p["future"] is not None else None
        if f is None or f["kind"] != "handwritten" or util.strip_generics(f["path"]) != util.strip_generics(self_type):
            missing.append(f"{addr:#x} <{self_type} as Future>::poll: {f and f['path']}")
    assert not missing, "hand-written polls nm shows but the model lacks:\n" + "\n".join(missing)


def test_fully_stripped_binary_has_no_polls(tmp_path):
    path = copy_fixture(tmp_path, name="stripped-all")
    subprocess.run(["strip", "--strip-all", str(path)], check=True)
    proc, doc = analyze(path, tmp_path)
    assert proc.returncode == util.EXIT_OK, util.describe(proc)
    assert doc["warnings"] and str(path) in proc.stderr, proc.stderr
    assert (doc["polls"], doc["edges"]) == ([], [])
    assert doc["binary"]["symbols_only"] and not doc["binary"]["has_dwarf"]


# ---------------------------------------------------------------------------
# Separate debuginfo
# ---------------------------------------------------------------------------


def split_debuginfo(binary, debug_name):
    """objcopy --only-keep-debug + strip -g + --add-gnu-debuglink, in binary's directory."""
    debug = binary.parent / debug_name
    subprocess.run(["objcopy", "--only-keep-debug", str(binary), str(debug)], check=True)
    subprocess.run(["strip", "-g", str(binary)], check=True)
    subprocess.run(["objcopy", f"--add-gnu-debuglink={debug}", str(binary)], check=True, cwd=binary.parent)
    return debug


def model_summary(doc):
    fs = doc["futures"]
    futures = sorted((f["path"], f["kind"], f["file"], f["line"], f["root"], len(f["states"])) for f in fs)
    edges = sorted((fs[e["from"]]["path"], e["await_index"], fs[e["to"]]["path"] if e["to"] is not None else None,
                    e["line"]) for e in doc["edges"])
    polls = sorted((p["name"] or "", p["addr"], p["file_offset"], p["inlined_only"]) for p in doc["polls"])
    return futures, edges, polls


@pytest.mark.parametrize("crate", ["handwritten", "tokio_ct"])
def test_separate_debuginfo_gives_the_same_model(crate, tmp_path, analyses):
    util.need_tool("objcopy")
    d = tmp_path / "sep"
    d.mkdir()
    path = copy_fixture(d, "debug", crate, name=crate)
    debug = split_debuginfo(path, f"{crate}.debug")
    assert ".debug_info" not in util.section_headers(str(path))
    proc, doc = analyze(path, tmp_path)
    assert proc.returncode == util.EXIT_OK, util.describe(proc)
    assert not doc["warnings"], doc["warnings"]
    assert doc["binary"]["has_dwarf"] and not doc["binary"]["symbols_only"]
    assert os.path.realpath(doc["binary"]["debuginfo_path"]) == os.path.realpath(debug)
    whole = analyses.get("debug", crate).model.doc
    mine, theirs = model_summary(doc), model_summary(whole)
    assert mine[0] == theirs[0], "futures differ"
    assert mine[1] == theirs[1], "edges differ"
    assert mine[2] == theirs[2], "polls differ"


def test_mismatched_debuginfo_is_reported(tmp_path):
    """The release binary's debuglink names a file that holds the debug build's DWARF."""
    util.need_tool("objcopy")
    d = tmp_path / "mismatch"
    d.mkdir()
    path = copy_fixture(d, "release", "handwritten", name="app")
    debug = split_debuginfo(path, "app.debug")
    other = copy_fixture(tmp_path, "debug", "handwritten", name="other")
    subprocess.run(["objcopy", "--only-keep-debug", str(other), str(debug)], check=True)  # replace it
    proc, doc = analyze(path, tmp_path)
    assert proc.returncode == util.EXIT_OK, util.describe(proc)
    assert "mismatched" in proc.stderr and str(path) in proc.stderr, proc.stderr
    assert any("mismatched" in w for w in doc["warnings"])
    assert not doc["binary"]["has_dwarf"] and doc["binary"]["debuginfo_path"] is None
    # the fallback still reads the binary's own symbols
    assert {p["addr"] for p in doc["polls"]} >= {a for a, t in handwritten_poll_symbols(path) if "handwritten::" in t}


# ---------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------


def free_pid():
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    for pid in (pid_max, 4194304, 99999999):  # PIDs are below pid_max
        if not os.path.exists(f"/proc/{pid}"):
            return pid
    pytest.fail("no free PID found")


def test_nonexistent_pid_exits_3(tmp_path):
    pid = free_pid()
    proc, _ = analyze_pid(pid, tmp_path)
    assert proc.returncode == util.EXIT_NO_INPUT, util.describe(proc)
    assert str(pid) in proc.stderr


def analyze_pid(pid, tmp_path, prefix=()):
    out = tmp_path / "out.json"
    proc = subprocess.run([*prefix, str(util.ASYNCBPF), "analyze", "-q", "-p", str(pid), "--json", str(out)],
                          capture_output=True, text=True, errors="replace", timeout=60, env=util.san_env())
    util.assert_no_sanitizer_report(proc)
    if proc.returncode:
        assert not out.exists()
    return proc, out


@pytest.mark.parametrize("arg", ["abc", "0", "-5", "12x", ""])
def test_bad_pid_is_a_usage_error(arg, tmp_path):
    proc = util.run_asyncbpf("analyze", "-p", arg, "--json", tmp_path / "out.json")
    assert proc.returncode == util.EXIT_USAGE, util.describe(proc)
    assert not (tmp_path / "out.json").exists()


def test_pid_1_as_unprivileged_user_exits_4(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to drop to an unprivileged user (setpriv)")
    util.need_tool("setpriv")
    os.chmod(tmp_path, 0o777)
    prefix = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
    proc, out = analyze_pid(1, tmp_path, prefix)
    assert proc.returncode == util.EXIT_NO_PERMISSION, util.describe(proc)
    assert "1" in proc.stderr and not out.exists()


# ---------------------------------------------------------------------------
# Output files
# ---------------------------------------------------------------------------


def fixture():
    path = util.fixture_binary("debug", "handwritten")
    util.require_file(path, "the fixture", "run 'make fixtures'")
    return path


@pytest.mark.parametrize("option", ["--json", "--dot"])
def test_output_in_missing_directory_exits_8(option, tmp_path):
    out = tmp_path / "no-such-dir" / "out"
    proc = util.run_asyncbpf("analyze", "-q", fixture(), option, out)
    assert proc.returncode == util.EXIT_OUTPUT, util.describe(proc)
    assert str(out) in proc.stderr, proc.stderr
    assert not (tmp_path / "no-such-dir").exists() and os.listdir(tmp_path) == []


def test_whitelist_output_in_missing_directory_exits_8(tmp_path):
    out = tmp_path / "no-such-dir" / "wl.json"
    proc = util.run_asyncbpf("list", fixture(), "-o", out)
    assert proc.returncode == util.EXIT_OUTPUT, util.describe(proc)
    assert str(out) in proc.stderr, proc.stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("option", ["--json", "--dot"])
def test_output_to_symlink_is_refused(option, tmp_path):
    target = tmp_path / "precious"
    target.write_text("do not overwrite\n")
    link = tmp_path / "out"
    link.symlink_to(target)
    proc = util.run_asyncbpf("analyze", "-q", fixture(), option, link)
    assert proc.returncode == util.EXIT_OUTPUT, util.describe(proc)
    assert str(link) in proc.stderr and "symlink" in proc.stderr, proc.stderr
    assert target.read_text() == "do not overwrite\n" and os.path.islink(link)
    assert sorted(os.listdir(tmp_path)) == ["out", "precious"], "a temp file was left behind"


def test_output_to_directory_is_refused(tmp_path):
    out = tmp_path / "out.json"
    out.mkdir()
    proc = util.run_asyncbpf("analyze", "-q", fixture(), "--json", out)
    assert proc.returncode == util.EXIT_OUTPUT, util.describe(proc)
    assert os.listdir(tmp_path) == ["out.json"] and os.listdir(out) == []


def test_output_replaces_a_regular_file_atomically(tmp_path):
    out = tmp_path / "out.json"
    out.write_text("old\n")
    proc = util.run_asyncbpf("analyze", "-q", fixture(), "--json", out)
    assert proc.returncode == util.EXIT_OK, util.describe(proc)
    assert util.load_json(out)["schema"] == "asyncbpf-model/1"
    assert os.listdir(tmp_path) == ["out.json"]
