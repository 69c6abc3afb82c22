//! The admission HTTP handler: Istio's `serveInject` semantics (<https://github.com/istio/istio/blob/master/pkg/kube/inject/webhook.go>) over hyper.
//!
//! Errors become responses, never panics: transport-level problems (body too large, empty,
//! wrong content type) are HTTP errors like Istio's; anything about the AdmissionReview itself
//! is an HTTP 200 AdmissionReview with `allowed: false` and a message.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use prometheus_client::registry::Registry;
use tokio::sync::OwnedSemaphorePermit;
use tracing::Instrument as _;

use crate::admission::{self, AdmissionRequest, Verdict};
use crate::body::{self, BodyError, Bounds, Pacer};
use crate::budget::{MemoryBudget, Reservation};
use crate::config_store::ConfigStore;
use crate::console::Console;
use crate::console::ring::{self, AdmissionEntry, Owner};
use crate::injector::{AdmissionInput, AdmissionOutcome, Caches, Explain, Injector};
use crate::metrics::{AdmissionMetrics, FailureType};
use crate::outcome_cache::{CacheKey, OutcomeCache};
use crate::path_params;
use crate::readiness::Readiness;
use crate::shadow::{Cache, ShadowCheck};
use crate::tls::CertStore;
use crate::trace;

/// Response body type of every handler.
pub(crate) type Body = Full<Bytes>;

/// Limits applied by the handler.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub body_limit: usize,
    /// Bytes per second a body must keep arriving at (0: no pace).
    pub min_body_rate: usize,
    pub queue_timeout: Duration,
    pub default_timeout: Duration,
    pub max_timeout: Duration,
    pub inline_injector: bool,
    /// The injector's outcomes ignore `metadata.managedFields` (they are not even decoded).
    pub ignore_managed_fields: bool,
}

/// Everything the handler needs, shared by all connections.
pub(crate) struct Shared<I: Injector> {
    pub injector: Arc<I>,
    pub config: ConfigStore<I::Config>,
    pub certs: CertStore,
    pub metrics: AdmissionMetrics,
    pub registry: Registry,
    pub permits: Arc<tokio::sync::Semaphore>,
    /// The memory budget of the admissions in flight.
    pub budget: MemoryBudget,
    pub limits: Limits,
    pub readiness: Readiness,
    /// Outcomes of recent identical admissions (`None`: caching off).
    pub cache: Option<Arc<OutcomeCache<I::Config>>>,
    /// The check of a sample of cached answers against answers computed without caches.
    pub shadow: Arc<ShadowCheck<I::Config>>,
    /// The web console's state (`None`: no console).
    pub console: Option<Arc<Console>>,
    /// What explains pods on the console (`None`: nothing does).
    pub explain: Option<Arc<dyn Explain<Config = I::Config>>>,
    /// The injector's revision, in every answer's audit annotations (empty: none).
    pub revision: String,
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
    peer: SocketAddr,
) -> Result<Response<Body>, Infallible> {
    // Routing uses the decoded path, like Go's `URL.Path` (so `/inject%2Fk%2Fv` is
    // `/inject/k/v`).
    let path = path_params::percent_decode_path(req.uri().path());
    let path = path.as_str();
    // Istio registers `/inject` and the prefix `/inject/`, with no method check: any method
    // with a body works. We keep that (the API server only ever POSTs).
    if path == "/inject" || path.starts_with("/inject/") {
        let path = path.to_owned();
        return Ok(admit(shared, req, path, peer).await);
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
    /// The pod's controller (console only).
    owner: Option<Owner>,
    /// A bounded copy of the review, to re-explain it (console only).
    review: Option<Bytes>,
    /// What the pod's creator should know (the response's `warnings`).
    warnings: Vec<String>,
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
            owner: None,
            review: None,
            warnings: Vec::new(),
        }
    }
}

/// The response's `auditAnnotations` (the decision, its reason, the injector's revision when it
/// has one) and `warnings`, bounded: every admission answered with an AdmissionReview carries
/// them.
fn response_notes<I: Injector>(shared: &Shared<I>, record: &Record) -> admission::Notes {
    let mut audit = vec![
        ("decision", record.decision.to_owned()),
        ("reason", record.reason.clone()),
    ];
    if !shared.revision.is_empty() {
        audit.push(("revision", shared.revision.clone()));
    }
    admission::Notes::bounded(audit, &record.warnings)
}

