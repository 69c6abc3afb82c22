//! A real HTTPS admission client for measuring the webhook on loopback: memory under bursts of
//! big admissions, a soak against two replicas with retry, and load over distinct reviews.
//!
//! ```text
//! # 64 admissions of 6 MiB at once, then the server's VmHWM/VmRSS (from /proc) after they end:
//! cargo run -p injector-server --example webhook_client -- burst \
//!     --addr 127.0.0.1:15017 --ca ca.pem --pid $(pgrep -n sidecar-injector) \
//!     --concurrency 64 --body-kib 6000 --rounds 3
//! # 200 admissions/s for 600 s, alternating between two replicas, retrying the other on failure:
//! cargo run -p injector-server --example webhook_client -- soak \
//!     --addr 127.0.0.1:15017 --addr 127.0.0.1:15018 --ca ca.pem --rate 200 --seconds 600
//! # Closed-loop load over a rotating set of distinct reviews (one JSON review per line), as
//! # h2load's -c/-m would send one body: 2 connections x 4 streams, 1 s warm-up, 8 s measured:
//! cargo run -p injector-server --example webhook_client -- load \
//!     --addr 127.0.0.1:15017 --ca ca.pem --bodies distinct.jsonl --connections 2 --streams 4 \
//!     --warmup 1 --seconds 8
//! ```
//!
//! Bodies are `admission.k8s.io/v1` AdmissionReviews of a pod whose annotations pad it to the
//! asked size (`--annotations N` instead makes N small annotations, the shape that costs the
//! decoded tree most); `load` sends the reviews of its `--bodies` file in turn. Output is one line
//! of `key=value` figures per phase.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::{Parser, Subcommand};
use http::{Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::Mutex;

#[derive(Parser)]
#[command(about = "HTTPS admission client: memory bursts and a two-replica soak")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Concurrent big admissions; prints the server's memory after each round and at the end.
    Burst {
        /// The server's HTTPS address.
        #[arg(long)]
        addr: SocketAddr,
        /// CA certificate (PEM) that signed the serving certificate.
        #[arg(long)]
        ca: PathBuf,
        /// The server's process id, for /proc/PID/status.
        #[arg(long)]
        pid: u32,
        /// Admissions sent at once.
        #[arg(long, default_value_t = 64)]
        concurrency: usize,
        /// Size of each body in KiB (padded with one big annotation).
        #[arg(long, default_value_t = 6000)]
        body_kib: usize,
        /// Instead of padding: this many small annotations.
        #[arg(long)]
        annotations: Option<usize>,
        /// Bursts, one after the other.
        #[arg(long, default_value_t = 1)]
        rounds: usize,
        /// Seconds to wait after the last burst before reading the settled RSS.
        #[arg(long, default_value_t = 3)]
        settle: u64,
    },
    /// Steady load against replicas in turn; a failed admission is retried on the next one.
    Soak {
        /// HTTPS addresses of the replicas (repeat).
        #[arg(long = "addr", required = true)]
        addrs: Vec<SocketAddr>,
        /// CA certificate (PEM).
        #[arg(long)]
        ca: PathBuf,
        /// Admissions per second.
        #[arg(long, default_value_t = 200)]
        rate: u32,
        /// Length of the run.
        #[arg(long, default_value_t = 600)]
        seconds: u64,
        /// Per-attempt timeout in seconds (the API server's webhook timeout).
        #[arg(long, default_value_t = 10)]
        timeout: u64,
    },
    /// Closed-loop load: `connections` HTTP/2 connections with `streams` admissions in flight on
    /// each, every admission the next review of `bodies` in turn; prints throughput and latency.
    Load {
        /// The server's HTTPS address.
        #[arg(long)]
        addr: SocketAddr,
        /// CA certificate (PEM).
        #[arg(long)]
        ca: PathBuf,
        /// AdmissionReviews, one JSON document per line.
        #[arg(long)]
        bodies: PathBuf,
        /// HTTP/2 connections.
        #[arg(long, default_value_t = 2)]
        connections: usize,
        /// Admissions in flight per connection.
        #[arg(long, default_value_t = 4)]
        streams: usize,
        /// Seconds of load before measuring.
        #[arg(long, default_value_t = 1)]
        warmup: u64,
        /// Seconds measured.
        #[arg(long, default_value_t = 8)]
        seconds: u64,
    },
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    match Cli::parse().command {
        Command::Burst {
            addr,
            ca,
            pid,
            concurrency,
            body_kib,
            annotations,
            rounds,
            settle,
        } => burst(addr, &ca, pid, concurrency, body_kib, annotations, rounds, settle).await,
        Command::Soak {
            addrs,
            ca,
            rate,
            seconds,
            timeout,
        } => soak(addrs, &ca, rate, seconds, Duration::from_secs(timeout)).await,
        Command::Load {
            addr,
            ca,
            bodies,
            connections,
            streams,
            warmup,
            seconds,
        } => {
            let plan = LoadPlan {
                connections: connections.max(1),
                streams: streams.max(1),
                warmup: Duration::from_secs(warmup),
                measured: Duration::from_secs(seconds.max(1)),
            };
            load(addr, &ca, &bodies, plan).await
        }
    }
}

