//! sprig's private-key and certificate functions (`crypto.go`): `genPrivateKey`, `genCA`,
//! `genCAWithKey`, `genSelfSignedCert`, `genSelfSignedCertWithKey`, `genSignedCert`,
//! `genSignedCertWithKey` and `buildCustomCert`.
//!
//! Keys are generated with RustCrypto (`rsa`, `p256`) and the OS's secure generator, and
//! written as sprig writes them (`RSA PRIVATE KEY` PKCS#1, `EC PRIVATE KEY` SEC1, `PRIVATE KEY`
//! PKCS#8 for Ed25519). Certificates are built and signed by `rcgen` with sprig's template:
//! a random 128-bit serial, subject CN only, valid from now for `daysValid` days, key usage
//! key encipherment + digital signature (+ cert sign for a CA), extended key usage server and
//! client auth, basic constraints. The result is sprig's `certificate` struct, a host object
//! with the PEM fields `.Cert` and `.Key`. DSA keys (deprecated in Go) are not supported.

use std::borrow::Cow;
use std::sync::Arc;

use base64::Engine;
use p256::pkcs8::EncodePrivateKey as _;
use rsa::pkcs1::EncodeRsaPrivateKey as _;
use rsa::pkcs8::DecodePrivateKey as _;

use super::util::{int_arg as int, str_arg as s};
use crate::funcs::{ArgType::*, Func, FuncMap};
use crate::value::{Object, ObjectKind, Value};

/// The Go type name of sprig's certificate struct.
const CERTIFICATE_TYPE: &str = "sprig.certificate";

/// sprig's `certificate{Cert, Key string}`.
#[derive(Debug, Clone)]
pub struct Certificate {
    /// PEM of the certificate.
    pub cert: String,
    /// PEM of the private key.
    pub key: String,
}

