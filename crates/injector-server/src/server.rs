//! The HTTPS accept loop, the plain-HTTP monitoring server, and graceful shutdown.
//!
//! One task per connection: sniff the first byte (plain HTTP on the TLS port gets a clear 400
//! and is closed, as Go's server does) and complete the TLS handshake, both within the
//! handshake timeout, then hyper-util's auto builder serves HTTP/1.1 or HTTP/2 as negotiated by
//! ALPN. An HTTP/1.1 request head must arrive in full within the header read timeout of its
//! first byte; a connection with no request for the idle timeout is closed gracefully.
//! Connections are kept in a table of `max_connections` places, at most
//! `max_connections_per_peer` of them for one peer address: at either cap, a connection still
//! in its handshake, else the longest idle one, is shed for the new one (see `connections`).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::Semaphore;

use crate::budget::MemoryBudget;
use crate::config_store::ConfigStore;
use crate::connections::{Activity, ConnectionTable, Slot, Watched};
use crate::console::{Backend, Console};
use crate::handler::{self, Limits, Shared};
use crate::injector::{Explain, Injector};
use crate::metrics::{AdmissionMetrics, ConnectionMetrics};
use crate::outcome_cache::OutcomeCache;
use crate::readiness::Readiness;
use crate::shadow::ShadowCheck;
use crate::tls::{CertSource, CertStore};
use crate::watch::WatchOptions;
use crate::{Error, Extension, monitoring};

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
    /// Accept only TLS clients with a certificate from a CA in this PEM file (`--client-ca`):
    /// the API server configured to present one. `None`: any client (the default).
    pub client_ca: Option<std::path::PathBuf>,
    /// On shutdown, how long in-flight requests may take to finish (default 25 s, within
    /// Kubernetes' default 30 s termination grace period).
    pub grace_period: Duration,
    /// Admissions processed at once (default 64). A slot is taken once the admission's body
    /// is in, so a slow client never holds one.
    pub max_concurrency: usize,
    /// Memory budget of the admissions in flight, in bytes (default 512 MiB): each admission
    /// holds the bytes of its body as they arrive, then its body size × the measured expansion
    /// of its decoded tree (at least 256 KiB, at most its pool) before it is decoded; when the
    /// budget is spent, admissions wait like for a slot, then get `503` + `Retry-After`.
    pub max_inflight_bytes: usize,
    /// How long an admission waits for a slot before `503 Service Unavailable` with
    /// `Retry-After: 1` (default 1 s; never beyond the request deadline).
    pub queue_timeout: Duration,
    /// Open connections at once (default 4096). At the cap, a connection still in its TLS
    /// handshake, else the one idle the longest, is closed for the new one; accepting pauses
    /// only while every connection has a request in flight.
    pub max_connections: usize,
    /// Open connections from one peer address at once (default 1024, a quarter of
    /// `max_connections`). At the cap, that peer's oldest connection still in its handshake,
    /// else its longest idle one, is closed for the new one; when all of them have a request in
    /// flight, the new one is closed at once. No single peer can hold every connection.
    pub max_connections_per_peer: usize,
    /// Maximum request body (default 6 MiB, Istio's `MaxRequestBodyBytes`); larger bodies get
    /// `413`, from `Content-Length` before reading, or while streaming a chunked body.
    pub body_limit: usize,
    /// Time from accepting a connection to the end of its TLS handshake (default 5 s; the API
    /// server completes one in milliseconds).
    pub handshake_timeout: Duration,
    /// Time allowed for an HTTP/1.1 request head to arrive in full once its first byte has
    /// (slow clients; default 10 s). HTTP/2 connections are bounded by the idle timeout.
    pub header_read_timeout: Duration,
    /// A connection with no request in flight for this long is closed gracefully (default
    /// 90 s, Istio's `IdleTimeout`; the API server reuses its connections well within it).
    pub idle_timeout: Duration,
    /// The pace a request body must keep, in bytes per second (default 64 KiB/s): each
    /// second's worth must arrive within a second of the previous one (or of the request head),
    /// else the request is answered `408` and the connection closed. The whole body must also
    /// arrive within the request's deadline.
    pub min_body_rate: usize,
    /// Deadline when the request has no `?timeout=` (default 10 s, Kubernetes' default
    /// `timeoutSeconds`).
    pub default_timeout: Duration,
    /// Cap on `?timeout=` (default 30 s, the Kubernetes maximum).
    pub max_timeout: Duration,
    /// HTTP/2 streams per connection (default 100, the least RFC 9113 recommends; the API
    /// server's client opens another connection when it needs more).
    pub max_concurrent_streams: u32,
    /// Run [`Injector::admit`] directly on the async worker thread instead of tokio's
    /// blocking pool (default `false`). Saves a thread hand-off per admission, but a slow
    /// engine then stalls other connections and the deadline cannot cut it short: only for
    /// engines that reliably take well under a millisecond.
    pub inline_injector: bool,
    /// Bytes of recent admission outcomes kept for identical pods (default 8 MiB; `0` turns the
    /// cache off). The replicas of a scale-up are the same object when the webhook sees them.
    pub outcome_cache_bytes: usize,
    /// Whether the injector's outcomes ignore `metadata.managedFields`, as Istio's do (it drops
    /// them before injecting and keeps them out of its patch): the server then neither decodes
    /// them nor keys the outcome cache by them (the API server stamps each entry with the second
    /// it was written, so the pods of one scale-up differ there). Default `false`.
    pub ignore_managed_fields: bool,
    /// One cached answer in this many (the outcome cache's, or the engine's own caches') is
    /// computed again without caches on a background thread and compared; a difference turns
    /// that cache off for the configuration in service (default 1000; `0`: no checks).
    pub shadow_check_every: u32,
    /// More metrics and a `/readyz` section from the embedding program (cluster mode).
    pub extension: Extension,
    /// Plain-HTTP address of the read-only web console (`--console-addr`); `None` (the
    /// default) turns it off. See [`crate::console::check_console_addr`] for the loopback rule.
    pub console_addr: Option<SocketAddr>,
    /// The `Host` names the console answers besides loopback on its own port (see
    /// [`crate::console::host`]).
    pub console_hosts: crate::console::ConsoleHosts,
    /// The injector's revision (`--revision`), in every answer's `auditAnnotations` as
    /// `revision`, which the API server's audit log keeps as `<webhook name>/revision`. Empty
    /// (the default): no such annotation.
    pub revision: String,
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
            client_ca: None,
            grace_period: Duration::from_secs(25),
            max_concurrency: 64,
            max_inflight_bytes: 512 << 20,
            queue_timeout: Duration::from_secs(1),
            max_connections: 4096,
            max_connections_per_peer: 1024,
            body_limit: 6 * 1024 * 1024,
            handshake_timeout: Duration::from_secs(5),
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(90),
            min_body_rate: 64 << 10,
            default_timeout: Duration::from_secs(10),
            max_timeout: Duration::from_secs(30),
            max_concurrent_streams: 100,
            inline_injector: false,
            outcome_cache_bytes: 8 << 20,
            ignore_managed_fields: false,
            shadow_check_every: 1000,
            extension: Extension::default(),
            console_addr: None,
            console_hosts: crate::console::ConsoleHosts::LoopbackOnly,
            revision: String::new(),
        }
    }
}

