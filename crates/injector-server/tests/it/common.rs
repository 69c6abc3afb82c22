//! Test harness: an in-process server with a fake injector, and real clients over verified TLS.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use injector_server::{
    Admission, AdmissionInput, AdmissionOutcome, Caches, CertSource, ConfigStore, Injector, ServeOptions,
    Server, WatchOptions,
};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// Upper bound for any single wait in tests.
pub const LIMIT: Duration = Duration::from_secs(20);

/// The fake engine's configuration: `version=<N>`.
#[derive(Debug)]
pub struct FakeConfig {
    pub version: String,
}

/// Parses the fake configuration; anything not starting with `version=` is rejected.
pub fn load_fake_config(files: &injector_server::ConfigFiles) -> Result<FakeConfig, String> {
    let text = files.get("config").unwrap_or("version=embedded");
    match text.trim().strip_prefix("version=") {
        Some(v) if !v.is_empty() => Ok(FakeConfig {
            version: v.to_owned(),
        }),
        _ => Err(format!("config: expected `version=<N>`, got {text:?}")),
    }
}

/// A fake engine driven by the pod's `test/action` annotation: `skip`, `warn` (skip with ten
/// warnings quoting `test/value`), `deny`, `sleep-ms:<N>` (then patch), `panic`; default: patch.
/// Three stand for caches: `cached-wrong` says its own cache gave `wrong-fake-<version>` (and
/// computes `fake-<version>` without it), `cached-warning` says its cache gave the right patch
/// with a warning the computed answer does not have, and `counter` patches with how many times it
/// ran (so an outcome cached earlier differs from a new one).
pub struct FakeInjector;

/// How many times `counter` ran.
static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Injector for FakeInjector {
    type Config = FakeConfig;
    fn admit(&self, config: &FakeConfig, req: &AdmissionInput, caches: Caches) -> Admission {
        let action = req.object["metadata"]["annotations"]["test/action"]
            .as_str()
            .unwrap_or("patch");
        if let Some(ms) = action.strip_prefix("sleep-ms:") {
            std::thread::sleep(Duration::from_millis(ms.parse().unwrap_or(0)));
        }
        let patched = |version: String| AdmissionOutcome::Patched {
            patch: fake_patch(&FakeConfig { version }, req),
            reason: "injected".into(),
            warnings: Vec::new(),
        };
        let outcome = match action {
            "skip" => AdmissionOutcome::Skipped {
                reason: "test says skip".into(),
                warnings: Vec::new(),
            },
            "warn" => AdmissionOutcome::Skipped {
                reason: "test says warn".into(),
                warnings: (0..10)
                    .map(|i| {
                        format!(
                            "warning {i}: {}",
                            req.object["metadata"]["annotations"]["test/value"]
                        )
                    })
                    .collect(),
            },
            "deny" => AdmissionOutcome::Denied {
                message: "test says deny: fix annotation test/action".into(),
            },
            "panic" => panic!("fake injector panics on purpose"),
            "cached-wrong" if caches == Caches::Use => {
                return Admission {
                    outcome: patched(format!("wrong-{}", config.version)),
                    any_token_name: false,
                    cached: true,
                };
            }
            "cached-warning" if caches == Caches::Use => {
                return Admission {
                    outcome: AdmissionOutcome::Patched {
                        patch: fake_patch(config, req),
                        reason: "injected".into(),
                        warnings: vec!["only the cache says so".into()],
                    },
                    any_token_name: false,
                    cached: true,
                };
            }
            "counter" => {
                let runs = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                patched(format!("{}-run-{runs}", config.version))
            }
            _ => patched(config.version.clone()),
        };
        Admission::computed(outcome)
    }
}

/// The patch the fake injector produces.
pub fn fake_patch(config: &FakeConfig, req: &AdmissionInput) -> Vec<u8> {
    serde_json::to_vec(&json!([
        {"op": "add", "path": "/metadata/annotations/injected-by", "value": format!("fake-{}", config.version)},
        {"op": "add", "path": "/metadata/annotations/path-env", "value": serde_json::to_string(&req.path_env).unwrap_or_default()},
        {"op": "add", "path": "/metadata/annotations/namespace", "value": req.namespace},
    ]))
    .unwrap_or_default()
}

/// A running server.
pub struct TestServer {
    pub addr: SocketAddr,
    pub monitoring: SocketAddr,
    pub ca_pem: String,
    pub _dir: tempfile::TempDir,
    pub config_path: PathBuf,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    pub handle: Option<tokio::task::JoinHandle<Result<(), injector_server::Error>>>,
}

/// Fast watch options for tests.
pub const FAST_WATCH: WatchOptions = WatchOptions {
    poll_interval: Duration::from_millis(300),
    debounce: Duration::from_millis(30),
};