/// The answer to one admission: the response and what to log about it.
struct Answer {
    resp: Response<Body>,
    record: Record,
    /// The rest of a body answered before it was read (HTTP/1.x), to drain after the answer.
    unread: Option<Unread>,
}

impl Answer {
    fn new(resp: Response<Body>, record: Record) -> Self {
        Answer {
            resp,
            record,
            unread: None,
        }
    }
}

/// A body left unread by an early answer.
struct Unread {
    body: Incoming,
    deadline: Instant,
}

/// A step of the admission chain: the value the next step needs, or the final answer (an
/// early rejection; boxed, as the rare path).
type Step<T> = Result<T, Box<Answer>>;

async fn admit<I: Injector>(
    shared: Arc<Shared<I>>,
    req: Request<Incoming>,
    path: String,
    peer: SocketAddr,
) -> Response<Body> {
    let start = Instant::now();
    shared.metrics.requests.inc();
    let span = trace::admission_span(req.headers());
    let chain = admit_chain(&shared, req, &path, start).instrument(span.clone());
    let Answer { resp, record, unread } = match chain.await {
        Ok(answer) => answer,
        Err(answer) => *answer,
    };
    record_in_span(&span, &record, resp.status());
    if let Some(unread) = unread {
        drain_after_answer(&shared.limits, unread);
    }
    let elapsed = start.elapsed();
    shared.metrics.time.observe(elapsed.as_secs_f64());
    log_admission(&record, &path, peer, resp.status(), elapsed);
    remember_in_console(&shared, record, resp.status(), elapsed);
    resp
}

/// Reads and throws away what an HTTP/1.1 client still sends of a body answered early, while
/// the answer goes out: closing at once would reset the connection under a client still
/// writing, and it would see a connection error instead of the answer. Bounded like a body (its
/// pace, the request's deadline) and to twice the body limit; the connection closes after
/// (the answer says `Connection: close`).
fn drain_after_answer(limits: &Limits, unread: Unread) {
    let (max, rate) = (limits.body_limit.saturating_mul(2), limits.min_body_rate);
    tokio::spawn(body::drain(unread.body, max, rate, unread.deadline));
}

/// The admission's span (when exported): who, and what was decided.
fn record_in_span(span: &tracing::Span, record: &Record, status: StatusCode) {
    if span.is_disabled() {
        return;
    }
    span.record("uid", record.uid.as_str());
    span.record("namespace", record.namespace.as_str());
    span.record("pod", record.pod.as_str());
    span.record("decision", record.decision);
    span.record("reason", record.reason.as_str());
    span.record("cached", record.cached);
    span.record("http.status_code", i64::from(status.as_u16()));
}

/// Console: one entry in the ring of recent admissions (a push that never waits).
fn remember_in_console<I: Injector>(
    shared: &Shared<I>,
    record: Record,
    status: StatusCode,
    elapsed: Duration,
) {
    let Some(console) = &shared.console else { return };
    console.ring.push(AdmissionEntry {
        id: 0,
        at_ms: crate::console::now_ms(),
        namespace: record.namespace,
        pod: record.pod,
        owner: record.owner,
        decision: record.decision,
        reason: record.reason,
        status: status.as_u16(),
        duration_us: u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
        cached: record.cached,
        explainable: false,
        review: record.review,
    });
}

/// Console: the pod's owner and a copy of a small enough review, taken before the pod moves
/// to the engine.
fn console_details<I: Injector>(
    shared: &Shared<I>,
    request: &AdmissionRequest,
    body: &Bytes,
) -> (Option<Owner>, Option<Bytes>) {
    if shared.console.is_none() {
        return (None, None);
    }
    // A copy, not a slice: a slice would keep the whole connection buffer it points into.
    let review = (body.len() <= ring::MAX_KEPT_REVIEW).then(|| Bytes::copy_from_slice(body));
    (ring::owner_of(&request.object), review)
}

