//! The checks, in the order of the troubleshooting page. Each is a function from the
//! [`Snapshot`] to one [`Check`]; [`run`] makes the report.

pub mod blast_radius;
pub mod ca_bundle;
pub mod deadlock;
pub mod endpoints;
pub mod expiry;
pub mod failed_creates;
pub mod foreign;
pub mod placement;
pub mod policy;
pub mod probe;
pub mod scope;

#[cfg(test)]
pub(crate) mod fixtures;

use injector_core::gate::{NamespaceFacts, WebhookConfiguration};
use k8s_openapi::api::{admissionregistration::v1::MutatingWebhookConfiguration, core::v1::Namespace};

use crate::{Check, Report, Snapshot, webhooks};

/// Runs every check.
pub fn run(snapshot: &Snapshot) -> Report {
    let mut checks = vec![
        scope::check(snapshot),
        policy::check(snapshot),
        placement::check(snapshot),
        ca_bundle::check(snapshot),
        endpoints::check(snapshot),
        failed_creates::check(snapshot),
        expiry::check(snapshot),
        deadlock::check(snapshot),
    ];
    if let Some(probe) = probe::check(snapshot) {
        checks.push(probe);
    }
    checks.push(blast_radius::check(snapshot));
    if let Some(foreign) = foreign::check(snapshot) {
        checks.push(foreign);
    }
    Report::new(checks)
}

/// Only the blast radius (`doctor --blast-radius`).
pub fn run_blast_radius(snapshot: &Snapshot) -> Report {
    Report::new(vec![blast_radius::check(snapshot)])
}

/// The injector's configurations as read, or why they cannot be: those selected by name or
/// label with at least one webhook pointing at the injector (a configuration whose webhooks all
/// point elsewhere is someone else's; the foreign check reports it).
pub(crate) fn ours(snapshot: &Snapshot) -> Result<Vec<&MutatingWebhookConfiguration>, &crate::ReadFailure> {
    let endpoint = snapshot.settings.endpoint();
    snapshot.webhook_configurations.as_ref().map(|all| {
        all.iter()
            .filter(|c| webhooks::is_ours(c, &snapshot.settings))
            .filter(|c| c.webhooks.iter().flatten().any(|w| endpoint.receives(w)))
            .collect()
    })
}

/// A namespace as the API server's selectors see it.
pub(crate) fn namespace_facts(namespace: &Namespace) -> NamespaceFacts {
    let name = namespace.metadata.name.clone().unwrap_or_default();
    NamespaceFacts::new(&name, namespace.metadata.labels.clone().unwrap_or_default())
}

/// A configuration in the decision logic's terms (its selectors parsed); `Err` names the field.
pub(crate) fn gate_configuration(
    configuration: &MutatingWebhookConfiguration,
) -> Result<WebhookConfiguration, String> {
    let value = serde_json::to_value(configuration).map_err(|e| e.to_string())?;
    let name = configuration.metadata.name.as_deref().unwrap_or_default();
    WebhookConfiguration::from_object(&value).map_err(|e| format!("MutatingWebhookConfiguration {name}: {e}"))
}

/// A namespace by name, for the focus and the probe.
pub(crate) fn namespace_named<'a>(snapshot: &'a Snapshot, name: &str) -> Option<&'a Namespace> {
    snapshot
        .namespaces
        .as_ref()
        .ok()?
        .iter()
        .find(|n| n.metadata.name.as_deref() == Some(name))
}

/// The check every webhook check returns when there is no configuration of ours to check.
pub(crate) fn no_webhooks(id: &'static str, title: &'static str, snapshot: &Snapshot) -> Check {
    match ours(snapshot) {
        Err(failure) => Check::unknown(id, title, failure),
        Ok(_) => Check::new(
            id,
            title,
            crate::Verdict::Unknown,
            "no webhook configuration of ours to check (see the first check)",
        ),
    }
}
