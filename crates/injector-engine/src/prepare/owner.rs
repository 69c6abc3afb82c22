//! Which workload owns a pod: Istio's `GetDeployMetaFromPod` heuristic.
//!
//! The webhook only sees the pod, yet the templates name the workload (`ISTIO_META_WORKLOAD_NAME`,
//! `ISTIO_META_OWNER`, the canonical service name). For a pod with a `generateName` and a
//! controller owner reference, the owner is that controller, with four refinements:
//!
//! - a ReplicaSet whose name ends with the pod's `pod-template-hash` label is a **Deployment**
//!   named without `-<hash>` (the apiVersion stays the ReplicaSet's);
//! - the same with `rollouts-pod-template-hash` is an Argo **Rollout** (apiVersion `v1alpha1`);
//! - a ReplicationController with a pod label `deploymentconfig` is an OpenShift
//!   **DeploymentConfig** named by that label;
//! - a Job named `<x>-<8 to 10 digits>` is a **CronJob** `<x>` (apiVersion `batch/v1`).
//!
//! Otherwise the pod is its own owner (`v1/Pod`).

use serde_json::Value;

use crate::member::Members;

/// The workload a pod belongs to, as the templates see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// `apiVersion` of the workload (`TypeMeta.APIVersion`).
    pub api_version: String,
    /// `kind` of the workload (`TypeMeta.Kind`).
    pub kind: String,
    /// The workload's name (`DeploymentMeta.Name`).
    pub name: String,
    /// The pod's namespace (`DeploymentMeta.Namespace`).
    pub namespace: String,
}

/// Derives the owning workload from a pod's metadata (Istio's `GetDeployMetaFromPod`).
pub fn owner_of(pod: &Value) -> Owner {
    let metadata = pod.member("metadata").unwrap_or(&Value::Null);
    let text = |value: Option<&Value>| value.and_then(Value::as_str).unwrap_or("").to_owned();
    let pod_name = text(metadata.member("name"));
    let label = |key: &str| text(metadata.member("labels").and_then(|labels| labels.member(key)));
    let mut owner = Owner {
        api_version: "v1".to_owned(),
        kind: "Pod".to_owned(),
        name: pod_name.clone(),
        namespace: text(metadata.member("namespace")),
    };
    let generated = !text(metadata.member("generateName")).is_empty();
    let controller = metadata
        .member("ownerReferences")
        .and_then(Value::as_array)
        .and_then(|refs| {
            refs.iter()
                .find(|r| r.member("controller").and_then(Value::as_bool) == Some(true))
        });
    if let (true, Some(controller)) = (generated, controller) {
        owner.api_version = text(controller.member("apiVersion"));
        owner.kind = text(controller.member("kind"));
        owner.name = text(controller.member("name"));
        let hash = label("pod-template-hash");
        let rollout_hash = label("rollouts-pod-template-hash");
        let deployment_config = label("deploymentconfig");
        if owner.kind == "ReplicaSet" && !hash.is_empty() && owner.name.ends_with(&hash) {
            owner.name = trim_suffix(&owner.name, &format!("-{hash}"));
            owner.kind = "Deployment".to_owned();
        } else if owner.kind == "ReplicaSet"
            && !rollout_hash.is_empty()
            && owner.name.ends_with(&rollout_hash)
        {
            owner.name = trim_suffix(&owner.name, &format!("-{rollout_hash}"));
            owner.kind = "Rollout".to_owned();
            owner.api_version = "v1alpha1".to_owned();
        } else if owner.kind == "ReplicationController" && !deployment_config.is_empty() {
            owner.name = deployment_config;
            owner.kind = "DeploymentConfig".to_owned();
        } else if owner.kind == "Job"
            && let Some(cron_job) = cron_job_name(&owner.name)
        {
            owner.name = cron_job.to_owned();
            owner.kind = "CronJob".to_owned();
            owner.api_version = "batch/v1".to_owned();
        }
    }
    if owner.name.is_empty() {
        owner.name = pod_name;
    }
    owner
}