/// Default test options: loopback, port 0, self-signed.
pub fn options(dir: &Path) -> ServeOptions {
    ServeOptions {
        addr: "127.0.0.1:0".parse().expect("addr"),
        monitoring_addr: Some("127.0.0.1:0".parse().expect("addr")),
        cert: CertSource::SelfSigned {
            dns_names: vec!["injector.test.svc".into()],
            write_ca: Some(dir.join("ca.pem")),
        },
        watch: FAST_WATCH,
        grace_period: Duration::from_secs(5),
        revision: "fake-rev".into(),
        ..ServeOptions::default()
    }
}

impl TestServer {
    /// Starts with a config file holding `version=1`.
    pub async fn start() -> TestServer {
        Self::start_with(|_| {}).await
    }

    /// Starts with options adjusted by `f` (the config file holds `version=1`).
    pub async fn start_with(f: impl FnOnce(&mut ServeOptions)) -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let config_path = dir.path().join("config");
        std::fs::write(&config_path, "version=1").expect("write config");
        let mut opts = options(dir.path());
        f(&mut opts);
        Self::start_full(dir, config_path, opts).await
    }

    /// Starts with everything given.
    pub async fn start_full(dir: tempfile::TempDir, config_path: PathBuf, opts: ServeOptions) -> TestServer {
        let store = ConfigStore::watch_files(
            vec![("config".into(), config_path.clone())],
            FAST_WATCH,
            load_fake_config,
        );
        let server = Server::bind(opts, FakeInjector, store).await.expect("bind");
        let addr = server.local_addr().expect("addr");
        let monitoring = server.monitoring_addr().expect("monitoring addr");
        let ca_pem = match server.cert_store().ca_pem() {
            Some(pem) => pem.to_owned(),
            None => std::fs::read_to_string(dir.path().join("ca.pem")).expect("test CA file"),
        };
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let handle = tokio::spawn(server.serve(async move {
            let _ = rx.await;
        }));
        let ts = TestServer {
            addr,
            monitoring,
            ca_pem,
            _dir: dir,
            config_path,
            shutdown: Some(tx),
            handle: Some(handle),
        };
        // Wait until ready (listening flag is set when serve() starts).
        ts.wait_ready().await;
        ts
    }

    pub async fn wait_ready(&self) {
        let start = Instant::now();
        while start.elapsed() < LIMIT {
            if let Ok((StatusCode::OK, _)) = http_get(self.monitoring, "/readyz").await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Triggers shutdown and waits for `serve` to return.
    pub async fn stop(mut self) -> Duration {
        let start = Instant::now();
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(h) = self.handle.take() {
            tokio::time::timeout(LIMIT, h)
                .await
                .expect("serve returns in time")
                .expect("join")
                .expect("serve ok");
        }
        start.elapsed()
    }

    pub fn trigger_shutdown(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }

    pub async fn client(&self, proto: Proto) -> Client {
        Client::connect(self.addr, &self.ca_pem, proto)
            .await
            .expect("connect")
    }

    pub async fn metrics(&self) -> String {
        http_get(self.monitoring, "/metrics").await.expect("metrics").1
    }
}

/// Which HTTP version to force through ALPN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    H1,
    H2,
}

enum Sender {
    H1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

/// A real HTTP client connection over verified TLS.
pub struct Client {
    sender: Sender,
    /// The leaf certificate the server presented.
    pub peer_cert: CertificateDer<'static>,
    pub alpn: Option<Vec<u8>>,
}

/// A response.
#[derive(Debug)]
pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A rustls client config trusting `ca_pem`.
pub fn client_config(ca_pem: &str, alpn: &[&[u8]]) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(c.expect("CA pem")).expect("add root");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = alpn.iter().map(|a| a.to_vec()).collect();
    cfg
}

/// Opens a verified TLS connection to `addr` as `localhost`.
pub async fn tls_connect(
    addr: SocketAddr,
    ca_pem: &str,
    alpn: &[&[u8]],
) -> Result<TlsStream<TcpStream>, String> {
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client_config(ca_pem, alpn)));
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let name = ServerName::try_from("localhost").map_err(|e| e.to_string())?;
    connector
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS: {e}"))
}

