//! The adversarial suite: a real `serve` child process on loopback, over real TLS, under attacks
//! any peer that can open a connection to the port could make (oversized, lying, slow and
//! stalled bodies on many connections and on many HTTP/2 streams, slow headers, idle and
//! handshake floods, deep JSON, huge annotation maps, invalid UTF-8, concurrent near-limit
//! bodies, many distinct workloads each with a big annotation the template reads).
//!
//! Each case runs its attack from one peer address (127.0.0.2) and, while it is in flight,
//! sends normal admissions one after the other from another (127.0.0.1), each on a new
//! connection (TLS handshake included) through hyper's HTTP/1.1 client: every one must be
//! answered `200` and allowed, their median within 100 ms and their p99 within a generous bound
//! (a loaded two-core CI machine running a debug build). The process's peak RSS (`VmHWM`) must
//! stay under the memory bound the server states for its flags (docs/reliability.md).
//!
//! The probe pod opts out of injection (`sidecar.istio.io/inject: "false"`): it crosses the
//! whole server path (TLS, HTTP, limits, body, budget, decode, configuration, engine decision,
//! response) without timing the debug-built template engine.
//!
//! A new case is an [`Attack`] (it spawns its clients into a `JoinSet`) added to the list in
//! [`the_server_stays_available_under_attack`]; [`under_attack`] runs it, probes, and reports
//! the figures.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Frame;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};
use tokio::task::JoinSet;

use crate::util::{Files, binary_under_test, free_port, proc_status_kib, release_binary};

/// `--max-inflight-mib` of the server under test.
const INFLIGHT_MIB: u64 = 128;
/// `--max-concurrency` of the server under test.
const MAX_CONCURRENCY: usize = 64;
/// `--max-connections` of the server under test.
const MAX_CONNECTIONS: usize = 512;
/// `--max-connections-per-peer` of the server under test.
const MAX_CONNECTIONS_PER_PEER: usize = 256;
/// The base of the memory bound for a debug build: the idle process (about 45 MiB) with room
/// for a debug build's bigger code and data (docs/reliability.md measures the release build's).
const DEBUG_BASE_MIB: u64 = 96;
/// The server's default `--render-cache-mib`.
const RENDER_CACHE_MIB: u64 = 16;
/// The server's default `--max-concurrent-streams`.
const STREAMS: u64 = 100;
/// The memory bound the server states for its flags (docs/reliability.md, "Memory bound"):
/// base + --max-connections × (48 KiB + streams × 6 KiB) + max(--max-inflight-mib, 512) +
/// --outcome-cache-mib (8) + the render cache (16).
const MEMORY_BOUND_KIB: u64 = DEBUG_BASE_MIB * 1024
    + MAX_CONNECTIONS as u64 * (48 + STREAMS * 6)
    + (if INFLIGHT_MIB > 512 { INFLIGHT_MIB } else { 512 } + 8 + RENDER_CACHE_MIB) * 1024;
/// The median answer time of a normal admission while an attack is in flight.
const PROBE_MEDIAN_BOUND: Duration = Duration::from_millis(100);
/// Their p99: generous, for a loaded machine and a debug build; starving the server shows as a
/// `503` after the 1 s queue timeout, or no answer at all.
const PROBE_P99_BOUND: Duration = Duration::from_millis(1000);
/// How long each case probes while its attack is in flight.
const PROBE_SPAN: Duration = Duration::from_secs(2);
/// The attacker's address (loopback, another peer than the probes').
const ATTACKER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

/// How many distinct workloads with a 230 KB annotation to send: 1,000, or 100 to keep a debug
/// build's run short.
fn distinct_workloads() -> usize {
    if release_binary().is_some() { 1_000 } else { 100 }
}

