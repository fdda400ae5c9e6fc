# SPDX-License-Identifier: GPL-2.0
"""asyncbpf profile, end to end as root (docs/profile.md).

Ground truth is the fixtures' own source: in `hot` mode each CPU-burning fixture
spins in one async fn (`hot_leaf`), awaited by `middle_hot`, awaited by the task
`hot_task` (their `// AWAIT` markers say so, and the test reads them). So nearly
every on-CPU sample must project onto [runtime] → hot_task → middle_hot → hot_leaf,
in debug builds (frame pointers, every poll out of line) and in release builds (no
frame pointers, middle_hot and hot_leaf only inlined: DWARF CFI and the inline
chain must carry it). The folded output is parsed here, not trusted.
"""
import json
import os
import re
import signal
import subprocess
import time

import pytest

import util
from profile_lib import HOT_CHAIN, hot_chain_from_source, hot_command, offcpu_counts, source_of

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="asyncbpf profile loads BPF programs: run the suite as root")

MIN_SHARE = 0.80
# the runtimes whose fixtures have a hot mode (tests/fixtures/*/src/main.rs)
HOT_CRATES = ["handwritten", "tokio_ct", "async_std_app", "smol_app"]


@pytest.fixture(scope="module")
def sampling():
    """Skip (saying why) when this kernel cannot sample, per `asyncbpf check`."""
    if os.geteuid() != 0:
        pytest.skip("asyncbpf profile loads BPF programs: run the suite as root")
    util.require_file(util.ASYNCBPF, "the sanitizer build", "run 'make san'")
    proc = util.run_asyncbpf("check", "--json")
    report = {f["name"]: f for f in json.loads(proc.stdout)["features"]}
    for name in ("perf_event", "ringbuf", "task_storage"):  # check_parts.c: "profile: samples"
        if report[name]["status"] != "ok":
            pytest.skip(f"{name} unavailable, asyncbpf profile cannot sample: {report[name]['detail']}")
    return report


def parse_folded(path):
    """[(frames, weight)]; every line must be 'f;f;f N'."""
    stacks = []
    text = path.read_text(encoding="utf-8")
    for line in text.splitlines():
        m = re.fullmatch(r"(.+) (\d+)", line)
        assert m, f"{path}: not a folded line: {line!r}"
        frames = m.group(1).split(";")
        assert all(frames), f"{path}: empty frame in {line!r}"
        stacks.append((frames, int(m.group(2))))
    return stacks


def is_fn(frame, crate, fn):
    """A future frame of `crate`'s async fn `fn` (maybe in a module of the crate)."""
    return frame == f"{crate}::{fn}" or (frame.startswith(f"{crate}::") and frame.endswith(f"::{fn}"))


def share_under_chain(stacks, crate, chain):
    total = sum(w for _, w in stacks)
    under = 0
    for frames, w in stacks:
        futures = frames[1:1 + len(chain)]
        if frames[0] == "[runtime]" and len(futures) == len(chain) and all(
                is_fn(f, crate, fn) for f, fn in zip(futures, chain)):
            under += w
    return under, total


def describe_stacks(stacks, top=12):
    rows = sorted(stacks, key=lambda s: -s[1])[:top]
    return "\n".join(f"{w:6d}  {';'.join(f)}" for f, w in rows)


def target_cpu_samples(proc):
    """Samples the target's own CPU time accounts for: asyncbpf prints the CPU time
    the kernel charged the target while profiling (/proc/PID/stat) and the rate.
    Thresholds scale with it, not with wall time: a busy machine gives the target
    less CPU, and then fewer samples are right."""
    m = re.search(r"at (\d+) Hz, [\d.]+ s \(target CPU time ([\d.]+) s\): (\d+) samples", proc.stdout + proc.stderr)
    assert m, util.describe(proc)
    return float(m.group(2)) * int(m.group(1)), int(m.group(3))


