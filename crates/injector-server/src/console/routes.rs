//! The console's HTTP routes. Read-only: every route but `POST /api/explain` is a GET, and that
//! one only computes an explanation. A request whose `Host` is not one the console answers is
//! refused `421` (see [`super::host`]); every `/api` route needs the page's token (`403`
//! without it). Every answer carries a strict Content-Security-Policy,
//! `X-Content-Type-Options: nosniff`, `X-Frame-Options: DENY`, `Referrer-Policy: no-referrer`
//! and `Cache-Control: no-store`.
//!
//! | route | answer |
//! | --- | --- |
//! | `GET /` | the page (the token embedded) |
//! | `GET /console.js`, `/console.css` | its assets |
//! | `GET /api/state` | readiness and why, configuration, certificate, cluster mode |
//! | `GET /api/admissions?namespace=&decision=&q=` | recent admissions, newest first |
//! | `GET /api/admissions/ID` | one admission and its explanation |
//! | `GET /api/figures` | the figures' time series |
//! | `GET /api/config` | the configuration in service and its last reloads |
//! | `POST /api/explain` | a pasted manifest's decision, reasons, patch and pod diff |

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ALLOW, CACHE_CONTROL, CONTENT_TYPE, HOST};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full, Limited};
use serde_json::{Value, json};

use super::backend::{Backend, Paste, PasteError, parse_labels};
use super::ring::{AdmissionEntry, Filter};
use super::{Console, assets, csrf};
use crate::handler::Body;
use crate::injector::ExplainError;

/// The Content-Security-Policy of every answer: only the console's own script and style,
/// fetches to itself, no frames, no forms elsewhere, no plugins.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// How long a request waits for the explanation slot before `503`.
const EXPLAIN_WAIT: Duration = Duration::from_secs(5);

/// Routes one request.
pub(crate) async fn route<B>(
    console: Arc<Console>,
    backend: Arc<dyn Backend>,
    req: Request<B>,
) -> Result<Response<Body>, Infallible>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let path = req.uri().path().to_owned();
    let method = req.method().clone();
    let host = req
        .headers()
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()));
    let mut resp = if let Err(refusal) = console.hosts.check(host) {
        error(StatusCode::MISDIRECTED_REQUEST, refusal.to_string())
    } else {
        match (method, path.as_str()) {
            (Method::POST, "/api/explain") => explain_paste(&console, backend, req).await,
            (_, "/api/explain") => not_allowed("POST"),
            (Method::GET | Method::HEAD, _) if path.starts_with("/api/") => {
                match csrf::check_token(req.headers(), &console.token) {
                    Ok(()) => get(&console, backend, &path, req.uri().query()).await,
                    Err(refusal) => error(StatusCode::FORBIDDEN, refusal.to_string()),
                }
            }
            (Method::GET | Method::HEAD, _) => get(&console, backend, &path, req.uri().query()).await,
            _ => not_allowed("GET, HEAD"),
        }
    };
    secure(resp.headers_mut());
    Ok(resp)
}

async fn get(
    console: &Console,
    backend: Arc<dyn Backend>,
    path: &str,
    query: Option<&str>,
) -> Response<Body> {
    match path {
        "/" | "/index.html" => asset(assets::page(console.token.as_str()), "text/html; charset=utf-8"),
        "/console.js" => asset(assets::SCRIPT.to_owned(), "text/javascript; charset=utf-8"),
        "/console.css" => asset(assets::STYLE.to_owned(), "text/css; charset=utf-8"),
        "/api/state" => {
            let mut state = backend.state();
            if let Some(map) = state.as_object_mut() {
                map.insert(
                    "console".into(),
                    json!({"ringCapacity": console.ring.capacity(), "droppedEntries": console.ring.dropped()}),
                );
            }
            json_response(StatusCode::OK, &state)
        }
        "/api/admissions" => {
            let filter = Filter::from_query(query);
            let snapshot = console.ring.snapshot();
            let entries: Vec<&AdmissionEntry> = snapshot
                .iter()
                .map(|e| &**e)
                .filter(|e| filter.matches(e))
                .collect();
            json_response(StatusCode::OK, &json!({"admissions": entries}))
        }
        "/api/figures" => json_response(
            StatusCode::OK,
            &json!({"sampleEverySeconds": super::series::SAMPLE_EVERY_SECONDS, "points": console.series.points()}),
        ),
        "/api/config" => json_response(StatusCode::OK, &backend.configuration()),
        _ => match path.strip_prefix("/api/admissions/").map(str::parse::<u64>) {
            Some(Ok(id)) => explain_admission(console, backend, id).await,
            _ => error(StatusCode::NOT_FOUND, format!("no console page at {path}")),
        },
    }
}

