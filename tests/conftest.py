# SPDX-License-Identifier: GPL-2.0
"""Shared fixtures of the pytest suites (docs/testing.md).

Every fixture binary is analyzed once per session, by the sanitizer build, and the
JSON model, DOT graph and the run's output are cached in a session temp dir.
"""
import json
import os
import subprocess

import pytest

import util

# The Rust fixtures' cargo target dir and sources hold no tests; do not walk them.
collect_ignore = ["fixtures"]

BUILDS = [(p, c) for p in util.PROFILES for c in util.CRATES]
BUILD_IDS = [f"{p}-{c}" for p, c in BUILDS]


class Analysis:
    """One `asyncbpf analyze BIN --json J --dot D` run."""

    def __init__(self, profile, crate, binary, proc, json_path, dot_path):
        self.profile, self.crate, self.binary = profile, crate, str(binary)
        self.proc, self.json_path, self.dot_path = proc, json_path, dot_path
        self._model = None

    @property
    def model(self):
        if self._model is None:
            assert self.proc.returncode == util.EXIT_OK, util.describe(self.proc)
            self._model = util.Model(util.load_json(self.json_path), self.crate, self.binary)
        return self._model


class Analyses:
    def __init__(self, tmpdir):
        self.tmpdir = tmpdir
        self.cache = {}

    def get(self, profile, crate):
        key = (profile, crate)
        if key not in self.cache:
            util.require_file(util.ASYNCBPF, "the sanitizer build", "run 'make san'")
            binary = util.fixture_binary(profile, crate)
            util.require_file(binary, "the fixture", "run 'make fixtures' (tests/fixtures/build.sh)")
            json_path = os.path.join(self.tmpdir, f"{profile}-{crate}.json")
            dot_path = os.path.join(self.tmpdir, f"{profile}-{crate}.dot")
            proc = util.run_asyncbpf("analyze", binary, "--json", json_path, "--dot", dot_path,
                                     check_sanitizers=False)
            self.cache[key] = Analysis(profile, crate, binary, proc, json_path, dot_path)
        return self.cache[key]


@pytest.fixture(scope="session")
def analyses(tmp_path_factory):
    return Analyses(str(tmp_path_factory.mktemp("models")))


@pytest.fixture(params=BUILDS, ids=BUILD_IDS)
def build(request, analyses):
    """One fixture binary's analysis, for each crate in both profiles."""
    profile, crate = request.param
    return analyses.get(profile, crate)


@pytest.fixture
def model(build):
    """The model of `build`; the analyzer run must have succeeded without a sanitizer report."""
    util.assert_no_sanitizer_report(build.proc)
    return build.model


@pytest.fixture(scope="session")
def asyncbpf_binary():
    util.require_file(util.ASYNCBPF, "the sanitizer build", "run 'make san'")
    return util.ASYNCBPF


class Parked:
    """A running `CRATE park N` (tests/fixtures/README.md): its own line says N tasks
    parked (the runtimes' fixtures count them as many_task, handwritten as tasks);
    stop() checks no thread was left stopped, closes its stdin and checks it exits 0."""

    def __init__(self, profile, crate, n):
        self.crate = crate
        self.proc = subprocess.Popen([str(util.fixture_binary(profile, crate)), "park", str(n)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.counts = json.loads(self.proc.stdout.readline())
        assert self.counts["mode"] == "park", self.counts
        assert self.counts.get("many_task", self.counts["tasks"]) == n, self.counts

    def threads_state(self):
        return util.threads_state(self.proc.pid)

    def stop(self):
        assert all(s not in ("t", "T") for s in self.threads_state()), self.threads_state()
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0


@pytest.fixture
def parked():
    made = []

    def make(profile, crate, n):
        p = Parked(profile, crate, n)
        made.append(p)
        return p

    yield make
    for p in made:
        if p.proc.poll() is None:
            p.proc.kill()
            p.proc.wait()
