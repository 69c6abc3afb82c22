//! The injector's certificate authorities as kept in its CA Secret, and how they rotate.
//!
//! Pure: parsing and writing the Secret's `data`, the caBundle they make, which CA a replica
//! signs its serving certificate with, and the next step of a rotation. The runtime
//! (`certificates`) feeds these from watches and writes what they return.
//!
//! # Rotation with overlap
//!
//! A new CA is never served before the API server trusts it, and an old one never leaves the
//! bundle while a replica may still serve a certificate it signed:
//!
//! 1. steady: `current` signs; the bundle is `[current]`;
//! 2. `current` has less than a third of its life left: a `next` CA is generated; the bundle
//!    becomes `[current, next]`; serving still uses `current`;
//! 3. once **every** webhook's caBundle holds `next`, replicas sign with `next`, and the leader
//!    promotes it: `previous = current` (retiring after the overlap), `current = next`;
//! 4. after the overlap, `previous` leaves the bundle: `[current]`.
//!
//! Every intermediate state is a valid Secret on its own, so losing the leadership between
//! two steps leaves a consistent bundle for the next leader to continue from.

use std::collections::BTreeMap;
use std::time::Duration;

use injector_pki::{self as pki, CaMaterial, PkiError};
use time::OffsetDateTime;

/// How far a generated CA's notBefore is set back, for clocks that lag.
const BACKDATE: time::Duration = time::Duration::minutes(5);

/// Secret keys.
pub const CA_CERT: &str = "ca.crt";
/// The current CA's private key.
pub const CA_KEY: &str = "ca.key";
/// The next CA (during a rotation).
pub const NEXT_CERT: &str = "next-ca.crt";
/// The next CA's private key.
pub const NEXT_KEY: &str = "next-ca.key";
/// The retiring CA's certificate (no key is kept for it: nothing is signed with it any more).
pub const PREVIOUS_CERT: &str = "previous-ca.crt";
/// When the retiring CA leaves the bundle (RFC 3339).
pub const PREVIOUS_RETIRE_AT: &str = "previous-ca.retire-at";