def check_hot_profile(stacks, crate, chain, proc):
    under, total = share_under_chain(stacks, crate, chain)
    expected, taken = target_cpu_samples(proc)
    # every sample of the target is in the folded stacks; at least half of what its
    # CPU time accounts for was taken (cpu-clock ticks, 10 ms CPU-time granularity)
    assert total == taken, (total, taken)
    assert total >= max(1, 0.5 * expected), f"{total} samples for {expected:.0f} expected:\n{util.describe(proc)}"
    assert under >= MIN_SHARE * total, (
        f"{crate}: {under}/{total} = {under / total:.0%} of on-CPU samples under "
        f"[runtime];{';'.join(chain)} (want >= {MIN_SHARE:.0%}):\n{describe_stacks(stacks)}\n{util.describe(proc)}")


@needs_root
@pytest.mark.parametrize("profile", util.PROFILES)
@pytest.mark.parametrize("crate", HOT_CRATES)
def test_launch_hot_mode_is_under_its_async_chain(sampling, tmp_path, profile, crate):
    chain = hot_chain_from_source(crate)
    folded = tmp_path / "hot.folded"
    proc = util.run_asyncbpf("profile", "-F", "199", "--folded", folded, "-o", tmp_path / "hot.svg", "--",
                             *hot_command(profile, crate, 2000), timeout=180)
    # launch mode answers with the command's status; the program printed its own line
    assert proc.returncode == 0, util.describe(proc)
    assert '"mode":"hot"' in proc.stdout, util.describe(proc)
    check_hot_profile(parse_folded(folded), crate, chain, proc)
    # the summary counts what was sampled and lost
    assert re.search(r"\d+ samples, \d+ dropped", proc.stderr), util.describe(proc)


@needs_root
@pytest.mark.parametrize("profile", util.PROFILES)
@pytest.mark.parametrize("crate", HOT_CRATES)
def test_pid_mode_hot(sampling, tmp_path, profile, crate):
    """`sudo asyncbpf profile -p PID` on each runtime's fixture: its flame graph's
    frames are the futures of the spinning chain."""
    chain = hot_chain_from_source(crate)
    target = subprocess.Popen(hot_command(profile, crate, 4000), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.3)
        folded = tmp_path / "p.folded"
        proc = util.run_asyncbpf("profile", "-p", target.pid, "--duration", "2", "--folded", folded,
                                 "-o", tmp_path / "p.svg", timeout=120)
        assert proc.returncode == 0, util.describe(proc)
        check_hot_profile(parse_folded(folded), crate, chain, proc)
        # -p mode prints the top async stacks on stdout, hot_leaf on top
        top = [line for line in proc.stdout.splitlines() if "%" in line]
        assert top and "hot_leaf" in top[0], util.describe(proc)
    finally:
        out, err = target.communicate(timeout=60)
    assert target.returncode == 0, err
    assert '"mode":"hot"' in out


@needs_root
def test_target_exit_ends_the_profile(sampling, tmp_path):
    """-p mode without --duration: the target's exit ends profiling (pidfd)."""
    # long enough that the sanitizer build has attached well before it ends
    target = subprocess.Popen(hot_command("debug", "handwritten", 3000), stdout=subprocess.DEVNULL)
    time.sleep(0.2)
    start = time.monotonic()
    proc = util.run_asyncbpf("profile", "-p", target.pid, "--folded", tmp_path / "e.folded",
                             "-o", tmp_path / "e.svg", timeout=120)
    target.wait(timeout=30)
    assert proc.returncode == 0, util.describe(proc)
    assert time.monotonic() - start < 60
    assert "the target exited" in proc.stderr, util.describe(proc)
    assert parse_folded(tmp_path / "e.folded"), util.describe(proc)


def link_ids_of(pid):
    ids = set()
    fd_dir = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fd_dir):
        try:
            with open(os.path.join(fd_dir, fd)) as f:
                m = re.search(r"^link_id:\s*(\d+)", f.read(), re.M)
        except OSError:
            continue
        if m:
            ids.add(int(m.group(1)))
    return ids