impl Object for Certificate {
    fn type_name(&self) -> Cow<'_, str> {
        Cow::Borrowed(CERTIFICATE_TYPE)
    }
    fn kind(&self) -> ObjectKind {
        ObjectKind::Struct
    }
    fn has_field(&self, name: &str) -> bool {
        matches!(name, "Cert" | "Key")
    }
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "Cert" => Some(Value::str(self.cert.as_str())),
            "Key" => Some(Value::str(self.key.as_str())),
            _ => None,
        }
    }
    fn format_v(&self, _plus: bool) -> String {
        format!("{{{} {}}}", self.cert, self.key)
    }
    fn to_data(&self) -> Option<Value> {
        let mut m = std::collections::BTreeMap::new();
        m.insert("Cert".to_string(), Value::str(self.cert.as_str()));
        m.insert("Key".to_string(), Value::str(self.key.as_str()));
        Some(Value::map(m))
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

/// A private key of a kind sprig generates or accepts.
enum PrivateKey {
    Rsa(Box<rsa::RsaPrivateKey>),
    Ec(p256::SecretKey),
    /// The 32-byte seed.
    Ed25519([u8; 32]),
}

/// The fixed PKCS#8 v1 prefix of an Ed25519 key (Go's `MarshalPKCS8PrivateKey`).
const ED25519_PKCS8_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// Go's `pem.Decode` (first block; headers are not supported): the type and the bytes.
fn pem_decode(s: &str) -> Option<(String, Vec<u8>)> {
    let start = s.find("-----BEGIN ")?;
    let rest = &s[start + 11..];
    let label_end = rest.find("-----")?;
    let label = &rest[..label_end];
    let body_start = &rest[label_end + 5..];
    let end_marker = format!("-----END {label}-----");
    let body_end = body_start.find(&end_marker)?;
    let body: String = body_start[..body_end]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let der = base64::engine::general_purpose::STANDARD.decode(body).ok()?;
    Some((label.to_string(), der))
}

/// Go's `x509.MarshalECPrivateKey` for P-256: version 1, the scalar, the named-curve
/// parameters and the uncompressed public key (121 bytes).
fn sec1_der(k: &p256::SecretKey) -> Vec<u8> {
    use p256::elliptic_curve::sec1::ToEncodedPoint as _;
    let point = k.public_key().to_encoded_point(false);
    let mut der = vec![0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20];
    der.extend_from_slice(&k.to_bytes());
    // [0] OID 1.2.840.10045.3.1.7 (prime256v1)
    der.extend_from_slice(&[
        0xa0, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07,
    ]);
    // [1] BIT STRING (no unused bits) of the 65-byte point
    der.extend_from_slice(&[0xa1, 0x44, 0x03, 0x42, 0x00]);
    der.extend_from_slice(point.as_bytes());
    der
}

impl PrivateKey {
    fn generate(kind: &str, rsa_bits: usize) -> Result<PrivateKey, String> {
        let mut rng = rand_core::OsRng;
        Ok(match kind {
            "" | "rsa" => PrivateKey::Rsa(Box::new(
                rsa::RsaPrivateKey::new(&mut rng, rsa_bits).map_err(|e| e.to_string())?,
            )),
            "ecdsa" => PrivateKey::Ec(p256::SecretKey::random(&mut rng)),
            "ed25519" => {
                let mut seed = [0u8; 32];
                getrandom::fill(&mut seed).map_err(|e| e.to_string())?;
                PrivateKey::Ed25519(seed)
            }
            _ => return Err(format!("Unknown type {kind}")),
        })
    }

    /// sprig's `pemBlockForKey`.
    fn to_sprig_pem(&self) -> Result<String, String> {
        Ok(match self {
            PrivateKey::Rsa(k) => pem(
                "RSA PRIVATE KEY",
                k.to_pkcs1_der().map_err(|e| e.to_string())?.as_bytes(),
            ),
            PrivateKey::Ec(k) => pem("EC PRIVATE KEY", &sec1_der(k)),
            PrivateKey::Ed25519(seed) => {
                let mut der = ED25519_PKCS8_PREFIX.to_vec();
                der.extend_from_slice(seed);
                pem("PRIVATE KEY", &der)
            }
        })
    }

    /// The PKCS#8 DER and signature algorithm `rcgen` signs with (Go's defaults:
    /// SHA256-RSA, ECDSA-SHA256, Ed25519).
    fn key_pair(&self) -> Result<rcgen::KeyPair, String> {
        let (der, alg) = match self {
            PrivateKey::Rsa(k) => (
                k.to_pkcs8_der().map_err(|e| e.to_string())?.as_bytes().to_vec(),
                &rcgen::PKCS_RSA_SHA256,
            ),
            PrivateKey::Ec(k) => (
                k.to_pkcs8_der().map_err(|e| e.to_string())?.as_bytes().to_vec(),
                &rcgen::PKCS_ECDSA_P256_SHA256,
            ),
            PrivateKey::Ed25519(seed) => {
                let mut der = ED25519_PKCS8_PREFIX.to_vec();
                der.extend_from_slice(seed);
                (der, &rcgen::PKCS_ED25519)
            }
        };
        rcgen::KeyPair::from_pkcs8_der_and_sign_algo(&der.into(), alg).map_err(|e| e.to_string())
    }

    /// sprig's `parsePrivateKeyPEM`.
    fn parse(pem_text: &str) -> Result<PrivateKey, String> {
        use rsa::pkcs1::DecodeRsaPrivateKey as _;
        let Some((label, der)) = pem_decode(pem_text) else {
            return Err("no PEM data in input".into());
        };
        if label == "PRIVATE KEY" {
            if der.len() == 48 && der[..16] == ED25519_PKCS8_PREFIX {
                let mut seed = [0u8; 32];
                seed.copy_from_slice(&der[16..]);
                return Ok(PrivateKey::Ed25519(seed));
            }
            if let Ok(k) = rsa::RsaPrivateKey::from_pkcs8_der(&der) {
                return Ok(PrivateKey::Rsa(Box::new(k)));
            }
            if let Ok(k) = p256::SecretKey::from_pkcs8_der(&der) {
                return Ok(PrivateKey::Ec(k));
            }
            return Err("decoding PEM as PKCS#8: x509: failed to parse private key".into());
        }
        let Some(kind) = label.strip_suffix(" PRIVATE KEY") else {
            return Err(format!("no private key data in PEM block of type {label}"));
        };
        match kind {
            "RSA" => rsa::RsaPrivateKey::from_pkcs1_der(&der)
                .map(|k| PrivateKey::Rsa(Box::new(k)))
                .map_err(|e| format!("parsing RSA private key from PEM: {e}")),
            "EC" => p256::SecretKey::from_sec1_der(&der)
                .map(PrivateKey::Ec)
                .map_err(|e| format!("parsing EC private key from PEM: {e}")),
            "DSA" => Err("parsing DSA private key from PEM: DSA keys are not supported by gotemplate".into()),
            _ => Err(format!("invalid private key type {label}")),
        }
    }
}

/// sprig's `getNetIPs`.
fn net_ips(ips: &Value) -> Result<Vec<std::net::IpAddr>, String> {
    let Value::List(l) = ips else { return Ok(vec![]) };
    l.items
        .iter()
        .map(|ip| match ip {
            Value::String(s) => s.parse().map_err(|_| format!("error parsing ip: {s}")),
            v => Err(format!(
                "error parsing ip: {} is not a string",
                crate::fmt::sprint(std::slice::from_ref(v))
            )),
        })
        .collect()
}

/// sprig's `getAlternateDNSStrs`.
fn dns_names(names: &Value) -> Result<Vec<String>, String> {
    let Value::List(l) = names else { return Ok(vec![]) };
    l.items
        .iter()
        .map(|n| match n {
            Value::String(s) => Ok(s.to_string()),
            v => Err(format!(
                "error processing alternate dns name: {} is not a string",
                crate::fmt::sprint(std::slice::from_ref(v))
            )),
        })
        .collect()
}

/// sprig's `getBaseCertTemplate` as `rcgen` parameters.
fn base_params(
    cn: &str,
    ips: &Value,
    dns: &Value,
    days: i64,
    ca: bool,
) -> Result<rcgen::CertificateParams, String> {
    use rcgen::{
        BasicConstraints, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, KeyUsagePurpose, SanType,
    };
    let ips = net_ips(ips)?;
    let dns = dns_names(dns)?;
    let mut params = rcgen::CertificateParams::default();
    let mut serial = [0u8; 16];
    getrandom::fill(&mut serial).map_err(|e| e.to_string())?;
    params.serial_number = Some(rcgen::SerialNumber::from_slice(&serial));
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    params.distinguished_name = dn;
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now;
    let valid = time::Duration::days(days.clamp(-(1 << 40), 1 << 40));
    params.not_after = now.checked_add(valid).unwrap_or(if days < 0 {
        time::PrimitiveDateTime::MIN.assume_utc()
    } else {
        time::PrimitiveDateTime::MAX.assume_utc()
    });
    params.key_usages = vec![
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    if ca {
        params.key_usages.push(KeyUsagePurpose::KeyCertSign);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    } else {
        params.is_ca = IsCa::ExplicitNoCa;
    }
    for name in dns {
        let ia5 = rcgen::string::Ia5String::try_from(name)
            .map_err(|_| "error creating certificate: x509: SAN dNSName is malformed".to_string())?;
        params.subject_alt_names.push(SanType::DnsName(ia5));
    }
    params
        .subject_alt_names
        .extend(ips.into_iter().map(SanType::IpAddress));
    Ok(params)
}

/// Issues a certificate for `key` from `params`, self-signed or signed by `issuer`.
fn issue(
    params: &rcgen::CertificateParams,
    key: &PrivateKey,
    issuer: Option<&Certificate>,
) -> Result<Certificate, String> {
    let key_pair = key.key_pair()?;
    let cert = match issuer {
        None => params
            .self_signed(&key_pair)
            .map_err(|e| format!("error creating certificate: {e}"))?,
        Some(ca) => {
            if pem_decode(&ca.cert).is_none_or(|(label, _)| label != "CERTIFICATE") {
                return Err("unable to decode certificate".into());
            }
            let ca_key = PrivateKey::parse(&ca.key).map_err(|e| format!("error parsing private key: {e}"))?;
            let issuer = rcgen::Issuer::from_ca_cert_pem(&ca.cert, ca_key.key_pair()?)
                .map_err(|e| format!("error parsing certificate: decodedSignerCert.Bytes: {e}"))?;
            params
                .signed_by(&key_pair, &issuer)
                .map_err(|e| format!("error creating certificate: {e}"))?
        }
    };
    Ok(Certificate {
        cert: cert.pem().replace("\r\n", "\n"),
        key: key.to_sprig_pem()?,
    })
}

fn cert_arg(v: &Value) -> Certificate {
    match v {
        Value::Object(o) => o
            .as_any()
            .and_then(|a| a.downcast_ref::<Certificate>())
            .cloned()
            .unwrap_or(Certificate {
                cert: String::new(),
                key: String::new(),
            }),
        _ => Certificate {
            cert: String::new(),
            key: String::new(),
        },
    }
}

fn value(c: Certificate) -> Value {
    Value::Object(Arc::new(c))
}

/// sprig's `buildCustomCert`: a certificate object from base64-encoded PEM texts, validated.
fn build_custom(b64cert: &str, b64key: &str) -> Result<Certificate, String> {
    let engine = base64::engine::general_purpose::STANDARD;
    let cert = engine
        .decode(b64cert)
        .map_err(|_| "unable to decode base64 certificate".to_string())?;
    let key = engine
        .decode(b64key)
        .map_err(|_| "unable to decode base64 private key".to_string())?;
    let cert = String::from_utf8_lossy(&cert).into_owned();
    let key = String::from_utf8_lossy(&key).into_owned();
    let Some((_, der)) = pem_decode(&cert) else {
        return Err("unable to decode certificate".into());
    };
    x509_parser::parse_x509_certificate(&der)
        .map_err(|e| format!("error parsing certificate: decodedCert.Bytes: x509: {e}"))?;
    PrivateKey::parse(&key).map_err(|e| format!("error parsing private key: {e}"))?;
    Ok(Certificate { cert, key })
}

/// The RSA key size sprig uses for certificates.
const CERT_RSA_BITS: usize = 2048;
/// The RSA key size of `genPrivateKey "rsa"`.
const PRIVATE_KEY_RSA_BITS: usize = 4096;

fn with_key(pem_text: &str) -> Result<PrivateKey, String> {
    PrivateKey::parse(pem_text).map_err(|e| format!("parsing private key: {e}"))
}

fn new_cert_key() -> Result<PrivateKey, String> {
    PrivateKey::generate("rsa", CERT_RSA_BITS).map_err(|e| format!("error generating rsa key: {e}"))
}

/// Registers the key and certificate functions.
pub fn register(m: &mut FuncMap) {
    let cert_t = Named(CERTIFICATE_TYPE);
    m.insert(
        "genPrivateKey",
        Func::new(&[Str], |a| {
            Ok(Value::str(
                match PrivateKey::generate(s(&a[0]), PRIVATE_KEY_RSA_BITS) {
                    Ok(k) => k
                        .to_sprig_pem()
                        .unwrap_or_else(|e| format!("failed to generate private key: {e}")),
                    Err(e) if e.starts_with("Unknown type") => {
                        if s(&a[0]) == "dsa" {
                            "failed to generate dsa params: DSA keys are not supported by gotemplate".into()
                        } else {
                            e
                        }
                    }
                    Err(e) => format!("failed to generate private key: {e}"),
                },
            ))
        }),
    );
    m.insert(
        "buildCustomCert",
        Func::new(&[Str, Str], |a| Ok(value(build_custom(s(&a[0]), s(&a[1]))?))),
    );
    m.insert(
        "genCA",
        Func::new(&[Str, Int], |a| {
            let key = new_cert_key()?;
            Ok(value(issue(
                &base_params(s(&a[0]), &Value::Nil, &Value::Nil, int(&a[1]), true)?,
                &key,
                None,
            )?))
        }),
    );
    m.insert(
        "genCAWithKey",
        Func::new(&[Str, Int, Str], |a| {
            let key = with_key(s(&a[2]))?;
            Ok(value(issue(
                &base_params(s(&a[0]), &Value::Nil, &Value::Nil, int(&a[1]), true)?,
                &key,
                None,
            )?))
        }),
    );
    m.insert(
        "genSelfSignedCert",
        Func::new(&[Str, AnySlice, AnySlice, Int], |a| {
            let key = new_cert_key()?;
            Ok(value(issue(
                &base_params(s(&a[0]), &a[1], &a[2], int(&a[3]), false)?,
                &key,
                None,
            )?))
        }),
    );
    m.insert(
        "genSelfSignedCertWithKey",
        Func::new(&[Str, AnySlice, AnySlice, Int, Str], |a| {
            let key = with_key(s(&a[4]))?;
            Ok(value(issue(
                &base_params(s(&a[0]), &a[1], &a[2], int(&a[3]), false)?,
                &key,
                None,
            )?))
        }),
    );
    m.insert(
        "genSignedCert",
        Func::new(&[Str, AnySlice, AnySlice, Int, cert_t], |a| {
            let key = new_cert_key()?;
            let ca = cert_arg(&a[4]);
            Ok(value(issue(
                &base_params(s(&a[0]), &a[1], &a[2], int(&a[3]), false)?,
                &key,
                Some(&ca),
            )?))
        }),
    );
    m.insert(
        "genSignedCertWithKey",
        Func::new(&[Str, AnySlice, AnySlice, Int, cert_t, Str], |a| {
            let key = with_key(s(&a[5]))?;
            let ca = cert_arg(&a[4]);
            Ok(value(issue(
                &base_params(s(&a[0]), &a[1], &a[2], int(&a[3]), false)?,
                &key,
                Some(&ca),
            )?))
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_sprig_pem() {
        for kind in ["ecdsa", "ed25519"] {
            let k = PrivateKey::generate(kind, 0).and_then(|k| k.to_sprig_pem());
            let pem_text = k.unwrap_or_default();
            assert!(PrivateKey::parse(&pem_text).is_ok(), "{kind}: {pem_text}");
        }
        assert_eq!(
            PrivateKey::parse("x").err().as_deref(),
            Some("no PEM data in input")
        );
    }

    #[test]
    fn signs_a_leaf_with_a_ca() {
        let Ok(ca_key) = PrivateKey::generate("ecdsa", 0) else {
            return;
        };
        let ca =
            base_params("ca", &Value::Nil, &Value::Nil, 365, true).and_then(|p| issue(&p, &ca_key, None));
        let Ok(ca) = ca else {
            panic!("ca: {:?}", ca.err());
        };
        assert!(ca.cert.starts_with("-----BEGIN CERTIFICATE-----\n"));
        let ips = Value::list(vec![Value::str("10.0.0.1"), Value::str("::1")]);
        let dns = Value::list(vec![Value::str("a.example")]);
        let Ok(leaf_key) = PrivateKey::generate("ed25519", 0) else {
            return;
        };
        let leaf = base_params("leaf", &ips, &dns, 1, false).and_then(|p| issue(&p, &leaf_key, Some(&ca)));
        assert!(leaf.is_ok(), "{:?}", leaf.err());
        let bad = Value::list(vec![Value::int(1)]);
        assert_eq!(
            base_params("x", &bad, &Value::Nil, 1, false).err().as_deref(),
            Some("error parsing ip: 1 is not a string")
        );
    }
}
