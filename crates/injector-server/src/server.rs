//! The HTTPS accept loop, the plain-HTTP monitoring server, and graceful shutdown.
//!
//! One task per connection: sniff the first byte (plain HTTP on the TLS port gets a clear 400
//! and is closed, as Go's server does), TLS handshake under a timeout, then hyper-util's auto
//! builder serves HTTP/1.1 or HTTP/2 as negotiated by ALPN. Connections are counted by a
//! semaphore (`max_connections`): at the limit the loop stops accepting until one closes, and
//! the kernel backlog absorbs the burst.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::config_store::ConfigStore;
use crate::handler::{self, Limits, Shared};
use crate::injector::Injector;
use crate::metrics::AdmissionMetrics;
use crate::outcome_cache::OutcomeCache;
use crate::readiness::Readiness;
use crate::tls::{CertSource, CertStore};
use crate::watch::WatchOptions;
use crate::{Error, monitoring};

/// Everything `serve` needs besides the injector and its configuration.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// HTTPS address for admissions (`--addr`, default `0.0.0.0:15017`, Istio's port).
    pub addr: SocketAddr,
    /// Plain-HTTP address for `/metrics`, `/healthz`, `/readyz` (`--monitoring-addr`, default
    /// `0.0.0.0:15014`); `None` disables it.
    pub monitoring_addr: Option<SocketAddr>,
    /// The serving certificate (`--tls-cert`/`--tls-key`, or self-signed with `--dns-name` and
    /// `--write-ca`).
    pub cert: CertSource,
    /// How certificate files are watched.
    pub watch: WatchOptions,
    /// On shutdown, how long in-flight requests may take to finish (default 25 s, within
    /// Kubernetes' default 30 s termination grace period).
    pub grace_period: Duration,
    /// Admissions processed at once (default 64). Memory is bounded by this × `body_limit`.
    pub max_concurrency: usize,
    /// How long an admission waits for a slot before `503 Service Unavailable` with
    /// `Retry-After: 1` (default 1 s; never beyond the request deadline).
    pub queue_timeout: Duration,
    /// Open connections at once (default 4096); beyond it, accepting pauses.
    pub max_connections: usize,
    /// Maximum request body (default 6 MiB, Istio's `MaxRequestBodyBytes`); larger bodies get
    /// `413`, from `Content-Length` before reading, or while streaming a chunked body.
    pub body_limit: usize,
    /// TLS handshake timeout (default 10 s).
    pub handshake_timeout: Duration,
    /// Time allowed to send the request headers (slow clients; default 30 s as Istio's
    /// `ReadHeaderTimeout`). Also bounds idle HTTP/1.1 keep-alive connections.
    pub header_read_timeout: Duration,
    /// A connection with no request in flight for this long is closed gracefully (default
    /// 90 s, Istio's `IdleTimeout`).
    pub idle_timeout: Duration,
    /// Time allowed to send the body (default 30 s).
    pub body_read_timeout: Duration,
    /// Deadline when the request has no `?timeout=` (default 10 s, Kubernetes' default
    /// `timeoutSeconds`).
    pub default_timeout: Duration,
    /// Cap on `?timeout=` (default 30 s, the Kubernetes maximum).
    pub max_timeout: Duration,
    /// HTTP/2 streams per connection (default 256).
    pub max_concurrent_streams: u32,
    /// Run [`Injector::admit`] directly on the async worker thread instead of tokio's
    /// blocking pool (default `false`). Saves a thread hand-off per admission, but a slow
    /// engine then stalls other connections and the deadline cannot cut it short: only for
    /// engines that reliably take well under a millisecond.
    pub inline_injector: bool,
    /// Bytes of recent admission outcomes kept for identical pods (default 8 MiB; `0` turns the
    /// cache off). The replicas of a scale-up are the same object when the webhook sees them.
    pub outcome_cache_bytes: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            addr: SocketAddr::from(([0, 0, 0, 0], 15017)),
            monitoring_addr: Some(SocketAddr::from(([0, 0, 0, 0], 15014))),
            cert: CertSource::SelfSigned {
                dns_names: Vec::new(),
                write_ca: None,
            },
            watch: WatchOptions::default(),
            grace_period: Duration::from_secs(25),
            max_concurrency: 64,
            queue_timeout: Duration::from_secs(1),
            max_connections: 4096,
            body_limit: 6 * 1024 * 1024,
            handshake_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(90),
            body_read_timeout: Duration::from_secs(30),
            default_timeout: Duration::from_secs(10),
            max_timeout: Duration::from_secs(30),
            max_concurrent_streams: 256,
            inline_injector: false,
            outcome_cache_bytes: 8 << 20,
        }
    }
}

/// A bound, not yet serving, webhook server. Use [`run`] unless you need the bound addresses
/// (tests bind port 0).
pub struct Server<I: Injector> {
    listener: TcpListener,
    monitoring: Option<TcpListener>,
    shared: Arc<Shared<I>>,
    acceptor: tokio_rustls::TlsAcceptor,
    options: ServeOptions,
}

