//! What cluster mode knows about itself, for `/readyz`'s `cluster` section and `/metrics`.

use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde::Serialize;

/// One webhook configuration of ours, as last seen.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct WebhookStatus {
    /// The MutatingWebhookConfiguration.
    pub name: String,
    /// Its webhooks whose caBundle differs from ours.
    pub stale: Vec<String>,
}

/// The state shown on `/readyz`.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// `self-managed` or `external`.
    pub certificates: String,
    /// This replica's Lease identity.
    pub identity: String,
    /// Whether it holds the Lease (and so patches caBundles and rotates the CA).
    pub leader: bool,
    /// Why the Lease cannot be used, if it cannot (then no replica leads).
    pub lease_error: Option<String>,
    /// The Secret holding the CA (or, external, the serving certificate).
    pub secret: String,
    /// Fingerprints (SHA-256) of the CAs in the bundle, current first.
    pub bundle: Vec<String>,
    /// The CA that signed the certificate this replica serves.
    pub serving_ca: Option<String>,
    /// What is wrong with the Secret, if anything (it is then never overwritten).
    pub secret_error: Option<String>,
    /// Our webhook configurations (only their webhooks that point at the injector).
    pub webhooks: Vec<WebhookStatus>,
    /// Webhooks of selected configurations that point elsewhere: never written, never waited
    /// for.
    pub foreign_webhooks: Vec<crate::webhooks::ForeignWebhook>,
    /// The last caBundle patch error.
    pub last_patch_error: Option<String>,
    /// Native sidecars as `auto` decided from the nodes (`None`: not automatic).
    pub native_sidecars_auto: Option<bool>,
    /// The synthetic admission probe (`None`: off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<crate::probe::state::ProbeStatus>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

/// Cluster mode's metrics.
#[derive(Debug, Clone, Default)]
pub struct ClusterMetrics {
    leader: Gauge,
    patches: Family<ResultLabel, Counter>,
    rotations: Counter,
    ca_expiry: Gauge,
    stale: Gauge,
}

impl ClusterMetrics {
    /// Adds them to the server's registry.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "sidecar_injector_leader",
            "1 while this replica holds the Lease (patches caBundles, rotates the CA).",
            self.leader.clone(),
        );
        registry.register(
            "sidecar_injector_cabundle_patches",
            "Server-side applies of our webhooks' caBundle, by result.",
            self.patches.clone(),
        );
        registry.register(
            "sidecar_injector_ca_rotation_steps",
            "Steps of CA rotation written to the CA Secret.",
            self.rotations.clone(),
        );
        registry.register(
            "sidecar_injector_ca_expiry_timestamp_seconds",
            "Expiry (notAfter) of the CA that signs the serving certificate, Unix seconds.",
            self.ca_expiry.clone(),
        );
        registry.register(
            "sidecar_injector_webhooks_stale_cabundle",
            "Webhooks of ours whose caBundle differs from the injector's CA bundle.",
            self.stale.clone(),
        );
    }
}

/// Status and metrics, shared by the tasks; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Shared {
    status: Arc<Mutex<ClusterStatus>>,
    /// The metrics.
    pub metrics: ClusterMetrics,
}

impl Shared {
    /// Changes the status.
    pub fn update(&self, f: impl FnOnce(&mut ClusterStatus)) {
        if let Ok(mut s) = self.status.lock() {
            f(&mut s);
            self.metrics.leader.set(i64::from(s.leader));
            let stale: usize = s.webhooks.iter().map(|w| w.stale.len()).sum();
            self.metrics.stale.set(i64::try_from(stale).unwrap_or(i64::MAX));
        }
    }

    /// A copy of the status.
    pub fn snapshot(&self) -> ClusterStatus {
        self.status.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Counts a caBundle patch.
    pub fn patched(&self, ok: bool) {
        self.metrics
            .patches
            .get_or_create(&ResultLabel {
                result: if ok { "success" } else { "failure" },
            })
            .inc();
    }

    /// Counts a rotation step.
    pub fn rotated(&self) {
        self.metrics.rotations.inc();
    }

    /// Sets the serving CA's expiry.
    pub fn ca_expiry(&self, not_after: i64) {
        self.metrics.ca_expiry.set(not_after);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::state::{ProbeStatus, TargetStatus};
    use crate::probe::{Expect, ProbeTarget};

    #[test]
    fn readyz_shows_the_probe_only_when_it_is_on() {
        let shared = Shared::default();
        let json = serde_json::to_value(shared.snapshot()).unwrap();
        assert!(json.get("probe").is_none(), "{json}");
        shared.update(|s| {
            s.probe = Some(ProbeStatus {
                probing: false,
                interval_seconds: 30.0,
                timeout_seconds: 15.0,
                targets: vec![TargetStatus::new(&ProbeTarget {
                    namespace: "probe".into(),
                    expect: Expect::Injected,
                })],
            });
        });
        let json = serde_json::to_value(shared.snapshot()).unwrap();
        assert_eq!(json["probe"]["probing"], false);
        assert_eq!(json["probe"]["intervalSeconds"], 30.0);
        assert_eq!(json["probe"]["targets"][0]["namespace"], "probe");
        assert_eq!(json["probe"]["targets"][0]["state"], "pending");
    }
}
