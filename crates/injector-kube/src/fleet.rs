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

/// Why objects could not be read or patched; each names the resource and, where there is one,
/// the object.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// The API server's list request could not be made or failed.
    #[error("listing {plural}: {source}")]
    List {
        /// The resource listed.
        plural: &'static str,
        /// What kube-rs said.
        source: Box<kube::Error>,
    },
    /// The list request could not be built.
    #[error("listing {plural}: {source}")]
    ListRequest {
        /// The resource listed.
        plural: &'static str,
        /// What kube-rs said.
        source: kube::core::request::Error,
    },
    /// An object read does not convert to JSON.
    #[error("{plural}: {source}")]
    Decode {
        /// The resource read.
        plural: &'static str,
        /// What serde said.
        source: serde_json::Error,
    },
    /// Reading one object failed.
    #[error("reading {kind} {namespace}/{name}: {source}")]
    Get {
        /// The object's kind.
        kind: &'static str,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// What kube-rs said.
        source: Box<kube::Error>,
    },
    /// Patching a workload failed.
    #[error("patching {kind} {namespace}/{name}: {source}")]
    Patch {
        /// The workload's kind.
        kind: &'static str,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// What kube-rs said.
        source: Box<kube::Error>,
    },
}

fn to_json(resource: &Resource, object: DynamicObject) -> Result<Value, FleetError> {
    let mut value = serde_json::to_value(object).map_err(|source| FleetError::Decode {
        plural: resource.plural,
        source,
    })?;
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".to_owned(), resource.api_version().into());
        map.insert("kind".to_owned(), resource.kind.into());
    }
    Ok(value)
}

/// Objects asked for per page: what one page holds at most while it is decoded and worked on.
pub const PAGE_SIZE: u32 = 250;

/// Every object of `resource`, in every namespace, whole (`status` included: a
/// PodDisruptionBudget's says how many disruptions it allows), [`PAGE_SIZE`] a page.
pub async fn list(client: &Client, resource: &Resource) -> Result<Vec<Value>, FleetError> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource.api_resource());
    let mut objects = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().limit(PAGE_SIZE);
        if let Some(token) = &token {
            params = params.continue_token(token);
        }
        let page = api.list(&params).await.map_err(|source| FleetError::List {
            plural: resource.plural,
            source: Box::new(source),
        })?;
        token = page.metadata.continue_.clone().filter(|t| !t.is_empty());
        for item in page.items {
            objects.push(to_json(resource, item)?);
        }
        if token.is_none() {
            return Ok(objects);
        }
    }
}

/// One page of a list.
#[derive(Debug)]
pub struct Page {
    /// The objects, with `apiVersion` and `kind`, without `status` and
    /// `metadata.managedFields` (never decoded: the list is read through the crate's slim list type).
    pub objects: Vec<Value>,
    /// The token of the next page; `None` on the last.
    pub next: Option<String>,
    /// How many objects the API server says are left after this page, when it says.
    pub remaining: Option<u64>,
}

/// The page of `resource` (every namespace) after `token` (`None`: the first), [`PAGE_SIZE`]
/// objects at most.
pub async fn list_page(
    client: &Client,
    resource: &Resource,
    token: Option<&str>,
) -> Result<Page, FleetError> {
    let mut params = ListParams::default().limit(PAGE_SIZE);
    if let Some(token) = token {
        params = params.continue_token(token);
    }
    let url = <DynamicObject as kube::Resource>::url_path(&resource.api_resource(), None);
    let request = kube::core::Request::new(url)
        .list(&params)
        .map_err(|source| FleetError::ListRequest {
            plural: resource.plural,
            source,
        })?;
    let list: crate::slim::SlimList = client.request(request).await.map_err(|source| FleetError::List {
        plural: resource.plural,
        source: Box::new(source),
    })?;
    let objects = list
        .items
        .into_iter()
        .map(|crate::slim::SlimObject(mut map)| {
            map.insert("apiVersion".to_owned(), resource.api_version().into());
            map.insert("kind".to_owned(), resource.kind.into());
            Value::Object(map)
        })
        .collect();
    Ok(Page {
        objects,
        next: list.metadata.continue_.filter(|t| !t.is_empty()),
        remaining: list
            .metadata
            .remaining_item_count
            .and_then(|n| u64::try_from(n).ok()),
    })
}

/// One namespaced object, `None` when it does not exist.
pub async fn get(
    client: &Client,
    resource: &Resource,
    namespace: &str,
    name: &str,
) -> Result<Option<Value>, FleetError> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource.api_resource());
    match api.get_opt(name).await {
        Ok(Some(object)) => to_json(resource, object).map(Some),
        Ok(None) => Ok(None),
        Err(source) => Err(FleetError::Get {
            kind: resource.kind,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source: Box::new(source),
        }),
    }
}

/// A ConfigMap's `data` key, `None` when the ConfigMap or the key is absent.
pub async fn config_map_key(
    client: &Client,
    namespace: &str,
    name: &str,
    key: &str,
) -> Result<Option<String>, FleetError> {
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
) -> Result<(), FleetError> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource.api_resource());
    let params = PatchParams {
        field_manager: Some("kubectl-rollout".to_owned()),
        ..PatchParams::default()
    };
    api.patch(name, &params, &Patch::Strategic(patch))
        .await
        .map(drop)
        .map_err(|source| FleetError::Patch {
            kind: resource.kind,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source: Box::new(source),
        })
}