struct Served {
    child: Child,
    port: u16,
    monitoring: u16,
    tls: Arc<rustls::ClientConfig>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

type Tls = tokio_rustls::client::TlsStream<TcpStream>;

impl Served {
    async fn start(files: &Files) -> Served {
        let ca = files.write("ca.pem", "");
        std::fs::remove_file(&ca).expect("the CA file is created by the server");
        let (port, monitoring) = (free_port(), free_port());
        let child = Command::new(binary_under_test())
            .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
            .args(["--monitoring-addr", &format!("127.0.0.1:{monitoring}")])
            .args(["--write-ca", &ca, "--log-format", "json"])
            .args(["--max-connections", &MAX_CONNECTIONS.to_string()])
            .args([
                "--max-connections-per-peer",
                &MAX_CONNECTIONS_PER_PEER.to_string(),
            ])
            .args(["--max-concurrency", &MAX_CONCURRENCY.to_string()])
            .args(["--max-inflight-mib", &INFLIGHT_MIB.to_string()])
            .env("RUST_LOG", "error")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve starts");
        let start = Instant::now();
        while !std::path::Path::new(&ca).exists() || TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            assert!(start.elapsed() < Duration::from_secs(60), "serve did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let pem = std::fs::read(&ca).expect("CA");
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&pem) {
            roots.add(cert.expect("CA PEM")).expect("root");
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        Served {
            child,
            port,
            monitoring,
            tls: Arc::new(config),
        }
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// A TCP connection to the server from `source`.
    async fn tcp_from(&self, source: IpAddr) -> std::io::Result<TcpStream> {
        let socket = TcpSocket::new_v4()?;
        socket.bind(SocketAddr::new(source, 0))?;
        socket.connect(self.addr()).await
    }

    /// A TLS connection from `source`, offering `alpn`.
    async fn tls_from(&self, source: IpAddr, alpn: &[u8]) -> std::io::Result<Tls> {
        let tcp = self.tcp_from(source).await?;
        let mut config = (*self.tls).clone();
        config.alpn_protocols = vec![alpn.to_vec()];
        let name = ServerName::try_from("localhost").map_err(std::io::Error::other)?;
        tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
    }

    /// An attacker's HTTP/1.1 connection, for raw bytes.
    async fn tls(&self) -> std::io::Result<Tls> {
        self.tls_from(ATTACKER, b"http/1.1").await
    }

    /// The value of the metric `name` (no labels) on the server's `/metrics`.
    async fn metric(&self, name: &str) -> Option<u64> {
        let mut tcp = TcpStream::connect(("127.0.0.1", self.monitoring)).await.ok()?;
        tcp.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
            .await
            .ok()?;
        let mut out = String::new();
        tcp.read_to_string(&mut out).await.ok()?;
        out.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
    }

    /// `VmHWM` of the server, in KiB.
    fn peak_kib(&self) -> u64 {
        proc_status_kib(self.child.id(), "VmHWM:").unwrap_or(0)
    }

    /// One admission from the attacker in raw bytes on a new connection, written whole before
    /// the answer is read (as curl does): (status, body).
    async fn post(&self, body: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
        self.post_reading_head(body)
            .await
            .map(|raw| (raw.status, raw.body))
    }

    /// Like [`Served::post`], with the answer's head and whether the connection was closed
    /// before the whole body was written.
    async fn post_reading_head(&self, body: &[u8]) -> std::io::Result<RawAnswer> {
        let mut tls = self.tls().await?;
        let head = format!(
            "POST /inject HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        tls.write_all(head.as_bytes()).await?;
        // A server that answers before the body has arrived may close while the rest is still
        // being written: then, as Go's HTTP client does, read the answer already received and
        // fail only when there is none.
        let written = tls.write_all(body).await;
        let mut out = Vec::new();
        let _ = tls.read_to_end(&mut out).await;
        let cut_while_writing = match written {
            Err(error) if !out.starts_with(b"HTTP/") => return Err(error),
            written => written.is_err(),
        };
        let text = String::from_utf8_lossy(&out);
        let status = text
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let end = out.windows(4).position(|w| w == b"\r\n\r\n");
        let head = String::from_utf8_lossy(&out[..end.unwrap_or(out.len())]).into_owned();
        let body = end.map_or_else(Vec::new, |i| out[i + 4..].to_vec());
        Ok(RawAnswer {
            status,
            head,
            body,
            cut_while_writing,
        })
    }
}

/// What a raw HTTP/1.1 client read of an answer.
struct RawAnswer {
    status: u16,
    head: String,
    body: Vec<u8>,
    /// The server closed before the whole body was written; the answer had arrived.
    cut_while_writing: bool,
}

/// An admission POSTed by hyper's HTTP/1.1 client on a new connection from `source`: its status,
/// its `Retry-After` and its body.
async fn hyper_post(
    served: &Served,
    source: IpAddr,
    body: Vec<u8>,
) -> Result<(u16, Option<String>, Bytes), String> {
    let tls = served
        .tls_from(source, b"http/1.1")
        .await
        .map_err(|e| e.to_string())?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let request = http::Request::post("/inject")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, retry_after, body))
}

fn skipped_pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "probe", "annotations": {"sidecar.istio.io/inject": "false"}},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
}

