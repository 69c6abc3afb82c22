//! Certificate authority and serving-certificate generation, PEM in and out.
//!
//! Pure functions over rcgen: the caller decides validity periods and where the results are kept
//! (a file for the self-signed mode, a Kubernetes Secret for cluster mode). Keys are ECDSA P-256;
//! names that parse as IP addresses become IP SANs, the others DNS SANs.
//!
//! A CA may sign serving certificates only (`basicConstraints` CA:TRUE with `pathLenConstraint`
//! 0: no intermediate CA under it is valid). A serving certificate's key usage is
//! `digitalSignature` alone: an ECDSA key signs the handshake and never enciphers a key
//! (`keyEncipherment` belongs to RSA key transport).

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
    KeyPair, KeyUsagePurpose,
};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use time::OffsetDateTime;

/// A CA certificate and its private key, PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct CaMaterial {
    /// The CA certificate.
    pub cert_pem: String,
    /// Its private key (PKCS#8).
    pub key_pem: String,
}

impl std::fmt::Debug for CaMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaMaterial")
            .field("cert_pem", &self.cert_pem)
            .finish_non_exhaustive()
    }
}

/// A serving certificate (leaf then CA) and its private key, PEM.
#[derive(Clone)]
pub struct LeafMaterial {
    /// The leaf certificate followed by the CA that signed it.
    pub chain_pem: String,
    /// The leaf's private key (PKCS#8).
    pub key_pem: String,
    /// The leaf's notAfter, Unix seconds.
    pub not_after: i64,
}

impl std::fmt::Debug for LeafMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeafMaterial")
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

/// The key usage of a serving certificate with an ECDSA key.
pub const LEAF_KEY_USAGES: &[KeyUsagePurpose] = &[KeyUsagePurpose::DigitalSignature];

fn err(what: &str) -> impl Fn(rcgen::Error) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// Generates a CA named `common_name` valid from `not_before` to `not_after`.
pub fn generate_ca(
    common_name: &str,
    not_before: OffsetDateTime,
    not_after: OffsetDateTime,
) -> Result<CaMaterial, String> {
    let key = KeyPair::generate().map_err(err("generating the CA key"))?;
    let key_pem = key.serialize_pem();
    let mut params = CertificateParams::default();
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::OrganizationName, "sidecar-injector");
    params.distinguished_name.push(DnType::CommonName, common_name);
    params.not_before = not_before;
    params.not_after = not_after;
    let ca = CertifiedIssuer::self_signed(params, key).map_err(err("signing the CA"))?;
    Ok(CaMaterial {
        cert_pem: ca.pem(),
        key_pem,
    })
}

/// Issues a serving certificate signed by `ca` for `names` (DNS names or IP addresses; the
/// first is the common name), valid from `not_before` to `not_after` but never beyond the CA.
pub fn issue_leaf(
    ca: &CaMaterial,
    names: &[String],
    not_before: OffsetDateTime,
    not_after: OffsetDateTime,
) -> Result<LeafMaterial, String> {
    let ca_key = KeyPair::from_pem(&ca.key_pem).map_err(err("the CA key does not parse"))?;
    let issuer =
        Issuer::from_ca_cert_pem(&ca.cert_pem, ca_key).map_err(err("the CA certificate does not parse"))?;
    let ca_end = cert_not_after(&ca.cert_pem)?;
    let mut params = CertificateParams::new(names.to_vec()).map_err(err("serving certificate names"))?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(
        DnType::CommonName,
        names.first().map_or("localhost", String::as_str),
    );
    params.not_before = not_before;
    params.not_after = not_after.min(OffsetDateTime::from_unix_timestamp(ca_end).unwrap_or(not_after));
    params.key_usages = LEAF_KEY_USAGES.to_vec();
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    let key = KeyPair::generate().map_err(err("generating the serving key"))?;
    let leaf = params
        .signed_by(&key, &issuer)
        .map_err(err("signing the serving certificate"))?;
    Ok(LeafMaterial {
        chain_pem: format!("{}{}", leaf.pem(), ca.cert_pem),
        key_pem: key.serialize_pem(),
        not_after: params.not_after.unix_timestamp(),
    })
}

