#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Analyzer benchmark: `asyncbpf analyze --json` against `objdump --dwarf=info` on
# the same large Rust binary, side by side in one run. See bench/README.md.
#
#   bench/analyze.sh [BINARY]        (`make bench-analyze` runs it after `make all fixtures`)
#
# The binary, unless given (argument or BENCH_BINARY): a throwaway Rust service
# over tokio (full), async-std, smol, futures, regex, rayon, serde, petgraph, ...
# built offline from Debian's crates at opt-level 0 with debug = true, in
# .output/bench/bigapp (built once, then cached). Without cargo or the crates,
# the biggest fixture (tests/fixtures/bin/*/*) is used instead, and that is said.
#
# Each command runs BENCH_RUNS times (default 3), alternating, after one untimed
# warm-up of each (page cache warm for both), under `/usr/bin/time -f '%e %M %U %S'`.
# Reported: median wall time, max peak RSS, asyncbpf's median user+sys CPU,
# .debug_info's size (readelf -SW), and the two targets:
#   time:   asyncbpf wall time <= 0.5 x objdump's
#   memory: asyncbpf peak RSS  <= 2 x .debug_info size
# One extra untimed run samples /proc/PID/status to split asyncbpf's peak RSS into
# anonymous memory and file-backed pages (the mmapped input). Results also go to
# .output/bench/analyze-results.txt.
# Exit status: 0 measured (a missed target is reported as MISS, not an error;
# BENCH_STRICT=1 makes a MISS exit 1); 2 a tool or the binary is missing, or a
# measured command failed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/.output/bench"
asyncbpf="$root/.output/asyncbpf"
runs="${BENCH_RUNS:-3}"
TIME_TARGET=0.5
RSS_TARGET=2.0

die() {
	echo "bench: $*" >&2
	exit 2
}

[ -x /usr/bin/time ] || die "/usr/bin/time not found: apt-get install time (make deps)"
command -v objdump >/dev/null || die "objdump not found: apt-get install binutils"
command -v readelf >/dev/null || die "readelf not found: apt-get install binutils"
if [ ! -x "$asyncbpf" ]; then
	make -C "$root" --no-print-directory all >&2 || die "cannot build $asyncbpf (make all)"
fi
mkdir -p "$out"

find_cargo() {
	if command -v cargo >/dev/null 2>&1; then
		command -v cargo
	elif [ -x "${HOME:-/nonexistent}/.cargo/bin/cargo" ]; then
		echo "$HOME/.cargo/bin/cargo"
	else
		return 1
	fi
}

# Write stdin to $1 only when it differs: cargo's fingerprints are mtimes, so an
# unchanged source must keep its mtime for the cached build to stay cached.
write_if_changed() {
	local tmp="$1.tmp.$$"
	cat >"$tmp"
	if cmp -s "$tmp" "$1"; then
		rm -f "$tmp"
	else
		mv -f "$tmp" "$1"
	fi
}

REGISTRY=/usr/share/cargo/registry
BIGAPP_CRATES=(tokio async-std smol futures regex serde serde_derive rayon petgraph tracing
	env_logger crossbeam-channel parking_lot)

