#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Profiler benchmark (`make bench-profile`): asyncbpf profile against perf, side by
# side in one run, on a CPU-bound fixture. See bench/README.md and docs/profile.md.
#
#   bench/profile.sh
#   BENCH_ASYNCBPF=/path/to/an/older/asyncbpf bench/profile.sh   # the same bench, that build
#   BENCH_VS=/path/to/an/older/asyncbpf bench/profile.sh   # also that build at 99 Hz, each round
#   BENCH_BUSY=1 bench/profile.sh   # with a CPU-bound process besides: a busy machine
#   BENCH_PIN= bench/profile.sh     # not pinned (default: the target and the profiler on CPU 1)
#
# Workload: `handwritten loop N` (release build), a fixed amount of CPU work (N polls
# of Trivial::poll, default N = 2e9, ~2 s); it reports its own elapsed time.
# Each round runs, in turn: the workload alone; under `asyncbpf profile -F 99`;
# under `asyncbpf profile -F 999` (both with the default --stack-size, what users
# get); under `asyncbpf profile -F 99 --every 1 --pprof-dir` (continuous profiling:
# a pprof file a second); under `perf record -F 99 --call-graph dwarf -p PID` followed by `perf script`
# (the perf equivalent of what asyncbpf does: sample, copy 8 KiB of stack, unwind
# with libdw, symbolize); with BENCH_VS, another asyncbpf build at 99 Hz (before and
# after side by side); the workload alone again. BENCH_ROUNDS rounds (default 10).
# Measured:
#   slowdown    target elapsed (wall) and user+sys CPU with the profiler against the
#               two runs alone that bracket it in the same round (side by side: a
#               machine whose speed drifts moves both), medians of the rounds'
#               ratios; and the direct costs: the sampling program's own kernel run
#               time (BPF_ENABLE_STATS) and asyncbpf's CPU while the target runs, as
#               shares of the target's run time
#   CPU/sample  asyncbpf's user+sys CPU (whole process, /usr/bin/time, includes
#               the one-off analysis of the binary) and while sampling (its -v stats
#               line), per sample; perf record + perf script user+sys per sample
#   unwinding   samples per CPU-second on one core: walked while sampling, and
#               symbolized + projected after sampling (cold caches), and replaying the
#               run's last 2,000 samples 20 times through unwind.c + the projection
#               (--bench-replay, warm caches)
# With BENCH_BUSY=1 a CPU-bound shell loop runs through all rounds, as other work
# does on a shared machine: then every CPU second the profiler spends while the
# target runs is one the target or that loop waits for. The target and the profiler
# (asyncbpf or perf record, and what they start) run on CPU BENCH_PIN only (taskset;
# default 1, empty: anywhere): every CPU second the profiler spends while the target
# runs is taken from the target, as on a machine with no idle CPU, instead of hidden
# on an idle one.
# Targets: slowdown <= 1% at 99 Hz (wall, median of the rounds' ratios); >= 20,000
# samples/s unwound; asyncbpf CPU <= perf's for the same samples. A missed target is
# reported as MISS (exit 0; BENCH_STRICT=1 makes it exit 1). Exit 2: a tool is
# missing or a run failed. Needs root (BPF, perf). Results also go to
# .output/bench/profile-results.txt.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/.output/bench"
asyncbpf="${BENCH_ASYNCBPF:-$root/.output/asyncbpf}" # another build, for before/after
fixture="$root/tests/fixtures/bin/release/handwritten"
rounds="${BENCH_ROUNDS:-10}"
polls="${BENCH_POLLS:-2000000000}"

die() {
	echo "bench: $*" >&2
	exit 2
}

[ "$(id -u)" = 0 ] || die "needs root (asyncbpf profile and perf record sample every CPU)"
[ -x /usr/bin/time ] || die "/usr/bin/time not found: apt-get install time"
command -v perf >/dev/null || die "perf not found: apt-get install linux-perf"
[ -x "$asyncbpf" ] || die "$asyncbpf missing: make all"
[ -x "$fixture" ] || die "$fixture missing: make fixtures"
mkdir -p "$out"
work="$(mktemp -d "${TMPDIR:-/tmp}/asyncbpf-bench-profile.XXXXXX")"
trap 'rm -rf "$work"' EXIT

