//! Sorting a cluster's objects (a `kubectl get -A -o yaml` snapshot, `-f` manifests, or what the
//! API server listed) into what `preview` and `outdated` work on.
//!
//! A *workload* is an object whose pods go through the webhook and that a user edits: every
//! Deployment, StatefulSet, DaemonSet, CronJob and DeploymentConfig; Jobs not run by a CronJob
//! (those are the CronJob's runs); ReplicaSets and ReplicationControllers without a controller
//! (a Deployment's ReplicaSets are the Deployment's); and bare Pods (no controller). Pods with a
//! controller are kept apart, with every controller, so that `outdated` can walk from a pod to
//! the owner to restart.

use std::{collections::BTreeMap, fmt};

use injector_core::{
    gate::NamespaceFacts,
    workload::{self, PodTemplate, WorkloadKind},
};
use serde::Serialize;
use serde_json::Value;

/// Names one object: kind, namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ObjectKey {
    /// `kind`, e.g. `Deployment`.
    pub kind: String,
    /// `metadata.namespace` (empty for cluster-scoped objects).
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
}

impl ObjectKey {
    /// A key from its parts.
    pub fn new(kind: &str, namespace: &str, name: &str) -> Self {
        Self {
            kind: kind.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }

    /// The key of an object (missing fields are empty).
    pub fn of(object: &Value) -> Self {
        let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).unwrap_or("");
        Self::new(text("/kind"), text("/metadata/namespace"), text("/metadata/name"))
    }

    /// `deployment/web`, as kubectl names it.
    pub fn kubectl_name(&self) -> String {
        format!("{}/{}", self.kind.to_ascii_lowercase(), self.name)
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// A workload and its pod template.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Which object.
    pub key: ObjectKey,
    /// The object as read.
    pub object: Value,
    /// Its pod template, as the decision reads it.
    pub template: PodTemplate,
}

/// A cluster's objects, sorted.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The workloads, in the order read.
    pub workloads: Vec<Workload>,
    /// Every pod that has a controller (bare pods are workloads, and are here too).
    pub pods: Vec<Value>,
    /// Every object that controls pods or other controllers (ReplicaSets, Jobs, Deployments, …).
    pub controllers: Controllers,
    /// Namespaces by name, for their labels.
    pub namespaces: BTreeMap<String, NamespaceFacts>,
    /// PodDisruptionBudgets.
    pub disruption_budgets: Vec<Value>,
}

/// The objects pods name as their controller, by key.
///
/// A cluster can have one for every ten pods, and a parsed object takes several times the memory
/// of its JSON text, so each is kept as compact JSON, with the one field read for every pod (its
/// own controller) taken out. The object is parsed again when a template is rendered from it.
#[derive(Debug, Clone, Default)]
pub struct Controllers(BTreeMap<ObjectKey, Controller>);

/// One controller as [`Controllers`] keeps it.
#[derive(Debug, Clone)]
struct Controller {
    /// The object, compact JSON.
    text: Box<str>,
    /// Its own controller: (kind, name).
    parent: Option<(String, String)>,
}

impl Controllers {
    /// Keeps `object` under `key` (replacing what was there).
    pub fn insert(&mut self, key: ObjectKey, object: &Value) {
        let controller = Controller {
            text: object.to_string().into_boxed_str(),
            parent: controller_of(object),
        };
        self.0.insert(key, controller);
    }

    /// Whether there is an object under `key`.
    pub fn contains_key(&self, key: &ObjectKey) -> bool {
        self.0.contains_key(key)
    }

    /// The object under `key`, parsed.
    pub fn object(&self, key: &ObjectKey) -> Option<Value> {
        // The text is what serde_json wrote: it always parses.
        serde_json::from_str(&self.0.get(key)?.text).ok()
    }

    /// The controller of the object under `key` (kind, name), when both exist.
    pub fn parent(&self, key: &ObjectKey) -> Option<&(String, String)> {
        self.0.get(key)?.parent.as_ref()
    }

