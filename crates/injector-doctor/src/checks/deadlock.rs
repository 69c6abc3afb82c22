//! Check 8: self-deadlock and fragility. A `Fail` webhook that covers the injector's own
//! namespace means a fully stopped injector can never start again (its own pods need it);
//! one that covers `kube-system` blocks DNS, CNI and the other system pods the cluster needs to
//! heal. One replica without a PodDisruptionBudget fails closed on every node drain; a
//! `timeoutSeconds` above the API server's default of 10 s holds each pod creation that long
//! when the injector hangs.

use injector_core::{
    gate::NamespaceFacts,
    selector::{LabelSelector, Labels},
    shell,
};
use k8s_openapi::api::admissionregistration::v1::MutatingWebhook;
use serde_json::json;

use super::{namespace_facts, namespace_named, no_webhooks, ours};
use crate::{Check, Snapshot, Verdict, webhooks::Target};

const ID: &str = "selfDeadlock";
const TITLE: &str = "self-deadlock and fragility";

/// The API server's default webhook timeout, seconds.
pub const DEFAULT_TIMEOUT_SECONDS: i32 = 10;

/// Runs the check.
pub fn check(snapshot: &Snapshot) -> Check {
    let configurations = match ours(snapshot) {
        Ok(found) if !found.is_empty() => found,
        _ => return no_webhooks(ID, TITLE, snapshot),
    };
    let mut check = Check::new(ID, TITLE, Verdict::Ok, "");
    let mut problems = Vec::new();
    for configuration in configurations {
        let name = configuration.metadata.name.as_deref().unwrap_or_default();
        for (index, webhook) in configuration.webhooks.iter().flatten().enumerate() {
            let label = format!("{name}/{}", webhook.name);
            let policy = webhook.failure_policy.as_deref().unwrap_or("Fail");
            let target = Target::of(webhook);
            let own = match &target {
                Target::Service { namespace, .. } => namespace.clone(),
                _ => snapshot.settings.injector_namespace.clone(),
            };
            let injector_labels = target
                .service_key()
                .and_then(|k| snapshot.service_pods.get(&k))
                .and_then(|r| r.as_ref().ok())
                .and_then(|pods| pods.first())
                .and_then(|p| p.metadata.labels.clone())
                .unwrap_or_default();
            let timeout = webhook.timeout_seconds.unwrap_or(DEFAULT_TIMEOUT_SECONDS);
            check.evidence.push(format!(
                "{label}: failurePolicy {policy}, timeoutSeconds {timeout}, injector namespace {own}"
            ));
            if policy == "Fail" {
                for (namespace, why) in [
                    (
                        own.as_str(),
                        "its own namespace: if every injector pod stops, none can be created again",
                    ),
                    (
                        "kube-system",
                        "kube-system: while the injector is down, DNS, CNI and other system pods cannot be created",
                    ),
                ] {
                    if covers(snapshot, webhook, namespace, &injector_labels) {
                        check.raise(Verdict::Error);
                        problems.push(format!("{label} (failurePolicy Fail) covers {why}"));
                        check
                            .fixes
                            .push(exclude_namespace(name, index, webhook, namespace));
                    }
                }
            }
            if timeout > DEFAULT_TIMEOUT_SECONDS {
                check.raise(Verdict::Warning);
                problems.push(format!(
                    "{label}: timeoutSeconds {timeout} is above the API server's default of {DEFAULT_TIMEOUT_SECONDS}: a hung injector holds every pod creation {timeout} s"
                ));
                let patch = json!([{"op": "replace", "path": format!("/webhooks/{index}/timeoutSeconds"), "value": DEFAULT_TIMEOUT_SECONDS}]);
                check.fixes.push(shell::command([
                    "kubectl",
                    "patch",
                    "mutatingwebhookconfiguration",
                    name,
                    "--type=json",
                    "-p",
                    &shell::json(&patch),
                ]));
            }
            if let Some(key) = target.service_key() {
                replicas(snapshot, &key, &injector_labels, &mut check, &mut problems);
            }
        }
    }
    check.summary = if problems.is_empty() {
        "no Fail webhook covers the injector's own namespace or kube-system".to_owned()
    } else {
        problems.join("; ")
    };
    check.fixes.dedup();
    check.evidence.dedup();
    check
}

/// Whether the API server would call `webhook` for the injector's own pods in `namespace`.
fn covers(snapshot: &Snapshot, webhook: &MutatingWebhook, namespace: &str, pod_labels: &Labels) -> bool {
    let facts = namespace_named(snapshot, namespace)
        .map(namespace_facts)
        .unwrap_or_else(|| NamespaceFacts::new(namespace, Labels::new()));
    let selector = |value: Option<serde_json::Value>| {
        value
            .map(|v| {
                LabelSelector::from_value(&v, "selector").unwrap_or_else(|_| LabelSelector::everything())
            })
            .unwrap_or_else(LabelSelector::everything)
    };
    let namespace_selector = selector(
        webhook
            .namespace_selector
            .as_ref()
            .and_then(|s| serde_json::to_value(s).ok()),
    );
    let object_selector = selector(
        webhook
            .object_selector
            .as_ref()
            .and_then(|s| serde_json::to_value(s).ok()),
    );
    namespace_selector.matches(&facts.labels) && object_selector.matches(pod_labels)
}