/// Why a CA, or the CA Secret's `data`, cannot be used; a problem in the Secret names its key.
#[derive(Debug, thiserror::Error)]
pub enum CaError {
    /// Generating the CA, reading its PEM, or signing with it failed.
    #[error(transparent)]
    Pki(#[from] PkiError),
    /// The CA's certificate PEM holds no certificate.
    #[error("no certificate")]
    NoCertificate,
    /// The retiring CA's PEM holds no certificate.
    #[error("no CERTIFICATE block")]
    NoCertificateBlock,
    /// The certificate does not parse as X.509.
    #[error("not X.509: {0}")]
    NotX509(String),
    /// The certificate is not a CA.
    #[error("the certificate is not a CA (basicConstraints CA:FALSE)")]
    NotACa,
    /// The private key does not parse.
    #[error("the key does not parse: {0}")]
    Key(#[source] rcgen::Error),
    /// The private key is not the certificate's.
    #[error("the key does not belong to the certificate")]
    KeyMismatch,
    /// A value of the Secret is not text.
    #[error("data.{0} is not UTF-8 text")]
    NotUtf8(&'static str),
    /// A certificate of the Secret is there without its key, or the key without its
    /// certificate.
    #[error("data.{present} is present but data.{missing} is missing")]
    HalfPair {
        /// The key of the Secret that is there.
        present: &'static str,
        /// The key of the Secret that is missing.
        missing: &'static str,
    },
    /// The Secret has no current CA.
    #[error("data.{CA_CERT} and data.{CA_KEY} are missing")]
    NoCurrentCa,
    /// A CA of the Secret (certificate and key) cannot be used.
    #[error("data.{cert}/data.{key}: {source}")]
    Pair {
        /// The certificate's key in the Secret.
        cert: &'static str,
        /// The private key's key in the Secret.
        key: &'static str,
        /// Why.
        source: Box<CaError>,
    },
    /// The retiring CA's certificate cannot be read.
    #[error("data.{PREVIOUS_CERT}: {0}")]
    Previous(#[source] Box<CaError>),
    /// The retiring CA's retirement time is not an RFC 3339 time.
    #[error("data.{PREVIOUS_RETIRE_AT}: not an RFC 3339 time: {0}")]
    RetireAt(#[source] time::error::Parse),
}

/// One CA with its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ca {
    /// Certificate and key.
    pub material: CaMaterial,
    /// notAfter, Unix seconds.
    pub not_after: i64,
    /// notBefore, Unix seconds.
    pub not_before: i64,
    /// SHA-256 of the certificate's DER (colon hex).
    pub fingerprint: String,
}

/// A CA that no longer signs and leaves the bundle at `retire_at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetiringCa {
    /// Its certificate, PEM.
    pub cert_pem: String,
    /// Unix seconds.
    pub retire_at: i64,
    /// SHA-256 of the certificate's DER.
    pub fingerprint: String,
}

/// What the CA Secret holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaSet {
    /// The CA that signs serving certificates once the webhooks trust it.
    pub current: Ca,
    /// The CA being introduced.
    pub next: Option<Ca>,
    /// The CA being retired.
    pub previous: Option<RetiringCa>,
}

/// How CAs are made and rotated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RotationPolicy {
    /// Validity of a new CA.
    pub ca_validity: Duration,
    /// How long a retired CA stays in the bundle after the switch.
    pub overlap: Duration,
}

impl Default for RotationPolicy {
    fn default() -> Self {
        RotationPolicy {
            ca_validity: Duration::from_secs(365 * 86400),
            overlap: Duration::from_secs(300),
        }
    }
}

impl Ca {
    /// Reads a CA from its PEM certificate and key, checking they belong together.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Ca, CaError> {
        let material = CaMaterial {
            cert_pem: cert_pem.to_owned(),
            key_pem: key_pem.to_owned(),
        };
        let info = first_cert_info(cert_pem)?;
        // Signing a throwaway leaf proves the key and certificate parse and work together.
        let now = OffsetDateTime::now_utc();
        pki::issue_leaf(
            &material,
            &["check.invalid".to_owned()],
            now,
            now + time::Duration::minutes(1),
        )?;
        let der = pki::pem_certificates(cert_pem)?;
        let leaf = der.first().ok_or(CaError::NoCertificate)?;
        let (_, cert) = x509_parser::parse_x509_certificate(leaf.as_ref())
            .map_err(|e| CaError::NotX509(e.to_string()))?;
        if !cert.is_ca() {
            return Err(CaError::NotACa);
        }
        let key = rcgen::KeyPair::from_pem(key_pem).map_err(CaError::Key)?;
        if key.public_key_raw() != cert.public_key().subject_public_key.data.as_ref() {
            return Err(CaError::KeyMismatch);
        }
        Ok(Ca {
            material,
            not_after: info.not_after,
            not_before: cert.validity().not_before.timestamp(),
            fingerprint: info.sha256,
        })
    }

    /// Generates a CA valid from five minutes ago (clock skew) for `validity`.
    pub fn generate(now: OffsetDateTime, validity: Duration) -> Result<Ca, CaError> {
        let not_before = now - BACKDATE;
        let not_after = now + validity;
        let name = format!("sidecar-injector CA {}", now.unix_timestamp());
        let material = pki::generate_ca(&name, not_before, not_after)?;
        Ca::from_pem(&material.cert_pem, &material.key_pem)
    }

    /// Whether less than a third of this CA's validity is left at `now` (Unix seconds). The
    /// validity is the policy's, or the certificate's own if shorter — without the minutes a
    /// generated CA is backdated by for clock skew, which would make a short-lived CA look due
    /// at once.
    pub fn due_for_rotation(&self, now: i64, policy_validity: Duration) -> bool {
        let own = self.not_after - self.not_before - BACKDATE.whole_seconds();
        let policy = i64::try_from(policy_validity.as_secs()).unwrap_or(i64::MAX);
        let life = own.min(policy).max(1);
        self.not_after - now < life / 3
    }
}

