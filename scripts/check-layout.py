#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check that user/'s includes point one way down the pipeline (user/README.md).

Every folder under user/ has a rank; a file may include headers of its own folder
and of folders of lower rank only. Folders of equal rank are independent of each
other (trace/ never includes profile/). Within a folder, the include graph of the
headers must have no cycle. Prints every violation; exit 1 if any, 0 otherwise.

    scripts/check-layout.py [--objects DIR] [ROOT]

With --objects DIR (the build's object tree, .output/obj), calls are checked too:
an object may use functions defined in its own folder and in lower ranks only
(`nm`), which catches a declaration written by hand instead of an include; and
within a folder the objects' calls must have no circle (a.o uses b.o uses a.o),
so that every file can be read knowing only the ones below it.

No source file under user/ or bpf/ may be longer than MAX_LINES lines.
"""
import subprocess
import os
import re
import sys

# Lower ranks sit below higher ones: cli -> commands -> session -> select ->
# analyze -> export -> model -> lib. bpf/ headers (the BPF/user ABI) are below all.
RANKS = {
    'lib': 0,
    'model': 1,
    'export': 2,
    'analyze': 3,
    'select': 4,
    'session': 5,
    'check': 6,
    'trace': 6,
    'profile': 6,
    'stacks': 6,
    'top': 7,
    'cli': 8,
}
MAX_LINES = 800
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def call_circles(uses):
    """Strongly connected components of more than one object (Tarjan), sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def strong(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(uses.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(uses):
        if v not in index:
            strong(v)
    return sorted(out)


def check_objects(objdir, errors):
    defined = {}  # symbol -> folder
    defined_in = {}  # symbol -> 'folder/x.o'
    undefined = []  # (folder, object, symbol)
    for folder in sorted(os.listdir(objdir)):
        path = os.path.join(objdir, folder)
        if not os.path.isdir(path) or folder not in RANKS:
            continue
        for name in sorted(os.listdir(path)):
            if not name.endswith('.o'):
                continue
            out = subprocess.run(['nm', os.path.join(path, name)], capture_output=True,
                                 text=True, check=True).stdout
            for line in out.splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[0] == 'U':
                    undefined.append((folder, name, parts[1]))
                elif len(parts) == 3 and parts[1] in 'TDBR':
                    defined[parts[2]] = folder
                    defined_in[parts[2]] = f'{folder}/{name}'
    uses = {}  # 'folder/x.o' -> objects of the same folder it uses
    for folder, name, sym in undefined:
        dep = defined.get(sym)
        if dep and dep != folder and RANKS[dep] >= RANKS[folder]:
            errors.append(f'{folder}/{name}: calls {sym}() of {dep}/: {folder}/ (rank '
                          f'{RANKS[folder]}) may not use {dep}/ (rank {RANKS[dep]})')
        elif dep == folder:
            uses.setdefault(f'{folder}/{name}', set()).add(defined_in[sym])
    for comp in call_circles(uses):
        errors.append('call circle: ' + ' <-> '.join(comp) +
                      ': split what they share into a file both use, one way')


def main():
    args = sys.argv[1:]
    objdir = None
    if args[:1] == ['--objects']:
        objdir = args[1]
        args = args[2:]
    root = args[0] if args else os.path.join(os.path.dirname(__file__), '..')
    user = os.path.join(root, 'user')
    errors = []
    headers = {}  # 'folder/x.h' -> includes
    for folder in sorted(os.listdir(user)):
        path = os.path.join(user, folder)
        if not os.path.isdir(path):
            if folder.endswith(('.c', '.h')):
                errors.append(f'user/{folder}: source files belong in a subsystem folder')
            continue
        if folder not in RANKS:
            errors.append(f'user/{folder}/: a folder without a rank in scripts/check-layout.py')
            continue
        if not os.path.exists(os.path.join(path, 'README.md')):
            errors.append(f'user/{folder}/: no README.md (what it owns, what it may include)')
        for name in sorted(os.listdir(path)):
            if not name.endswith(('.c', '.h')):
                continue
            text = open(os.path.join(path, name), encoding='utf-8').read()
            incs = INCLUDE.findall(text)
            if name.endswith('.h'):
                headers[f'{folder}/{name}'] = incs
            for inc in incs:
                if '/' not in inc:
                    continue  # bpf/ ABI headers, generated skeletons, vmlinux.h
                dep = inc.split('/')[0]
                if dep not in RANKS:
                    errors.append(f'user/{folder}/{name}: includes "{inc}": unknown folder')
                    continue
                if not os.path.exists(os.path.join(user, inc)):
                    errors.append(f'user/{folder}/{name}: includes "{inc}", which does not exist')
                if dep != folder and RANKS[dep] >= RANKS[folder]:
                    errors.append(f'user/{folder}/{name}: includes "{inc}": {folder}/ (rank '
                                  f'{RANKS[folder]}) may not include {dep}/ (rank {RANKS[dep]})')
    for top in ('user', 'bpf'):
        for dirpath, _, names in sorted(os.walk(os.path.join(root, top))):
            for name in sorted(names):
                if name.endswith(('.c', '.h')) and not name.endswith('.skel.h'):
                    path = os.path.join(dirpath, name)
                    with open(path, encoding='utf-8') as f:
                        n = sum(1 for _ in f)
                    if n > MAX_LINES:
                        rel = os.path.relpath(path, root)
                        errors.append(f'{rel}: {n} lines, more than {MAX_LINES}: split it '
                                      'where its parts have names')
    # header cycles
    state = {}

    def visit(h, trail):
        if state.get(h) == 1:
            cycle = trail[trail.index(h):] + [h]
            errors.append('include cycle: ' + ' -> '.join(cycle))
            return
        if state.get(h) == 2:
            return
        state[h] = 1
        for inc in headers.get(h, []):
            if inc in headers:
                visit(inc, trail + [h])
        state[h] = 2

    for h in sorted(headers):
        visit(h, [])
    if objdir:
        check_objects(objdir, errors)
    for e in errors:
        print('check-layout: ' + e)
    if errors:
        print(f'check-layout: {len(errors)} problem(s); the rules are in user/README.md')
        return 1
    print(f'check-layout: {len(headers)} headers in {len(RANKS)} ranked folders, includes point down')
    return 0


if __name__ == '__main__':
    sys.exit(main())
