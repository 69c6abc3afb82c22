//! What differs between two injected pods, field by field: per container (image, resources,
//! securityContext, env by variable, probes, args, … every field), containers and volumes added
//! or removed, and the pod's own annotations, labels and spec fields.
//!
//! The diff is a plain value that can be compared and serialised, so that workloads changing
//! the same way group together ([`crate::grouping`]).

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{Map, Value};

/// One field that differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldChange {
    /// The field, relative to its container or pod: `image`, `env[ISTIO_META_X]`,
    /// `resources`, `metadata.annotations[k]`, `spec.dnsPolicy`.
    pub field: String,
    /// Its value before (absent: `None`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    /// Its value after (absent: `None`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
}

/// How a container or volume changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Presence {
    /// Only after.
    Added,
    /// Only before.
    Removed,
    /// In both, with different fields.
    Changed,
}

/// One container that differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerChange {
    /// `containers` or `initContainers`.
    pub list: String,
    /// The container's name.
    pub name: String,
    /// Added, removed or changed.
    pub presence: Presence,
    /// The fields that differ (for a changed container).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldChange>,
}

/// One volume that differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeChange {
    /// The volume's name.
    pub name: String,
    /// Added, removed or changed.
    pub presence: Presence,
}

/// Everything that differs between two pods.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodDiff {
    /// Containers and init containers, in the order of the pod after, then those removed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<ContainerChange>,
    /// Volumes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<VolumeChange>,
    /// The pod's annotations, labels and other spec fields.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pod: Vec<FieldChange>,
}

impl PodDiff {
    /// Whether nothing differs.
    pub fn is_empty(&self) -> bool {
        self.containers.is_empty() && self.volumes.is_empty() && self.pod.is_empty()
    }

    /// Whether the only differences are container images (a version bump).
    pub fn is_image_only(&self) -> bool {
        !self.is_empty()
            && self.volumes.is_empty()
            && self.pod.is_empty()
            && self
                .containers
                .iter()
                .all(|c| c.presence == Presence::Changed && c.fields.iter().all(|f| f.field == "image"))
    }

