//! TLS: the serving certificate, hot-reloaded, and the rustls server configuration.
//!
//! The certificate lives in an [`ArcSwapOption`] read by a [`ResolvesServerCert`] on every
//! handshake, so a rotation affects new handshakes only and never drops a connection (the same
//! behaviour as Istio's `GetCertificate`). Two sources:
//!
//! * **Files** (`--tls-cert`/`--tls-key`, PEM): watched like the configuration (see
//!   [`crate::WatchOptions`]). A pair that does not parse, or whose key does not match the
//!   certificate (a half-written file, a Secret caught between the two writes), is logged and
//!   ignored; the previous certificate stays in service until a good pair appears.
//! * **Self-signed**: an ECDSA P-256 CA valid one year and a serving certificate signed by it
//!   for `localhost`, `127.0.0.1`, `::1` and the given DNS names. With `write_ca`, the CA
//!   certificate is written there (and its key next to it as `<file>.key`, mode 0600; see
//!   [`crate::ca_files`]) and reused on the next start while it is valid for more than 30
//!   days, so a laptop does not
//!   need to trust a new CA on every restart. The serving certificate (90 days) is re-issued
//!   from the in-memory CA at half of its validity. Renewing the CA itself (one year) needs a
//!   restart and a new `caBundle`.
//!
//! TLS 1.2 and 1.3 only (ring provider), ALPN `h2` then `http/1.1`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use arc_swap::ArcSwapOption;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use injector_pki::{CaMaterial, CertInfo, PkiError, SigningCa, cert_info, fingerprint};

use crate::Error;
use crate::logging::rfc3339;
use crate::metrics::ReloadMetrics;
use crate::watch::{self, WatchHandle, WatchOptions};

/// Where the serving certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertSource {
    /// PEM files: a certificate chain (leaf first) and a private key (PKCS#8, PKCS#1 or SEC1).
    Files {
        /// The certificate chain.
        cert: PathBuf,
        /// The private key.
        key: PathBuf,
    },
    /// A self-generated CA and serving certificate.
    SelfSigned {
        /// Extra DNS names (e.g. `sidecar-injector.istio-system.svc`); `localhost`, `127.0.0.1`
        /// and `::1` are always included.
        dns_names: Vec<String>,
        /// Write the CA certificate (PEM) here, and reuse it on the next start.
        write_ca: Option<PathBuf>,
    },
}

/// Why a PEM certificate chain and private key cannot serve TLS.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The certificate PEM does not parse (a file cut short, a bad section line).
    #[error("certificate PEM does not parse: {}", pem_error_text(.0))]
    CertificatePem(#[source] rustls_pki_types::pem::Error),
    /// The certificate PEM holds no certificate.
    #[error("certificate file holds no CERTIFICATE block")]
    NoCertificate,
    /// The leaf certificate does not read as X.509.
    #[error(transparent)]
    Leaf(#[from] PkiError),
    /// The private key PEM does not parse, or holds no private key.
    #[error("private key PEM does not parse: {}", pem_error_text(.0))]
    KeyPem(#[source] rustls_pki_types::pem::Error),
    /// The private key is not the leaf certificate's.
    #[error("certificate and key are not a usable pair: the private key does not belong to the certificate")]
    KeyMismatch,
    /// The private key cannot sign (a kind rustls does not support), or the pair is otherwise
    /// unusable.
    #[error("certificate and key are not a usable pair: {0}")]
    UnusablePair(#[source] rustls::Error),
}

/// The state of the certificate store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CertStatus {
    /// A certificate is in service.
    pub loaded: bool,
    /// The certificate in service.
    pub info: Option<CertInfo>,
    /// The error of the last rejected load.
    pub last_error: Option<String>,
}

struct Inner {
    current: ArcSwapOption<CertifiedKey>,
    status: Mutex<CertStatus>,
    metrics: ReloadMetrics,
    expiry: Gauge,
    ca_pem: Option<String>,
    watch: Mutex<Option<WatchHandle>>,
}

/// The serving certificate store; cheap to clone.
#[derive(Clone)]
pub struct CertStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for CertStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertStore")
            .field("status", &self.status())
            .finish()
    }
}