/// A bound, not yet serving, webhook server. Use [`run`] unless you need the bound addresses
/// (tests bind port 0).
pub struct Server<I: Injector> {
    listener: TcpListener,
    monitoring: Option<TcpListener>,
    console: Option<TcpListener>,
    shared: Arc<Shared<I>>,
    acceptor: tokio_rustls::TlsAcceptor,
    connections: Arc<ConnectionTable>,
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
        let clients = match &options.client_ca {
            Some(path) => Some(crate::client_auth::client_ca_verifier(path, options.watch)?
                as Arc<dyn rustls::server::danger::ClientCertVerifier>),
            None => None,
        };
        let tls = certs.server_config(clients)?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let listener =
            listen(options.addr).map_err(|e| Error::Io(format!("binding {}: {e}", options.addr)))?;
        let monitoring = match options.monitoring_addr {
            Some(addr) => Some(listen(addr).map_err(|e| Error::Io(format!("binding {addr}: {e}")))?),
            None => None,
        };
        let console_listener = match options.console_addr {
            Some(addr) => {
                Some(listen(addr).map_err(|e| Error::Io(format!("binding the console's {addr}: {e}")))?)
            }
            None => None,
        };
        let console = match &console_listener {
            Some(listener) => {
                let port = listener
                    .local_addr()
                    .map_err(|e| Error::Io(e.to_string()))?
                    .port();
                let console = Console::new(options.body_limit, port, options.console_hosts.clone());
                Some(Arc::new(console?))
            }
            None => None,
        };
        let metrics = AdmissionMetrics::new();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let budget = MemoryBudget::new(options.max_inflight_bytes);
        registry.register(
            "sidecar_injector_memory_reserved_bytes",
            format!(
                "Memory reserved by the admissions in flight (the bytes of bodies being read, then body size × expansion), of a budget of {} bytes.",
                budget.total_bytes()
            ),
            budget.reserved_gauge(),
        );
        let connection_metrics = ConnectionMetrics::default();
        connection_metrics.register(&mut registry);
        let connections = ConnectionTable::new(
            options.max_connections,
            options.max_connections_per_peer,
            connection_metrics.clone(),
        );
        config.register_metrics(&mut registry);
        certs.register_metrics(&mut registry);
        options.extension.register_metrics(&mut registry);
        let cache = OutcomeCache::new(options.outcome_cache_bytes, options.ignore_managed_fields);
        let injector = Arc::new(injector);
        let shadow = ShadowCheck::start(options.shadow_check_every, injector.clone(), &mut registry);
        let shared = Arc::new(Shared {
            injector,
            config,
            certs,
            metrics,
            registry,
            permits: Arc::new(Semaphore::new(options.max_concurrency.max(1))),
            budget,
            limits: Limits {
                body_limit: options.body_limit,
                min_body_rate: options.min_body_rate,
                queue_timeout: options.queue_timeout,
                default_timeout: options.default_timeout,
                max_timeout: options.max_timeout,
                inline_injector: options.inline_injector,
                ignore_managed_fields: options.ignore_managed_fields,
            },
            readiness: Readiness::with_extension(options.extension.clone()),
            cache: cache.map(Arc::new),
            shadow: Arc::new(shadow),
            console,
            explain: None,
            revision: options.revision.clone(),
        });
        Ok(Server {
            listener,
            monitoring,
            console: console_listener,
            shared,
            acceptor,
            connections,
            options,
        })
    }

    /// The same server, explaining pods on the console (`console_addr`) with `explain`; without
    /// it the console shows no explanation and no configuration.
    #[must_use]
    pub fn with_console(mut self, explain: impl Explain<Config = I::Config>) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.explain = Some(Arc::new(explain));
        }
        self
    }

    /// The bound HTTPS address.
    pub fn local_addr(&self) -> Result<SocketAddr, Error> {
        self.listener.local_addr().map_err(|e| Error::Io(e.to_string()))
    }

    /// The bound monitoring address, if enabled.
    pub fn monitoring_addr(&self) -> Option<SocketAddr> {
        self.monitoring.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// The bound console address, if enabled.
    pub fn console_addr(&self) -> Option<SocketAddr> {
        self.console.as_ref().and_then(|l| l.local_addr().ok())
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
            console,
            shared,
            acceptor,
            connections,
            options,
        } = self;
        // `stop` tells connections to finish; `mon_stop` stops the monitoring server last, so
        // metrics and readiness stay observable while draining.
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let (mon_stop_tx, mon_stop_rx) = tokio::sync::watch::channel(false);
        let monitoring_addr = monitoring.as_ref().and_then(|l| l.local_addr().ok());
        let monitoring_task = monitoring.map(|l| {
            let shared = shared.clone();
            let stop = mon_stop_rx.clone();
            tokio::spawn(monitoring::serve(l, shared, stop))
        });
        let console_task = console.zip(shared.console.clone()).map(|(l, console)| {
            let backend: Arc<dyn Backend> = shared.clone();
            tokio::spawn(crate::console::serve(l, console, backend, mon_stop_rx.clone()))
        });

        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            // hyper's timer runs from the end of one request to the head of the next, so it is
            // the idle bound of a keep-alive connection; slow heads are cut by `ConnTask`.
            .header_read_timeout(options.idle_timeout)
            .keep_alive(true)
            .max_buf_size(H1_READ_BUFFER);
        builder
            .http2()
            .timer(TokioTimer::new())
            .max_concurrent_streams(options.max_concurrent_streams)
            .initial_connection_window_size(H2_CONNECTION_WINDOW)
            .initial_stream_window_size(H2_STREAM_WINDOW)
            .keep_alive_interval(Duration::from_secs(30))
            .keep_alive_timeout(Duration::from_secs(20));
        let builder = Arc::new(builder);
        // Every connection task holds a clone of `done_tx`; draining waits for all to drop.
        let (done_tx, mut done_rx) = tokio::sync::mpsc::channel::<()>(1);
        shared.readiness.set_listening();
        let addr = listener.local_addr().map_err(|e| Error::Io(e.to_string()))?;
        tracing::info!(%addr, "sidecar injector webhook listening (HTTPS): POST /inject");
        tracing::info!("{}", crate::startup::try_it(addr, monitoring_addr, &options.cert));

        tokio::pin!(shutdown);
        loop {
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
            let slot = tokio::select! {
                slot = connections.admit(peer.ip()) => slot,
                () = &mut shutdown => break,
            };
            // The peer holds its share of connections, all busy: this one is closed at once.
            let Some(slot) = slot else { continue };
            let conn = ConnTask {
                acceptor: acceptor.clone(),
                builder: builder.clone(),
                shared: shared.clone(),
                metrics: connections.metrics().clone(),
                handshake_timeout: options.handshake_timeout,
                header_read_timeout: options.header_read_timeout,
                idle_timeout: options.idle_timeout,
                stop: stop_rx.clone(),
                _done: done_tx.clone(),
            };
            tokio::spawn(conn.run(tcp, peer, slot));
        }

        // Draining: stop accepting, report not ready, finish in-flight requests.
        drop(listener);
        shared.readiness.set_draining();
        let open = connections.open();
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
        if let Some(task) = console_task {
            let _ = task.await;
        }
        Ok(())
    }
}

