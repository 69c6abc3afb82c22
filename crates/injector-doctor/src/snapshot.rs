//! Everything `doctor` read from the cluster, each read with its own outcome.
//!
//! The gatherer fills this in; the checks only read it. Keys of the maps are `namespace/name`.

use std::collections::BTreeMap;

use k8s_openapi::api::{
    admissionregistration::v1::MutatingWebhookConfiguration,
    core::v1::{ConfigMap, Event, Namespace, Pod, Service},
    discovery::v1::EndpointSlice,
    policy::v1::PodDisruptionBudget,
};
use serde::Serialize;
use serde_json::Value;

use crate::{CertificateSource, read::Read};

/// What the user asked `doctor` to look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The Istio revision whose webhooks and ConfigMap are checked (`default`).
    pub revision: String,
    /// The injector's namespace (its Secrets, ConfigMaps, pods): `istio-system`.
    pub injector_namespace: String,
    /// The injector ConfigMap's name (`istio-sidecar-injector[-REV]`).
    pub injector_configmap: String,
    /// The Secret holding our CA (self-managed certificates); only its certificates are kept.
    pub ca_secret: String,
    /// A Secret with `tls.crt` (and `ca.crt`) when certificates are external.
    pub tls_secret: Option<String>,
    /// Only this namespace's workloads, pods and events, when set.
    pub focus: Option<String>,
    /// Configurations checked besides Istio's names and labels.
    pub extra_webhook_configurations: Vec<String>,
    /// The injector's Service (in `injector_namespace`): a selected webhook pointing elsewhere
    /// is not the injector's.
    pub service_name: String,
    /// More hosts the injector's certificate names, for webhooks registered by `url:`.
    pub dns_names: Vec<String>,
}

impl Settings {
    /// Where the injector's webhooks point: its Service, a url to one of its names, or (where
    /// `doctor` dials it itself) a loopback url.
    pub fn endpoint(&self) -> crate::webhooks::InjectorEndpoint {
        let mut hosts = self.dns_names.clone();
        hosts.extend(["127.0.0.1", "::1", "localhost"].map(String::from));
        crate::webhooks::InjectorEndpoint::new(&self.injector_namespace, &self.service_name, &hosts)
    }
}

/// A TLS handshake with a webhook registered by a loopback `url:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handshake {
    /// The webhook's URL.
    pub url: String,
    /// The certificates the server sent (leaf first, DER), or why there are none.
    pub chain: Result<Vec<Vec<u8>>, String>,
}

/// The end-to-end probe: a server-side dry-run create of a minimal pod.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Probe {
    /// Where the pod was created.
    pub namespace: String,
    /// The pod sent (JSON).
    pub pod: Value,
    /// The pod the API server returned, or the error it answered with.
    #[serde(skip)]
    pub result: Result<Value, crate::ReadFailure>,
    /// How long the create took, milliseconds.
    pub millis: u64,
}

/// A list of one workload kind (`Deployment`, …) as JSON objects with `apiVersion` and `kind`.
pub type Workloads = BTreeMap<String, Read<Vec<Value>>>;

/// Everything read.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// When it was taken, Unix seconds.
    pub now: i64,
    /// What was asked.
    pub settings: Settings,
    /// Every namespace.
    pub namespaces: Read<Vec<Namespace>>,
    /// Every MutatingWebhookConfiguration.
    pub webhook_configurations: Read<Vec<MutatingWebhookConfiguration>>,
    /// The injector ConfigMap (`None`: it does not exist).
    pub injector_configmap: Read<Option<ConfigMap>>,
    /// Workloads by kind.
    pub workloads: Workloads,
    /// Pods (of the focus namespace, or all) that a check reads ([`crate::slim::pod`]).
    pub pods: Read<Vec<Pod>>,
    /// Services referenced by webhooks (`None`: absent).
    pub services: BTreeMap<String, Read<Option<Service>>>,
    /// EndpointSlices of those Services.
    pub endpoint_slices: BTreeMap<String, Read<Vec<EndpointSlice>>>,
    /// The pods those Services select.
    pub service_pods: BTreeMap<String, Read<Vec<Pod>>>,
    /// PodDisruptionBudgets of the namespaces of those Services.
    pub disruption_budgets: BTreeMap<String, Read<Vec<PodDisruptionBudget>>>,
    /// Core Events with reason `FailedCreate`.
    pub events: Read<Vec<Event>>,
    /// The certificates of the Secrets and ConfigMaps that may hold the CA or the serving
    /// certificate (`None`: absent) — certificates only, never a private key.
    pub certificates: BTreeMap<String, Read<Option<CertificateSource>>>,
    /// Handshakes with loopback `url:` webhooks, by URL.
    pub handshakes: BTreeMap<String, Handshake>,
    /// The end-to-end probe, when it ran.
    pub probe: Option<Probe>,
}

impl Snapshot {
    /// An empty snapshot in which every read failed with `failure` (no configuration, say).
    pub fn unreadable(now: i64, settings: Settings, failure: crate::ReadFailure) -> Self {
        Snapshot {
            now,
            settings,
            namespaces: Err(failure.clone()),
            webhook_configurations: Err(failure.clone()),
            injector_configmap: Err(failure.clone()),
            workloads: BTreeMap::new(),
            pods: Err(failure.clone()),
            services: BTreeMap::new(),
            endpoint_slices: BTreeMap::new(),
            service_pods: BTreeMap::new(),
            disruption_budgets: BTreeMap::new(),
            events: Err(failure),
            certificates: BTreeMap::new(),
            handshakes: BTreeMap::new(),
            probe: None,
        }
    }
}
