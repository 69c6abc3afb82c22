//! Certificates as the API server sees them: the PEM of a caBundle, and whether a served chain
//! verifies against it for the name the API server dials (where Istio's troubleshooting page
//! compares md5 sums, this is a real chain verification: a bundle that merely *contains* something is not enough).

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::{CertificateError, RootCertStore};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// What a certificate says about itself, for evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CertInfo {
    /// The subject, as text.
    pub subject: String,
    /// The issuer, as text.
    pub issuer: String,
    /// notBefore, Unix seconds.
    pub not_before: i64,
    /// notAfter, Unix seconds.
    pub not_after: i64,
    /// SHA-256 of the DER, colon hex.
    pub sha256: String,
    /// basicConstraints CA:TRUE.
    pub is_ca: bool,
}

impl CertInfo {
    /// Reads one DER certificate.
    pub fn of(der: &[u8]) -> Result<CertInfo, String> {
        let (_, cert) =
            x509_parser::parse_x509_certificate(der).map_err(|e| format!("not an X.509 certificate: {e}"))?;
        Ok(CertInfo {
            subject: cert.subject().to_string(),
            issuer: cert.issuer().to_string(),
            not_before: cert.validity().not_before.timestamp(),
            not_after: cert.validity().not_after.timestamp(),
            sha256: fingerprint(der),
            is_ca: cert.is_ca(),
        })
    }

    /// `subject (sha256 AB:CD:…, expires 2027-01-01)`, short.
    pub fn describe(&self) -> String {
        format!(
            "{} (sha256 {}…, expires {})",
            if self.subject.is_empty() {
                "<no subject>"
            } else {
                &self.subject
            },
            &self.sha256[..self.sha256.len().min(23)],
            date(self.not_after)
        )
    }
}

/// SHA-256 of `der`, colon-separated upper-case hex.
pub fn fingerprint(der: &[u8]) -> String {
    Sha256::digest(der)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// `YYYY-MM-DD HH:MM UTC` for Unix seconds.
pub fn date(unix: i64) -> String {
    let format = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute] UTC");
    time::OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_else(|| format!("@{unix}"))
}

/// The certificates of a PEM bundle (DER), or why it holds none.
pub fn pem_certificates(pem: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    if pem.iter().all(u8::is_ascii_whitespace) {
        return Err("empty".to_owned());
    }
    let certs: Vec<Vec<u8>> = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not PEM certificates: {e}"))?
        .into_iter()
        .map(|c| c.as_ref().to_vec())
        .collect();
    if certs.is_empty() {
        return Err("no PEM CERTIFICATE block".to_owned());
    }
    Ok(certs)
}

/// Why a served chain does not verify against a bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ChainProblem {
    /// Signed by a CA the bundle does not hold (x509: certificate signed by unknown authority).
    UnknownAuthority,
    /// A certificate in the chain has expired (or is not yet valid).
    Expired,
    /// The certificate is not for the name the API server dials.
    WrongName,
    /// Anything else, as text.
    Other(String),
}

impl ChainProblem {
    /// The error the API server reports for it, in words.
    pub fn describe(&self) -> String {
        match self {
            ChainProblem::UnknownAuthority => {
                "x509: certificate signed by unknown authority (the caBundle does not hold the CA that signed it)".to_owned()
            }
            ChainProblem::Expired => "x509: certificate has expired or is not yet valid".to_owned(),
            ChainProblem::WrongName => "x509: certificate is not valid for the name the API server dials".to_owned(),
            ChainProblem::Other(text) => text.clone(),
        }
    }
}