# Build (or find cached) .output/bench/bigapp; print its path, or return 1 with why.
build_bigapp() {
	local cargo dir="$out/bigapp" c
	cargo="$(find_cargo)" || {
		echo "cargo not found" >&2
		return 1
	}
	for c in "${BIGAPP_CRATES[@]}"; do
		compgen -G "$REGISTRY/$c-[0-9]*" >/dev/null || {
			echo "crate $c not in $REGISTRY (librust-${c//_/-}-dev)" >&2
			return 1
		}
	done
	mkdir -p "$dir/src" "$dir/.cargo"
	write_if_changed "$dir/.cargo/config.toml" <<'EOF'
# Build only from Debian's packaged crates (librust-*-dev), never the network.
[source.crates-io]
replace-with = "debian"

[source.debian]
directory = "/usr/share/cargo/registry"

[net]
offline = true
EOF
	write_if_changed "$dir/Cargo.toml" <<'EOF'
[package]
name = "bigapp"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
tokio = { version = "1.24", features = ["full"] }
async-std = { version = "1.12", features = ["unstable", "attributes"] }
smol = "1.3"
futures = "0.3"
regex = "1.7"
serde = { version = "1", features = ["derive"] }
rayon = "1.6"
petgraph = "0.6"
tracing = "0.1"
env_logger = "0.9"
log = "0.4"
parking_lot = "0.12"
crossbeam-channel = "0.5"

[profile.dev]
opt-level = 0
debug = true

[workspace]
EOF
	write_if_changed "$dir/src/main.rs" <<'BIGAPP_EOF'
//! A throwaway "service" for asyncbpf's analyzer benchmark: many async fns over
//! tokio, async-std, smol and futures, plus CPU-side crates, so that the binary's
//! DWARF looks like a real application's (built at opt-level 0, debug = true).
#![allow(dead_code, clippy::all)]
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct Request {
    pub id: u64,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct Response {
    pub id: u64,
    pub status: u16,
    pub body: Vec<u8>,
}

pub mod tokio_side {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    use tokio::sync::{broadcast, mpsc, oneshot, watch, Mutex, Notify, RwLock, Semaphore};

    pub async fn serve(listener: tokio::net::TcpListener, limit: Arc<Semaphore>) -> std::io::Result<()> {
        loop {
            let (sock, _) = listener.accept().await?;
            let permit = limit.clone().acquire_owned().await.expect("semaphore");
            tokio::spawn(async move {
                let r = handle_conn(sock).await;
                drop(permit);
                r
            });
        }
    }

    async fn handle_conn(mut sock: tokio::net::TcpStream) -> std::io::Result<()> {
        let (rd, mut wr) = sock.split();
        let mut lines = BufReader::new(rd).lines();
        while let Some(line) = lines.next_line().await? {
            let req = parse(&line);
            let resp = route(req).await;
            wr.write_all(&resp.body).await?;
        }
        Ok(())
    }

    fn parse(line: &str) -> Request {
        Request { id: line.len() as u64, path: line.to_string(), ..Default::default() }
    }

    pub async fn route(req: Request) -> Response {
        match req.path.as_str() {
            "/a" => handler_a(req).await,
            "/b" => handler_b(req).await,
            _ => tokio::time::timeout(Duration::from_millis(10), handler_c(req))
                .await
                .unwrap_or_default(),
        }
    }

    async fn handler_a(req: Request) -> Response {
        tokio::time::sleep(Duration::from_millis(1)).await;
        Response { id: req.id, status: 200, body: req.body }
    }

    async fn handler_b(req: Request) -> Response {
        let (tx, rx) = oneshot::channel();
        tokio::spawn(async move {
            let _ = tx.send(req.id * 2);
        });
        let id = rx.await.unwrap_or(0);
        Response { id, status: 201, body: vec![] }
    }

    async fn handler_c(req: Request) -> Response {
        let shared = Arc::new(RwLock::new(HashMap::<u64, Request>::new()));
        shared.write().await.insert(req.id, req.clone());
        let n = shared.read().await.len();
        Response { id: req.id, status: 200 + n as u16, body: req.body }
    }

    pub async fn files(p: &str) -> std::io::Result<usize> {
        let s = tokio::fs::read_to_string(p).await?;
        let mut f = tokio::fs::File::create("/dev/null").await?;
        f.write_all(s.as_bytes()).await?;
        let mut back = String::new();
        tokio::fs::File::open(p).await?.read_to_string(&mut back).await?;
        Ok(s.len() + back.len())
    }

    pub async fn process() -> std::io::Result<bool> {
        let out = tokio::process::Command::new("true").output().await?;
        Ok(out.status.success())
    }

    pub async fn pipeline(n: u64) -> u64 {
        let (tx, mut rx) = mpsc::channel::<u64>(16);
        let (btx, mut brx) = broadcast::channel::<u64>(16);
        let (wtx, mut wrx) = watch::channel(0u64);
        let notify = Arc::new(Notify::new());
        let m = Arc::new(Mutex::new(0u64));
        let producer = tokio::spawn(async move {
            for i in 0..n {
                tx.send(i).await.ok();
            }
        });
        let n2 = notify.clone();
        let m2 = m.clone();
        let consumer = tokio::spawn(async move {
            while let Some(v) = rx.recv().await {
                *m2.lock().await += v;
                let _ = btx.send(v);
                let _ = wtx.send(v);
            }
            n2.notify_one();
        });
        tokio::select! {
            _ = notify.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            v = brx.recv() => { let _ = v; }
            _ = wrx.changed() => {}
        }
        let _ = tokio::join!(producer, consumer);
        let total = *m.lock().await;
        total
    }

    pub async fn ticker() {
        let mut iv = tokio::time::interval(Duration::from_millis(5));
        for _ in 0..3 {
            iv.tick().await;
        }
        tokio::task::yield_now().await;
        let _ = tokio::task::spawn_blocking(|| 1 + 1).await;
    }

    pub async fn signals() {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = tokio::time::sleep(Duration::from_millis(1)) => {}
        }
    }

    pub async fn udp() -> std::io::Result<usize> {
        let s = tokio::net::UdpSocket::bind("127.0.0.1:0").await?;
        let addr = s.local_addr()?;
        s.send_to(b"x", addr).await?;
        let mut buf = [0u8; 8];
        let (n, _) = s.recv_from(&mut buf).await?;
        Ok(n)
    }
}

pub mod async_std_side {
    use super::*;
    use async_std::prelude::*;

    pub async fn serve(addr: &str) -> std::io::Result<()> {
        let listener = async_std::net::TcpListener::bind(addr).await?;
        let mut incoming = listener.incoming();
        while let Some(stream) = incoming.next().await {
            let stream = stream?;
            async_std::task::spawn(async move {
                let (r, w) = &mut (&stream, &stream);
                let _ = async_std::io::copy(r, w).await;
            });
        }
        Ok(())
    }

    pub async fn channels(n: u32) -> u32 {
        let (tx, rx) = async_std::channel::bounded(8);
        let h = async_std::task::spawn(async move {
            for i in 0..n {
                tx.send(i).await.ok();
            }
        });
        let mut sum = 0;
        while let Ok(v) = rx.recv().await {
            sum += v;
        }
        h.await;
        sum
    }

    pub async fn files(p: &str) -> std::io::Result<usize> {
        let s = async_std::fs::read_to_string(p).await?;
        let mut entries = async_std::fs::read_dir("/").await?;
        let mut n = 0;
        while let Some(e) = entries.next().await {
            let _ = e?;
            n += 1;
        }
        Ok(s.len() + n)
    }

    pub async fn timeouts() -> Result<(), async_std::future::TimeoutError> {
        async_std::future::timeout(Duration::from_millis(5), async_std::task::sleep(Duration::from_millis(1))).await
    }

    pub async fn locks() -> usize {
        let m = Arc::new(async_std::sync::Mutex::new(Vec::<Request>::new()));
        let rw = async_std::sync::RwLock::new(HashMap::<String, Response>::new());
        m.lock().await.push(Request::default());
        rw.write().await.insert("a".into(), Response::default());
        let a = m.lock().await.len();
        let b = rw.read().await.len();
        a + b
    }

    pub async fn process() -> std::io::Result<bool> {
        let st = async_std::process::Command::new("true").status().await?;
        Ok(st.success())
    }
}

pub mod smol_side {
    use super::*;
    use smol::prelude::*;

    pub async fn serve(addr: &str) -> std::io::Result<()> {
        let listener = smol::net::TcpListener::bind(addr).await?;
        loop {
            let (stream, _) = listener.accept().await?;
            smol::spawn(async move {
                let mut w = stream.clone();
                let _ = smol::io::copy(stream, &mut w).await;
            })
            .detach();
        }
    }

    pub async fn channels(n: u32) -> u32 {
        let (tx, rx) = smol::channel::unbounded();
        let ex = smol::Executor::new();
        let t = ex.spawn(async move {
            for i in 0..n {
                tx.send(i).await.ok();
            }
        });
        ex.run(async {
            let mut sum = 0;
            while let Ok(v) = rx.recv().await {
                sum += v;
            }
            t.await;
            sum
        })
        .await
    }

    pub async fn timers() {
        smol::Timer::after(Duration::from_millis(1)).await;
        let _ = smol::future::or(async { 1 }, async { 2 }).await;
    }

    pub async fn files(p: &str) -> std::io::Result<usize> {
        let mut f = smol::fs::File::open(p).await?;
        let mut s = String::new();
        f.read_to_string(&mut s).await?;
        Ok(s.len())
    }

    pub async fn unblock() -> usize {
        smol::unblock(|| std::fs::read_dir("/").map(|d| d.count()).unwrap_or(0)).await
    }
}

pub mod futures_side {
    use futures::stream::{FuturesUnordered, StreamExt};
    use futures::{FutureExt, SinkExt};

    pub async fn fan_out(n: u64) -> u64 {
        let mut set: FuturesUnordered<_> = (0..n).map(|i| async move { i * 2 }).collect();
        let mut total = 0;
        while let Some(v) = set.next().await {
            total += v;
        }
        let all = futures::future::join_all((0..n).map(|i| async move { i + 1 })).await;
        total + all.iter().sum::<u64>()
    }

    pub async fn buffered(n: u64) -> Vec<u64> {
        futures::stream::iter(0..n)
            .map(|i| async move { i * i })
            .buffer_unordered(4)
            .filter(|v| futures::future::ready(v % 2 == 0))
            .collect()
            .await
    }

    pub async fn selecting() -> u8 {
        let a = async { 1u8 }.fuse();
        let b = async { 2u8 }.fuse();
        futures::pin_mut!(a, b);
        futures::select! {
            x = a => x,
            y = b => y,
        }
    }

    pub async fn mpsc_pipe(n: u32) -> u32 {
        let (mut tx, mut rx) = futures::channel::mpsc::channel::<u32>(4);
        let send = async move {
            for i in 0..n {
                tx.send(i).await.ok();
            }
        };
        let recv = async move {
            let mut s = 0;
            while let Some(v) = rx.next().await {
                s += v;
            }
            s
        };
        let ((), s) = futures::join!(send, recv);
        s
    }

    pub async fn locked() -> usize {
        let m = futures::lock::Mutex::new(vec![1, 2, 3]);
        let g = m.lock().await;
        g.len()
    }
}

pub mod cpu_side {
    use petgraph::algo::dijkstra;
    use petgraph::graph::Graph;
    use rayon::prelude::*;

    pub fn crunch(n: u64) -> u64 {
        (0..n).into_par_iter().map(|x| x * x % 7).sum()
    }

    pub fn routes(text: &str) -> Vec<String> {
        let re = regex::Regex::new(r"(?P<verb>GET|POST) (?P<path>/[a-z/]*)").unwrap();
        re.captures_iter(text).map(|c| c["path"].to_string()).collect()
    }

    pub fn graph() -> usize {
        let mut g = Graph::<&str, u32>::new();
        let a = g.add_node("a");
        let b = g.add_node("b");
        let c = g.add_node("c");
        g.extend_with_edges([(a, b, 1), (b, c, 2), (a, c, 5)]);
        dijkstra(&g, a, None, |e| *e.weight()).len()
    }

    pub fn crossbeam(n: u32) -> u32 {
        let (tx, rx) = crossbeam_channel::bounded(4);
        std::thread::spawn(move || {
            for i in 0..n {
                tx.send(i).ok();
            }
        });
        rx.iter().sum()
    }
}

/// Many handlers, as a real service has: each its own async fns and types.
macro_rules! services {
    ($($name:ident: $t:ty),* $(,)?) => {
        $(
            pub mod $name {
                use super::*;

                #[derive(Serialize, Deserialize, Debug, Clone, Default)]
                pub struct State {
                    pub items: Vec<$t>,
                    pub index: HashMap<String, $t>,
                    pub hits: u64,
                }

                pub async fn load(state: Arc<tokio::sync::Mutex<State>>, v: $t) -> usize {
                    let mut s = state.lock().await;
                    s.items.push(v.clone());
                    s.index.insert(format!("{:?}", v), v);
                    s.hits += 1;
                    s.items.len()
                }

                pub async fn fetch(state: Arc<tokio::sync::Mutex<State>>, key: String) -> Option<$t> {
                    tokio::task::yield_now().await;
                    let s = state.lock().await;
                    s.index.get(&key).cloned()
                }

                pub async fn fan(state: Arc<tokio::sync::Mutex<State>>, v: $t) -> usize {
                    let (a, b) = tokio::join!(load(state.clone(), v.clone()), fetch(state.clone(), format!("{:?}", v)));
                    a + b.map(|_| 1).unwrap_or(0)
                }

                pub async fn across_runtimes(v: $t) -> usize {
                    let (tx, rx) = async_std::channel::bounded::<$t>(1);
                    tx.send(v).await.ok();
                    let got = rx.recv().await.ok();
                    let sm = smol::future::yield_now();
                    sm.await;
                    got.map(|_| 1).unwrap_or(0)
                }

                pub async fn with_timeout(state: Arc<tokio::sync::Mutex<State>>, v: $t) -> usize {
                    match tokio::time::timeout(Duration::from_millis(50), fan(state, v.clone())).await {
                        Ok(n) => n + across_runtimes(v).await,
                        Err(_) => 0,
                    }
                }

                pub async fn run(v: $t) -> usize {
                    let state = Arc::new(tokio::sync::Mutex::new(State::default()));
                    let h = tokio::spawn(with_timeout(state.clone(), v.clone()));
                    let n = h.await.unwrap_or(0);
                    n + futures::future::join_all((0..3).map(|_| load(state.clone(), v.clone()))).await.len()
                }
            }
        )*
    };
}

services! {
    users: String, orders: u64, items: Vec<u8>, carts: (u32, String), sessions: Request,
    payments: Response, invoices: Option<u64>, shipping: (u8, u16, u32), returns: Vec<String>,
    reviews: (String, u8), search: Vec<(u64, u64)>, catalog: i64, inventory: (i32, i32),
    pricing: f64, tax: (f64, String), auth: [u8; 16], tokens: Option<String>, audit: Vec<Request>,
    metrics: HashMap<String, u64>, logs: (String, String, u64), notify: Vec<Response>,
    email: (String, Vec<String>), sms: (u64, String), push: Option<Request>, admin: (bool, String),
    reports: Vec<Vec<u64>>, exports: (Vec<u8>, String), imports: Option<Vec<u8>>, cache: (u64, Vec<u8>),
    queue: std::collections::VecDeque<u64>, scheduler: (u64, Option<String>), webhooks: (String, Request),
    partners: Vec<(String, u64)>, loyalty: (u64, i64), coupons: Option<(String, u8)>, gifts: (String, u64, bool),
    support: Vec<(u64, String)>, chat: (String, Vec<Response>), media: Box<[u8]>, thumbnails: (u32, u32, Vec<u8>),
}

async fn tokio_main() -> usize {
    let mut n = 0;
    n += tokio_side::pipeline(10).await as usize;
    tokio_side::ticker().await;
    tokio_side::signals().await;
    n += tokio_side::udp().await.unwrap_or(0);
    n += tokio_side::files("/etc/hostname").await.unwrap_or(0);
    n += tokio_side::process().await.map(|b| b as usize).unwrap_or(0);
    let r = tokio_side::route(Request { path: "/a".into(), ..Default::default() }).await;
    n += r.status as usize;
    n += users::run("u".into()).await;
    n += orders::run(1).await;
    n += items::run(vec![1]).await;
    n += carts::run((1, "c".into())).await;
    n += sessions::run(Request::default()).await;
    n += payments::run(Response::default()).await;
    n += invoices::run(Some(1)).await;
    n += shipping::run((1, 2, 3)).await;
    n += returns::run(vec![]).await;
    n += reviews::run(("r".into(), 5)).await;
    n += search::run(vec![(1, 2)]).await;
    n += catalog::run(-1).await;
    n += inventory::run((1, 2)).await;
    n += pricing::run(1.5).await;
    n += tax::run((0.2, "eu".into())).await;
    n += auth::run([0; 16]).await;
    n += tokens::run(None).await;
    n += audit::run(vec![]).await;
    n += metrics::run(HashMap::new()).await;
    n += logs::run(("a".into(), "b".into(), 1)).await;
    n += notify::run(vec![]).await;
    n += email::run(("e".into(), vec![])).await;
    n += sms::run((1, "s".into())).await;
    n += push::run(None).await;
    n += admin::run((true, "a".into())).await;
    n += reports::run(vec![vec![1]]).await;
    n += exports::run((vec![], "x".into())).await;
    n += imports::run(None).await;
    n += cache::run((1, vec![])).await;
    n += queue::run(Default::default()).await;
    n += scheduler::run((1, None)).await;
    n += webhooks::run(("w".into(), Request::default())).await;
    n += partners::run(vec![]).await;
    n += loyalty::run((1, -1)).await;
    n += coupons::run(None).await;
    n += gifts::run(("g".into(), 1, false)).await;
    n += support::run(vec![]).await;
    n += chat::run(("c".into(), vec![])).await;
    n += media::run(Box::new([1u8, 2])).await;
    n += thumbnails::run((1, 1, vec![])).await;
    n
}

fn main() {
    env_logger::init();
    tracing::info!("starting");
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let mut n = rt.block_on(tokio_main());
    n += async_std::task::block_on(async {
        async_std_side::channels(5).await as usize
            + async_std_side::files("/etc/hostname").await.unwrap_or(0)
            + async_std_side::timeouts().await.is_ok() as usize
            + async_std_side::locks().await
            + async_std_side::process().await.map(|b| b as usize).unwrap_or(0)
    });
    n += smol::block_on(async {
        smol_side::timers().await;
        smol_side::channels(5).await as usize + smol_side::files("/etc/hostname").await.unwrap_or(0) + smol_side::unblock().await
    });
    n += futures::executor::block_on(async {
        futures_side::fan_out(4).await as usize
            + futures_side::buffered(8).await.len()
            + futures_side::selecting().await as usize
            + futures_side::mpsc_pipe(4).await as usize
            + futures_side::locked().await
    });
    n += cpu_side::crunch(1000) as usize + cpu_side::routes("GET /a POST /b/c").len() + cpu_side::graph() + cpu_side::crossbeam(4) as usize;
    if std::env::args().nth(1).as_deref() == Some("--serve") {
        let _ = rt.block_on(async {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            tokio_side::serve(l, Arc::new(tokio::sync::Semaphore::new(4))).await
        });
        let _ = async_std::task::block_on(async_std_side::serve("127.0.0.1:0"));
        let _ = smol::block_on(smol_side::serve("127.0.0.1:0"));
    }
    println!("{n}");
}
BIGAPP_EOF
	# one cached build per toolchain: switching between rustup's and Debian's
	# rustc must not rebuild everything each time
	local rustc_version tag
	rustc_version="$(PATH="$(dirname "$cargo"):$PATH" rustc --version 2>/dev/null)" || {
		echo "no rustc next to $cargo" >&2
		return 1
	}
	tag="$(echo "$rustc_version" | awk '{ v = $2; h = $3; gsub(/[^0-9A-Za-z.]/, "", h); print v (h ? "-" h : "") }')"
	local target="$out/target-$tag" log="$out/bigapp-build.log"
	echo "bench: building $dir with $rustc_version (offline, opt-level 0, debug = true; cached in $target)" >&2
	if ! (cd "$dir" && PATH="$(dirname "$cargo"):$PATH" CARGO_TARGET_DIR="$target" \
		"$cargo" build --offline >"$log" 2>&1); then
		tail -n 20 "$log" >&2
		echo "cargo build failed (log: $log)" >&2
		return 1
	fi
	echo "$rustc_version" >"$target/rustc-version"
	echo "$target/debug/bigapp"
}

