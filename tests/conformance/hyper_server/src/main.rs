//! `hyper_server`: hyper 0.14's own server (`Server::bind(..).serve(make_service_fn(..))`,
//! as in hyper's `hello` and `echo` examples) on a tokio multi-thread runtime. The
//! futures that run here are hyper's (`NewSvcTask`, `Connection`, `Dispatcher`, ...),
//! code nobody on the asyncbpf team wrote; this file only adds counts, so that a test
//! has ground truth to compare a trace with.
//!
//!   hyper_server [--port P] [--workers N]
//!       listens on 127.0.0.1:P (0: any free port), prints {"listening":PORT,"pid":PID};
//!       N worker threads (default 2); 0: tokio's current-thread runtime, every future
//!       on one thread (nothing it runs can wait for a lock another thread holds);
//!       on SIGTERM or SIGINT shuts down gracefully and prints its counts as one line:
//!       {"connections":C,"requests":R,"routes":{"/hello":H,"/work":W,"/echo":E}}
//!
//! Routes (the same as http_server's, so that `http_server client` can load it):
//! GET /hello -> "hello\n" (hyper's `hello` example: a response ready at once);
//! GET /work?n=K -> K `yield_now`s and a checksum; POST /echo -> the request body
//! streamed back (hyper's `echo` example); anything else -> 404.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use hyper::server::conn::AddrStream;
use hyper::service::{make_service_fn, service_fn};
use hyper::{Body, Method, Request, Response, Server, StatusCode};

#[derive(Default)]
struct Counts {
    connections: AtomicU64,
    requests: AtomicU64,
    hello: AtomicU64,
    work: AtomicU64,
    echo: AtomicU64,
}

async fn work(n: u64) -> u64 {
    let mut sum = 0u64;
    for i in 0..n {
        tokio::task::yield_now().await;
        sum = sum.wrapping_mul(31).wrapping_add(i);
    }
    sum
}

async fn handle(req: Request<Body>, counts: Arc<Counts>) -> Result<Response<Body>, Infallible> {
    counts.requests.fetch_add(1, Ordering::Relaxed);
    let path = req.uri().path().to_string();
    let resp = match (req.method(), path.as_str()) {
        (&Method::GET, "/hello") => {
            counts.hello.fetch_add(1, Ordering::Relaxed);
            Response::new(Body::from("hello\n"))
        }
        (&Method::GET, "/work") => {
            counts.work.fetch_add(1, Ordering::Relaxed);
            let n = req
                .uri()
                .query()
                .and_then(|q| q.strip_prefix("n="))
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(1)
                .min(1000);
            Response::new(Body::from(format!("{}\n", work(n).await)))
        }
        (&Method::POST, "/echo") => {
            counts.echo.fetch_add(1, Ordering::Relaxed);
            Response::new(req.into_body())
        }
        _ => {
            let mut r = Response::new(Body::from("not found\n"));
            *r.status_mut() = StatusCode::NOT_FOUND;
            r
        }
    };
    Ok(resp)
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

async fn server(port: u16) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let counts = Arc::new(Counts::default());
    let c = counts.clone();
    let make_svc = make_service_fn(move |_conn: &AddrStream| {
        c.connections.fetch_add(1, Ordering::Relaxed);
        let c = c.clone();
        async move { Ok::<_, Infallible>(service_fn(move |req| handle(req, c.clone()))) }
    });
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let server = Server::try_bind(&addr)?.tcp_nodelay(true).serve(make_svc);
    println!("{{\"listening\":{},\"pid\":{}}}", server.local_addr().port(), std::process::id());
    server.with_graceful_shutdown(shutdown_signal()).await?;
    println!(
        "{{\"connections\":{},\"requests\":{},\"routes\":{{\"/hello\":{},\"/work\":{},\"/echo\":{}}}}}",
        counts.connections.load(Ordering::Relaxed),
        counts.requests.load(Ordering::Relaxed),
        counts.hello.load(Ordering::Relaxed),
        counts.work.load(Ordering::Relaxed),
        counts.echo.load(Ordering::Relaxed)
    );
    Ok(())
}

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{name}: not a number")))
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let workers: usize = arg(&args, "--workers", 2);
    let port: u16 = arg(&args, "--port", 0);
    let rt = if workers == 0 {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_all().build()
    }
    .expect("tokio runtime");
    if let Err(e) = rt.block_on(server(port)) {
        eprintln!("hyper_server: {e}");
        std::process::exit(1);
    }
}
