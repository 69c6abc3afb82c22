//! Readiness: ready once a configuration and a certificate are loaded and the HTTPS listener
//! accepts connections; not ready again while draining for shutdown.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;

use crate::config_store::ReloadStatus;
use crate::extension::Extension;
use crate::tls::CertStatus;

/// Listener flags shared by the servers.
#[derive(Debug, Clone, Default)]
pub(crate) struct Readiness {
    listening: Arc<AtomicBool>,
    draining: Arc<AtomicBool>,
    extension: Extension,
}

impl Readiness {
    /// Readiness whose detail also carries the extension's status section.
    pub fn with_extension(extension: Extension) -> Self {
        Readiness {
            extension,
            ..Readiness::default()
        }
    }

    pub fn set_listening(&self) {
        self.listening.store(true, Ordering::SeqCst);
    }

    pub fn set_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// `(ready, JSON detail)`.
    pub fn report(&self, config: &ReloadStatus, cert: &CertStatus) -> (bool, String) {
        let listening = self.listening.load(Ordering::SeqCst);
        let draining = self.draining.load(Ordering::SeqCst);
        let ready = config.loaded && cert.loaded && listening && !draining;
        let mut detail = json!({
            "ready": ready,
            "listening": listening,
            "draining": draining,
            "config": {
                "loaded": config.loaded,
                "generation": config.generation,
                "lastReloadError": config.last_error,
            },
            "certificate": {
                "loaded": cert.loaded,
                "subject": cert.info.as_ref().map(|i| i.subject.clone()),
                "serial": cert.info.as_ref().map(|i| i.serial.clone()),
                "notAfter": cert.info.as_ref().map(|i| i.not_after),
                "lastReloadError": cert.last_error,
            },
        });
        if let (Some((name, status)), Some(map)) = (self.extension.status(), detail.as_object_mut()) {
            map.insert(name.to_owned(), status);
        }
        (ready, detail.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_needs_everything() {
        let r = Readiness::default();
        let config = ReloadStatus {
            loaded: true,
            generation: 1,
            ..Default::default()
        };
        let cert = CertStatus {
            loaded: true,
            ..Default::default()
        };
        assert!(!r.report(&config, &cert).0, "not listening yet");
        r.set_listening();
        assert!(r.report(&config, &cert).0);
        let bad = ReloadStatus {
            last_error: Some("boom".into()),
            ..config.clone()
        };
        let (ready, detail) = r.report(&bad, &cert);
        assert!(ready, "a rejected reload keeps the last good config");
        assert!(detail.contains("\"lastReloadError\":\"boom\""), "{detail}");
        assert!(!r.report(&ReloadStatus::default(), &cert).0);
        r.set_draining();
        assert!(!r.report(&config, &cert).0);
    }
}