/// The admission's log line: INFO when the pod was injected or skipped, WARN when it was denied
/// or the request failed. String fields are recorded as `&str`, which the text format quotes
/// (a reason has spaces) and JSON writes as plain strings; the duration is in milliseconds
/// rounded to the microsecond.
fn log_admission(record: &Record, path: &str, peer: SocketAddr, status: StatusCode, elapsed: Duration) {
    let duration_ms = duration_ms(elapsed);
    macro_rules! line {
        ($level:ident) => {
            tracing::$level!(
                target: "injector_server::admission",
                uid = record.uid.as_str(),
                namespace = record.namespace.as_str(),
                pod = record.pod.as_str(),
                path,
                peer = %peer,
                decision = record.decision,
                reason = record.reason.as_str(),
                cached = record.cached,
                status = status.as_u16(),
                duration_ms,
                "admission"
            )
        };
    }
    if is_warning(record.decision, status) {
        line!(warn);
    } else {
        line!(info);
    }
}

/// Denials and failed requests are worth a warning; injected and skipped pods are not.
fn is_warning(decision: &str, status: StatusCode) -> bool {
    status != StatusCode::OK || !matches!(decision, "injected" | "skipped")
}

/// Milliseconds, rounded to three decimals (the microsecond), so a log line reads
/// `duration_ms=1.234` rather than `1.2339999999999998`.
fn duration_ms(elapsed: Duration) -> f64 {
    let micros = u32::try_from(elapsed.as_micros()).unwrap_or(u32::MAX);
    f64::from(micros) / 1000.0
}

/// The admission chain: limits → body → decode → configuration → cache or engine → verdict →
/// response. Each step either hands the next one what it needs or answers early.
async fn admit_chain<I: Injector>(
    shared: &Shared<I>,
    req: Request<Incoming>,
    path: &str,
    start: Instant,
) -> Step<Answer> {
    let timeout = request_timeout(&shared.limits, &req);
    let deadline = start + timeout;
    let req = check_declared_length(shared, req, deadline)?;
    let (body, reservation) = read_body(shared, req, start, deadline).await?;
    let reservation = reserve_memory(shared, reservation, body.len(), deadline).await?;
    let permit = acquire_slot(shared, deadline).await?;
    let _in_flight = GaugeGuard::inc(&shared.metrics.in_flight);
    let mut request =
        tracing::debug_span!(target: trace::TARGET, "decode").in_scope(|| decode_review(shared, &body))?;
    let (owner, review) = console_details(shared, &request, &body);
    let mut record = Record {
        uid: request.uid.clone(),
        namespace: request.namespace.clone(),
        pod: request.pod_name(),
        decision: "denied",
        reason: String::new(),
        cached: false,
        owner,
        review,
        warnings: Vec::new(),
    };
    let config = current_config(shared, &mut record)?;
    let input = admission_input(&mut request, path, deadline);
    let body_len = body.len();
    // The decoded tree is what is left to weigh; the raw body goes.
    drop(body);
    let engine = tracing::debug_span!(
        target: trace::TARGET,
        "engine",
        cache = tracing::field::Empty,
        engine_cache = tracing::field::Empty
    );
    let result = run_engine(shared, config, input, (permit, reservation), body_len, deadline)
        .instrument(engine.clone())
        .await;
    if !engine.is_disabled() {
        engine.record("cache", cache_use(&result));
    }
    let verdict = verdict(shared, result, timeout, &mut record);
    let notes = response_notes(shared, &record);
    let resp = json(
        StatusCode::OK,
        admission::encode_response_with(Some(request.version), &request.uid, &verdict, &notes),
    );
    Ok(Answer::new(resp, record))
}

/// Counts a failure and answers with a plain-text HTTP error.
fn reject<I: Injector>(
    shared: &Shared<I>,
    kind: FailureType,
    status: StatusCode,
    msg: String,
) -> Box<Answer> {
    shared.metrics.fail(kind);
    Box::new(Answer::new(text(status, msg.clone()), Record::failed(msg)))
}

/// The API server's deadline for this request: `?timeout=`, else the default, capped.
fn request_timeout(limits: &Limits, req: &Request<Incoming>) -> Duration {
    path_params::timeout_from_query(req.uri().query())
        .unwrap_or(limits.default_timeout)
        .min(limits.max_timeout)
}

