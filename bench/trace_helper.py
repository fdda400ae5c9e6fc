#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Helpers of bench/trace.sh (JSON in, one line or a table out).

  trace_helper.py poll-site MODEL.json SUBSTRING   linkage name and probe sites of a poll fn
  trace_helper.py symbols MODEL.json CRATE N       linkage names of N out-of-line polls
  trace_helper.py fixture-ns FILE                  ns_per_poll of the fixture's JSON line
  trace_helper.py prog-stats PID [BEST]            run_time_ns/run_cnt of PID's BPF programs
  trace_helper.py strace-spans FILE PMU_TYPE       attach/detach spans of uprobe perf events
  trace_helper.py report SAMPLES.jsonl             the results table
"""
import json
import os
import re
import statistics
import subprocess
import sys


def poll_site(model_path, needle):
    model = json.load(open(model_path))
    for p in model["polls"]:
        if needle in (p.get("name") or "") and not p.get("inlined_only") and p.get("linkage_name"):
            e = p.get("entry") or {}
            exits = ",".join(x["kind"] for x in p.get("exits", []))
            if p.get("leaf"):
                default = "a uretprobe (a leaf)"
            elif p.get("rets_covered"):
                default = f"{sum(1 for x in p.get('fast_exits') or [] if x.get('emulated'))} emulated site(s)"
            else:
                default = "the same ret probes"
            print(json.dumps({"linkage_name": p["linkage_name"], "name": p["name"],
                              "entry_insn": e.get("insn"), "entry_emulated": e.get("emulated"),
                              "entry_at_start": e.get("file_offset") == p["file_offset"],
                              "exits": exits, "default_exits": default}))
            return 0
    print(f"no out-of-line poll fn matching {needle!r} in {model_path}", file=sys.stderr)
    return 1


def symbols(model_path, crate, n):
    model = json.load(open(model_path))
    out = [p["linkage_name"] for p in model["polls"]
           if p.get("crate") == crate and not p.get("inlined_only") and p.get("linkage_name")
           and "{{closure}}" in (p.get("name") or "")]
    print("\n".join(out[: int(n)]))
    return 0


def fixture_ns(path):
    for line in open(path, errors="replace"):
        line = line.strip()
        if line.startswith('{"mode":"loop"') or line.startswith('{"mode":"switch"'):
            print(json.loads(line)["ns_per_poll"])
            return 0
    print(f"no loop result in {path}", file=sys.stderr)
    return 1


def prog_stats(pid, best=None):
    """The BPF programs PID holds (from /proc/PID/fdinfo), with bpftool's counters.
    With BEST (a file): keep in it whichever sample has the most runs in all; a sample
    taken while the tool closes its programs has fewer."""
    ids = set()
    d = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(d):
        try:
            for line in open(os.path.join(d, fd)):
                if line.startswith("prog_id:"):
                    ids.add(int(line.split()[1]))
        except OSError:
            pass
    progs = []
    for i in sorted(ids):
        r = subprocess.run(["bpftool", "prog", "show", "id", str(i), "--json"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            p = json.loads(r.stdout)
            progs.append({k: p.get(k) for k in ("id", "name", "type", "run_time_ns", "run_cnt")})
    if best:
        total = sum(p.get("run_cnt") or 0 for p in progs)
        try:
            old = json.load(open(best))
        except (OSError, ValueError):
            old = []
        if total > sum(p.get("run_cnt") or 0 for p in old):
            with open(best + ".tmp", "w") as f:
                json.dump(progs, f)
            os.replace(best + ".tmp", best)
        return 0
    print(json.dumps(progs))
    return 0


def strace_spans(path, pmu_type):
    """Attach: first uprobe perf_event_open → last ioctl on those fds.
    Detach: first close of those fds → last close. Times from strace -ttt -T."""
    pmu_type = int(pmu_type)
    fds, opened, attach_start, attach_end, detach_start, detach_end = set(), 0, None, None, None, None
    line_re = re.compile(r"^(?:\d+\s+)?(\d+\.\d+)\s+(\w+)\((.*)\)\s+=\s+(-?\d+)[^<]*(?:<([\d.]+)>)?")
    for line in open(path, errors="replace"):
        m = line_re.match(line)
        if not m:
            continue
        t, call, args, ret, dur = float(m[1]), m[2], m[3], int(m[4]), float(m[5] or 0)
        if call == "perf_event_open":
            tm = re.search(r"type=(0x[0-9a-f]+|\d+)", args)
            if tm and int(tm[1], 0) == pmu_type and ret >= 0:
                fds.add(ret)
                opened += 1
                attach_start = t if attach_start is None else attach_start
                attach_end = t + dur
        elif call == "ioctl":
            fd = int(args.split(",")[0])
            if fd in fds and detach_start is None:
                attach_end = t + dur
        elif call == "close":
            fd = int(args.split(",")[0])
            if fd in fds:
                fds.discard(fd)
                detach_start = t if detach_start is None else detach_start
                detach_end = t + dur
    if not opened or detach_start is None:
        print(json.dumps({"error": f"no uprobe perf events (type {pmu_type}) opened and closed in {path}"}))
        return 1
    print(json.dumps({"probes": opened, "attach_ms": (attach_end - attach_start) * 1e3,
                      "detach_ms": (detach_end - detach_start) * 1e3, "left_open": len(fds)}))
    return 0


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt_list(xs, f="{:.1f}"):
    return " ".join(f.format(x) for x in xs)


def per_poll_program(tool, name):
    """Programs whose runs are the probes': asyncbpf also holds on_exec (every exec on
    the machine) and dump_open (once at the end), which are not per poll."""
    return name == "poll_probe" if tool == "asyncbpf" else True


def bpf_per_poll(S, build):
    """BPF run time per poll of each tool in the bpf_stats runs of a build."""
    out = {}
    for s in S:
        if s["part"] == "bpfstats" and s["build"] == build and s.get("polls_seen"):
            out[s["tool"]] = sum(p.get("run_time_ns") or 0 for p in s["progs"]
                                 if per_poll_program(s["tool"], p.get("name"))) / s["polls_seen"]
    return out


def report(path):
    S = [json.loads(l) for l in open(path) if l.strip()]
    out = []
    w = out.append
    target = {k: v for s in S if s["part"] == "targets" for k, v in s.items()}
    misses = 0

    def verdict(ok):
        nonlocal misses
        if not ok:
            misses += 1
        return "PASS" if ok else "MISS"

    # 1. poll rate
    w("1. Poll rate: `handwritten loop N`, ns per poll as the fixture prints it "
      f"(median of {target.get('runs')} alternating runs; untraced with 100 x N polls)")
    w(f"   {'build':8s} {'tool':10s} {'ns/poll':>12s} {'over untraced':>14s}   runs")
    ratios = {}
    for build in ("debug", "release"):
        rows = [s for s in S if s["part"] == "poll" and s["build"] == build]
        if not rows:
            continue
        base = med([s["ns"] for s in rows if s["tool"] == "untraced"])
        m = {}
        for tool in ("untraced", "asyncbpf", "asyncbpf-ret", "floor", "bpftrace"):
            xs = [s["ns"] for s in rows if s["tool"] == tool]
            if not xs:
                w(f"   {build:8s} {tool:10s} {'n/a':>12s}")
                continue
            m[tool] = med(xs)
            over = "" if tool == "untraced" else f"{m[tool] - base:14.0f}"
            w(f"   {build:8s} {tool:10s} {m[tool]:12.1f} {over:>14s}   {fmt_list(xs)}")
        site = next((s for s in S if s["part"] == "site" and s["build"] == build), None)
        if site:
            w(f"   {build}: asyncbpf/floor probe sites: entry `{site['entry_insn']}` "
              f"({'emulated' if site['entry_emulated'] else 'single-stepped'}"
              f"{', the first instruction' if site['entry_at_start'] else ''}), exits: {site['exits']} "
              f"(single-stepped; the floor and --exits ret), default exits: {site.get('default_exits', '?')}; bpftrace: uprobe at the first instruction `{site.get('first_insn')}` + uretprobe")
        if "asyncbpf" in m and "floor" in m:
            # per run: asyncbpf and the floor ran back to back
            by_run = {}
            for s in rows:
                by_run.setdefault(s["run"], {})[s["tool"]] = s["ns"]
            paired = [r["asyncbpf"] / r["floor"] for r in by_run.values() if "asyncbpf" in r and "floor" in r]
            ratio = med(paired)
            w(f"   {build}: asyncbpf / floor, median of per-run ratios = {ratio:.3f} "
              f"(runs: {fmt_list(paired, '{:.2f}')}; ratio of medians {m['asyncbpf'] / m['floor']:.3f}) "
              f"(target <= {target['floor_ratio']})  {verdict(ratio <= target['floor_ratio'])}")
            bpf = bpf_per_poll(S, build)
            if "asyncbpf" in bpf and "floor:floor_empty" in bpf:
                extra = bpf["asyncbpf"] - bpf["floor:floor_empty"]
                w(f"   {build}: asyncbpf / floor estimated from section 2 (the BPF time asyncbpf adds, "
                  f"{extra:.0f} ns/poll, over the floor's {m['floor']:.0f} ns/poll) = {1 + extra / m['floor']:.3f}")
            if "bpftrace" in m:
                w(f"   {build}: asyncbpf / bpftrace (ratio of medians) = {m['asyncbpf'] / m['bpftrace']:.3f}")
        if "asyncbpf" in m and "asyncbpf-ret" in m:
            # issue 10: the cost a poll adds (traced minus untraced), default exits vs `ret`
            cost = {t: m[t] - base for t in ("asyncbpf", "asyncbpf-ret", "bpftrace") if t in m}
            r = cost["asyncbpf"] / cost["asyncbpf-ret"]
            w(f"   {build}: cost per poll, default exits / --exits ret = {cost['asyncbpf']:.0f} / "
              f"{cost['asyncbpf-ret']:.0f} ns = {r:.3f} (target <= 0.3)  "
              f"{verdict(r <= 0.3) if build == 'release' else '(debug: not a target)'}")
            if "bpftrace" in cost:
                r = cost["asyncbpf"] / cost["bpftrace"]
                w(f"   {build}: cost per poll, default exits / bpftrace (uprobe + uretprobe) = "
                  f"{r:.3f} (target <= 1.2)  {verdict(r <= 1.2) if build == 'release' else '(debug: not a target)'}")
    w("")

    # 2. BPF run time
    w("2. BPF run time per program (kernel.bpf_stats_enabled=1; run_time_ns / run_cnt from "
      "bpftool prog show, programs found through the tool's /proc/PID/fdinfo)")
    w(f"   {'build':8s} {'tool':20s} {'program':18s} {'runs':>9s} {'ns/run':>9s}")
    for build in ("debug", "release"):
        per_poll = {}
        for s in [s for s in S if s["part"] == "bpfstats" and s["build"] == build]:
            total = 0
            for p in s["progs"]:
                if not p.get("run_cnt"):
                    continue
                w(f"   {build:8s} {s['tool']:20s} {p['name'][:18]:18s} {p['run_cnt']:9d} "
                  f"{p['run_time_ns'] / p['run_cnt']:9.1f}"
                  + ("" if per_poll_program(s["tool"], p["name"]) else "   (not per poll)"))
                if per_poll_program(s["tool"], p["name"]):
                    total += p["run_time_ns"]
            if s["tool"] == "bpftrace" and sum(1 for p in s["progs"] if p.get("run_cnt")) < 2:
                w(f"   {build}: WARNING: only one of bpftrace's two programs was sampled "
                  "(run too short: raise BENCH_POLLS); its per-poll time is incomplete")
            if s.get("polls_seen") and s["tool"] in ("asyncbpf", "bpftrace", "floor:floor_empty"):
                per_poll[s["tool"]] = total / s["polls_seen"]
        if per_poll:
            w(f"   {build}: BPF time per poll (entry + exit): " + ", ".join(
                f"{k} {v:.0f} ns" for k, v in per_poll.items()))
        if "asyncbpf" in per_poll:
            a = per_poll["asyncbpf"]
            w(f"   {build}: asyncbpf <= {target['bpf_ns']} ns per poll: {a:.0f}  {verdict(a <= target['bpf_ns'])}")
            if "bpftrace" in per_poll:
                r = a / per_poll["bpftrace"]
                w(f"   {build}: asyncbpf / bpftrace = {r:.3f} (target <= {target['bpf_ratio']})  "
                  f"{verdict(r <= target['bpf_ratio'])}")
    w("")

    # 3. consumer
    w("3. Consumer (synthetic BPF producer → ring buffer 16 MiB → trace_consumer → Perfetto file + summary)")
    w(f"   {'run':22s} {'target/s':>10s} {'achieved/s':>11s} {'produced':>9s} {'dropped':>9s} "
      f"{'received':>9s} {'cons ns/rec':>11s} {'prod ns/rec':>11s}")
    best = {}
    cpu = []
    for s in [s for s in S if s["part"] == "consumer" and "target_rate" in s]:
        w(f"   {s['mode']:22s} {s['target_rate']:10.0f} {s['rate']:11.0f} {s['produced']:9d} "
          f"{s['dropped']:9d} {s['received']:9d} {s['consumer_ns_per_record']:11.1f} "
          f"{s['producer_ns_per_record']:11.1f}")
        sustained = s["dropped"] == 0 and s["rate"] >= 0.95 * s["target_rate"] and \
            s["received"] == s["produced"]
        if sustained:
            best[s["mode"]] = max(best.get(s["mode"], 0), s["target_rate"])
        if s["mode"] != "null-consumer" and s["received"] > 10000:
            cpu.append(s["consumer_ns_per_record"])
    c = med(cpu)
    w(f"   consumer CPU per record (median over the real-consumer steps): {c:.0f} ns "
      f"(target <= {target['consumer_ns']})  {verdict(c <= target['consumer_ns'])}")
    for mode, r in best.items():
        w(f"   highest rate sustained (>= 95 % of target, zero drops), {mode}: {r / 1e6:.2f} M records/s")
    size = [s for s in S if s["part"] == "consumer" and "bytes_per_record" in s and s["mode"] != "null-consumer"]
    if size:
        b = med([s["bytes_per_record"] for s in size])
        w(f"   Perfetto bytes per record (the producer's task/child polls, median over runs): {b:.1f} "
          f"(target <= 64)  {verdict(b <= 64)}")
    real = max(best.get(m, 0) for m in ("tracer-crossing", "forced-past-quarter", "never-forced"))
    w(f"   real consumer >= {target['rate'] / 1e6:.0f} M records/s with zero drops: {real / 1e6:.2f} M/s  "
      f"{verdict(real >= target['rate'])}")
    w("")

    # 4. attach / detach
    w("4. Attach and detach (generated binary, default selection)")
    rows = [s for s in S if s["part"] == "attach"]
    for what in sorted({s["what"] for s in rows}, key=lambda x: [r["what"] for r in rows].index(x)):
        xs = [s for s in rows if s["what"] == what]
        probes = xs[0]["probes"]
        line = f"   {what:44s} {probes:6d} probes:"
        for k in ("load_ms", "fill_ms", "fill_batch_ms", "attach_ms", "detach_ms"):
            vals = [s[k] for s in xs if s.get(k) is not None]
            if vals:
                line += f" {k[:-3]} {med(vals):.1f} ms"
        w(line + f"  (median of {len(xs)})")
    for s in [s for s in S if s["part"] == "bpftrace-attach"]:
        per_a, per_d = s["attach_ms"] / s["probes"], s["detach_ms"] / s["probes"]
        n = target["probes"]
        w(f"   bpftrace, {s['probes']} probes ({s['fns']} fns: uprobe + uretprobe each; strace -ttt -T): "
          f"attach {s['attach_ms']:.0f} ms, detach {s['detach_ms']:.0f} ms = {per_a:.2f} / {per_d:.1f} ms per probe")
        w(f"   bpftrace EXTRAPOLATED to {n} probes: attach ~{per_a * n / 1e3:.1f} s, detach ~{per_d * n / 1e3:.0f} s")
    for what in ("asyncbpf trace (launch), as it prints", "asyncbpf trace -p (running), as it prints"):
        xs = [s for s in rows if s["what"] == what]
        if not xs:
            continue
        mode = "launch" if "launch" in what else "-p"
        a, d = med([s["attach_ms"] for s in xs]), med([s["detach_ms"] for s in xs])
        w(f"   asyncbpf ({mode}) attach of {xs[0]['probes']} probes as printed (the links) "
          f"<= {target['attach_ms']} ms: {a:.1f} ms  {verdict(a <= target['attach_ms'])}")
        w(f"   asyncbpf ({mode}) detach <= {target['attach_ms']} ms: {d:.1f} ms  "
          f"{verdict(d <= target['attach_ms'])}")
        loads = [s["attach_ms"] + s["load_ms"] for s in xs if s.get("load_ms") is not None]
        if loads:
            e = med(loads)
            w(f"   asyncbpf ({mode}) load + verify + specs + attach, end to end <= "
              f"{target['attach_ms']} ms: {e:.0f} ms  {verdict(e <= target['attach_ms'])}")
    w("")
    # 5. HTTP server under -p, exits by frequency
    rows = [s for s in S if s["part"] == "http"]
    if rows:
        w("5. http_server (tokio, 2 workers) under keep-alive load from its 2-thread client, "
          "requests/s (median of alternating runs), asyncbpf trace -p attached for the whole load")
        for build in ("release", "debug"):
            xs = [s for s in rows if s["build"] == build]
            if not xs:
                continue
            rate = {}
            for mode in ("untraced", "emulated", "ret", "uretprobe"):
                rs = [s["requests"] / s["seconds"] for s in xs if s["mode"] == mode]
                if not rs:
                    continue
                rate[mode] = med(rs)
                extra = ""
                traced = [s for s in xs if s["mode"] == mode and s.get("exits")]
                if traced:
                    st = sum(s["stepped_exits"] for s in traced) / sum(s["exits"] for s in traced)
                    extra = (f", exits single-stepped {100 * st:.1f} % by frequency, "
                             f"{med([s['records'] for s in traced]):.0f} records, "
                             f"{sum(s['dropped'] for s in traced)} dropped")
                w(f"   {build:8s} {mode:9s} {rate[mode]:9.0f} req/s  (runs: {fmt_list(rs, '{:.0f}')}){extra}")
            if "untraced" in rate:
                for mode in ("emulated", "ret", "uretprobe"):
                    if mode in rate:
                        r = rate[mode] / rate["untraced"]
                        tgt = (f"(target >= 0.85)  {verdict(r >= 0.85)}" if build == "release" and
                               mode == "emulated" else "")
                        w(f"   {build}: -p {'default' if mode == 'emulated' else '--exits ' + mode} / untraced = "
                          f"{r:.3f} {tgt}")
    fx = [s for s in S if s["part"] == "fixture-exits"]
    if fx:
        w("   exits not single-stepped, by frequency (default mode; the summary's stepped_exits / exits):")
        tot_e = tot_s = 0
        for s in fx:
            tot_e += s["exits"]
            tot_s += s["stepped_exits"]
            share = 1 - s["stepped_exits"] / s["exits"] if s["exits"] else 0
            w(f"   {s['build']:8s} {s['crate']:14s} {s['exits']:7d} exits, {100 * share:5.1f} % not single-stepped")
        for s in rows:
            if s.get("exits") and s["mode"] == "emulated" and s["build"] == "release":
                tot_e += s["exits"]
                tot_s += s["stepped_exits"]
        share = 1 - tot_s / tot_e if tot_e else 0
        w(f"   all of them (release fixtures and release http_server runs): {100 * share:.1f} % "
          f"(target >= 80 %)  {verdict(share >= 0.8)}")
    w("")
    w(f"{misses} target(s) missed" if misses else "every target met")
    print("\n".join(out))
    return 0


def main(argv):
    cmds = {"poll-site": poll_site, "symbols": symbols, "fixture-ns": fixture_ns,
            "prog-stats": prog_stats, "strace-spans": strace_spans, "report": report}
    if len(argv) < 2 or argv[1] not in cmds:
        print(__doc__, file=sys.stderr)
        return 2
    return cmds[argv[1]](*argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
