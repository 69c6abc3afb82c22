//! Hot reload: configuration (good and bad), certificate rotation under load, half-written
//! certificate files, readiness before the first good configuration.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use http::StatusCode;
use injector_server::CertSource;
use serde_json::json;

use crate::common::*;

async fn injected_by(server: &TestServer) -> String {
    let mut c = server.client(Proto::H2).await;
    let r = c
        .post("/inject", review("admission.k8s.io/v1", "r", json!({})))
        .await
        .expect("resp");
    decoded_patch(&r.json())[0]["value"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

#[tokio::test]
async fn config_reload_good_then_bad_keeps_last_good() {
    let server = TestServer::start().await;
    assert_eq!(injected_by(&server).await, "fake-1");

    atomic_write(&server.config_path, "version=2");
    eventually("version 2 in service", || async {
        injected_by(&server).await == "fake-2"
    })
    .await;

    atomic_write(&server.config_path, "this is not a config");
    eventually("bad config rejected", || async {
        metric(
            &server.metrics().await,
            "sidecar_injector_config_last_reload_success",
        ) == Some(0.0)
    })
    .await;
    assert_eq!(
        injected_by(&server).await,
        "fake-2",
        "last good configuration kept"
    );
    let m = server.metrics().await;
    assert!(
        m.contains("sidecar_injector_config_reloads_total{result=\"failure\"} 1"),
        "{m}"
    );
    assert!(
        m.contains("sidecar_injector_config_reloads_total{result=\"success\"} 2"),
        "{m}"
    );
    let (status, detail) = http_get(server.monitoring, "/readyz").await.expect("readyz");
    assert_eq!(status, StatusCode::OK, "still ready: the last good config serves");
    assert!(detail.contains("expected `version=<N>`"), "{detail}");

    atomic_write(&server.config_path, "version=3");
    eventually("version 3 in service", || async {
        injected_by(&server).await == "fake-3"
    })
    .await;
    let m = server.metrics().await;
    assert_eq!(
        metric(&m, "sidecar_injector_config_last_reload_success"),
        Some(1.0)
    );
    let (_, detail) = http_get(server.monitoring, "/readyz").await.expect("readyz");
    assert!(
        detail.contains("\"lastReloadError\":null"),
        "error cleared: {detail}"
    );
    server.stop().await;
}

#[tokio::test]
async fn not_ready_until_a_configuration_loads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config_path = dir.path().join("config");
    std::fs::write(&config_path, "garbage").expect("write");
    let opts = options(dir.path());
    let ca_file = dir.path().join("ca.pem");
    let store = injector_server::ConfigStore::watch_files(
        vec![("config".into(), config_path.clone())],
        FAST_WATCH,
        load_fake_config,
    );
    let server = injector_server::Server::bind(opts, FakeInjector, store)
        .await
        .expect("bind");
    let (addr, mon) = (
        server.local_addr().expect("addr"),
        server.monitoring_addr().expect("mon"),
    );
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(server.serve(async move {
        let _ = rx.await;
    }));
    let ca = std::fs::read_to_string(&ca_file).expect("CA written");
    eventually("monitoring up", || async {
        http_get(mon, "/healthz").await.is_ok()
    })
    .await;
    let (status, detail) = http_get(mon, "/readyz").await.expect("readyz");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        detail.contains("\"loaded\":false") && detail.contains("expected `version=<N>`"),
        "{detail}"
    );
    let mut c = Client::connect(addr, &ca, Proto::H1).await.expect("connect");
    let r = c
        .post("/inject", review("admission.k8s.io/v1", "n", json!({})))
        .await
        .expect("resp");
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(r.text().contains("no valid configuration"), "{}", r.text());

    std::fs::write(&config_path, "version=9").expect("write");
    eventually("ready", || async {
        matches!(http_get(mon, "/readyz").await, Ok((StatusCode::OK, _)))
    })
    .await;
    let r = c
        .post("/inject", review("admission.k8s.io/v1", "n", json!({})))
        .await
        .expect("resp");
    assert_eq!(decoded_patch(&r.json())[0]["value"], "fake-9");
    let _ = tx.send(());
    tokio::time::timeout(LIMIT, handle)
        .await
        .expect("stops")
        .expect("join")
        .expect("ok");
}

