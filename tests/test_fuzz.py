# SPDX-License-Identifier: GPL-2.0
"""The libFuzzer target over the analyzer (tests/fuzz/fuzz_analyzer.c).

- every committed seed (tests/fuzz/corpus/) and every regression input
  (tests/fuzz/crashers/) runs once, under ASan/UBSan/LSan and the target's own
  checks (no descriptor leak, errors come with a message);
- a short fuzzing run from the seeds finds nothing.

`make test` builds .output/fuzz/fuzz_analyzer first (`make fuzz`). These tests
are skipped only when clang's libFuzzer runtime is missing; any other build
failure fails them. Longer runs: `make fuzz-long FUZZ_SECONDS=600`.
"""
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FUZZ_DIR = ROOT / "tests" / "fuzz"
CORPUS = FUZZ_DIR / "corpus"
CRASHERS = FUZZ_DIR / "crashers"
FUZZER = ROOT / ".output" / "fuzz" / "fuzz_analyzer"

MAX_SEED_BYTES = 64 * 1024
MAX_CORPUS_BYTES = 1024 * 1024
BRIEF_SECONDS = 20
LIBFUZZER_ARGS = ["-rss_limit_mb=2048", "-timeout=10", "-max_len=1048576"]


def _clang():
    for name in ("clang-16", "clang-19", "clang-14", "clang"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _fuzzer_runtime_missing():
    """Why clang cannot link a libFuzzer program here, or None if it can."""
    clang = _clang()
    if not clang:
        return "no clang found (make deps installs clang-16)"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text(
            "#include <stddef.h>\n#include <stdint.h>\n"
            "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)"
            " { (void)d; (void)n; return 0; }\n"
        )
        r = subprocess.run(
            [clang, "-fsanitize=fuzzer,address,undefined", str(src), "-o", str(Path(tmp) / "probe")],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            return f"{clang} cannot link -fsanitize=fuzzer (libclang_rt.fuzzer missing?): " + (
                r.stderr.strip().splitlines() or ["?"]
            )[-1]
    return None


@pytest.fixture(scope="module")
def fuzzer():
    if not FUZZER.exists():
        r = subprocess.run(["make", "-C", str(ROOT), "fuzz"], capture_output=True, text=True)
        if r.returncode != 0:
            why = _fuzzer_runtime_missing()
            if why:
                print(f"test_fuzz: skipped: {why}")
                pytest.skip(why)
            pytest.fail(f"make fuzz failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return FUZZER


def _seeds():
    return sorted(p for p in CORPUS.iterdir() if p.is_file() and not p.name.startswith("."))


def _crashers():
    if not CRASHERS.is_dir():
        return []
    return sorted(p for p in CRASHERS.iterdir() if p.is_file() and not p.name.startswith("."))


def _run_fuzzer(fuzzer, args, cwd, timeout):
    env = dict(os.environ)
    # the target reads no separate debuginfo, but never let libdwfl near a network
    env.pop("DEBUGINFOD_URLS", None)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
    # started by a shell's own fork, not by pytest's (vfork then exec): Linux carries a
    # process's peak RSS across exec, so a child of this (large) process would start
    # with pytest's peak as its own and libFuzzer's -rss_limit_mb would count it
    return subprocess.run(
        ["/bin/sh", "-c", '"$@" & wait $!', "sh", str(fuzzer), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
    )


def _failure(r, what):
    log = (r.stdout + r.stderr).splitlines()
    return f"{what}: fuzz_analyzer exited {r.returncode}\n" + "\n".join(log[-60:])


def test_corpus_is_small():
    seeds = _seeds()
    assert len(seeds) >= 10, f"{CORPUS} has only {len(seeds)} seeds (tests/fuzz/make_corpus.sh)"
    big = [f"{p.name} ({p.stat().st_size} bytes)" for p in seeds if p.stat().st_size > MAX_SEED_BYTES]
    assert not big, f"seeds over {MAX_SEED_BYTES} bytes: {big}"
    total = sum(p.stat().st_size for p in seeds)
    assert total <= MAX_CORPUS_BYTES, f"the corpus is {total} bytes, over {MAX_CORPUS_BYTES}"
    # most seeds are ELF files (a few are deliberately truncated, but keep the magic)
    elf = [p for p in seeds if p.read_bytes()[:4] == b"\x7fELF"]
    assert len(elf) == len(seeds), f"not ELF: {sorted(set(seeds) - set(elf))}"


def test_every_seed_and_crasher_runs_clean(fuzzer, tmp_path):
    inputs = _seeds() + _crashers()
    r = _run_fuzzer(
        fuzzer, ["-runs=0", *LIBFUZZER_ARGS, *map(str, inputs)], cwd=tmp_path, timeout=600
    )
    assert r.returncode == 0, _failure(r, "replaying the seeds and crashers")
    ran = (r.stdout + r.stderr).count("Executed ")
    assert ran == len(inputs), f"ran {ran} of {len(inputs)} inputs:\n{r.stderr[-3000:]}"


def test_brief_fuzz_run_finds_nothing(fuzzer, tmp_path):
    corpus = tmp_path / "corpus"
    artifacts = tmp_path / "artifacts"
    corpus.mkdir()
    artifacts.mkdir()
    for p in _seeds() + _crashers():
        shutil.copy(p, corpus / p.name)
    r = _run_fuzzer(
        fuzzer,
        [
            f"-max_total_time={BRIEF_SECONDS}",
            *LIBFUZZER_ARGS,
            f"-artifact_prefix={artifacts}/",
            "-print_final_stats=1",
            str(corpus),
        ],
        cwd=tmp_path,
        timeout=BRIEF_SECONDS + 300,
    )
    found = sorted(artifacts.iterdir())
    if r.returncode != 0 or found:
        kept = Path(tempfile.mkdtemp(prefix="asyncbpf-fuzz-found."))
        for a in found:
            shutil.copy(a, kept / a.name)
        pytest.fail(
            _failure(r, f"{BRIEF_SECONDS}s fuzz run")
            + f"\nreproducers copied to {kept}: {[a.name for a in found]}"
            + f"\nreplay: {fuzzer} {kept}/<file>"
        )
    assert "Done " in r.stderr, r.stderr[-2000:]