impl CertStore {
    /// Creates the store from a source. Self-signed generation errors and CA write errors are
    /// fatal; unreadable or invalid files are not (the store starts not ready and waits for
    /// the files to be fixed).
    pub fn new(source: &CertSource, options: WatchOptions) -> Result<Self, Error> {
        match source {
            CertSource::Files { cert, key } => Ok(Self::from_files(cert.clone(), key.clone(), options)),
            CertSource::SelfSigned { dns_names, write_ca } => {
                let ca = SelfSignedCa::load_or_create(write_ca.as_deref())?;
                let bundle = ca.issue(dns_names)?;
                let store = Self::empty(Some(bundle.ca_pem.clone()));
                store
                    .load(bundle.cert_pem.as_bytes(), bundle.key_pem.as_bytes())
                    .map_err(|e| Error::Certificate(e.to_string()))?;
                store.spawn_renewal(ca, dns_names.clone());
                Ok(store)
            }
        }
    }

    /// A store whose certificate is installed by its owner with [`CertStore::install_pem`]
    /// (cluster mode: issued from a CA kept in a Kubernetes Secret). Not loaded until then.
    pub fn manual() -> Self {
        Self::empty(None)
    }

    /// Installs a PEM certificate chain (leaf first) and key for the next handshakes; on error
    /// the certificate in service stays and the error is recorded in [`CertStore::status`].
    pub fn install_pem(&self, chain_pem: &[u8], key_pem: &[u8]) -> Result<CertInfo, TlsError> {
        self.load(chain_pem, key_pem).inspect_err(|error| {
            self.inner.metrics.record(false);
            if let Ok(mut s) = self.inner.status.lock() {
                s.last_error = Some(error.to_string());
            }
        })
    }

    /// Records an error about where the certificate comes from (e.g. a corrupt CA Secret)
    /// without touching the certificate in service; cleared by the next successful install.
    pub fn report_error(&self, error: String) {
        if let Ok(mut s) = self.inner.status.lock() {
            s.last_error = Some(error);
        }
    }

    fn from_files(cert: PathBuf, key: PathBuf, options: WatchOptions) -> Self {
        let store = Self::empty(None);
        let paths = vec![cert, key];
        let initial = watch::read_all(&paths);
        store.load_contents(&paths, initial.clone());
        let weak: Weak<Inner> = Arc::downgrade(&store.inner);
        let watch_paths = paths.clone();
        let handle = watch::spawn(
            "certificate",
            paths,
            options,
            initial,
            move |contents| match weak.upgrade() {
                Some(inner) => {
                    CertStore { inner }.load_contents(&watch_paths, contents);
                    true
                }
                None => false,
            },
        );
        if let Ok(mut w) = store.inner.watch.lock() {
            *w = Some(handle);
        }
        store
    }

