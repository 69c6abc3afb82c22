//! The webhooks that are selected as the injector's (by name or by the `istio.io/rev` label)
//! but do not point at it. Anyone who may label a configuration can make it look like one of
//! ours; the injector never writes such a webhook and never waits for it, and this check says
//! which ones it leaves alone. Shown only when there is one.

use injector_core::shell;

use crate::{Check, Snapshot, Verdict, webhooks};

const ID: &str = "foreign";
const TITLE: &str = "selected webhooks point at the injector";

/// Runs the check: `None` when every selected webhook points at the injector (or the
/// configurations could not be read; the other checks say so).
pub fn check(snapshot: &Snapshot) -> Option<Check> {
    let all = snapshot.webhook_configurations.as_ref().ok()?;
    let endpoint = snapshot.settings.endpoint();
    let selected = all.iter().filter(|c| webhooks::is_ours(c, &snapshot.settings));
    let foreign = webhooks::foreign_webhooks(selected, &endpoint);
    if foreign.is_empty() {
        return None;
    }
    let mut check = Check::new(
        ID,
        TITLE,
        Verdict::Warning,
        format!(
            "{} webhook(s) selected as the injector's point elsewhere; the injector never writes their caBundle and does not wait for them",
            foreign.len()
        ),
    );
    for f in &foreign {
        check.evidence.push(format!(
            "{}/{}: {}, not the injector ({})",
            f.configuration,
            f.webhook,
            f.target,
            endpoint.describe()
        ));
    }
    check.fixes.push(format!(
        "if it is not meant to be the injector's, remove the label: {}",
        shell::command([
            "kubectl",
            "label",
            "mutatingwebhookconfiguration",
            &foreign[0].configuration,
            "istio.io/rev-",
        ])
    ));
    check.fixes.push(
        "if it is, point it at the injector's Service (or pass the injector's names with --service-name/--dns-name)"
            .to_owned(),
    );
    Some(check)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::fixtures::{configuration, empty, object, url_webhook};
    use serde_json::json;

    #[test]
    fn a_labelled_configuration_pointing_elsewhere_is_reported_and_left_out() {
        let mut snapshot = empty();
        assert_eq!(check(&snapshot), None, "nothing selected: no check");
        let ours = configuration(
            "istio-sidecar-injector",
            vec![url_webhook("https://127.0.0.1:1/inject", "")],
        );
        let foreign: k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration = object(
            json!({
            "metadata": {"name": "not-istio", "labels": {"istio.io/rev": "default"}},
            "webhooks": [{"name": "x.example.com", "clientConfig": {"service": {"namespace": "other", "name": "hooks"}},
                          "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}),
        );
        snapshot.webhook_configurations = Ok(vec![ours, foreign]);
        assert_eq!(check(&snapshot).map(|c| c.verdict), Some(Verdict::Warning));
        let found = check(&snapshot).expect("reported");
        assert_eq!(found.evidence.len(), 1, "{:?}", found.evidence);
        assert!(
            found.evidence[0].starts_with("not-istio/x.example.com: service other/hooks:443, not the injector (service istio-system/istiod"),
            "{}",
            found.evidence[0]
        );
        assert!(
            found.fixes[0].contains("kubectl label mutatingwebhookconfiguration not-istio istio.io/rev-")
        );
        let names: Vec<_> = crate::checks::ours(&snapshot)
            .expect("read")
            .iter()
            .map(|c| c.metadata.name.clone().unwrap_or_default())
            .collect();
        assert_eq!(
            names,
            ["istio-sidecar-injector"],
            "the foreign one is not checked as ours"
        );
    }
}
