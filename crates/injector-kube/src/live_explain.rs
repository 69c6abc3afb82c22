//! The reads of live `explain`: the workload (by `KIND/NAME`), its namespace, the webhook
//! configurations of a revision and the injector's ConfigMaps. Every failure says what was
//! attempted and, when refused, which permission it needs.

use injector_doctor::ReadFailure;
use k8s_openapi::api::{
    admissionregistration::v1::MutatingWebhookConfiguration,
    apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet},
    batch::v1::{CronJob, Job},
    core::v1::{ConfigMap, Namespace, Pod},
};
use kube::api::{Api, ListParams};
use kube::{Client, Resource};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::reads::{get, list};
use crate::{ConfigMapNames, WebhookSelection};

/// Why `explain` could not read what it explains from the cluster.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// A read failed (forbidden, unreachable, ...): what was attempted and how to check.
    #[error("{}", explain_failure(.0))]
    Read(ReadFailure),
    /// `explain` reads no objects of this kind.
    #[error("explain cannot read {0} objects")]
    UnsupportedKind(String),
    /// The workload does not exist.
    #[error("{kind} {namespace}/{name} not found")]
    NotFound {
        /// Its kind.
        kind: String,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// The namespace does not exist.
    #[error("namespace {0} not found")]
    NamespaceNotFound(String),
    /// An object read does not convert to JSON.
    #[error("{0}")]
    Decode(#[source] serde_json::Error),
}

/// The kinds `explain TYPE/NAME` reads, with the names kubectl accepts for them.
pub const KINDS: &[(&str, &[&str])] = &[
    ("Pod", &["pod", "pods", "po"]),
    ("Deployment", &["deployment", "deployments", "deploy"]),
    ("StatefulSet", &["statefulset", "statefulsets", "sts"]),
    ("DaemonSet", &["daemonset", "daemonsets", "ds"]),
    ("ReplicaSet", &["replicaset", "replicasets", "rs"]),
    ("Job", &["job", "jobs"]),
    ("CronJob", &["cronjob", "cronjobs", "cj"]),
];

/// The kind named by `TYPE` (`deploy`, `pods`, `Deployment`, `deployment.apps`).
pub fn kind_of(text: &str) -> Option<&'static str> {
    let lower = text.to_ascii_lowercase();
    let base = lower.split('.').next().unwrap_or("");
    KINDS
        .iter()
        .find(|(kind, names)| kind.eq_ignore_ascii_case(base) || names.contains(&base))
        .map(|(kind, _)| *kind)
}

/// Reads one workload as JSON (with `apiVersion` and `kind`).
pub async fn workload(client: &Client, kind: &str, namespace: &str, name: &str) -> Result<Value, LiveError> {
    match kind {
        "Pod" => one::<Pod>(client, namespace, name).await,
        "Deployment" => one::<Deployment>(client, namespace, name).await,
        "StatefulSet" => one::<StatefulSet>(client, namespace, name).await,
        "DaemonSet" => one::<DaemonSet>(client, namespace, name).await,
        "ReplicaSet" => one::<ReplicaSet>(client, namespace, name).await,
        "Job" => one::<Job>(client, namespace, name).await,
        "CronJob" => one::<CronJob>(client, namespace, name).await,
        other => Err(LiveError::UnsupportedKind(other.to_owned())),
    }
}

async fn one<K>(client: &Client, namespace: &str, name: &str) -> Result<Value, LiveError>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug,
{
    let plural = K::plural(&()).into_owned();
    let attempted = format!("get {plural} {namespace}/{name}");
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    match get(&api, name, attempted).await.map_err(LiveError::Read)? {
        Some(object) => serde_json::to_value(object).map_err(LiveError::Decode),
        None => Err(LiveError::NotFound {
            kind: K::kind(&()).into_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }),
    }
}

/// What `explain` needs besides the workload.
#[derive(Debug, Clone)]
pub struct LiveContext {
    /// The Namespace object (JSON).
    pub namespace: Value,
    /// The revision's webhook configurations (JSON): Istio's name, or labelled `istio.io/rev`.
    pub webhooks: Vec<Value>,
    /// The names of the configurations found.
    pub webhook_names: Vec<String>,
    /// The injector ConfigMap, when it exists.
    pub injector_configmap: Option<ConfigMap>,
    /// The mesh ConfigMap, when it exists.
    pub mesh_configmap: Option<ConfigMap>,
    /// Where they were looked for.
    pub names: ConfigMapNames,
}

/// Reads the Namespace `namespace`.
pub async fn namespace(client: &Client, namespace: &str) -> Result<Value, LiveError> {
    let api: Api<Namespace> = Api::all(client.clone());
    match get(&api, namespace, format!("get namespaces {namespace}"))
        .await
        .map_err(LiveError::Read)?
    {
        Some(object) => serde_json::to_value(object).map_err(LiveError::Decode),
        None => Err(LiveError::NamespaceNotFound(namespace.to_owned())),
    }
}

/// Reads the webhooks and ConfigMaps of `revision` (ConfigMaps in `config_namespace`).
pub async fn context(
    client: &Client,
    namespace: Value,
    revision: &str,
    config_namespace: &str,
) -> Result<LiveContext, LiveError> {
    let selection = WebhookSelection::istio(revision);
    let all: Vec<MutatingWebhookConfiguration> = list(
        &Api::all(client.clone()),
        &ListParams::default(),
        "list mutatingwebhookconfigurations".into(),
    )
    .await
    .map_err(LiveError::Read)?;
    let ours: Vec<&MutatingWebhookConfiguration> = all.iter().filter(|c| selection.selects(c)).collect();
    let names = ConfigMapNames::istio(config_namespace, revision);
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), config_namespace);
    let injector_configmap = get(
        &configmaps,
        &names.injector,
        format!("get configmaps {config_namespace}/{}", names.injector),
    )
    .await
    .map_err(LiveError::Read)?;
    let mesh_configmap = get(
        &configmaps,
        &names.mesh,
        format!("get configmaps {config_namespace}/{}", names.mesh),
    )
    .await
    .map_err(LiveError::Read)?;
    Ok(LiveContext {
        namespace,
        webhook_names: ours.iter().filter_map(|c| c.metadata.name.clone()).collect(),
        webhooks: ours.iter().filter_map(|c| serde_json::to_value(c).ok()).collect(),
        injector_configmap,
        mesh_configmap,
        names,
    })
}

fn explain_failure(failure: &ReadFailure) -> String {
    let mut text = failure.explain();
    if failure.kind == injector_doctor::ReadFailureKind::Forbidden {
        text.push_str(&format!(" — check with: {}", failure.permission_check()));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_named_as_kubectl_names_them() {
        assert_eq!(kind_of("deploy"), Some("Deployment"));
        assert_eq!(kind_of("pods"), Some("Pod"));
        assert_eq!(kind_of("deployment.apps"), Some("Deployment"));
        assert_eq!(kind_of("StatefulSet"), Some("StatefulSet"));
        assert_eq!(kind_of("cj"), Some("CronJob"));
        assert_eq!(kind_of("service"), None);
    }
}