/// One admission and its explanation, re-run on its kept review.
async fn explain_admission(console: &Console, backend: Arc<dyn Backend>, id: u64) -> Response<Body> {
    let Some(entry) = console.ring.get(id) else {
        return error(
            StatusCode::NOT_FOUND,
            format!(
                "admission {id} is no longer in the console's ring (it keeps the last {})",
                console.ring.capacity()
            ),
        );
    };
    let Some(review) = entry.review.clone() else {
        return json_response(
            StatusCode::OK,
            &json!({"admission": &*entry, "explanation": null,
                "explanationError": format!("the review was larger than {} KiB and was not kept", super::ring::MAX_KEPT_REVIEW >> 10)}),
        );
    };
    let explained = on_blocking_pool(console, move || backend.explain_review(&review)).await;
    match explained {
        Ok(Ok(explanation)) => json_response(
            StatusCode::OK,
            &json!({"admission": &*entry, "explanation": explanation}),
        ),
        Ok(Err(e)) => json_response(
            StatusCode::OK,
            &json!({"admission": &*entry, "explanation": null, "explanationError": e.to_string()}),
        ),
        Err(resp) => resp,
    }
}

/// `POST /api/explain`: `{"manifest": "...", "namespace": "...", "namespaceLabels": "k=v\n..."}`.
async fn explain_paste<B>(console: &Console, backend: Arc<dyn Backend>, req: Request<B>) -> Response<Body>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if let Err(refusal) = csrf::check(req.headers(), &console.token) {
        return error(StatusCode::FORBIDDEN, refusal.to_string());
    }
    let limit = console.body_limit;
    let body = match Limited::new(req.into_body(), limit).collect().await {
        Ok(body) => body.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the pasted manifest is over the limit of {limit} bytes (the admission body limit)"),
            );
        }
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("error reading the body: {e}")),
    };
    let paste = match paste_of(&body) {
        Ok(paste) => paste,
        Err(e) => return error(StatusCode::BAD_REQUEST, e.to_string()),
    };
    match on_blocking_pool(console, move || backend.explain_paste(paste)).await {
        Ok(Ok(result)) => json_response(StatusCode::OK, &result),
        Ok(Err(e)) => error(explain_status(&e), e.to_string()),
        Err(resp) => resp,
    }
}

/// The status of an explanation that failed: the manifest's fault is `422`; the server's
/// (nothing loaded yet, no explainer) is not.
fn explain_status(error: &ExplainError) -> StatusCode {
    match error {
        ExplainError::Manifest(_) | ExplainError::Review(_) => StatusCode::UNPROCESSABLE_ENTITY,
        ExplainError::NoConfiguration => StatusCode::SERVICE_UNAVAILABLE,
        ExplainError::Unsupported => StatusCode::NOT_IMPLEMENTED,
    }
}

/// Reads the paste form's JSON.
pub(crate) fn paste_of(body: &[u8]) -> Result<Paste, PasteError> {
    let value: Value = serde_json::from_slice(body).map_err(PasteError::NotJson)?;
    let text = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let manifest = text("manifest").ok_or(PasteError::NoManifest)?;
    let namespace_labels = text("namespaceLabels").map(|t| parse_labels(&t)).transpose()?;
    Ok(Paste {
        manifest,
        namespace: text("namespace"),
        namespace_labels,
    })
}

/// Runs `work` on the blocking pool, one at a time; `Err` is the answer when the slot stays
/// busy or the work panicked.
async fn on_blocking_pool<T: Send + 'static>(
    console: &Console,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response<Body>> {
    let permit = match tokio::time::timeout(EXPLAIN_WAIT, console.explain_slot.clone().acquire_owned()).await
    {
        Ok(Ok(permit)) => permit,
        _ => {
            return Err(error(
                StatusCode::SERVICE_UNAVAILABLE,
                "another explanation is still running; try again in a moment".to_owned(),
            ));
        }
    };
    let task = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        work()
    });
    task.await.map_err(|e| {
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the explanation failed: {e}"),
        )
    })
}

