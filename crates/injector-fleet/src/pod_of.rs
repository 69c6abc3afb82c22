//! The pod a workload's controller creates from its template, as the API server sends it to
//! the webhook: the template's metadata and spec, a `generateName`, the namespace and a
//! controller reference, and the owner Istio's templates name (`ISTIO_META_WORKLOAD_NAME`).

use injector_core::workload::WorkloadKind;
use injector_engine::prepare::owner::Owner;
use serde_json::{Value, json};

use crate::snapshot::Workload;

/// The namespace a workload's pods are created in (`default` when it names none, as kubectl
/// with the default context would).
pub fn namespace_of(workload: &Workload) -> String {
    workload
        .template
        .owner
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".to_owned())
}

/// The pod the workload's controller would create (a bare Pod is itself).
pub fn pod_of(workload: &Workload) -> Value {
    if workload.template.kind == WorkloadKind::Pod {
        let mut pod = workload.object.clone();
        if pod.pointer("/metadata/namespace").is_none() {
            pod["metadata"]["namespace"] = json!(namespace_of(workload));
        }
        return pod;
    }
    let template = workload
        .template
        .kind
        .template_path()
        .iter()
        .try_fold(&workload.object, |value, key| value.get(key))
        .cloned()
        .unwrap_or(Value::Null);
    let owner = &workload.template.owner;
    let mut metadata = template
        .get("metadata")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    metadata["generateName"] = json!(format!("{}-", owner.name));
    metadata["namespace"] = json!(namespace_of(workload));
    metadata["ownerReferences"] = json!([{"apiVersion": owner.api_version, "kind": owner.kind,
        "name": owner.name, "controller": true}]);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
           "spec": template.get("spec").cloned().unwrap_or_else(|| json!({}))})
}

/// The workload Istio's injector names in the pod's proxy metadata: the workload itself (a
/// Deployment, not the ReplicaSet it creates; a CronJob, not its Job).
pub fn owner_of(workload: &Workload) -> Owner {
    let owner = &workload.template.owner;
    Owner {
        api_version: owner.api_version.clone(),
        kind: owner.kind.clone(),
        name: owner.name.clone(),
        namespace: namespace_of(workload),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::snapshot::Snapshot;

    #[test]
    fn a_deployment_pod_has_its_template_a_namespace_and_an_owner() {
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "a", "image": "a"}]}}}});
        let snapshot = Snapshot::from_objects([("d".to_owned(), deployment)]).expect("sorts");
        let workload = &snapshot.workloads[0];
        let pod = pod_of(workload);
        assert_eq!(pod["metadata"]["generateName"], "web-");
        assert_eq!(pod["metadata"]["namespace"], "shop");
        assert_eq!(pod["metadata"]["labels"]["app"], "web");
        assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "Deployment");
        assert_eq!(pod["spec"]["containers"][0]["name"], "a");
        let owner = owner_of(workload);
        assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("Deployment", "web"));
    }
}
