//! Cluster mode's wiring: the watches, the Lease, the certificate reconciler, the
//! configuration from ConfigMaps and native-sidecar detection, each a task of its own that
//! reacts to what its watch sees. Admissions never wait on any of them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Secret};
use kube::runtime::watcher;
use kube::{Api, Client};
use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch as channel;

use injector_server::{CertStore, ConfigStore, Extension};

use crate::certificates::{CertificateMode, Observed, Reconciler};
use crate::configmaps::{ConfigMapNames, config_files};
use crate::events::{EventSink, Scope};
use crate::nodes::NodeVersions;
use crate::probe::ProbeOptions;
use crate::probe::metrics::ProbeMetrics;
use crate::status::Shared;
use crate::watch;
use crate::webhooks::{FIELD_MANAGER, InjectorEndpoint, WebhookSelection, claim};

/// Native sidecars in cluster mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeSidecars {
    /// As given by the flag.
    Fixed(bool),
    /// Istio's `auto`: on only when every node's kubelet is 1.33 or newer, followed as nodes
    /// come and go.
    Auto,
}

/// Everything cluster mode needs to know.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// The injector's namespace (its Secret, Lease and, by default, ConfigMaps).
    pub namespace: String,
    /// The Service in front of the replicas: the serving certificate is for
    /// `NAME.NS.svc`, `NAME.NS.svc.cluster.local`, `NAME.NS` and `NAME`.
    pub service_name: String,
    /// More names or IP addresses for the serving certificate.
    pub extra_names: Vec<String>,
    /// Self-managed CA or an externally written Secret.
    pub certificates: CertificateMode,
    /// The webhook configurations whose caBundle is ours.
    pub webhooks: WebhookSelection,
    /// The configuration's ConfigMaps.
    pub config: ConfigMapNames,
    /// The Lease that elects the replica that patches caBundles and rotates the CA.
    pub lease_name: String,
    /// This replica's identity in the Lease (the pod name).
    pub identity: String,
    /// How long a Lease lasts without renewal (a dead leader is replaced within it).
    pub lease_duration: Duration,
    /// Native sidecars.
    pub native_sidecars: NativeSidecars,
    /// How often the time-based steps (rotation, renewal) are checked without any change.
    pub resync: Duration,
    /// Write Events on the workloads of admitted pods.
    pub events: bool,
    /// The synthetic admission probe (`None`: off).
    pub probe: Option<ProbeOptions>,
}

impl ClusterOptions {
    /// The serving certificate's names.
    pub fn serving_names(&self) -> Vec<String> {
        let (svc, ns) = (&self.service_name, &self.namespace);
        let mut names = vec![
            format!("{svc}.{ns}.svc"),
            format!("{svc}.{ns}.svc.cluster.local"),
            format!("{svc}.{ns}"),
            svc.clone(),
        ];
        for n in &self.extra_names {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
        names
    }
}

/// The running cluster mode.
#[derive(Debug, Clone)]
pub struct Cluster {
    shared: Shared,
    events: Option<EventSink>,
    probe: Option<ProbeMetrics>,
}

impl Cluster {
    /// Starts every task. `native` is the flag the configuration loader reads for native
    /// sidecars; in `auto` mode it is set from the nodes (before the first configuration
    /// loads) and the configuration is reloaded when it changes.
    pub async fn start<C: Send + Sync + 'static>(
        client: Client,
        options: ClusterOptions,
        certs: CertStore,
        config: ConfigStore<C>,
        native: Arc<AtomicBool>,
    ) -> Cluster {
        let shared = Shared::default();
        let endpoint = InjectorEndpoint::new(&options.namespace, &options.service_name, &options.extra_names);
        let webhooks = watch_webhooks(client.clone(), options.webhooks.clone(), endpoint, shared.clone());
        let events = options.events.then(|| {
            let scope = Scope::default();
            follow_webhooks_in(webhooks.clone(), scope.clone());
            watch_namespaces(client.clone(), scope.clone());
            crate::events::spawn(client.clone(), options.identity.clone(), scope)
        });
        shared.update(|s| {
            s.identity = options.identity.clone();
            s.secret = format!("{}/{}", options.namespace, options.certificates.secret());
            s.certificates = match options.certificates {
                CertificateMode::SelfManaged { .. } => "self-managed".into(),
                CertificateMode::External { .. } => "external".into(),
            };
        });
        match options.native_sidecars {
            NativeSidecars::Fixed(on) => native.store(on, Ordering::SeqCst),
            NativeSidecars::Auto => watch_nodes(client.clone(), native, config.clone(), shared.clone()).await,
        }
        watch_config(client.clone(), options.config.clone(), config);
        let leader = elect(client.clone(), &options, shared.clone());
        let probe = options.probe.clone().map(|probe_options| {
            let metrics = ProbeMetrics::default();
            crate::probe::runner::spawn(
                client.clone(),
                probe_options,
                leader.clone(),
                shared.clone(),
                metrics.clone(),
            );
            metrics
        });
        let secret = watch_secret(client.clone(), &options);
        let reconciler = Reconciler::new(
            client,
            &options.namespace,
            options.certificates.clone(),
            options.serving_names(),
            certs,
            shared.clone(),
        );
        tokio::spawn(reconcile_loop(
            reconciler,
            secret,
            webhooks,
            leader,
            options.resync,
        ));
        Cluster {
            shared,
            events,
            probe,
        }
    }

