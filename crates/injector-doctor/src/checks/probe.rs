//! Check 9: the end-to-end probe. A server-side dry-run create of a minimal pod goes through the
//! real API server → webhook path (nothing is stored); the pod that comes back is injected or
//! not, and that must be what `explain` predicts from the same snapshot.

use injector_core::{
    config::{InjectorConfig, parse_injector_config},
    explain::{self, ConfigOrigin, Webhooks},
    workload,
};
use serde_json::{Value, json};

use super::{gate_configuration, namespace_facts, namespace_named, ours};
use crate::{Check, Snapshot, Verdict, events::FailureClass};

const ID: &str = "probe";
const TITLE: &str = "end-to-end probe (server-side dry-run create)";

/// The name of the probe pod (never stored: the create is a dry run).
pub const PROBE_POD: &str = "sidecar-injector-doctor-probe";

/// The minimal pod the probe creates in `namespace`.
pub fn probe_pod(namespace: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": PROBE_POD, "namespace": namespace, "labels": {"app": PROBE_POD}},
        "spec": {"containers": [{"name": "probe", "image": "registry.k8s.io/pause:3.10"}]}
    })
}

/// Where to probe when the user did not say: the focus namespace, else the first namespace in
/// scope of a webhook of ours (not a system one), else `default`.
pub fn choose_namespace(snapshot: &Snapshot) -> String {
    if let Some(focus) = &snapshot.settings.focus {
        return focus.clone();
    }
    let configurations: Vec<_> = ours(snapshot)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|c| gate_configuration(c).ok())
        .collect();
    let namespaces = snapshot
        .namespaces
        .as_ref()
        .map(Vec::as_slice)
        .unwrap_or_default();
    namespaces
        .iter()
        .map(namespace_facts)
        .filter(|facts| {
            !facts.name.starts_with("kube-") && facts.name != snapshot.settings.injector_namespace
        })
        .find(|facts| {
            injector_core::gate::evaluate(&configurations, facts, &Default::default())
                .iter()
                .any(|v| v.called)
        })
        .map_or_else(|| "default".to_owned(), |facts| facts.name)
}

/// Whether `explain` predicts the probe pod is injected in `namespace`.
pub fn predicted(snapshot: &Snapshot, pod: &Value) -> Option<bool> {
    let template = workload::pod_template(pod).ok()??;
    let configurations: Vec<_> = ours(snapshot)
        .ok()?
        .into_iter()
        .filter_map(|c| gate_configuration(c).ok())
        .collect();
    let config = snapshot
        .injector_configmap
        .as_ref()
        .ok()
        .and_then(Option::as_ref)
        .and_then(|c| c.data.as_ref()?.get("config").cloned())
        .and_then(|text| parse_injector_config(&text).ok())
        .map_or_else(InjectorConfig::default, |l| l.config);
    let namespace = template.owner.namespace.clone().unwrap_or_default();
    let facts = namespace_named(snapshot, &namespace).map(namespace_facts)?;
    let explanation = explain::explain(
        &template,
        explain::Context {
            namespace: Some(&facts),
            webhooks: Webhooks::Given(&configurations),
            config: &config,
            origin: &ConfigOrigin::IstioDefaults,
        },
    );
    Some(explanation.injected)
}

/// Whether a pod returned by the API server carries a sidecar.
pub fn is_injected(pod: &Value) -> bool {
    pod.pointer("/metadata/annotations/sidecar.istio.io~1status")
        .is_some()
}

