# SPDX-License-Identifier: GPL-2.0
"""make install (README): the binary, the man page asyncbpf(8) and the bash
completion under DESTDIR/PREFIX. The man page and the completion must name every
command `asyncbpf --help` lists and every long option each command's --help shows;
make uninstall removes what was installed."""
import os
import re
import shutil
import subprocess

import pytest

import util

ROOT = util.REPO
OPTION = re.compile(r"^\s+(?:-\w, )?(--[a-z][a-z-]*)")


def commands():
    out = subprocess.run([str(util.ASYNCBPF), "--help"], capture_output=True, text=True).stdout
    block = out.split("Commands:")[1]
    return [m.group(1) for m in re.finditer(r"^  ([a-z]+) ", block, re.M)]


def options(cmd):
    out = subprocess.run([str(util.ASYNCBPF), cmd, "--help"], capture_output=True, text=True).stdout
    return {m.group(1) for line in out.splitlines() if (m := OPTION.match(line))}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    dest = tmp_path_factory.mktemp("destdir")
    proc = subprocess.run(["make", "-s", "install", f"DESTDIR={dest}", "PREFIX=/usr"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, util.describe(proc)
    return dest


def test_installed_files(installed):
    binary = installed / "usr/sbin/asyncbpf"
    assert os.access(binary, os.X_OK)
    out = subprocess.run([str(binary), "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "Commands:" in out.stdout
    assert (installed / "usr/share/man/man8/asyncbpf.8").is_file()
    assert (installed / "usr/share/bash-completion/completions/asyncbpf").is_file()


def test_man_page_names_every_command_and_option(installed):
    page = (installed / "usr/share/man/man8/asyncbpf.8").read_text()
    sections = re.split(r"^\.SS ", page, flags=re.M)
    cmds = commands()
    assert {"analyze", "list", "check", "trace", "profile", "stacks", "top"} <= set(cmds), cmds
    for cmd in cmds:
        sec = [s for s in sections if s.startswith(f'"{cmd} ')]
        assert len(sec) == 1, f"no section for {cmd}"
        for opt in options(cmd):
            assert opt.replace("-", r"\-") in sec[0], f"man page: {cmd} {opt} missing"
    if shutil.which("groff"):
        proc = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z",
                               str(installed / "usr/share/man/man8/asyncbpf.8")],
                              capture_output=True, text=True)
        assert proc.returncode == 0 and not proc.stderr, proc.stderr


def complete(script, words):
    line = " ".join(words)
    prog = (f'source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _asyncbpf; '
            'printf "%s\\n" "${COMPREPLY[@]}"')
    proc = subprocess.run(["bash", "-c", prog], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return set(proc.stdout.split())


def test_bash_completion(installed):
    script = installed / "usr/share/bash-completion/completions/asyncbpf"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    assert set(commands()) <= complete(script, ["asyncbpf", "''"])
    assert complete(script, ["asyncbpf", "st"]) == {"stacks"}
    for cmd in commands():
        assert options(cmd) <= complete(script, ["asyncbpf", cmd, "--"]), cmd


def test_uninstall(installed):
    proc = subprocess.run(["make", "-s", "uninstall", f"DESTDIR={installed}", "PREFIX=/usr"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, util.describe(proc)
    assert not (installed / "usr/sbin/asyncbpf").exists()
    assert not (installed / "usr/share/man/man8/asyncbpf.8").exists()