fn first_cert_info(pem: &str) -> Result<pki::CertInfo, CaError> {
    let der = pki::pem_certificates(pem)?;
    let first = der.first().ok_or(CaError::NoCertificateBlock)?;
    Ok(pki::cert_info(first)?)
}

fn text<'a>(data: &'a BTreeMap<String, Vec<u8>>, key: &'static str) -> Result<Option<&'a str>, CaError> {
    match data.get(key) {
        None => Ok(None),
        Some(bytes) if bytes.is_empty() => Ok(None),
        Some(bytes) => std::str::from_utf8(bytes)
            .map(Some)
            .map_err(|_| CaError::NotUtf8(key)),
    }
}

impl CaSet {
    /// Parses the Secret's `data`; every problem names the key.
    pub fn from_secret_data(data: &BTreeMap<String, Vec<u8>>) -> Result<CaSet, CaError> {
        let pair = |cert: &'static str, key: &'static str| -> Result<Option<Ca>, CaError> {
            match (text(data, cert)?, text(data, key)?) {
                (None, None) => Ok(None),
                (Some(cert_pem), Some(key_pem)) => {
                    Ca::from_pem(cert_pem, key_pem)
                        .map(Some)
                        .map_err(|e| CaError::Pair {
                            cert,
                            key,
                            source: Box::new(e),
                        })
                }
                (Some(_), None) => Err(CaError::HalfPair {
                    present: cert,
                    missing: key,
                }),
                (None, Some(_)) => Err(CaError::HalfPair {
                    present: key,
                    missing: cert,
                }),
            }
        };
        let current = pair(CA_CERT, CA_KEY)?.ok_or(CaError::NoCurrentCa)?;
        let next = pair(NEXT_CERT, NEXT_KEY)?;
        let previous = match text(data, PREVIOUS_CERT)? {
            None => None,
            Some(cert_pem) => {
                let info = first_cert_info(cert_pem).map_err(|e| CaError::Previous(Box::new(e)))?;
                let retire_at = match text(data, PREVIOUS_RETIRE_AT)? {
                    Some(t) => {
                        OffsetDateTime::parse(t.trim(), &time::format_description::well_known::Rfc3339)
                            .map_err(CaError::RetireAt)?
                            .unix_timestamp()
                    }
                    None => 0,
                };
                Some(RetiringCa {
                    cert_pem: cert_pem.to_owned(),
                    retire_at,
                    fingerprint: info.sha256,
                })
            }
        };
        Ok(CaSet {
            current,
            next,
            previous,
        })
    }

    /// The Secret's `data` for this set.
    pub fn to_secret_data(&self) -> BTreeMap<String, Vec<u8>> {
        let mut data = BTreeMap::new();
        data.insert(
            CA_CERT.to_owned(),
            self.current.material.cert_pem.clone().into_bytes(),
        );
        data.insert(
            CA_KEY.to_owned(),
            self.current.material.key_pem.clone().into_bytes(),
        );
        if let Some(next) = &self.next {
            data.insert(NEXT_CERT.to_owned(), next.material.cert_pem.clone().into_bytes());
            data.insert(NEXT_KEY.to_owned(), next.material.key_pem.clone().into_bytes());
        }
        if let Some(previous) = &self.previous {
            data.insert(PREVIOUS_CERT.to_owned(), previous.cert_pem.clone().into_bytes());
            let at = OffsetDateTime::from_unix_timestamp(previous.retire_at)
                .ok()
                .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
                .unwrap_or_default();
            data.insert(PREVIOUS_RETIRE_AT.to_owned(), at.into_bytes());
        }
        data
    }