def live_link_ids():
    util.need_tool("bpftool")
    out = subprocess.run(["bpftool", "-j", "link", "show"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return {link["id"] for link in json.loads(out.stdout or "[]")}


def perf_event_fds_of(pid):
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[perf_event]":
                n += 1
        except OSError:
            pass
    return n


@needs_root
def test_sigkill_leaves_no_link_and_no_output(sampling, tmp_path):
    target = subprocess.Popen(hot_command("debug", "handwritten", 8000), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    prof = subprocess.Popen([str(util.ASYNCBPF), "profile", "-p", str(target.pid), "--folded",
                             str(tmp_path / "k.folded"), "-o", str(tmp_path / "k.svg")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=util.san_env())
    watch = util.StderrWatch(prof)
    try:
        assert watch.wait("profile: sampling", timeout=60), watch.text
        ids = link_ids_of(prof.pid)
        assert ids, "the profiler held no BPF link once sampling"
        assert ids <= live_link_ids()
        assert perf_event_fds_of(prof.pid) > 0
        time.sleep(0.5)
        prof.send_signal(signal.SIGKILL)
        prof.wait(timeout=30)
        time.sleep(0.3)
        assert not (ids & live_link_ids()), f"links {ids & live_link_ids()} outlived the profiler"
    finally:
        if prof.poll() is None:
            prof.kill()
            prof.wait()
        target.kill()
        target.communicate(timeout=30)
    assert not (tmp_path / "k.folded").exists()
    assert not (tmp_path / "k.svg").exists()


@needs_root
def test_sigint_writes_outputs(sampling, tmp_path):
    target = subprocess.Popen(hot_command("debug", "handwritten", 8000), stdout=subprocess.DEVNULL)
    prof = subprocess.Popen([str(util.ASYNCBPF), "profile", "-p", str(target.pid), "--folded",
                             str(tmp_path / "i.folded"), "-o", str(tmp_path / "i.svg")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=util.san_env())
    try:
        watch = util.StderrWatch(prof)
        assert watch.wait("profile: sampling", timeout=60), watch.text
        time.sleep(1.0)
        prof.send_signal(signal.SIGINT)
        out = prof.stdout.read()  # to its end: the profiler exited
        prof.wait(timeout=60)
        err = watch.finish()
    finally:
        if prof.poll() is None:
            prof.kill()
            prof.wait()
        target.kill()
        target.wait()
    assert prof.returncode == 0, err
    assert "hot_leaf" in out
    assert parse_folded(tmp_path / "i.folded")


@needs_root
def test_nonexistent_pid(sampling):
    pid = 4194304 + 7  # above pid_max's limit: never a process
    proc = util.run_asyncbpf("profile", "-p", pid, "--duration", "1")
    assert proc.returncode == util.EXIT_NO_INPUT, util.describe(proc)
    assert "no such process" in proc.stderr


@needs_root
def test_missing_command(sampling):
    proc = util.run_asyncbpf("profile", "--", "/nonexistent/asyncbpf-test-command")
    assert proc.returncode == util.EXIT_NO_INPUT, util.describe(proc)


@needs_root
def test_unwritable_output_fails_before_sampling(sampling, tmp_path):
    proc = util.run_asyncbpf("profile", "--folded", "/nonexistent-dir/x.folded", "-o", tmp_path / "x.svg",
                             "--", "/bin/true")
    assert proc.returncode == util.EXIT_OUTPUT, util.describe(proc)
    assert not (tmp_path / "x.svg").exists()


def test_not_root_is_refused(tmp_path):
    util.require_file(util.ASYNCBPF, "the sanitizer build", "run 'make san'")
    if os.geteuid() == 0:
        if not util.have_tool("setpriv"):
            pytest.skip("setpriv is not installed")
        prefix = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--inh-caps=-all"]
    else:
        prefix = []
    proc = subprocess.run(prefix + [str(util.ASYNCBPF), "profile", "-p", str(os.getpid())], capture_output=True,
                          text=True, timeout=60, env=util.san_env(), cwd=tmp_path)
    util.assert_no_sanitizer_report(proc)
    assert proc.returncode == util.EXIT_NO_PERMISSION, util.describe(proc)
    assert "needs root" in proc.stderr and "CAP_BPF" in proc.stderr, proc.stderr


def test_usage_errors():
    util.require_file(util.ASYNCBPF, "the sanitizer build", "run 'make san'")
    for args in (["profile"], ["profile", "-p", "1", "--", "true"], ["profile", "-p", "abc"],
                 ["profile", "-p", "1", "-F", "0"], ["profile", "-p", "1", "-F", "100000"],
                 ["profile", "-p", "1", "--duration", "-1"], ["profile", "-p", "1", "--stack-size", "1M"],
                 ["profile", "-p", "1", "--stack-size", "12x"], ["profile", "--"],
                 ["profile", "-p", "1", "stray"], ["profile", "--bogus"]):
        proc = util.run_asyncbpf(*args)
        assert proc.returncode == util.EXIT_USAGE, util.describe(proc)
    proc = util.run_asyncbpf("profile", "--help")
    assert proc.returncode == 0 and "--folded" in proc.stdout


@needs_root
def test_off_cpu_time_is_kept_apart(sampling, tmp_path):
    """tokio_ct's main task sleeps 3 ms in load and 2 ms in store for each of its 10
    keys, one after another (its source): the thread is parked for at least ~50 ms,
    and that time must show up off-CPU, in nanoseconds, not among on-CPU samples."""
    if sampling["tp_btf"]["status"] != "ok":
        pytest.skip(f"tp_btf unavailable, no off-CPU profiling: {sampling['tp_btf']['detail']}")
    src = source_of("tokio_ct")
    assert "sleep(Duration::from_millis(3))" in src and "sleep(Duration::from_millis(2))" in src
    on, off = tmp_path / "on.folded", tmp_path / "off.folded"
    start = time.monotonic()
    proc = util.run_asyncbpf("profile", "--off-cpu", "--folded", on, "--folded-offcpu", off,
                             "-o", tmp_path / "o.svg", "--", util.fixture_binary("debug", "tokio_ct"), timeout=120)
    wall = time.monotonic() - start
    assert proc.returncode == 0, util.describe(proc)
    blocked_ns = sum(w for _, w in parse_folded(off))
    assert blocked_ns >= 25_000_000, f"only {blocked_ns} ns blocked:\n{util.describe(proc)}"
    assert blocked_ns <= 2 * wall * 1e9 * os.cpu_count(), blocked_ns
    # on-CPU weights are sample counts: at 99 Hz a sub-second run has a handful
    on_samples = sum(w for _, w in parse_folded(on)) if on.stat().st_size else 0
    assert on_samples <= 99 * wall * os.cpu_count() + 5, on_samples
    assert "Top async stacks, off-CPU" in proc.stderr


@needs_root
def test_exporters_write_parsable_files_or_say_they_are_missing(sampling, tmp_path):
    """The SVG, pprof and Perfetto writers come from profile_export.h; a build without
    one says so and leaves no file. Written files must parse: the SVG as XML, pprof
    and Perfetto as protobuf (`protoc --decode_raw`)."""
    paths = {"SVG flame graph": tmp_path / "p.svg", "pprof profile": tmp_path / "p.pb",
             "Perfetto trace": tmp_path / "p.pftrace"}
    proc = util.run_asyncbpf("profile", "-o", paths["SVG flame graph"], "--pprof", paths["pprof profile"],
                             "--perfetto", paths["Perfetto trace"], "--",
                             *hot_command("release", "handwritten", 1000), timeout=120)
    assert proc.returncode == 0, util.describe(proc)
    for what, path in paths.items():
        if f"built without the {what} writer" in proc.stderr:
            assert not path.exists(), f"{path} written although its writer is missing"
            continue
        assert path.exists() and path.stat().st_size > 0, f"{what} {path} missing:\n{util.describe(proc)}"
        if what == "SVG flame graph":
            import xml.etree.ElementTree as ET
            root = ET.parse(path).getroot()
            assert root.tag.endswith("svg"), root.tag
            assert "hot_leaf" in path.read_text(encoding="utf-8")
        else:
            util.need_tool("protoc")
            dec = subprocess.run(["protoc", "--decode_raw"], input=path.read_bytes(), capture_output=True, timeout=60)
            assert dec.returncode == 0 and dec.stdout, dec.stderr.decode("utf-8", "replace")
            assert b"hot_leaf" in path.read_bytes()


@needs_root
def test_exec_stops_profiling(sampling, tmp_path):
    """Launch a shell that execs the hot fixture after a moment: the model is the
    shell's, so profiling stops at the exec (like the tracer) and says so; asyncbpf
    still waits for the program and answers with its status."""
    hot = " ".join(hot_command("debug", "handwritten", 1500))
    proc = util.run_asyncbpf("profile", "--folded", tmp_path / "x.folded", "-o", tmp_path / "x.svg", "--",
                             "/bin/sh", "-c", f"i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exec {hot}",
                             timeout=120)
    assert proc.returncode == 0, util.describe(proc)
    assert "executed another program: profiling stopped" in proc.stderr, util.describe(proc)
    assert '"mode":"hot"' in proc.stdout, util.describe(proc)
    assert (tmp_path / "x.folded").exists()


def summary_counts(report):
    """The numbers of the summary line (docs/profile.md, Outputs)."""
    m = re.search(r": (\d+) samples, (\d+) dropped \(ring buffer full\), (\d+) failed to unwind, (\d+) unwound "
                  r"partially.*, (\d+) cut short by the (\d+) KiB stack copy", report)
    assert m, report[-3000:]
    return dict(zip(("samples", "dropped", "failed", "partial", "cut_short", "copy_kib"), map(int, m.groups())))


@needs_root
@pytest.mark.parametrize("profile", util.PROFILES)
def test_cut_short_samples_are_counted_and_shown(sampling, tmp_path, profile):
    """A copy smaller than the stack: every sample whose unwind ran past it is counted
    (summary) and shown under [stack cut short] (not [not in a poll], not [runtime]
    without its task's root), as many in the folded stacks, the SVG's subtitle, pprof's comments and the
    Perfetto totals. hot_leaf is where the fixture spins (its source), so the frames
    found below the cut are mostly hot_leaf's. The same program with the default copy
    has none cut short."""
    hot_chain_from_source("handwritten")
    out = {k: tmp_path / f"c.{k}" for k in ("folded", "svg", "pb", "pftrace")}
    proc = util.run_asyncbpf("profile", "-F", "499", "--stack-size", "1K", "--folded", out["folded"], "-o",
                             out["svg"], "--pprof", out["pb"], "--perfetto", out["pftrace"], "--",
                             *hot_command(profile, "handwritten", 1500), timeout=180)
    assert proc.returncode == 0, util.describe(proc)
    n = summary_counts(proc.stderr)
    stacks = parse_folded(out["folded"])
    cut = [(f, w) for f, w in stacks if f[0] == "[stack cut short]"]
    assert n["copy_kib"] == 1 and n["cut_short"] > 0, util.describe(proc)
    assert sum(w for _, w in cut) == n["cut_short"], (cut[:3], n)
    # the rest are whole: outside any poll (the exit path), or under the task's root
    for f, _ in stacks:
        if f[0] == "[not in a poll]":
            assert not any(is_fn(x, "handwritten", fn) for x in f for fn in HOT_CHAIN), f
        elif f[0] == "[runtime]":
            assert len(f) > 1 and is_fn(f[1], "handwritten", "hot_task"), f
    in_leaf = sum(w for f, w in cut if any(is_fn(x, "handwritten", "hot_leaf") for x in f))
    assert in_leaf >= 0.8 * n["cut_short"], describe_stacks(cut)
    m = re.search(r"([\d.]+)% of the samples were cut short.*the deepest stack seen was (\d+) KiB: --stack-size (\d+)K",
                  proc.stderr)
    assert m and int(m.group(2)) > 1 and int(m.group(3)) >= int(m.group(2)), proc.stderr[-2000:]
    svg = out["svg"].read_text(encoding="utf-8")
    assert f"{n['cut_short']} cut short by the 1 KiB stack copy" in svg
    if out["pb"].exists():
        assert f"cut short: {n['cut_short']} samples (the 1024-byte".encode() in out["pb"].read_bytes()
    if out["pftrace"].exists():
        assert f"{n['cut_short']} cut short".encode() in out["pftrace"].read_bytes()

    whole = util.run_asyncbpf("profile", "-F", "499", "--folded", tmp_path / "w.folded", "-o", tmp_path / "w.svg",
                              "--", *hot_command(profile, "handwritten", 500), timeout=180)
    assert whole.returncode == 0, util.describe(whole)
    assert summary_counts(whole.stderr)["cut_short"] == 0, util.describe(whole)
    assert not any(f[0] == "[stack cut short]" for f, _ in parse_folded(tmp_path / "w.folded"))


@needs_root
@pytest.mark.parametrize("profile", util.PROFILES)
def test_off_cpu_is_summed_in_the_kernel(sampling, tmp_path, profile):
    """`handwritten switch N`: each poll of Switcher writes a byte to an echo thread
    and blocks in `read` until it comes back (its source), so the main thread blocks
    at one place, thousands of times. The kernel sums them: only a few stacks go to
    user space, every block is summed, lost or still going at the end, and the blocks
    the kernel walked land in the very stack libdw found for the first ones (one
    off-CPU stack through Switcher, not two). Its time is within the run the fixture
    measured itself. 100,000 switches: until the consumer's first walk has set libdw
    up (~10 ms) every block sends its stack, 1,000-4,600 of them at a block every
    ~7 us (docs/profile.md, "Off-CPU"); the bounds hold for the run past that start."""
    if sampling["tp_btf"]["status"] != "ok":
        pytest.skip(f"tp_btf unavailable, no off-CPU profiling: {sampling['tp_btf']['detail']}")
    src = source_of("handwritten")
    assert "impl Future for Switcher" in src and "self.rx.read_exact(&mut b)" in src
    binary = util.fixture_binary(profile, "handwritten")
    off = tmp_path / "off.folded"
    proc = util.run_asyncbpf("profile", "--off-cpu", "--folded", tmp_path / "on.folded", "--folded-offcpu", off,
                             "-o", tmp_path / "o.svg", "--", binary, "switch", "100000", timeout=180)
    assert proc.returncode == 0, util.describe(proc)
    run = json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])
    assert run["mode"] == "switch" and run["polls"] == 100000, proc.stdout
    n = offcpu_counts(proc.stderr)
    assert n["blocks"] == n["summed"] + n["lost"] + n["still"], n
    assert n["lost"] <= 0.01 * n["blocks"], n
    assert n["blocks"] >= 1000 and n["sent"] <= 0.1 * n["blocks"] and n["rules"] > 0, n
    stacks = parse_folded(off)
    switcher = [(f, w) for f, w in stacks if any(x == "handwritten::Switcher" for x in f)]
    assert len(switcher) == 1, describe_stacks(stacks)
    frames, ns = switcher[0]
    assert frames[0] == "[runtime]" and frames[1] == "handwritten::Switcher", frames
    assert any("read" in x for x in frames[2:]), frames
    assert 0 < ns <= run["elapsed_ns"], (ns, run)
    assert abs(sum(w for _, w in stacks) / 1e6 - n["summed_ms"]) < 0.01 + 1e-6 * n["summed_ms"], n
