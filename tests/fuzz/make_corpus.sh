#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Regenerate the fuzzer's seed corpus, tests/fuzz/corpus/: small ELF files that
# reach every part of the analyzer. Not run by `make` or CI: the seeds are
# committed, this script documents how they were made.
#
#   tests/fuzz/make_corpus.sh [OUTDIR]      (default: tests/fuzz/corpus)
#
# Needs rustc >= 1.85 (async closures), gcc, ld, objcopy, python3.
#
# Why not just small Rust programs: any binary linked against core/std carries
# the DWARF of the precompiled std objects (600 KiB+ even for #![no_std]).
# So the Rust seeds are single #![no_std] crates compiled with --emit=obj and
# linked alone into a shared object with `ld -shared` (the analyzer rejects
# ET_REL; calls into core stay undefined symbols, which the analyzer does not
# care about): 30-45 KiB, with real rustc DWARF:
#
#   rust_o0_*        opt-level 0: every poll out of line, {async_fn_env#N},
#                    {async_block_env#N}, {async_closure_env#N} with variant parts,
#                    <T as core::future::future::Future>::poll, generics
#   rust_o3_*        opt-level 3: polls inlined (DW_TAG_inlined_subroutine,
#                    abstract origins, location lists)
#   *_wrappers       Pin<&mut dyn Future>, a generic wrapper future (Timeout<F>),
#                    a core::future::poll_fn join, Ready<T>
#   *_dwarf5         DWARF 5 forms (.debug_str_offsets, .debug_addr, rnglists)
#   *_zdebug         SHF_COMPRESSED debug sections (zlib)
#   *_nodebug        debug sections stripped: the symbol-name fallback
#   *_debuglink      DWARF moved out, .gnu_debuglink left: missing-debuginfo path
#   *_aarch64        e_machine patched: the DWARF walk without disassembly
#   *_zeroed_dies    the second half of .debug_info zeroed: broken DIE tree
#   *_short_debug_info  .debug_info's sh_size halved: a unit longer than its section
#   c_tiny_*         a C program (gcc -g -Os): DWARF that is not Rust
#   rel_object.o     an ET_REL object: rejected early
#   trunc_*          truncated copies: header only, inside the program headers,
#                    inside .debug_info, without the section headers
#
# Every file must stay <= 64 KiB and the whole corpus <= 1 MiB (checked below).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here/corpus}"
MAX_SEED=$((64 * 1024))
MAX_TOTAL=$((1024 * 1024))

for tool in rustc gcc ld objcopy python3; do
	command -v "$tool" >/dev/null || {
		echo "make_corpus: $tool not found" >&2
		exit 1
	}
done

work="$(mktemp -d "${TMPDIR:-/tmp}/asyncbpf-corpus.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"

cat >asyncseed.rs <<'EOF'
// A hand-written executor over async fns, blocks, closures and a hand-written
// future, in one no_std crate.
#![no_std]
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

pub struct Yield {
    done: bool,
}

