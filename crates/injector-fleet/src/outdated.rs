//! `outdated`: the pods whose sidecar is not what the current configuration would inject today.
//!
//! For every injected pod (one with the `sidecar.istio.io/status` annotation), the template it
//! was created from — its controller's (a Deployment pod's ReplicaSet), else the pod itself,
//! the engine stripping the old injection — is injected again with the current configuration,
//! and what the pod carries is compared with it: the injected containers and init containers
//! (named by either status annotation), the injected volumes and the status annotation
//! (templates' names, revision). The API server's defaults are applied to both sides first, so
//! an untouched pod compares equal, stored by the API server or injected offline. Pods are
//! grouped by the owner a restart acts on (a ReplicaSet's Deployment, a Job's CronJob), with
//! the command that restarts it.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    sync::Arc,
};

use injector_core::{shell, workload};
use injector_engine::{
    post::status::STATUS_ANNOTATION,
    prepare::owner::{Owner, owner_of as istio_owner_of},
};
use rayon::prelude::*;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::{
    api_defaults::{default_container, default_volume, prune},
    pod_diff::{PodDiff, diff_pods},
    preview::{Cluster, Rendering, Side, render_as},
    snapshot::{Controllers, ObjectKey, Snapshot, Workload, controller_of},
};

/// How a pod's sidecar differs from today's.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "difference", rename_all = "camelCase")]
pub enum Staleness {
    /// Only container images (a version bump).
    #[serde(rename_all = "camelCase")]
    Image {
        /// The diff, from the pod to today's rendering.
        diff: PodDiff,
    },
    /// More than images.
    #[serde(rename_all = "camelCase")]
    Fields {
        /// What differs, in short (`istio-proxy: env, resources`, `volumes`).
        kinds: Vec<String>,
        /// The diff, from the pod to today's rendering.
        diff: PodDiff,
    },
    /// The current configuration would not inject it at all.
    #[serde(rename_all = "camelCase")]
    NoLongerInjected {
        /// Why not.
        reason: String,
    },
    /// The current configuration fails on its template: a restart would fail to create pods.
    #[serde(rename_all = "camelCase")]
    CannotInject {
        /// The engine's message.
        error: String,
    },
}

impl Staleness {
    /// `image`, `fields`, `noLongerInjected` or `cannotInject`.
    pub fn name(&self) -> &'static str {
        match self {
            Staleness::Image { .. } => "image",
            Staleness::Fields { .. } => "fields",
            Staleness::NoLongerInjected { .. } => "noLongerInjected",
            Staleness::CannotInject { .. } => "cannotInject",
        }
    }
}

/// One stale pod.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StalePod {
    /// The pod's name.
    pub pod: String,
    /// How it differs.
    #[serde(flatten)]
    pub staleness: Staleness,
}

/// What brings an owner's pods up to date.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Remedy {
    /// Whether `outdated --restart` restarts it (Deployments, StatefulSets, DaemonSets).
    pub restartable: bool,
    /// The command to run, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// What else to know.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The stale pods of one owner.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReport {
    /// The owner a restart acts on.
    pub owner: ObjectKey,
    /// Whether every pod differs only by image.
    pub image_only: bool,
    /// Its stale pods, by name.
    pub pods: Vec<StalePod>,
    /// How to bring them up to date.
    pub remedy: Remedy,
}

/// The whole inventory.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Pods looked at.
    pub pods: usize,
    /// Of which injected (carrying the status annotation).
    pub injected: usize,
    /// Of which up to date.
    pub up_to_date: usize,
    /// Owners with stale pods, by namespace, kind and name.
    pub owners: Vec<OwnerReport>,
}

impl Report {
    /// How many pods are stale.
    pub fn stale(&self) -> usize {
        self.owners.iter().map(|o| o.pods.len()).sum()
    }
}

/// Compares every injected pod of `snapshot` with what `current` injects today.
pub fn outdated(snapshot: &Snapshot, cluster: Cluster<'_>, current: Side<'_>) -> Report {
    let mut inventory = Inventory::new(&snapshot.controllers, cluster, current);
    inventory.add(&snapshot.pods);
    inventory.finish()
}

/// A template source shared by pods: the controller, and the owner Istio names (kind, name).
type SourceKey = (ObjectKey, String, String);