    /// A new set with one freshly generated CA.
    pub fn generate(now: OffsetDateTime, policy: &RotationPolicy) -> Result<CaSet, CaError> {
        Ok(CaSet {
            current: Ca::generate(now, policy.ca_validity)?,
            next: None,
            previous: None,
        })
    }

    /// The caBundle every webhook must carry: current, then next, then the retiring CA.
    pub fn bundle_pem(&self) -> String {
        let mut out = String::new();
        for pem in [
            Some(self.current.material.cert_pem.as_str()),
            self.next.as_ref().map(|n| n.material.cert_pem.as_str()),
            self.previous.as_ref().map(|p| p.cert_pem.as_str()),
        ]
        .into_iter()
        .flatten()
        {
            out.push_str(pem.trim_end());
            out.push('\n');
        }
        out
    }

    /// The CA a replica signs its serving certificate with: `next` once every webhook's bundle
    /// trusts it, `current` otherwise.
    pub fn signing_ca(&self, every_webhook_trusts: impl Fn(&str) -> bool) -> &Ca {
        match &self.next {
            Some(next) if every_webhook_trusts(&next.fingerprint) => next,
            _ => &self.current,
        }
    }

    /// The next step of a rotation at `now` (Unix seconds), given whether every webhook's
    /// bundle trusts a CA (by fingerprint); `None` when nothing is to be done.
    pub fn plan(
        &self,
        now: OffsetDateTime,
        policy: &RotationPolicy,
        every_webhook_trusts: impl Fn(&str) -> bool,
    ) -> Result<Option<(CaSet, &'static str)>, CaError> {
        let t = now.unix_timestamp();
        if let Some(previous) = &self.previous
            && t >= previous.retire_at
        {
            let mut set = self.clone();
            set.previous = None;
            return Ok(Some((
                set,
                "the retired CA's overlap is over: it leaves the bundle",
            )));
        }
        if let Some(next) = &self.next {
            if every_webhook_trusts(&next.fingerprint) {
                let overlap = i64::try_from(policy.overlap.as_secs()).unwrap_or(i64::MAX);
                let set = CaSet {
                    current: next.clone(),
                    next: None,
                    previous: Some(RetiringCa {
                        cert_pem: self.current.material.cert_pem.clone(),
                        retire_at: t.saturating_add(overlap),
                        fingerprint: self.current.fingerprint.clone(),
                    }),
                };
                return Ok(Some((
                    set,
                    "every webhook trusts the next CA: it becomes the current one",
                )));
            }
            return Ok(None);
        }
        if self.current.due_for_rotation(t, policy.ca_validity) && self.previous.is_none() {
            let mut set = self.clone();
            set.next = Some(Ca::generate(now, policy.ca_validity)?);
            return Ok(Some((
                set,
                "the CA is in the last third of its validity: a next CA joins the bundle",
            )));
        }
        Ok(None)
    }
}