impl Client {
    pub async fn connect(addr: SocketAddr, ca_pem: &str, proto: Proto) -> Result<Client, String> {
        let alpn: &[&[u8]] = match proto {
            Proto::H1 => &[b"http/1.1"],
            Proto::H2 => &[b"h2"],
        };
        let tls = tls_connect(addr, ca_pem, alpn).await?;
        let (_, session) = tls.get_ref();
        let peer_cert = session
            .peer_certificates()
            .and_then(|c| c.first())
            .cloned()
            .ok_or("no peer cert")?;
        let alpn = session.alpn_protocol().map(<[u8]>::to_vec);
        let io = TokioIo::new(tls);
        let sender = match proto {
            Proto::H1 => {
                let (s, conn) = hyper::client::conn::http1::handshake(io)
                    .await
                    .map_err(|e| e.to_string())?;
                tokio::spawn(conn);
                Sender::H1(s)
            }
            Proto::H2 => {
                let (s, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
                    .await
                    .map_err(|e| e.to_string())?;
                tokio::spawn(conn);
                Sender::H2(s)
            }
        };
        Ok(Client {
            sender,
            peer_cert,
            alpn,
        })
    }

    pub async fn request(
        &mut self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> Result<Resp, String> {
        let mut b = Request::builder()
            .method(method)
            .uri(format!("https://localhost{path}"));
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let req = b.body(Full::new(body.into())).map_err(|e| e.to_string())?;
        let resp = match &mut self.sender {
            Sender::H1(s) => {
                s.ready().await.map_err(|e| e.to_string())?;
                s.send_request(req).await
            }
            Sender::H2(s) => {
                s.ready().await.map_err(|e| e.to_string())?;
                s.send_request(req).await
            }
        }
        .map_err(|e| e.to_string())?;
        let (parts, body) = resp.into_parts();
        let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
        Ok(Resp {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }

    /// POSTs `body` as `application/json`.
    pub async fn post(&mut self, path: &str, body: impl Into<Bytes>) -> Result<Resp, String> {
        self.request(Method::POST, path, &[("content-type", "application/json")], body)
            .await
    }
}

/// A realistic AdmissionReview for a pod.
pub fn review(api_version: &str, uid: &str, annotations: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": api_version,
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
            "object": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"generateName": "web-7d4b9c-", "namespace": "default", "labels": {"app": "web"}, "annotations": annotations},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}
            },
            "oldObject": null,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
        }
    }))
    .expect("review JSON")
}

/// Decodes `response.patch`.
pub fn decoded_patch(review: &Value) -> Value {
    use base64::Engine as _;
    let b64 = review["response"]["patch"].as_str().expect("patch present");
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("base64");
    serde_json::from_slice(&raw).expect("patch JSON")
}

/// Plain HTTP/1.1 GET (monitoring port).
pub async fn http_get(addr: SocketAddr, path: &str) -> Result<(StatusCode, String), String> {
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let (mut s, conn) = hyper::client::conn::http1::handshake::<_, Full<Bytes>>(TokioIo::new(tcp))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let req = Request::get(path)
        .header("host", "localhost")
        .body(Full::new(Bytes::new()))
        .map_err(|e| e.to_string())?;
    let resp = s.send_request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// Replaces a file atomically (write a temporary file, rename), as Kubernetes volume updates
/// do, so a watcher never sees it truncated.
pub fn atomic_write(path: &Path, contents: impl AsRef<[u8]>) {
    let tmp = path.with_extension("tmp-write");
    std::fs::write(&tmp, contents).expect("write temp");
    std::fs::rename(&tmp, path).expect("rename");
}

/// Polls `f` until it returns true or [`LIMIT`] passes.
pub async fn eventually<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while start.elapsed() < LIMIT {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for: {what}");
}

/// Waits until `n` admissions are in flight (so a test can act while a request is inside the
/// injector, whatever the machine's speed).
pub async fn wait_in_flight(monitoring: SocketAddr, n: u32) {
    eventually(&format!("{n} admission(s) in flight"), || async move {
        let text = http_get(monitoring, "/metrics")
            .await
            .map(|r| r.1)
            .unwrap_or_default();
        metric(&text, "sidecar_injector_admissions_in_flight") == Some(f64::from(n))
    })
    .await;
}

/// The value of an unlabelled sample in Prometheus text.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        l.strip_prefix(name)
            .and_then(|rest| rest.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
    })
}

/// A test CA and leaf certificates for the file-based certificate source.
pub struct TestCa {
    pub ca_pem: String,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

impl TestCa {
    pub fn new() -> TestCa {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::default();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "test CA");
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::hours(1);
        params.not_after = now + time::Duration::days(30);
        let cert = params.self_signed(&key).expect("CA");
        TestCa {
            ca_pem: cert.pem(),
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// A leaf for localhost with CN `cn` and serial `serial`: (cert PEM, key PEM).
    pub fn leaf(&self, cn: &str, serial: u64) -> (String, String) {
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .expect("params");
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(rcgen::DnType::CommonName, cn);
        params.serial_number = Some(rcgen::SerialNumber::from_slice(&serial.to_be_bytes()));
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::hours(1);
        params.not_after = now + time::Duration::days(10);
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.issuer).expect("leaf");
        (cert.pem(), key.serialize_pem())
    }
}

/// The CN of a DER certificate.
pub fn common_name(der: &CertificateDer<'_>) -> String {
    let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref()).expect("x509");
    cert.subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .unwrap_or("")
        .to_owned()
}