    /// Re-issues the self-signed serving certificate at half of its validity (checked hourly).
    /// The thread ends within the hour after the store is dropped.
    fn spawn_renewal(&self, ca: SelfSignedCa, dns_names: Vec<String>) {
        let weak = Arc::downgrade(&self.inner);
        let spawned = std::thread::Builder::new()
            .name("cert-renew".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(3600));
                    let Some(inner) = weak.upgrade() else { return };
                    let now = time::OffsetDateTime::now_utc().unix_timestamp();
                    CertStore { inner }.renew_if_due(&ca, &dns_names, now);
                }
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the certificate renewal thread");
        }
    }

    /// Re-issues the self-signed certificate if less than half of its validity is left at
    /// `now` (Unix seconds). Returns whether it did.
    fn renew_if_due(&self, ca: &SelfSignedCa, dns_names: &[String], now: i64) -> bool {
        let not_after = self.status().info.map_or(0, |i| i.not_after);
        if not_after - now > LEAF_DAYS * 86400 / 2 {
            return false;
        }
        match ca.issue(dns_names).and_then(|b| {
            self.load(b.cert_pem.as_bytes(), b.key_pem.as_bytes())
                .map_err(|e| Error::Certificate(e.to_string()))
        }) {
            Ok(info) => {
                tracing::info!(serial = %info.serial, not_after = %rfc3339(info.not_after), "self-signed serving certificate renewed");
                true
            }
            Err(error) => {
                self.inner.metrics.record(false);
                tracing::error!(%error, "renewing the self-signed serving certificate failed; keeping the current one");
                false
            }
        }
    }

    fn empty(ca_pem: Option<String>) -> Self {
        CertStore {
            inner: Arc::new(Inner {
                current: ArcSwapOption::empty(),
                status: Mutex::new(CertStatus::default()),
                metrics: ReloadMetrics::default(),
                expiry: Gauge::default(),
                ca_pem,
                watch: Mutex::new(None),
            }),
        }
    }

    fn load_contents(&self, paths: &[PathBuf], contents: watch::Contents) {
        let result = contents.and_then(|c| match c.as_slice() {
            [cert, key] => self.load(cert, key).map_err(|e| e.to_string()),
            _ => Err("expected a certificate and a key file".to_owned()),
        });
        let files: Vec<_> = paths.iter().map(|p| p.display().to_string()).collect();
        match result {
            Ok(info) => tracing::info!(?files, subject = %info.subject, serial = %info.serial,
                not_after = %rfc3339(info.not_after), "serving certificate loaded"),
            Err(error) => {
                self.inner.metrics.record(false);
                if let Ok(mut s) = self.inner.status.lock() {
                    s.last_error = Some(error.clone());
                }
                tracing::error!(?files, %error, loaded = self.inner.current.load().is_some(),
                    "serving certificate rejected; keeping the previous one (if any)");
            }
        }
    }

    /// Parses and installs a PEM certificate chain and key.
    fn load(&self, cert_pem: &[u8], key_pem: &[u8]) -> Result<CertInfo, TlsError> {
        let (key, info) = parse_pem_pair(cert_pem, key_pem)?;
        self.inner.current.store(Some(Arc::new(key)));
        self.inner.metrics.record(true);
        self.inner.expiry.set(info.not_after);
        if let Ok(mut s) = self.inner.status.lock() {
            *s = CertStatus {
                loaded: true,
                info: Some(info.clone()),
                last_error: None,
            };
        }
        Ok(info)
    }

    /// The state of the store.
    pub fn status(&self) -> CertStatus {
        self.inner.status.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The self-generated CA certificate (PEM), for the `caBundle`.
    pub fn ca_pem(&self) -> Option<&str> {
        self.inner.ca_pem.as_deref()
    }

    /// The rustls server configuration: TLS 1.2+, ALPN `h2`/`http/1.1`, certificate resolved
    /// from this store on each handshake; clients verified by `clients` when given (see
    /// the `client_auth` module).
    pub fn server_config(
        &self,
        clients: Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>,
    ) -> Result<rustls::ServerConfig, Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| Error::Certificate(format!("TLS configuration: {e}")))?;
        let builder = match clients {
            Some(verifier) => builder.with_client_cert_verifier(verifier),
            None => builder.with_no_client_auth(),
        };
        let mut config = builder.with_cert_resolver(Arc::new(Resolver { store: self.clone() }));
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(config)
    }

    pub(crate) fn register_metrics(&self, registry: &mut Registry) {
        self.inner
            .metrics
            .register(registry, "sidecar_injector_certificate", "serving certificate");
        registry.register(
            "sidecar_injector_certificate_expiry_timestamp_seconds",
            "Expiry (notAfter) of the serving certificate in service, Unix seconds.",
            self.inner.expiry.clone(),
        );
    }
}

struct Resolver {
    store: CertStore,
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Resolver")
    }
}

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.store.inner.current.load_full()
    }
}

/// Parses a PEM certificate chain (leaf first) and private key, checking that they match.
pub fn parse_pem_pair(cert_pem: &[u8], key_pem: &[u8]) -> Result<(CertifiedKey, CertInfo), TlsError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(TlsError::CertificatePem)?;
    let Some(leaf) = chain.first() else {
        return Err(TlsError::NoCertificate);
    };
    let info = cert_info(leaf)?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(TlsError::KeyPem)?;
    let provider = rustls::crypto::ring::default_provider();
    let certified = CertifiedKey::from_der(chain, key, &provider).map_err(|e| match e {
        rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => TlsError::KeyMismatch,
        other => TlsError::UnusablePair(other),
    })?;
    Ok((certified, info))
}

/// A PEM error as text: the library's own message prints the offending line as a byte array
/// (`[45, 45, 45, ...]`); this one quotes it.
fn pem_error_text(error: &rustls_pki_types::pem::Error) -> String {
    use rustls_pki_types::pem::Error;
    match error {
        Error::MissingSectionEnd { end_marker } => {
            format!(
                "the {:?} section has no END line (file cut short?)",
                String::from_utf8_lossy(end_marker)
            )
        }
        Error::IllegalSectionStart { line } => {
            format!("illegal section start line {:?}", String::from_utf8_lossy(line))
        }
        Error::NoItemsFound => "no PEM section found".to_owned(),
        other => other.to_string(),
    }
}