fn review(uid: &str, pod: Value) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": uid, "namespace": "abuse", "operation": "CREATE",
            "kind": {"group": "", "version": "v1", "kind": "Pod"}, "object": pod}}),
    )
    .expect("JSON")
}

/// A pod of 100,000 annotations: 3 MB of body with values of `value_len` digits, 5.8 MB with 33.
fn pod_of_many_annotations(name: &str, value_len: usize) -> Value {
    let annotations: serde_json::Map<String, Value> = (0..100_000)
        .map(|n| {
            (
                format!("example.com/a{n}"),
                Value::String(format!("v{n:0>width$}", width = value_len)),
            )
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
}

/// A pod of a workload of its own (its own ReplicaSet) whose `sidecar.istio.io/userVolume`, which
/// the template reads whole, holds about `bytes` of JSON (emptyDir volumes): every such pod is a
/// render of its own for the render cache, and a big one.
fn pod_with_big_user_volume(workload: usize, bytes: usize) -> Value {
    let volume = json!({"emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}});
    let entry = format!("\"v00000\":{volume},").len();
    let volumes: serde_json::Map<String, Value> = (0..bytes / entry)
        .map(|n| (format!("v{n:05}"), volume.clone()))
        .collect();
    let user_volume = serde_json::to_string(&volumes).expect("JSON");
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": format!("w{workload}-5d8f9c-"),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("w{workload}-5d8f9c"),
                "uid": format!("uid-{workload}"), "controller": true}],
            "annotations": {"sidecar.istio.io/userVolume": user_volume}},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
}

/// `workloads` distinct workloads whose pods carry a 230 KB annotation the template reads, sent
/// by `clients` clients one after the other: each is injected, and once all are answered the
/// render cache holds no more than its budget (a render of such a pod holds more than the
/// sixteenth of the budget an entry may take: none is kept).
fn distinct_big_workloads(workloads: usize, clients: usize) -> Attack {
    Box::new(move |s, attackers| {
        attackers.spawn(async move {
            let mut senders = JoinSet::new();
            for client in 0..clients {
                let s = s.clone();
                senders.spawn(async move {
                    for workload in (client..workloads).step_by(clients) {
                        let body = review(
                            &format!("w{workload}"),
                            pod_with_big_user_volume(workload, 230_000),
                        );
                        let (status, answer) = s.post(&body).await.expect("answered");
                        assert_eq!(
                            status,
                            200,
                            "workload {workload}: {}",
                            String::from_utf8_lossy(&answer)
                        );
                        let answer: Value = serde_json::from_slice(&answer).expect("a review");
                        assert_eq!(answer["response"]["allowed"], true, "workload {workload}");
                        assert_eq!(
                            answer["response"]["patchType"], "JSONPatch",
                            "workload {workload}: injected"
                        );
                    }
                });
            }
            join_all(&mut senders).await;
            let bytes = s.metric("sidecar_injector_render_cache_bytes").await;
            let bytes = bytes.expect("the render cache's bytes on /metrics");
            assert!(
                bytes <= RENDER_CACHE_MIB << 20,
                "the render cache holds {bytes} bytes, over its {RENDER_CACHE_MIB} MiB"
            );
        });
    })
}

/// Writes `bytes` one at a time, `gap` apart; returns when a write fails (the server closed).
async fn trickle(stream: &mut (impl tokio::io::AsyncWrite + Unpin), bytes: &[u8], gap: Duration) {
    for b in bytes {
        if stream.write_all(&[*b]).await.is_err() {
            return;
        }
        tokio::time::sleep(gap).await;
    }
}

/// What normal admissions saw while an attack was in flight, and the server's peak RSS.
struct Figures {
    probes: usize,
    median: Duration,
    p99: Duration,
    peak_kib: u64,
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} probes, median {:.1} ms, p99 {:.1} ms, peak RSS {} MiB",
            self.probes,
            self.median.as_secs_f64() * 1000.0,
            self.p99.as_secs_f64() * 1000.0,
            self.peak_kib / 1024
        )
    }
}

