//! Hostile or broken clients: plain HTTP on the TLS port, garbage, slow headers, clients that
//! vanish mid-body. Each is answered or closed, and everyone else keeps being served.

use std::time::{Duration, Instant};

use http::StatusCode;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::common::*;

async fn still_serving(server: &TestServer) {
    let mut c = server.client(Proto::H1).await;
    let r = c
        .post("/inject", review("admission.k8s.io/v1", "ok", json!({})))
        .await
        .expect("resp");
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["response"]["allowed"], true);
}

#[tokio::test]
async fn plain_http_on_the_tls_port_gets_400_and_close() {
    let server = TestServer::start().await;
    let mut tcp = TcpStream::connect(server.addr).await.expect("connect");
    tcp.write_all(b"POST /inject HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}")
        .await
        .expect("write");
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut out))
        .await
        .expect("closed in time")
        .ok();
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.0 400 Bad Request"), "{text}");
    assert!(text.contains("Client sent an HTTP request to an HTTPS server."));
    still_serving(&server).await;

    // Garbage that is neither TLS nor HTTP: closed without an answer.
    let mut tcp = TcpStream::connect(server.addr).await.expect("connect");
    tcp.write_all(&[0u8, 1, 2, 3, 0xff, 0x16, 0x03])
        .await
        .expect("write");
    let mut out = Vec::new();
    let r = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut out))
        .await
        .expect("closed in time");
    assert!(
        r.is_err() || out.is_empty() || out[0] == 0x15,
        "closed or TLS alert"
    );
    still_serving(&server).await;
    server.stop().await;
}

#[tokio::test]
async fn slow_headers_time_out_without_affecting_others() {
    let server = TestServer::start_with(|o| {
        o.header_read_timeout = Duration::from_millis(500);
        o.idle_timeout = Duration::from_millis(500);
    })
    .await;
    let mut slow = tls_connect(server.addr, &server.ca_pem, &[b"http/1.1"])
        .await
        .expect("tls");
    slow.write_all(b"POST /inject HTTP/1.1\r\nHost: localhost\r\n")
        .await
        .expect("write");
    let start = Instant::now();
    // Meanwhile, a normal client is served.
    still_serving(&server).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), slow.read_to_end(&mut out))
        .await
        .expect("closed in time");
    let text = String::from_utf8_lossy(&out);
    assert!(text.is_empty() || text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(
        start.elapsed() >= Duration::from_millis(400),
        "closed by the header timeout, not earlier"
    );
    // Idle connections (no request yet, or none since the last one) are closed too, on both
    // protocols.
    for proto in [&b"http/1.1"[..], &b"h2"[..]] {
        let mut idle = tls_connect(server.addr, &server.ca_pem, &[proto])
            .await
            .expect("tls");
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), idle.read_to_end(&mut out))
            .await
            .expect("idle closed");
    }
    let mut c = server.client(Proto::H1).await;
    let r = c
        .post("/inject", review("admission.k8s.io/v1", "k", json!({})))
        .await
        .expect("resp");
    assert_eq!(r.status, StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(
        c.post("/inject", review("admission.k8s.io/v1", "k2", json!({})))
            .await
            .is_err(),
        "idle keep-alive closed"
    );
    still_serving(&server).await;
    server.stop().await;
}

#[tokio::test]
async fn stalled_tls_handshake_times_out() {
    let server = TestServer::start_with(|o| o.handshake_timeout = Duration::from_millis(300)).await;
    let mut tcp = TcpStream::connect(server.addr).await.expect("connect");
    // The first bytes of a TLS record header, then silence.
    tcp.write_all(&[0x16, 0x03, 0x01]).await.expect("write");
    let mut out = Vec::new();
    let start = Instant::now();
    let _ = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut out))
        .await
        .expect("closed in time");
    assert!(start.elapsed() < Duration::from_secs(3));
    still_serving(&server).await;
    server.stop().await;
}

#[tokio::test]
async fn client_disconnecting_mid_body_is_counted_and_harmless() {
    let server = TestServer::start().await;
    for proto in [&b"http/1.1"[..], &b"h2"[..]] {
        let mut tls = tls_connect(server.addr, &server.ca_pem, &[proto])
            .await
            .expect("tls");
        if proto == b"h2" {
            // Raw HTTP/2 is awkward by hand; a preface and a dropped socket is enough.
            tls.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
                .await
                .expect("write");
        } else {
            tls.write_all(
                b"POST /inject HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"apiVersion\":",
            )
            .await
            .expect("write");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        drop(tls);
    }
    eventually("body_read failure counted", || async {
        server
            .metrics()
            .await
            .contains("sidecar_injection_failure_total{type=\"body_read\"} 1")
    })
    .await;
    still_serving(&server).await;
    server.stop().await;
}