    /// Where the admission handler hands its outcomes for Events (`None`: Events are off).
    pub fn events(&self) -> Option<EventSink> {
        self.events.clone()
    }

    /// The `/readyz` section and the metrics of cluster mode.
    pub fn extension(&self) -> Extension {
        let status = self.shared.clone();
        let metrics = self.shared.metrics.clone();
        let events = self.events.clone();
        let probe = self.probe.clone();
        Extension::default()
            .with_status("cluster", move || {
                serde_json::to_value(status.snapshot()).unwrap_or_default()
            })
            .with_metrics(move |registry| {
                metrics.register(registry);
                if let Some(events) = &events {
                    events.register(registry);
                }
                if let Some(probe) = &probe {
                    probe.register(registry);
                }
            })
    }
}

async fn reconcile_loop(
    mut reconciler: Reconciler,
    mut secret: channel::Receiver<Observed<Secret>>,
    mut webhooks: channel::Receiver<Option<Vec<MutatingWebhookConfiguration>>>,
    mut leader: channel::Receiver<bool>,
    resync: Duration,
) {
    loop {
        let observed_secret = secret.borrow_and_update().clone();
        let observed_webhooks = webhooks.borrow_and_update().clone();
        let is_leader = *leader.borrow_and_update();
        reconciler
            .step(&observed_secret, observed_webhooks.as_deref(), is_leader)
            .await;
        tokio::select! {
            r = secret.changed() => if r.is_err() { return },
            r = webhooks.changed() => if r.is_err() { return },
            r = leader.changed() => if r.is_err() { return },
            _ = tokio::time::sleep(resync) => {}
        }
    }
}

fn watch_secret(client: Client, options: &ClusterOptions) -> channel::Receiver<Observed<Secret>> {
    let name = options.certificates.secret().to_owned();
    let (tx, rx) = channel::channel(Observed::Unknown);
    let what = format!("Secret {}/{name}", options.namespace);
    watch::spawn(
        Api::<Secret>::namespaced(client, &options.namespace),
        watcher::Config::default().fields(&format!("metadata.name={name}")),
        what.clone(),
        move |objects| {
            let _ = tx.send(
                objects
                    .get(&name)
                    .cloned()
                    .map_or(Observed::Absent, Observed::Present),
            );
        },
        move |error| tracing::warn!(%error, "{what}: the certificate in service keeps serving"),
    );
    rx
}

/// Follows the selected webhook configurations and sends those of our webhooks (see
/// [`claim`]); the foreign ones go to the status and the log. Configurations selected by name
/// only are watched one by one with a `metadata.name` field selector, so their permissions can
/// be limited to those names; a label selection needs the list of every configuration.
fn watch_webhooks(
    client: Client,
    selection: WebhookSelection,
    endpoint: InjectorEndpoint,
    shared: Shared,
) -> channel::Receiver<Option<Vec<MutatingWebhookConfiguration>>> {
    let (tx, rx) = channel::channel(None);
    let api = Api::<MutatingWebhookConfiguration>::all(client);
    let watches: Vec<(watcher::Config, String)> = if selection.labels.is_empty() {
        selection
            .names
            .iter()
            .map(|name| {
                (
                    watcher::Config::default().fields(&format!("metadata.name={name}")),
                    format!("MutatingWebhookConfiguration {name}"),
                )
            })
            .collect()
    } else {
        vec![(watcher::Config::default(), "MutatingWebhookConfigurations".into())]
    };
    if watches.is_empty() {
        // Nothing is selected: nothing to patch, and nothing for a rotation to wait for.
        let _ = tx.send(Some(Vec::new()));
    }
    // What each watch last listed (`None`: not yet), merged for every change.
    let seen = Arc::new(std::sync::Mutex::new(vec![None; watches.len()]));
    for (index, (config, what)) in watches.into_iter().enumerate() {
        let (seen, tx, selection, endpoint, shared) = (
            seen.clone(),
            tx.clone(),
            selection.clone(),
            endpoint.clone(),
            shared.clone(),
        );
        watch::spawn(
            api.clone(),
            config,
            what,
            move |objects| {
                let Ok(mut seen) = seen.lock() else { return };
                seen[index] = Some(objects.values().cloned().collect::<Vec<_>>());
                let Some(all) = seen.iter().map(Option::as_ref).collect::<Option<Vec<_>>>() else {
                    return;
                };
                let claimed = claim(all.into_iter().flatten(), &selection, &endpoint);
                report_foreign(&shared, &claimed.foreign, &endpoint);
                let _ = tx.send(Some(claimed.ours));
            },
            |error| tracing::warn!(%error, "caBundles are not followed until the watch recovers"),
        );
    }
    rx
}