/// `VmHWM` and `VmRSS` of a process, in KiB.
fn memory_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// An AdmissionReview whose pod is padded to about `body_kib` KiB, or has `annotations`
/// small annotations.
fn review(uid: &str, body_kib: usize, annotations: Option<usize>) -> Vec<u8> {
    let annotations: serde_json::Map<String, Value> = match annotations {
        Some(n) => (0..n)
            .map(|i| (format!("example.com/a{i}"), Value::String(format!("v{i}"))))
            .collect(),
        None => [(
            "example.com/padding".to_owned(),
            Value::String("x".repeat(body_kib.saturating_mul(1024).saturating_sub(800))),
        )]
        .into_iter()
        .collect(),
    };
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": uid, "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "namespace": "default", "operation": "CREATE",
            "object": {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"generateName": "web-", "labels": {"app": "web"}, "annotations": annotations},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}}}
    }))
    .unwrap_or_default()
}

fn tls_connector(ca: &Path) -> Result<tokio_rustls::TlsConnector, String> {
    let pem = std::fs::read(ca).map_err(|e| format!("reading {}: {e}", ca.display()))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| format!("{}: {e}", ca.display()))?;
        roots.add(cert).map_err(|e| format!("{}: {e}", ca.display()))?;
    }
    let mut config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

type Sender = hyper::client::conn::http2::SendRequest<Full<Bytes>>;

