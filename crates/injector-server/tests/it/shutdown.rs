//! Graceful shutdown: stop accepting, finish in-flight requests within the grace period.

use std::time::{Duration, Instant};

use http::StatusCode;
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn in_flight_requests_complete_during_shutdown() {
    for proto in [Proto::H1, Proto::H2] {
        let mut server = TestServer::start().await;
        let mut c = server.client(proto).await;
        let slow = tokio::spawn(async move {
            c.post(
                "/inject",
                review(
                    "admission.k8s.io/v1",
                    "slow",
                    json!({"test/action": "sleep-ms:800"}),
                ),
            )
            .await
        });
        wait_in_flight(server.monitoring, 1).await;
        server.trigger_shutdown();
        // Draining: not ready any more, new connections refused once the listener is gone.
        eventually("not ready while draining", || async {
            !matches!(
                http_get(server.monitoring, "/readyz").await,
                Ok((StatusCode::OK, _))
            )
        })
        .await;
        let r = slow.await.expect("join").expect("in-flight request completed");
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.json()["response"]["allowed"], true);
        server.stop().await;
    }
}

#[tokio::test]
async fn new_connections_are_refused_after_shutdown() {
    let server = TestServer::start().await;
    let (addr, ca) = (server.addr, server.ca_pem.clone());
    server.stop().await;
    assert!(Client::connect(addr, &ca, Proto::H1).await.is_err());
}

#[tokio::test]
async fn grace_period_bounds_shutdown() {
    let mut server = TestServer::start_with(|o| o.grace_period = Duration::from_millis(300)).await;
    let mut c = server.client(Proto::H1).await;
    let stuck = tokio::spawn(async move {
        c.post(
            "/inject",
            review(
                "admission.k8s.io/v1",
                "stuck",
                json!({"test/action": "sleep-ms:5000"}),
            ),
        )
        .await
    });
    wait_in_flight(server.monitoring, 1).await;
    let start = Instant::now();
    server.trigger_shutdown();
    let _ = server.stop().await;
    assert!(
        start.elapsed() < Duration::from_millis(4000),
        "serve returned after the grace period"
    );
    stuck.abort();
}
