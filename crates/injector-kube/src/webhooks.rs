//! Which MutatingWebhookConfigurations are ours, whether they trust a CA, and the
//! server-side-apply patch that gives them our caBundle. Pure.
//!
//! A configuration is selected by name or by labels; of a selected configuration, only the
//! webhooks that point at the injector ([`InjectorEndpoint`]: its Service, or a url to a name its
//! certificate is for) are ours. Anyone who may label a configuration can get it selected, so
//! the others are only reported: never written, never waited for by a CA rotation.
//!
//! Only `webhooks[*].clientConfig.caBundle` of our webhooks is ever written, with our own field
//! manager: a GitOps tool or Helm owning the rest of the object keeps owning it, and never
//! fights us for a field it does not set.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use serde_json::{Value, json};

pub use injector_doctor::webhooks::{ForeignWebhook, InjectorEndpoint};

use crate::ca_set::bundle_fingerprints;

/// The field manager of every write the injector makes.
pub const FIELD_MANAGER: &str = "sidecar-injector";

/// Which webhook configurations carry our caBundle: those named, and those whose labels
/// include all of `labels` (when any are given).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebhookSelection {
    /// Configurations by name.
    pub names: BTreeSet<String>,
    /// Configurations by labels (all must match; empty: none are selected by labels).
    pub labels: BTreeMap<String, String>,
}

impl WebhookSelection {
    /// Istio's: the revision's own configuration (`istio-sidecar-injector`, `-REV` for a
    /// revision other than `default`) and every configuration labelled `istio.io/rev=REV`,
    /// which includes the revision tags (`istio-revision-tag-NAME`) pointing at it.
    pub fn istio(revision: &str) -> Self {
        let name = if revision.is_empty() || revision == "default" {
            "istio-sidecar-injector".to_owned()
        } else {
            format!("istio-sidecar-injector-{revision}")
        };
        let rev = if revision.is_empty() { "default" } else { revision };
        WebhookSelection {
            names: BTreeSet::from([name]),
            labels: BTreeMap::from([("istio.io/rev".to_owned(), rev.to_owned())]),
        }
    }

    /// Whether `mwc` is one of ours.
    pub fn selects(&self, mwc: &MutatingWebhookConfiguration) -> bool {
        let name = mwc.metadata.name.as_deref().unwrap_or_default();
        if self.names.contains(name) {
            return true;
        }
        if self.labels.is_empty() {
            return false;
        }
        let labels = mwc.metadata.labels.as_ref();
        self.labels
            .iter()
            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
    }

    /// How the selection reads in logs and messages.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self.names.iter().map(|n| format!("name={n}")).collect();
        if !self.labels.is_empty() {
            let labels: Vec<String> = self.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            parts.push(format!("labels {}", labels.join(",")));
        }
        parts.join(" or ")
    }
}

/// The selected configurations, split by where their webhooks point.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Claimed {
    /// Each selected configuration with only its webhooks that point at the injector (one with
    /// none is left out).
    pub ours: Vec<MutatingWebhookConfiguration>,
    /// Every other webhook of a selected configuration.
    pub foreign: Vec<ForeignWebhook>,
}

/// Splits the configurations `selection` selects into our webhooks and the foreign ones.
pub fn claim<'a>(
    configurations: impl IntoIterator<Item = &'a MutatingWebhookConfiguration>,
    selection: &WebhookSelection,
    endpoint: &InjectorEndpoint,
) -> Claimed {
    let selected: Vec<&MutatingWebhookConfiguration> = configurations
        .into_iter()
        .filter(|m| selection.selects(m))
        .collect();
    Claimed {
        ours: selected
            .iter()
            .filter_map(|m| injector_doctor::webhooks::only_receiving(m, endpoint))
            .collect(),
        foreign: injector_doctor::webhooks::foreign_webhooks(selected.iter().copied(), endpoint),
    }
}

/// Whether every webhook of every configuration trusts the CA with this fingerprint.
pub fn every_webhook_trusts(configs: &[MutatingWebhookConfiguration], fingerprint: &str) -> bool {
    configs.iter().all(|mwc| {
        mwc.webhooks.iter().flatten().all(|w| {
            let bundle = w
                .client_config
                .ca_bundle
                .as_ref()
                .map(|b| b.0.as_slice())
                .unwrap_or_default();
            bundle_fingerprints(bundle).iter().any(|f| f == fingerprint)
        })
    })
}

/// The webhooks of `mwc` whose caBundle is not exactly `bundle`.
pub fn stale_webhooks(mwc: &MutatingWebhookConfiguration, bundle: &[u8]) -> Vec<String> {
    mwc.webhooks
        .iter()
        .flatten()
        .filter(|w| w.client_config.ca_bundle.as_ref().map(|b| b.0.as_slice()) != Some(bundle))
        .map(|w| w.name.clone())
        .collect()
}

