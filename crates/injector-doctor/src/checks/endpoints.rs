//! Check 5: the injector is there to answer. For a webhook by Service: the Service exists, has
//! the webhook's port, and its EndpointSlices have ready endpoints on the target port (the
//! troubleshooting page's "no endpoints available" / "no such host"), with its pods' readiness. For a webhook by
//! loopback `url:`: something answers TLS there. Other URLs are never dialled.

use std::collections::BTreeSet;

use injector_core::shell;
use k8s_openapi::{
    api::{core::v1::Service, discovery::v1::EndpointSlice},
    apimachinery::pkg::util::intstr::IntOrString,
};

use super::{no_webhooks, ours};
use crate::{Check, Snapshot, Verdict, webhooks::Target};

const ID: &str = "endpoints";
const TITLE: &str = "injector pods ready, Service endpoints";

/// Runs the check.
pub fn check(snapshot: &Snapshot) -> Check {
    let configurations = match ours(snapshot) {
        Ok(found) if !found.is_empty() => found,
        _ => return no_webhooks(ID, TITLE, snapshot),
    };
    let mut check = Check::new(ID, TITLE, Verdict::Ok, "");
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for configuration in configurations {
        for webhook in configuration.webhooks.iter().flatten() {
            let target = Target::of(webhook);
            if !seen.insert(target.describe()) {
                continue;
            }
            match &target {
                Target::Url {
                    url, loopback: true, ..
                } => match snapshot.handshakes.get(url).map(|h| &h.chain) {
                    Some(Ok(_)) => check.evidence.push(format!("{url}: answers TLS")),
                    Some(Err(error)) => {
                        check.raise(Verdict::Error);
                        problems.push(format!("nothing answers at {url}: {error}"));
                        check.fixes.push(format!(
                            "start the injector listening there (sidecar-injector serve --addr {}), or correct the webhook's url",
                            url.split("://").nth(1).and_then(|r| r.split('/').next()).unwrap_or("HOST:PORT")
                        ));
                    }
                    None => {
                        check.raise(Verdict::Unknown);
                        problems.push(format!("{url}: not dialled"));
                    }
                },
                Target::Url { url, .. } => {
                    check.raise(Verdict::Unknown);
                    problems.push(format!(
                        "{url}: not dialled (doctor only dials loopback addresses)"
                    ));
                }
                Target::Service { .. } => service(snapshot, &target, &mut check, &mut problems),
                Target::Missing => {
                    check.raise(Verdict::Error);
                    problems.push(format!("{}: no clientConfig", webhook.name));
                }
            }
        }
    }
    check.summary = if problems.is_empty() {
        "every webhook's injector answers (ready endpoints, or TLS on its loopback url)".to_owned()
    } else {
        problems.join("; ")
    };
    check.fixes.dedup();
    check
}

fn service(snapshot: &Snapshot, target: &Target, check: &mut Check, problems: &mut Vec<String>) {
    let Target::Service {
        namespace,
        name,
        port,
        ..
    } = target
    else {
        return;
    };
    let key = format!("{namespace}/{name}");
    let service = match snapshot.services.get(&key) {
        None => return,
        Some(Err(failure)) => {
            check.raise(Verdict::Unknown);
            problems.push(failure.explain());
            return;
        }
        Some(Ok(None)) => {
            check.raise(Verdict::Error);
            problems.push(format!(
                "Service {key} does not exist: the API server cannot call the webhook (no such host / service not found), and a Fail webhook blocks pod creation"
            ));
            check.fixes.push(shell::command([
                "kubectl",
                "-n",
                namespace,
                "get",
                "services,deployments",
            ]));
            return;
        }
        Some(Ok(Some(service))) => service,
    };
    let selector = selector_text(service);
    let Some((port_name, target_port)) = service_port(service, *port) else {
        check.raise(Verdict::Error);
        problems.push(format!("Service {key} has no port {port}, the webhook's"));
        check.fixes.push(shell::command([
            "kubectl", "-n", namespace, "get", "service", name, "-o", "yaml",
        ]));
        return;
    };
    let ready = match snapshot.endpoint_slices.get(&key) {
        Some(Ok(slices)) => ready_endpoints(slices, port_name.as_deref(), &target_port),
        Some(Err(failure)) => {
            check.raise(Verdict::Unknown);
            problems.push(failure.explain());
            return;
        }
        None => return,
    };
    check.evidence.push(format!(
        "Service {key}:{port} → target port {}: {} ready endpoint(s)",
        describe_port(&target_port),
        ready.len()
    ));
    if let Some(Ok(pods)) = snapshot.service_pods.get(&key) {
        let ready_pods = pods.iter().filter(|p| pod_ready(p)).count();
        check.evidence.push(format!(
            "pods selected by {selector}: {ready_pods}/{} ready",
            pods.len()
        ));
        for pod in pods.iter().filter(|p| !pod_ready(p)) {
            check.evidence.push(format!(
                "pod {namespace}/{} is not ready (phase {})",
                pod.metadata.name.as_deref().unwrap_or_default(),
                pod.status
                    .as_ref()
                    .and_then(|s| s.phase.as_deref())
                    .unwrap_or("unknown")
            ));
        }
    }
    if ready.is_empty() {
        check.raise(Verdict::Error);
        problems.push(format!(
            "no endpoints available for service {key}: the injector is not ready, and with failurePolicy Fail no pod in scope can be created"
        ));
        for verb in [&["get", "pods"][..], &["describe", "pods"], &["logs"]] {
            let mut words = vec!["kubectl", "-n", namespace];
            words.extend(verb);
            words.extend(["-l", &selector]);
            check.fixes.push(shell::command(words));
        }
    }
}

