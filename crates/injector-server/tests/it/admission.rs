//! Admission semantics over HTTPS (Istio's `serveInject`, <https://github.com/istio/istio/blob/master/pkg/kube/inject/webhook.go>): versions, uid echo, patch, skip, deny, HTTP
//! errors, decode errors, path parameters, deadlines.

use http::{Method, StatusCode};
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn v1_and_v1beta1_over_http1_and_http2() {
    let server = TestServer::start().await;
    for proto in [Proto::H1, Proto::H2] {
        let mut client = server.client(proto).await;
        let want_alpn: &[u8] = if proto == Proto::H1 { b"http/1.1" } else { b"h2" };
        assert_eq!(client.alpn.as_deref(), Some(want_alpn));
        for version in ["admission.k8s.io/v1", "admission.k8s.io/v1beta1"] {
            // Several requests on the same connection: keep-alive / multiplexing.
            for i in 0..3 {
                let uid = format!("uid-{proto:?}-{version}-{i}");
                let resp = client
                    .post("/inject", review(version, &uid, json!({})))
                    .await
                    .expect("response");
                assert_eq!(resp.status, StatusCode::OK, "{}", resp.text());
                assert_eq!(resp.headers["content-type"], "application/json");
                let body = resp.json();
                assert_eq!(body["apiVersion"], version);
                assert_eq!(body["kind"], "AdmissionReview");
                assert_eq!(body["response"]["uid"], uid.as_str());
                assert_eq!(body["response"]["allowed"], true);
                assert_eq!(body["response"]["patchType"], "JSONPatch");
                assert!(body.get("request").is_none(), "request is not echoed");
                let patch = decoded_patch(&body);
                assert_eq!(patch[0]["value"], "fake-1");
                assert_eq!(patch[2]["value"], "default");
                // Istio's key order.
                let text = resp.text();
                let order: Vec<_> = [
                    "\"kind\"",
                    "\"apiVersion\"",
                    "\"response\"",
                    "\"uid\"",
                    "\"allowed\"",
                    "\"patch\"",
                    "\"patchType\"",
                ]
                .iter()
                .map(|k| text.find(k).expect("key present"))
                .collect();
                assert!(order.windows(2).all(|w| w[0] < w[1]), "key order in {text}");
            }
        }
    }
    server.stop().await;
}