impl<I: Injector> std::fmt::Debug for Server<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<I: Injector> Server<I> {
    /// Loads the certificate, builds the TLS configuration and metrics, and binds both
    /// listeners.
    pub async fn bind(
        options: ServeOptions,
        injector: I,
        config: ConfigStore<I::Config>,
    ) -> Result<Self, Error> {
        let certs = CertStore::new(&options.cert, options.watch)?;
        Self::bind_with_certs(options, injector, config, certs).await
    }

    /// Like [`Server::bind`] with an existing certificate store.
    pub async fn bind_with_certs(
        options: ServeOptions,
        injector: I,
        config: ConfigStore<I::Config>,
        certs: CertStore,
    ) -> Result<Self, Error> {
        let tls = certs.server_config()?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let listener = TcpListener::bind(options.addr)
            .await
            .map_err(|e| Error::Io(format!("binding {}: {e}", options.addr)))?;
        let monitoring = match options.monitoring_addr {
            Some(addr) => Some(
                TcpListener::bind(addr)
                    .await
                    .map_err(|e| Error::Io(format!("binding {addr}: {e}")))?,
            ),
            None => None,
        };
        let metrics = AdmissionMetrics::new();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        config.register_metrics(&mut registry);
        certs.register_metrics(&mut registry);
        let shared = Arc::new(Shared {
            injector: Arc::new(injector),
            config,
            certs,
            metrics,
            registry,
            permits: Arc::new(Semaphore::new(options.max_concurrency.max(1))),
            limits: Limits {
                body_limit: options.body_limit,
                body_read_timeout: options.body_read_timeout,
                queue_timeout: options.queue_timeout,
                default_timeout: options.default_timeout,
                max_timeout: options.max_timeout,
                inline_injector: options.inline_injector,
            },
            readiness: Readiness::default(),
            cache: OutcomeCache::new(options.outcome_cache_bytes).map(Arc::new),
        });
        Ok(Server {
            listener,
            monitoring,
            shared,
            acceptor,
            options,
        })
    }

    /// The bound HTTPS address.
    pub fn local_addr(&self) -> Result<SocketAddr, Error> {
        self.listener.local_addr().map_err(|e| Error::Io(e.to_string()))
    }