/// The Service port for the webhook's `port`: its name and target port.
fn service_port(service: &Service, port: i32) -> Option<(Option<String>, IntOrString)> {
    service
        .spec
        .as_ref()?
        .ports
        .iter()
        .flatten()
        .find(|p| p.port == port)
        .map(|p| {
            (
                p.name.clone(),
                p.target_port.clone().unwrap_or(IntOrString::Int(p.port)),
            )
        })
}

fn describe_port(port: &IntOrString) -> String {
    match port {
        IntOrString::Int(n) => n.to_string(),
        IntOrString::String(s) => s.clone(),
    }
}

/// The ready addresses serving the Service port named `port_name` (target `target`).
pub fn ready_endpoints(
    slices: &[EndpointSlice],
    port_name: Option<&str>,
    target: &IntOrString,
) -> Vec<String> {
    let mut ready = Vec::new();
    for slice in slices {
        let serves = slice.ports.iter().flatten().any(|p| match target {
            IntOrString::Int(n) => {
                p.port == Some(*n) || (port_name.is_some() && p.name.as_deref() == port_name)
            }
            IntOrString::String(_) => p.name.as_deref() == port_name,
        });
        if !serves {
            continue;
        }
        for endpoint in &slice.endpoints {
            let is_ready = endpoint.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true);
            if is_ready {
                ready.extend(endpoint.addresses.iter().cloned());
            }
        }
    }
    ready
}

fn pod_ready(pod: &k8s_openapi::api::core::v1::Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn selector_text(service: &Service) -> String {
    service
        .spec
        .as_ref()
        .and_then(|s| s.selector.as_ref())
        .map(|s| {
            s.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_else(|| "<no selector>".to_owned())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::fixtures::*;
    use super::*;
    use crate::Handshake;

    fn service_webhook() -> serde_json::Value {
        json!({"name": "a.b", "clientConfig": {"service": {"namespace": "istio-system", "name": "istiod", "port": 443, "path": "/inject"}},
               "rules": [], "sideEffects": "None", "admissionReviewVersions": ["v1"]})
    }

    fn snapshot_with(slices: serde_json::Value) -> Snapshot {
        let mut snapshot = empty();
        snapshot.webhook_configurations = Ok(vec![configuration(
            "istio-sidecar-injector",
            vec![service_webhook()],
        )]);
        snapshot.services.insert(
            "istio-system/istiod".into(),
            Ok(Some(object(
                json!({"metadata": {"name": "istiod"}, "spec": {"selector": {"app": "istiod"},
                "ports": [{"name": "https-webhook", "port": 443, "targetPort": 15017}]}}),
            ))),
        );
        snapshot
            .endpoint_slices
            .insert("istio-system/istiod".into(), Ok(object(slices)));
        snapshot
            .service_pods
            .insert("istio-system/istiod".into(), Ok(Vec::new()));
        snapshot
    }

    #[test]
    fn no_ready_endpoint_on_the_target_port_is_the_seeds_no_endpoints_error() {
        let none = check(&snapshot_with(json!([{"addressType": "IPv4", "endpoints": [
            {"addresses": ["10.1.0.1"], "conditions": {"ready": false}}],
            "ports": [{"name": "https-webhook", "port": 15017}]}])));
        assert_eq!(none.verdict, Verdict::Error);
        assert!(
            none.summary
                .contains("no endpoints available for service istio-system/istiod"),
            "{none:?}"
        );
        assert!(
            none.fixes
                .contains(&"kubectl -n istio-system logs -l app=istiod".to_owned())
        );
        let ready = check(&snapshot_with(json!([{"addressType": "IPv4", "endpoints": [
            {"addresses": ["10.1.0.1"], "conditions": {"ready": true}}],
            "ports": [{"name": "https-webhook", "port": 15017}]}])));
        assert_eq!(ready.verdict, Verdict::Ok, "{ready:?}");
    }

    #[test]
    fn a_missing_service_and_a_loopback_url_with_nothing_listening_are_errors() {
        let mut snapshot = snapshot_with(json!([]));
        snapshot.services.insert("istio-system/istiod".into(), Ok(None));
        assert!(
            check(&snapshot)
                .summary
                .contains("Service istio-system/istiod does not exist")
        );
        let url = "https://127.0.0.1:1/inject";
        let mut loopback = empty();
        loopback.webhook_configurations = Ok(vec![configuration(
            "istio-sidecar-injector",
            vec![url_webhook(url, "")],
        )]);
        loopback.handshakes.insert(
            url.into(),
            Handshake {
                url: url.into(),
                chain: Err("connection refused".into()),
            },
        );
        let refused = check(&loopback);
        assert_eq!(refused.verdict, Verdict::Error);
        assert!(
            refused
                .summary
                .contains("nothing answers at https://127.0.0.1:1/inject: connection refused")
        );
    }
}
