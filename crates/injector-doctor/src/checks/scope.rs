//! Check 1: the webhook configuration exists; each webhook's namespaceSelector mode (opt-in or
//! opt-out); the namespaces with their injection labels, as `kubectl get ns -L istio-injection`
//! shows them, and which are in scope.

use injector_core::{
    gate::{self, WebhookConfiguration},
    selector::{LabelSelector, Operator},
    shell,
};

use super::{gate_configuration, namespace_facts, ours};
use crate::{Check, Snapshot, Verdict, webhooks::istio_configuration_name};

const ID: &str = "webhooks";
const TITLE: &str = "webhook configuration and namespaces in scope";

/// How a webhook chooses pods: by namespace (opt-in or opt-out), or per pod by its objectSelector.
pub fn mode(selector: &LabelSelector, object_selector: &LabelSelector) -> &'static str {
    if !object_selector.matches(&Default::default()) {
        return "opt-in per pod (objectSelector)";
    }
    if selector.is_empty() {
        return "every namespace";
    }
    let opt_out = selector
        .requirements()
        .iter()
        .all(|r| matches!(r.operator, Operator::NotIn | Operator::DoesNotExist));
    if opt_out { "opt-out" } else { "opt-in" }
}

/// Runs the check.
pub fn check(snapshot: &Snapshot) -> Check {
    let configurations = match ours(snapshot) {
        Ok(found) => found,
        Err(failure) => return Check::unknown(ID, TITLE, failure),
    };
    let revision = &snapshot.settings.revision;
    if configurations.is_empty() {
        let mut check = Check::new(
            ID,
            TITLE,
            Verdict::Error,
            format!(
                "no MutatingWebhookConfiguration of revision {revision} ({} or labelled istio.io/rev={revision}): no pod is ever sent to the injector",
                istio_configuration_name(revision)
            ),
        );
        let all: Vec<String> = snapshot
            .webhook_configurations
            .iter()
            .flatten()
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        check.evidence.push(format!(
            "MutatingWebhookConfigurations in the cluster: {}",
            if all.is_empty() {
                "none".to_owned()
            } else {
                all.join(", ")
            }
        ));
        check
            .fixes
            .push("kubectl get mutatingwebhookconfigurations".to_owned());
        check.fixes.push(
            "install the webhook configuration (istioctl install, Istio's chart, or this project's deploy/)"
                .to_owned(),
        );
        return check;
    }
    let mut check = Check::new(ID, TITLE, Verdict::Ok, "");
    let mut parsed: Vec<WebhookConfiguration> = Vec::new();
    for configuration in &configurations {
        match gate_configuration(configuration) {
            Ok(gate) => parsed.push(gate),
            Err(error) => {
                check.raise(Verdict::Error);
                check.evidence.push(error);
            }
        }
    }
    for configuration in &parsed {
        for webhook in &configuration.webhooks {
            check.evidence.push(format!(
                "{}/{}: {}, namespaceSelector {}, objectSelector {}, failurePolicy {}{}",
                configuration.name,
                webhook.name,
                mode(&webhook.namespace_selector, &webhook.object_selector),
                display(&webhook.namespace_selector),
                display(&webhook.object_selector),
                webhook.failure_policy,
                if webhook.rules.iter().any(|r| r.matches_pod_create()) {
                    ""
                } else {
                    " — its rules do not cover CREATE pods: it never injects"
                },
            ));
        }
    }
    let namespaces = match &snapshot.namespaces {
        Ok(namespaces) => namespaces,
        Err(failure) => {
            check.raise(Verdict::Unknown);
            check.summary = format!(
                "{} configuration(s) found; {}",
                configurations.len(),
                failure.explain()
            );
            return check;
        }
    };
    let focus = snapshot.settings.focus.as_deref();
    check.evidence.push(format!(
        "{:<28} {:<16} {:<12} {}",
        "NAMESPACE", "ISTIO-INJECTION", "ISTIO.IO/REV", "IN SCOPE"
    ));
    let mut in_scope = Vec::new();
    for namespace in namespaces {
        let facts = namespace_facts(namespace);
        if focus.is_some_and(|f| f != facts.name) {
            continue;
        }
        let verdicts = gate::evaluate(&parsed, &facts, &Default::default());
        // Every pod of the namespace (a pod without labels is called) …
        let matched: Vec<String> = verdicts
            .iter()
            .filter(|v| v.called)
            .map(|v| v.webhook.clone())
            .collect();
        // … or only pods that carry the labels an objectSelector wants.
        let per_pod: Vec<String> = verdicts
            .iter()
            .filter(|v| v.rules_match && v.namespace_selector.matched && !v.object_selector.matched)
            .map(|v| format!("{} ({})", v.object_selector.selector, v.webhook))
            .collect();
        let label = |key: &str| facts.labels.get(key).cloned().unwrap_or_default();
        check.evidence.push(format!(
            "{:<28} {:<16} {:<12} {}",
            facts.name,
            label("istio-injection"),
            label("istio.io/rev"),
            match (matched.is_empty(), per_pod.is_empty()) {
                (false, _) => format!("yes ({})", matched.join(", ")),
                (true, false) => format!("only pods labelled {}", per_pod.join(", ")),
                (true, true) => "no".to_owned(),
            }
        ));
        if !matched.is_empty() {
            in_scope.push(facts.name.clone());
        }
    }
    match focus {
        Some(name)
            if !namespaces
                .iter()
                .any(|n| n.metadata.name.as_deref() == Some(name)) =>
        {
            check.raise(Verdict::Error);
            check.summary = format!("namespace {name} does not exist");
        }
        Some(name) if in_scope.is_empty() => {
            check.raise(Verdict::Warning);
            check.summary = format!(
                "namespace {name} is not in scope of any webhook of ours: its pods are never injected"
            );
            check.fixes.push(shell::command([
                "kubectl",
                "label",
                "namespace",
                name,
                "istio-injection=enabled",
                "--overwrite",
            ]));
        }
        None if in_scope.is_empty() => {
            check.raise(Verdict::Warning);
            check.summary = "no namespace is in scope of any webhook of ours: no pod is injected".to_owned();
            check
                .fixes
                .push("kubectl label namespace NAME istio-injection=enabled --overwrite".to_owned());
        }
        _ => {
            if check.summary.is_empty() {
                check.summary = format!(
                    "{} configuration(s); namespaces in scope: {}",
                    configurations.len(),
                    in_scope.join(", ")
                );
            }
        }
    }
    check
}

