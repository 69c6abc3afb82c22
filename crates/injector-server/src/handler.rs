//! The admission HTTP handler: Istio's `serveInject` semantics (SPEC §b.2) over hyper.
//!
//! Errors become responses, never panics: transport-level problems (body too large, empty,
//! wrong content type) are HTTP errors like Istio's; anything about the AdmissionReview itself
//! is an HTTP 200 AdmissionReview with `allowed: false` and a message.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use prometheus_client::registry::Registry;

use crate::admission::{self, Verdict};
use crate::config_store::ConfigStore;
use crate::injector::{AdmissionInput, AdmissionOutcome, Injector};
use crate::metrics::{AdmissionMetrics, FailureType};
use crate::outcome_cache::{CacheKey, OutcomeCache};
use crate::path_params;
use crate::readiness::Readiness;
use crate::tls::CertStore;

/// Response body type of every handler.
pub(crate) type Body = Full<Bytes>;

/// Limits applied by the handler.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub body_limit: usize,
    pub body_read_timeout: Duration,
    pub queue_timeout: Duration,
    pub default_timeout: Duration,
    pub max_timeout: Duration,
    pub inline_injector: bool,
}

/// Everything the handler needs, shared by all connections.
pub(crate) struct Shared<I: Injector> {
    pub injector: Arc<I>,
    pub config: ConfigStore<I::Config>,
    pub certs: CertStore,
    pub metrics: AdmissionMetrics,
    pub registry: Registry,
    pub permits: Arc<tokio::sync::Semaphore>,
    pub limits: Limits,
    pub readiness: Readiness,
    /// Outcomes of recent identical admissions (`None`: caching off).
    pub cache: Option<Arc<OutcomeCache<I::Config>>>,
}

impl<I: Injector> Shared<I> {
    pub fn readiness_report(&self) -> (bool, String) {
        self.readiness.report(&self.config.status(), &self.certs.status())
    }
}

