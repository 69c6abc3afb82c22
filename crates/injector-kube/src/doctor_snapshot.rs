//! Gathers the [`Snapshot`] `doctor` checks: every read on its own, so a refused one only
//! affects the checks that need it. Reads only — plus one server-side **dry-run** create for
//! the probe, which stores nothing — and TLS handshakes only with loopback `url:` webhooks.
//!
//! Certificates, never private keys: Istio's root is read from the `istio-ca-root-cert`
//! ConfigMap (not from `istio-ca-secret` or `cacerts`, which hold its key); the two Secrets with
//! no key-free copy (ours, `--ca-secret`, and `--tls-secret`) are turned into their certificates
//! as soon as they arrive ([`CertificateSource::from_secret`]), the rest of them dropped.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use injector_doctor::{
    CertificateSource, Probe, Read, ReadFailure, ReadFailureKind, Settings, Snapshot,
    checks::{ca_bundle::ISTIO_ROOT_CONFIGMAP, probe},
    webhooks::Target,
};
use k8s_openapi::api::{
    admissionregistration::v1::MutatingWebhookConfiguration,
    apps::v1::{DaemonSet, Deployment, StatefulSet},
    batch::v1::{CronJob, Job},
    core::v1::{ConfigMap, Event, Namespace, Pod, Secret, Service},
    discovery::v1::EndpointSlice,
    policy::v1::PodDisruptionBudget,
};
use kube::api::{Api, ListParams, PostParams};
use kube::{Client, Resource};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::reads::{failure, get, list, list_paged};

/// What to gather besides the reads.
#[derive(Debug, Clone)]
pub struct GatherOptions {
    /// What the user asked.
    pub settings: Settings,
    /// Run the probe: in this namespace, or (`Some(None)`) where [`probe::choose_namespace`] says.
    pub probe: Option<Option<String>>,
    /// Timeout of each handshake.
    pub handshake_timeout: Duration,
}

/// Gathers everything. `client` is the client, or why there is none (no kubeconfig).
pub async fn gather(client: Result<Client, crate::client::ClientError>, options: GatherOptions) -> Snapshot {
    let now = now();
    let settings = options.settings.clone();
    let client = match client {
        Ok(client) => client,
        Err(error) => {
            return Snapshot::unreadable(
                now,
                settings,
                ReadFailure {
                    attempted: "connect to the cluster".into(),
                    kind: ReadFailureKind::NoConfiguration,
                    message: error.to_string(),
                },
            );
        }
    };
    let namespaces: Read<Vec<Namespace>> = list_paged(
        &Api::all(client.clone()),
        &ListParams::default(),
        "list namespaces".into(),
        Some,
    )
    .await;
    if let Err(failure) = &namespaces
        && failure.kind == ReadFailureKind::Unreachable
    {
        return Snapshot::unreadable(now, settings, failure.clone());
    }
    let webhook_configurations: Read<Vec<MutatingWebhookConfiguration>> = list(
        &Api::all(client.clone()),
        &ListParams::default(),
        "list mutatingwebhookconfigurations".into(),
    )
    .await;
    let ns = &settings.injector_namespace;
    let injector_configmap: Read<Option<ConfigMap>> = get(
        &Api::namespaced(client.clone(), ns),
        &settings.injector_configmap,
        format!("get configmaps {ns}/{}", settings.injector_configmap),
    )
    .await;
    let focus = settings.focus.clone();
    let mut workloads = BTreeMap::new();
    workloads.insert(
        "Deployment".to_owned(),
        workload_list::<Deployment>(&client, focus.as_deref()).await,
    );
    workloads.insert(
        "StatefulSet".to_owned(),
        workload_list::<StatefulSet>(&client, focus.as_deref()).await,
    );
    workloads.insert(
        "DaemonSet".to_owned(),
        workload_list::<DaemonSet>(&client, focus.as_deref()).await,
    );
    workloads.insert(
        "CronJob".to_owned(),
        workload_list::<CronJob>(&client, focus.as_deref()).await,
    );
    // Jobs a CronJob created carry its template: only stand-alone Jobs are looked at.
    let jobs = workload_list::<Job>(&client, focus.as_deref()).await.map(|jobs| {
        jobs.into_iter()
            .filter(|j| j.pointer("/metadata/ownerReferences").is_none())
            .collect()
    });
    workloads.insert("Job".to_owned(), jobs);
    // Pods are the most numerous objects: only those a check reads are kept, with what it reads.
    let pods: Read<Vec<Pod>> = list_paged(
        &scoped(&client, focus.as_deref()),
        &ListParams::default(),
        attempted("list pods", focus.as_deref()),
        injector_doctor::slim::pod,
    )
    .await;
    let events: Read<Vec<Event>> = list_paged(
        &scoped(&client, focus.as_deref()),
        &ListParams::default().fields("reason=FailedCreate"),
        attempted("list events", focus.as_deref()),
        Some,
    )
    .await;

    let mut snapshot = Snapshot {
        now,
        settings: settings.clone(),
        namespaces,
        webhook_configurations,
        injector_configmap,
        workloads,
        pods,
        services: BTreeMap::new(),
        endpoint_slices: BTreeMap::new(),
        service_pods: BTreeMap::new(),
        disruption_budgets: BTreeMap::new(),
        events,
        certificates: BTreeMap::new(),
        handshakes: BTreeMap::new(),
        probe: None,
    };
    let targets: Vec<Target> = match &snapshot.webhook_configurations {
        Ok(all) => injector_doctor::webhooks::our_webhooks(all, &settings)
            .into_iter()
            .map(|(_, w)| Target::of(w))
            .collect(),
        Err(_) => Vec::new(),
    };
    let mut seen = BTreeSet::new();
    for target in &targets {
        match target {
            Target::Service { namespace, name, .. } if seen.insert(format!("{namespace}/{name}")) => {
                read_service(&client, &mut snapshot, namespace, name).await;
            }
            Target::Url {
                url, loopback: true, ..
            } if !snapshot.handshakes.contains_key(url) => {
                let handshake = crate::handshake::handshake(url, options.handshake_timeout).await;
                snapshot.handshakes.insert(url.clone(), handshake);
            }
            _ => {}
        }
    }
    let mut secret_names = vec![settings.ca_secret.clone()];
    secret_names.extend(settings.tls_secret.clone());
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    for name in secret_names {
        let read = get(&secrets, &name, format!("get secrets {ns}/{name}"))
            .await
            .map(|found| found.map(CertificateSource::from_secret));
        snapshot.certificates.insert(format!("{ns}/{name}"), read);
    }
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let root = get(
        &config_maps,
        ISTIO_ROOT_CONFIGMAP,
        format!("get configmaps {ns}/{ISTIO_ROOT_CONFIGMAP}"),
    )
    .await
    .map(|found| found.as_ref().map(CertificateSource::from_config_map));
    snapshot
        .certificates
        .insert(format!("{ns}/{ISTIO_ROOT_CONFIGMAP}"), root);
    if let Some(namespace) = options.probe {
        let namespace = namespace.unwrap_or_else(|| probe::choose_namespace(&snapshot));
        snapshot.probe = Some(run_probe(&client, &namespace).await);
    }
    snapshot
}