fn display(selector: &LabelSelector) -> String {
    format!("{selector}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::fixtures::*;
    use super::*;

    #[test]
    fn a_missing_configuration_is_an_error_naming_what_was_looked_for() {
        let mut snapshot = empty();
        snapshot.webhook_configurations = Ok(vec![configuration("other-vendor", vec![])]);
        let check = check(&snapshot);
        assert_eq!(check.verdict, Verdict::Error);
        assert!(
            check
                .summary
                .contains("istio-sidecar-injector or labelled istio.io/rev=default"),
            "{check:?}"
        );
        assert!(check.evidence[0].contains("other-vendor"));
    }

    #[test]
    fn the_mode_and_the_namespaces_in_scope_are_shown_like_kubectl_get_ns() {
        let mut snapshot = empty();
        snapshot.webhook_configurations = Ok(vec![configuration(
            "istio-sidecar-injector",
            vec![url_webhook("https://127.0.0.1:1/inject", "")],
        )]);
        snapshot.namespaces = Ok(vec![
            namespace("shop", json!({"istio-injection": "enabled"})),
            namespace("tools", json!({})),
        ]);
        let check = check(&snapshot);
        assert_eq!(check.verdict, Verdict::Ok, "{check:?}");
        assert!(check.summary.contains("namespaces in scope: shop"));
        assert!(check.evidence[0].contains("opt-in"));
        assert!(
            check
                .evidence
                .iter()
                .any(|l| l.starts_with("shop") && l.contains("enabled") && l.contains("yes"))
        );
        assert!(
            check
                .evidence
                .iter()
                .any(|l| l.starts_with("tools") && l.ends_with("no"))
        );
    }

    #[test]
    fn a_namespace_reached_only_through_an_object_selector_is_not_in_scope() {
        let mut snapshot = empty();
        let mut object = url_webhook("https://127.0.0.1:1/inject", "");
        object["namespaceSelector"] =
            json!({"matchExpressions": [{"key": "istio-injection", "operator": "DoesNotExist"}]});
        object["objectSelector"] = json!({"matchLabels": {"sidecar.istio.io/inject": "true"}});
        snapshot.webhook_configurations = Ok(vec![configuration("istio-sidecar-injector", vec![object])]);
        snapshot.namespaces = Ok(vec![namespace("tools", json!({}))]);
        let check = check(&snapshot);
        assert_eq!(check.verdict, Verdict::Warning, "{check:?}");
        assert!(
            check.evidence.iter().any(|l| l.starts_with("tools")
                && l.ends_with(
                    "only pods labelled sidecar.istio.io/inject=true (namespace.sidecar-injector.istio.io)"
                )),
            "{check:?}"
        );
        assert!(check.evidence[0].contains("opt-in per pod (objectSelector)"));
    }

    #[test]
    fn a_focus_namespace_out_of_scope_is_a_warning_with_the_label_command() {
        let mut snapshot = empty();
        snapshot.settings.focus = Some("tools".into());
        snapshot.webhook_configurations = Ok(vec![configuration(
            "istio-sidecar-injector",
            vec![url_webhook("https://127.0.0.1:1/inject", "")],
        )]);
        snapshot.namespaces = Ok(vec![namespace("tools", json!({}))]);
        let check = check(&snapshot);
        assert_eq!(check.verdict, Verdict::Warning);
        assert_eq!(
            check.fixes,
            vec!["kubectl label namespace tools istio-injection=enabled --overwrite"]
        );
    }

    #[test]
    fn a_forbidden_list_says_which_permission_it_needs() {
        let mut snapshot = empty();
        snapshot.webhook_configurations = Err(forbidden("list mutatingwebhookconfigurations"));
        let check = check(&snapshot);
        assert_eq!(check.verdict, Verdict::Unknown);
        assert!(
            check
                .summary
                .contains("needs the permission to list mutatingwebhookconfigurations")
        );
    }

    #[test]
    fn opt_out_selectors_are_told_from_opt_in() {
        let selector = LabelSelector::from_value(
            &json!({"matchExpressions": [{"key": "istio-injection", "operator": "NotIn", "values": ["disabled"]}]}),
            "s",
        )
        .expect("selector");
        let everything = LabelSelector::everything();
        assert_eq!(mode(&selector, &everything), "opt-out");
        assert_eq!(mode(&everything, &everything), "every namespace");
        let per_pod =
            LabelSelector::from_value(&json!({"matchLabels": {"sidecar.istio.io/inject": "true"}}), "o")
                .expect("selector");
        assert_eq!(mode(&selector, &per_pod), "opt-in per pod (objectSelector)");
    }
}
