//! Caller authentication on the webhook port (`serve --client-ca FILE`): a TLS handshake
//! completes only when the client presents a certificate that chains to a CA in FILE. The API
//! server presents one when its admission configuration gives it a kubeconfig for the webhook
//! (docs/security.md); any other caller is refused before a byte of HTTP is read.
//!
//! The file is watched like the serving certificate: a change takes effect for new handshakes,
//! and a file that does not parse is logged and ignored, the CAs in service staying.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use arc_swap::ArcSwap;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, UnixTime};

use crate::Error;
use crate::watch::{self, WatchHandle, WatchOptions};

/// A verifier of client certificates against the CAs of a file, reloaded when it changes.
pub struct ClientCaVerifier {
    inner: Arc<ArcSwap<Arc<dyn ClientCertVerifier>>>,
    _watch: Mutex<Option<WatchHandle>>,
}

impl std::fmt::Debug for ClientCaVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCaVerifier").finish_non_exhaustive()
    }
}

/// The verifier for the CAs in `path`: an error names the file when it cannot be read or holds
/// no usable CA certificate.
pub fn client_ca_verifier(path: &Path, options: WatchOptions) -> Result<Arc<ClientCaVerifier>, Error> {
    let paths = vec![path.to_path_buf()];
    let initial = watch::read_all(&paths);
    let first = initial
        .clone()
        .and_then(|contents| verifier_from_pem(contents.first().map_or(&[][..], Vec::as_slice)))
        .map_err(|e| Error::Certificate(format!("--client-ca {}: {e}", path.display())))?;
    tracing::info!(client_ca = %path.display(), "the webhook port accepts only clients with a certificate from these CAs");
    let inner = Arc::new(ArcSwap::from_pointee(first));
    let weak: Weak<ArcSwap<Arc<dyn ClientCertVerifier>>> = Arc::downgrade(&inner);
    let shown: PathBuf = path.to_path_buf();
    let handle = watch::spawn("client-ca", paths, options, initial, move |contents| {
        let Some(inner) = weak.upgrade() else {
            return false;
        };
        match contents.and_then(|c| verifier_from_pem(c.first().map_or(&[][..], Vec::as_slice))) {
            Ok(verifier) => {
                inner.store(Arc::new(verifier));
                tracing::info!(client_ca = %shown.display(), "client CAs reloaded");
            }
            Err(error) => tracing::error!(client_ca = %shown.display(), %error,
                "client CAs rejected; keeping the ones in service"),
        }
        true
    });
    Ok(Arc::new(ClientCaVerifier {
        inner,
        _watch: Mutex::new(Some(handle)),
    }))
}

/// A WebPKI verifier that requires a client certificate chaining to one of the PEM CAs.
fn verifier_from_pem(pem: &[u8]) -> Result<Arc<dyn ClientCertVerifier>, String> {
    let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("the PEM does not parse: {e}"))?;
    if certificates.is_empty() {
        return Err("no CERTIFICATE block".to_owned());
    }
    let mut roots = RootCertStore::empty();
    for (index, der) in certificates.into_iter().enumerate() {
        roots
            .add(der)
            .map_err(|e| format!("certificate {} is not a usable CA: {e}", index + 1))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map_err(|e| e.to_string())
}

impl ClientCaVerifier {
    fn current(&self) -> Arc<dyn ClientCertVerifier> {
        self.inner.load_full().as_ref().clone()
    }
}

impl ClientCertVerifier for ClientCaVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        true
    }

    /// No hints: with an empty list a client sends the certificate it has (Go's client, the
    /// API server's, does), and the hints need not follow a reload.
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.current().verify_client_cert(end_entity, intermediates, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.current().verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.current().verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.current().supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca_pem() -> String {
        let now = time::OffsetDateTime::now_utc();
        injector_pki::generate_ca("client CA", now, now + time::Duration::hours(1))
            .expect("ca")
            .cert_pem
    }

    #[test]
    fn a_file_without_a_ca_is_refused_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("client-ca.pem");
        std::fs::write(&path, "not a certificate").expect("write");
        let error = client_ca_verifier(&path, WatchOptions::default()).expect_err("refused");
        assert!(
            error
                .to_string()
                .contains(&format!("--client-ca {}: no CERTIFICATE block", path.display())),
            "{error}"
        );
        let missing = dir.path().join("missing.pem");
        let error = client_ca_verifier(&missing, WatchOptions::default()).expect_err("refused");
        assert!(error.to_string().contains("cannot read"), "{error}");
        std::fs::write(&path, ca_pem()).expect("write");
        let verifier = client_ca_verifier(&path, WatchOptions::default()).expect("a CA");
        assert!(verifier.client_auth_mandatory());
    }
}
