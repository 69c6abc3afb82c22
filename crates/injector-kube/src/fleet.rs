//! What `preview` and `outdated` read from a live cluster, and the one write `outdated
//! --restart` makes. Objects are read as JSON (never decoded into typed structs, so nothing the
//! library does not know is lost), page by page, with their `apiVersion` and `kind` set as a
//! `kubectl get -A -o yaml` snapshot has them.

use kube::{
    Client,
    api::{Api, DynamicObject, ListParams, Patch, PatchParams},
    core::{ApiResource, GroupVersionKind},
};
use serde_json::Value;

/// One kind to read: group, version, kind, plural.
#[derive(Debug, Clone, Copy)]
pub struct Resource {
    /// API group (`""` for the core group).
    pub group: &'static str,
    /// Version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Plural resource name.
    pub plural: &'static str,
}

impl Resource {
    fn api_resource(&self) -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(self.group, self.version, self.kind),
            self.plural,
        )
    }

    fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

const fn resource(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
) -> Resource {
    Resource {
        group,
        version,
        kind,
        plural,
    }
}

/// Namespaces (their labels decide injection).
pub const NAMESPACES: Resource = resource("", "v1", "Namespace", "namespaces");
/// Every workload kind, the pods and the PodDisruptionBudgets: what `preview` and `outdated` read.
pub const WORKLOADS: [Resource; 9] = [
    resource("apps", "v1", "Deployment", "deployments"),
    resource("apps", "v1", "StatefulSet", "statefulsets"),
    resource("apps", "v1", "DaemonSet", "daemonsets"),
    resource("apps", "v1", "ReplicaSet", "replicasets"),
    resource("batch", "v1", "Job", "jobs"),
    resource("batch", "v1", "CronJob", "cronjobs"),
    resource("", "v1", "ReplicationController", "replicationcontrollers"),
    resource("", "v1", "Pod", "pods"),
    resource("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets"),
];
/// The MutatingWebhookConfigurations.
pub const WEBHOOKS: Resource = resource(
    "admissionregistration.k8s.io",
    "v1",
    "MutatingWebhookConfiguration",
    "mutatingwebhookconfigurations",
);

/// The kind's resource among [`WORKLOADS`].
pub fn workload_resource(kind: &str) -> Option<Resource> {
    WORKLOADS.iter().copied().find(|r| r.kind == kind)
}

fn to_json(resource: &Resource, object: DynamicObject) -> Result<Value, String> {
    let mut value = serde_json::to_value(object).map_err(|e| format!("{}: {e}", resource.plural))?;
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".to_owned(), resource.api_version().into());
        map.insert("kind".to_owned(), resource.kind.into());
    }
    Ok(value)
}

/// Every object of `resource`, in every namespace, 500 a page.
pub async fn list(client: &Client, resource: &Resource) -> Result<Vec<Value>, String> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource.api_resource());
    let mut objects = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().limit(500);
        if let Some(token) = &token {
            params = params.continue_token(token);
        }
        let page = api
            .list(&params)
            .await
            .map_err(|e| format!("listing {}: {e}", resource.plural))?;
        token = page.metadata.continue_.clone().filter(|t| !t.is_empty());
        for item in page.items {
            objects.push(to_json(resource, item)?);
        }
        if token.is_none() {
            return Ok(objects);
        }
    }
}

/// One namespaced object, `None` when it does not exist.
pub async fn get(
    client: &Client,
    resource: &Resource,
    namespace: &str,
    name: &str,
) -> Result<Option<Value>, String> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource.api_resource());
    match api.get_opt(name).await {
        Ok(Some(object)) => to_json(resource, object).map(Some),
        Ok(None) => Ok(None),
        Err(e) => Err(format!("reading {} {namespace}/{name}: {e}", resource.kind)),
    }
}

/// A ConfigMap's `data` key, `None` when the ConfigMap or the key is absent.
pub async fn config_map_key(
    client: &Client,
    namespace: &str,
    name: &str,
    key: &str,
) -> Result<Option<String>, String> {
    let config_maps = resource("", "v1", "ConfigMap", "configmaps");
    Ok(get(client, &config_maps, namespace, name).await?.and_then(|cm| {
        cm.pointer(&format!("/data/{key}"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    }))
}

/// Applies a strategic-merge patch (`kubectl rollout restart`'s) to a workload.
pub async fn patch(
    client: &Client,
    resource: &Resource,
    namespace: &str,
    name: &str,
    patch: &Value,
) -> Result<(), String> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource.api_resource());
    let params = PatchParams {
        field_manager: Some("kubectl-rollout".to_owned()),
        ..PatchParams::default()
    };
    api.patch(name, &params, &Patch::Strategic(patch))
        .await
        .map(drop)
        .map_err(|e| format!("patching {} {namespace}/{name}: {e}", resource.kind))
}
