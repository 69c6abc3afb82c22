//! SIGTERM drains: a separate test binary, because it signals its own process.

#![allow(clippy::panic, clippy::unwrap_used)]

#[path = "it/common.rs"]
#[allow(dead_code)]
mod common;

use common::*;
use http::StatusCode;
use serde_json::json;

#[tokio::test]
async fn sigterm_finishes_in_flight_requests_then_returns() {
    // Install a SIGTERM handler first, so the signal can never kill the test process.
    let mut guard =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("handler");
    let dir = tempfile::tempdir().expect("tempdir");
    let config_path = dir.path().join("config");
    std::fs::write(&config_path, "version=1").expect("write");
    let store = injector_server::ConfigStore::watch_files(
        vec![("config".into(), config_path)],
        FAST_WATCH,
        load_fake_config,
    );
    let server = injector_server::Server::bind(options(dir.path()), FakeInjector, store)
        .await
        .expect("bind");
    let addr = server.local_addr().expect("addr");
    let monitoring = server.monitoring_addr().expect("monitoring");
    let ca = server.cert_store().ca_pem().expect("self-signed CA").to_owned();
    let serve = tokio::spawn(server.serve(injector_server::shutdown_signal()));

    let mut c = Client::connect(addr, &ca, Proto::H2).await.expect("connect");
    let r = c
        .post("/inject", review("admission.k8s.io/v1", "a", json!({})))
        .await
        .expect("resp");
    assert_eq!(r.status, StatusCode::OK);
    let slow = tokio::spawn(async move {
        c.post(
            "/inject",
            review(
                "admission.k8s.io/v1",
                "slow",
                json!({"test/action": "sleep-ms:700"}),
            ),
        )
        .await
    });
    wait_in_flight(monitoring, 1).await;
    let status = std::process::Command::new("kill")
        .args(["-TERM", &std::process::id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let _ = tokio::time::timeout(LIMIT, guard.recv()).await;
    let r = slow
        .await
        .expect("join")
        .expect("in-flight request completed after SIGTERM");
    assert_eq!(r.json()["response"]["allowed"], true);
    tokio::time::timeout(LIMIT, serve)
        .await
        .expect("serve returns")
        .expect("join")
        .expect("ok");
    assert!(
        Client::connect(addr, &ca, Proto::H1).await.is_err(),
        "no longer accepting"
    );
}