/// The server-side-apply body that sets the caBundle of every webhook of `mwc` to `bundle`,
/// or `None` when they all have it already.
pub fn ca_bundle_patch(mwc: &MutatingWebhookConfiguration, bundle: &[u8]) -> Option<Value> {
    if stale_webhooks(mwc, bundle).is_empty() {
        return None;
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(bundle);
    let webhooks: Vec<Value> = mwc
        .webhooks
        .iter()
        .flatten()
        .map(|w| json!({"name": w.name, "clientConfig": {"caBundle": encoded}}))
        .collect();
    Some(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": mwc.metadata.name},
        "webhooks": webhooks,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mwc(name: &str, labels: &[(&str, &str)], bundles: &[Option<&[u8]>]) -> MutatingWebhookConfiguration {
        let webhooks: Vec<Value> = bundles
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let mut cc = json!({"url": "https://127.0.0.1:1/inject"});
                if let Some(b) = b {
                    cc["caBundle"] = json!(base64::engine::general_purpose::STANDARD.encode(b));
                }
                json!({"name": format!("w{i}.example.com"), "clientConfig": cc,
                       "admissionReviewVersions": ["v1"], "sideEffects": "None"})
            })
            .collect();
        let labels: BTreeMap<&str, &str> = labels.iter().copied().collect();
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "webhooks": webhooks}))
            .expect("mwc")
    }

    #[test]
    fn istio_selection_covers_revision_and_tags() {
        let s = WebhookSelection::istio("default");
        assert!(s.selects(&mwc("istio-sidecar-injector", &[], &[])));
        assert!(s.selects(&mwc(
            "istio-revision-tag-prod",
            &[("istio.io/rev", "default"), ("istio.io/tag", "prod")],
            &[]
        )));
        assert!(!s.selects(&mwc(
            "istio-sidecar-injector-canary",
            &[("istio.io/rev", "canary")],
            &[]
        )));
        let c = WebhookSelection::istio("canary");
        assert!(c.selects(&mwc("istio-sidecar-injector-canary", &[], &[])));
        assert!(c.selects(&mwc("x", &[("istio.io/rev", "canary")], &[])));
        assert!(!c.selects(&mwc(
            "istio-sidecar-injector",
            &[("istio.io/rev", "default")],
            &[]
        )));
        let by_name = WebhookSelection {
            names: BTreeSet::from(["mine".to_owned()]),
            labels: BTreeMap::new(),
        };
        assert!(
            !by_name.selects(&mwc("other", &[("istio.io/rev", "default")], &[])),
            "no labels: names only"
        );
    }

    #[test]
    fn only_webhooks_pointing_at_us_are_claimed_patched_and_waited_for() {
        let now = time::OffsetDateTime::now_utc();
        let ca = injector_pki::generate_ca("test", now, now + time::Duration::hours(1)).expect("ca");
        let pem = ca.cert_pem.as_bytes();
        let endpoint = InjectorEndpoint::new("istio-system", "istiod", &["127.0.0.1".into()]);
        let selection = WebhookSelection::istio("default");
        let ours = mwc("istio-sidecar-injector", &[], &[Some(pem)]);
        let mut tag = mwc(
            "istio-revision-tag-prod",
            &[("istio.io/rev", "default")],
            &[Some(pem), None],
        );
        if let Some(w) = tag.webhooks.as_mut().and_then(|w| w.get_mut(1)) {
            w.client_config.url = Some("https://hooks.example.com/x".into());
        }
        let mut foreign = mwc("not-istio", &[("istio.io/rev", "default")], &[Some(b"theirs")]);
        if let Some(w) = foreign.webhooks.as_mut().and_then(|w| w.first_mut()) {
            w.client_config.url = None;
            w.client_config.service =
                Some(serde_json::from_value(json!({"namespace": "other", "name": "hooks"})).expect("svc"));
        }
        let unselected = mwc("unrelated", &[], &[None]);
        let claimed = claim([&ours, &tag, &foreign, &unselected], &selection, &endpoint);
        let names: Vec<_> = claimed
            .ours
            .iter()
            .map(|m| m.metadata.name.clone().unwrap_or_default())
            .collect();
        assert_eq!(names, ["istio-sidecar-injector", "istio-revision-tag-prod"]);
        assert_eq!(
            claimed.ours[1].webhooks.as_ref().map(Vec::len),
            Some(1),
            "only w0 of the tag is ours"
        );
        let foreign_names: Vec<_> = claimed
            .foreign
            .iter()
            .map(|f| format!("{}/{}", f.configuration, f.webhook))
            .collect();
        assert_eq!(
            foreign_names,
            [
                "istio-revision-tag-prod/w1.example.com",
                "not-istio/w0.example.com"
            ]
        );
        // The CA is in every webhook of ours: a rotation does not wait for the foreign ones.
        let fingerprint = &bundle_fingerprints(pem)[0];
        assert!(every_webhook_trusts(&claimed.ours, fingerprint));
        assert!(!every_webhook_trusts(&[tag.clone()], fingerprint));
        // The patch names only our webhook of the tag.
        let patch = ca_bundle_patch(&claimed.ours[1], b"new").expect("patch");
        assert_eq!(patch["webhooks"].as_array().map(Vec::len), Some(1));
        assert_eq!(patch["webhooks"][0]["name"], "w0.example.com");
    }

    #[test]
    fn patch_only_when_a_bundle_differs_and_names_every_webhook() {
        let empty = mwc("m", &[], &[None, Some(b"old")]);
        let patch = ca_bundle_patch(&empty, b"new").expect("patch");
        assert_eq!(patch["metadata"]["name"], "m");
        assert_eq!(patch["webhooks"][1]["name"], "w1.example.com");
        assert_eq!(patch["webhooks"][0]["clientConfig"]["caBundle"], "bmV3");
        assert_eq!(
            patch["webhooks"][0].as_object().map(|o| o.len()),
            Some(2),
            "nothing but name and caBundle"
        );
        let done = mwc("m", &[], &[Some(b"new"), Some(b"new")]);
        assert_eq!(ca_bundle_patch(&done, b"new"), None);
        assert_eq!(
            stale_webhooks(&empty, b"new"),
            vec!["w0.example.com", "w1.example.com"]
        );
    }
}