/// Logs the foreign webhooks when they change, and shows them on `/readyz`.
fn report_foreign(shared: &Shared, foreign: &[crate::webhooks::ForeignWebhook], endpoint: &InjectorEndpoint) {
    if shared.snapshot().foreign_webhooks == foreign {
        return;
    }
    for f in foreign {
        tracing::warn!(mutatingwebhookconfiguration = %f.configuration, webhook = %f.webhook, target = %f.target,
            injector = %endpoint.describe(),
            "selected as ours but points elsewhere: never written, and CA rotations do not wait for it");
    }
    let foreign = foreign.to_vec();
    shared.update(|s| s.foreign_webhooks = foreign);
}

/// Events: keeps `scope`'s webhooks (their `namespaceSelector`s) those of ours last seen.
fn follow_webhooks_in(
    mut webhooks: channel::Receiver<Option<Vec<MutatingWebhookConfiguration>>>,
    scope: Scope,
) {
    tokio::spawn(async move {
        loop {
            if let Some(ours) = webhooks.borrow_and_update().as_deref() {
                scope.set_webhooks(ours);
            }
            if webhooks.changed().await.is_err() {
                return;
            }
        }
    });
}

/// Events: follows the namespaces and their labels (`list`, `watch`), so that a review naming a
/// namespace no webhook of ours selects makes no Event. Until they are first listed (the
/// permission missing, say), no Event is written.
fn watch_namespaces(client: Client, scope: Scope) {
    watch::spawn(
        Api::<Namespace>::all(client),
        watcher::Config::default(),
        "Namespaces".into(),
        move |objects| {
            scope.set_namespaces(
                objects
                    .iter()
                    .map(|(name, ns)| (name.clone(), ns.metadata.labels.clone().unwrap_or_default()))
                    .collect(),
            );
        },
        |error| tracing::warn!(%error, "Events are written only for the namespaces last listed (needs list and watch on namespaces)"),
    );
}

/// Elects one replica with a Lease (kube-lease-manager: server-side apply, our field
/// manager); the channel says whether we hold it. Building the manager is retried while the
/// API server is unreachable or the Lease cannot be read.
fn elect(client: Client, options: &ClusterOptions, shared: Shared) -> channel::Receiver<bool> {
    let (tx, rx) = channel::channel(false);
    let (name, namespace, identity) = (
        options.lease_name.clone(),
        options.namespace.clone(),
        options.identity.clone(),
    );
    let duration = options.lease_duration.as_secs().max(2);
    let grace = (duration / 3).max(1);
    tokio::spawn(async move {
        let mut backoff = Duration::from_millis(500);
        loop {
            let built = LeaseManagerBuilder::new(client.clone(), &name)
                .with_namespace(&namespace)
                .with_identity(&identity)
                .with_duration(duration)
                .with_grace(grace)
                .with_field_manager(FIELD_MANAGER)
                .build()
                .await;
            let manager = match built {
                Ok(m) => m,
                Err(error) => {
                    let why = lease_error(&namespace, &name, &error);
                    if shared.snapshot().lease_error.as_deref() != Some(why.as_str()) {
                        tracing::warn!(lease = %format!("{namespace}/{name}"), error = %why, "cannot use the Lease; retrying");
                    }
                    shared.update(|s| s.lease_error = Some(why));
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                    continue;
                }
            };
            backoff = Duration::from_millis(500);
            shared.update(|s| s.lease_error = None);
            let (mut state, task) = manager.watch().await;
            loop {
                let leading = *state.borrow_and_update();
                if *tx.borrow() != leading {
                    tracing::info!(lease = %format!("{namespace}/{name}"), %identity, leading,
                        "{}", if leading { "leading: this replica patches caBundles and rotates the CA" } else { "not leading" });
                }
                shared.update(|s| s.leader = leading);
                let _ = tx.send(leading);
                if state.changed().await.is_err() {
                    break;
                }
            }
            let _ = tx.send(false);
            shared.update(|s| s.leader = false);
            if let Ok(Err(error)) = task.await {
                tracing::warn!(%error, "the Lease manager stopped; restarting it");
            }
        }
    });
    rx
}