biggest_fixture() {
	ls -S "$root"/tests/fixtures/bin/*/* 2>/dev/null | head -n 1
}

binary="${1:-${BENCH_BINARY:-}}"
binary_note=""
if [ -n "$binary" ]; then
	[ -f "$binary" ] || die "$binary: no such file"
	binary_note="given on the command line"
elif binary="$(build_bigapp)"; then
	binary_note="the benchmark service .output/bench/bigapp (tokio full, async-std, smol, futures, regex, rayon, serde, petgraph; opt-level 0, debug = true; $(cat "$(dirname "$(dirname "$binary")")/rustc-version"))"
else
	binary="$(biggest_fixture)"
	[ -n "$binary" ] || die "no benchmark binary: cannot build .output/bench/bigapp and no fixtures (make fixtures)"
	binary_note="the biggest fixture; the larger benchmark service could not be built (see above)"
	echo "bench: falling back to $binary" >&2
fi

# .debug_info size from the section headers (hex Size column of readelf -SW)
debug_info_line="$(readelf -SW "$binary" | grep -E '[[:space:]]\.debug_info[[:space:]]' || true)"
[ -n "$debug_info_line" ] || die "$binary has no .debug_info section"
debug_info_size=$((16#$(echo "$debug_info_line" | sed -E 's/.*\.debug_info[[:space:]]+[A-Z_]+[[:space:]]+[0-9a-f]+[[:space:]]+[0-9a-f]+[[:space:]]+([0-9a-f]+).*/\1/')))
compressed=""
echo "$debug_info_line" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[WAXMSILOGTCxoEDlp]+$/ && $i ~ /C/) f = 1 } END { exit !f }' &&
	compressed=" (compressed on disk: SHF_COMPRESSED)"