    /// How many objects are kept.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The controller owner reference of an object: (kind, name).
pub fn controller_of(object: &Value) -> Option<(String, String)> {
    let references = object.pointer("/metadata/ownerReferences")?.as_array()?;
    let controller = references
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))?;
    let text = |key: &str| {
        controller
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    Some((text("kind"), text("name")))
}

/// What one object is to `preview` and `outdated`.
#[derive(Debug, Clone)]
pub enum Sorted {
    /// A Namespace: its labels.
    Namespace(NamespaceFacts),
    /// A PodDisruptionBudget.
    DisruptionBudget(Value),
    /// An object with a pod template: a Pod (bare or not), or a controller of pods or of other
    /// controllers.
    Templated {
        /// Whether it is a workload (see the module's documentation).
        workload: bool,
        /// The object and its template.
        object: Box<Workload>,
    },
    /// Anything else (not looked at).
    Other,
}

impl Sorted {
    /// Sorts one object (`place` names it in errors, e.g. `snapshot.yaml: document 1, item 7`).
    /// An object that is a workload but whose pod template cannot be read is an error naming
    /// it and the field.
    pub fn of(place: &str, object: Value) -> Result<Self, String> {
        let key = ObjectKey::of(&object);
        match key.kind.as_str() {
            "Namespace" => {
                let facts =
                    NamespaceFacts::from_object(&object).map_err(|e| format!("{place} ({key}): {e}"))?;
                return Ok(Sorted::Namespace(facts));
            }
            "PodDisruptionBudget" => return Ok(Sorted::DisruptionBudget(object)),
            _ => {}
        }
        let template = match workload::pod_template(&object) {
            Ok(Some(template)) => template,
            Ok(None) => return Ok(Sorted::Other),
            Err(error) => return Err(format!("{place} ({key}): {error}")),
        };
        let controller = controller_of(&object);
        let workload = match template.kind {
            WorkloadKind::Pod | WorkloadKind::ReplicaSet | WorkloadKind::ReplicationController => {
                controller.is_none()
            }
            WorkloadKind::Job => controller.is_none_or(|(kind, _)| kind != "CronJob"),
            _ => true,
        };
        Ok(Sorted::Templated {
            workload,
            object: Box::new(Workload {
                key,
                object,
                template,
            }),
        })
    }
}

impl Snapshot {
    /// Sorts `objects` (`(place, object)`: the place names the object in errors, e.g.
    /// `snapshot.yaml: document 1, item 7`). An object that is a workload but whose pod template
    /// cannot be read is an error naming it and the field.
    pub fn from_objects(objects: impl IntoIterator<Item = (String, Value)>) -> Result<Self, String> {
        let mut snapshot = Snapshot::default();
        for (place, object) in objects {
            match Sorted::of(&place, object)? {
                Sorted::Namespace(facts) => {
                    snapshot.namespaces.insert(facts.name.clone(), facts);
                }
                Sorted::DisruptionBudget(object) => snapshot.disruption_budgets.push(object),
                Sorted::Templated { workload, object } => {
                    if object.template.kind == WorkloadKind::Pod {
                        snapshot.pods.push(object.object.clone());
                    } else {
                        snapshot.controllers.insert(object.key.clone(), &object.object);
                    }
                    if workload {
                        snapshot.workloads.push(*object);
                    }
                }
                Sorted::Other => {}
            }
        }
        Ok(snapshot)
    }