fn asset(body: String, content_type: &'static str) -> Response<Body> {
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

fn error(status: StatusCode, message: String) -> Response<Body> {
    json_response(status, &json!({"error": message}))
}

fn not_allowed(allow: &'static str) -> Response<Body> {
    let mut resp = error(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("the console is read-only; this route takes {allow}"),
    );
    resp.headers_mut().insert(ALLOW, HeaderValue::from_static(allow));
    resp
}

fn secure(headers: &mut http::HeaderMap) {
    headers.insert("content-security-policy", HeaderValue::from_static(CSP));
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake;

    impl Backend for Fake {
        fn state(&self) -> Value {
            json!({"ready": true})
        }
        fn configuration(&self) -> Value {
            json!({"inService": {"templates": ["sidecar"]}})
        }
        fn metrics_text(&self) -> String {
            String::new()
        }
        fn explain_review(&self, review: &[u8]) -> Result<Value, ExplainError> {
            Ok(json!({"review": String::from_utf8_lossy(review)}))
        }
        fn explain_paste(&self, paste: Paste) -> Result<Value, ExplainError> {
            match paste.manifest.as_str() {
                "kind: Nothing" => return Err(ExplainError::Manifest("not a workload".into())),
                "no configuration" => return Err(ExplainError::NoConfiguration),
                _ => {}
            }
            Ok(
                json!({"manifest": paste.manifest, "namespace": paste.namespace, "labels": paste.namespace_labels}),
            )
        }
    }

    fn console() -> Arc<Console> {
        let mut console = Console::new(1024, 1, super::super::ConsoleHosts::LoopbackOnly).expect("console");
        console.token = csrf::Token::from_text("tok");
        Arc::new(console)
    }

    async fn call(
        console: &Arc<Console>,
        req: Request<Full<Bytes>>,
    ) -> (StatusCode, http::HeaderMap, Value, String) {
        let resp = route(console.clone(), Arc::new(Fake), req)
            .await
            .expect("infallible");
        let (parts, body) = resp.into_parts();
        let bytes = body.collect().await.expect("body").to_bytes();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        (
            parts.status,
            parts.headers,
            serde_json::from_str(&text).unwrap_or(Value::Null),
            text,
        )
    }

    /// A GET as the page makes it: to the console's own name, with the token.
    fn get(path: &str) -> Request<Full<Bytes>> {
        Request::get(path)
            .header("host", "127.0.0.1:1")
            .header("x-console-token", "tok")
            .body(Full::new(Bytes::new()))
            .expect("request")
    }

    fn post(body: &str, token: Option<&str>) -> Request<Full<Bytes>> {
        let mut builder = Request::post("/api/explain")
            .header("host", "127.0.0.1:1")
            .header("origin", "http://127.0.0.1:1")
            .header("content-type", "application/json");
        if let Some(token) = token {
            builder = builder.header("x-console-token", token);
        }
        builder
            .body(Full::new(Bytes::from(body.to_owned())))
            .expect("request")
    }

    #[tokio::test]
    async fn the_page_embeds_the_token_and_every_answer_is_locked_down() {
        let console = console();
        let (status, headers, _, text) = call(&console, get("/")).await;
        assert_eq!(status, StatusCode::OK);
        assert!(text.contains("content=\"tok\""), "token in the page");
        assert!(
            !text.contains("http://") && !text.contains("https://"),
            "nothing fetched from elsewhere"
        );
        assert_eq!(headers["content-security-policy"], CSP);
        assert_eq!(headers["x-content-type-options"], "nosniff");
        let (status, headers, _, _) = call(&console, get("/console.js")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers["content-type"], "text/javascript; charset=utf-8");
        let (status, _, body, _) = call(&console, get("/nope")).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(body["error"].as_str().unwrap_or("").contains("/nope"));
    }

    /// A DNS-rebinding page: the browser sends its own name as `Host`. Neither the page (with
    /// the token in it) nor any API route answers it.
    #[tokio::test]
    async fn a_rebinding_page_s_host_is_refused_before_anything_is_served() {
        let console = console();
        for path in ["/", "/api/state", "/api/admissions", "/console.js"] {
            let req = Request::get(path)
                .header("host", "evil.example:1")
                .header("x-console-token", "tok")
                .body(Full::new(Bytes::new()))
                .expect("request");
            let (status, headers, body, text) = call(&console, req).await;
            assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{path}");
            assert!(!text.contains("tok\""), "no token leaks: {text}");
            assert!(
                body["error"].as_str().unwrap_or("").contains("evil.example:1"),
                "{body}"
            );
            assert_eq!(headers["content-security-policy"], CSP);
        }
        let mut post = post(r#"{"manifest": "kind: Pod"}"#, Some("tok"));
        post.headers_mut()
            .insert("host", "evil.example:1".parse().expect("value"));
        let (status, _, _, _) = call(&console, post).await;
        assert_eq!(status, StatusCode::MISDIRECTED_REQUEST);
    }

    #[tokio::test]
    async fn every_api_route_needs_the_token_and_the_page_does_not() {
        let console = console();
        for path in [
            "/api/state",
            "/api/admissions",
            "/api/admissions/1",
            "/api/figures",
            "/api/config",
        ] {
            let mut req = get(path);
            req.headers_mut().remove("x-console-token");
            let (status, _, body, _) = call(&console, req).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{path}");
            assert!(
                body["error"]
                    .as_str()
                    .unwrap_or("")
                    .contains("missing the console token"),
                "{body}"
            );
            let mut req = get(path);
            req.headers_mut()
                .insert("x-console-token", "other".parse().expect("value"));
            let (status, _, _, _) = call(&console, req).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{path}");
        }
        let (status, _, body, _) = call(&console, get("/api/state")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let mut page = get("/");
        page.headers_mut().remove("x-console-token");
        let (status, _, _, _) = call(&console, page).await;
        assert_eq!(status, StatusCode::OK);
    }

    #[tokio::test]
    async fn nothing_can_be_changed() {
        let console = console();
        for method in [Method::PUT, Method::DELETE, Method::POST, Method::PATCH] {
            let req = Request::builder()
                .method(method.clone())
                .uri("/api/state")
                .header("host", "localhost:1")
                .body(Full::new(Bytes::new()))
                .expect("request");
            let (status, headers, _, _) = call(&console, req).await;
            assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
            assert_eq!(headers[ALLOW], "GET, HEAD");
        }
        let (status, _, _, _) = call(&console, get("/api/explain")).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    }

    #[tokio::test]
    async fn admissions_are_listed_filtered_and_explained() {
        let console = console();
        for (pod, decision) in [("a", "injected"), ("b", "skipped")] {
            console.ring.push(AdmissionEntry {
                id: 0,
                at_ms: 0,
                namespace: "ns".into(),
                pod: pod.into(),
                owner: None,
                decision,
                reason: String::new(),
                status: 200,
                duration_us: 1,
                cached: false,
                explainable: false,
                review: Some(Bytes::from(format!("review of {pod}"))),
            });
        }
        let (_, _, body, _) = call(&console, get("/api/admissions?decision=skipped")).await;
        assert_eq!(body["admissions"].as_array().map(Vec::len), Some(1));
        assert_eq!(body["admissions"][0]["pod"], "b");
        assert!(
            body["admissions"][0].get("review").is_none(),
            "reviews are never sent"
        );
        let (status, _, body, _) = call(&console, get("/api/admissions/1")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body["explanation"]["review"], "review of a");
        let (status, _, _, _) = call(&console, get("/api/admissions/9")).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn the_paste_needs_the_token_and_is_bounded() {
        let console = console();
        let body =
            r#"{"manifest": "kind: Pod", "namespace": "shop", "namespaceLabels": "istio-injection=enabled"}"#;
        let (status, _, answer, _) = call(&console, post(body, None)).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert!(
            answer["error"]
                .as_str()
                .unwrap_or("")
                .contains("missing the console token")
        );
        let (status, _, _, _) = call(&console, post(body, Some("other"))).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, _, answer, _) = call(&console, post(body, Some("tok"))).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["namespace"], "shop");
        assert_eq!(answer["labels"]["istio-injection"], "enabled");
        let big = format!(r#"{{"manifest": "{}"}}"#, "x".repeat(2000));
        let (status, _, _, _) = call(&console, post(&big, Some("tok"))).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        let (status, _, answer, _) = call(&console, post(r#"{"manifest": " "}"#, Some("tok"))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(answer["error"].as_str().unwrap_or("").contains("paste a Pod"));
    }

    #[tokio::test]
    async fn a_failed_explanation_says_whose_fault_it_is() {
        let console = console();
        let (status, _, answer, _) =
            call(&console, post(r#"{"manifest": "kind: Nothing"}"#, Some("tok"))).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(answer["error"], "not a workload");
        let (status, _, answer, _) =
            call(&console, post(r#"{"manifest": "no configuration"}"#, Some("tok"))).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(answer["error"], "no configuration is loaded");
        let (status, _, answer, _) = call(
            &console,
            post(
                r#"{"manifest": "kind: Pod", "namespaceLabels": "team"}"#,
                Some("tok"),
            ),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(
            answer["error"]
                .as_str()
                .unwrap_or("")
                .contains("\"team\" is not key=value"),
            "{answer}"
        );
        let (status, _, answer, _) = call(&console, post("{", Some("tok"))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(
            answer["error"]
                .as_str()
                .unwrap_or("")
                .starts_with("the request is not JSON: "),
            "{answer}"
        );
    }
}
