# SPDX-License-Identifier: GPL-2.0
"""asyncbpf check: end-to-end against the running kernel.

Expected values come from ground truth independent of the tool: the kernel
version, sysfs, tracefs and the process's own privileges. Tests that need root
skip (with the reason printed by `pytest -rs`) when not run as root.
"""
import json
import os
import platform
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAN_BINARY = os.path.join(ROOT, ".output", "san", "asyncbpf")
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=1")

# Features asyncbpf cannot trace without, with the kernel that first has them
# (docs/check.md). uprobe and uprobe_multi are alternatives: one must work.
REQUIRED_SINCE = {
    "ringbuf": (5, 8),
    "task_storage": (5, 13),  # from tracing (non-LSM) programs
    "bpf_cookie": (5, 15),
}
UPROBE_MULTI_SINCE = (6, 6)
EXIT_OK, EXIT_USAGE, EXIT_NO_PERMISSION, EXIT_KERNEL = 0, 2, 4, 7

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="asyncbpf check loads BPF programs: run the suite as root"
)


def kernel_version():
    match = re.match(r"(\d+)\.(\d+)", platform.release())
    return (int(match.group(1)), int(match.group(2)))


def binary():
    if not os.access(SAN_BINARY, os.X_OK):
        pytest.skip(f"{SAN_BINARY} not built: run 'make san'")
    return SAN_BINARY


def run(*args, prefix=()):
    proc = subprocess.run(
        list(prefix) + [binary(), "check", *args],
        env=ENV, capture_output=True, text=True, timeout=120,
    )
    assert "Sanitizer" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture(scope="module")
def report():
    if os.geteuid() != 0:
        pytest.skip("asyncbpf check loads BPF programs: run the suite as root")
    proc = run("--json")
    assert proc.returncode in (EXIT_OK, EXIT_KERNEL), proc.stderr
    data = json.loads(proc.stdout)
    data["features"] = {f["name"]: f for f in data["features"]}
    data["returncode"] = proc.returncode
    return data


def status(report, name):
    feature = report["features"][name]
    assert feature["status"] in ("ok", "unavailable"), feature
    assert feature["detail"], feature  # every line says why, ok or not
    return feature["status"]


def lockdown(report):
    return report["lockdown"]["state"]


@needs_root
def test_every_feature_reported(report):
    expected = {"uprobe", "uprobe_multi", "uretprobe", "ringbuf", "task_storage",
                "bpf_cookie", "tracepoint", "raw_tp", "tp_btf", "perf_event",
                "kprobe", "fentry"}
    assert set(report["features"]) == expected
    for name in expected:
        status(report, name)


@needs_root
@pytest.mark.parametrize("name", sorted(REQUIRED_SINCE))
def test_required_feature_works(report, name):
    if kernel_version() < REQUIRED_SINCE[name]:
        pytest.skip(f"{name} needs Linux {REQUIRED_SINCE[name]}, this is {platform.release()}")
    assert report["features"][name]["required"] is True
    assert status(report, name) == "ok", report["features"][name]["detail"]


@needs_root
def test_uprobe_or_uprobe_multi_works(report):
    if not os.path.exists("/sys/bus/event_source/devices/uprobe") and \
            kernel_version() < UPROBE_MULTI_SINCE:
        pytest.skip("no uprobe PMU and no uprobe_multi (Linux 6.6): kernel has no uprobes")
    assert "ok" in (status(report, "uprobe"), status(report, "uprobe_multi")), \
        report["features"]["uprobe"]["detail"]


@needs_root
def test_uprobe_multi_matches_kernel_version(report):
    if kernel_version() < UPROBE_MULTI_SINCE:
        pytest.skip(f"uprobe_multi needs Linux 6.6, this is {platform.release()}")
    assert status(report, "uprobe_multi") == "ok", report["features"]["uprobe_multi"]["detail"]
    assert "3/3 cookies" in report["features"]["uprobe_multi"]["detail"]


@needs_root
def test_kprobe_matches_kprobe_pmu(report):
    """kprobe works exactly when the kernel has the kprobe PMU (CONFIG_KPROBES)."""
    if lockdown(report) == "confidentiality":
        pytest.skip("lockdown=confidentiality forbids kprobes even with the PMU present")
    has_pmu = os.path.exists("/sys/bus/event_source/devices/kprobe")
    assert (status(report, "kprobe") == "ok") == has_pmu, report["features"]["kprobe"]
    if not has_pmu:
        assert "no kprobe PMU" in report["features"]["kprobe"]["detail"]


