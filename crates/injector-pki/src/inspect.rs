//! What a certificate says: subject, serial, expiry, fingerprint and names.

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject as _;

use crate::PkiError;

/// What we know about a certificate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CertInfo {
    /// Subject, e.g. `CN=localhost`.
    pub subject: String,
    /// Serial number, hex.
    pub serial: String,
    /// Expiry, Unix seconds.
    pub not_after: i64,
    /// SHA-256 fingerprint, colon-separated hex.
    pub sha256: String,
    /// The subject alternative names (DNS names and IP addresses).
    pub names: Vec<String>,
}

/// Reads subject, serial, expiry and fingerprint from a DER certificate.
pub fn cert_info(der: &CertificateDer<'_>) -> Result<CertInfo, PkiError> {
    let (_, cert) =
        x509_parser::parse_x509_certificate(der.as_ref()).map_err(|e| PkiError::X509(e.to_string()))?;
    Ok(CertInfo {
        subject: cert.subject().to_string(),
        serial: cert.raw_serial_as_string(),
        not_after: cert.validity().not_after.timestamp(),
        sha256: fingerprint(der.as_ref()),
        names: subject_alt_names(&cert),
    })
}

/// The DNS names and IP addresses a certificate is valid for.
fn subject_alt_names(cert: &x509_parser::certificate::X509Certificate<'_>) -> Vec<String> {
    use x509_parser::extensions::GeneralName;
    let Ok(Some(san)) = cert.subject_alternative_name() else {
        return Vec::new();
    };
    san.value
        .general_names
        .iter()
        .filter_map(|name| match name {
            GeneralName::DNSName(dns) => Some((*dns).to_owned()),
            GeneralName::IPAddress(bytes) => match bytes.len() {
                4 => <[u8; 4]>::try_from(*bytes)
                    .ok()
                    .map(|b| std::net::IpAddr::from(b).to_string()),
                16 => <[u8; 16]>::try_from(*bytes)
                    .ok()
                    .map(|b| std::net::IpAddr::from(b).to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// SHA-256 fingerprint, colon-separated upper-case hex (as `openssl x509 -fingerprint`).
pub fn fingerprint(der: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, der);
    digest
        .as_ref()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The notAfter (Unix seconds) of the first certificate in `pem`.
pub fn cert_not_after(pem: &str) -> Result<i64, PkiError> {
    let der = CertificateDer::from_pem_slice(pem.as_bytes()).map_err(|e| PkiError::Pem(e.to_string()))?;
    cert_info(&der).map(|i| i.not_after)
}

/// The DER certificates of a PEM bundle, in order (blocks that are not certificates are skipped;
/// a malformed block is an error).
pub fn pem_certificates(pem: &str) -> Result<Vec<CertificateDer<'static>>, PkiError> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PkiError::Pem(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_format() {
        let f = fingerprint(b"x");
        assert_eq!(f.len(), 32 * 3 - 1);
        assert!(f.starts_with("2D:71:16:42"));
    }

    #[test]
    fn malformed_pem_and_der_are_errors_naming_the_format() {
        let e = pem_certificates("-----BEGIN CERTIFICATE-----\nAAAA\n").expect_err("cut short");
        assert!(
            e.to_string().starts_with("certificate PEM does not parse: "),
            "{e}"
        );
        let e = cert_info(&CertificateDer::from(vec![1, 2, 3])).expect_err("not X.509");
        assert!(
            e.to_string().starts_with("certificate does not parse as X.509: "),
            "{e}"
        );
    }
}
