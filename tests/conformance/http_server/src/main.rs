//! `http_server`: a small keep-alive HTTP/1.1 server on tokio (multi-thread), and
//! `http_server client`, a load generator for it. Written for asyncbpf's
//! conformance test and throughput benchmark: the shape of a real service (an
//! accept loop, one task per connection running `async fn serve(..) ->
//! io::Result<()>`, a router awaiting a little async work), with its own counts.
//!
//!   http_server [--port P] [--workers N]
//!       listens on 127.0.0.1:P (0: any free port) and prints {"listening":PORT,"pid":PID};
//!       on SIGTERM or SIGINT prints its counts as one JSON line and exits 0:
//!       {"connections":C,"connections_completed":D,"requests":R,"routes":{...}}
//!       (a connection is completed when serve() returned Ok: the client closed it).
//!   http_server client PORT CONNECTIONS REQUESTS
//!       CONNECTIONS keep-alive connections, REQUESTS each, in turn over
//!       /hello and /work?n=3; checks every response; prints
//!       {"connections":C,"requests":R,"ok":R} and exits 0 when all were right.
//!
//! Routes: GET /hello -> "hello\n"; GET /work?n=K -> K yields and a checksum;
//! anything else -> 404. HTTP/1.1 keep-alive unless "Connection: close".

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

#[derive(Default)]
struct Counts {
    connections: AtomicU64,
    completed: AtomicU64,
    requests: AtomicU64,
    routes: Mutex<BTreeMap<String, u64>>,
}

struct Request {
    path: String,
    close: bool,
}

/// One request's head: None at a clean end of the connection.
async fn read_request<R: AsyncBufReadExt + Unpin>(r: &mut R) -> io::Result<Option<Request>> {
    let mut line = String::new();
    if r.read_line(&mut line).await? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
    if method != "GET" {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "only GET"));
    }
    let path = path.to_string();
    let mut close = false;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).await? == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "headers cut"));
        }
        if h == "\r\n" || h == "\n" {
            break;
        }
        if h.to_ascii_lowercase().starts_with("connection:") && h.to_ascii_lowercase().contains("close") {
            close = true;
        }
    }
    Ok(Some(Request { path, close }))
}

async fn work(n: u64) -> u64 {
    let mut sum = 0u64;
    for i in 0..n {
        tokio::task::yield_now().await;
        sum = sum.wrapping_mul(31).wrapping_add(i);
    }
    sum
}

async fn route(path: &str) -> (u16, String) {
    if path == "/hello" {
        return (200, "hello\n".to_string());
    }
    if let Some(n) = path.strip_prefix("/work?n=") {
        let n: u64 = n.parse().unwrap_or(1).min(1000);
        return (200, format!("{}\n", work(n).await));
    }
    (404, "not found\n".to_string())
}

async fn serve(stream: TcpStream, counts: Arc<Counts>) -> io::Result<()> {
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::new(rd);
    while let Some(req) = read_request(&mut rd).await? {
        let (status, body) = route(&req.path).await;
        let reason = if status == 200 { "OK" } else { "Not Found" };
        let head = format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Length: {}\r\nContent-Type: text/plain\r\n{}\r\n",
            body.len(),
            if req.close { "Connection: close\r\n" } else { "" }
        );
        wr.write_all(head.as_bytes()).await?;
        wr.write_all(body.as_bytes()).await?;
        counts.requests.fetch_add(1, Ordering::Relaxed);
        let key = req.path.split('?').next().unwrap_or("").to_string();
        *counts.routes.lock().unwrap().entry(key).or_insert(0) += 1;
        if req.close {
            break;
        }
    }
    Ok(())
}

async fn accept_loop(listener: TcpListener, counts: Arc<Counts>) {
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(c) => c,
            Err(_) => continue,
        };
        // a response is two writes: without NODELAY, Nagle meets delayed ACK (40 ms)
        let _ = stream.set_nodelay(true);
        counts.connections.fetch_add(1, Ordering::Relaxed);
        let c = counts.clone();
        tokio::spawn(async move {
            if serve(stream, c.clone()).await.is_ok() {
                c.completed.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
}

async fn server(port: u16) -> io::Result<()> {
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    println!("{{\"listening\":{},\"pid\":{}}}", listener.local_addr()?.port(), std::process::id());
    let counts = Arc::new(Counts::default());
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = accept_loop(listener, counts.clone()) => {}
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    // The client has its last response when it stops us, but the connection's task
    // counts its completion only once it has read the client's close: give the
    // tasks still finishing a moment (bounded) so that the counts are final.
    for _ in 0..200 {
        if counts.completed.load(Ordering::Relaxed) >= counts.connections.load(Ordering::Relaxed) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let routes: Vec<String> =
        counts.routes.lock().unwrap().iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
    println!(
        "{{\"connections\":{},\"connections_completed\":{},\"requests\":{},\"routes\":{{{}}}}}",
        counts.connections.load(Ordering::Relaxed),
        counts.completed.load(Ordering::Relaxed),
        counts.requests.load(Ordering::Relaxed),
        routes.join(",")
    );
    Ok(())
}

/// One keep-alive connection: `requests` requests, each response checked.
async fn client_conn(port: u16, requests: u64) -> io::Result<u64> {
    let stream = TcpStream::connect(("127.0.0.1", port)).await?;
    stream.set_nodelay(true)?;
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::new(rd);
    let mut ok = 0;
    for i in 0..requests {
        let (path, expect) = if i % 2 == 0 {
            ("/hello".to_string(), "hello\n".to_string())
        } else {
            ("/work?n=3".to_string(), format!("{}\n", work(3).await))
        };
        let close = i + 1 == requests;
        let req = format!(
            "GET {path} HTTP/1.1\r\nHost: localhost\r\n{}\r\n",
            if close { "Connection: close\r\n" } else { "" }
        );
        wr.write_all(req.as_bytes()).await?;
        let mut len = 0usize;
        let mut line = String::new();
        rd.read_line(&mut line).await?;
        let status_ok = line.starts_with("HTTP/1.1 200");
        loop {
            line.clear();
            rd.read_line(&mut line).await?;
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; len];
        rd.read_exact(&mut body).await?;
        if status_ok && body == expect.as_bytes() {
            ok += 1;
        }
    }
    Ok(ok)
}

async fn client(port: u16, connections: u64, requests: u64) -> io::Result<bool> {
    let mut handles = Vec::new();
    for _ in 0..connections {
        handles.push(tokio::spawn(client_conn(port, requests)));
    }
    let mut ok = 0;
    for h in handles {
        ok += h.await.map_err(|e| io::Error::new(io::ErrorKind::Other, e))??;
    }
    println!("{{\"connections\":{connections},\"requests\":{},\"ok\":{ok}}}", connections * requests);
    Ok(ok == connections * requests)
}

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{name}: not a number")))
        .unwrap_or(default)
}

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("client") {
        let n = |i: usize| -> u64 { args.get(i).and_then(|v| v.parse().ok()).expect("client PORT CONNECTIONS REQUESTS") };
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
        let ok = rt.block_on(client(n(2) as u16, n(3), n(4)))?;
        std::process::exit(if ok { 0 } else { 1 });
    }
    let workers: usize = arg(&args, "--workers", 2);
    let port: u16 = arg(&args, "--port", 0);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_all().build()?;
    rt.block_on(server(port))
}