/// The inventory built batch by batch, as the pods are read: it holds the stale pods (name and
/// difference) and counts, not the pods. Pods with the same template source (a ReplicaSet's
/// replicas) are compared with one rendering of it.
pub struct Inventory<'a> {
    controllers: &'a Controllers,
    cluster: Cluster<'a>,
    current: Side<'a>,
    pods: usize,
    injected: usize,
    up_to_date: usize,
    owners: BTreeMap<ObjectKey, Vec<StalePod>>,
    /// What `current` injects for a controller's template, under the owner Istio names: the
    /// sources of the batch being added.
    renders: HashMap<SourceKey, Arc<Rendering>>,
}

impl<'a> Inventory<'a> {
    /// An empty inventory. `controllers`: the objects pods may name as their controller (those
    /// the pods to come name, at least), by key.
    pub fn new(controllers: &'a Controllers, cluster: Cluster<'a>, current: Side<'a>) -> Self {
        Self {
            controllers,
            cluster,
            current,
            pods: 0,
            injected: 0,
            up_to_date: 0,
            owners: BTreeMap::new(),
            renders: HashMap::new(),
        }
    }

    /// Compares the injected ones of `pods`, in parallel, and adds them.
    pub fn add(&mut self, pods: &[Value]) {
        self.pods += pods.len();
        let injected: Vec<(&Value, Option<(SourceKey, Owner)>)> = pods
            .iter()
            .filter(|pod| status_of(pod).is_some())
            .map(|pod| (pod, self.shared_source(pod)))
            .collect();
        self.injected += injected.len();
        // Only this batch's sources stay rendered: pods arrive sorted by namespace and name, so a
        // controller's pods come together, and one whose pods span two batches keeps its render.
        let needed: HashSet<&SourceKey> = injected
            .iter()
            .filter_map(|(_, source)| source.as_ref().map(|(key, _)| key))
            .collect();
        self.renders.retain(|key, _| needed.contains(key));
        let mut missing: Vec<&(SourceKey, Owner)> = injected
            .iter()
            .filter_map(|(_, source)| source.as_ref())
            .filter(|(key, _)| !self.renders.contains_key(key))
            .collect();
        missing.sort_by(|a, b| a.0.cmp(&b.0));
        missing.dedup_by(|a, b| a.0 == b.0);
        let (controllers, cluster, current) = (self.controllers, self.cluster, self.current);
        let rendered: Vec<(SourceKey, Arc<Rendering>)> = missing
            .par_iter()
            .filter_map(|(key, owner)| {
                let source = controller_workload(controllers, &key.0)?;
                let rendering = render_as(&source, owner.clone(), cluster, current);
                Some((key.clone(), Arc::new(rendering)))
            })
            .collect();
        self.renders.extend(rendered);
        let renders = &self.renders;
        let results: Vec<(ObjectKey, String, Option<Staleness>)> = injected
            .par_iter()
            .map(|(pod, source)| {
                let owner = restart_owner_in(controllers, pod);
                let name = ObjectKey::of(pod).name;
                let staleness = match source.as_ref().and_then(|(key, _)| renders.get(key)) {
                    Some(rendering) => staleness_against(pod, rendering),
                    None => {
                        let source = template_source(controllers, pod);
                        let rendering = render_as(&source, istio_owner_of(pod), cluster, current);
                        staleness_against(pod, &rendering)
                    }
                };
                (owner, name, staleness)
            })
            .collect();
        for (owner, pod, staleness) in results {
            match staleness {
                None => self.up_to_date += 1,
                Some(staleness) => self
                    .owners
                    .entry(owner)
                    .or_default()
                    .push(StalePod { pod, staleness }),
            }
        }
    }

    /// The template source a pod shares with its siblings: its controller, when known.
    fn shared_source(&self, pod: &Value) -> Option<(SourceKey, Owner)> {
        let namespace = ObjectKey::of(pod).namespace;
        let (kind, name) = controller_of(pod)?;
        let key = ObjectKey::new(&kind, &namespace, &name);
        if !self.controllers.contains_key(&key) {
            return None;
        }
        let owner = istio_owner_of(pod);
        Some(((key, owner.kind.clone(), owner.name.clone()), owner))
    }

    /// How many pods were looked at so far.
    pub fn looked_at(&self) -> usize {
        self.pods
    }