/// Starts a server with file certificates signed by `ca`, leaf `leaf-1`.
async fn start_with_cert_files(ca: &TestCa) -> (TestServer, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (cert, key) = ca.leaf("leaf-1", 1);
    let cert_path = dir.path().join("tls.crt");
    let key_path = dir.path().join("tls.key");
    std::fs::write(&cert_path, cert).expect("write");
    std::fs::write(&key_path, key).expect("write");
    std::fs::write(dir.path().join("ca.pem"), &ca.ca_pem).expect("write");
    let config_path = dir.path().join("config");
    std::fs::write(&config_path, "version=1").expect("write");
    let mut opts = options(dir.path());
    opts.cert = CertSource::Files {
        cert: cert_path.clone(),
        key: key_path.clone(),
    };
    (
        TestServer::start_full(dir, config_path, opts).await,
        cert_path,
        key_path,
    )
}

#[tokio::test]
async fn certificate_rotation_under_load_fails_no_request() {
    let ca = TestCa::new();
    let (server, cert_path, key_path) = start_with_cert_files(&ca).await;
    let first = server.client(Proto::H1).await;
    assert_eq!(common_name(&first.peer_cert), "leaf-1");

    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    // Keep-alive clients (h1 and h2) and clients opening a new connection per request.
    for (i, (proto, reconnect)) in [
        (Proto::H1, false),
        (Proto::H2, false),
        (Proto::H1, true),
        (Proto::H2, true),
    ]
    .into_iter()
    .enumerate()
    {
        let (stop, ok, failed) = (stop.clone(), ok.clone(), failed.clone());
        let (addr, ca_pem) = (server.addr, server.ca_pem.clone());
        tasks.push(tokio::spawn(async move {
            let mut client = Client::connect(addr, &ca_pem, proto).await.expect("connect");
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) {
                if reconnect {
                    match Client::connect(addr, &ca_pem, proto).await {
                        Ok(c) => client = c,
                        Err(e) => {
                            eprintln!("connect failed: {e}");
                            failed.fetch_add(1, Ordering::SeqCst);
                            continue;
                        }
                    }
                }
                n += 1;
                match client
                    .post(
                        "/inject",
                        review("admission.k8s.io/v1", &format!("t{i}-{n}"), json!({})),
                    )
                    .await
                {
                    Ok(r) if r.status == StatusCode::OK && r.json()["response"]["allowed"] == true => {
                        ok.fetch_add(1, Ordering::SeqCst);
                    }
                    other => {
                        eprintln!("request failed: {other:?}");
                        failed.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Rotate the way a careless writer would: certificate first, then the key (the pair is
    // inconsistent in between and must be ignored).
    let (cert2, key2) = ca.leaf("leaf-2", 2);
    std::fs::write(&cert_path, cert2).expect("write");
    tokio::time::sleep(Duration::from_millis(100)).await;
    std::fs::write(&key_path, key2).expect("write");
    eventually("new handshakes see leaf-2", || async {
        common_name(&server.client(Proto::H1).await.peer_cert) == "leaf-2"
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::SeqCst);
    for t in tasks {
        tokio::time::timeout(LIMIT, t)
            .await
            .expect("task ends")
            .expect("join");
    }
    assert_eq!(
        failed.load(Ordering::SeqCst),
        0,
        "no request failed during rotation"
    );
    assert!(
        ok.load(Ordering::SeqCst) > 20,
        "load actually ran: {}",
        ok.load(Ordering::SeqCst)
    );
    // The connection opened before the rotation still works with its session.
    let mut first = first;
    let r = first
        .post("/inject", review("admission.k8s.io/v1", "old-conn", json!({})))
        .await
        .expect("resp");
    assert_eq!(r.status, StatusCode::OK);
    let (_, detail) = http_get(server.monitoring, "/readyz").await.expect("readyz");
    assert!(detail.contains("\"subject\":\"CN=leaf-2\""), "{detail}");
    server.stop().await;
}

#[tokio::test]
async fn half_written_certificate_keeps_the_old_one() {
    let ca = TestCa::new();
    let (server, cert_path, key_path) = start_with_cert_files(&ca).await;
    let (cert3, key3) = ca.leaf("leaf-3", 3);
    // The file as a writer left it midway (written in one go so the watcher sees exactly it).
    atomic_write(&cert_path, &cert3.as_bytes()[..cert3.len() / 3]);
    eventually("half-written file rejected", || async {
        server
            .metrics()
            .await
            .contains("sidecar_injector_certificate_reloads_total{result=\"failure\"} 1")
    })
    .await;
    // Still the old certificate, and still serving.
    let mut c = server.client(Proto::H2).await;
    assert_eq!(common_name(&c.peer_cert), "leaf-1");
    let r = c
        .post("/inject", review("admission.k8s.io/v1", "h", json!({})))
        .await
        .expect("resp");
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        metric(
            &server.metrics().await,
            "sidecar_injector_certificate_last_reload_success"
        ),
        Some(0.0)
    );
    let (status, detail) = http_get(server.monitoring, "/readyz").await.expect("readyz");
    assert_eq!(status, StatusCode::OK);
    assert!(
        detail.contains("certificate PEM does not parse") || detail.contains("not a usable pair"),
        "{detail}"
    );
    // Finish the write (and the key): the new certificate is picked up.
    std::fs::write(&key_path, key3).expect("write");
    std::fs::write(&cert_path, cert3).expect("write");
    eventually("leaf-3 in service", || async {
        common_name(&server.client(Proto::H1).await.peer_cert) == "leaf-3"
    })
    .await;
    server.stop().await;
}

#[tokio::test]
async fn missing_certificate_files_are_not_ready_until_written() {
    let ca = TestCa::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let cert_path = dir.path().join("tls.crt");
    let key_path = dir.path().join("tls.key");
    std::fs::write(dir.path().join("ca.pem"), &ca.ca_pem).expect("write");
    let config_path = dir.path().join("config");
    std::fs::write(&config_path, "version=1").expect("write");
    let mut opts = options(dir.path());
    opts.cert = CertSource::Files {
        cert: cert_path.clone(),
        key: key_path.clone(),
    };
    let store = injector_server::ConfigStore::watch_files(
        vec![("config".into(), config_path)],
        FAST_WATCH,
        load_fake_config,
    );
    let server = injector_server::Server::bind(opts, FakeInjector, store)
        .await
        .expect("bind without a certificate");
    let (addr, mon) = (
        server.local_addr().expect("addr"),
        server.monitoring_addr().expect("mon"),
    );
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(server.serve(async move {
        let _ = rx.await;
    }));
    eventually("monitoring up", || async {
        http_get(mon, "/healthz").await.is_ok()
    })
    .await;
    let (status, detail) = http_get(mon, "/readyz").await.expect("readyz");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(detail.contains("cannot read"), "{detail}");
    assert!(
        Client::connect(addr, &ca.ca_pem, Proto::H1).await.is_err(),
        "no certificate, no handshake"
    );

    let (cert, key) = ca.leaf("late", 7);
    std::fs::write(&key_path, key).expect("write");
    std::fs::write(&cert_path, cert).expect("write");
    eventually("ready", || async {
        matches!(http_get(mon, "/readyz").await, Ok((StatusCode::OK, _)))
    })
    .await;
    let mut c = Client::connect(addr, &ca.ca_pem, Proto::H2)
        .await
        .expect("connect");
    assert_eq!(common_name(&c.peer_cert), "late");
    let r = c
        .post("/inject", review("admission.k8s.io/v1", "l", json!({})))
        .await
        .expect("resp");
    assert_eq!(r.status, StatusCode::OK);
    let _ = tx.send(());
    tokio::time::timeout(LIMIT, handle)
        .await
        .expect("stops")
        .expect("join")
        .expect("ok");
}