/// `413` for a body over the limit.
fn too_large<I: Injector>(shared: &Shared<I>) -> Box<Answer> {
    reject(
        shared,
        FailureType::BodyTooLarge,
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("request entity too large: limit is {}", shared.limits.body_limit),
    )
}

/// An early answer on HTTP/1.x closes the connection, since the unread rest of the body
/// would be taken for the next request; what the client still sends of it is drained after
/// the answer (up to a bound). HTTP/2 ends the stream alone.
fn answered_before_the_body(
    answer: Box<Answer>,
    body: Incoming,
    version: http::Version,
    deadline: Instant,
) -> Box<Answer> {
    let mut answer = closing(answer, version);
    if version < http::Version::HTTP_2 {
        answer.unread = Some(Unread { body, deadline });
    }
    answer
}

/// Limits: `413` from `Content-Length`, before reading a byte of the body.
fn check_declared_length<I: Injector>(
    shared: &Shared<I>,
    req: Request<Incoming>,
    deadline: Instant,
) -> Step<Request<Incoming>> {
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > shared.limits.body_limit as u64) {
        let version = req.version();
        return Err(answered_before_the_body(
            too_large(shared),
            req.into_body(),
            version,
            deadline,
        ));
    }
    Ok(req)
}

/// How long an admission may wait for a slot or for memory: the queue timeout, never past
/// the deadline.
fn queue_wait(limits: &Limits, deadline: Instant) -> Duration {
    limits
        .queue_timeout
        .min(deadline.saturating_duration_since(Instant::now()))
}

/// `503` + `Retry-After: 1`: the server is at a limit now, not broken.
fn overloaded<I: Injector>(shared: &Shared<I>, kind: FailureType, message: &str) -> Box<Answer> {
    let answer = reject(shared, kind, StatusCode::SERVICE_UNAVAILABLE, message.to_owned());
    retry_later(answer)
}

/// Adds `Retry-After: 1` to a `503`.
fn retry_later(mut answer: Box<Answer>) -> Box<Answer> {
    answer
        .resp
        .headers_mut()
        .insert(RETRY_AFTER, http::HeaderValue::from_static("1"));
    answer
}

const BUDGET_SPENT: &str =
    "the admissions in flight hold the server's memory budget (--max-inflight-mib); retry later";

/// Limits: the memory of the whole body's decoded tree (body × expansion), now that its size
/// is known; waits like a slot, then `503` + Retry-After.
async fn reserve_memory<I: Injector>(
    shared: &Shared<I>,
    mut reservation: Reservation,
    body_len: usize,
    deadline: Instant,
) -> Step<Reservation> {
    let wait = queue_wait(&shared.limits, deadline);
    if shared.budget.hold_run(&mut reservation, body_len, wait).await {
        Ok(reservation)
    } else {
        Err(overloaded(shared, FailureType::MemoryBudget, BUDGET_SPENT))
    }
}

/// Limits: a slot per admission, taken once its body is in and its memory reserved, so a slow
/// client never holds one. Excess requests wait up to queue_timeout (never past the deadline),
/// then get 503 + Retry-After.
async fn acquire_slot<I: Injector>(shared: &Shared<I>, deadline: Instant) -> Step<OwnedSemaphorePermit> {
    let wait = queue_wait(&shared.limits, deadline);
    match tokio::time::timeout(wait, shared.permits.clone().acquire_owned()).await {
        Ok(Ok(permit)) => Ok(permit),
        _ => Err(overloaded(
            shared,
            FailureType::Overloaded,
            "too many admission requests in flight; retry later",
        )),
    }
}