async fn connect(connector: &tokio_rustls::TlsConnector, addr: SocketAddr) -> Result<Sender, String> {
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let name = ServerName::try_from("localhost").map_err(|e| e.to_string())?;
    let tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS: {e}"))?;
    let (sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
        .await
        .map_err(|e| format!("HTTP/2: {e}"))?;
    tokio::spawn(conn);
    Ok(sender)
}

/// Posts one review; `Ok` only for a 200 whose review says `allowed: true`.
async fn post(sender: &mut Sender, body: Bytes) -> Result<(), String> {
    let req = Request::post("https://localhost/inject")
        .header("content-type", "application/json")
        .body(Full::new(body))
        .map_err(|e| e.to_string())?;
    sender.ready().await.map_err(|e| format!("not ready: {e}"))?;
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| format!("request: {e}"))?;
    let status = resp.status();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("response body: {e}"))?
        .to_bytes();
    if status != StatusCode::OK {
        return Err(format!(
            "HTTP {status}: {}",
            String::from_utf8_lossy(&body).trim()
        ));
    }
    let review: Value = serde_json::from_slice(&body).map_err(|e| format!("response JSON: {e}"))?;
    if review["response"]["allowed"] != true {
        return Err(format!("denied: {}", review["response"]["status"]["message"]));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn burst(
    addr: SocketAddr,
    ca: &Path,
    pid: u32,
    concurrency: usize,
    body_kib: usize,
    annotations: Option<usize>,
    rounds: usize,
    settle: u64,
) -> Result<(), String> {
    let connector = tls_connector(ca)?;
    let body = Bytes::from(review("burst", body_kib, annotations));
    let (hwm, rss) = memory_kib(pid);
    println!(
        "phase=before body_bytes={} concurrency={concurrency} vmhwm_kib={hwm} vmrss_kib={rss}",
        body.len()
    );
    for round in 1..=rounds {
        let start = Instant::now();
        let tasks: Vec<_> = (0..concurrency)
            .map(|_| {
                let connector = connector.clone();
                let body = body.clone();
                tokio::spawn(async move {
                    let mut sender = connect(&connector, addr).await?;
                    post(&mut sender, body).await
                })
            })
            .collect();
        let (mut ok, mut failed) = (0, Vec::new());
        for task in tasks {
            match task.await {
                Ok(Ok(())) => ok += 1,
                Ok(Err(e)) => failed.push(e),
                Err(e) => failed.push(e.to_string()),
            }
        }
        let (hwm, rss) = memory_kib(pid);
        failed.sort();
        failed.dedup();
        println!(
            "phase=round{round} ok={ok} failed={} seconds={:.2} vmhwm_kib={hwm} vmrss_kib={rss} errors={failed:?}",
            concurrency - ok,
            start.elapsed().as_secs_f64()
        );
    }
    tokio::time::sleep(Duration::from_secs(settle)).await;
    let (hwm, rss) = memory_kib(pid);
    println!("phase=settled vmhwm_kib={hwm} vmrss_kib={rss}");
    Ok(())
}

/// One replica's shared HTTP/2 connection, reopened after a failure.
struct Replica {
    addr: SocketAddr,
    sender: Mutex<Option<Sender>>,
}

impl Replica {
    async fn attempt(&self, connector: &tokio_rustls::TlsConnector, body: Bytes) -> Result<(), String> {
        let mut sender = {
            let mut slot = self.sender.lock().await;
            match slot.as_ref().filter(|s| !s.is_closed()) {
                Some(s) => s.clone(),
                None => {
                    let s = connect(connector, self.addr).await?;
                    *slot = Some(s.clone());
                    s
                }
            }
        };
        let result = post(&mut sender, body).await;
        if result.is_err() {
            *self.sender.lock().await = None;
        }
        result
    }
}

async fn soak(
    addrs: Vec<SocketAddr>,
    ca: &Path,
    rate: u32,
    seconds: u64,
    timeout: Duration,
) -> Result<(), String> {
    let connector = tls_connector(ca)?;
    let replicas: Arc<Vec<Replica>> = Arc::new(
        addrs
            .iter()
            .map(|&addr| Replica {
                addr,
                sender: Mutex::new(None),
            })
            .collect(),
    );
    let sent = Arc::new(AtomicU64::new(0));
    let retried = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let next = Arc::new(AtomicUsize::new(0));
    let latencies = Arc::new(std::sync::Mutex::new(Vec::<u32>::new()));
    let errors = Arc::new(std::sync::Mutex::new(
        std::collections::BTreeMap::<String, u64>::new(),
    ));
    let mut tick = tokio::time::interval(Duration::from_secs(1) / rate.max(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = tokio::task::JoinSet::new();
    let mut report = Instant::now();
    let mut n = 0u64;
    while Instant::now() < end {
        tick.tick().await;
        n += 1;
        let body = Bytes::from(review(&format!("soak-{n}"), 3, None));
        let (replicas, connector) = (replicas.clone(), connector.clone());
        let counters = (sent.clone(), retried.clone(), failed.clone(), next.clone());
        let (latencies, errors) = (latencies.clone(), errors.clone());
        tasks.spawn(async move {
            let (sent, retried, failed, next) = counters;
            sent.fetch_add(1, Ordering::Relaxed);
            let first = next.fetch_add(1, Ordering::Relaxed);
            let start = Instant::now();
            // One try per replica, starting with the next in turn: the API server retries a
            // failed call on another endpoint of the webhook's Service.
            for attempt in 0..replicas.len() {
                let replica = &replicas[(first + attempt) % replicas.len()];
                let result = tokio::time::timeout(timeout, replica.attempt(&connector, body.clone()))
                    .await
                    .unwrap_or_else(|_| Err("timed out".to_owned()));
                match result {
                    Ok(()) => {
                        let us = u32::try_from(start.elapsed().as_micros()).unwrap_or(u32::MAX);
                        latencies.lock().map(|mut l| l.push(us)).ok();
                        return;
                    }
                    Err(e) => {
                        if attempt + 1 < replicas.len() {
                            retried.fetch_add(1, Ordering::Relaxed);
                        }
                        let key = format!("{}: {}", replica.addr, e.chars().take(120).collect::<String>());
                        errors.lock().map(|mut m| *m.entry(key).or_default() += 1).ok();
                    }
                }
            }
            failed.fetch_add(1, Ordering::Relaxed);
        });
        while tasks.try_join_next().is_some() {}
        if report.elapsed() >= Duration::from_secs(30) {
            report = Instant::now();
            println!(
                "progress sent={} retried={} failed={}",
                sent.load(Ordering::Relaxed),
                retried.load(Ordering::Relaxed),
                failed.load(Ordering::Relaxed)
            );
        }
    }
    while tasks.join_next().await.is_some() {}
    let mut l = latencies.lock().map(|l| l.clone()).unwrap_or_default();
    l.sort_unstable();
    let pct = |p: f64| {
        let i = ((l.len() as f64 * p).ceil() as usize).clamp(1, l.len().max(1)) - 1;
        l.get(i).map_or(0.0, |&us| f64::from(us) / 1000.0)
    };
    println!(
        "result sent={} ok={} retried={} failed={} p50_ms={:.2} p99_ms={:.2} max_ms={:.2}",
        sent.load(Ordering::Relaxed),
        l.len(),
        retried.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
        pct(0.50),
        pct(0.99),
        pct(1.0)
    );
    for (error, count) in errors.lock().map(|m| m.clone()).unwrap_or_default() {
        println!("error count={count} {error}");
    }
    Ok(())
}

/// The shape of a [`load`] run.
struct LoadPlan {
    connections: usize,
    streams: usize,
    warmup: Duration,
    measured: Duration,
}

/// The reviews of a JSON-lines file, each checked to be JSON.
fn read_bodies(path: &Path) -> Result<Vec<Bytes>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let bodies: Vec<Bytes> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str::<Value>(line)
                .map(|_| Bytes::from(line.to_owned()))
                .map_err(|e| format!("{} line {}: {e}", path.display(), i + 1))
        })
        .collect::<Result<_, _>>()?;
    if bodies.is_empty() {
        return Err(format!("{}: no reviews", path.display()));
    }
    Ok(bodies)
}