async fn read_service(client: &Client, snapshot: &mut Snapshot, namespace: &str, name: &str) {
    let key = format!("{namespace}/{name}");
    let service: Read<Option<Service>> = get(
        &Api::namespaced(client.clone(), namespace),
        name,
        format!("get services {namespace}/{name}"),
    )
    .await;
    let slices: Read<Vec<EndpointSlice>> = list(
        &Api::namespaced(client.clone(), namespace),
        &ListParams::default().labels(&format!("kubernetes.io/service-name={name}")),
        format!("list endpointslices {namespace}"),
    )
    .await;
    if let Ok(Some(service)) = &service
        && let Some(selector) = service.spec.as_ref().and_then(|s| s.selector.as_ref())
        && !selector.is_empty()
    {
        let labels: Vec<String> = selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let pods: Read<Vec<Pod>> = list(
            &Api::namespaced(client.clone(), namespace),
            &ListParams::default().labels(&labels.join(",")),
            format!("list pods {namespace}"),
        )
        .await;
        snapshot.service_pods.insert(key.clone(), pods);
    }
    if !snapshot.disruption_budgets.contains_key(namespace) {
        let budgets: Read<Vec<PodDisruptionBudget>> = list(
            &Api::namespaced(client.clone(), namespace),
            &ListParams::default(),
            format!("list poddisruptionbudgets {namespace}"),
        )
        .await;
        snapshot.disruption_budgets.insert(namespace.to_owned(), budgets);
    }
    snapshot.services.insert(key.clone(), service);
    snapshot.endpoint_slices.insert(key, slices);
}

async fn run_probe(client: &Client, namespace: &str) -> Probe {
    let pod = probe::probe_pod(namespace);
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let started = Instant::now();
    let result = match serde_json::from_value::<Pod>(pod.clone()) {
        Ok(typed) => api
            .create(&params, &typed)
            .await
            .map_err(|e| failure(format!("create pods {namespace} (dry run)"), &e))
            .and_then(|created| {
                serde_json::to_value(created).map_err(|e| ReadFailure {
                    attempted: "read the probe's answer".into(),
                    kind: ReadFailureKind::Other,
                    message: e.to_string(),
                })
            }),
        Err(e) => Err(ReadFailure {
            attempted: "build the probe pod".into(),
            kind: ReadFailureKind::Other,
            message: e.to_string(),
        }),
    };
    Probe {
        namespace: namespace.to_owned(),
        pod,
        result,
        millis: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    }
}

/// Lists one workload kind (all namespaces, or the focus) as JSON with `apiVersion` and `kind`,
/// page by page, each object kept as the checks read it ([`injector_doctor::slim::workload`]).
async fn workload_list<K>(client: &Client, focus: Option<&str>) -> Read<Vec<Value>>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug,
{
    let plural = K::plural(&()).into_owned();
    list_paged(
        &scoped(client, focus),
        &ListParams::default(),
        attempted(&format!("list {plural}"), focus),
        |object: K| {
            serde_json::to_value(&object)
                .ok()
                .map(injector_doctor::slim::workload)
        },
    )
    .await
}

fn scoped<K>(client: &Client, focus: Option<&str>) -> Api<K>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
{
    match focus {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    }
}

fn attempted(verb_resource: &str, focus: Option<&str>) -> String {
    match focus {
        Some(namespace) => format!("{verb_resource} {namespace}"),
        None => verb_resource.to_owned(),
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
