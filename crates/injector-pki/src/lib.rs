//! Certificates of the sidecar injector, PEM in and out.
//!
//! Pure functions over rcgen, rustls-pki-types and x509-parser, with no I/O: the caller decides
//! validity periods and where the results are kept (a file for the server's self-signed mode, a
//! Kubernetes Secret for cluster mode).
//!
//! * [`generate`]: a CA that may sign serving certificates only, and serving certificates
//!   issued from it.
//! * [`inspect`]: what a PEM certificate says (subject, names, expiry, fingerprint).

pub mod generate;
pub mod inspect;

pub use generate::{CaMaterial, LEAF_KEY_USAGES, LeafMaterial, SigningCa, generate_ca, issue_leaf};
pub use inspect::{CertInfo, cert_info, cert_not_after, fingerprint, pem_certificates};

/// Why a certificate could not be generated, issued or read.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    /// The CA's private key is not a PEM key rcgen can sign with.
    #[error("the CA key does not parse: {0}")]
    CaKey(#[source] rcgen::Error),
    /// The CA certificate is not a PEM certificate rcgen can issue from.
    #[error("the CA certificate does not parse: {0}")]
    CaCertificate(#[source] rcgen::Error),
    /// A name for a serving certificate is neither a DNS name nor an IP address.
    #[error("serving certificate names: {0}")]
    Names(#[source] rcgen::Error),
    /// Generating a key or signing a certificate failed; `step` says which.
    #[error("{step}: {source}")]
    Sign {
        /// What was being done, e.g. `signing the CA`.
        step: &'static str,
        /// What rcgen said.
        source: rcgen::Error,
    },
    /// A PEM certificate block is malformed.
    #[error("certificate PEM does not parse: {0}")]
    Pem(String),
    /// A certificate's DER does not parse as X.509.
    #[error("certificate does not parse as X.509: {0}")]
    X509(String),
}
