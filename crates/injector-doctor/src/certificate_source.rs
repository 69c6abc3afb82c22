//! Certificates read from a Secret or a ConfigMap — and nothing else.
//!
//! `doctor` looks at certificates only, never at private keys. Where a source without keys
//! exists it is preferred (Istio's root certificate is read from the `istio-ca-root-cert`
//! ConfigMap istiod publishes, not from `istio-ca-secret` or `cacerts`). A Secret can only be
//! read whole, so [`CertificateSource::from_secret`] takes it by value and keeps the
//! `CERTIFICATE` blocks of the [certificate keys](CERTIFICATE_KEYS) alone: the private keys,
//! any other data, `stringData` and the metadata (annotations such as
//! `kubectl.kubernetes.io/last-applied-configuration` copy a Secret's data) are dropped right
//! where the Secret is read.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};

use crate::certs::pem_certificates;

/// The data keys that hold certificates: ours (`ca.crt`, `next-ca.crt`, `previous-ca.crt`),
/// a TLS Secret's (`tls.crt`, `ca.crt`), Istio's (`ca-cert.pem`, `root-cert.pem`,
/// `cert-chain.pem`).
pub const CERTIFICATE_KEYS: &[&str] = &[
    "ca.crt",
    "next-ca.crt",
    "previous-ca.crt",
    "tls.crt",
    "ca-cert.pem",
    "root-cert.pem",
    "cert-chain.pem",
];

/// What kind of object the certificates were read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// A Secret (its keys dropped).
    Secret,
    /// A ConfigMap.
    ConfigMap,
}

/// The certificates of one Secret or ConfigMap, DER, by data key; never a private key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificateSource {
    /// Where they were read.
    pub kind: SourceKind,
    /// The `CERTIFICATE` blocks under each certificate key that held any.
    pub certificates: BTreeMap<String, Vec<Vec<u8>>>,
}

impl CertificateSource {
    /// The certificates of `secret`, which is consumed: nothing else of it is kept.
    pub fn from_secret(secret: Secret) -> Self {
        let data = secret.data.unwrap_or_default();
        CertificateSource {
            kind: SourceKind::Secret,
            certificates: certificates_of(data.iter().map(|(k, v)| (k.as_str(), v.0.as_slice()))),
        }
    }

    /// The certificates of `config_map` (`data` and `binaryData`).
    pub fn from_config_map(config_map: &ConfigMap) -> Self {
        let text = config_map
            .data
            .iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v.as_bytes()));
        let binary = config_map
            .binary_data
            .iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v.0.as_slice()));
        CertificateSource {
            kind: SourceKind::ConfigMap,
            certificates: certificates_of(text.chain(binary)),
        }
    }

    /// The certificates under `key`, if it held any.
    pub fn get(&self, key: &str) -> Option<&[Vec<u8>]> {
        self.certificates.get(key).map(Vec::as_slice)
    }

    /// `Secret NS/NAME` or `ConfigMap NS/NAME`, for the object at `name` (`NS/NAME`).
    pub fn describe(&self, name: &str) -> String {
        match self.kind {
            SourceKind::Secret => format!("Secret {name}"),
            SourceKind::ConfigMap => format!("ConfigMap {name}"),
        }
    }
}

/// The certificates under the certificate keys of `data`.
fn certificates_of<'a>(data: impl Iterator<Item = (&'a str, &'a [u8])>) -> BTreeMap<String, Vec<Vec<u8>>> {
    data.filter(|(key, _)| CERTIFICATE_KEYS.contains(key))
        .filter_map(|(key, pem)| Some((key.to_owned(), pem_certificates(pem).ok()?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::ByteString;
    use serde_json::json;

    use super::*;

    fn pem(der: &[u8]) -> String {
        use base64::Engine as _;
        let body = base64::engine::general_purpose::STANDARD.encode(der);
        format!("-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n")
    }

    #[test]
    fn a_secret_keeps_only_its_certificates() {
        let key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        let cert = pem(b"not really DER, but a CERTIFICATE block");
        let mut secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": "sidecar-injector-ca", "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"data\":{\"ca.key\":\"...\"}}"}},
            "stringData": {"ca.key": key},
        }))
        .expect("a Secret");
        secret.data = Some(BTreeMap::from([
            (
                "ca.crt".to_owned(),
                ByteString(format!("{cert}{key}").into_bytes()),
            ),
            ("ca.key".to_owned(), ByteString(key.as_bytes().to_vec())),
            ("tls.key".to_owned(), ByteString(key.as_bytes().to_vec())),
            ("other".to_owned(), ByteString(cert.clone().into_bytes())),
        ]));
        let source = CertificateSource::from_secret(secret);
        assert_eq!(source.certificates.keys().collect::<Vec<_>>(), ["ca.crt"]);
        assert_eq!(
            source.get("ca.crt").map(<[_]>::len),
            Some(1),
            "the key block in ca.crt is not kept"
        );
        let kept = format!("{source:?}");
        assert!(!kept.contains("PRIVATE") && !kept.contains("AAAA") && !kept.contains("last-applied"));
        assert_eq!(source.describe("istio-system/x"), "Secret istio-system/x");
    }

    #[test]
    fn a_config_map_bundle_is_read_from_data_or_binary_data() {
        let cert = pem(b"root");
        let config_map: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": "istio-ca-root-cert"},
            "data": {"root-cert.pem": cert, "mesh": "x"},
        }))
        .expect("a ConfigMap");
        let source = CertificateSource::from_config_map(&config_map);
        assert_eq!(source.get("root-cert.pem").map(<[_]>::len), Some(1));
        assert_eq!(source.get("mesh"), None);
        assert_eq!(
            source.describe("istio-system/istio-ca-root-cert"),
            "ConfigMap istio-system/istio-ca-root-cert"
        );
    }
}