/// Body: read whole before anything else is taken for it (see [`body`]): under the size limit,
/// the memory budget (the bytes that arrived), the request's deadline and the pace; an empty
/// body is `400` and a `Content-Type` other than exactly `application/json` is `415`.
async fn read_body<I: Injector>(
    shared: &Shared<I>,
    req: Request<Incoming>,
    start: Instant,
    deadline: Instant,
) -> Step<(Bytes, Reservation)> {
    let limits = &shared.limits;
    let version = req.version();
    let content_type = req.headers().get(CONTENT_TYPE).cloned();
    let bounds = Bounds {
        limit: limits.body_limit,
        deadline,
        memory_wait: limits.queue_timeout,
    };
    let pacer = Pacer::new(start, limits.min_body_rate);
    let mut reservation = shared.budget.empty();
    let collected = body::collect(&shared.budget, req.into_body(), &bounds, pacer, &mut reservation).await;
    let body = match collected {
        Ok(body) => body,
        Err(BodyError::TooLarge(rest)) => {
            return Err(answered_before_the_body(
                too_large(shared),
                rest,
                version,
                deadline,
            ));
        }
        Err(BodyError::BudgetSpent(rest)) => {
            let answer = overloaded(shared, FailureType::MemoryBudget, BUDGET_SPENT);
            return Err(answered_before_the_body(answer, rest, version, deadline));
        }
        Err(BodyError::Read(e)) => {
            return Err(reject(
                shared,
                FailureType::BodyRead,
                StatusCode::BAD_REQUEST,
                format!("error reading body: {e}"),
            ));
        }
        Err(BodyError::TooSlow) => {
            return Err(closing(
                reject(
                    shared,
                    FailureType::BodyRead,
                    StatusCode::REQUEST_TIMEOUT,
                    format!(
                        "the body arrived slower than {} KiB/s; closing the connection",
                        limits.min_body_rate / 1024
                    ),
                ),
                version,
            ));
        }
        Err(BodyError::Late) => {
            return Err(closing(
                reject(
                    shared,
                    FailureType::BodyRead,
                    StatusCode::REQUEST_TIMEOUT,
                    "the body did not arrive before the request's deadline; closing the connection"
                        .to_owned(),
                ),
                version,
            ));
        }
    };
    if body.is_empty() {
        return Err(reject(
            shared,
            FailureType::EmptyBody,
            StatusCode::BAD_REQUEST,
            "no body found".to_owned(),
        ));
    }
    // Istio requires exactly `application/json`; `application/json; charset=utf-8` fails.
    if content_type.as_ref().map(|v| v.as_bytes()) != Some(b"application/json") {
        return Err(reject(
            shared,
            FailureType::ContentType,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid Content-Type, want `application/json`".to_owned(),
        ));
    }
    Ok((body, reservation))
}

/// Closes an HTTP/1.x connection with the answer (HTTP/2 ends the stream alone).
fn closing(mut answer: Box<Answer>, version: http::Version) -> Box<Answer> {
    if version < http::Version::HTTP_2 {
        answer
            .resp
            .headers_mut()
            .insert(CONNECTION, http::HeaderValue::from_static("close"));
    }
    answer
}

/// Decode: the AdmissionReview; a problem with it is an HTTP 200 with `allowed: false`.
fn decode_review<I: Injector>(shared: &Shared<I>, body: &[u8]) -> Step<AdmissionRequest> {
    let decoded = if shared.limits.ignore_managed_fields {
        admission::decode_ignoring_managed_fields(body)
    } else {
        admission::decode(body)
    };
    decoded.map_err(|e| {
        let m = &shared.metrics;
        m.fail(FailureType::Decode);
        m.success.inc();
        let mut record = Record::failed(e.message.clone());
        record.uid = e.uid.clone().unwrap_or_default();
        record.decision = "denied";
        let out = admission::encode_response_with(
            e.version,
            e.uid.as_deref().unwrap_or(""),
            &Verdict::Deny(e.message),
            &response_notes(shared, &record),
        );
        Box::new(Answer::new(json(StatusCode::OK, out), record))
    })
}

/// Configuration: a snapshot of the current one; none loaded yet is `503` + Retry-After, so
/// the webhook's `failurePolicy` decides.
fn current_config<I: Injector>(shared: &Shared<I>, record: &mut Record) -> Step<Arc<I::Config>> {
    shared.config.current().ok_or_else(|| {
        shared.metrics.fail(FailureType::NoConfig);
        let mut record = std::mem::replace(record, Record::failed(""));
        record.reason = "no injector configuration loaded".to_owned();
        let msg = match shared.config.status().last_error {
            Some(e) => format!("the sidecar injector has no valid configuration yet: {e}"),
            None => "the sidecar injector has no configuration loaded yet".to_owned(),
        };
        retry_later(Box::new(Answer::new(
            text(StatusCode::SERVICE_UNAVAILABLE, msg),
            record,
        )))
    })
}

