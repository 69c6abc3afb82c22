//! What the templates see of a pod that may have been injected before (Istio's `stripPod` and
//! `reinsertOverrides`).
//!
//! Re-injection must be idempotent, so the template data is built from the pod *without* what a
//! previous injection added: the containers and init containers listed in the
//! `sidecar.istio.io/status` annotation are removed, the Prometheus annotations are cleared when
//! they already point at the agent, and the status annotation itself is dropped. User overrides
//! saved in `proxy.istio.io/overrides` are put back so the templates see the user's own containers.
//! The merge itself starts from the original, un-stripped pod.

use serde_json::Value;

use crate::{
    member::Members,
    pod::{ContainerList, annotations_mut, containers_mut, name_of},
    post::prometheus::sanitizes_to,
    post::status::{STATUS_ANNOTATION, parse_status},
};

/// The annotation holding the user's container overrides from the first injection.
pub const OVERRIDES_ANNOTATION: &str = "proxy.istio.io/overrides";

/// A pod whose overrides annotation is not valid JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed to parse annotation {OVERRIDES_ANNOTATION}: {0}")]
pub struct StripError(pub String);

/// Whether [`strip_pod`] would change the pod: it was injected before, saved overrides, or
/// has Prometheus annotations (which may point at the agent). When not, the templates can see
/// the pod itself, uncopied.
pub fn needs_strip(pod: &Value) -> bool {
    pod.member("metadata")
        .and_then(|m| m.member("annotations"))
        .and_then(Value::as_object)
        .is_some_and(|annotations| {
            annotations.has_member(STATUS_ANNOTATION)
                || annotations.has_member(OVERRIDES_ANNOTATION)
                || annotations
                    .keys()
                    .any(|key| sanitizes_to(key, "prometheus_io_port"))
        })
}

/// The pod as the templates should see it. `mesh_status_port` is the mesh `defaultConfig.statusPort`.
pub fn strip_pod(pod: &Value, mesh_status_port: i64) -> Result<Value, StripError> {
    let mut stripped = pod.clone();
    let annotation = |key: &str| {
        pod.member("metadata")
            .and_then(|m| m.member("annotations"))
            .and_then(|a| a.member(key))
            .and_then(Value::as_str)
    };
    if let Some(status) = annotation(STATUS_ANNOTATION) {
        let previous = parse_status(status);
        for (list, names) in [
            (ContainerList::Containers, &previous.containers),
            (ContainerList::InitContainers, &previous.init_containers),
        ] {
            if let Some(items) = containers_mut(&mut stripped, list) {
                items.retain(|c| !names.iter().any(|n| n == name_of(c)));
            }
        }
    }
    let annotations = annotations_mut(&mut stripped);
    let port = annotations
        .iter()
        .find(|(key, _)| sanitizes_to(key, "prometheus_io_port"))
        .and_then(|(_, value)| value.as_str().map(str::to_owned));
    if port.is_some_and(|p| p == mesh_status_port.to_string()) {
        annotations.retain(|key, _| {
            !["prometheus_io_port", "prometheus_io_path", "prometheus_io_scrape"]
                .iter()
                .any(|name| sanitizes_to(key, name))
        });
    }
    annotations.shift_remove(STATUS_ANNOTATION);
    reinsert_overrides(&mut stripped)?;
    Ok(stripped)
}

/// Puts back the containers saved in the overrides annotation that the pod no longer has.
fn reinsert_overrides(pod: &mut Value) -> Result<(), StripError> {
    let Some(text) = pod
        .member("metadata")
        .and_then(|m| m.member("annotations"))
        .and_then(|a| a.member(OVERRIDES_ANNOTATION))
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        return Ok(());
    };
    let overrides: Value = serde_json::from_str(&text).map_err(|e| StripError(e.to_string()))?;
    for list in [ContainerList::Containers, ContainerList::InitContainers] {
        let saved = overrides
            .member(list.field())
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if saved.is_empty() {
            continue;
        }
        let spec = pod.as_object_mut().map(|root| {
            root.entry("spec")
                .or_insert_with(|| Value::Object(Default::default()))
        });
        let Some(Value::Object(spec)) = spec else {
            continue;
        };
        let items = spec
            .entry(list.field())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(items) = items {
            for container in saved {
                if !items.iter().any(|c| name_of(c) == name_of(&container)) {
                    items.push(container);
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn removes_what_a_previous_injection_added() {
        let pod = json!({
            "metadata": {"annotations": {
                "sidecar.istio.io/status": r#"{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":["istio-envoy"]}"#,
                "prometheus.io/port": "15020", "prometheus.io/path": "/stats/prometheus", "prometheus.io/scrape": "true",
                "keep": "me"}},
            "spec": {"containers": [{"name": "app"}, {"name": "istio-proxy"}], "initContainers": [{"name": "istio-init"}, {"name": "mine"}],
                     "volumes": [{"name": "istio-envoy"}]}
        });
        let stripped = strip_pod(&pod, 15020).expect("strips");
        assert_eq!(stripped["metadata"]["annotations"], json!({"keep": "me"}));
        assert_eq!(stripped["spec"]["containers"], json!([{"name": "app"}]));
        assert_eq!(stripped["spec"]["initContainers"], json!([{"name": "mine"}]));
        assert_eq!(
            stripped["spec"]["volumes"],
            json!([{"name": "istio-envoy"}]),
            "volumes are not stripped"
        );
    }

    #[test]
    fn user_prometheus_annotations_stay() {
        let pod = json!({"metadata": {"annotations": {"prometheus.io/port": "9090"}}, "spec": {}});
        let stripped = strip_pod(&pod, 15020).expect("strips");
        assert_eq!(stripped["metadata"]["annotations"]["prometheus.io/port"], "9090");
    }

    #[test]
    fn overrides_are_reinserted() {
        let pod = json!({
            "metadata": {"annotations": {
                "sidecar.istio.io/status": r#"{"containers":["istio-proxy"]}"#,
                "proxy.istio.io/overrides": r#"{"containers":[{"name":"istio-proxy","image":"auto","resources":{"limits":{"cpu":"1"}}}]}"#}},
            "spec": {"containers": [{"name": "app"}, {"name": "istio-proxy", "image": "injected"}]}
        });
        let stripped = strip_pod(&pod, 15020).expect("strips");
        assert_eq!(
            stripped["spec"]["containers"][1]["image"], "auto",
            "the user's own container is what the templates see"
        );
        let bad = json!({"metadata": {"annotations": {"proxy.istio.io/overrides": "{"}}});
        assert!(strip_pod(&bad, 15020).is_err());
    }
}