/// Normal admissions one after the other for `span`, each on a new connection; every one must
/// be answered `200` and allowed.
async fn probe_for(served: &Served, case: &str, span: Duration) -> Figures {
    let mut times = Vec::new();
    let start = Instant::now();
    while start.elapsed() < span || times.len() < 20 {
        let uid = format!("probe-{}", times.len());
        let sent = Instant::now();
        let answer = tokio::time::timeout(
            Duration::from_secs(15),
            hyper_post(
                served,
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                review(&uid, skipped_pod()),
            ),
        )
        .await
        .unwrap_or_else(|_| panic!("{case}: a normal admission got no answer in 15 s"));
        times.push(sent.elapsed());
        let (status, _, body) = answer.unwrap_or_else(|e| panic!("{case}: a normal admission failed: {e}"));
        assert_eq!(status, 200, "{case}: {}", String::from_utf8_lossy(&body));
        let answer: Value = serde_json::from_slice(&body).expect("an AdmissionReview");
        assert_eq!(answer["response"]["allowed"], true, "{case}: {answer}");
        assert_eq!(answer["response"]["uid"], uid.as_str());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    times.sort();
    let at = |q: f64| {
        let rank = ((times.len() as f64) * q).ceil() as usize;
        times[rank.clamp(1, times.len()) - 1]
    };
    Figures {
        probes: times.len(),
        median: at(0.5),
        p99: at(0.99),
        peak_kib: served.peak_kib(),
    }
}

/// The clients of an attack, on a runtime of their own: the probes do not wait behind them in
/// the test's task queues, only for the server.
struct Attackers {
    set: JoinSet<()>,
    runtime: tokio::runtime::Handle,
}

impl Attackers {
    fn spawn(&mut self, client: impl std::future::Future<Output = ()> + Send + 'static) {
        self.set.spawn_on(client, &self.runtime);
    }
}

/// An attack: spawns its clients. They are aborted once the probes are done, unless the case
/// waits for them (they check their own answers).
type Attack = Box<dyn Fn(Arc<Served>, &mut Attackers)>;

/// One case of the suite.
struct Case {
    name: &'static str,
    attack: Attack,
    /// The attack's clients assert their own answers: wait for them all.
    finishes: bool,
}

/// Runs one attack, probes normal admissions meanwhile, checks the bounds and returns the
/// figures.
async fn under_attack(
    served: &Arc<Served>,
    case: &Case,
    runtime: &tokio::runtime::Handle,
    report: &[String],
) -> Figures {
    let mut attackers = Attackers {
        set: JoinSet::new(),
        runtime: runtime.clone(),
    };
    (case.attack)(served.clone(), &mut attackers);
    let mut set = attackers.set;
    // Let the attack get under way.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let figures = probe_for(served, case.name, PROBE_SPAN).await;
    let name = case.name;
    assert!(
        figures.median < PROBE_MEDIAN_BOUND && figures.p99 < PROBE_P99_BOUND,
        "{name}: {figures}, over {PROBE_MEDIAN_BOUND:?} (median) or {PROBE_P99_BOUND:?} (p99)\n{}",
        report.join("\n")
    );
    assert!(
        figures.peak_kib < MEMORY_BOUND_KIB,
        "{name}: peak RSS {} KiB over the bound of {MEMORY_BOUND_KIB} KiB\n{}",
        figures.peak_kib,
        report.join("\n")
    );
    if case.finishes {
        tokio::time::timeout(Duration::from_secs(60), join_all(&mut set))
            .await
            .unwrap_or_else(|_| panic!("{name}: the attack's requests were not answered in 60 s"));
    }
    set.abort_all();
    while set.join_next().await.is_some() {}
    // Let the server see the attack's connections go.
    tokio::time::sleep(Duration::from_millis(300)).await;
    Figures {
        peak_kib: served.peak_kib(),
        ..figures
    }
}

/// Waits for every task of `set`; a task's panic (a failed assertion) goes on in the caller.
async fn join_all(set: &mut JoinSet<()>) {
    while let Some(joined) = set.join_next().await {
        if let Err(e) = joined
            && e.is_panic()
        {
            std::panic::resume_unwind(e.into_panic());
        }
    }
}

/// Slow bodies on `connections` HTTP/1.1 connections: each announces 1,000 bytes, sends one
/// byte every 200 ms, and is opened again when the server closes it, so the pressure lasts.
fn slow_bodies(connections: usize) -> Attack {
    Box::new(move |s, attackers| {
        for _ in 0..connections {
            let s = s.clone();
            attackers.spawn(async move {
                loop {
                    let Ok(mut tls) = s.tls().await else {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    };
                    let head = "POST /inject HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n";
                    if tls.write_all(head.as_bytes()).await.is_ok() {
                        trickle(&mut tls, &[b' '; 1000], Duration::from_millis(200)).await;
                    }
                }
            });
        }
    })
}

/// Slow bodies on `streams` streams of one HTTP/2 connection (hyper's client, which opens no
/// more streams than the server allows and waits for one to end): each announces 1,000 bytes
/// and sends one byte every 200 ms; a stream the server ends is opened again.
fn slow_streams(streams: usize) -> Attack {
    Box::new(move |s, attackers| {
        let s = s.clone();
        attackers.spawn(async move {
            loop {
                let Ok(tls) = s.tls_from(ATTACKER, b"h2").await else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let Ok((sender, conn)) =
                    hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls)).await
                else {
                    continue;
                };
                let conn = tokio::spawn(conn);
                let mut streams_set = JoinSet::new();
                for _ in 0..streams {
                    let mut sender = sender.clone();
                    streams_set.spawn(async move {
                        loop {
                            let (mut tx, body) =
                                http_body_util::channel::Channel::<Bytes, hyper::Error>::new(1);
                            let request = http::Request::post("https://localhost/inject")
                                .header("content-type", "application/json")
                                .header("content-length", "1000")
                                .body(body)
                                .expect("request");
                            let feed = tokio::spawn(async move {
                                for _ in 0..1000 {
                                    if tx.send(Frame::data(Bytes::from_static(b" "))).await.is_err() {
                                        return;
                                    }
                                    tokio::time::sleep(Duration::from_millis(200)).await;
                                }
                            });
                            if sender.ready().await.is_err() {
                                feed.abort();
                                return;
                            }
                            let answered = sender.send_request(request).await;
                            feed.abort();
                            if answered.is_err() {
                                return;
                            }
                        }
                    });
                }
                while streams_set.join_next().await.is_some() {}
                conn.abort();
            }
        });
    })
}