/// What the engine is given: the request (its pod moved out) and the path's inject envs.
fn admission_input(request: &mut AdmissionRequest, path: &str, deadline: Instant) -> AdmissionInput {
    let (path_env, dropped) = path_params::parse_inject_envs_with_dropped(path);
    if let Some(key) = dropped {
        tracing::warn!(%path, key, "odd number of inject env entries; ignoring the last key");
    }
    AdmissionInput {
        uid: request.uid.clone(),
        namespace: request.namespace.clone(),
        operation: request.operation.clone(),
        dry_run: request.dry_run,
        object: std::mem::take(&mut request.object),
        path_env,
        path: path.to_owned(),
        deadline,
    }
}

/// How the cache-or-engine step ended.
enum EngineResult {
    /// The outcome, and whether it came from the cache.
    Done(AdmissionOutcome, bool),
    /// The deadline passed before or while the engine ran.
    Late,
    /// The engine panicked or its task failed.
    Failed(String),
}

/// Whether the outcome cache answered, for the engine's span.
fn cache_use(result: &EngineResult) -> &'static str {
    match result {
        EngineResult::Done(_, true) => "hit",
        EngineResult::Done(_, false) => "miss",
        EngineResult::Late => "late",
        EngineResult::Failed(_) => "failed",
    }
}

/// Cache or engine: an identical admission seen under the same configuration (the replicas
/// of a scale-up) is answered from the outcome cache, on the async worker; otherwise the engine
/// runs on the blocking pool (or inline) under the deadline.
async fn run_engine<I: Injector>(
    shared: &Shared<I>,
    config: Arc<I::Config>,
    input: AdmissionInput,
    permit: (OwnedSemaphorePermit, Reservation),
    body_len: usize,
    deadline: Instant,
) -> EngineResult {
    // The key copies the pod, so very large ones are not cached.
    let cache = shared
        .cache
        .clone()
        .filter(|_| body_len <= MAX_CACHED_BODY && shared.shadow.trusts(&config, Cache::Outcome));
    let key = cache.as_ref().and_then(|cache| cache.key(&input));
    let hit = match (&cache, &key) {
        (Some(cache), Some(key)) => cache.get(&config, key),
        _ => None,
    };
    if let Some(outcome) = hit {
        drop(permit);
        shared.shadow.offer(&config, &input, &outcome, Cache::Outcome);
        shared.injector.observe(&input, &outcome);
        return EngineResult::Done(outcome, true);
    }
    if shared.limits.inline_injector {
        let _permit = permit;
        if Instant::now() >= input.deadline {
            return EngineResult::Late;
        }
        return match caught(|| {
            admit_and_remember(
                &*shared.injector,
                &shared.shadow,
                cache.as_deref(),
                key,
                &config,
                &input,
            )
        }) {
            Ok(outcome) => EngineResult::Done(outcome, false),
            Err(failed) => failed,
        };
    }
    let (injector, shadow) = (shared.injector.clone(), shared.shadow.clone());
    // The engine's stage spans, on the pool's thread, are children of this one.
    let span = tracing::Span::current();
    // CPU-bound work goes to the blocking pool; the permit moves with it so a stuck engine
    // keeps its slot until it really finishes (back-pressure instead of unbounded threads).
    let task = tokio::task::spawn_blocking(move || {
        let _span = span.enter();
        let _permit = permit;
        if Instant::now() >= input.deadline {
            return None;
        }
        Some(admit_and_remember(
            &*injector,
            &shadow,
            cache.as_deref(),
            key,
            &config,
            &input,
        ))
    });
    match tokio::time::timeout_at(deadline.into(), task).await {
        Ok(Ok(Some(outcome))) => EngineResult::Done(outcome, false),
        Ok(Ok(None)) | Err(_) => EngineResult::Late,
        Ok(Err(e)) => EngineResult::Failed(e.to_string()),
    }
}

/// Runs engine work on this thread, a panic in it made [`EngineResult::Failed`].
fn caught<T>(work: impl FnOnce() -> T) -> Result<T, EngineResult> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
        .map_err(|_| EngineResult::Failed("the injection engine panicked".to_owned()))
}

