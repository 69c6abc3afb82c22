//! Finding the pod inside a workload.
//!
//! The webhook only ever sees pods. For a Deployment the pod is built by the ReplicaSet controller
//! from `spec.template`, so the pod's labels and annotations are the **template's**; whatever sits
//! on the Deployment's own metadata never reaches the injector. This module knows where each
//! workload kind keeps its pod template, and reads the few pod fields the decision needs.

use serde_json::Value;

use crate::{
    decision::INJECT_KEY,
    object::{FieldError, ObjectRef, optional_bool, string_map},
    selector::{Labels, kind_of},
};

/// The kinds that carry a pod (or a pod template).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadKind {
    /// A bare Pod.
    Pod,
    /// `apps/v1` Deployment.
    Deployment,
    /// `apps/v1` StatefulSet.
    StatefulSet,
    /// `apps/v1` DaemonSet.
    DaemonSet,
    /// `apps/v1` ReplicaSet.
    ReplicaSet,
    /// `batch/v1` Job.
    Job,
    /// `batch/v1` CronJob (template under `spec.jobTemplate.spec.template`).
    CronJob,
    /// `v1` ReplicationController.
    ReplicationController,
    /// OpenShift's `apps.openshift.io/v1` DeploymentConfig.
    DeploymentConfig,
}

/// The kinds `explain` and `inject` accept, for messages.
pub const SUPPORTED_KINDS: &str = "Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, ReplicationController, DeploymentConfig";

impl WorkloadKind {
    /// Recognises a workload by its API group and kind.
    pub fn of(object: &ObjectRef) -> Option<Self> {
        let group = object.group();
        let kind = match object.kind.as_str() {
            "Pod" if group.is_empty() => Self::Pod,
            "ReplicationController" if group.is_empty() => Self::ReplicationController,
            "Deployment" if matches!(group, "apps" | "extensions") => Self::Deployment,
            "StatefulSet" if group == "apps" => Self::StatefulSet,
            "DaemonSet" if matches!(group, "apps" | "extensions") => Self::DaemonSet,
            "ReplicaSet" if matches!(group, "apps" | "extensions") => Self::ReplicaSet,
            "Job" if group == "batch" => Self::Job,
            "CronJob" if group == "batch" => Self::CronJob,
            "DeploymentConfig" if group == "apps.openshift.io" => Self::DeploymentConfig,
            _ => return None,
        };
        Some(kind)
    }

    /// Where the pod template sits, as a list of fields from the object's root (empty for a Pod).
    pub fn template_path(self) -> &'static [&'static str] {
        match self {
            Self::Pod => &[],
            Self::CronJob => &["spec", "jobTemplate", "spec", "template"],
            _ => &["spec", "template"],
        }
    }

    /// The lower-case resource name `kubectl` uses (`deployment`, `cronjob`, …).
    pub fn resource(self) -> &'static str {
        match self {
            Self::Pod => "pod",
            Self::Deployment => "deployment",
            Self::StatefulSet => "statefulset",
            Self::DaemonSet => "daemonset",
            Self::ReplicaSet => "replicaset",
            Self::Job => "job",
            Self::CronJob => "cronjob",
            Self::ReplicationController => "replicationcontroller",
            Self::DeploymentConfig => "deploymentconfig",
        }
    }
}

/// The pod a workload would create, as the injector would see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodTemplate {
    /// The workload (or the Pod itself).
    pub owner: ObjectRef,
    /// Its kind.
    pub kind: WorkloadKind,
    /// The template's path, dotted (`spec.template`; empty for a Pod).
    pub template_path: String,
    /// The pod's labels (the template's).
    pub labels: Labels,
    /// The pod's annotations (the template's).
    pub annotations: Labels,
    /// `spec.hostNetwork`.
    pub host_network: bool,
    /// Labels on the workload's own metadata (empty for a Pod).
    pub owner_labels: Labels,
    /// Annotations on the workload's own metadata (empty for a Pod).
    pub owner_annotations: Labels,
}