/// A generated CA and serving certificate, PEM.
#[derive(Debug, Clone)]
pub struct SelfSignedBundle {
    /// The CA certificate.
    pub ca_pem: String,
    /// The serving certificate followed by the CA.
    pub cert_pem: String,
    /// The serving key (PKCS#8).
    pub key_pem: String,
}

const DAY: time::Duration = time::Duration::days(1);

/// Generates (or, with `write_ca` holding a CA valid for 30 more days and its key, reuses) a CA
/// and issues a serving certificate for `localhost`, `127.0.0.1`, `::1` and `dns_names`.
#[cfg(test)]
pub fn self_signed(dns_names: &[String], write_ca: Option<&Path>) -> Result<SelfSignedBundle, Error> {
    SelfSignedCa::load_or_create(write_ca)?.issue(dns_names)
}

/// Validity of a self-signed serving certificate; it is re-issued at half of it.
const LEAF_DAYS: i64 = 90;

fn gen_err(e: injector_pki::PkiError) -> Error {
    Error::Certificate(format!("generating the self-signed certificate: {e}"))
}

/// The self-signed CA, kept in memory to re-issue the serving certificate.
#[derive(Debug)]
pub struct SelfSignedCa {
    ca: SigningCa,
}

impl SelfSignedCa {
    /// Reuses the CA at `write_ca` (and its key at `<write_ca>.key`) if it is valid for 30 more
    /// days; otherwise generates a CA valid one year and writes it there. A key that is not
    /// safe to use (see [`crate::ca_files`]) is an error, and nothing is overwritten.
    pub fn load_or_create(write_ca: Option<&Path>) -> Result<Self, Error> {
        let now = time::OffsetDateTime::now_utc();
        let reuse_until = (now + time::Duration::days(30)).unix_timestamp();
        let reused = match write_ca {
            Some(path) => crate::ca_files::read(path, reuse_until)
                .map_err(|e| Error::Certificate(format!("--write-ca: {e}")))?
                .map(|stored| {
                    SigningCa::new(&CaMaterial {
                        cert_pem: stored.cert_pem,
                        key_pem: stored.key_pem,
                    })
                    .map_err(gen_err)
                })
                .transpose()?,
            None => None,
        };
        let ca = match reused {
            Some(ca) => ca,
            None => {
                let generated = injector_pki::generate_ca(
                    "sidecar-injector self-signed CA",
                    now - time::Duration::minutes(5),
                    now + DAY * 365,
                )
                .map_err(gen_err)?;
                if let Some(path) = write_ca {
                    crate::ca_files::write(path, &generated.cert_pem, &generated.key_pem)
                        .map_err(|e| Error::Io(format!("--write-ca: writing the CA: {e}")))?;
                }
                SigningCa::new(&generated).map_err(gen_err)?
            }
        };
        let der = CertificateDer::from_pem_slice(ca.cert_pem().as_bytes())
            .map_err(|e| Error::Certificate(format!("CA PEM: {e}")))?;
        // The CA is named by its file and a one-line fingerprint; its PEM never goes into a log
        // line (a multi-line value breaks line-oriented log collectors).
        match write_ca {
            Some(path) => tracing::info!(
                ca_file = %path.display(),
                ca_sha256 = %fingerprint(der.as_ref()),
                "self-signed CA ready; trust this file (caBundle, curl --cacert) to call the webhook"
            ),
            None => tracing::info!(
                ca_sha256 = %fingerprint(der.as_ref()),
                "self-signed CA ready; pass --write-ca FILE to save it for the webhook's caBundle or curl --cacert"
            ),
        }
        Ok(SelfSignedCa { ca })
    }

    /// The CA certificate, PEM.
    pub fn pem(&self) -> &str {
        self.ca.cert_pem()
    }