/// Why the Lease cannot be used, with what to do when it is missing: the injector may get and
/// patch its Lease by name, not create it (the chart and deploy/manifests create it).
fn lease_error(namespace: &str, name: &str, error: &kube_lease_manager::LeaseManagerError) -> String {
    let forbidden_create = matches!(error, kube_lease_manager::LeaseManagerError::KubeError(kube::Error::Api(e))
        if e.code == 403 && e.message.contains("cannot create"));
    if forbidden_create {
        format!(
            "the Lease {namespace}/{name} does not exist and this ServiceAccount may not create it: the chart and \
             deploy/manifests create it; until then no replica leads (caBundles are not patched, the CA is not rotated)"
        )
    } else {
        format!("the Lease {namespace}/{name}: {error}")
    }
}

/// Follows the ConfigMaps with the same semantics as file reloads: a bad edit is rejected and
/// the last good configuration keeps serving; a deleted ConfigMap keeps it too (loudly).
fn watch_config<C: Send + Sync + 'static>(client: Client, names: ConfigMapNames, config: ConfigStore<C>) {
    #[derive(Default)]
    struct Seen {
        injector: Option<Observed<ConfigMap>>,
        mesh: Option<Observed<ConfigMap>>,
    }
    let seen = Arc::new(std::sync::Mutex::new(Seen::default()));
    let api = Api::<ConfigMap>::namespaced(client, &names.namespace);
    for is_mesh in [false, true] {
        let name = if is_mesh {
            names.mesh.clone()
        } else {
            names.injector.clone()
        };
        let (seen, config, names) = (seen.clone(), config.clone(), names.clone());
        let what = format!("ConfigMap {}/{name}", names.namespace);
        let config_for_errors = config.clone();
        watch::spawn(
            api.clone(),
            watcher::Config::default().fields(&format!("metadata.name={name}")),
            what.clone(),
            move |objects| {
                let observed = objects
                    .get(&name)
                    .cloned()
                    .map_or(Observed::Absent, Observed::Present);
                let Ok(mut seen) = seen.lock() else { return };
                let was_present = matches!(
                    if is_mesh { &seen.mesh } else { &seen.injector },
                    Some(Observed::Present(_))
                );
                let deleted = was_present && observed == Observed::Absent;
                if is_mesh {
                    seen.mesh = Some(observed);
                } else {
                    seen.injector = Some(observed);
                }
                let (Some(injector), Some(mesh)) = (&seen.injector, &seen.mesh) else {
                    return;
                };
                if deleted {
                    config.reject(format!(
                        "ConfigMap {}/{name} was deleted; keeping the last good configuration until it is back",
                        names.namespace
                    ));
                    return;
                }
                let present = |o: &Observed<ConfigMap>| match o {
                    Observed::Present(cm) => Some(cm.clone()),
                    _ => None,
                };
                match config_files(&names, present(injector).as_ref(), present(mesh).as_ref()) {
                    Ok(files) => config.load_files(files),
                    Err(error) => config.reject(error),
                }
            },
            move |error| {
                tracing::warn!(%error, "the configuration in service keeps serving");
                if config_for_errors.current().is_none() {
                    config_for_errors.reject(format!("{what}: {error}"));
                }
            },
        );
    }
}

/// Native sidecars `auto`: waits (up to 10 s) for the first list of nodes so that the first
/// configuration already has the right mode, then follows the nodes.
async fn watch_nodes<C: Send + Sync + 'static>(
    client: Client,
    native: Arc<AtomicBool>,
    config: ConfigStore<C>,
    shared: Shared,
) {
    let (first_tx, mut first_rx) = channel::channel(false);
    watch::spawn(
        Api::<Node>::all(client),
        watcher::Config::default(),
        "Nodes".into(),
        move |objects| {
            let versions = NodeVersions(
                objects
                    .iter()
                    .map(|(name, node)| {
                        let v = node
                            .status
                            .as_ref()
                            .and_then(|s| s.node_info.as_ref())
                            .map(|i| i.kubelet_version.clone())
                            .unwrap_or_default();
                        (name.clone(), v)
                    })
                    .collect(),
            );
            let supported = versions.supported();
            let before = native.swap(supported, Ordering::SeqCst);
            shared.update(|s| s.native_sidecars_auto = Some(supported));
            let first = !*first_tx.borrow();
            if first || before != supported {
                tracing::info!(native_sidecars = supported, nodes = versions.0.len(), too_old = ?versions.too_old(),
                    "native sidecars (auto: every kubelet must be 1.33 or newer)");
            }
            if !first && before != supported {
                config.reload();
            }
            let _ = first_tx.send(true);
        },
        |error| tracing::warn!(%error, "native sidecars auto keeps its last answer"),
    );
    let waited = tokio::time::timeout(Duration::from_secs(10), first_rx.wait_for(|listed| *listed)).await;
    if waited.is_err() {
        tracing::warn!(
            "nodes not listed within 10 s; native sidecars stay on until they are (no nodes: Istio's answer)"
        );
    }
}