/// The most an HTTP/1.1 connection buffers of what it reads before the handler takes it (hyper's
/// default is 400 KiB): bytes the memory budget does not see, so kept small per connection, about
/// one TLS record. A request head must fit in it (the API server's are well under 1 KiB).
const H1_READ_BUFFER: usize = 16 << 10;

/// The most an HTTP/2 client may send on one connection ahead of the handler (hyper's default:
/// 1 MiB), and on one stream: bytes the memory budget does not see, so kept small. At LAN
/// round-trip times the windows still carry hundreds of MB/s.
const H2_CONNECTION_WINDOW: u32 = 256 << 10;
const H2_STREAM_WINDOW: u32 = 128 << 10;

/// One accepted TCP connection.
struct ConnTask<I: Injector> {
    acceptor: tokio_rustls::TlsAcceptor,
    builder: Arc<auto::Builder<TokioExecutor>>,
    shared: Arc<Shared<I>>,
    metrics: ConnectionMetrics,
    handshake_timeout: Duration,
    header_read_timeout: Duration,
    idle_timeout: Duration,
    stop: tokio::sync::watch::Receiver<bool>,
    _done: tokio::sync::mpsc::Sender<()>,
}

/// Why a connection ended before serving HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HandshakeFailure {
    /// Nothing, or not enough, within the handshake timeout.
    Timeout,
    /// The client closed the connection.
    Closed,
    /// Not TLS, or TLS that rustls refused.
    TlsError,
    /// An HTTP request on the HTTPS port (answered with a 400).
    PlainHttp,
    /// Closed to make room at the connection cap.
    Shed,
}

