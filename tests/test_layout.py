# SPDX-License-Identifier: GPL-2.0
"""user/'s layout: includes and calls point one way down the pipeline (user/README.md)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, 'scripts', 'check-layout.py')


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def test_includes_and_calls_point_down():
    r = run('--objects', os.path.join(ROOT, '.output', 'san', 'obj'), ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def make_tree(tmp_path, files):
    user = tmp_path / 'user'
    for rel, text in files.items():
        p = user / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for d in user.iterdir():
        if d.is_dir():
            (d / 'README.md').write_text('x\n')
    return tmp_path


def test_an_include_pointing_up_fails(tmp_path):
    root = make_tree(tmp_path, {
        'lib/a.h': '#include "trace/t.h"\n',
        'trace/t.h': '#include "lib/a.h"\n',
    })
    r = run(str(root))
    assert r.returncode == 1
    assert 'lib/a.h: includes "trace/t.h"' in r.stdout
    assert 'include cycle' in r.stdout


def test_siblings_do_not_include_each_other(tmp_path):
    root = make_tree(tmp_path, {'export/e.c': '#include "profile/p.h"\n', 'profile/p.h': ''})
    r = run(str(root))
    assert r.returncode == 1 and 'export/ (rank 2) may not include profile/' in r.stdout
    root2 = make_tree(tmp_path / 'b', {'trace/t.c': '#include "profile/p.h"\n', 'profile/p.h': ''})
    r = run(str(root2))
    assert r.returncode == 1 and 'trace/ (rank 6) may not include profile/ (rank 6)' in r.stdout


def test_unknown_folder_and_loose_files_fail(tmp_path):
    root = make_tree(tmp_path, {'misc/x.c': '', 'lib/ok.h': ''})
    (tmp_path / 'user' / 'loose.c').write_text('')
    r = run(str(root))
    assert r.returncode == 1
    assert 'user/misc/: a folder without a rank' in r.stdout
    assert 'user/loose.c: source files belong in a subsystem folder' in r.stdout


def test_down_is_fine(tmp_path):
    root = make_tree(tmp_path, {
        'cli/main.c': '#include "trace/t.h"\n#include "lib/a.h"\n#include "asyncbpf.h"\n',
        'trace/t.h': '#include "analyze/x.h"\n',
        'analyze/x.h': '#include "model/m.h"\n',
        'model/m.h': '#include "lib/a.h"\n',
        'lib/a.h': '',
    })
    r = run(str(root))
    assert r.returncode == 0, r.stdout


def test_no_test_file_imports_another():
    """Shared pytest helpers live in tests/util.py (and the independent readers,
    perfetto_reader.py, abi_oracle.py, conformance_lib.py, profile_lib.py); a test_*.py never
    imports another test_*.py."""
    import re

    from pathlib import Path

    tests = sorted((Path(ROOT) / "tests").glob("test_*.py"))
    bad = []
    for t in tests:
        for line in t.read_text().splitlines():
            if re.match(r"\s*(from|import)\s+test_\w+", line):
                bad.append(f"{t.name}: {line.strip()}")
    assert not bad, bad


def test_a_file_over_800_lines_fails(tmp_path):
    root = make_tree(tmp_path, {'lib/big.c': 'int x;\n' * 801, 'lib/ok.c': 'int y;\n' * 800})
    r = run(str(root))
    assert r.returncode == 1
    assert 'user/lib/big.c: 801 lines, more than 800' in r.stdout
    assert 'ok.c' not in r.stdout


def compile_objects(tmp_path, sources):
    objdir = tmp_path / 'obj'
    for rel, text in sources.items():
        src = tmp_path / 'src' / rel
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(text)
        obj = objdir / rel.replace('.c', '.o')
        obj.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(['cc', '-c', '-o', str(obj), str(src)], check=True)
    return objdir


def test_a_call_circle_within_a_folder_fails(tmp_path):
    root = make_tree(tmp_path, {'trace/a.c': '', 'trace/b.c': '', 'trace/c.c': ''})
    objdir = compile_objects(tmp_path, {
        'trace/a.c': 'int b(void); int a(void) { return b(); }\n',
        'trace/b.c': 'int c(void); int b(void) { return c(); }\n',
        'trace/c.c': 'int a(void); int c(void) { return a(); }\n',
    })
    r = run('--objects', str(objdir), str(root))
    assert r.returncode == 1
    assert 'call circle: trace/a.o <-> trace/b.o <-> trace/c.o' in r.stdout


def test_one_way_calls_within_a_folder_are_fine(tmp_path):
    root = make_tree(tmp_path, {'trace/a.c': '', 'trace/b.c': '', 'lib/l.c': ''})
    objdir = compile_objects(tmp_path, {
        'trace/a.c': 'int b(void); int l(void); int a(void) { return b() + l(); }\n',
        'trace/b.c': 'int l(void); int b(void) { return l(); }\n',
        'lib/l.c': 'int l(void) { return 1; }\n',
    })
    r = run('--objects', str(objdir), str(root))
    assert r.returncode == 0, r.stdout