/// Verifies `chain` (leaf first) for `server_name` at `now` against the CAs of `bundle`, as the
/// API server's TLS client does.
pub fn verify_chain(
    bundle: &[Vec<u8>],
    chain: &[Vec<u8>],
    server_name: &str,
    now: i64,
) -> Result<(), ChainProblem> {
    let Some((leaf, intermediates)) = chain.split_first() else {
        return Err(ChainProblem::Other("the server sent no certificate".to_owned()));
    };
    let mut roots = RootCertStore::empty();
    for der in bundle {
        // A bundle entry that is not a usable trust anchor trusts nothing, as in Go.
        let _ = roots.add(CertificateDer::from(der.clone()));
    }
    if roots.is_empty() {
        return Err(ChainProblem::UnknownAuthority);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map_err(|e| ChainProblem::Other(e.to_string()))?;
    let name = ServerName::try_from(server_name.to_owned())
        .map_err(|e| ChainProblem::Other(format!("{server_name}: {e}")))?;
    let intermediates: Vec<CertificateDer<'_>> = intermediates
        .iter()
        .map(|d| CertificateDer::from(d.as_slice()))
        .collect();
    let at = UnixTime::since_unix_epoch(std::time::Duration::from_secs(u64::try_from(now).unwrap_or(0)));
    match verifier.verify_server_cert(
        &CertificateDer::from(leaf.as_slice()),
        &intermediates,
        &name,
        &[],
        at,
    ) {
        Ok(_) => Ok(()),
        Err(rustls::Error::InvalidCertificate(error)) => Err(match error {
            CertificateError::UnknownIssuer | CertificateError::BadSignature => {
                ChainProblem::UnknownAuthority
            }
            CertificateError::Expired
            | CertificateError::ExpiredContext { .. }
            | CertificateError::NotValidYet
            | CertificateError::NotValidYetContext { .. } => ChainProblem::Expired,
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                ChainProblem::WrongName
            }
            other => ChainProblem::Other(format!("{other:?}")),
        }),
        Err(other) => Err(ChainProblem::Other(other.to_string())),
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Certificates for the tests: a CA and leaves it signs, made with rcgen.

    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    use time::OffsetDateTime;

    /// A CA with its key.
    pub struct TestCa {
        /// Its certificate, DER.
        pub der: Vec<u8>,
        /// Its certificate, PEM.
        pub pem: String,
        issuer: Issuer<'static, KeyPair>,
    }

    /// A CA valid from `from` to `until` (Unix seconds).
    pub fn ca(name: &str, from: i64, until: i64) -> TestCa {
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.not_before = OffsetDateTime::from_unix_timestamp(from).expect("time");
        params.not_after = OffsetDateTime::from_unix_timestamp(until).expect("time");
        let key = KeyPair::generate().expect("key");
        let cert = params.self_signed(&key).expect("self-signed");
        TestCa {
            der: cert.der().to_vec(),
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    impl TestCa {
        /// A serving certificate for `names`, valid from `from` to `until`.
        pub fn leaf(&self, names: &[&str], from: i64, until: i64) -> (Vec<u8>, String) {
            let mut params =
                CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())
                    .expect("names");
            params.not_before = OffsetDateTime::from_unix_timestamp(from).expect("time");
            params.not_after = OffsetDateTime::from_unix_timestamp(until).expect("time");
            let key = KeyPair::generate().expect("key");
            let cert = params.signed_by(&key, &self.issuer).expect("signed");
            (cert.der().to_vec(), cert.pem())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::ca;
    use super::*;

    const NOW: i64 = 1_800_000_000;

    #[test]
    fn a_chain_verifies_only_against_the_ca_that_signed_it_for_the_dialled_name_while_valid() {
        let ours = ca("ours", NOW - 1000, NOW + 100_000);
        let other = ca("other", NOW - 1000, NOW + 100_000);
        let (leaf, _) = ours.leaf(&["127.0.0.1", "istiod.istio-system.svc"], NOW - 100, NOW + 1000);
        let chain = vec![leaf];
        assert_eq!(
            verify_chain(std::slice::from_ref(&ours.der), &chain, "127.0.0.1", NOW),
            Ok(())
        );
        assert_eq!(
            verify_chain(
                std::slice::from_ref(&ours.der),
                &chain,
                "istiod.istio-system.svc",
                NOW
            ),
            Ok(())
        );
        assert_eq!(
            verify_chain(&[other.der.clone(), ours.der.clone()], &chain, "127.0.0.1", NOW),
            Ok(())
        );
        assert_eq!(
            verify_chain(std::slice::from_ref(&other.der), &chain, "127.0.0.1", NOW),
            Err(ChainProblem::UnknownAuthority)
        );
        assert_eq!(
            verify_chain(&[], &chain, "127.0.0.1", NOW),
            Err(ChainProblem::UnknownAuthority)
        );
        assert_eq!(
            verify_chain(std::slice::from_ref(&ours.der), &chain, "other.svc", NOW),
            Err(ChainProblem::WrongName)
        );
        assert_eq!(
            verify_chain(std::slice::from_ref(&ours.der), &chain, "127.0.0.1", NOW + 5000),
            Err(ChainProblem::Expired)
        );
    }

    #[test]
    fn bundles_are_read_as_pem_and_an_empty_one_says_so() {
        let ours = ca("ours", NOW - 1000, NOW + 100_000);
        assert_eq!(pem_certificates(ours.pem.as_bytes()), Ok(vec![ours.der.clone()]));
        assert_eq!(pem_certificates(b"  \n"), Err("empty".to_owned()));
        assert!(pem_certificates(b"hello").is_err());
        let info = CertInfo::of(&ours.der).expect("parses");
        assert!(info.is_ca);
        assert_eq!(info.not_after, NOW + 100_000);
        assert!(info.describe().contains("CN=ours"));
        assert_eq!(date(0), "1970-01-01 00:00 UTC");
    }
}