impl HandshakeFailure {
    fn as_str(self) -> &'static str {
        match self {
            HandshakeFailure::Timeout => "timeout",
            HandshakeFailure::Closed => "closed",
            HandshakeFailure::TlsError => "tls_error",
            HandshakeFailure::PlainHttp => "plain_http",
            HandshakeFailure::Shed => "shed",
        }
    }
}

type Tls = tokio_rustls::server::TlsStream<TcpStream>;

impl<I: Injector> ConnTask<I> {
    async fn run(mut self, tcp: TcpStream, peer: SocketAddr, slot: Slot) {
        let handshake = tokio::select! {
            r = tokio::time::timeout(self.handshake_timeout, self.handshake(tcp, peer)) => {
                r.unwrap_or(Err(HandshakeFailure::Timeout))
            }
            () = slot.shed.notified() => Err(HandshakeFailure::Shed),
        };
        let tls = match handshake {
            Ok(tls) => tls,
            Err(reason) => {
                self.metrics.handshake_failed(reason.as_str());
                tracing::debug!(%peer, reason = reason.as_str(), "connection closed before TLS was established");
                return;
            }
        };
        if *self.stop.borrow() {
            return;
        }
        let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
        let activity = Arc::new(Activity::new());
        slot.established(activity.clone());
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
        let io = TokioIo::new(Watched::new(tls, activity.clone()));
        let conn = self.builder.serve_connection(io, service);
        tokio::pin!(conn);
        let mut closing = false;
        let check_every = (self.header_read_timeout.min(self.idle_timeout) / 4)
            .clamp(Duration::from_millis(50), Duration::from_secs(1));
        let mut tick = tokio::time::interval(check_every);
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
                () = slot.shed.notified(), if !closing => {
                    tracing::debug!(%peer, "closing an idle connection to make room at the connection cap");
                    conn.as_mut().graceful_shutdown();
                    closing = true;
                }
                _ = tick.tick() => {
                    // HTTP/2 sends frames (pings, settings) between requests: only HTTP/1.1
                    // bytes outside a request are the start of a request head.
                    if !h2 && activity.head_pending_for().is_some_and(|d| d >= self.header_read_timeout) {
                        self.metrics.header_timeouts.inc();
                        tracing::debug!(%peer, "request head not received in time; closing");
                        return;
                    }
                    if !closing && activity.idle_for().is_some_and(|d| d >= self.idle_timeout) {
                        tracing::debug!(%peer, "closing idle connection");
                        conn.as_mut().graceful_shutdown();
                        closing = true;
                    }
                }
            }
        }
    }

    /// Sniffs for plain HTTP, then runs the TLS handshake.
    async fn handshake(&self, tcp: TcpStream, peer: SocketAddr) -> Result<Tls, HandshakeFailure> {
        let tcp = reject_plain_http(tcp, peer).await?;
        self.acceptor.accept(tcp).await.map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                HandshakeFailure::Closed
            } else {
                HandshakeFailure::TlsError
            }
        })
    }
}

/// Plain HTTP on the TLS port: answer like Go's `net/http` does and close. TLS records start
/// with 0x16 (handshake); an HTTP request line starts with an upper-case method letter. Runs
/// under the caller's handshake timeout.
async fn reject_plain_http(tcp: TcpStream, peer: SocketAddr) -> Result<TcpStream, HandshakeFailure> {
    let mut first = [0u8; 1];
    match tcp.peek(&mut first).await {
        Ok(1) if first[0].is_ascii_uppercase() => {}
        Ok(1) => return Ok(tcp),
        _ => return Err(HandshakeFailure::Closed),
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
    Err(HandshakeFailure::PlainHttp)
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

/// The backlog asked of `listen`: as deep as the system allows (Linux caps it at
/// `net.core.somaxconn`), as Go's servers ask. A burst of connects, a flood's, then waits in the
/// kernel while the accept loop sheds it, instead of overflowing a shallower queue and dropping
/// a real client's SYN, which costs that client a second before it tries again.
const LISTEN_BACKLOG: u32 = 65_535;

/// A listener on `addr` with [`LISTEN_BACKLOG`] (and `SO_REUSEADDR`, as std's listeners).
fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}