    /// The report: owners by namespace, kind and name, their pods by name.
    pub fn finish(self) -> Report {
        let owners = self
            .owners
            .into_iter()
            .map(|(owner, mut pods)| {
                pods.sort_by(|a, b| a.pod.cmp(&b.pod));
                OwnerReport {
                    image_only: pods
                        .iter()
                        .all(|p| matches!(p.staleness, Staleness::Image { .. })),
                    remedy: remedy(&owner, &pods),
                    owner,
                    pods,
                }
            })
            .collect();
        Report {
            pods: self.pods,
            injected: self.injected,
            up_to_date: self.up_to_date,
            owners,
        }
    }
}

/// How `pod` differs from what `current` would inject for its template; `None` when it does not.
pub fn staleness(
    snapshot: &Snapshot,
    pod: &Value,
    cluster: Cluster<'_>,
    current: Side<'_>,
) -> Option<Staleness> {
    let source = template_source(&snapshot.controllers, pod);
    let rendering = render_as(&source, istio_owner_of(pod), cluster, current);
    staleness_against(pod, &rendering)
}

/// How `pod` differs from `rendering`, what the current configuration does for its template.
fn staleness_against(pod: &Value, rendering: &Rendering) -> Option<Staleness> {
    let expected = match rendering {
        Rendering::Injected(expected) => expected,
        Rendering::NotInjected(reason) => {
            return Some(Staleness::NoLongerInjected {
                reason: reason.clone(),
            });
        }
        Rendering::Failed(error) => return Some(Staleness::CannotInject { error: error.clone() }),
    };
    let diff = compare(pod, expected);
    if diff.is_empty() {
        None
    } else if diff.is_image_only() {
        Some(Staleness::Image { diff })
    } else {
        Some(Staleness::Fields {
            kinds: diff.kinds(),
            diff,
        })
    }
}

/// The diff between what `pod` carries and `expected` (today's injection), restricted to what
/// the injection owns.
pub fn compare(pod: &Value, expected: &Value) -> PodDiff {
    let mut names = InjectedNames::default();
    for side in [pod, expected] {
        if let Some(status) = status_of(side) {
            names.add(&status);
        }
    }
    // Defaults on both sides: a stored pod has them, a manifest injected offline does not.
    let actual = injected_part(pod, &names);
    let fresh = injected_part(expected, &names);
    diff_pods(&actual, &fresh)
}

/// Names the status annotations list.
#[derive(Default)]
struct InjectedNames {
    containers: Vec<String>,
    init_containers: Vec<String>,
    volumes: Vec<String>,
}

impl InjectedNames {
    fn add(&mut self, status: &Value) {
        let add = |field: &str, into: &mut Vec<String>| {
            for name in status.get(field).and_then(Value::as_array).into_iter().flatten() {
                if let Some(name) = name.as_str().filter(|n| !into.iter().any(|m| m == n)) {
                    into.push(name.to_owned());
                }
            }
        };
        add("containers", &mut self.containers);
        add("initContainers", &mut self.init_containers);
        add("volumes", &mut self.volumes);
    }
}

/// The injected containers, volumes and status annotation of a pod, as the API server would
/// store them.
fn injected_part(pod: &Value, names: &InjectedNames) -> Value {
    let pick = |list: &str, wanted: &[String], apply: fn(&mut Value)| -> Value {
        let items = pod
            .pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter(|item| {
                        let name = item.get("name").and_then(Value::as_str).unwrap_or("");
                        wanted.iter().any(|w| w == name)
                    })
                    .cloned()
                    .map(|mut item| {
                        apply(&mut item);
                        item
                    })
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        Value::Array(items)
    };
    // Every injected name is looked up in both lists: a native sidecar moves the proxy from
    // `containers` to `initContainers`.
    let mut all = names.containers.clone();
    all.extend(names.init_containers.iter().cloned());
    let status = pod.pointer(&status_pointer()).cloned().unwrap_or(Value::Null);
    let mut part = json!({
        "metadata": {"annotations": {STATUS_ANNOTATION: status}},
        "spec": {
            "initContainers": pick("initContainers", &all, default_container),
            "containers": pick("containers", &all, default_container),
            "volumes": pick("volumes", &names.volumes, default_volume),
        }
    });
    prune(&mut part);
    part
}

fn status_pointer() -> String {
    format!("/metadata/annotations/{}", STATUS_ANNOTATION.replace('/', "~1"))
}

/// The pod's status annotation, parsed; `None` when it was not injected.
pub fn status_of(pod: &Value) -> Option<Value> {
    let text = pod.pointer(&status_pointer())?.as_str()?;
    Some(serde_json::from_str(text).unwrap_or(Value::Object(Map::new())))
}

