//! The HTTPS admission server of the sidecar injector.
//!
//! This crate is the adapter between the Kubernetes API server and the injection engine. It
//! owns everything about HTTP, TLS, configuration reloading, metrics and shutdown, and holds
//! no injection logic: the engine plugs in through the small synchronous [`Injector`] trait.
//!
//! # Design
//!
//! Modelled on the linkerd policy-controller's admission service and kube-rs: a small hyper
//! service whose errors become responses, never panics.
//!
//! * Pure, unit-tested modules: `admission` (AdmissionReview v1/v1beta1 decoding and the
//!   response in Istio's exact shape), `path_params` (Istio's `parseInjectEnvs` and the
//!   `?timeout=` Go duration).
//! * Adapters: `server` (tokio-rustls + hyper-util auto builder: HTTP/1.1 and HTTP/2 by ALPN,
//!   timeouts, connection and admission limits, graceful drain), `handler` (Istio's
//!   `serveInject` HTTP semantics), `monitoring` (`/metrics`, `/healthz`,
//!   `/readyz`), `tls` (hot-swapped certificate, self-signed CA), `config_store`
//!   (hot-reloaded configuration that keeps the last good one), `watch` (notify + polling),
//!   `outcome_cache` (bounded LRU of outcomes keyed by the request's bytes, the pod's
//!   `managedFields` and token volume name taken out).
//!
//! # Request flow
//!
//! `POST /inject[/k/v...]?timeout=10s` → `Content-Length` over the limit? `413` at once → read
//! the body before anything else is taken for it: under the size limit, holding the bytes that
//! arrived in the memory budget, at a minimum pace and within the request's deadline (a body that
//! falls behind: `408`) → empty: `400`; `Content-Type` not exactly `application/json`: `415` →
//! reserve the memory of its decoded tree, then an admission slot (`503` + `Retry-After` when
//! either stays spent) → decode the AdmissionReview (errors: `200` with `allowed: false`) →
//! snapshot the configuration (none loaded yet: `503`, so the webhook's `failurePolicy` decides)
//! → an identical admission seen under the same configuration (the replicas of a scale-up) is
//! answered from the outcome cache, on the async worker (one cached answer in
//! `shadow_check_every` computed again without caches, off the admission's thread, and compared:
//! `shadow`) → otherwise run [`Injector::admit`] on
//! the blocking pool under the API server's deadline (`?timeout=`, else 10 s; past it:
//! `allowed: false` saying so) → respond in the request's version with its `uid`, and log one
//! line (uid, namespace, pod, decision, reason, duration). An answer given before the body was
//! read in full closes an HTTP/1.1 connection after draining what the client still sends (up to
//! a bound), so the client reads the answer rather than a reset.
//!
//! Other paths are `404`; `/ready` on the HTTPS port mirrors `/readyz`. The monitoring port
//! serves `/metrics` (Prometheus text 0.0.4), `/healthz` and `/readyz` (JSON detail: config
//! and certificate state, last reload errors). The optional [`console`] (`console_addr`) is a
//! read-only web page on a listener of its own; the admission path only pushes one entry into
//! its ring buffer, without waiting.
//!
//! # Differences from Istio, on purpose
//!
//! * An oversized body is `413`, not `400`.
//! * The response carries `Content-Type: application/json` (Istio sets none).
//! * A review without `request`, or for an object that is not a Pod, is `allowed: false` with
//!   a message (Istio panics, or injects into whatever decodes).
//! * Bodies are JSON only (Istio's universal deserializer would accept YAML).
//! * `sidecar_injection_failure_total` has a `type` label; new metrics are added for
//!   patched pods, in-flight admissions, reloads and certificate expiry.
//!
//! # Wiring
//!
//! ```no_run
//! use injector_server::{
//!     Admission, AdmissionInput, AdmissionOutcome, Caches, ConfigStore, Injector, ServeOptions, WatchOptions,
//! };
//!
//! struct Engine;
//! impl Injector for Engine {
//!     type Config = String;
//!     fn admit(&self, _config: &String, _req: &AdmissionInput, _caches: Caches) -> Admission {
//!         Admission::computed(AdmissionOutcome::Skipped { reason: "example".into(), warnings: Vec::new() })
//!     }
//! }
//!
//! # async fn serve() -> Result<(), injector_server::Error> {
//! let config = ConfigStore::watch_files(
//!     vec![("injector-config".into(), "/etc/istio/inject/config".into())],
//!     WatchOptions::default(),
//!     |files| Ok(files.get("injector-config").unwrap_or("default").to_owned()),
//! );
//! injector_server::run(ServeOptions::default(), Engine, config, injector_server::shutdown_signal()).await
//! # }
//! ```

pub mod admission;
mod body;
mod budget;
mod ca_files;
mod client_auth;
mod config_store;
mod connections;
pub mod console;
mod extension;
mod handler;
mod injector;
pub mod logging;
mod metrics;
mod monitoring;
mod outcome_cache;
mod path_params;
mod plain_http;
mod readiness;
mod review_ids;
mod server;
mod shadow;
mod startup;
mod tls;
pub mod trace;
mod watch;

pub use config_store::{ConfigFile, ConfigFiles, ConfigStore, ReloadStatus};
pub use extension::Extension;
pub use injector::{
    Admission, AdmissionInput, AdmissionOutcome, Caches, Explain, ExplainError, ExplainSubject, Injector,
};
pub use logging::{LogFormat, LoggingError, init_logging, init_logging_with};
pub use metrics::FailureType;
pub use server::{ServeOptions, Server, run, shutdown_signal};
pub use tls::{CertSource, CertStore, TlsError};
pub use trace::{TraceError, Tracing};
pub use watch::WatchOptions;

/// Errors that stop the server from starting.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A certificate could not be generated or loaded, or TLS could not be configured.
    #[error("certificate: {0}")]
    Certificate(String),
    /// A socket or file operation failed (binding an address, writing the CA).
    #[error("{0}")]
    Io(String),
    /// The console cannot start.
    #[error(transparent)]
    Console(#[from] console::ConsoleError),
}
