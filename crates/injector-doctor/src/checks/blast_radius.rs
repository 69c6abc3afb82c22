//! Check 10 (`doctor --blast-radius`): if the injector were down now, what could not be
//! created — every namespace, and every controller and workload, whose pods go through a `Fail`
//! webhook of ours — with what the cluster needs to heal highlighted: kube-system, DNS, CNI,
//! storage, certificate issuers and the injector itself. A workload whose pods the webhooks'
//! matchConditions skip (host network, `sidecar.istio.io/inject: "false"`, …) is created while the
//! injector is down, and is not counted; a condition that cannot be evaluated here counts as
//! letting the pod through.

use std::collections::BTreeSet;

use injector_core::{
    gate::{self, NamespaceFacts, WebhookConfiguration},
    workload,
};

use super::{gate_configuration, namespace_facts, ours};
use crate::{Check, Snapshot, Verdict};

const ID: &str = "blastRadius";
const TITLE: &str = "blast radius if the injector were down";

/// What a workload is to the cluster, when it matters beyond itself.
pub fn critical_role(namespace: &str, name: &str, injector_namespace: &str) -> Option<&'static str> {
    let name = name.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| name.contains(w));
    if has(&["istiod", "sidecar-injector"])
        || (namespace == injector_namespace && has(&["injector", "istio"]))
    {
        Some("the injector itself")
    } else if has(&["coredns", "kube-dns", "dns"]) {
        Some("DNS")
    } else if has(&[
        "calico",
        "cilium",
        "flannel",
        "weave",
        "kube-proxy",
        "aws-node",
        "cni",
        "antrea",
        "kube-router",
    ]) {
        Some("CNI / networking")
    } else if has(&["csi", "provisioner", "rook", "longhorn", "ebs", "storage"]) {
        Some("storage")
    } else if has(&["cert-manager", "issuer", "trust-manager"]) {
        Some("certificate issuer")
    } else if namespace == "kube-system" {
        Some("kube-system")
    } else if namespace == injector_namespace {
        Some("the injector's namespace")
    } else {
        None
    }
}