file_size=$(stat -c %s "$binary")

json="$out/analyze.json"
timing="$out/time.txt"

# run TOOL: one timed run; appends "tool wall_s maxrss_kb user_s sys_s" to $samples
run_once() {
	local tool="$1"
	case "$tool" in
	asyncbpf)
		/usr/bin/time -f '%e %M %U %S' -o "$timing" "$asyncbpf" analyze "$binary" --json "$json" >/dev/null 2>"$out/analyze.stderr" ||
			die "asyncbpf analyze failed: $(tail -n 3 "$out/analyze.stderr")"
		;;
	objdump)
		/usr/bin/time -f '%e %M %U %S' -o "$timing" objdump --dwarf=info "$binary" >/dev/null 2>"$out/objdump.stderr" ||
			die "objdump --dwarf=info failed: $(tail -n 3 "$out/objdump.stderr")"
		;;
	esac
	echo "$tool $(tail -n 1 "$timing")" >>"$samples"
}

# One more, untimed run of asyncbpf, sampling /proc/PID/status every 20 ms: how
# much of the peak RSS is anonymous memory (heap: the model, libdw's caches) and
# how much is file-backed (the binary's sections that libelf mmaps and the walk
# touches, shared libraries). Prints "anon_kb file_kb" (sampled maxima).
sample_rss_breakdown() {
	"$asyncbpf" analyze "$binary" --json "$json" >/dev/null 2>&1 &
	local pid=$! anon=0 file=0 line state a f
	while :; do
		line="$(awk '/^State:/ { s = $2 } /^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 }
			END { print s, a + 0, f + 0 }' "/proc/$pid/status" 2>/dev/null)" || break
		read -r state a f <<<"$line"
		[ -z "$state" ] || [ "$state" = Z ] && break
		[ "$a" -gt "$anon" ] && anon=$a
		[ "$f" -gt "$file" ] && file=$f
		sleep 0.02
	done
	wait "$pid" || die "asyncbpf analyze failed (RSS sampling run)"
	echo "$anon $file"
}

