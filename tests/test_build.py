# SPDX-License-Identifier: GPL-2.0
"""The README's first command works on a fresh machine.

On a machine where the packages are not installed yet, pkg-config knows nothing
until `make deps` has run. `make demo` must therefore read pkg-config's flags only
after its deps step. CI's machine already has the packages, so this is shown with
a fake pkg-config, first on PATH, that answers nothing until a marker written by a
stubbed deps step exists, in a copy of the tree with no build output.
"""
import os
import shutil
import subprocess

import util

ROOT = str(util.REPO)

MAKE_TIMEOUT = 900


def copy_tree(dst):
    files = subprocess.run(['git', 'ls-files', '-z', '--cached', '--others', '--exclude-standard'],
                           cwd=ROOT, capture_output=True, check=True).stdout.split(b'\0')
    for f in files:
        if not f:
            continue
        rel = f.decode()
        src = os.path.join(ROOT, rel)
        if not os.path.isfile(src):
            continue  # deleted in the work tree
        os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
        shutil.copy2(src, os.path.join(dst, rel))


def fake_pkg_config(bindir, marker):
    real = shutil.which('pkg-config')
    assert real, 'pkg-config is needed by the build itself'
    os.makedirs(bindir)
    path = os.path.join(bindir, 'pkg-config')
    with open(path, 'w') as f:
        f.write('#!/bin/sh\n'
                f'# answers nothing until the deps step has written {marker}\n'
                f'[ -e "{marker}" ] || exit 1\n'
                f'exec "{real}" "$@"\n')
    os.chmod(path, 0o755)


def test_make_demo_links_when_packages_arrive_during_the_run(tmp_path):
    util.require_trace_features()  # the demo traces
    tree = tmp_path / 'tree'
    copy_tree(str(tree))
    marker = tmp_path / 'deps-done'
    fake_pkg_config(str(tmp_path / 'bin'), str(marker))
    env = dict(os.environ)
    env['PATH'] = f'{tmp_path / "bin"}:{env["PATH"]}'
    # reuse the fixtures' cargo build: the demo crate is not what this is about
    env['CARGO_TARGET_DIR'] = os.path.join(ROOT, 'tests', 'fixtures', 'target')
    env['DEMO_SECONDS'] = '1'
    env.pop('MAKEFLAGS', None)
    env.pop('MFLAGS', None)
    # the fake answers nothing before the stubbed deps step
    assert subprocess.run(['pkg-config', '--exists', 'libbpf'], env=env).returncode != 0
    r = subprocess.run(['make', '-j2', 'demo', f'DEPS=touch {marker}'], cwd=tree, env=env,
                       capture_output=True, text=True, timeout=MAKE_TIMEOUT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert marker.exists()
    assert (tree / '.output' / 'asyncbpf').is_file()
    for out in ('demo.pftrace', 'demo-summary.json', 'demo-model.txt'):
        assert (tree / '.output' / 'demo' / out).stat().st_size > 0, out


def test_make_test_installs_before_it_builds():
    r = subprocess.run(['make', '-n', 'test'], cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, 'MAKEFLAGS': ''})
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stdout.splitlines() if 'make' in l]
    deps = next(i for i, l in enumerate(lines) if l.rstrip().endswith(' deps'))
    build = next(i for i, l in enumerate(lines) if 'test-build' in l)
    assert deps < build, r.stdout