/// Runs the check.
pub fn check(snapshot: &Snapshot) -> Check {
    let configurations = match ours(snapshot) {
        Ok(found) => found,
        Err(failure) => return Check::unknown(ID, TITLE, failure),
    };
    // Only Fail webhooks block creation when the injector is down.
    let failing: Vec<WebhookConfiguration> = configurations
        .into_iter()
        .filter_map(|c| gate_configuration(c).ok())
        .map(|mut c| {
            c.webhooks.retain(|w| w.failure_policy == "Fail");
            c
        })
        .filter(|c| !c.webhooks.is_empty())
        .collect();
    let mut check = Check::new(ID, TITLE, Verdict::Ok, "");
    if failing.is_empty() {
        check.summary =
            "no Fail webhook of ours: pods are created (uninjected) while the injector is down".to_owned();
        return check;
    }
    let namespaces: Vec<NamespaceFacts> = match &snapshot.namespaces {
        Ok(namespaces) => namespaces.iter().map(namespace_facts).collect(),
        Err(failure) => return Check::unknown(ID, TITLE, failure),
    };
    let injector_namespace = snapshot.settings.injector_namespace.as_str();
    let blocked_namespaces: Vec<&NamespaceFacts> = namespaces
        .iter()
        .filter(|facts| {
            gate::evaluate(&failing, facts, &Default::default())
                .iter()
                .any(|v| v.rules_match && v.namespace_selector.matched)
        })
        .collect();
    let mut blocked = Vec::new();
    let mut critical = Vec::new();
    let mut unreadable = Vec::new();
    let mut skipped_by_conditions = 0;
    for read in snapshot.workloads.values() {
        let objects = match read {
            Ok(objects) => objects,
            Err(failure) => {
                unreadable.push(failure.explain());
                continue;
            }
        };
        for object in objects {
            let Ok(Some(template)) = workload::pod_template(object) else {
                continue;
            };
            let namespace = template.owner.namespace.clone().unwrap_or_default();
            let Some(facts) = namespaces.iter().find(|n| n.name == namespace) else {
                continue;
            };
            let verdicts = gate::evaluate_pod(&failing, facts, &template.pod_view(&namespace));
            if !verdicts.iter().any(|v| v.called) {
                let selected = |v: &gate::WebhookVerdict| {
                    v.rules_match && v.namespace_selector.matched && v.object_selector.matched
                };
                if verdicts.iter().any(selected) {
                    skipped_by_conditions += 1;
                }
                continue;
            }
            let kind = object.get("kind").and_then(|k| k.as_str()).unwrap_or("?");
            let line = format!("{kind} {namespace}/{}", template.owner.name);
            match critical_role(&namespace, &template.owner.name, injector_namespace) {
                Some(role) => critical.push(format!("{line} — {role}")),
                None => blocked.push(line),
            }
        }
    }
    let namespace_names: BTreeSet<&str> = blocked_namespaces.iter().map(|n| n.name.as_str()).collect();
    check.evidence.push(format!(
        "namespaces whose pods go through a Fail webhook: {}",
        if namespace_names.is_empty() {
            "none".to_owned()
        } else {
            namespace_names.iter().copied().collect::<Vec<_>>().join(", ")
        }
    ));
    for line in &critical {
        check.evidence.push(format!("CRITICAL {line}"));
    }
    check.evidence.extend(blocked.iter().cloned());
    if skipped_by_conditions > 0 {
        check.evidence.push(format!(
            "{skipped_by_conditions} workload(s) in those namespaces not counted: the webhooks' matchConditions skip \
             their pods, which are created while the injector is down"
        ));
    }
    check.evidence.extend(unreadable.iter().cloned());
    if !critical.is_empty() {
        check.raise(Verdict::Warning);
        check.fixes.push(
            "exclude what the cluster needs to heal from the Fail webhooks (a namespaceSelector or objectSelector), or set failurePolicy: Ignore on them".to_owned(),
        );
    } else if !unreadable.is_empty() {
        check.raise(Verdict::Unknown);
    }
    check.summary = format!(
        "if the injector were down, pods could not be created in {} namespace(s): {} workload(s){}",
        namespace_names.len(),
        blocked.len() + critical.len(),
        if critical.is_empty() {
            String::new()
        } else {
            format!(", {} of them critical ({})", critical.len(), critical.join("; "))
        }
    );
    check
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::fixtures::*;
    use super::*;

    fn deployment(namespace: &str, name: &str) -> serde_json::Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    }

    #[test]
    fn workloads_behind_a_fail_webhook_are_listed_and_the_critical_ones_highlighted() {
        let mut snapshot = empty();
        let mut webhook = url_webhook("https://127.0.0.1:1/inject", "");
        webhook["namespaceSelector"] = json!({"matchExpressions": [{"key": "istio-injection", "operator": "NotIn", "values": ["disabled"]}]});
        snapshot.webhook_configurations = Ok(vec![configuration("istio-sidecar-injector", vec![webhook])]);
        snapshot.namespaces = Ok(vec![
            namespace("kube-system", json!({})),
            namespace("shop", json!({})),
            namespace("quiet", json!({"istio-injection": "disabled"})),
        ]);
        snapshot.workloads.insert(
            "Deployment".into(),
            Ok(vec![
                deployment("kube-system", "coredns"),
                deployment("shop", "web"),
                deployment("quiet", "db"),
            ]),
        );
        let check = check(&snapshot);
        assert_eq!(check.verdict, Verdict::Warning, "{check:?}");
        assert!(
            check.summary.contains(
                "in 2 namespace(s): 2 workload(s), 1 of them critical (Deployment kube-system/coredns — DNS)"
            ),
            "{}",
            check.summary
        );
        assert!(check.evidence.contains(&"Deployment shop/web".to_owned()));
        assert!(!check.evidence.iter().any(|e| e.contains("quiet/db")));
    }

    #[test]
    fn pods_the_match_conditions_skip_are_not_counted() {
        let mut snapshot = empty();
        let mut webhook = url_webhook("https://127.0.0.1:1/inject", "");
        webhook["matchConditions"] = json!([
            {"name": "not-host-network", "expression": "!object.spec.?hostNetwork.orValue(false)"},
            {"name": "not-opted-out", "expression":
                "object.metadata.?labels[?'sidecar.istio.io/inject'].orValue(object.metadata.?annotations[?'sidecar.istio.io/inject'].orValue('')) != 'false'"},
        ]);
        snapshot.webhook_configurations = Ok(vec![configuration("istio-sidecar-injector", vec![webhook])]);
        snapshot.namespaces = Ok(vec![namespace("shop", json!({"istio-injection": "enabled"}))]);
        let mut host = deployment("shop", "node-agent");
        host["spec"]["template"]["spec"]["hostNetwork"] = json!(true);
        let mut opted_out = deployment("shop", "batch");
        opted_out["spec"]["template"]["metadata"]["annotations"] =
            json!({"sidecar.istio.io/inject": "false"});
        let mut asked = deployment("shop", "api");
        asked["spec"]["template"]["metadata"]["annotations"] = json!({"sidecar.istio.io/inject": "true"});
        snapshot.workloads.insert(
            "Deployment".into(),
            Ok(vec![deployment("shop", "web"), host, opted_out, asked]),
        );
        let check = check(&snapshot);
        assert!(
            check.summary.contains("in 1 namespace(s): 2 workload(s)"),
            "{}",
            check.summary
        );
        assert!(check.evidence.contains(&"Deployment shop/api".to_owned()));
        assert!(
            !check
                .evidence
                .iter()
                .any(|e| e.contains("node-agent") || e.contains("batch"))
        );
        assert!(
            check
                .evidence
                .iter()
                .any(|e| e.starts_with("2 workload(s) in those namespaces not counted")),
            "{:?}",
            check.evidence
        );
    }

    #[test]
    fn ignore_webhooks_block_nothing() {
        let mut snapshot = empty();
        let mut webhook = url_webhook("https://127.0.0.1:1/inject", "");
        webhook["failurePolicy"] = json!("Ignore");
        snapshot.webhook_configurations = Ok(vec![configuration("istio-sidecar-injector", vec![webhook])]);
        let check = check(&snapshot);
        assert_eq!(check.verdict, Verdict::Ok);
        assert!(check.summary.starts_with("no Fail webhook"));
        assert_eq!(
            critical_role("istio-system", "istiod", "istio-system"),
            Some("the injector itself")
        );
        assert_eq!(
            critical_role("storage", "ebs-csi-controller", "istio-system"),
            Some("storage")
        );
        assert_eq!(critical_role("shop", "web", "istio-system"), None);
    }
}
