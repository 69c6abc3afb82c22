//! Body limit (413 from Content-Length without reading; 413 while streaming a chunked body)
//! and bounded concurrency (503 + Retry-After).

use std::time::{Duration, Instant};

use http::StatusCode;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::common::*;

async fn read_all_with_timeout(s: &mut (impl tokio::io::AsyncRead + Unpin)) -> String {
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn content_length_over_limit_is_413_without_reading_the_body() {
    let server = TestServer::start().await;
    let mut tls = tls_connect(server.addr, &server.ca_pem, &[b"http/1.1"])
        .await
        .expect("tls");
    // 7 MiB announced, nothing sent: the answer must come without the body.
    tls.write_all(
        b"POST /inject HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 7340032\r\n\r\n",
    )
    .await
    .expect("write");
    let start = Instant::now();
    let resp = read_all_with_timeout(&mut tls).await;
    assert!(resp.starts_with("HTTP/1.1 413"), "{resp}");
    assert!(
        resp.contains("request entity too large: limit is 6291456"),
        "{resp}"
    );
    assert!(start.elapsed() < Duration::from_secs(3));
    let m = server.metrics().await;
    assert!(
        m.contains("sidecar_injection_failure_total{type=\"body_too_large\"} 1"),
        "{m}"
    );
    // Others unaffected.
    let mut c = server.client(Proto::H2).await;
    let r = c
        .post("/inject", review("admission.k8s.io/v1", "after", json!({})))
        .await
        .expect("resp");
    assert_eq!(r.status, StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn chunked_body_over_limit_is_413_while_streaming() {
    let server = TestServer::start().await;
    let tls = tls_connect(server.addr, &server.ca_pem, &[b"http/1.1"])
        .await
        .expect("tls");
    let (mut rd, mut wr) = tokio::io::split(tls);
    let writer = tokio::spawn(async move {
        wr.write_all(b"POST /inject HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            .await?;
        let chunk = vec![b' '; 64 * 1024];
        for _ in 0..(7 * 16) {
            wr.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).await?;
            wr.write_all(&chunk).await?;
            wr.write_all(b"\r\n").await?;
        }
        wr.write_all(b"0\r\n\r\n").await?;
        Ok::<_, std::io::Error>(wr)
    });
    let resp = read_all_with_timeout(&mut rd).await;
    assert!(resp.starts_with("HTTP/1.1 413"), "{resp}");
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
    // Same over HTTP/2 with a body bigger than the limit.
    let mut c = server.client(Proto::H2).await;
    let big = vec![b' '; 6 * 1024 * 1024 + 1];
    match c.post("/inject", big).await {
        Ok(r) => assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE),
        Err(e) => panic!("HTTP/2 client should get the 413: {e}"),
    }
    let mut c = server.client(Proto::H2).await;
    let r = c
        .post("/inject", review("admission.k8s.io/v1", "after", json!({})))
        .await
        .expect("resp");
    assert_eq!(r.status, StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn concurrency_limit_answers_503_with_retry_after() {
    let server = TestServer::start_with(|o| {
        o.max_concurrency = 1;
        o.queue_timeout = Duration::from_millis(200);
    })
    .await;
    let c = server.client(Proto::H2).await;
    let slow = {
        let mut c = Client::connect(server.addr, &server.ca_pem, Proto::H2)
            .await
            .expect("connect");
        tokio::spawn(async move {
            c.post(
                "/inject",
                review(
                    "admission.k8s.io/v1",
                    "slow",
                    json!({"test/action": "sleep-ms:2500"}),
                ),
            )
            .await
        })
    };
    wait_in_flight(server.monitoring, 1).await;
    let mut c = c;
    let start = Instant::now();
    let r = c
        .post("/inject", review("admission.k8s.io/v1", "excess", json!({})))
        .await
        .expect("resp");
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.text());
    assert_eq!(r.headers["retry-after"], "1");
    assert!(
        start.elapsed() >= Duration::from_millis(150),
        "waited for a slot first"
    );
    let r = slow.await.expect("join").expect("slow resp");
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["response"]["allowed"], true);
    // The slot is free again.
    let r = c
        .post("/inject", review("admission.k8s.io/v1", "later", json!({})))
        .await
        .expect("resp");
    assert_eq!(r.status, StatusCode::OK);
    let m = server.metrics().await;
    assert!(
        m.contains("sidecar_injection_failure_total{type=\"overloaded\"} 1"),
        "{m}"
    );
    server.stop().await;
}