/// What the near-limit admissions read, for the report.
static NEAR_LIMIT_OUTCOMES: std::sync::Mutex<Vec<NearLimitOutcome>> = std::sync::Mutex::new(Vec::new());

/// The answers a near-limit admission may read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum NearLimitOutcome {
    /// `200`: the review was answered.
    Answered,
    /// `503` with `Retry-After`: the memory budget stayed spent.
    Overloaded,
    /// `408`: the body had not arrived when the request's deadline passed.
    Late,
    /// `408`: a second went by without the body's minimum pace arriving.
    BehindPace,
}

/// How many near-limit admissions read their answer after the server closed under their
/// writing (a drain cut short by its pace on a starved machine), for the report.
static NEAR_LIMIT_CUT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// `n` admissions of 5.8 MB at once, each on its own connection, written whole before the answer
/// is read (the client most easily cut off by an early close; after a failed write it reads what
/// arrived, as the API server's Go client does): every client reads an HTTP status: `200`, `503`
/// with `Retry-After`, or, on a machine so loaded that a body did not arrive in time, `408`,
/// either past the request's deadline or behind the minimum pace (on a starved two-core CI
/// machine, a second can pass in which neither the debug-built client nor the server moves a
/// connection's bytes).
fn near_limit_bodies(n: usize) -> Attack {
    Box::new(move |s, attackers| {
        let body = Arc::new(review("big", pod_of_many_annotations("big", 33)));
        assert!(
            (5_700_000..6_000_000).contains(&body.len()),
            "{} bytes",
            body.len()
        );
        for _ in 0..n {
            let (s, body) = (s.clone(), body.clone());
            attackers.spawn(async move {
                let RawAnswer {
                    status,
                    head,
                    body: answer,
                    cut_while_writing,
                } = s
                    .post_reading_head(&body)
                    .await
                    .unwrap_or_else(|e| panic!("a 5.8 MB admission read no HTTP status: {e}"));
                if cut_while_writing {
                    NEAR_LIMIT_CUT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                let text = String::from_utf8_lossy(&answer);
                let outcome = match status {
                    200 => {
                        let answer: Value = serde_json::from_slice(&answer).expect("a review");
                        assert_eq!(answer["response"]["uid"], "big");
                        NearLimitOutcome::Answered
                    }
                    503 => {
                        assert!(
                            head.to_ascii_lowercase().contains("\r\nretry-after: 1"),
                            "a 503 says when to retry: {head}"
                        );
                        NearLimitOutcome::Overloaded
                    }
                    408 if text.contains("did not arrive before the request's deadline") => {
                        NearLimitOutcome::Late
                    }
                    408 if text.contains("the body arrived slower than") => NearLimitOutcome::BehindPace,
                    0 => panic!("a 5.8 MB admission read no HTTP status (the connection was cut)"),
                    other => panic!("a 5.8 MB admission got {other}: {text}"),
                };
                if let Ok(mut outcomes) = NEAR_LIMIT_OUTCOMES.lock() {
                    outcomes.push(outcome);
                }
            });
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_stays_available_under_attack() {
    let files = Files::new();
    let served = Arc::new(Served::start(&files).await);
    let baseline = probe_for(&served, "no attack", PROBE_SPAN).await;
    let mut report = vec![format!("no attack (baseline): {baseline}")];

    let cases: Vec<Case> = vec![
        Case {
            name: "slow bodies on 4 × --max-concurrency connections (256, a byte per 200 ms, reopened)",
            attack: slow_bodies(4 * MAX_CONCURRENCY),
            finishes: false,
        },
        Case {
            name: "slow bodies on 256 streams of one HTTP/2 connection (a byte per 200 ms, reopened)",
            attack: slow_streams(4 * MAX_CONCURRENCY),
            finishes: false,
        },
        Case {
            name: "16 concurrent 5.8 MB admissions (each client reads a status)",
            attack: near_limit_bodies(16),
            finishes: true,
        },
        Case {
            name: "oversized bodies (declared 7 MiB, and 7 MiB streamed)",
            attack: Box::new(|s, attackers| {
                for _ in 0..4 {
                    let s1 = s.clone();
                    attackers.spawn(async move {
                    if let Ok(mut tls) = s1.tls().await {
                        let _ = tls.write_all(b"POST /inject HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 7340032\r\n\r\n").await;
                        let _ = tls.write_all(&vec![b' '; 7 << 20]).await;
                    }
                });
                    let s2 = s.clone();
                    attackers.spawn(async move {
                    if let Ok(mut tls) = s2.tls().await {
                        let _ = tls.write_all(b"POST /inject HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").await;
                        for _ in 0..112 {
                            if tls.write_all(b"10000\r\n").await.is_err() || tls.write_all(&vec![b' '; 0x10000]).await.is_err() || tls.write_all(b"\r\n").await.is_err() {
                                return;
                            }
                        }
                    }
                });
                }
            }),
            finishes: false,
        },
        Case {
            name: "lying bodies (Content-Length larger and smaller than sent)",
            attack: Box::new(|s, attackers| {
                for i in 0..20 {
                    let s = s.clone();
                    attackers.spawn(async move {
                    if let Ok(mut tls) = s.tls().await {
                        let body = review("liar", skipped_pod());
                        let declared = if i % 2 == 0 { body.len() * 2 } else { body.len() / 2 };
                        let head = format!("POST /inject HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\n\r\n");
                        let _ = tls.write_all(head.as_bytes()).await;
                        let _ = tls.write_all(&body).await;
                        tokio::time::sleep(Duration::from_secs(60)).await;
                    }
                });
                }
            }),
            finishes: false,
        },
        Case {
            name: "slow headers (a byte every 200 ms on 50 connections)",
            attack: Box::new(|s, attackers| {
                for _ in 0..50 {
                    let s = s.clone();
                    attackers.spawn(async move {
                        if let Ok(mut tls) = s.tls().await {
                            trickle(
                                &mut tls,
                                b"POST /inject HTTP/1.1\r\nHost: localhost\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                                Duration::from_millis(200),
                            )
                            .await;
                            tokio::time::sleep(Duration::from_secs(60)).await;
                        }
                    });
                }
            }),
            finishes: false,
        },
        Case {
            name: "idle-connection flood (twice the connection cap, never a ClientHello)",
            attack: Box::new(|s, attackers| {
                let s = s.clone();
                attackers.spawn(async move {
                    let mut held = Vec::new();
                    for _ in 0..2 * MAX_CONNECTIONS {
                        if let Ok(tcp) = s.tcp_from(ATTACKER).await {
                            held.push(tcp);
                        }
                    }
                    tokio::time::sleep(Duration::from_secs(60)).await;
                });
            }),
            finishes: false,
        },
        Case {
            name: "handshake flood (ClientHello garbage and half handshakes)",
            attack: Box::new(|s, attackers| {
                let s = s.clone();
                attackers.spawn(async move {
                    let mut held = Vec::new();
                    for i in 0..MAX_CONNECTIONS {
                        if let Ok(mut tcp) = s.tcp_from(ATTACKER).await {
                            let bytes: &[u8] = if i % 2 == 0 {
                                &[0x16, 0x03, 0x01, 0x00, 0x05, 0xde, 0xad, 0xbe, 0xef, 0x00]
                            } else {
                                &[0x16, 0x03, 0x01, 0x02]
                            };
                            let _ = tcp.write_all(bytes).await;
                            held.push(tcp);
                        }
                    }
                    tokio::time::sleep(Duration::from_secs(60)).await;
                });
            }),
            finishes: false,
        },
        Case {
            name: "deep JSON (100,000 nested arrays in the pod)",
            attack: Box::new(|s, attackers| {
                for _ in 0..4 {
                    let s = s.clone();
                    attackers.spawn(async move {
                    let mut body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"deep","object":{"spec":"#.to_vec();
                    body.extend(std::iter::repeat_n(b'[', 100_000));
                    body.extend(std::iter::repeat_n(b']', 100_000));
                    body.extend_from_slice(b"}}}");
                    let answer = s.post(&body).await.expect("answered");
                    assert_eq!(answer.0, 200);
                    let answer: Value = serde_json::from_slice(&answer.1).expect("a review");
                    assert_eq!(answer["response"]["allowed"], false);
                    assert_eq!(answer["response"]["uid"], "deep");
                });
                }
            }),
            finishes: true,
        },
        Case {
            name: "huge annotation maps (4 pods of 100,000 annotations, 3 MB each)",
            attack: Box::new(|s, attackers| {
                for i in 0..4 {
                    let s = s.clone();
                    attackers.spawn(async move {
                        let _ = s
                            .post(&review("huge", pod_of_many_annotations(&format!("huge-{i}"), 5)))
                            .await;
                    });
                }
            }),
            finishes: true,
        },
        Case {
            name: "distinct workloads whose pods carry 230 KB annotations the template reads (1,000; 100 debug)",
            attack: distinct_big_workloads(distinct_workloads(), 4),
            finishes: true,
        },
        Case {
            name: "invalid UTF-8 in the pod",
            attack: Box::new(|s, attackers| {
                for _ in 0..20 {
                    let s = s.clone();
                    attackers.spawn(async move {
                    let mut body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"utf8","object":{"metadata":{"name":""#.to_vec();
                    body.extend_from_slice(&[0xc3, 0x28, 0xff]);
                    body.extend_from_slice(br#""}}}}"#);
                    let (status, answer) = s.post(&body).await.expect("answered");
                    assert_eq!(status, 200);
                    let answer: Value = serde_json::from_slice(&answer).expect("a review");
                    assert_eq!(answer["response"]["allowed"], false);
                    assert_eq!(answer["response"]["uid"], "utf8", "the uid is echoed");
                });
                }
            }),
            finishes: true,
        },
    ];
    let attackers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("the attackers' runtime");
    // ABUSE_CASE=PREFIX runs only the cases whose name starts with PREFIX (to reproduce one).
    let only = std::env::var("ABUSE_CASE").unwrap_or_default();
    for case in cases.iter().filter(|c| c.name.starts_with(&only)) {
        let figures = under_attack(&served, case, attackers.handle(), &report).await;
        let outcomes = NEAR_LIMIT_OUTCOMES
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default();
        let read = if outcomes.is_empty() {
            String::new()
        } else {
            let count = |outcome: NearLimitOutcome| outcomes.iter().filter(|o| **o == outcome).count();
            let cut = NEAR_LIMIT_CUT.swap(0, std::sync::atomic::Ordering::Relaxed);
            format!(
                " ({} answered 200, {} 503 + Retry-After, {} 408 past the deadline, \
                 {} 408 behind the pace; {cut} read after the server closed under their writing)",
                count(NearLimitOutcome::Answered),
                count(NearLimitOutcome::Overloaded),
                count(NearLimitOutcome::Late),
                count(NearLimitOutcome::BehindPace)
            )
        };
        report.push(format!("{}: {figures}{read}", case.name));
        eprintln!("{}", report.last().map_or("", String::as_str));
    }
    attackers.shutdown_background();
    eprintln!(
        "adversarial suite (memory bound {} MiB):\n{}",
        MEMORY_BOUND_KIB / 1024,
        report.join("\n")
    );
}