pub(crate) fn text(status: StatusCode, message: impl Into<String>) -> Response<Body> {
    let mut body = message.into();
    body.push('\n');
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// Routes a request on the HTTPS port.
pub(crate) async fn route<I: Injector>(
    shared: Arc<Shared<I>>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    // Routing uses the decoded path, like Go's `URL.Path` (so `/inject%2Fk%2Fv` is
    // `/inject/k/v`).
    let path = path_params::percent_decode_path(req.uri().path());
    let path = path.as_str();
    // Istio registers `/inject` and the prefix `/inject/`, with no method check: any method
    // with a body works. We keep that (the API server only ever POSTs).
    if path == "/inject" || path.starts_with("/inject/") {
        let path = path.to_owned();
        return Ok(admit(shared, req, path).await);
    }
    if path == "/ready" || path == "/readyz" {
        let (ready, detail) = shared.readiness_report();
        let status = if ready {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        return Ok(json(status, detail.into_bytes()));
    }
    Ok(text(StatusCode::NOT_FOUND, "404 page not found"))
}

pub(crate) fn json(status: StatusCode, body: Vec<u8>) -> Response<Body> {
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    resp
}

/// What happened to one admission, for the log line.
struct Record {
    uid: String,
    namespace: String,
    pod: String,
    decision: &'static str,
    reason: String,
    /// Answered from the outcome cache.
    cached: bool,
}

impl Record {
    fn failed(reason: impl Into<String>) -> Self {
        Record {
            uid: String::new(),
            namespace: String::new(),
            pod: String::new(),
            decision: "error",
            reason: reason.into(),
            cached: false,
        }
    }
}

async fn admit<I: Injector>(shared: Arc<Shared<I>>, req: Request<Incoming>, path: String) -> Response<Body> {
    let start = Instant::now();
    shared.metrics.requests.inc();
    let (resp, record) = admit_inner(&shared, req, &path, start).await;
    let elapsed = start.elapsed();
    shared.metrics.time.observe(elapsed.as_secs_f64());
    tracing::info!(
        target: "injector_server::admission",
        uid = %record.uid,
        namespace = %record.namespace,
        pod = %record.pod,
        path = %path,
        decision = record.decision,
        reason = %record.reason,
        cached = record.cached,
        status = resp.status().as_u16(),
        duration_ms = elapsed.as_secs_f64() * 1000.0,
        "admission"
    );
    resp
}

async fn admit_inner<I: Injector>(
    shared: &Shared<I>,
    req: Request<Incoming>,
    path: &str,
    start: Instant,
) -> (Response<Body>, Record) {
    let m = &shared.metrics;
    let limits = &shared.limits;
    let fail = |kind: FailureType, status: StatusCode, msg: String| {
        m.fail(kind);
        (text(status, msg.clone()), Record::failed(msg))
    };

    let timeout = path_params::timeout_from_query(req.uri().query())
        .unwrap_or(limits.default_timeout)
        .min(limits.max_timeout);
    let deadline = start + timeout;

    // 413 from Content-Length, before reading a byte of the body.
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    // Over HTTP/1.1 the unread rest of the body would be taken for the next request: close.
    let too_large = |version: http::Version| {
        let (mut resp, rec) = fail(
            FailureType::BodyTooLarge,
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request entity too large: limit is {}", limits.body_limit),
        );
        if version < http::Version::HTTP_2 {
            resp.headers_mut()
                .insert(CONNECTION, http::HeaderValue::from_static("close"));
        }
        (resp, rec)
    };
    if declared.is_some_and(|len| len > limits.body_limit as u64) {
        return too_large(req.version());
    }

    // Bounded concurrency: a slot per admission, taken before the body is buffered, so memory
    // is bounded by max_concurrency × body_limit. Excess requests wait up to queue_timeout
    // (never past the deadline), then get 503 + Retry-After.
    let wait = limits
        .queue_timeout
        .min(deadline.saturating_duration_since(Instant::now()));
    let permit = match tokio::time::timeout(wait, shared.permits.clone().acquire_owned()).await {
        Ok(Ok(p)) => p,
        _ => {
            let (mut resp, rec) = fail(
                FailureType::Overloaded,
                StatusCode::SERVICE_UNAVAILABLE,
                "too many admission requests in flight; retry later".to_owned(),
            );
            resp.headers_mut()
                .insert(RETRY_AFTER, http::HeaderValue::from_static("1"));
            return (resp, rec);
        }
    };
    m.in_flight.inc();
    let _in_flight = GaugeGuard(m.in_flight.clone());

    let version = req.version();
    let content_type = req.headers().get(CONTENT_TYPE).cloned();
    let body = Limited::new(req.into_body(), limits.body_limit);
    let body = match tokio::time::timeout(limits.body_read_timeout, body.collect()).await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => return too_large(version),
        Ok(Err(e)) => {
            return fail(
                FailureType::BodyRead,
                StatusCode::BAD_REQUEST,
                format!("error reading body: {e}"),
            );
        }
        Err(_) => {
            return fail(
                FailureType::BodyRead,
                StatusCode::REQUEST_TIMEOUT,
                format!("timed out reading the body after {:?}", limits.body_read_timeout),
            );
        }
    };
    if body.is_empty() {
        return fail(
            FailureType::EmptyBody,
            StatusCode::BAD_REQUEST,
            "no body found".to_owned(),
        );
    }
    // Istio requires exactly `application/json`; `application/json; charset=utf-8` fails.
    if content_type.as_ref().map(|v| v.as_bytes()) != Some(b"application/json") {
        return fail(
            FailureType::ContentType,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid Content-Type, want `application/json`".to_owned(),
        );
    }

    let mut request = match admission::decode(&body) {
        Ok(r) => r,
        Err(e) => {
            m.fail(FailureType::Decode);
            m.success.inc();
            let out = admission::encode_response(
                e.version,
                e.uid.as_deref().unwrap_or(""),
                &Verdict::Deny(e.message.clone()),
            );
            let mut rec = Record::failed(e.message);
            rec.uid = e.uid.unwrap_or_default();
            rec.decision = "denied";
            return (json(StatusCode::OK, out), rec);
        }
    };
    let mut record = Record {
        uid: request.uid.clone(),
        namespace: request.namespace.clone(),
        pod: request.pod_name(),
        decision: "denied",
        reason: String::new(),
        cached: false,
    };
    let (review_version, uid) = (request.version, request.uid.clone());
    let respond = |verdict: &Verdict| {
        json(
            StatusCode::OK,
            admission::encode_response(Some(review_version), &uid, verdict),
        )
    };

    let Some(config) = shared.config.current() else {
        m.fail(FailureType::NoConfig);
        record.reason = "no injector configuration loaded".to_owned();
        let msg = match shared.config.status().last_error {
            Some(e) => format!("the sidecar injector has no valid configuration yet: {e}"),
            None => "the sidecar injector has no configuration loaded yet".to_owned(),
        };
        return (text(StatusCode::SERVICE_UNAVAILABLE, msg), record);
    };

    let (path_env, dropped) = path_params::parse_inject_envs_with_dropped(path);
    if let Some(key) = dropped {
        tracing::warn!(%path, key, "odd number of inject env entries; ignoring the last key");
    }
    let input = AdmissionInput {
        uid: request.uid.clone(),
        namespace: request.namespace.clone(),
        operation: request.operation.clone(),
        dry_run: request.dry_run,
        object: std::mem::take(&mut request.object),
        path_env,
        path: path.to_owned(),
        deadline,
    };
    // An identical admission seen before is answered here, without the engine or a thread
    // hand-off. The key copies the pod, so very large ones are not cached.
    let cache = shared.cache.clone().filter(|_| body.len() <= MAX_CACHED_BODY);
    let key = cache.as_ref().and_then(|cache| cache.key(&input));
    let hit = match (&cache, &key) {
        (Some(cache), Some(key)) => cache.get(&config, key),
        _ => None,
    };
    let result = if let Some(outcome) = hit {
        drop(permit);
        Ok(Ok(Some((outcome, true))))
    } else if limits.inline_injector {
        let _permit = permit;
        if Instant::now() >= input.deadline {
            Ok(Ok(None))
        } else {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                admit_and_remember(cache.as_deref(), key, &*shared.injector, &config, &input)
            }));
            Ok(outcome
                .map(|outcome| Some((outcome, false)))
                .map_err(|_| "the injection engine panicked".to_owned()))
        }
    } else {
        let injector = shared.injector.clone();
        // CPU-bound work goes to the blocking pool; the permit moves with it so a stuck engine
        // keeps its slot until it really finishes (back-pressure instead of unbounded threads).
        let task = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            if Instant::now() >= input.deadline {
                return None;
            }
            let outcome = admit_and_remember(cache.as_deref(), key, &*injector, &config, &input);
            Some((outcome, false))
        });
        tokio::time::timeout_at(deadline.into(), task)
            .await
            .map(|joined| joined.map_err(|e| e.to_string()))
    };
    let outcome = match result {
        Ok(Ok(Some((outcome, cached)))) => {
            if cached {
                m.cache_hits.inc();
            }
            record.cached = cached;
            outcome
        }
        Ok(Ok(None)) | Err(_) => {
            m.fail(FailureType::Deadline);
            m.success.inc();
            let msg = format!(
                "sidecar injection did not complete within the API server's timeout ({timeout:?}); \
                 the injector is overloaded or the webhook timeoutSeconds is too low"
            );
            record.reason = msg.clone();
            return (respond(&Verdict::Deny(msg)), record);
        }
        Ok(Err(error)) => {
            m.fail(FailureType::Internal);
            m.success.inc();
            tracing::error!(uid = %record.uid, %error, "injector task failed");
            let msg = "internal error in the sidecar injector (the injection engine panicked); \
                       see the injector logs"
                .to_owned();
            record.reason = msg.clone();
            return (respond(&Verdict::Deny(msg)), record);
        }
    };
    m.success.inc();
    let verdict = match outcome {
        AdmissionOutcome::Skipped { reason } => {
            m.skip.inc();
            record.decision = "skipped";
            record.reason = reason;
            Verdict::Allow
        }
        AdmissionOutcome::Patched { patch, reason } => {
            m.patched.inc();
            record.decision = "injected";
            record.reason = reason;
            Verdict::Patch(patch)
        }
        AdmissionOutcome::Denied { message } => {
            m.fail(FailureType::Injection);
            record.decision = "denied";
            record.reason = message.clone();
            Verdict::Deny(message)
        }
    };
    (respond(&verdict), record)
}

struct GaugeGuard(prometheus_client::metrics::gauge::Gauge);

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Admission bodies up to this size have their outcome cached.
const MAX_CACHED_BODY: usize = 256 << 10;

/// Runs the engine and stores its outcome under `key` for identical admissions to come.
fn admit_and_remember<I: Injector>(
    cache: Option<&OutcomeCache<I::Config>>,
    key: Option<CacheKey>,
    injector: &I,
    config: &Arc<I::Config>,
    input: &AdmissionInput,
) -> AdmissionOutcome {
    let outcome = injector.admit(config, input);
    if let (Some(cache), Some(key)) = (cache, key) {
        cache.insert(config, key, outcome.clone());
    }
    outcome
}