export ASYNCBPF="$asyncbpf" FIXTURE="$fixture" ROUNDS="$rounds" POLLS="$polls" WORK="$work" \
	RESULTS="$out/profile-results.txt" STRICT="${BENCH_STRICT:-0}" BUSY="${BENCH_BUSY:-0}" \
	PIN="${BENCH_PIN-1}" VS="${BENCH_VS:-}"
exec /usr/bin/python3 - <<'PY'
import json, os, re, statistics, subprocess, sys, time

A, FIX, WORK = os.environ["ASYNCBPF"], os.environ["FIXTURE"], os.environ["WORK"]
ROUNDS, POLLS = int(os.environ["ROUNDS"]), os.environ["POLLS"]
lines = []


def say(s=""):
    print(s, flush=True)
    lines.append(s)


def elapsed_of(stdout):
    doc = json.loads([l for l in stdout.splitlines() if l.startswith("{")][-1])
    return doc["elapsed_ns"] / 1e9


PIN = ["taskset", "-c", os.environ["PIN"]] if os.environ["PIN"] else []


def timed(cmd, **kw):
    """Run under /usr/bin/time; returns (proc, user+sys seconds)."""
    tf = os.path.join(WORK, "time")
    p = subprocess.run(PIN + ["/usr/bin/time", "-o", tf, "-f", "%U %S"] + cmd, capture_output=True, text=True, **kw)
    u, s = open(tf).read().split()[-2:]
    return p, float(u) + float(s)


def baseline():
    p, cpu = timed([FIX, "loop", POLLS])
    return dict(elapsed=elapsed_of(p.stdout), target_cpu=cpu)


def asyncbpf(hz, build=None):
    p, cpu = timed([build or A, "profile", "-v", "-F", str(hz), "--bench-replay", "20", "--folded",
                    os.path.join(WORK, f"f{hz}.folded"), "-o", os.path.join(WORK, f"f{hz}.svg"), "--", FIX, "loop",
                    POLLS])
    if p.returncode != 0:
        sys.exit(f"bench: asyncbpf profile failed ({p.returncode}):\n{p.stderr[-3000:]}")
    st = dict(re.findall(r"(\w+)=([\d.]+)", [l for l in p.stderr.splitlines() if "profile: stats" in l][-1]))
    warm = float(re.search(r"replay unwound=\d+ cpu_s=[\d.]+ per_s=(\d+)", p.stderr).group(1))
    return dict(elapsed=elapsed_of(p.stdout), cpu=float(st["self_cpu_s"]), phase_cpu=float(st["cpu_s"]),
                samples=int(st["samples"]),
                # before issue 17 a sample was unwound whole while sampling: all of it was the walk
                walk_cpu=float(st.get("walk_cpu_s", st["unwind_cpu_s"])),
                symbolize_cpu=float(st.get("symbolize_cpu_s", 0)), warm=warm,
                target_cpu=float(st["target_cpu_s"]), bpf_ns=int(st["bpf_run_ns"]), bpf_cnt=int(st["bpf_run_cnt"]))


def every():
    """-F 99 --every 1 --pprof-dir: continuous profiling, a pprof file a second."""
    d = os.path.join(WORK, "every")
    p, cpu = timed([A, "profile", "-v", "-F", "99", "--every", "1", "--pprof-dir", d, "--", FIX, "loop", POLLS])
    if p.returncode != 0:
        sys.exit(f"bench: asyncbpf profile --every failed ({p.returncode}):\n{p.stderr[-3000:]}")
    st = dict(re.findall(r"(\w+)=([\d.]+)", [l for l in p.stderr.splitlines() if "profile: stats" in l][-1]))
    files = int(re.search(r"--every: (?:pid \d+: )?(\d+) profiles written", p.stderr).group(1))
    return dict(elapsed=elapsed_of(p.stdout), cpu=float(st["self_cpu_s"]), phase_cpu=float(st["cpu_s"]),
                samples=int(st["samples"]), target_cpu=float(st["target_cpu_s"]), bpf_ns=int(st["bpf_run_ns"]),
                files=files)