/// Every answer carries the decision, its reason and the revision for the audit log; the
/// engine's warnings are sent bounded (a tenant's value can be any size).
#[tokio::test]
async fn audit_annotations_and_bounded_warnings() {
    let server = TestServer::start().await;
    let mut client = server.client(Proto::H2).await;
    let long = "v".repeat(5000);
    for (annotations, decision, reason) in [
        (json!({}), "injected", "injected"),
        (json!({"test/action": "skip"}), "skipped", "test says skip"),
        (
            json!({"test/action": "deny"}),
            "denied",
            "test says deny: fix annotation test/action",
        ),
        (
            json!({"test/action": "warn", "test/value": long}),
            "skipped",
            "test says warn",
        ),
    ] {
        let resp = client
            .post("/inject", review("admission.k8s.io/v1", "u", annotations.clone()))
            .await
            .expect("response");
        let body = resp.json();
        assert_eq!(
            body["response"]["auditAnnotations"],
            json!({"decision": decision, "reason": reason, "revision": "fake-rev"}),
            "{annotations}"
        );
        let warnings = body["response"]["warnings"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if annotations.get("test/value").is_some() {
            assert_eq!(warnings.len(), 4, "{warnings:?}");
            for warning in &warnings {
                let text = warning.as_str().expect("text");
                assert_eq!(text.chars().count(), 240, "{text}");
                assert!(text.ends_with('…'));
            }
        } else {
            assert!(warnings.is_empty(), "{warnings:?}");
        }
    }
    // A review that does not decode is answered with the audit annotations too.
    let resp = client
        .post(
            "/inject",
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x"}}"#
                .to_vec(),
        )
        .await
        .expect("response");
    assert_eq!(resp.json()["response"]["auditAnnotations"]["decision"], "denied");
    server.stop().await;
}

#[tokio::test]
async fn path_parameters_reach_the_injector() {
    let server = TestServer::start().await;
    let mut client = server.client(Proto::H2).await;
    for (path, want) in [
        (
            "/inject/cluster/C1/net/N1",
            r#"{"ISTIO_META_CLUSTER_ID":"C1","ISTIO_META_NETWORK":"N1"}"#,
        ),
        (
            "/inject/:ENV:cluster=c2:ENV:rootpage=/foo",
            r#"{"ISTIO_META_CLUSTER_ID":"c2","ROOTPAGE":"/foo"}"#,
        ),
        ("/inject%2Fcustom_env%2Fv", r#"{"CUSTOM_ENV":"v"}"#),
        (
            "/inject/custom_env/a--slash--b?timeout=10s",
            r#"{"CUSTOM_ENV":"a/b"}"#,
        ),
        ("/inject", "{}"),
    ] {
        let resp = client
            .post(path, review("admission.k8s.io/v1", "u", json!({})))
            .await
            .expect("response");
        assert_eq!(resp.status, StatusCode::OK, "{path}");
        assert_eq!(decoded_patch(&resp.json())[1]["value"], want, "{path}");
    }
    server.stop().await;
}

#[tokio::test]
async fn skip_and_deny() {
    let server = TestServer::start().await;
    let mut client = server.client(Proto::H1).await;
    let resp = client
        .post(
            "/inject",
            review("admission.k8s.io/v1", "s", json!({"test/action": "skip"})),
        )
        .await
        .expect("resp");
    let body = resp.json();
    assert_eq!(
        body["response"],
        json!({"uid": "s", "allowed": true, "auditAnnotations": {"decision": "skipped", "reason": "test says skip", "revision": "fake-rev"}}),
        "no patch when skipped"
    );

    let resp = client
        .post(
            "/inject",
            review("admission.k8s.io/v1beta1", "d", json!({"test/action": "deny"})),
        )
        .await
        .expect("resp");
    assert_eq!(resp.status, StatusCode::OK);
    let body = resp.json();
    assert_eq!(body["apiVersion"], "admission.k8s.io/v1beta1");
    assert_eq!(
        body["response"],
        json!({"uid": "d", "allowed": false, "status": {"metadata": {}, "message": "test says deny: fix annotation test/action"},
            "auditAnnotations": {"decision": "denied", "reason": "test says deny: fix annotation test/action", "revision": "fake-rev"}})
    );
    let metrics = server.metrics().await;
    assert_eq!(metric(&metrics, "sidecar_injection_skip_total"), Some(1.0));
    assert!(
        metrics.contains("sidecar_injection_failure_total{type=\"injection\"} 1"),
        "{metrics}"
    );
    server.stop().await;
}

#[tokio::test]
async fn http_errors_415_400_404_and_any_method() {
    let server = TestServer::start().await;
    for proto in [Proto::H1, Proto::H2] {
        let mut c = server.client(proto).await;
        let body = review("admission.k8s.io/v1", "x", json!({}));
        let r = c
            .request(
                Method::POST,
                "/inject",
                &[("content-type", "application/json; charset=utf-8")],
                body.clone(),
            )
            .await
            .expect("resp");
        assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(r.text(), "invalid Content-Type, want `application/json`\n");
        let r = c
            .request(Method::POST, "/inject", &[], body.clone())
            .await
            .expect("resp");
        assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        // Empty body is checked before the content type, as in Istio.
        let r = c
            .request(Method::POST, "/inject", &[("content-type", "text/plain")], "")
            .await
            .expect("resp");
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        assert_eq!(r.text(), "no body found\n");
        let r = c.post("/mutate", body.clone()).await.expect("resp");
        assert_eq!(r.status, StatusCode::NOT_FOUND);
        let r = c.post("/injector", body.clone()).await.expect("resp");
        assert_eq!(r.status, StatusCode::NOT_FOUND);
        // Istio checks no method.
        let r = c
            .request(
                Method::PUT,
                "/inject",
                &[("content-type", "application/json")],
                body,
            )
            .await
            .expect("resp");
        assert_eq!(r.status, StatusCode::OK);
    }
    let m = server.metrics().await;
    assert!(
        m.contains("sidecar_injection_failure_total{type=\"content_type\"} 4"),
        "{m}"
    );
    assert!(
        m.contains("sidecar_injection_failure_total{type=\"empty_body\"} 2"),
        "{m}"
    );
    server.stop().await;
}

#[tokio::test]
async fn decode_errors_are_allowed_false_not_http_errors() {
    let server = TestServer::start().await;
    let mut c = server.client(Proto::H2).await;
    let cases: Vec<(Vec<u8>, &str, &str)> = vec![
        (b"{not json".to_vec(), "admission.k8s.io/v1", "invalid JSON"),
        (br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview"}"#.to_vec(), "admission.k8s.io/v1beta1", "no request"),
        (br#"{"apiVersion":"v1","kind":"Pod","metadata":{}}"#.to_vec(), "admission.k8s.io/v1", "unsupported type"),
        (br#"{"apiVersion":"admission.k8s.io/v1","kind":"Pod"}"#.to_vec(), "admission.k8s.io/v1", "kind \"Pod\""),
        (
            serde_json::to_vec(&json!({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"dep","kind":{"kind":"Deployment"},"object":{"kind":"Deployment"}}})).unwrap(),
            "admission.k8s.io/v1",
            "not a Pod",
        ),
        (
            serde_json::to_vec(&json!({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"noobj"}})).unwrap(),
            "admission.k8s.io/v1",
            "request.object is missing",
        ),
        (b"[1,2,3]".to_vec(), "admission.k8s.io/v1", "invalid JSON"),
    ];
    for (body, version, needle) in cases {
        let r = c.post("/inject", body).await.expect("resp");
        assert_eq!(r.status, StatusCode::OK);
        let j = r.json();
        assert_eq!(j["apiVersion"], version);
        assert_eq!(j["response"]["allowed"], false);
        let msg = j["response"]["status"]["message"].as_str().unwrap_or("");
        assert!(msg.contains(needle), "{msg:?} should contain {needle:?}");
    }
    let r = c
        .post("/inject", serde_json::to_vec(&json!({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"dep","kind":{"kind":"Deployment"},"object":{}}})).unwrap())
        .await
        .expect("resp");
    assert_eq!(r.json()["response"]["uid"], "dep", "uid echoed when known");
    server.stop().await;
}

#[tokio::test]
async fn deadline_from_timeout_query_and_injector_panic() {
    let server = TestServer::start().await;
    let mut c = server.client(Proto::H1).await;
    let start = std::time::Instant::now();
    let r = c
        .post(
            "/inject?timeout=200ms",
            review(
                "admission.k8s.io/v1",
                "slow",
                json!({"test/action": "sleep-ms:4000"}),
            ),
        )
        .await
        .expect("resp");
    assert!(
        start.elapsed() < std::time::Duration::from_millis(3000),
        "answered at the deadline"
    );
    let j = r.json();
    assert_eq!(j["response"]["allowed"], false);
    assert!(
        j["response"]["status"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("timeout (200ms)"),
        "{j}"
    );

    let r = c
        .post(
            "/inject",
            review("admission.k8s.io/v1", "p", json!({"test/action": "panic"})),
        )
        .await
        .expect("resp");
    let j = r.json();
    assert_eq!(j["response"]["allowed"], false);
    assert!(
        j["response"]["status"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("internal error")
    );
    // The server is still fine.
    let r = c
        .post("/inject", review("admission.k8s.io/v1", "ok", json!({})))
        .await
        .expect("resp");
    assert_eq!(r.json()["response"]["allowed"], true);
    server.stop().await;
}

#[tokio::test]
async fn metrics_healthz_readyz() {
    let server = TestServer::start().await;
    let mut c = server.client(Proto::H2).await;
    for i in 0..5 {
        let r = c
            .post(
                "/inject",
                review("admission.k8s.io/v1", &format!("m{i}"), json!({})),
            )
            .await
            .expect("resp");
        assert_eq!(r.status, StatusCode::OK);
    }
    let m = server.metrics().await;
    assert_eq!(metric(&m, "sidecar_injection_requests_total"), Some(5.0), "{m}");
    assert_eq!(metric(&m, "sidecar_injection_success_total"), Some(5.0));
    assert_eq!(metric(&m, "sidecar_injection_patched_total"), Some(5.0));
    assert_eq!(metric(&m, "sidecar_injection_skip_total"), Some(0.0));
    assert_eq!(metric(&m, "sidecar_injection_time_seconds_count"), Some(5.0));
    // The same pod five times (only the uid differs): the engine ran once.
    assert_eq!(metric(&m, "sidecar_injection_cache_hits_total"), Some(4.0), "{m}");
    assert!(
        m.contains("sidecar_injection_time_seconds_bucket{le=\"0.01\"}"),
        "{m}"
    );
    assert_eq!(
        metric(&m, "sidecar_injector_config_last_reload_success"),
        Some(1.0)
    );
    assert_eq!(
        metric(&m, "sidecar_injector_certificate_last_reload_success"),
        Some(1.0)
    );
    let expiry = metric(&m, "sidecar_injector_certificate_expiry_timestamp_seconds").expect("expiry");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(expiry > now + 80.0 * 86400.0, "self-signed leaf valid ~90 days");
    assert_eq!(
        http_get(server.monitoring, "/healthz").await.expect("healthz").0,
        StatusCode::OK
    );
    let (status, detail) = http_get(server.monitoring, "/readyz").await.expect("readyz");
    assert_eq!(status, StatusCode::OK);
    let detail: serde_json::Value = serde_json::from_str(&detail).expect("json");
    assert_eq!(detail["ready"], true);
    assert_eq!(detail["certificate"]["subject"], "CN=injector.test.svc");
    assert_eq!(
        http_get(server.monitoring, "/nope").await.expect("404").0,
        StatusCode::NOT_FOUND
    );
    // Also on the HTTPS port, as istiod's `/ready`.
    let r = c.request(Method::GET, "/ready", &[], "").await.expect("ready");
    assert_eq!(r.status, StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn inline_injector_mode_behaves_the_same() {
    let server = TestServer::start_with(|o| o.inline_injector = true).await;
    let mut c = server.client(Proto::H2).await;
    let r = c
        .post(
            "/inject/cluster/c",
            review("admission.k8s.io/v1beta1", "i", json!({})),
        )
        .await
        .expect("resp");
    let j = r.json();
    assert_eq!(j["apiVersion"], "admission.k8s.io/v1beta1");
    assert_eq!(decoded_patch(&j)[1]["value"], r#"{"ISTIO_META_CLUSTER_ID":"c"}"#);
    let r = c
        .post(
            "/inject",
            review("admission.k8s.io/v1", "p", json!({"test/action": "panic"})),
        )
        .await
        .expect("resp");
    assert!(
        r.json()["response"]["status"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("internal error")
    );
    let r = c
        .post(
            "/inject",
            review("admission.k8s.io/v1", "s", json!({"test/action": "skip"})),
        )
        .await
        .expect("resp");
    assert_eq!(
        r.json()["response"],
        json!({"uid": "s", "allowed": true, "auditAnnotations": {"decision": "skipped", "reason": "test says skip", "revision": "fake-rev"}})
    );
    server.stop().await;
}

/// Reads a counter from `/metrics` until it reaches `want` (the shadow check runs on a thread of
/// its own).
async fn wait_for_metric(server: &TestServer, line: &str) -> String {
    let start = std::time::Instant::now();
    loop {
        let metrics = server.metrics().await;
        if metrics.lines().any(|l| l == line) || start.elapsed() > LIMIT {
            return metrics;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// With every cached answer checked: an answer the engine's cache got wrong is counted and turns
/// that cache off for the configuration (the next admission is computed without it), and so is
/// an outcome-cache answer that the engine no longer gives.
#[tokio::test]
async fn shadow_checks_turn_off_a_cache_that_gave_a_wrong_answer() {
    let server = TestServer::start_with(|o| o.shadow_check_every = 1).await;
    let mut c = server.client(Proto::H2).await;
    let patched = |j: &serde_json::Value| decoded_patch(j)[0]["value"].as_str().unwrap_or("").to_owned();
    let j = c
        .post(
            "/inject",
            review(
                "admission.k8s.io/v1",
                "w1",
                json!({"test/action": "cached-wrong"}),
            ),
        )
        .await
        .expect("resp")
        .json();
    assert_eq!(patched(&j), "fake-wrong-1", "{j}");
    let line = "sidecar_injector_shadow_mismatches_total{cache=\"engine\"} 1";
    let metrics = wait_for_metric(&server, line).await;
    assert!(metrics.lines().any(|l| l == line), "{metrics}");
    let j = c
        .post(
            "/inject",
            review(
                "admission.k8s.io/v1",
                "w2",
                json!({"test/action": "cached-wrong", "n": "2"}),
            ),
        )
        .await
        .expect("resp")
        .json();
    assert_eq!(patched(&j), "fake-1", "the engine's cache is off now: {j}");

    // The outcome cache: the same admission twice, the second from the cache; the engine now
    // answers differently, and the cache goes off.
    let counted = || review("admission.k8s.io/v1", "c", json!({"test/action": "counter"}));
    let first = patched(&c.post("/inject", counted()).await.expect("resp").json());
    let second = patched(&c.post("/inject", counted()).await.expect("resp").json());
    assert_eq!(first, second, "answered from the outcome cache");
    let line = "sidecar_injector_shadow_mismatches_total{cache=\"outcome\"} 1";
    let metrics = wait_for_metric(&server, line).await;
    assert!(metrics.lines().any(|l| l == line), "{metrics}");
    let third = patched(&c.post("/inject", counted()).await.expect("resp").json());
    assert_ne!(third, first, "the outcome cache is off now");
    server.stop().await;
}

/// The warnings are part of the answer: a cached answer that differs from the computed one only
/// in them is a mismatch, and the creator then hears only what the computed answer says.
#[tokio::test]
async fn shadow_checks_compare_the_warnings_too() {
    let server = TestServer::start_with(|o| o.shadow_check_every = 1).await;
    let mut c = server.client(Proto::H2).await;
    let warned = |n: &str| {
        review(
            "admission.k8s.io/v1",
            n,
            json!({"test/action": "cached-warning", "n": n}),
        )
    };
    let j = c.post("/inject", warned("1")).await.expect("resp").json();
    assert_eq!(
        j["response"]["warnings"],
        json!(["only the cache says so"]),
        "{j}"
    );
    let line = "sidecar_injector_shadow_mismatches_total{cache=\"engine\"} 1";
    let metrics = wait_for_metric(&server, line).await;
    assert!(metrics.lines().any(|l| l == line), "{metrics}");
    let j = c.post("/inject", warned("2")).await.expect("resp").json();
    assert_eq!(
        j["response"].get("warnings"),
        None,
        "the engine's cache is off now: {j}"
    );
    assert_eq!(j["response"]["patchType"], "JSONPatch", "{j}");
    server.stop().await;
}