/// The fingerprints of the certificates in a caBundle (PEM bytes); unparsable blocks are
/// ignored (they trust nothing).
pub fn bundle_fingerprints(bundle: &[u8]) -> Vec<String> {
    std::str::from_utf8(bundle)
        .ok()
        .and_then(|text| pki::pem_certificates(text).ok())
        .unwrap_or_default()
        .iter()
        .map(|der| pki::fingerprint(der.as_ref()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RotationPolicy {
        RotationPolicy {
            ca_validity: Duration::from_secs(3000),
            overlap: Duration::from_secs(60),
        }
    }

    #[test]
    fn secret_round_trip() {
        let now = OffsetDateTime::now_utc();
        let set = CaSet::generate(now, &policy()).expect("set");
        let back = CaSet::from_secret_data(&set.to_secret_data()).expect("parses");
        assert_eq!(back, set);
        assert_eq!(
            bundle_fingerprints(set.bundle_pem().as_bytes()),
            vec![set.current.fingerprint.clone()]
        );
    }

    #[test]
    fn corrupt_secrets_name_the_key() {
        let now = OffsetDateTime::now_utc();
        let set = CaSet::generate(now, &policy()).expect("set");
        let mut data = set.to_secret_data();
        data.insert(CA_KEY.into(), b"-----BEGIN PRIVATE KEY-----\ngarbage\n".to_vec());
        let e = CaSet::from_secret_data(&data)
            .expect_err("garbage key")
            .to_string();
        assert!(e.starts_with("data.ca.crt/data.ca.key:"), "{e}");
        data.remove(CA_KEY);
        let e = CaSet::from_secret_data(&data).expect_err("no key").to_string();
        assert!(e.contains("data.ca.key is missing"), "{e}");
        let other = CaSet::generate(now, &policy()).expect("set");
        let mut mixed = set.to_secret_data();
        mixed.insert(CA_KEY.into(), other.current.material.key_pem.clone().into_bytes());
        assert!(
            CaSet::from_secret_data(&mixed).is_err(),
            "a key of another CA is refused"
        );
        assert!(CaSet::from_secret_data(&BTreeMap::new()).is_err());
    }

    #[test]
    fn a_short_lived_ca_is_not_due_at_birth() {
        let now = OffsetDateTime::now_utc();
        let validity = Duration::from_secs(60);
        let ca = Ca::generate(now, validity).expect("ca");
        let t = now.unix_timestamp();
        assert!(
            !ca.due_for_rotation(t, validity),
            "the 5 minutes of backdating do not count"
        );
        assert!(!ca.due_for_rotation(t + 35, validity));
        assert!(ca.due_for_rotation(t + 41, validity), "a third of 60 s left");
        assert!(
            ca.due_for_rotation(t + 41, Duration::from_secs(365 * 86400)),
            "the certificate's own life when shorter"
        );
    }

    #[test]
    fn rotation_walks_through_every_step() {
        let start = OffsetDateTime::now_utc();
        let p = policy();
        let set = CaSet::generate(start, &p).expect("set");
        let nobody = |_: &str| false;
        assert_eq!(
            set.plan(start, &p, nobody).expect("plan"),
            None,
            "young CA: nothing to do"
        );
        // Two thirds of the life later: a next CA joins.
        let later = start + time::Duration::seconds(2200);
        let (with_next, _) = set.plan(later, &p, nobody).expect("plan").expect("step");
        let next = with_next.next.clone().expect("next");
        assert_eq!(bundle_fingerprints(with_next.bundle_pem().as_bytes()).len(), 2);
        assert_eq!(
            with_next.signing_ca(nobody).fingerprint,
            set.current.fingerprint,
            "not trusted yet"
        );
        assert_eq!(
            with_next.plan(later, &p, nobody).expect("plan"),
            None,
            "waits for the webhooks"
        );
        let trusts_next = |f: &str| f == next.fingerprint;
        assert_eq!(with_next.signing_ca(trusts_next).fingerprint, next.fingerprint);
        // Every webhook trusts it: promoted, the old one retires after the overlap.
        let (promoted, _) = with_next
            .plan(later, &p, trusts_next)
            .expect("plan")
            .expect("step");
        assert_eq!(promoted.current.fingerprint, next.fingerprint);
        let previous = promoted.previous.clone().expect("retiring");
        assert_eq!(previous.fingerprint, set.current.fingerprint);
        assert_eq!(previous.retire_at, later.unix_timestamp() + 60);
        let round = CaSet::from_secret_data(&promoted.to_secret_data()).expect("parses");
        assert_eq!(round, promoted);
        assert_eq!(
            promoted.plan(later, &p, trusts_next).expect("plan"),
            None,
            "overlap running"
        );
        let (done, _) = promoted
            .plan(later + time::Duration::seconds(61), &p, trusts_next)
            .expect("plan")
            .expect("step");
        assert_eq!(done.previous, None);
        assert_eq!(
            bundle_fingerprints(done.bundle_pem().as_bytes()),
            vec![next.fingerprint.clone()]
        );
    }
}