async fn load(addr: SocketAddr, ca: &Path, bodies: &Path, plan: LoadPlan) -> Result<(), String> {
    let connector = tls_connector(ca)?;
    let bodies = Arc::new(read_bodies(bodies)?);
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let (measure_from, end) = (start + plan.warmup, start + plan.warmup + plan.measured);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..plan.connections {
        let sender = connect(&connector, addr).await?;
        for _ in 0..plan.streams {
            let (mut sender, bodies, next) = (sender.clone(), bodies.clone(), next.clone());
            tasks.spawn(async move {
                let (mut latencies, mut failed, mut errors) = (Vec::<u32>::new(), 0u64, Vec::new());
                loop {
                    let sent = Instant::now();
                    if sent >= end {
                        break;
                    }
                    let body = bodies[next.fetch_add(1, Ordering::Relaxed) % bodies.len()].clone();
                    let result = post(&mut sender, body).await;
                    if sent < measure_from || Instant::now() > end {
                        continue;
                    }
                    match result {
                        Ok(()) => {
                            latencies.push(u32::try_from(sent.elapsed().as_micros()).unwrap_or(u32::MAX))
                        }
                        Err(e) => {
                            failed += 1;
                            if errors.len() < 3 {
                                errors.push(e);
                            }
                        }
                    }
                }
                (latencies, failed, errors)
            });
        }
    }
    let (mut latencies, mut failed, mut errors) = (Vec::new(), 0, Vec::new());
    while let Some(done) = tasks.join_next().await {
        let (l, f, e) = done.map_err(|e| e.to_string())?;
        latencies.extend(l);
        failed += f;
        errors.extend(e);
    }
    latencies.sort_unstable();
    let pct = |p: f64| {
        let i = ((latencies.len() as f64 * p).ceil() as usize).clamp(1, latencies.len().max(1)) - 1;
        latencies.get(i).map_or(0.0, |&us| f64::from(us) / 1000.0)
    };
    println!(
        "result bodies={} ok={} failed={failed} rps={:.0} p50_ms={:.2} p99_ms={:.2} max_ms={:.2}",
        bodies.len(),
        latencies.len(),
        latencies.len() as f64 / plan.measured.as_secs_f64(),
        pct(0.50),
        pct(0.99),
        pct(1.0)
    );
    errors.sort();
    errors.dedup();
    for error in errors {
        println!("error {}", error.chars().take(200).collect::<String>());
    }
    Ok(())
}