/// The notAfter (Unix seconds) of the first certificate in `pem`.
pub fn cert_not_after(pem: &str) -> Result<i64, String> {
    let der = CertificateDer::from_pem_slice(pem.as_bytes())
        .map_err(|e| format!("certificate PEM does not parse: {e}"))?;
    crate::tls::cert_info(&der).map(|i| i.not_after)
}

/// The DER certificates of a PEM bundle, in order (blocks that are not certificates are skipped;
/// a malformed block is an error).
pub fn pem_certificates(pem: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("certificate PEM does not parse: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaf_is_signed_by_the_ca_and_capped_by_it() {
        let now = OffsetDateTime::now_utc();
        let ca = generate_ca("test CA", now, now + time::Duration::hours(2)).expect("ca");
        let leaf = issue_leaf(
            &ca,
            &["svc.ns.svc".into(), "127.0.0.1".into()],
            now,
            now + time::Duration::days(3),
        )
        .expect("leaf");
        assert_eq!(
            leaf.not_after,
            cert_not_after(&ca.cert_pem).expect("ca parses"),
            "capped by the CA"
        );
        let (_, info) =
            crate::tls::parse_pem_pair(leaf.chain_pem.as_bytes(), leaf.key_pem.as_bytes()).expect("pair");
        assert_eq!(info.subject, "CN=svc.ns.svc");
        let chain = pem_certificates(&leaf.chain_pem).expect("chain");
        assert_eq!(chain.len(), 2);
        let (_, cert) = x509_parser::parse_x509_certificate(chain[0].as_ref()).expect("x509");
        let sans = cert.subject_alternative_name().expect("ext").expect("present");
        let text = format!("{:?}", sans.value.general_names);
        assert!(text.contains("svc.ns.svc") && text.contains("127"), "{text}");
    }

    /// The CA's basic constraints and key usage, and the leaf's, as a verifier reads them.
    #[test]
    fn the_ca_signs_leaves_only_and_the_leaf_only_signs() {
        use x509_parser::extensions::ParsedExtension;
        let now = OffsetDateTime::now_utc();
        let ca = generate_ca("test CA", now, now + time::Duration::days(1)).expect("ca");
        let leaf =
            issue_leaf(&ca, &["svc.ns.svc".into()], now, now + time::Duration::hours(1)).expect("leaf");
        let chain = pem_certificates(&leaf.chain_pem).expect("chain");
        let (_, leaf_cert) = x509_parser::parse_x509_certificate(chain[0].as_ref()).expect("leaf x509");
        let (_, ca_cert) = x509_parser::parse_x509_certificate(chain[1].as_ref()).expect("ca x509");

        let constraints = ca_cert.basic_constraints().expect("one").expect("present").value;
        assert!(constraints.ca);
        assert_eq!(constraints.path_len_constraint, Some(0));
        let usage = ca_cert.key_usage().expect("one").expect("present").value;
        assert!(usage.key_cert_sign() && usage.crl_sign());

        let usage = leaf_cert.key_usage().expect("one").expect("present").value;
        assert!(usage.digital_signature());
        assert!(!usage.key_encipherment(), "an ECDSA key enciphers nothing");
        assert_eq!(usage.flags, 1, "digitalSignature alone");
        let leaf_is_ca = leaf_cert
            .extensions()
            .iter()
            .any(|e| matches!(e.parsed_extension(), ParsedExtension::BasicConstraints(b) if b.ca));
        assert!(!leaf_is_ca);
        let eku = leaf_cert
            .extended_key_usage()
            .expect("one")
            .expect("present")
            .value;
        assert!(eku.server_auth && !eku.client_auth);
    }

    #[test]
    fn bad_ca_is_an_error_not_a_panic() {
        let now = OffsetDateTime::now_utc();
        let bad = CaMaterial {
            cert_pem: "not a pem".into(),
            key_pem: "nope".into(),
        };
        let e = issue_leaf(&bad, &["x".into()], now, now)
            .err()
            .unwrap_or_default();
        assert!(e.contains("does not parse"), "{e}");
    }
}