@needs_root
def test_tracepoint_matches_tracefs(report):
    """Tracepoint ids live in tracefs: without it libbpf cannot attach one."""
    mounted = any(os.path.isdir(d + "/events")
                  for d in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"))
    if mounted:
        assert status(report, "tracepoint") == "ok", report["features"]["tracepoint"]
    else:
        assert status(report, "tracepoint") == "unavailable"
        assert "tracefs" in report["features"]["tracepoint"]["detail"]


@needs_root
def test_tracepoint_works_with_tracefs_mounted():
    """Mount tracefs in a private mount namespace (the host is untouched)."""
    if not shutil.which("unshare"):
        pytest.skip("unshare (util-linux) not installed")
    script = ("mount -t tracefs nodev /sys/kernel/tracing || exit 99; "
              f"exec {binary()} check --json")
    proc = subprocess.run(["unshare", "--mount", "sh", "-c", script], env=ENV,
                          capture_output=True, text=True, timeout=120)
    if proc.returncode == 99:
        pytest.skip(f"cannot mount tracefs in a private namespace: {proc.stderr.strip()}")
    features = {f["name"]: f for f in json.loads(proc.stdout)["features"]}
    assert features["tracepoint"]["status"] == "ok", features["tracepoint"]


@needs_root
def test_unavailable_features_say_why(report):
    for name, feature in report["features"].items():
        if feature["status"] == "unavailable":
            assert re.search(r"failed: [A-Z]|never fired|fired \d+ times|cannot find",
                             feature["detail"]), (name, feature["detail"])


@needs_root
def test_fentry_failure_is_the_load_error(report):
    feature = report["features"]["fentry"]
    if feature["status"] == "ok":
        return
    # Whatever the cause, it is the kernel's errno text, not a guess.
    assert re.match(r"(load|attach to \S+) failed: \S|no BTF for", feature["detail"]), feature


@needs_root
def test_exit_status_contract(report):
    """0 exactly when every required feature (or its alternative) works, else 7."""
    features = report["features"]

    def satisfied(feature):
        alternative = feature.get("alternative")
        return (not feature["required"] or feature["status"] == "ok" or
                (alternative is not None and features[alternative]["status"] == "ok"))

    required_ok = all(satisfied(f) for f in features.values())
    assert report["required_ok"] is required_ok
    assert report["returncode"] == (EXIT_OK if required_ok else EXIT_KERNEL)


@needs_root
def test_table_matches_json(report):
    proc = run()
    assert proc.returncode == report["returncode"]
    assert proc.stderr == ""  # libbpf's log only with -v
    lines = proc.stdout.splitlines()
    assert any(re.match(r"lockdown: \S+", line) for line in lines)
    assert any(re.match(r"unprivileged_bpf_disabled: ", line) for line in lines)
    header = lines.index(next(line for line in lines if line.startswith("FEATURE")))
    assert lines[header].split() == ["FEATURE", "STATUS", "DETAIL"]
    for line in lines[header + 1:header + 1 + len(report["features"])]:
        name, state = line.split()[:2]
        assert report["features"][name]["status"] == state


@needs_root
def test_verbose_shows_libbpf_log():
    proc = run("-v")
    assert "libbpf: " in proc.stderr


@needs_root
def test_unprivileged_bpf_disabled_line_matches_sysctl(report):
    with open("/proc/sys/kernel/unprivileged_bpf_disabled") as f:
        assert report["unprivileged_bpf_disabled"]["value"] == int(f.read())


def test_non_root_exits_4():
    prefix = ()
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("setpriv (util-linux) not installed")
        prefix = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
    proc = run(prefix=prefix)
    assert proc.returncode == EXIT_NO_PERMISSION, proc.stderr
    assert f"asyncbpf: check: needs root or CAP_BPF+CAP_PERFMON (running as uid " \
           f"{65534 if prefix else os.getuid()})" in proc.stderr
    assert proc.stdout == ""


@needs_root
def test_user_namespace_root_exits_4():
    """uid 0 in a new user namespace has capabilities that do not grant BPF."""
    if not shutil.which("unshare"):
        pytest.skip("unshare (util-linux) not installed")
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot create a user namespace: {probe.stderr.strip()}")
    proc = run(prefix=("unshare", "--user", "--map-root-user"))
    assert proc.returncode == EXIT_NO_PERMISSION, proc.stderr
    assert "in a user namespace" in proc.stderr


def test_bad_argument_exits_2():
    proc = run("--no-such-option")
    assert proc.returncode == EXIT_USAGE
    assert "unknown argument '--no-such-option'" in proc.stderr


def test_help_exits_0():
    proc = run("--help")
    assert proc.returncode == EXIT_OK
    assert proc.stdout.startswith("Usage: asyncbpf check")