    /// The kinds of difference, for a summary: `image`, or the fields (`istio-proxy: env, resources`,
    /// `+container istio-validation`, `volumes`, `metadata.annotations`).
    pub fn kinds(&self) -> Vec<String> {
        if self.is_image_only() {
            return vec!["image".to_owned()];
        }
        let mut kinds = Vec::new();
        for container in &self.containers {
            match container.presence {
                Presence::Added => kinds.push(format!("+{} {}", singular(&container.list), container.name)),
                Presence::Removed => kinds.push(format!("-{} {}", singular(&container.list), container.name)),
                Presence::Changed => {
                    let fields: BTreeSet<&str> =
                        container.fields.iter().map(|f| field_family(&f.field)).collect();
                    kinds.push(format!(
                        "{}: {}",
                        container.name,
                        fields.into_iter().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
        if !self.volumes.is_empty() {
            kinds.push("volumes".to_owned());
        }
        let pod: BTreeSet<&str> = self.pod.iter().map(|f| field_family(&f.field)).collect();
        kinds.extend(pod.into_iter().map(str::to_owned));
        kinds
    }
}

fn singular(list: &str) -> &'static str {
    if list == "initContainers" {
        "initContainer"
    } else {
        "container"
    }
}

/// `env[X]` → `env`, `metadata.annotations[k]` → `metadata.annotations`.
fn field_family(field: &str) -> &str {
    field.split_once('[').map_or(field, |(family, _)| family)
}

/// The diff from `before` to `after` (both pods as JSON).
pub fn diff_pods(before: &Value, after: &Value) -> PodDiff {
    let mut diff = PodDiff::default();
    for list in ["initContainers", "containers"] {
        let old = named_items(before, list);
        let new = named_items(after, list);
        for (name, container) in &new {
            match old.iter().find(|(n, _)| n == name) {
                None => diff.containers.push(ContainerChange {
                    list: list.to_owned(),
                    name: name.clone(),
                    presence: Presence::Added,
                    fields: Vec::new(),
                }),
                Some((_, previous)) => {
                    let fields = diff_container(previous, container);
                    if !fields.is_empty() {
                        diff.containers.push(ContainerChange {
                            list: list.to_owned(),
                            name: name.clone(),
                            presence: Presence::Changed,
                            fields,
                        });
                    }
                }
            }
        }
        for (name, _) in old.iter().filter(|(n, _)| !new.iter().any(|(m, _)| m == n)) {
            diff.containers.push(ContainerChange {
                list: list.to_owned(),
                name: name.clone(),
                presence: Presence::Removed,
                fields: Vec::new(),
            });
        }
    }
    let old = named_items(before, "volumes");
    let new = named_items(after, "volumes");
    for (name, volume) in &new {
        let presence = match old.iter().find(|(n, _)| n == name) {
            None => Presence::Added,
            Some((_, previous)) if previous != volume => Presence::Changed,
            Some(_) => continue,
        };
        diff.volumes.push(VolumeChange {
            name: name.clone(),
            presence,
        });
    }
    for (name, _) in old.iter().filter(|(n, _)| !new.iter().any(|(m, _)| m == n)) {
        diff.volumes.push(VolumeChange {
            name: name.clone(),
            presence: Presence::Removed,
        });
    }
    for field in ["annotations", "labels"] {
        let pointer = format!("/metadata/{field}");
        diff_maps(
            &format!("metadata.{field}"),
            before.pointer(&pointer),
            after.pointer(&pointer),
            &mut diff.pod,
        );
    }
    let empty = Map::new();
    let spec = |pod: &Value| {
        pod.get("spec")
            .and_then(Value::as_object)
            .unwrap_or(&empty)
            .clone()
    };
    let (old_spec, new_spec) = (spec(before), spec(after));
    for key in union_keys(&old_spec, &new_spec) {
        if matches!(key.as_str(), "containers" | "initContainers" | "volumes") {
            continue;
        }
        push_if_differs(
            &format!("spec.{key}"),
            old_spec.get(&key),
            new_spec.get(&key),
            &mut diff.pod,
        );
    }
    diff
}

/// The fields of a container that differ; `env` compared variable by variable.
fn diff_container(before: &Value, after: &Value) -> Vec<FieldChange> {
    let empty = Map::new();
    let old = before.as_object().unwrap_or(&empty);
    let new = after.as_object().unwrap_or(&empty);
    let mut changes = Vec::new();
    for key in union_keys(old, new) {
        if key == "env" {
            let vars = |c: &Value| named_items_of(c.get("env"));
            let (old_env, new_env) = (vars(before), vars(after));
            let mut names: Vec<&String> = new_env.iter().map(|(n, _)| n).collect();
            names.extend(
                old_env
                    .iter()
                    .map(|(n, _)| n)
                    .filter(|n| !new_env.iter().any(|(m, _)| m == *n)),
            );
            for name in names {
                let find =
                    |vars: &[(String, Value)]| vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
                let (was, is) = (find(&old_env), find(&new_env));
                if was != is {
                    changes.push(FieldChange {
                        field: format!("env[{name}]"),
                        before: was.and_then(env_value),
                        after: is.and_then(env_value),
                    });
                }
            }
            continue;
        }
        push_if_differs(&key, old.get(&key), new.get(&key), &mut changes);
    }
    changes
}

/// An env entry shown by its value (or its `valueFrom`), the name being in the field.
fn env_value(entry: Value) -> Option<Value> {
    match entry {
        Value::Object(mut map) => {
            map.shift_remove("name");
            Some(match (map.shift_remove("value"), map.is_empty()) {
                (Some(value), true) => value,
                (Some(value), false) => {
                    map.insert("value".to_owned(), value);
                    Value::Object(map)
                }
                (None, true) => Value::String(String::new()),
                (None, false) => Value::Object(map),
            })
        }
        other => Some(other),
    }
}

fn diff_maps(prefix: &str, before: Option<&Value>, after: Option<&Value>, changes: &mut Vec<FieldChange>) {
    let empty = Map::new();
    let old = before.and_then(Value::as_object).unwrap_or(&empty);
    let new = after.and_then(Value::as_object).unwrap_or(&empty);
    for key in union_keys(old, new) {
        push_if_differs(&format!("{prefix}[{key}]"), old.get(&key), new.get(&key), changes);
    }
}

fn push_if_differs(
    field: &str,
    before: Option<&Value>,
    after: Option<&Value>,
    changes: &mut Vec<FieldChange>,
) {
    let meaningful = |v: Option<&Value>| v.filter(|v| !is_empty_value(v)).cloned();
    let (before, after) = (meaningful(before), meaningful(after));
    if before != after {
        changes.push(FieldChange {
            field: field.to_owned(),
            before,
            after,
        });
    }
}

/// `null`, `""`, `{}` and `[]` mean the same as an absent field in a pod.
pub fn is_empty_value(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

/// Keys of both maps: those of `after` in its order, then those only in `before`.
fn union_keys(before: &Map<String, Value>, after: &Map<String, Value>) -> Vec<String> {
    let mut keys: Vec<String> = after.keys().cloned().collect();
    keys.extend(before.keys().filter(|k| !after.contains_key(*k)).cloned());
    keys
}

fn named_items(pod: &Value, list: &str) -> Vec<(String, Value)> {
    named_items_of(pod.get("spec").and_then(|s| s.get(list)))
}

fn named_items_of(list: Option<&Value>) -> Vec<(String, Value)> {
    list.and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|item| {
                    let name = item.get("name").and_then(Value::as_str).unwrap_or("").to_owned();
                    (name, item.clone())
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(image: &str, env: Value) -> Value {
        json!({"metadata": {"annotations": {"a": "1"}},
               "spec": {"initContainers": [{"name": "istio-init", "image": image}],
                        "containers": [{"name": "app", "image": "nginx"},
                                       {"name": "istio-proxy", "image": image, "env": env,
                                        "resources": {"requests": {"cpu": "100m"}}}],
                        "volumes": [{"name": "istio-envoy", "emptyDir": {}}]}})
    }

    #[test]
    fn an_image_bump_is_image_only() {
        let env = json!([{"name": "A", "value": "1"}]);
        let diff = diff_pods(&pod("proxy:1", env.clone()), &pod("proxy:2", env));
        assert!(diff.is_image_only(), "{diff:?}");
        assert_eq!(diff.containers.len(), 2);
        assert_eq!(diff.containers[0].fields[0].before, Some(json!("proxy:1")));
        assert_eq!(diff.kinds(), ["image"]);
    }

    #[test]
    fn env_is_compared_by_variable_and_empty_fields_are_absent() {
        let before = pod(
            "p",
            json!([{"name": "A", "value": "1"}, {"name": "B", "value": "x"}]),
        );
        let mut after = pod(
            "p",
            json!([{"name": "A", "value": "2"}, {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]),
        );
        after["spec"]["containers"][1]["securityContext"] = json!({});
        let diff = diff_pods(&before, &after);
        let fields: Vec<&str> = diff.containers[0]
            .fields
            .iter()
            .map(|f| f.field.as_str())
            .collect();
        assert_eq!(fields, ["env[A]", "env[C]", "env[B]"]);
        assert_eq!(diff.containers[0].fields[0].after, Some(json!("2")));
        assert_eq!(diff.containers[0].fields[2].after, None);
        assert!(!diff.is_image_only());
        assert_eq!(diff.kinds(), ["istio-proxy: env"]);
    }

    #[test]
    fn added_and_removed_containers_volumes_and_pod_fields() {
        let before = pod("p", json!([]));
        let mut after = before.clone();
        after["spec"]["initContainers"] = json!([{"name": "istio-validation", "image": "p"}]);
        after["spec"]["volumes"] =
            json!([{"name": "istio-envoy", "emptyDir": {"medium": "Memory"}}, {"name": "x", "emptyDir": {}}]);
        after["metadata"]["annotations"]["b"] = json!("2");
        after["spec"]["dnsPolicy"] = json!("None");
        let diff = diff_pods(&before, &after);
        let presence: Vec<(&str, Presence)> = diff
            .containers
            .iter()
            .map(|c| (c.name.as_str(), c.presence))
            .collect();
        assert_eq!(
            presence,
            [
                ("istio-validation", Presence::Added),
                ("istio-init", Presence::Removed)
            ]
        );
        assert_eq!(
            diff.volumes,
            [
                VolumeChange {
                    name: "istio-envoy".into(),
                    presence: Presence::Changed
                },
                VolumeChange {
                    name: "x".into(),
                    presence: Presence::Added
                }
            ]
        );
        let pod_fields: Vec<&str> = diff.pod.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(pod_fields, ["metadata.annotations[b]", "spec.dnsPolicy"]);
        assert_eq!(
            diff.kinds(),
            [
                "+initContainer istio-validation",
                "-initContainer istio-init",
                "volumes",
                "metadata.annotations",
                "spec.dnsPolicy"
            ]
        );
    }

    #[test]
    fn identical_pods_have_no_diff() {
        let pod = pod("p", json!([]));
        assert!(diff_pods(&pod, &pod).is_empty());
        assert!(!diff_pods(&pod, &pod).is_image_only());
    }
}