impl Future for Yield {
    type Output = u32;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        if self.done {
            Poll::Ready(7)
        } else {
            self.done = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

async fn leaf(x: u32) -> u32 {
    Yield { done: false }.await + x
}

async fn generic<T: Into<u32>>(x: T) -> u32 {
    leaf(x.into()).await
}

async fn middle(x: u32) -> u32 {
    let a = leaf(x).await;
    let b = generic(a as u8).await;
    a + b
}

pub async fn top() -> u32 {
    let c = async |y: u32| leaf(y).await;
    middle(1).await + async { leaf(2).await }.await + c(3).await
}

fn noop_raw() -> RawWaker {
    fn clone(_: *const ()) -> RawWaker {
        noop_raw()
    }
    fn noop(_: *const ()) {}
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, noop);
    RawWaker::new(core::ptr::null(), &VTABLE)
}

#[no_mangle]
pub extern "C" fn run() -> u32 {
    let waker = unsafe { Waker::from_raw(noop_raw()) };
    let mut cx = Context::from_waker(&waker);
    let mut fut = top();
    let mut fut = unsafe { Pin::new_unchecked(&mut fut) };
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
EOF

cat >wrappers.rs <<'EOF'
// Awaits through wrappers: Pin<&mut dyn Future>, a generic hand-written wrapper,
// a poll_fn join over pinned futures, Ready<T>. No alloc: Box's DWARF is big.
#![no_std]
use core::future::{poll_fn, ready, Future};
use core::pin::{pin, Pin};
use core::task::{Context, Poll};

pub struct Timeout<F> {
    inner: F,
    budget: u32,
}

impl<F: Future> Future for Timeout<F> {
    type Output = Option<F::Output>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = unsafe { self.get_unchecked_mut() };
        if this.budget == 0 {
            return Poll::Ready(None);
        }
        this.budget -= 1;
        match unsafe { Pin::new_unchecked(&mut this.inner) }.poll(cx) {
            Poll::Ready(v) => Poll::Ready(Some(v)),
            Poll::Pending => Poll::Pending,
        }
    }
}

async fn leaf(x: u64) -> u64 {
    ready(x).await + 1
}

async fn dynamic(x: u64) -> u64 {
    let f = pin!(leaf(x));
    let f: Pin<&mut dyn Future<Output = u64>> = f;
    f.await
}

async fn wrapped(x: u64) -> Option<u64> {
    Timeout { inner: leaf(x), budget: 3 }.await
}

async fn joined(x: u64) -> u64 {
    let mut a = pin!(leaf(x));
    let mut b = pin!(dynamic(x));
    let (mut ra, mut rb) = (None, None);
    poll_fn(|cx| {
        if ra.is_none() {
            if let Poll::Ready(v) = a.as_mut().poll(cx) {
                ra = Some(v);
            }
        }
        if rb.is_none() {
            if let Poll::Ready(v) = b.as_mut().poll(cx) {
                rb = Some(v);
            }
        }
        match (ra, rb) {
            (Some(x), Some(y)) => Poll::Ready(x + y),
            _ => Poll::Pending,
        }
    })
    .await
}

pub async fn root() -> u64 {
    joined(1).await + wrapped(2).await.unwrap_or(0) + dynamic(3).await
}

#[no_mangle]
pub extern "C" fn entry(cx: &mut Context<'_>) -> u64 {
    let mut f = pin!(root());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(cx) {
            return v;
        }
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
EOF

cat >tiny.c <<'EOF'
/* Not Rust: C DWARF (structs, a union, an inlined function, namespaces none). */
#include <stdio.h>
struct state { int kind; union { long n; const char *s; } u; };
static inline int step(struct state *st) { return st->kind++ ? (int)st->u.n : 0; }
int main(int argc, char **argv)
{
	struct state st = { .kind = argc, .u.s = argv[0] };
	printf("%d\n", step(&st));
	return 0;
}
EOF

# Deterministic output: fixed metadata, no temp-dir paths in DWARF.
RUSTFLAGS_COMMON=(--edition 2021 --crate-type=lib --emit=obj -C panic=abort -C debuginfo=2
	-C codegen-units=1 -C metadata=asyncbpf-seed --remap-path-prefix="$work=/seed")

rust_seed() { # name source opt-level [extra rustc flags...]
	local name="$1" src="$2" opt="$3"
	shift 3
	rustc "${RUSTFLAGS_COMMON[@]}" -C opt-level="$opt" "$@" "$src" -o "$name.o"
	ld -shared --build-id=sha1 -o "$name" "$name.o"
}

rust_seed rust_o0_async asyncseed.rs 0
rust_seed rust_o3_async asyncseed.rs 3
rust_seed rust_o0_wrappers wrappers.rs 0
rust_seed rust_o3_wrappers wrappers.rs 3
rust_seed rust_o1_async_dwarf5 asyncseed.rs 1 -C dwarf-version=5
objcopy --compress-debug-sections=zlib rust_o0_async rust_o0_async_zdebug
objcopy --strip-debug rust_o0_async rust_o0_async_nodebug
objcopy --only-keep-debug rust_o3_async rust_o3_async.debug
objcopy --strip-debug --add-gnu-debuglink=rust_o3_async.debug rust_o3_async rust_o3_async_debuglink
cp rust_o3_async.o rel_object.o
gcc -g -Os -Wl,--build-id=sha1 -fdebug-prefix-map="$work=/seed" -o c_tiny_Os tiny.c
gcc -g -O0 -gdwarf-4 -Wl,--build-id=sha1 -fdebug-prefix-map="$work=/seed" -o c_tiny_O0_dwarf4 tiny.c

python3 - <<'EOF'
import struct

def sections(data):
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    strtab_off, = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)
    for i in range(shnum):
        base = shoff + i * shentsize
        name, = struct.unpack_from("<I", data, base)
        off, size = struct.unpack_from("<QQ", data, base + 0x18)
        end = data.index(b"\0", strtab_off + name)
        yield data[strtab_off + name:end].decode(), off, size, shoff

data = open("rust_o0_async", "rb").read()
# e_machine = EM_AARCH64: the DWARF walk without disassembly
patched = bytearray(data)
struct.pack_into("<H", patched, 0x12, 183)
open("rust_o0_async_aarch64", "wb").write(patched)

info = next((off, size) for name, off, size, _ in sections(data) if name == ".debug_info")
shoff = next(sections(data))[3]
phoff, = struct.unpack_from("<Q", data, 0x20)
cuts = {
    "trunc_header_only": 64,
    "trunc_in_phdrs": phoff + 56 + 20,
    "trunc_in_debug_info": info[0] + info[1] // 2,
    "trunc_no_section_headers": shoff + 10,
}
for name, n in cuts.items():
    open(name, "wb").write(data[:n])
# .debug_info intact but every DIE reference past the middle of the unit broken:
# the same file with its second half of .debug_info zeroed
broken = bytearray(data)
mid = info[0] + info[1] // 2
broken[mid:info[0] + info[1]] = bytes(info[0] + info[1] - mid)
open("rust_o0_async_zeroed_dies", "wb").write(broken)
# .debug_info's sh_size halved: the unit's length runs past the end of its section
short = bytearray(data)
shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
for i, (name, off, size, _) in enumerate(sections(data)):
    if name == ".debug_info":
        struct.pack_into("<Q", short, shoff + i * shentsize + 0x20, size // 2)
open("rust_o0_async_short_debug_info", "wb").write(short)
EOF

seeds=(rust_o0_async rust_o3_async rust_o0_wrappers rust_o3_wrappers rust_o1_async_dwarf5
	rust_o0_async_zdebug rust_o0_async_nodebug rust_o3_async_debuglink rust_o0_async_aarch64
	rust_o0_async_zeroed_dies rust_o0_async_short_debug_info c_tiny_Os c_tiny_O0_dwarf4 rel_object.o
	trunc_header_only trunc_in_phdrs trunc_in_debug_info trunc_no_section_headers)

total=0
for s in "${seeds[@]}"; do
	size=$(stat -c %s "$s")
	if [ "$size" -gt "$MAX_SEED" ]; then
		echo "make_corpus: $s is $size bytes, over the $MAX_SEED-byte limit per seed" >&2
		exit 1
	fi
	total=$((total + size))
done
if [ "$total" -gt "$MAX_TOTAL" ]; then
	echo "make_corpus: the corpus is $total bytes, over $MAX_TOTAL" >&2
	exit 1
fi

mkdir -p "$out"
for s in "${seeds[@]}"; do
	cp "$s" "$out/$s"
done
echo "make_corpus: ${#seeds[@]} seeds, $total bytes -> $out ($(rustc --version))"
