//! The connection table: floods of connections that never finish a handshake, slow request
//! heads and idle keep-alive connections, and the connection metrics.

use std::time::{Duration, Instant};

use http::StatusCode;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::common::*;

/// The value of a labelled sample (`name{label="value"}`) in Prometheus text.
fn labelled(text: &str, sample: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(sample)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(0.0)
}

async fn admission_takes(server: &TestServer) -> Duration {
    let start = Instant::now();
    let mut c = server.client(Proto::H2).await;
    let r = c
        .post("/inject", review("admission.k8s.io/v1", "probe", json!({})))
        .await
        .expect("admission answered");
    assert_eq!(r.status, StatusCode::OK);
    start.elapsed()
}

#[tokio::test]
async fn connections_that_never_say_hello_are_shed_at_the_cap() {
    let server = TestServer::start_with(|o| o.max_connections = 40).await;
    // Twice the cap of TCP connections that send nothing.
    let mut flood = Vec::new();
    for _ in 0..80 {
        flood.push(TcpStream::connect(server.addr).await.expect("connect"));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let took = admission_takes(&server).await;
    assert!(
        took < Duration::from_secs(2),
        "a normal admission waited {took:?} behind the flood (the handshake timeout is 5 s)"
    );
    let m = server.metrics().await;
    assert!(
        metric(&m, "sidecar_injector_connection_cap_hits_total").unwrap_or(0.0) >= 1.0,
        "{m}"
    );
    assert!(
        labelled(&m, "sidecar_injector_connections_shed_total{phase=\"handshake\"}") >= 1.0,
        "{m}"
    );
    let open = metric(&m, "sidecar_injector_connections_open").unwrap_or(-1.0);
    assert!(
        (1.0..=40.0).contains(&open),
        "open connections within the cap: {m}"
    );
    drop(flood);
    server.stop().await;
}

#[tokio::test]
async fn handshake_failures_are_counted_by_reason() {
    let server = TestServer::start_with(|o| o.handshake_timeout = Duration::from_millis(300)).await;
    // Garbage that is not a ClientHello.
    let mut garbage = TcpStream::connect(server.addr).await.expect("connect");
    garbage
        .write_all(&[0x16, 0x03, 0x01, 0x00, 0x05, 0xde, 0xad, 0xbe, 0xef, 0x00])
        .await
        .expect("write");
    // Half a handshake, then silence.
    let mut half = TcpStream::connect(server.addr).await.expect("connect");
    half.write_all(&[0x16, 0x03, 0x01]).await.expect("write");
    // Plain HTTP on the HTTPS port.
    let mut plain = TcpStream::connect(server.addr).await.expect("connect");
    plain
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("write");
    for s in [&mut garbage, &mut half, &mut plain] {
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
    }
    eventually("handshake failures counted", || async {
        let m = server.metrics().await;
        let n = |reason: &str| {
            labelled(
                &m,
                &format!("sidecar_injector_tls_handshake_failures_total{{reason=\"{reason}\"}}"),
            )
        };
        n("tls_error") >= 1.0 && n("timeout") >= 1.0 && n("plain_http") >= 1.0
    })
    .await;
    server.stop().await;
}

#[tokio::test]
async fn a_slow_request_head_is_cut_but_an_idle_keep_alive_connection_stays() {
    let server = TestServer::start_with(|o| {
        o.header_read_timeout = Duration::from_millis(400);
        o.idle_timeout = Duration::from_secs(10);
    })
    .await;
    // Slowloris: a byte of the head every 100 ms, never finishing.
    let mut slow = tls_connect(server.addr, &server.ca_pem, &[b"http/1.1"])
        .await
        .expect("tls");
    let start = Instant::now();
    let closed = async {
        for b in b"POST /inject HTTP/1.1\r\nHost: localhost\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
            if slow.write_all(&[*b]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(8), closed).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(2), slow.read_to_end(&mut out)).await;
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "the trickled head was cut after {:?}",
        start.elapsed()
    );
    // An HTTP/1.1 keep-alive connection idle for longer than the header timeout is kept.
    let mut c = server.client(Proto::H1).await;
    let r = c
        .post("/inject", review("admission.k8s.io/v1", "k1", json!({})))
        .await
        .expect("resp");
    assert_eq!(r.status, StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let r = c
        .post("/inject", review("admission.k8s.io/v1", "k2", json!({})))
        .await
        .expect("the idle keep-alive connection is reused");
    assert_eq!(r.status, StatusCode::OK);
    let m = server.metrics().await;
    assert!(
        metric(&m, "sidecar_injector_header_read_timeouts_total").unwrap_or(0.0) >= 1.0,
        "{m}"
    );
    server.stop().await;
}