/// Verdict: the engine's outcome as `allowed`/patch/denial, counted and recorded.
fn verdict<I: Injector>(
    shared: &Shared<I>,
    result: EngineResult,
    timeout: Duration,
    record: &mut Record,
) -> Verdict {
    let m = &shared.metrics;
    let outcome = match result {
        EngineResult::Done(outcome, cached) => {
            if cached {
                m.cache_hits.inc();
            }
            record.cached = cached;
            outcome
        }
        EngineResult::Late => {
            m.fail(FailureType::Deadline);
            m.success.inc();
            let msg = format!(
                "sidecar injection did not complete within the API server's timeout ({timeout:?}); \
                 the injector is overloaded or the webhook timeoutSeconds is too low"
            );
            record.reason = msg.clone();
            return Verdict::Deny(msg);
        }
        EngineResult::Failed(error) => {
            m.fail(FailureType::Internal);
            m.success.inc();
            tracing::error!(uid = %record.uid, %error, "injector task failed");
            let msg = "internal error in the sidecar injector (the injection engine panicked); \
                       see the injector logs"
                .to_owned();
            record.reason = msg.clone();
            return Verdict::Deny(msg);
        }
    };
    m.success.inc();
    match outcome {
        AdmissionOutcome::Skipped { reason, warnings } => {
            m.skip.inc();
            record.decision = "skipped";
            record.reason = reason;
            record.warnings = warnings;
            Verdict::Allow
        }
        AdmissionOutcome::Patched {
            patch,
            reason,
            warnings,
        } => {
            m.patched.inc();
            record.decision = "injected";
            record.reason = reason;
            record.warnings = warnings;
            Verdict::Patch(patch)
        }
        AdmissionOutcome::Denied { message } => {
            m.fail(FailureType::Injection);
            record.decision = "denied";
            record.reason = message.clone();
            Verdict::Deny(message)
        }
    }
}

/// Decrements a gauge when dropped.
struct GaugeGuard(prometheus_client::metrics::gauge::Gauge);

impl GaugeGuard {
    fn inc(gauge: &prometheus_client::metrics::gauge::Gauge) -> Self {
        gauge.inc();
        GaugeGuard(gauge.clone())
    }
}

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Admission bodies up to this size have their outcome cached.
const MAX_CACHED_BODY: usize = 256 << 10;

/// Runs the engine (with its own caches unless a shadow check found them wrong under `config`),
/// offers a cached answer to the shadow check, stores the outcome under `key` for the admissions
/// to come that share it, and tells the injector of it.
fn admit_and_remember<I: Injector>(
    injector: &I,
    shadow: &ShadowCheck<I::Config>,
    cache: Option<&OutcomeCache<I::Config>>,
    key: Option<CacheKey>,
    config: &Arc<I::Config>,
    input: &AdmissionInput,
) -> AdmissionOutcome {
    let caches = if shadow.trusts(config, Cache::Engine) {
        Caches::Use
    } else {
        Caches::Skip
    };
    let admission = injector.admit(config, input, caches);
    // On the engine's span (when exported): whether the engine's own caches gave the answer.
    tracing::Span::current().record("engine_cache", admission.cached);
    if admission.cached {
        shadow.offer(config, input, &admission.outcome, Cache::Engine);
    }
    let outcome = admission.outcome;
    if let (Some(cache), Some(key)) = (cache, key) {
        let any_token_name = admission.any_token_name && key.token.is_some();
        cache.insert(config, key, outcome.clone(), any_token_name);
    }
    injector.observe(input, &outcome);
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_whole_microseconds_in_milliseconds() {
        assert_eq!(duration_ms(Duration::from_nanos(1_233_999)).to_string(), "1.233");
        assert_eq!(duration_ms(Duration::from_micros(100)).to_string(), "0.1");
        assert_eq!(duration_ms(Duration::from_secs(12)).to_string(), "12000");
    }

    #[test]
    fn denials_and_failures_warn() {
        assert!(!is_warning("injected", StatusCode::OK));
        assert!(!is_warning("skipped", StatusCode::OK));
        assert!(is_warning("denied", StatusCode::OK));
        assert!(is_warning("error", StatusCode::PAYLOAD_TOO_LARGE));
        assert!(is_warning("denied", StatusCode::SERVICE_UNAVAILABLE));
    }
}
