//! Prometheus metrics (prometheus-client), with Istio's injector metric names.
//!
//! prometheus-client appends `_total` to counters, so counters are registered without it.
//! Istio's injector metrics have no labels; we add a `type` label to the failure counter (a
//! `sum()` over it gives Istio's series back).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// A one-label label set.
pub(crate) type Label = [(&'static str, &'static str); 1];

/// Failure kinds, the values of the `type` label of `sidecar_injection_failure_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureType {
    /// The body could not be read (client error, timeout, disconnect).
    BodyRead,
    /// The body exceeded the limit.
    BodyTooLarge,
    /// The body was empty.
    EmptyBody,
    /// The `Content-Type` was not exactly `application/json`.
    ContentType,
    /// The AdmissionReview did not decode.
    Decode,
    /// The injector denied the pod (`allowed: false`).
    Injection,
    /// No configuration loaded yet.
    NoConfig,
    /// Too many admissions in flight.
    Overloaded,
    /// The admissions in flight hold the whole memory budget.
    MemoryBudget,
    /// The API server's deadline passed before the work started.
    Deadline,
    /// The injector panicked or its task failed.
    Internal,
}

impl FailureType {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureType::BodyRead => "body_read",
            FailureType::BodyTooLarge => "body_too_large",
            FailureType::EmptyBody => "empty_body",
            FailureType::ContentType => "content_type",
            FailureType::Decode => "decode",
            FailureType::Injection => "injection",
            FailureType::NoConfig => "no_config",
            FailureType::Overloaded => "overloaded",
            FailureType::MemoryBudget => "memory_budget",
            FailureType::Deadline => "deadline",
            FailureType::Internal => "internal",
        }
    }
}

/// Histogram buckets in seconds: Istio's (0.1 … 60) plus finer ones below 100 ms, where a
/// healthy injector lives.
const TIME_BUCKETS: [f64; 17] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 3.0, 5.0, 10.0, 20.0, 30.0, 60.0,
];

/// Admission metrics.
#[derive(Clone, Debug)]
pub(crate) struct AdmissionMetrics {
    pub requests: Counter,
    pub success: Counter,
    pub skip: Counter,
    pub patched: Counter,
    pub failure: Family<Label, Counter>,
    pub time: Histogram,
    pub in_flight: Gauge,
    pub cache_hits: Counter,
}

impl AdmissionMetrics {
    pub fn new() -> Self {
        AdmissionMetrics {
            requests: Counter::default(),
            success: Counter::default(),
            skip: Counter::default(),
            patched: Counter::default(),
            failure: Family::default(),
            time: Histogram::new(TIME_BUCKETS),
            in_flight: Gauge::default(),
            cache_hits: Counter::default(),
        }
    }

    pub fn fail(&self, kind: FailureType) {
        self.failure.get_or_create(&[("type", kind.as_str())]).inc();
    }

    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "sidecar_injection_requests",
            "Total number of sidecar injection requests.",
            self.requests.clone(),
        );
        registry.register(
            "sidecar_injection_success",
            "Total number of admission responses written (includes skipped and denied pods, as in Istio).",
            self.success.clone(),
        );
        registry.register(
            "sidecar_injection_skip",
            "Total number of skipped injection requests.",
            self.skip.clone(),
        );
        registry.register(
            "sidecar_injection_patched",
            "Total number of pods that received an injection patch.",
            self.patched.clone(),
        );
        registry.register(
            "sidecar_injection_failure",
            "Total number of failed injection requests, by failure type.",
            self.failure.clone(),
        );
        registry.register(
            "sidecar_injection_time_seconds",
            "Total time taken for injection in seconds.",
            self.time.clone(),
        );
        registry.register(
            "sidecar_injector_admissions_in_flight",
            "Admission requests currently being processed.",
            self.in_flight.clone(),
        );
        registry.register(
            "sidecar_injection_cache_hits",
            "Admissions answered from the outcome cache (an identical pod under the same configuration).",
            self.cache_hits.clone(),
        );
    }
}

/// Metrics of a hot-reloaded source (configuration or certificate).
#[derive(Clone, Debug, Default)]
pub(crate) struct ReloadMetrics {
    pub last_success: Gauge,
    pub reloads: Family<Label, Counter>,
}

impl ReloadMetrics {
    pub fn record(&self, ok: bool) {
        self.last_success.set(i64::from(ok));
        let result = if ok { "success" } else { "failure" };
        self.reloads.get_or_create(&[("result", result)]).inc();
    }

    /// Registers `<prefix>_last_reload_success` and `<prefix>_reloads_total{result}`.
    pub fn register(&self, registry: &mut Registry, prefix: &str, what: &str) {
        registry.register(
            format!("{prefix}_last_reload_success"),
            format!("1 if the last {what} load succeeded, 0 if it was rejected (the last good one is kept)."),
            self.last_success.clone(),
        );
        registry.register(
            format!("{prefix}_reloads"),
            format!("Number of {what} loads, by result."),
            self.reloads.clone(),
        );
    }
}

/// Metrics of the HTTPS port's connections.
#[derive(Clone, Debug, Default)]
pub(crate) struct ConnectionMetrics {
    /// Connections open now (handshaking or established).
    pub open: Gauge,
    /// New connections that found the table full.
    pub cap_hits: Counter,
    /// Connections closed to make room, by phase (`handshake`, `idle`).
    pub shed: Family<Label, Counter>,
    /// TLS handshakes that did not complete, by reason.
    pub handshake_failures: Family<Label, Counter>,
    /// Connections closed because a request head took too long to arrive.
    pub header_timeouts: Counter,
    /// New connections from a peer that held its share of the table.
    pub peer_cap_hits: Counter,
    /// Of those, the ones closed at once (every connection of the peer was busy).
    pub peer_cap_refusals: Counter,
}

impl ConnectionMetrics {
    pub fn shed(&self, phase: &'static str) {
        self.shed.get_or_create(&[("phase", phase)]).inc();
    }

    pub fn handshake_failed(&self, reason: &'static str) {
        self.handshake_failures.get_or_create(&[("reason", reason)]).inc();
    }

    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "sidecar_injector_connections_open",
            "Connections open on the HTTPS port (in their TLS handshake or established).",
            self.open.clone(),
        );
        registry.register(
            "sidecar_injector_connection_cap_hits",
            "New connections that found the connection cap reached (another was shed, or accepting paused).",
            self.cap_hits.clone(),
        );
        registry.register(
            "sidecar_injector_connections_shed",
            "Connections closed to make room for new ones at the cap, by phase (handshake, idle).",
            self.shed.clone(),
        );
        registry.register(
            "sidecar_injector_tls_handshake_failures",
            "TLS handshakes that did not complete, by reason (timeout, closed, tls_error, plain_http, shed).",
            self.handshake_failures.clone(),
        );
        registry.register(
            "sidecar_injector_header_read_timeouts",
            "HTTP/1.1 connections closed because a request head did not arrive in full within the header read timeout.",
            self.header_timeouts.clone(),
        );
        registry.register(
            "sidecar_injector_peer_connection_cap_hits",
            "New connections from a peer address that held its share of connections (--max-connections-per-peer): one of its own was shed, or the new one closed.",
            self.peer_cap_hits.clone(),
        );
        registry.register(
            "sidecar_injector_peer_connection_refusals",
            "New connections closed at once because every connection of their peer address had a request in flight.",
            self.peer_cap_refusals.clone(),
        );
    }
}