impl PodTemplate {
    /// Warnings about settings that look meaningful but are not: the inject annotation or label
    /// on the workload's own metadata instead of its pod template.
    pub fn misplaced_settings(&self) -> Vec<String> {
        if self.kind == WorkloadKind::Pod {
            return Vec::new();
        }
        let mut warnings = Vec::new();
        for (noun, map, field, on_template) in [
            (
                "annotation",
                &self.owner_annotations,
                "annotations",
                &self.annotations,
            ),
            ("label", &self.owner_labels, "labels", &self.labels),
        ] {
            if let Some(value) = map.get(INJECT_KEY) {
                let template_note = match on_template.get(INJECT_KEY) {
                    Some(template_value) => {
                        format!("the pod template's own {noun} ({template_value:?}) is what counts")
                    }
                    None => format!("set it at {}.metadata.{field} instead", self.template_path),
                };
                warnings.push(format!(
                    "the {noun} {INJECT_KEY}: {value:?} is on the {}'s own metadata: {}; {template_note}",
                    self.owner.kind,
                    self.misplaced_mistake().message
                ));
            }
        }
        warnings
    }
}

impl PodTemplate {
    /// The pod as far as it is known here, in `namespace`: its labels, annotations and
    /// `spec.hostNetwork` (what the API server's matchConditions are evaluated against).
    pub fn pod_view(&self, namespace: &str) -> Value {
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"namespace": namespace, "labels": self.labels, "annotations": self.annotations},
            "spec": {"hostNetwork": self.host_network},
        })
    }

    /// The mistake of an inject setting on this workload's own metadata, in the chart's words.
    pub fn misplaced_mistake(&self) -> crate::mistakes::Mistake {
        if self.kind == WorkloadKind::CronJob {
            crate::mistakes::INJECT_ON_CRONJOB_METADATA
        } else {
            crate::mistakes::INJECT_ON_WORKLOAD_METADATA
        }
    }
}

/// Reads the pod (template) of a workload object. `None` when the object is not a workload kind.
pub fn pod_template(object: &Value) -> Result<Option<PodTemplate>, FieldError> {
    let owner = ObjectRef::of(object)?;
    let Some(kind) = WorkloadKind::of(&owner) else {
        return Ok(None);
    };
    let mut template = object;
    let mut walked = Vec::new();
    for field in kind.template_path() {
        walked.push(*field);
        template = match template.get(field) {
            Some(Value::Object(_)) => &template[field],
            None | Some(Value::Null) => {
                return Err(FieldError::new(
                    &walked.join("."),
                    format!(
                        "missing; a {} needs a pod template at {}",
                        owner.kind,
                        kind.template_path().join(".")
                    ),
                ));
            }
            Some(other) => {
                return Err(FieldError::new(
                    &walked.join("."),
                    format!("must be an object, got {}", kind_of(other)),
                ));
            }
        };
    }
    let prefix = |rest: &str| {
        if walked.is_empty() {
            rest.to_owned()
        } else {
            format!("{}.{rest}", walked.join("."))
        }
    };
    let null = Value::Null;
    let metadata = template.get("metadata").unwrap_or(&null);
    let spec = template.get("spec").unwrap_or(&null);
    if !spec.is_object() {
        let message = match spec {
            Value::Null => "missing; the pod has no spec".to_owned(),
            other => format!("must be an object, got {}", kind_of(other)),
        };
        return Err(FieldError::new(&prefix("spec"), message));
    }
    let owner_metadata = object.get("metadata").unwrap_or(&null);
    let (owner_labels, owner_annotations) = if kind == WorkloadKind::Pod {
        (Labels::new(), Labels::new())
    } else {
        (
            string_map(owner_metadata, "labels", "metadata.labels")?,
            string_map(owner_metadata, "annotations", "metadata.annotations")?,
        )
    };
    Ok(Some(PodTemplate {
        template_path: walked.join("."),
        labels: string_map(metadata, "labels", &prefix("metadata.labels"))?,
        annotations: string_map(metadata, "annotations", &prefix("metadata.annotations"))?,
        host_network: optional_bool(spec, "hostNetwork", &prefix("spec.hostNetwork"))?.unwrap_or(false),
        owner,
        kind,
        owner_labels,
        owner_annotations,
    }))
}

