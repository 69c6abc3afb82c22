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

#[tokio::test]
async fn a_stalled_body_holds_no_slot_and_is_cut_off_at_its_pace() {
    let server = TestServer::start_with(|o| {
        o.max_concurrency = 1;
        o.queue_timeout = Duration::from_millis(200);
    })
    .await;
    // Four clients announce a body and send a byte of it: none of them may hold the one slot.
    let mut stalled = Vec::new();
    for _ in 0..4 {
        let mut tls = tls_connect(server.addr, &server.ca_pem, &[b"http/1.1"])
            .await
            .expect("tls");
        tls.write_all(
            b"POST /inject HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{",
        )
        .await
        .expect("write");
        stalled.push(tls);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut c = server.client(Proto::H2).await;
    let r = c
        .post("/inject", review("admission.k8s.io/v1", "meanwhile", json!({})))
        .await
        .expect("resp");
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    // A second without a byte of the body: 408, and the connection is closed.
    let started = Instant::now();
    for mut tls in stalled {
        let resp = read_all_with_timeout(&mut tls).await;
        assert!(resp.starts_with("HTTP/1.1 408"), "{resp}");
        assert!(resp.contains("slower than 64 KiB/s"), "{resp}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let m = server.metrics().await;
    assert!(
        m.contains("sidecar_injection_failure_total{type=\"body_read\"} 4"),
        "{m}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_body_is_cut_off_at_the_requests_deadline_whatever_its_pace() {
    let server = TestServer::start().await;
    let tls = tls_connect(server.addr, &server.ca_pem, &[b"http/1.1"])
        .await
        .expect("tls");
    let (mut rd, mut wr) = tokio::io::split(tls);
    // 64 KiB a second keeps the pace; the API server gave up after 2 s.
    let writer = tokio::spawn(async move {
        wr.write_all(b"POST /inject?timeout=2s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 6000000\r\n\r\n")
            .await?;
        let chunk = vec![b' '; 32 << 10];
        for _ in 0..200 {
            wr.write_all(&chunk).await?;
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        Ok::<_, std::io::Error>(())
    });
    let started = Instant::now();
    let resp = read_all_with_timeout(&mut rd).await;
    assert!(resp.starts_with("HTTP/1.1 408"), "{resp}");
    assert!(resp.contains("before the request's deadline"), "{resp}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(1800) && took < Duration::from_secs(4),
        "{took:?}"
    );
    writer.abort();
    server.stop().await;
}

#[tokio::test]
async fn a_refusal_before_the_body_is_read_reaches_a_client_still_sending() {
    // 1 MiB: 256 KiB for ordinary pods, 192 KiB for big bodies being read, 576 KiB running.
    let server = TestServer::start_with(|o| {
        o.max_inflight_bytes = 1 << 20;
        o.queue_timeout = Duration::from_millis(200);
    })
    .await;
    // A big body being read holds the pool for big bodies (and stalls there).
    let mut holder = tls_connect(server.addr, &server.ca_pem, &[b"http/1.1"])
        .await
        .expect("tls");
    holder
        .write_all(b"POST /inject HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n")
        .await
        .expect("head");
    holder
        .write_all(&[b' '; 200_000])
        .await
        .expect("a part of the body");
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Another big body cannot be held, and is answered before it is read: a client that writes
    // the whole request before it reads (as curl does) still reads the answer.
    let body = review("admission.k8s.io/v1", "big", json!({"pad": " ".repeat(400_000)}));
    let mut tls = tls_connect(server.addr, &server.ca_pem, &[b"http/1.1"])
        .await
        .expect("tls");
    let head = format!(
        "POST /inject HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    tls.write_all(head.as_bytes()).await.expect("head");
    tls.write_all(&body).await.expect("the whole body is taken");
    let resp = read_all_with_timeout(&mut tls).await;
    assert!(resp.starts_with("HTTP/1.1 503"), "{resp}");
    assert!(
        resp.to_ascii_lowercase().contains("\r\nretry-after: 1\r\n"),
        "{resp}"
    );
    assert!(resp.contains("memory budget"), "{resp}");
    // An oversized body announced and sent: the 413 is read too.
    let mut tls = tls_connect(server.addr, &server.ca_pem, &[b"http/1.1"])
        .await
        .expect("tls");
    tls.write_all(b"POST /inject HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 7000000\r\n\r\n")
        .await
        .expect("head");
    tls.write_all(&vec![b' '; 7_000_000])
        .await
        .expect("the whole body is taken");
    let resp = read_all_with_timeout(&mut tls).await;
    assert!(resp.starts_with("HTTP/1.1 413"), "{resp}");
    server.stop().await;
}

#[tokio::test]
async fn no_configuration_is_503_with_retry_after() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config_path = dir.path().join("missing");
    let opts = options(dir.path());
    let server = TestServer::start_full(dir, config_path, opts).await;
    let mut c = server.client(Proto::H1).await;
    let r = c
        .post("/inject", review("admission.k8s.io/v1", "early", json!({})))
        .await
        .expect("resp");
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.text());
    assert_eq!(r.headers["retry-after"], "1");
    server.stop().await;
}