samples="$(mktemp "${TMPDIR:-/tmp}/asyncbpf-bench.XXXXXX")"
trap 'rm -f "$samples"' EXIT

printf 'bench: %s\n       %s, %d bytes, .debug_info %d bytes%s\n' "$binary" "$binary_note" \
	"$file_size" "$debug_info_size" "$compressed"
echo "bench: warm-up (untimed), then $runs timed runs of each, alternating"
cat "$binary" >/dev/null
"$asyncbpf" analyze "$binary" --json "$json" >/dev/null 2>&1 || die "asyncbpf analyze $binary failed"
objdump --dwarf=info "$binary" >/dev/null 2>&1 || die "objdump --dwarf=info $binary failed"
: >"$samples"
for ((i = 1; i <= runs; i++)); do
	run_once asyncbpf
	run_once objdump
done

read -r peak_anon_kb peak_file_kb <<<"$(sample_rss_breakdown)"

awk -v dis="$debug_info_size" -v anon="$peak_anon_kb" -v file="$peak_file_kb" -v tt="$TIME_TARGET" -v rt="$RSS_TARGET" -v runs="$runs" '
function median(a, n,    i, j, t) {
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
	n[$1]++
	wall[$1, n[$1]] = $2
	if ($3 > rss[$1]) rss[$1] = $3
	cpu[$1, n[$1]] = $4 + $5
	walls[$1] = walls[$1] sprintf(" %.2f", $2)
}
END {
	for (t in n) {
		for (i = 1; i <= n[t]; i++) { w[i] = wall[t, i]; c[i] = cpu[t, i] }
		mw[t] = median(w, n[t]); mc[t] = median(c, n[t])
	}
	printf "\n%-9s %10s %10s %12s   %s\n", "", "wall (s)", "CPU (s)", "peak RSS", "wall per run"
	printf "%-9s %10.2f %10.2f %9.1f MiB  %s\n", "asyncbpf", mw["asyncbpf"], mc["asyncbpf"], rss["asyncbpf"] / 1024, walls["asyncbpf"]
	printf "%-9s %10.2f %10.2f %9.1f MiB  %s\n", "objdump", mw["objdump"], mc["objdump"], rss["objdump"] / 1024, walls["objdump"]
	printf "(median of %d runs; CPU = user + sys; peak RSS = the largest of the runs)\n\n", runs
	time_ratio = mw["objdump"] > 0 ? mw["asyncbpf"] / mw["objdump"] : 0
	rss_ratio = rss["asyncbpf"] * 1024 / dis
	tp = time_ratio <= tt ? "PASS" : "MISS"
	rp = rss_ratio <= rt ? "PASS" : "MISS"
	printf "time:   asyncbpf / objdump wall time     = %.3f  (target <= %.1f)  %s\n", time_ratio, tt, tp
	cpu_ratio = mc["objdump"] > 0 ? mc["asyncbpf"] / mc["objdump"] : 0
	printf "cpu:    asyncbpf / objdump user+sys time = %.3f  (for reference: less noisy than wall time on a busy machine)\n", cpu_ratio
	printf "memory: asyncbpf peak RSS / .debug_info  = %.3f  (%.1f MiB / %.1f MiB, target <= %.1f)  %s\n",
		rss_ratio, rss["asyncbpf"] / 1024, dis / 1048576, rt, rp
	printf "        of which (sampled, one extra run): anonymous %.1f MiB = %.3f x .debug_info; file-backed %.1f MiB\n",
		anon / 1024, anon * 1024 / dis, file / 1024
	printf "        (file-backed: the mmapped binary sections the walk reads, .debug_info and .debug_str first, and shared libraries)\n"
}' "$samples" | tee "$out/analyze-results.txt"
missed=0
grep -q MISS "$out/analyze-results.txt" && missed=1
{
	echo
	echo "binary: $binary ($binary_note)"
	echo "date: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $(uname -r)"
	echo "asyncbpf: $asyncbpf, objdump: $(objdump --version | head -n 1)"
} >>"$out/analyze-results.txt"
echo "bench: results in $out/analyze-results.txt; the model in $json"
if [ "$missed" = 1 ] && [ "${BENCH_STRICT:-0}" = 1 ]; then
	exit 1
fi
exit 0
