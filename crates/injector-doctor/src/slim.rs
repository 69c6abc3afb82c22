//! What the checks read of the cluster's pods and workloads, and nothing else: the gatherer
//! keeps these forms as each page of a list arrives, so that a cluster's size costs a few
//! hundred bytes per pod, not the whole object.
//!
//! A pod is kept only when it carries `sidecar.istio.io/inject` as both a label and an annotation
//! (the only pods the label-and-annotation check reports), with its name, namespace and those
//! two: a pod's Rust type is some kilobytes even when nearly empty. A workload keeps its kind, name, namespace, labels, owner
//! references and `sidecar.istio.io/inject` annotation, and of its pod template the labels (the
//! webhooks' object selectors), the `sidecar.istio.io/inject` annotation and `hostNetwork`.

use injector_core::{decision::INJECT_KEY, workload};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value, json};

/// The pod as the checks read it: `None` for a pod no check looks at (the label-and-annotation
/// check reads only pods that carry `sidecar.istio.io/inject` as both), which is not kept.
pub fn pod(pod: Pod) -> Option<Pod> {
    let metadata = pod.metadata;
    let has = |map: &Option<std::collections::BTreeMap<String, String>>| {
        map.as_ref().is_some_and(|m| m.contains_key(INJECT_KEY))
    };
    if !has(&metadata.labels) || !has(&metadata.annotations) {
        return None;
    }
    Some(Pod {
        metadata: ObjectMeta {
            name: metadata.name,
            namespace: metadata.namespace,
            labels: metadata
                .labels
                .map(|labels| labels.into_iter().filter(|(k, _)| k == INJECT_KEY).collect()),
            annotations: metadata
                .annotations
                .map(|annotations| annotations.into_iter().filter(|(k, _)| k == INJECT_KEY).collect()),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    })
}

/// The workload (JSON with `apiVersion` and `kind`) as the checks read it; one whose pod template
/// cannot be read (which the checks skip) loses only `status` and `metadata.managedFields`.
pub fn workload(mut object: Value) -> Value {
    let template_path = match workload::pod_template(&object) {
        Ok(Some(template)) => template.template_path,
        _ => {
            if let Some(map) = object.as_object_mut() {
                map.remove("status");
                if let Some(metadata) = map.get_mut("metadata").and_then(Value::as_object_mut) {
                    metadata.remove("managedFields");
                }
            }
            return object;
        }
    };
    let mut template = object.pointer_mut(&format!("/{}", template_path.replace('.', "/")));
    let template = template.as_mut().map_or(Value::Null, |t| t.take());
    let host_network = template.pointer("/spec/hostNetwork").cloned();
    let mut spec = Map::new();
    if let Some(host_network) = host_network {
        spec.insert("hostNetwork".to_owned(), host_network);
    }
    let mut slim_template = json!({"metadata": metadata(template.get("metadata"), &[]), "spec": spec});
    for key in template_path.split('.').rev() {
        slim_template = json!({ key: slim_template });
    }
    let mut slim = slim_template;
    for key in ["apiVersion", "kind"] {
        if let Some(value) = object.get(key) {
            slim[key] = value.clone();
        }
    }
    slim["metadata"] = metadata(object.get("metadata"), &["name", "namespace", "ownerReferences"]);
    slim
}

/// Labels, the `sidecar.istio.io/inject` annotation, and the `fields` named.
fn metadata(metadata: Option<&Value>, fields: &[&str]) -> Value {
    let mut slim = Map::new();
    let Some(metadata) = metadata else {
        return Value::Object(slim);
    };
    for field in fields.iter().chain(&["labels"]) {
        if let Some(value) = metadata.get(*field) {
            slim.insert((*field).to_owned(), value.clone());
        }
    }
    if let Some(annotation) = metadata.pointer("/annotations").and_then(|a| a.get(INJECT_KEY)) {
        slim.insert("annotations".to_owned(), json!({ INJECT_KEY: annotation }));
    }
    Value::Object(slim)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::{blast_radius, fixtures::*, placement};
    use crate::{Check, Snapshot};

    fn cronjob() -> Value {
        json!({"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "nightly", "namespace": "shop", "uid": "u", "managedFields": [{"manager": "m"}],
                         "annotations": {"sidecar.istio.io/inject": "true", "kubectl.kubernetes.io/last-applied-configuration": "{}"},
                         "labels": {"team": "a"}},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {
                "metadata": {"labels": {"app": "nightly"}, "annotations": {"prometheus.io/scrape": "true"}},
                "spec": {"hostNetwork": true, "containers": [{"name": "c", "image": "i"}]}}}}},
            "status": {"active": []}})
    }

    #[test]
    fn a_workload_keeps_what_the_checks_read() {
        assert_eq!(
            workload(cronjob()),
            json!({"apiVersion": "batch/v1", "kind": "CronJob",
                "metadata": {"name": "nightly", "namespace": "shop", "labels": {"team": "a"},
                             "annotations": {"sidecar.istio.io/inject": "true"}},
                "spec": {"jobTemplate": {"spec": {"template": {"metadata": {"labels": {"app": "nightly"}},
                                                                "spec": {"hostNetwork": true}}}}}})
        );
    }

    #[test]
    fn the_checks_say_the_same_of_slim_objects() {
        let run = |slimmed: bool| -> Vec<Check> {
            let mut snapshot: Snapshot = empty();
            let mut webhook = url_webhook("https://127.0.0.1:1/inject", "");
            webhook["namespaceSelector"] = json!({});
            snapshot.webhook_configurations =
                Ok(vec![configuration("istio-sidecar-injector", vec![webhook])]);
            snapshot.namespaces = Ok(vec![namespace("shop", json!({}))]);
            let objects = vec![cronjob()];
            let pods = vec![object::<Pod>(
                json!({"metadata": {"name": "p", "namespace": "shop",
                "labels": {"sidecar.istio.io/inject": "false"},
                "annotations": {"sidecar.istio.io/inject": "true", "other": "x"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}),
            )];
            if slimmed {
                snapshot
                    .workloads
                    .insert("CronJob".into(), Ok(objects.into_iter().map(workload).collect()));
                snapshot.pods = Ok(pods.into_iter().filter_map(pod).collect());
            } else {
                snapshot.workloads.insert("CronJob".into(), Ok(objects));
                snapshot.pods = Ok(pods);
            }
            vec![placement::check(&snapshot), blast_radius::check(&snapshot)]
        };
        assert_eq!(run(true), run(false));
        assert_eq!(run(true)[0].evidence.len(), 2, "{:?}", run(true));
    }
}