/// Runs the check (`None` when the probe did not run).
pub fn check(snapshot: &Snapshot) -> Option<Check> {
    let probe = snapshot.probe.as_ref()?;
    let prediction = predicted(snapshot, &probe.pod);
    let where_ = format!("namespace {}", probe.namespace);
    let check = match &probe.result {
        Err(failure) if failure.kind == crate::ReadFailureKind::Forbidden => {
            let mut check = Check::unknown(ID, TITLE, failure);
            check.evidence.push(format!(
                "the probe needs create pods in {where_} (a dry run: nothing is stored)"
            ));
            check
        }
        Err(failure) => {
            let class = FailureClass::of(&failure.message);
            let mut check = Check::new(
                ID,
                TITLE,
                Verdict::Error,
                format!(
                    "a pod cannot be created in {where_} ({}, {} ms): {}",
                    class.label(),
                    probe.millis,
                    failure.message
                ),
            );
            check.evidence.push(class.advice().to_owned());
            check
        }
        Ok(returned) => {
            let injected = is_injected(returned);
            let said = |b: bool| if b { "injected" } else { "not injected" };
            match prediction {
                Some(expected) if expected != injected => Check::new(
                    ID,
                    TITLE,
                    Verdict::Error,
                    format!(
                        "the probe pod in {where_} came back {} but explain predicts {} ({} ms)",
                        said(injected),
                        said(expected),
                        probe.millis
                    ),
                ),
                _ => Check::new(
                    ID,
                    TITLE,
                    Verdict::Ok,
                    format!(
                        "the probe pod in {where_} came back {}{} in {} ms",
                        said(injected),
                        if prediction.is_some() {
                            ", as explain predicts,"
                        } else {
                            ""
                        },
                        probe.millis
                    ),
                ),
            }
        }
    };
    let mut check = check;
    check.evidence.push(format!(
        "sidecar-injector explain -n {} -f probe.yaml   # the same pod: {}",
        probe.namespace,
        Value::to_string(&probe.pod)
    ));
    Some(check)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::fixtures::*;
    use super::*;
    use crate::{Probe, ReadFailure, ReadFailureKind};

    fn snapshot() -> Snapshot {
        let mut snapshot = empty();
        snapshot.webhook_configurations = Ok(vec![configuration(
            "istio-sidecar-injector",
            vec![url_webhook("https://127.0.0.1:1/inject", "")],
        )]);
        snapshot.namespaces = Ok(vec![
            namespace("kube-system", json!({})),
            namespace("plain", json!({})),
            namespace("shop", json!({"istio-injection": "enabled"})),
        ]);
        snapshot
    }

    #[test]
    fn the_probe_goes_where_injection_is_expected() {
        assert_eq!(choose_namespace(&snapshot()), "shop");
        let mut focused = snapshot();
        focused.settings.focus = Some("plain".into());
        assert_eq!(choose_namespace(&focused), "plain");
    }

    #[test]
    fn a_pod_that_comes_back_as_predicted_passes_and_one_that_does_not_fails() {
        let mut snapshot = snapshot();
        let pod = probe_pod("shop");
        let mut injected = pod.clone();
        injected["metadata"]["annotations"] = json!({"sidecar.istio.io/status": "{}"});
        snapshot.probe = Some(Probe {
            namespace: "shop".into(),
            pod: pod.clone(),
            result: Ok(injected),
            millis: 12,
        });
        let ok = check(&snapshot).expect("ran");
        assert_eq!(ok.verdict, Verdict::Ok, "{ok:?}");
        assert!(
            ok.summary
                .contains("came back injected, as explain predicts, in 12 ms")
        );
        snapshot.probe = Some(Probe {
            namespace: "shop".into(),
            pod: pod.clone(),
            result: Ok(pod.clone()),
            millis: 12,
        });
        assert_eq!(check(&snapshot).expect("ran").verdict, Verdict::Error);
        snapshot.probe = Some(Probe {
            namespace: "shop".into(),
            pod,
            result: Err(ReadFailure {
                attempted: "create pods shop (dry run)".into(),
                kind: ReadFailureKind::Other,
                message: "Internal error occurred: failed calling webhook \"a\": x509: certificate signed by unknown authority".into(),
            }),
            millis: 5,
        });
        let failed = check(&snapshot).expect("ran");
        assert_eq!(failed.verdict, Verdict::Error);
        assert!(failed.summary.contains("(x509, 5 ms)"));
    }
}
