//! The abuse suite: a real `serve` child process on loopback under oversized and lying bodies,
//! slow headers and bodies, idle-connection and handshake floods, deep JSON, huge annotation
//! maps and invalid UTF-8. While each abuse is in flight, a normal admission must be answered
//! within 100 ms (median of five probes, each on a new connection, TLS handshake included, so
//! that one scheduling hiccup on a loaded machine does not decide), and the process must stay
//! under a stated memory bound (`VmHWM` from /proc).
//!
//! The probe pod opts out of injection (`sidecar.istio.io/inject: "false"`): it crosses the
//! whole server path (TLS, HTTP, limits, budget, decode, configuration, engine decision,
//! response) without timing the debug-built template engine.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use crate::util::{Files, proc_status_kib};

/// The memory bound: the admissions' budget (`--max-inflight-mib 128`) plus the process's own
/// footprint and buffers, with room for a debug build.
const MEMORY_BOUND_KIB: u64 = 320 * 1024;
/// The answer time of a normal admission while abuse is in flight.
const PROBE_BOUND: Duration = Duration::from_millis(100);
const MAX_CONNECTIONS: usize = 256;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

struct Served {
    child: Child,
    port: u16,
    connector: tokio_rustls::TlsConnector,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    async fn start(files: &Files) -> Served {
        let ca = files.write("ca.pem", "");
        std::fs::remove_file(&ca).expect("the CA file is created by the server");
        let (port, monitoring) = (free_port(), free_port());
        let child = Command::new(env!("CARGO_BIN_EXE_sidecar-injector"))
            .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
            .args(["--monitoring-addr", &format!("127.0.0.1:{monitoring}")])
            .args(["--write-ca", &ca, "--log-format", "json"])
            .args(["--max-connections", &MAX_CONNECTIONS.to_string()])
            .args(["--max-inflight-mib", "128"])
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
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Served {
            child,
            port,
            connector: tokio_rustls::TlsConnector::from(Arc::new(config)),
        }
    }

