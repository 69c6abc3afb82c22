//! Certificate authority and serving-certificate generation.
//!
//! Keys are ECDSA P-256; names that parse as IP addresses become IP SANs, the others DNS SANs.
//!
//! A CA may sign serving certificates only (`basicConstraints` CA:TRUE with `pathLenConstraint`
//! 0: no intermediate CA under it is valid). A serving certificate's key usage is
//! `digitalSignature` alone: an ECDSA key signs the handshake and never enciphers a key
//! (`keyEncipherment` belongs to RSA key transport).

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
    KeyPair, KeyUsagePurpose,
};
use time::OffsetDateTime;

use crate::PkiError;

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

fn step(step: &'static str) -> impl Fn(rcgen::Error) -> PkiError {
    move |source| PkiError::Sign { step, source }
}

/// Generates a CA named `common_name` valid from `not_before` to `not_after`.
pub fn generate_ca(
    common_name: &str,
    not_before: OffsetDateTime,
    not_after: OffsetDateTime,
) -> Result<CaMaterial, PkiError> {
    let key = KeyPair::generate().map_err(step("generating the CA key"))?;
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
    let ca = CertifiedIssuer::self_signed(params, key).map_err(step("signing the CA"))?;
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
) -> Result<LeafMaterial, PkiError> {
    let common_name = names.first().map_or("localhost", String::as_str);
    SigningCa::new(ca)?.issue(names, common_name, not_before, not_after)
}

/// A CA parsed once, ready to issue serving certificates (the server's self-signed mode issues
/// again from the same CA at half of each certificate's validity).
pub struct SigningCa {
    material: CaMaterial,
    issuer: Issuer<'static, KeyPair>,
    not_after: i64,
}

impl std::fmt::Debug for SigningCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningCa")
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

impl SigningCa {
    /// Parses the CA's key and certificate.
    pub fn new(ca: &CaMaterial) -> Result<Self, PkiError> {
        let key = KeyPair::from_pem(&ca.key_pem).map_err(PkiError::CaKey)?;
        let issuer = Issuer::from_ca_cert_pem(&ca.cert_pem, key).map_err(PkiError::CaCertificate)?;
        let not_after = crate::cert_not_after(&ca.cert_pem)?;
        Ok(SigningCa {
            material: ca.clone(),
            issuer,
            not_after,
        })
    }

    /// The CA certificate, PEM.
    pub fn cert_pem(&self) -> &str {
        &self.material.cert_pem
    }

    /// The CA's notAfter, Unix seconds.
    pub fn not_after(&self) -> i64 {
        self.not_after
    }

    /// Issues a serving certificate for `names` (DNS names or IP addresses) named
    /// `common_name`, valid from `not_before` to `not_after` but never beyond the CA.
    pub fn issue(
        &self,
        names: &[String],
        common_name: &str,
        not_before: OffsetDateTime,
        not_after: OffsetDateTime,
    ) -> Result<LeafMaterial, PkiError> {
        let mut params = CertificateParams::new(names.to_vec()).map_err(PkiError::Names)?;
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, common_name);
        params.not_before = not_before;
        params.not_after =
            not_after.min(OffsetDateTime::from_unix_timestamp(self.not_after).unwrap_or(not_after));
        params.key_usages = LEAF_KEY_USAGES.to_vec();
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate().map_err(step("generating the serving key"))?;
        let leaf = params
            .signed_by(&key, &self.issuer)
            .map_err(step("signing the serving certificate"))?;
        Ok(LeafMaterial {
            chain_pem: format!("{}{}", leaf.pem(), self.material.cert_pem),
            key_pem: key.serialize_pem(),
            not_after: params.not_after.unix_timestamp(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{cert_info, cert_not_after, pem_certificates};

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
        let chain = pem_certificates(&leaf.chain_pem).expect("chain");
        assert_eq!(chain.len(), 2);
        let info = cert_info(&chain[0]).expect("leaf parses");
        assert_eq!(info.subject, "CN=svc.ns.svc");
        assert_eq!(info.names, ["svc.ns.svc", "127.0.0.1"]);
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
    fn a_signing_ca_issues_under_the_common_name_it_is_given() {
        let now = OffsetDateTime::now_utc();
        let ca = generate_ca("test CA", now, now + time::Duration::days(1)).expect("ca");
        let signing = SigningCa::new(&ca).expect("parses");
        assert_eq!(signing.cert_pem(), ca.cert_pem);
        let names = ["localhost".to_owned(), "x.svc".to_owned()];
        let leaf = signing
            .issue(&names, "x.svc", now, now + time::Duration::hours(1))
            .expect("leaf");
        let chain = pem_certificates(&leaf.chain_pem).expect("chain");
        assert_eq!(cert_info(&chain[0]).expect("parses").subject, "CN=x.svc");
    }

    #[test]
    fn bad_ca_is_an_error_not_a_panic() {
        let now = OffsetDateTime::now_utc();
        let bad = CaMaterial {
            cert_pem: "not a pem".into(),
            key_pem: "nope".into(),
        };
        let e = issue_leaf(&bad, &["x".into()], now, now).expect_err("a bad CA fails");
        assert!(matches!(e, PkiError::CaKey(_)), "{e:?}");
        assert!(e.to_string().contains("does not parse"), "{e}");
    }
}
