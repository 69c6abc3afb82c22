//! Caller authentication (`--client-ca`): only a client with a certificate from a CA in the file
//! gets an answer; the file is reloaded like the serving certificate.

use std::sync::Arc;

use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::common::*;

/// Sends `GET /healthz` over TLS, presenting `identity` (cert PEM, key PEM) when given; the
/// first bytes of the answer, or why there are none.
async fn call(server: &TestServer, identity: Option<&(String, String)>) -> Result<String, String> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(server.ca_pem.as_bytes()) {
        roots.add(c.expect("CA pem")).expect("add root");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots);
    let config = match identity {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                CertificateDer::pem_slice_iter(cert.as_bytes())
                    .map(|c| c.expect("cert"))
                    .collect(),
                PrivateKeyDer::from_pem_slice(key.as_bytes()).expect("key"),
            )
            .expect("client auth"),
        None => builder.with_no_client_auth(),
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(server.addr).await.map_err(|e| e.to_string())?;
    let name = ServerName::try_from("localhost").map_err(|e| e.to_string())?;
    let mut tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS: {e}"))?;
    tls.write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
        .await
        .map_err(|e| format!("write: {e}"))?;
    let mut answer = Vec::new();
    tls.read_to_end(&mut answer)
        .await
        .map_err(|e| format!("read: {e}"))?;
    if answer.is_empty() {
        return Err("closed without an answer".into());
    }
    Ok(String::from_utf8_lossy(&answer[..answer.len().min(12)]).into_owned())
}

#[tokio::test]
async fn only_clients_of_the_client_ca_are_answered_and_the_file_reloads() {
    let trusted = TestCa::new();
    let other = TestCa::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let client_ca = dir.path().join("client-ca.pem");
    std::fs::write(&client_ca, &trusted.ca_pem).expect("write");
    let path = client_ca.clone();
    let server = TestServer::start_with(move |o| o.client_ca = Some(path)).await;
    let apiserver = trusted.leaf("kube-apiserver", 1);
    let stranger = other.leaf("stranger", 2);

    let answer = call(&server, Some(&apiserver))
        .await
        .expect("the trusted client is answered");
    assert!(answer.starts_with("HTTP/1.1"), "{answer}");
    let refused = call(&server, None).await.expect_err("no certificate: refused");
    assert!(
        refused.contains("CertificateRequired") || refused.contains("certificate"),
        "{refused}"
    );
    call(&server, Some(&stranger))
        .await
        .expect_err("another CA's certificate: refused");

    atomic_write(&client_ca, &other.ca_pem);
    eventually("the other CA's client is answered after the reload", || async {
        call(&server, Some(&stranger)).await.is_ok()
    })
    .await;
    call(&server, Some(&apiserver))
        .await
        .expect_err("the old CA is no longer trusted");

    atomic_write(&client_ca, "not a certificate");
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    call(&server, Some(&stranger))
        .await
        .expect("a bad file keeps the CAs in service");
    server.stop().await;
}