    /// The bound monitoring address, if enabled.
    pub fn monitoring_addr(&self) -> Option<SocketAddr> {
        self.monitoring.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// The certificate store (e.g. for the self-signed CA PEM).
    pub fn cert_store(&self) -> &CertStore {
        &self.shared.certs
    }

    /// Serves until `shutdown` completes, then stops accepting, lets in-flight requests finish
    /// within the grace period, and returns.
    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), Error> {
        let Server {
            listener,
            monitoring,
            shared,
            acceptor,
            options,
        } = self;
        // `stop` tells connections to finish; `mon_stop` stops the monitoring server last, so
        // metrics and readiness stay observable while draining.
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let (mon_stop_tx, mon_stop_rx) = tokio::sync::watch::channel(false);
        let monitoring_task = monitoring.map(|l| {
            let shared = shared.clone();
            let stop = mon_stop_rx.clone();
            tokio::spawn(monitoring::serve(l, shared, stop))
        });

        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(options.header_read_timeout)
            .keep_alive(true);
        builder
            .http2()
            .timer(TokioTimer::new())
            .max_concurrent_streams(options.max_concurrent_streams)
            .keep_alive_interval(Duration::from_secs(30))
            .keep_alive_timeout(Duration::from_secs(20));
        let builder = Arc::new(builder);
        // Every connection task holds a clone of `done_tx`; draining waits for all to drop.
        let (done_tx, mut done_rx) = tokio::sync::mpsc::channel::<()>(1);
        let connections = Arc::new(Semaphore::new(options.max_connections.max(1)));
        shared.readiness.set_listening();
        tracing::info!(addr = %listener.local_addr().map_err(|e| Error::Io(e.to_string()))?,
            "sidecar injector webhook listening (HTTPS)");

        tokio::pin!(shutdown);
        loop {
            let permit = tokio::select! {
                p = connections.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
                () = &mut shutdown => break,
            };
            let (tcp, peer) = tokio::select! {
                r = listener.accept() => match r {
                    Ok(c) => c,
                    Err(e) => {
                        // EMFILE and friends: back off instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            let _ = tcp.set_nodelay(true);
            let conn = ConnTask {
                acceptor: acceptor.clone(),
                builder: builder.clone(),
                shared: shared.clone(),
                handshake_timeout: options.handshake_timeout,
                idle_timeout: options.idle_timeout,
                stop: stop_rx.clone(),
                _done: done_tx.clone(),
            };
            tokio::spawn(async move {
                let _permit = permit;
                conn.run(tcp, peer).await;
            });
        }

        // Draining: stop accepting, report not ready, finish in-flight requests.
        drop(listener);
        shared.readiness.set_draining();
        let open = options.max_connections.max(1) - connections.available_permits();
        tracing::info!(grace_period = ?options.grace_period, open_connections = open,
            "shutting down: no longer accepting, draining in-flight requests");
        let _ = stop_tx.send(true);
        drop(done_tx);
        match tokio::time::timeout(options.grace_period, done_rx.recv()).await {
            Ok(_) => tracing::info!("all connections drained"),
            Err(_) => tracing::warn!("grace period elapsed with connections still open; closing them"),
        }
        let _ = mon_stop_tx.send(true);
        if let Some(task) = monitoring_task {
            let _ = task.await;
        }
        Ok(())
    }
}

/// One accepted TCP connection.
struct ConnTask<I: Injector> {
    acceptor: tokio_rustls::TlsAcceptor,
    builder: Arc<auto::Builder<TokioExecutor>>,
    shared: Arc<Shared<I>>,
    handshake_timeout: Duration,
    idle_timeout: Duration,
    stop: tokio::sync::watch::Receiver<bool>,
    _done: tokio::sync::mpsc::Sender<()>,
}

impl<I: Injector> ConnTask<I> {
    async fn run(mut self, tcp: TcpStream, peer: SocketAddr) {
        let Some(tcp) = reject_plain_http(tcp, peer, self.handshake_timeout).await else {
            return;
        };
        let tls = match tokio::time::timeout(self.handshake_timeout, self.acceptor.accept(tcp)).await {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => {
                tracing::debug!(%peer, error = %e, "TLS handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!(%peer, "TLS handshake timed out");
                return;
            }
        };
        if *self.stop.borrow() {
            return;
        }
        let activity = Arc::new(Activity::new());
        let shared = self.shared.clone();
        let act = activity.clone();
        let service = service_fn(move |req| {
            let busy = act.begin();
            let shared = shared.clone();
            async move {
                let resp = handler::route(shared, req, peer).await;
                drop(busy);
                resp
            }
        });
        let conn = self.builder.serve_connection(TokioIo::new(tls), service);
        tokio::pin!(conn);
        let mut closing = false;
        let mut tick = tokio::time::interval((self.idle_timeout / 4).max(Duration::from_millis(50)));
        loop {
            tokio::select! {
                res = conn.as_mut() => {
                    if let Err(e) = res {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                    return;
                }
                _ = self.stop.changed(), if !closing => {
                    conn.as_mut().graceful_shutdown();
                    closing = true;
                }
                _ = tick.tick(), if !closing => {
                    if activity.idle_for().is_some_and(|d| d >= self.idle_timeout) {
                        tracing::debug!(%peer, "closing idle connection");
                        conn.as_mut().graceful_shutdown();
                        closing = true;
                    }
                }
            }
        }
    }
}

/// Requests in flight on one connection, and when the last one started or ended.
struct Activity {
    start: Instant,
    in_flight: AtomicUsize,
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Activity {
            start: Instant::now(),
            in_flight: AtomicUsize::new(0),
            last_ms: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::SeqCst);
    }

    fn begin(self: &Arc<Self>) -> Busy {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.touch();
        Busy(self.clone())
    }

    /// How long the connection has been idle, or `None` while a request is in flight.
    fn idle_for(&self) -> Option<Duration> {
        if self.in_flight.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let last = Duration::from_millis(self.last_ms.load(Ordering::SeqCst));
        Some(self.start.elapsed().saturating_sub(last))
    }
}

struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Plain HTTP on the TLS port: answer like Go's `net/http` does and close. TLS records start
/// with 0x16 (handshake); an HTTP request line starts with an upper-case method letter.
async fn reject_plain_http(tcp: TcpStream, peer: SocketAddr, timeout: Duration) -> Option<TcpStream> {
    let mut first = [0u8; 1];
    match tokio::time::timeout(timeout, tcp.peek(&mut first)).await {
        Ok(Ok(1)) if first[0].is_ascii_uppercase() => {}
        Ok(Ok(1)) => return Some(tcp),
        _ => return None,
    }
    tracing::debug!(%peer, "plain HTTP request on the HTTPS port");
    let mut tcp = tcp;
    // Read what the client sent (briefly) so closing does not reset the connection before
    // the client reads our answer.
    let mut buf = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_millis(100), tcp.read(&mut buf)).await;
    let _ = tcp
        .write_all(
            b"HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n\
              Client sent an HTTP request to an HTTPS server.\n",
        )
        .await;
    let _ = tcp.shutdown().await;
    None
}

/// Binds and serves until `shutdown` completes: the entry point of `sidecar-injector serve`.
pub async fn run<I: Injector>(
    options: ServeOptions,
    injector: I,
    config: ConfigStore<I::Config>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error> {
    Server::bind(options, injector, config)
        .await?
        .serve(shutdown)
        .await
}

/// Completes on SIGTERM or SIGINT (Ctrl-C).
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        () = ctrl_c => tracing::info!("SIGINT received"),
        () = term => tracing::info!("SIGTERM received"),
    }
}
