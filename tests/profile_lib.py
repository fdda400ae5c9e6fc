# SPDX-License-Identifier: GPL-2.0
"""What the profiler's tests share (test_profile.py, test_profile_every.py): the hot
fixtures' chain read from their own source, their command line, the off-CPU summary
line parsed."""
import re

import util

HOT_CHAIN = ("hot_task", "middle_hot", "hot_leaf")  # outermost first; hot_leaf spins


def source_of(crate):
    return (util.FIXTURES / crate / "src" / "main.rs").read_text(encoding="utf-8")


def hot_chain_from_source(crate):
    """The fixture's own word: every fn of the chain is an async fn, each awaits the
    next (AWAIT markers), and hot_leaf is the one that spins (it has the loop)."""
    src = source_of(crate)
    for fn in HOT_CHAIN:
        assert re.search(rf"\basync fn {fn}\b", src), f"{crate}: no async fn {fn} in its source"
    for caller, callee in zip(HOT_CHAIN, HOT_CHAIN[1:]):
        assert f"// AWAIT {caller}->{callee}" in src, f"{crate}: {caller} does not await {callee}"
    leaf = src[src.index("async fn hot_leaf"):]
    leaf = leaf[: leaf.index("\n}\n")]
    assert "while " in leaf or "loop " in leaf, f"{crate}: hot_leaf does not spin"
    return HOT_CHAIN


def hot_command(profile, crate, ms):
    binary = util.fixture_binary(profile, crate)
    util.require_file(binary, "the fixture", "run 'make fixtures'")
    return [str(binary), "hot", str(ms)]


def offcpu_counts(report):
    m = re.search(r"off-CPU: (\d+) blocks: (\d+) summed in the kernel per stack \(([\d.]+) ms blocked\), (\d+) lost "
                  r"\(([\d.]+) ms; .*\), (\d+) still blocked at the end .*; (\d+) stacks sent to user space to unwind "
                  r"first, (\d+) unwind rules learned", report)
    assert m, report[-3000:]
    keys = ("blocks", "summed", "summed_ms", "lost", "lost_ms", "still", "sent", "rules")
    return {k: float(v) if "." in v else int(v) for k, v in zip(keys, m.groups())}