/// A JSON patch adding `kubernetes.io/metadata.name NotIn [namespace]` to the namespaceSelector.
fn exclude_namespace(
    configuration: &str,
    index: usize,
    webhook: &MutatingWebhook,
    namespace: &str,
) -> String {
    let requirement =
        json!({"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": [namespace]});
    let selector = webhook.namespace_selector.as_ref();
    let operation = match selector {
        None => {
            json!({"op": "add", "path": format!("/webhooks/{index}/namespaceSelector"), "value": {"matchExpressions": [requirement]}})
        }
        Some(s) if s.match_expressions.as_ref().is_some_and(|e| !e.is_empty()) => {
            json!({"op": "add", "path": format!("/webhooks/{index}/namespaceSelector/matchExpressions/-"), "value": requirement})
        }
        Some(_) => {
            json!({"op": "add", "path": format!("/webhooks/{index}/namespaceSelector/matchExpressions"), "value": [requirement]})
        }
    };
    shell::command([
        "kubectl",
        "patch",
        "mutatingwebhookconfiguration",
        configuration,
        "--type=json",
        "-p",
        &shell::json(&json!([operation])),
    ])
}

fn replicas(snapshot: &Snapshot, key: &str, labels: &Labels, check: &mut Check, problems: &mut Vec<String>) {
    let Some(Ok(pods)) = snapshot.service_pods.get(key) else {
        return;
    };
    if pods.len() != 1 {
        return;
    }
    let namespace = key.split('/').next().unwrap_or_default();
    let budgets = match snapshot.disruption_budgets.get(namespace) {
        Some(Ok(budgets)) => budgets,
        Some(Err(failure)) => {
            check.evidence.push(failure.explain());
            return;
        }
        None => return,
    };
    let protected = budgets.iter().any(|b| {
        b.spec
            .as_ref()
            .and_then(|s| s.selector.as_ref())
            .and_then(|s| serde_json::to_value(s).ok())
            .and_then(|v| LabelSelector::from_value(&v, "selector").ok())
            .is_some_and(|s| !s.is_empty() && s.matches(labels))
    });
    if !protected {
        check.raise(Verdict::Warning);
        problems.push(format!(
            "Service {key} has one injector pod and no PodDisruptionBudget: a node drain leaves the webhook without endpoints"
        ));
        let selector: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        check.fixes.push(format!(
            "{} && {}",
            shell::command([
                "kubectl",
                "-n",
                namespace,
                "scale",
                "deployment",
                "NAME",
                "--replicas=2"
            ]),
            shell::command([
                "kubectl",
                "-n",
                namespace,
                "create",
                "poddisruptionbudget",
                "sidecar-injector",
                &format!("--selector={}", selector.join(",")),
                "--min-available=1",
            ])
        ));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::fixtures::*;
    use super::*;

    fn opt_out(timeout: i32) -> serde_json::Value {
        let mut webhook = url_webhook("https://127.0.0.1:1/inject", "");
        webhook["namespaceSelector"] = json!({"matchExpressions": [{"key": "istio-injection", "operator": "NotIn", "values": ["disabled"]}]});
        webhook["timeoutSeconds"] = json!(timeout);
        webhook
    }

    #[test]
    fn a_fail_webhook_covering_its_own_namespace_is_an_error_with_the_exclusion_patch() {
        let mut snapshot = empty();
        snapshot.webhook_configurations =
            Ok(vec![configuration("istio-sidecar-injector", vec![opt_out(10)])]);
        snapshot.namespaces = Ok(vec![
            namespace("istio-system", json!({})),
            namespace("kube-system", json!({"istio-injection": "disabled"})),
        ]);
        let check1 = check(&snapshot);
        assert_eq!(check1.verdict, Verdict::Error);
        assert!(check1.summary.contains("covers its own namespace"), "{check1:?}");
        assert!(!check1.summary.contains("covers kube-system"));
        assert_eq!(
            check1.fixes,
            vec![
                r#"kubectl patch mutatingwebhookconfiguration istio-sidecar-injector --type=json -p '[{"op":"add","path":"/webhooks/0/namespaceSelector/matchExpressions/-","value":{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["istio-system"]}}]'"#
            ]
        );
    }

    #[test]
    fn the_opt_in_webhook_is_fine_and_a_long_timeout_warns() {
        let mut snapshot = empty();
        snapshot.webhook_configurations = Ok(vec![configuration(
            "istio-sidecar-injector",
            vec![url_webhook("https://127.0.0.1:1/inject", "")],
        )]);
        snapshot.namespaces = Ok(vec![namespace("istio-system", json!({}))]);
        assert_eq!(check(&snapshot).verdict, Verdict::Ok);
        let mut slow = url_webhook("https://127.0.0.1:1/inject", "");
        slow["timeoutSeconds"] = json!(30);
        snapshot.webhook_configurations = Ok(vec![configuration("istio-sidecar-injector", vec![slow])]);
        let warned = check(&snapshot);
        assert_eq!(warned.verdict, Verdict::Warning);
        assert!(warned.summary.contains("timeoutSeconds 30"));
    }
}