    /// Issues a serving certificate (90 days, never beyond the CA) for `localhost`,
    /// `127.0.0.1`, `::1` and `dns_names`; CN is the first DNS name, else `localhost`.
    pub fn issue(&self, dns_names: &[String]) -> Result<SelfSignedBundle, Error> {
        let now = time::OffsetDateTime::now_utc();
        let mut names = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
        for n in dns_names {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
        let common_name = dns_names.first().map_or("localhost", String::as_str);
        let leaf = self
            .ca
            .issue(
                &names,
                common_name,
                now - time::Duration::minutes(5),
                now + time::Duration::days(LEAF_DAYS),
            )
            .map_err(gen_err)?;
        tracing::info!(dns_names = ?names, not_after = %rfc3339(leaf.not_after),
            "self-signed serving certificate issued");
        Ok(SelfSignedBundle {
            cert_pem: leaf.chain_pem,
            ca_pem: self.pem().to_owned(),
            key_pem: leaf.key_pem,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_signed_is_valid_and_reused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ca = dir.path().join("ca.pem");
        let a = self_signed(&["svc.ns.svc".into()], Some(&ca)).expect("generates");
        assert_eq!(std::fs::read_to_string(&ca).expect("ca written"), a.ca_pem);
        let (_, info) = parse_pem_pair(a.cert_pem.as_bytes(), a.key_pem.as_bytes()).expect("parses");
        assert_eq!(info.subject, "CN=svc.ns.svc");
        let days = (info.not_after - time::OffsetDateTime::now_utc().unix_timestamp()) / 86400;
        assert!((88..=90).contains(&days), "{days}");
        let b = self_signed(&[], Some(&ca)).expect("generates");
        assert_eq!(a.ca_pem, b.ca_pem, "CA reused");
        assert_ne!(a.key_pem, b.key_pem, "new serving key");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(crate::ca_files::key_path(&ca))
                .expect("key written")
                .permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn pem_errors_quote_the_offending_text() {
        let a = self_signed(&[], None).expect("generates");
        let cut = a.cert_pem.lines().take(3).collect::<Vec<_>>().join("\n");
        let error = parse_pem_pair(cut.as_bytes(), a.key_pem.as_bytes())
            .expect_err("a cut PEM fails")
            .to_string();
        assert_eq!(
            error,
            "certificate PEM does not parse: the \"CERTIFICATE\" section has no END line (file cut short?)"
        );
        let error = parse_pem_pair(b"-----BEGIN CERT\nAAAA\n", a.key_pem.as_bytes())
            .expect_err("fails")
            .to_string();
        assert!(error.contains("\"-----BEGIN CERT\""), "{error}");
        assert!(!error.contains("[45, 45"), "{error}");
        let error = parse_pem_pair(a.cert_pem.as_bytes(), b"not a key").expect_err("fails");
        assert!(matches!(error, TlsError::KeyPem(_)), "{error:?}");
        assert_eq!(
            error.to_string(),
            "private key PEM does not parse: no PEM section found"
        );
    }

    #[test]
    fn half_written_and_mismatched_pairs_are_rejected() {
        let a = self_signed(&[], None).expect("generates");
        let b = self_signed(&[], None).expect("generates");
        let half = &a.cert_pem.as_bytes()[..200];
        assert!(parse_pem_pair(half, a.key_pem.as_bytes()).is_err());
        assert!(parse_pem_pair(a.cert_pem.as_bytes(), &a.key_pem.as_bytes()[..40]).is_err());
        assert!(matches!(
            parse_pem_pair(b"", a.key_pem.as_bytes()),
            Err(TlsError::NoCertificate)
        ));
        let err = parse_pem_pair(a.cert_pem.as_bytes(), b.key_pem.as_bytes()).expect_err("another key");
        assert!(matches!(err, TlsError::KeyMismatch), "{err:?}");
        assert_eq!(
            err.to_string(),
            "certificate and key are not a usable pair: the private key does not belong to the certificate"
        );
    }

    #[test]
    fn self_signed_leaf_is_renewed_at_half_life() {
        let ca = SelfSignedCa::load_or_create(None).expect("CA");
        let source = CertSource::SelfSigned {
            dns_names: vec![],
            write_ca: None,
        };
        let store = CertStore::new(&source, WatchOptions::default()).expect("store");
        let before = store.status().info.expect("loaded");
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        assert!(!store.renew_if_due(&ca, &[], now), "fresh certificate is kept");
        assert!(store.renew_if_due(&ca, &["x.svc".into()], now + 50 * 86400));
        let after = store.status().info.expect("loaded");
        assert_ne!(before.serial, after.serial);
        assert_eq!(after.subject, "CN=x.svc");
    }
}