    async fn tls(&self) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
        let tcp = TcpStream::connect(("127.0.0.1", self.port)).await?;
        let name = ServerName::try_from("localhost").map_err(std::io::Error::other)?;
        self.connector.connect(name, tcp).await
    }

    /// `VmHWM` of the server, in KiB.
    fn peak_kib(&self) -> u64 {
        proc_status_kib(self.child.id(), "VmHWM:").unwrap_or(0)
    }

    /// One admission on a new connection: (status, body).
    async fn post(&self, body: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
        let mut tls = self.tls().await?;
        let head = format!(
            "POST /inject HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        tls.write_all(head.as_bytes()).await?;
        tls.write_all(body).await?;
        let mut out = Vec::new();
        let _ = tls.read_to_end(&mut out).await;
        let text = String::from_utf8_lossy(&out);
        let status = text
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = out
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or_else(Vec::new, |i| out[i + 4..].to_vec());
        Ok((status, body))
    }

    /// The median time of five normal admissions; each must be answered and allowed.
    async fn probe(&self, case: &str) -> Duration {
        let mut times = Vec::new();
        for i in 0..5 {
            let start = Instant::now();
            let (status, body) = tokio::time::timeout(
                Duration::from_secs(15),
                self.post(&review(&format!("probe-{i}"), skipped_pod())),
            )
            .await
            .unwrap_or_else(|_| panic!("{case}: the probe got no answer in 15 s"))
            .unwrap_or_else(|e| panic!("{case}: the probe failed: {e}"));
            times.push(start.elapsed());
            assert_eq!(status, 200, "{case}: {}", String::from_utf8_lossy(&body));
            let answer: Value = serde_json::from_slice(&body).expect("an AdmissionReview");
            assert_eq!(answer["response"]["allowed"], true, "{case}: {answer}");
            assert_eq!(answer["response"]["uid"], format!("probe-{i}"));
        }
        times.sort();
        times[2]
    }
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

/// Writes `bytes` one at a time, `gap` apart, then holds the connection open.
async fn trickle(mut stream: impl tokio::io::AsyncWrite + Unpin, bytes: Vec<u8>, gap: Duration) {
    for b in bytes {
        if stream.write_all(&[b]).await.is_err() {
            return;
        }
        tokio::time::sleep(gap).await;
    }
    tokio::time::sleep(Duration::from_secs(60)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn normal_admissions_are_answered_while_the_server_is_abused() {
    let files = Files::new();
    let served = Arc::new(Served::start(&files).await);
    let baseline = served.probe("no abuse").await;
    let mut report = vec![format!("baseline: median {baseline:?}")];

    type Abuse = Box<dyn Fn(Arc<Served>, &mut JoinSet<()>)>;
    let cases: Vec<(&str, Abuse)> = vec![
        (
            "oversized bodies (declared 7 MiB, and 7 MiB streamed)",
            Box::new(|s, set| {
                for _ in 0..4 {
                    let s1 = s.clone();
                    set.spawn(async move {
                    if let Ok(mut tls) = s1.tls().await {
                        let _ = tls.write_all(b"POST /inject HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 7340032\r\n\r\n").await;
                        let _ = tls.write_all(&vec![b' '; 7 << 20]).await;
                    }
                });
                    let s2 = s.clone();
                    set.spawn(async move {
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
        ),
        (
            "lying bodies (Content-Length larger and smaller than sent)",
            Box::new(|s, set| {
                for i in 0..20 {
                    let s = s.clone();
                    set.spawn(async move {
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
        ),
        (
            "slow headers (a byte every 200 ms on 50 connections)",
            Box::new(|s, set| {
                for _ in 0..50 {
                    let s = s.clone();
                    set.spawn(async move {
                    if let Ok(tls) = s.tls().await {
                        trickle(tls, b"POST /inject HTTP/1.1\r\nHost: localhost\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaa".to_vec(), Duration::from_millis(200)).await;
                    }
                });
                }
            }),
        ),
        (
            "slow bodies (a byte every 200 ms on 50 connections)",
            Box::new(|s, set| {
                for _ in 0..50 {
                    let s = s.clone();
                    set.spawn(async move {
                    if let Ok(mut tls) = s.tls().await {
                        let body = review("slow", skipped_pod());
                        let head = format!("POST /inject HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len());
                        if tls.write_all(head.as_bytes()).await.is_ok() {
                            trickle(tls, body, Duration::from_millis(200)).await;
                        }
                    }
                });
                }
            }),
        ),
        (
            "idle-connection flood (twice the connection cap, never a ClientHello)",
            Box::new(|s, set| {
                let s = s.clone();
                set.spawn(async move {
                    let mut held = Vec::new();
                    for _ in 0..2 * MAX_CONNECTIONS {
                        if let Ok(tcp) = TcpStream::connect(("127.0.0.1", s.port)).await {
                            held.push(tcp);
                        }
                    }
                    tokio::time::sleep(Duration::from_secs(60)).await;
                });
            }),
        ),
        (
            "handshake flood (ClientHello garbage and half handshakes)",
            Box::new(|s, set| {
                let s = s.clone();
                set.spawn(async move {
                    let mut held = Vec::new();
                    for i in 0..MAX_CONNECTIONS {
                        if let Ok(mut tcp) = TcpStream::connect(("127.0.0.1", s.port)).await {
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
        ),
        (
            "deep JSON (100,000 nested arrays in the pod)",
            Box::new(|s, set| {
                for _ in 0..4 {
                    let s = s.clone();
                    set.spawn(async move {
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
        ),
        (
            "huge annotation maps (4 pods of 100,000 annotations, 3 MB each)",
            Box::new(|s, set| {
                for i in 0..4 {
                    let s = s.clone();
                    set.spawn(async move {
                        let annotations: serde_json::Map<String, Value> = (0..100_000)
                            .map(|n| (format!("example.com/a{n}"), Value::String(format!("v{n}"))))
                            .collect();
                        let pod = json!({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": format!("huge-{i}"), "annotations": annotations},
                        "spec": {"containers": [{"name": "app", "image": "nginx"}]}});
                        let _ = s.post(&review("huge", pod)).await;
                    });
                }
            }),
        ),
        (
            "invalid UTF-8 in the pod",
            Box::new(|s, set| {
                for _ in 0..20 {
                    let s = s.clone();
                    set.spawn(async move {
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
        ),
    ];
    for (case, abuse) in cases {
        let mut set = JoinSet::new();
        abuse(served.clone(), &mut set);
        // Let the abuse get under way.
        tokio::time::sleep(Duration::from_millis(400)).await;
        let median = served.probe(case).await;
        let peak = served.peak_kib();
        report.push(format!("{case}: median {median:?}, peak RSS {} MiB", peak / 1024));
        assert!(
            median < PROBE_BOUND,
            "{case}: a normal admission took {median:?} (median of 5) while abused\n{}",
            report.join("\n")
        );
        assert!(
            peak < MEMORY_BOUND_KIB,
            "{case}: peak RSS {peak} KiB over the bound of {MEMORY_BOUND_KIB} KiB\n{}",
            report.join("\n")
        );
        // Abusers that check their own answers (deep JSON, invalid UTF-8, huge maps) finish;
        // those holding connections open are stopped.
        if case.starts_with("deep") || case.starts_with("invalid") || case.starts_with("huge") {
            let all = async {
                while let Some(joined) = set.join_next().await {
                    if let Err(e) = joined
                        && e.is_panic()
                    {
                        std::panic::resume_unwind(e.into_panic());
                    }
                }
            };
            tokio::time::timeout(Duration::from_secs(30), all)
                .await
                .unwrap_or_else(|_| panic!("{case}: the abusive requests were not answered in 30 s"));
        }
        set.abort_all();
        while set.join_next().await.is_some() {}
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!("abuse suite:\n{}", report.join("\n"));
}