def perf():
    data = os.path.join(WORK, "perf.data")
    tt = os.path.join(WORK, "time-target")
    target = subprocess.Popen(PIN + ["/usr/bin/time", "-o", tt, "-f", "%U %S", FIX, "loop", POLLS], stdout=subprocess.PIPE,
                              text=True)
    time.sleep(0.05)  # /usr/bin/time has forked the fixture: profile that
    kids = subprocess.run(["pgrep", "-P", str(target.pid)], capture_output=True, text=True).stdout.split()
    pid = kids[0] if kids else str(target.pid)
    rec = subprocess.Popen(PIN + ["/usr/bin/time", "-o", os.path.join(WORK, "time-rec"), "-f", "%U %S", "perf", "record",
                            "-q", "-F", "99", "--call-graph", "dwarf", "-p", pid, "-o", data],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out, _ = target.communicate()
    rec.wait(timeout=120)
    tu, ts = open(tt).read().split()[-2:]
    u, s = open(os.path.join(WORK, "time-rec")).read().split()[-2:]
    rec_cpu = float(u) + float(s)
    p, script_cpu = timed(["perf", "script", "-i", data])
    samples = sum(1 for l in p.stdout.splitlines() if l and not l[0].isspace())
    return dict(elapsed=elapsed_of(out), cpu=rec_cpu + script_cpu, rec_cpu=rec_cpu, script_cpu=script_cpu,
                samples=samples, target_cpu=float(tu) + float(ts))


VS = os.environ["VS"]
runs = {"base": [], 99: [], 999: [], "every": [], "perf": [], "vs": [], "base2": []}
ratio = {99: [], 999: [], "every": [], "perf": [], **({"vs": []} if VS else {})}
cpu_ratio = {k: [] for k in ratio}
say(f"asyncbpf profile benchmark: {A}, {FIX} loop {POLLS}, {ROUNDS} rounds, {os.cpu_count()} CPUs, "
    f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, load average {os.getloadavg()[0]:.1f}"
    + (", a CPU-bound loop besides (BENCH_BUSY=1)" if os.environ["BUSY"] == "1" else "")
    + (f", the target and the profiler on CPU {os.environ['PIN']} (BENCH_PIN)" if PIN else ""))
hog = subprocess.Popen(["/bin/sh", "-c", "while :; do :; done"]) if os.environ["BUSY"] == "1" else None
for r in range(ROUNDS):
    runs["base"].append(baseline())
    runs[99].append(asyncbpf(99))
    runs[999].append(asyncbpf(999))
    runs["every"].append(every())
    runs["perf"].append(perf())
    if VS:
        runs["vs"].append(asyncbpf(99, VS))
    runs["base2"].append(baseline())
    alone = (runs["base"][-1]["elapsed"] + runs["base2"][-1]["elapsed"]) / 2
    alone_cpu = (runs["base"][-1]["target_cpu"] + runs["base2"][-1]["target_cpu"]) / 2
    for k in ratio:
        ratio[k].append(runs[k][-1]["elapsed"] / alone)
        cpu_ratio[k].append(runs[k][-1]["target_cpu"] / alone_cpu)
    say(f"  round {r + 1}: target wall s: alone {runs['base'][-1]['elapsed']:.3f} and "
        f"{runs['base2'][-1]['elapsed']:.3f}, 99 Hz {runs[99][-1]['elapsed']:.3f} ({(ratio[99][-1] - 1) * 100:+.1f}%), "
        f"999 Hz {runs[999][-1]['elapsed']:.3f} ({(ratio[999][-1] - 1) * 100:+.1f}%), perf "
        f"{runs['perf'][-1]['elapsed']:.3f} ({(ratio['perf'][-1] - 1) * 100:+.1f}%)"
        + (f", vs 99 Hz {runs['vs'][-1]['elapsed']:.3f} ({(ratio['vs'][-1] - 1) * 100:+.1f}%)" if VS else ""))

if hog:
    hog.kill()
    hog.wait()
med = statistics.median
misses = 0


def verdict(ok):
    global misses
    misses += not ok
    return "ok" if ok else "MISS"


say("")
for hz in (99, 999):
    rs = runs[hz]
    el = med(ratio[hz]) - 1
    tcpu = med(cpu_ratio[hz]) - 1
    samples = med(x["samples"] for x in rs)
    cpu = med(x["cpu"] for x in rs)
    phase = med(x["phase_cpu"] for x in rs)
    walk = med([x["samples"] / x["walk_cpu"] for x in rs if x["walk_cpu"] > 0] or [0])
    sym = med([x["samples"] / x["symbolize_cpu"] for x in rs if x["symbolize_cpu"] > 0] or [0])
    warm = med(x["warm"] for x in rs)
    bpf_frac = med(x["bpf_ns"] / 1e9 / x["elapsed"] for x in rs)
    phase_frac = med(x["phase_cpu"] / x["elapsed"] for x in rs)
    bpf_per = med(x["bpf_ns"] / max(x["samples"], 1) for x in rs)
    bpf_call = med(x["bpf_ns"] / max(x["bpf_cnt"], 1) for x in rs)
    say(f"asyncbpf -F {hz}: target wall {el * 100:+.2f}%, target CPU {tcpu * 100:+.2f}% (medians of the rounds' "
        f"ratios to the runs alone around them)" + (f" (target <= 1%: {verdict(el <= 0.01)})" if hz == 99 else ""))
    say(f"  direct cost {(bpf_frac + phase_frac) * 100:.2f}% of the target's run time (what the target pays when no "
        f"CPU is idle)" + (f" (target <= 1%: {verdict(bpf_frac + phase_frac <= 0.01)})" if hz == 99 else "")
        + f": BPF sampler in the kernel {bpf_per / 1000:.1f} us per target sample ({bpf_call / 1000:.2f} us "
        f"per run, every process included) = {bpf_frac * 100:.3f}%, asyncbpf while sampling {phase:.3f} s CPU = "
        f"{phase_frac * 100:.2f}%")
    say(f"  {samples:.0f} samples; asyncbpf CPU {cpu:.3f} s whole process, analysis included "
        f"({cpu / samples * 1e6:.0f} us/sample), {phase:.3f} s while sampling ({phase / samples * 1e6:.0f} us/sample)")
    say(f"  unwinding: {walk:,.0f} samples/s walked while sampling (CFI), {sym:,.0f} samples/s symbolized + projected "
        f"after sampling (cold caches: each distinct walk once, DWARF loaded then); {warm:,.0f} samples/s replaying "
        f"the run's samples with warm caches (one core)"
        + (f" (target >= 20,000: {verdict(warm >= 20000)})" if hz == 999 else ""))
ev = runs["every"]
say(f"asyncbpf -F 99 --every 1 (a pprof file a second, {med(x['files'] for x in ev):.0f} files a run): target wall "
    f"{(med(ratio['every']) - 1) * 100:+.2f}%, target CPU {(med(cpu_ratio['every']) - 1) * 100:+.2f}%; asyncbpf while "
    f"sampling {med(x['phase_cpu'] for x in ev):.3f} s CPU against {med(x['phase_cpu'] for x in runs[99]):.3f} s "
    f"without --every ({med(x['phase_cpu'] / x['elapsed'] for x in ev) * 100:.2f}% of the target's run time)")
pr = runs["perf"]
psamples = med(x["samples"] for x in pr)
pcpu = med(x["cpu"] for x in pr)
say(f"perf record -F 99 --call-graph dwarf + perf script: target wall {(med(ratio['perf']) - 1) * 100:+.2f}%, "
    f"target CPU {(med(cpu_ratio['perf']) - 1) * 100:+.2f}%, {psamples:.0f} samples, CPU {pcpu:.3f} s (record "
    f"{med(x['rec_cpu'] for x in pr):.3f} + script {med(x['script_cpu'] for x in pr):.3f}) = "
    f"{pcpu / psamples * 1e6:.0f} us/sample")
if VS:
    vs = runs["vs"]
    say(f"{VS} -F 99 (BENCH_VS), in the same rounds: target wall {(med(ratio['vs']) - 1) * 100:+.2f}%, target CPU "
        f"{(med(cpu_ratio['vs']) - 1) * 100:+.2f}%; direct cost "
        f"{med(x['bpf_ns'] / 1e9 / x['elapsed'] + x['phase_cpu'] / x['elapsed'] for x in vs) * 100:.2f}%: BPF "
        f"{med(x['bpf_ns'] / max(x['samples'], 1) for x in vs) / 1000:.1f} us per target sample, while sampling "
        f"{med(x['phase_cpu'] for x in vs):.3f} s CPU")
a99 = runs[99]
acpu_ps = med(x["cpu"] / x["samples"] for x in a99)
say(f"asyncbpf vs perf, CPU per sample at 99 Hz (whole processes): {acpu_ps * 1e6:.0f} us vs "
    f"{pcpu / psamples * 1e6:.0f} us (target <=: {verdict(acpu_ps <= pcpu / psamples)})")
with open(os.environ["RESULTS"], "w") as f:
    f.write("\n".join(lines) + "\n")
sys.exit(1 if misses and os.environ["STRICT"] == "1" else 0)
PY