    /// The namespace a workload's pods are created in, with its labels when the snapshot has it.
    pub fn namespace_of(&self, name: &str) -> NamespaceFacts {
        self.namespaces
            .get(name)
            .cloned()
            .unwrap_or_else(|| NamespaceFacts::new(name, Default::default()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment(name: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "shop"},
               "spec": {"template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "a", "image": "a"}]}}}})
    }

    #[test]
    fn owned_replica_sets_jobs_and_pods_are_not_workloads() {
        let mut replica_set = deployment("web-5d8f");
        replica_set["kind"] = json!("ReplicaSet");
        replica_set["metadata"]["ownerReferences"] =
            json!([{"kind": "Deployment", "name": "web", "controller": true}]);
        let mut lone_set = deployment("lone");
        lone_set["kind"] = json!("ReplicaSet");
        let mut job = deployment("nightly-29000000");
        job["apiVersion"] = json!("batch/v1");
        job["kind"] = json!("Job");
        job["metadata"]["ownerReferences"] =
            json!([{"kind": "CronJob", "name": "nightly", "controller": true}]);
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-5d8f-x", "namespace": "shop",
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web-5d8f", "controller": true}]},
            "spec": {"containers": [{"name": "a", "image": "a"}]}});
        let bare = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "solo", "namespace": "shop"},
            "spec": {"containers": [{"name": "a", "image": "a"}]}});
        let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": {"istio-injection": "enabled"}}});
        let objects = [
            deployment("web"),
            replica_set,
            lone_set,
            job,
            pod,
            bare,
            namespace,
        ]
        .into_iter()
        .enumerate()
        .map(|(i, o)| (format!("item {i}"), o));
        let snapshot = Snapshot::from_objects(objects).expect("sorts");
        let names: Vec<String> = snapshot.workloads.iter().map(|w| w.key.to_string()).collect();
        assert_eq!(
            names,
            ["Deployment shop/web", "ReplicaSet shop/lone", "Pod shop/solo"]
        );
        assert_eq!(snapshot.pods.len(), 2);
        assert_eq!(snapshot.controllers.len(), 4);
        assert_eq!(
            snapshot
                .namespace_of("shop")
                .labels
                .get("istio-injection")
                .map(String::as_str),
            Some("enabled")
        );
        assert_eq!(
            snapshot
                .namespace_of("other")
                .labels
                .get("kubernetes.io/metadata.name")
                .map(String::as_str),
            Some("other")
        );
    }

    #[test]
    fn a_kept_controller_is_given_back_as_read_with_its_own_controller() {
        let mut replica_set = deployment("web-5d8f");
        replica_set["kind"] = json!("ReplicaSet");
        replica_set["metadata"]["ownerReferences"] = json!([
            {"kind": "Other", "name": "not-the-controller"},
            {"kind": "Deployment", "name": "web", "controller": true}
        ]);
        replica_set["spec"]["replicas"] = json!(3);
        replica_set["spec"]["weight"] = json!(0.5);
        let key = ObjectKey::of(&replica_set);
        let mut controllers = Controllers::default();
        assert!(controllers.is_empty());
        controllers.insert(key.clone(), &replica_set);
        controllers.insert(ObjectKey::of(&deployment("web")), &deployment("web"));

        assert_eq!(controllers.len(), 2);
        assert!(controllers.contains_key(&key));
        let given_back = controllers.object(&key).expect("kept");
        assert_eq!(given_back, replica_set);
        let keys: Vec<&String> = given_back.as_object().expect("object").keys().collect();
        let read: Vec<&String> = replica_set.as_object().expect("object").keys().collect();
        assert_eq!(keys, read, "the keys keep their order");
        assert_eq!(
            controllers.parent(&key),
            Some(&("Deployment".to_owned(), "web".to_owned()))
        );
        assert_eq!(controllers.parent(&ObjectKey::of(&deployment("web"))), None);
        let absent = ObjectKey::new("ReplicaSet", "shop", "gone");
        assert!(!controllers.contains_key(&absent));
        assert_eq!(controllers.object(&absent), None);
        assert_eq!(controllers.parent(&absent), None);
    }

    #[test]
    fn a_broken_workload_is_named_with_its_field() {
        let mut broken = deployment("web");
        broken["spec"]["template"]["spec"] = json!("x");
        let error = Snapshot::from_objects([("snap.yaml: document 1, item 3".to_owned(), broken)])
            .expect_err("broken");
        assert!(
            error.starts_with("snap.yaml: document 1, item 3 (Deployment shop/web): spec.template.spec"),
            "{error}"
        );
    }
}
