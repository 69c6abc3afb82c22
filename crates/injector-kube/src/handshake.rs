//! The certificate a webhook really serves, from a TLS handshake — only with webhooks
//! registered by a loopback `url:` (127.0.0.0/8, ::1, localhost). Nothing else is ever dialled:
//! not a Service, not a cluster IP, not any other host.
//!
//! The handshake accepts whatever is presented (it only records the chain); whether the chain
//! verifies against the caBundle is decided afterwards, by `injector_doctor::certs`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use injector_doctor::{Handshake, webhooks::is_loopback};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::{DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use tokio::net::TcpStream;

/// Shakes hands with `url` and records the chain; a non-loopback URL is refused without dialling.
pub async fn handshake(url: &str, timeout: Duration) -> Handshake {
    let chain = match loopback_address(url) {
        Ok(address) => tokio::time::timeout(timeout, chain_of(address))
            .await
            .unwrap_or_else(|_| Err(format!("no TLS handshake within {} s", timeout.as_secs()))),
        Err(why) => Err(why),
    };
    Handshake {
        url: url.to_owned(),
        chain,
    }
}

/// The socket address of a loopback `https://` URL, or why it is not dialled.
pub fn loopback_address(url: &str) -> Result<SocketAddr, String> {
    let host = injector_doctor::webhooks::url_host(url);
    if !is_loopback(&host) {
        return Err(format!("{host} is not a loopback address: not dialled"));
    }
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let port_text = match authority.rsplit_once(']') {
        Some((_, after)) => after.strip_prefix(':'),
        None => authority.rsplit_once(':').map(|(_, port)| port),
    };
    let port = match port_text {
        Some(text) => text
            .parse::<u16>()
            .map_err(|_| format!("{url}: bad port {text:?}"))?,
        None => 443,
    };
    let ip = if host.eq_ignore_ascii_case("localhost") {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        host.parse::<IpAddr>().map_err(|e| format!("{host}: {e}"))?
    };
    Ok(SocketAddr::new(ip, port))
}

async fn chain_of(address: SocketAddr) -> Result<Vec<Vec<u8>>, String> {
    let tcp = TcpStream::connect(address)
        .await
        .map_err(|e| format!("{address}: {e}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Recorder(provider)))
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let name = ServerName::IpAddress(address.ip().into());
    let stream = connector
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake with {address}: {e}"))?;
    let chain = stream
        .get_ref()
        .1
        .peer_certificates()
        .map(|certs| certs.iter().map(|c| c.as_ref().to_vec()).collect())
        .unwrap_or_default();
    Ok(chain)
}

/// Accepts any certificate (it is only recorded), checking the handshake signatures properly.
#[derive(Debug)]
struct Recorder(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for Recorder {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_urls_are_dialled() {
        assert_eq!(
            loopback_address("https://127.0.0.1:9443/inject"),
            Ok("127.0.0.1:9443".parse().expect("addr"))
        );
        assert_eq!(
            loopback_address("https://[::1]:8443/x"),
            Ok("[::1]:8443".parse().expect("addr"))
        );
        assert_eq!(
            loopback_address("https://localhost/x"),
            Ok("127.0.0.1:443".parse().expect("addr"))
        );
        assert!(loopback_address("https://10.0.0.7:443/inject").is_err());
        assert!(loopback_address("https://istiod.istio-system.svc:443/inject").is_err());
    }

    #[tokio::test]
    async fn a_non_loopback_url_is_refused_without_dialling() {
        let result = handshake("https://192.0.2.1:443/inject", Duration::from_millis(1)).await;
        assert_eq!(
            result.chain,
            Err("192.0.2.1 is not a loopback address: not dialled".to_owned())
        );
    }
}