/// A controller as the workload whose template its pods were created from.
fn controller_workload(controllers: &Controllers, key: &ObjectKey) -> Option<Workload> {
    let object = controllers.object(key)?;
    let template = workload::pod_template(&object).ok().flatten()?;
    Some(Workload {
        key: key.clone(),
        object,
        template,
    })
}

/// The workload whose template the pod was created from: its controller when the snapshot has
/// it, else the pod itself.
fn template_source(controllers: &Controllers, pod: &Value) -> Workload {
    let namespace = ObjectKey::of(pod).namespace;
    let from_controller = controller_of(pod)
        .and_then(|(kind, name)| controller_workload(controllers, &ObjectKey::new(&kind, &namespace, &name)));
    from_controller.unwrap_or_else(|| {
        let mut object = pod.clone();
        if object.get("kind").is_none() {
            object["kind"] = json!("Pod");
            object["apiVersion"] = json!("v1");
        }
        let template = workload::pod_template(&object).ok().flatten().unwrap_or_else(|| {
            injector_core::workload::PodTemplate {
                owner: injector_core::object::ObjectRef::default(),
                kind: workload::WorkloadKind::Pod,
                template_path: String::new(),
                labels: Default::default(),
                annotations: Default::default(),
                host_network: false,
                owner_labels: Default::default(),
                owner_annotations: Default::default(),
            }
        });
        Workload {
            key: ObjectKey::of(&object),
            object,
            template,
        }
    })
}

/// The owner a restart acts on: a ReplicaSet's Deployment, a Job's CronJob, else the
/// controller, else the pod itself.
pub fn restart_owner(snapshot: &Snapshot, pod: &Value) -> ObjectKey {
    restart_owner_in(&snapshot.controllers, pod)
}

/// [`restart_owner`], the controllers given.
pub fn restart_owner_in(controllers: &Controllers, pod: &Value) -> ObjectKey {
    let namespace = ObjectKey::of(pod).namespace;
    let Some((kind, name)) = controller_of(pod) else {
        return ObjectKey::of(pod);
    };
    let key = ObjectKey::new(&kind, &namespace, &name);
    if let Some((parent_kind, parent_name)) = controllers.parent(&key) {
        return ObjectKey::new(parent_kind, &namespace, parent_name);
    }
    if matches!(kind.as_str(), "ReplicaSet" | "Job") && !controllers.contains_key(&key) {
        // Not in the snapshot: Istio's naming heuristic (pod-template-hash, CronJob suffix).
        let guessed = istio_owner_of(pod);
        return ObjectKey::new(&guessed.kind, &namespace, &guessed.name);
    }
    key
}

fn remedy(owner: &ObjectKey, pods: &[StalePod]) -> Remedy {
    let namespace = &owner.namespace;
    let delete_pods = || {
        let mut words = vec!["kubectl", "delete", "pod", "-n", namespace];
        words.extend(pods.iter().map(|p| p.pod.as_str()));
        shell::command(words)
    };
    if pods
        .iter()
        .any(|p| matches!(p.staleness, Staleness::CannotInject { .. }))
    {
        return Remedy {
            restartable: false,
            command: None,
            note: Some(
                "the current configuration fails to inject this workload: fix it before restarting, or new pods \
                 could not be created"
                    .to_owned(),
            ),
        };
    }
    match owner.kind.as_str() {
        "Deployment" | "StatefulSet" | "DaemonSet" => Remedy {
            restartable: true,
            command: Some(shell::command([
                "kubectl",
                "rollout",
                "restart",
                &owner.kubectl_name(),
                "-n",
                namespace,
            ])),
            note: None,
        },
        "ReplicaSet" | "ReplicationController" => Remedy {
            restartable: false,
            command: Some(delete_pods()),
            note: Some(format!("the {} re-creates the pods it loses", owner.kind)),
        },
        "CronJob" => Remedy {
            restartable: false,
            command: None,
            note: Some(
                "the CronJob's next Job gets the current sidecar; running Jobs keep theirs".to_owned(),
            ),
        },
        "Job" => Remedy {
            restartable: false,
            command: None,
            note: Some(
                "a Job's pods are not restarted: re-create the Job to get the current sidecar".to_owned(),
            ),
        },
        _ => Remedy {
            restartable: false,
            command: Some(delete_pods()),
            note: Some("a bare pod: create it again from its manifest after deleting it".to_owned()),
        },
    }
}

#[cfg(test)]
mod tests;