fn trim_suffix(text: &str, suffix: &str) -> String {
    text.strip_suffix(suffix).unwrap_or(text).to_owned()
}

/// `(.+)-\d{8,10}$`: the CronJob name of a Job named with a scheduled-time suffix.
fn cron_job_name(job: &str) -> Option<&str> {
    let digits = job.bytes().rev().take_while(u8::is_ascii_digit).count();
    // A '-' must stand right before the last 8, 9 or 10 characters, all digits, with a non-empty
    // name before it.
    (8..=10).filter(|n| *n <= digits).find_map(|n| {
        let cut = job.len() - n;
        let prefix = job[..cut].strip_suffix('-')?;
        (!prefix.is_empty()).then_some(prefix)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(generate: bool, labels: Value, owner: Option<(&str, &str, &str)>) -> Value {
        let mut metadata = json!({"name": "", "namespace": "ns", "labels": labels});
        if generate {
            metadata["generateName"] = json!("x-");
        } else {
            metadata["name"] = json!("solo");
        }
        if let Some((api_version, kind, name)) = owner {
            metadata["ownerReferences"] = json!([{"apiVersion": api_version, "kind": kind, "name": name, "controller": true, "uid": "u"}]);
        }
        json!({"metadata": metadata})
    }

    fn owner(api_version: &str, kind: &str, name: &str) -> Owner {
        Owner {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            namespace: "ns".into(),
        }
    }

    #[test]
    fn bare_pod_owns_itself() {
        assert_eq!(owner_of(&pod(false, json!({}), None)), owner("v1", "Pod", "solo"));
    }

    #[test]
    fn named_pod_ignores_owner_references() {
        assert_eq!(
            owner_of(&pod(false, json!({}), Some(("apps/v1", "ReplicaSet", "rs")))),
            owner("v1", "Pod", "solo")
        );
    }

    #[test]
    fn replica_set_with_hash_is_a_deployment() {
        let p = pod(
            true,
            json!({"pod-template-hash": "5d8f9c"}),
            Some(("apps/v1", "ReplicaSet", "web-5d8f9c")),
        );
        assert_eq!(owner_of(&p), owner("apps/v1", "Deployment", "web"));
        let bare = pod(true, json!({}), Some(("apps/v1", "ReplicaSet", "web-5d8f9c")));
        assert_eq!(owner_of(&bare), owner("apps/v1", "ReplicaSet", "web-5d8f9c"));
    }

    #[test]
    fn argo_rollout() {
        let p = pod(
            true,
            json!({"rollouts-pod-template-hash": "abc"}),
            Some(("apps/v1", "ReplicaSet", "r-abc")),
        );
        assert_eq!(owner_of(&p), owner("v1alpha1", "Rollout", "r"));
    }

    #[test]
    fn deployment_config() {
        let p = pod(
            true,
            json!({"deploymentconfig": "dc"}),
            Some(("v1", "ReplicationController", "dc-1")),
        );
        assert_eq!(owner_of(&p), owner("v1", "DeploymentConfig", "dc"));
    }

    #[test]
    fn cron_job_from_job_suffix() {
        let p = pod(true, json!({}), Some(("batch/v1", "Job", "tick-28800000")));
        assert_eq!(owner_of(&p), owner("batch/v1", "CronJob", "tick"));
        let short = pod(true, json!({}), Some(("batch/v1", "Job", "tick-1234567")));
        assert_eq!(owner_of(&short), owner("batch/v1", "Job", "tick-1234567"));
        assert_eq!(cron_job_name("a-b-12345678901"), None, "11 digits after the dash");
        assert_eq!(cron_job_name("a-1-123456789"), Some("a-1"));
        assert_eq!(cron_job_name("-12345678"), None);
    }
}
