//! Small accessors for a pod held as JSON: containers by list and name, annotations, labels.
//!
//! The engine never decodes a pod into typed structs; these helpers read and edit the few paths
//! it owns and leave everything else as it was.

use serde_json::{Map, Value};

use crate::member::Members;

/// The name of the proxy container.
pub const PROXY_CONTAINER: &str = "istio-proxy";
/// The iptables init container.
pub const INIT_CONTAINER: &str = "istio-init";
/// The CNI validation init container.
pub const VALIDATION_CONTAINER: &str = "istio-validation";
/// The init container that enables core dumps.
pub const ENABLE_CORE_DUMP_CONTAINER: &str = "enable-core-dump";

/// Which container list of the pod spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerList {
    /// `spec.containers`.
    Containers,
    /// `spec.initContainers`.
    InitContainers,
}

impl ContainerList {
    /// The field name in the pod spec.
    pub fn field(self) -> &'static str {
        match self {
            Self::Containers => "containers",
            Self::InitContainers => "initContainers",
        }
    }
}

/// The containers of one list (empty when absent).
pub fn containers(pod: &Value, list: ContainerList) -> &[Value] {
    pod.member("spec")
        .and_then(|spec| spec.member(list.field()))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The containers of one list, for editing; `None` when the list is absent.
pub fn containers_mut(pod: &mut Value, list: ContainerList) -> Option<&mut Vec<Value>> {
    pod.member_mut("spec")
        .and_then(|spec| spec.member_mut(list.field()))
        .and_then(Value::as_array_mut)
}

/// A container's name (`""` when missing).
pub fn name_of(container: &Value) -> &str {
    container.member("name").and_then(Value::as_str).unwrap_or("")
}

/// The proxy container, searched in containers then init containers (Istio's `FindSidecar`).
pub fn find_sidecar_mut(pod: &mut Value) -> Option<&mut Value> {
    let in_containers = containers(pod, ContainerList::Containers)
        .iter()
        .any(|c| name_of(c) == PROXY_CONTAINER);
    let list = if in_containers {
        ContainerList::Containers
    } else {
        ContainerList::InitContainers
    };
    containers_mut(pod, list)?
        .iter_mut()
        .find(|c| name_of(c) == PROXY_CONTAINER)
}

/// The pod's containers, then its init containers.
pub fn all_containers(pod: &Value) -> impl Iterator<Item = &Value> {
    containers(pod, ContainerList::Containers)
        .iter()
        .chain(containers(pod, ContainerList::InitContainers))
}

/// Whether the pod has the proxy container in either list.
pub fn has_sidecar(pod: &Value) -> bool {
    all_containers(pod).any(|c| name_of(c) == PROXY_CONTAINER)
}

/// The pod's annotations, created when missing (or when not an object).
pub fn annotations_mut(pod: &mut Value) -> &mut Map<String, Value> {
    metadata_map_mut(pod, "annotations")
}

/// The pod's labels, created when missing (or when not an object).
pub fn labels_mut(pod: &mut Value) -> &mut Map<String, Value> {
    metadata_map_mut(pod, "labels")
}

/// The value at a path of object keys: `at(pod, &["spec", "hostNetwork"])`. Unlike
/// `Value::pointer` it takes the keys as they are, with no `~0`/`~1` unescaping (which copies
/// every key of the path).
pub fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |value, key| value.member(key))
}

/// A string annotation of the pod.
pub fn annotation<'a>(pod: &'a Value, key: &str) -> Option<&'a str> {
    pod.member("metadata")
        .and_then(|m| m.member("annotations"))
        .and_then(|a| a.member(key))
        .and_then(Value::as_str)
}

/// The pod's annotations as (key, value) pairs of strings.
pub fn annotation_pairs(pod: &Value) -> Vec<(&str, &str)> {
    pod.member("metadata")
        .and_then(|m| m.member("annotations"))
        .and_then(Value::as_object)
        .map(|map| {
            map.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v)))
                .collect()
        })
        .unwrap_or_default()
}

fn metadata_map_mut<'a>(pod: &'a mut Value, field: &str) -> &'a mut Map<String, Value> {
    let root = ensure_object(pod);
    let metadata = ensure_object(
        root.entry("metadata")
            .or_insert_with(|| Value::Object(Map::new())),
    );
    ensure_object(metadata.entry(field).or_insert_with(|| Value::Object(Map::new())))
}

fn ensure_object(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = Value::Object(Map::new());
    }
    match value {
        Value::Object(map) => map,
        _ => unreachable!("the value was just replaced by an object"),
    }
}

/// The env list of a container, created when missing.
pub fn env_mut(container: &mut Value) -> &mut Vec<Value> {
    let map = ensure_object(container);
    let env = map.entry("env").or_insert_with(|| Value::Array(Vec::new()));
    if !env.is_array() {
        *env = Value::Array(Vec::new());
    }
    match env {
        Value::Array(items) => items,
        _ => unreachable!("the value was just replaced by an array"),
    }
}