/// Expands `kind: List` documents into their items, keeping a label for each (`document 2` or
/// `document 2, item 3`). Other documents pass through.
pub fn flatten_lists(documents: Vec<(usize, Value)>) -> Vec<(String, Value)> {
    let mut flat = Vec::new();
    for (index, document) in documents {
        let is_list = document.get("kind").and_then(Value::as_str) == Some("List")
            && document.get("items").is_some_and(Value::is_array);
        match document {
            Value::Object(mut map) if is_list => {
                if let Some(Value::Array(items)) = map.remove("items") {
                    for (item, value) in items.into_iter().enumerate() {
                        flat.push((format!("document {index}, item {}", item + 1), value));
                    }
                }
            }
            other => flat.push((format!("document {index}"), other)),
        }
    }
    flat
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn template(value: Value) -> PodTemplate {
        pod_template(&value).expect("valid").expect("a workload")
    }

    #[test]
    fn deployment_uses_the_pod_template() {
        let t = template(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "annotations": {"sidecar.istio.io/inject": "false"}},
            "spec": {"template": {
                "metadata": {"labels": {"app": "web"}, "annotations": {"sidecar.istio.io/inject": "true"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}
        }));
        assert_eq!(t.kind, WorkloadKind::Deployment);
        assert_eq!(t.template_path, "spec.template");
        assert_eq!(t.annotations[INJECT_KEY], "true");
        assert_eq!(t.labels["app"], "web");
        assert!(!t.host_network);
        let warnings = t.misplaced_settings();
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains(&format!(
                "is on the Deployment's own metadata: {}",
                crate::mistakes::INJECT_ON_WORKLOAD_METADATA.message
            )),
            "{warnings:?}"
        );
        assert!(
            warnings[0].contains("the pod template's own annotation (\"true\") is what counts"),
            "{warnings:?}"
        );
    }

    #[test]
    fn cron_job_template_is_nested() {
        let t = template(json!({
            "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
            "spec": {"jobTemplate": {"spec": {"template": {"metadata": {"labels": {"a": "b"}}, "spec": {"hostNetwork": true}}}}}
        }));
        assert_eq!(t.template_path, "spec.jobTemplate.spec.template");
        assert!(t.host_network);
        assert_eq!(t.labels["a"], "b");
    }

    #[test]
    fn pod_is_its_own_template() {
        let t = template(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": {"sidecar.istio.io/inject": "false"}}, "spec": {}}),
        );
        assert_eq!(t.template_path, "");
        assert_eq!(t.annotations[INJECT_KEY], "false");
        assert!(t.misplaced_settings().is_empty());
    }

    #[test]
    fn non_workloads_are_not_templates() {
        assert_eq!(
            pod_template(&json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}})),
            Ok(None)
        );
        assert_eq!(
            pod_template(&json!({"apiVersion": "example.com/v1", "kind": "Deployment"})),
            Ok(None)
        );
    }

    #[test]
    fn missing_template_is_an_error() {
        let error = pod_template(
            &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {}}),
        )
        .expect_err("no template");
        assert_eq!(error.path, "spec.template");
        let error = pod_template(
            &json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {"template": {"metadata": {}}}}),
        )
        .expect_err("no pod spec");
        assert_eq!(error.path, "spec.template.spec");
        let error = pod_template(&json!({"apiVersion": "v1", "kind": "Pod", "spec": {"hostNetwork": "yes"}}))
            .expect_err("type");
        assert_eq!(error.path, "spec.hostNetwork");
    }

    #[test]
    fn lists_are_flattened() {
        let flat = flatten_lists(vec![
            (
                1,
                json!({"kind": "List", "items": [{"kind": "Pod"}, {"kind": "Service"}]}),
            ),
            (2, json!({"kind": "Pod"})),
        ]);
        let labels: Vec<&str> = flat.iter().map(|(label, _)| label.as_str()).collect();
        assert_eq!(labels, ["document 1, item 1", "document 1, item 2", "document 2"]);
    }
}
