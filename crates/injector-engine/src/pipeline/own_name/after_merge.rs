//! The pod's name put in after the merge: a shared render merged as a kept render.
//!
//! A render shared under the stand-in is merged, by default, as the pod's own: the name is put
//! into a copy of the overlay, and the copy is merged and walked whole like a fresh render. Yet in
//! Istio's templates the name only lands in a few strings (the proxy's `ISTIO_META_WORKLOAD_NAME`
//! and `ISTIO_META_OWNER`, sometimes the `service.istio.io/canonical-name` label), at places the
//! strategic merge never matches, orders or parses by: the value of an env var of a container
//! named by the overlay, and the value of a label or annotation. Whatever the merge does with the
//! pod there, the overlay's string wins, as it is. So merging the render with the stand-in (as a
//! kept render: its template pod, texts and spare items worked out once) and then putting the
//! name into those strings gives what merging the named overlay gives.
//!
//! [`merged_holes`] accepts a render only when every place holding the stand-in is such a string,
//! named by unique names in the overlay; [`fill_merged`] finds each in the merged pod, checks that
//! it holds the overlay's string and puts the name in (the stand-in is then nowhere else in the
//! pod, which debug builds check). When a check fails the caller merges the named overlay instead.

use serde_json::Value;

use super::{Hole, Step};
use crate::member::Members;

/// A place in a merged pod where a render made with the stand-in put it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergedHole {
    /// The value of `key` in `metadata.<map>` (`labels` or `annotations`).
    Metadata {
        /// `labels` or `annotations`.
        map: String,
        /// The label's or annotation's key.
        key: String,
        /// The overlay's string there, with the stand-in.
        text: String,
    },
    /// The `value` of the env var `env` of the container `container` in `spec.<list>`.
    Env {
        /// `containers` or `initContainers`.
        list: String,
        /// The container's name.
        container: String,
        /// The env var's name.
        env: String,
        /// The overlay's string there, with the stand-in.
        text: String,
    },
}

impl MergedHole {
    /// The overlay's string at this place, with the stand-in.
    pub fn text(&self) -> &str {
        match self {
            MergedHole::Metadata { text, .. } | MergedHole::Env { text, .. } => text,
        }
    }

    /// The string at this place in `pod`.
    fn find<'p>(&self, pod: &'p mut Value) -> Option<&'p mut Value> {
        match self {
            MergedHole::Metadata { map, key, .. } => pod
                .member_mut("metadata")?
                .as_object_mut()?
                .get_mut(map.as_str())?
                .as_object_mut()?
                .get_mut(key.as_str()),
            MergedHole::Env {
                list, container, env, ..
            } => pod
                .member_mut("spec")?
                .as_object_mut()?
                .get_mut(list.as_str())?
                .as_array_mut()?
                .iter_mut()
                .find(|item| item.member("name").and_then(Value::as_str) == Some(container))?
                .member_mut("env")?
                .as_array_mut()?
                .iter_mut()
                .find(|var| var.member("name").and_then(Value::as_str) == Some(env))?
                .member_mut("value"),
        }
    }
}

/// `holes` (of `overlay`, [`super::holes`]) as places in a merged pod, or `None` when one is
/// anywhere else: a key, another field, or a container or env var whose name the overlay gives
/// twice (or not as a string).
pub fn merged_holes(overlay: &Value, holes: &[Hole]) -> Option<Vec<MergedHole>> {
    let mut places = Vec::with_capacity(holes.len());
    for hole in holes {
        if hole.in_key {
            return None;
        }
        let text = at(overlay, &hole.path)?.as_str()?.to_owned();
        let place = match hole.path.as_slice() {
            [metadata, map, name] if key(metadata)? == "metadata" => {
                let map = key(map)?;
                if map != "labels" && map != "annotations" {
                    return None;
                }
                MergedHole::Metadata {
                    map: map.to_owned(),
                    key: key(name)?.to_owned(),
                    text,
                }
            }
            [spec, list, item, env_field, var, value]
                if key(spec)? == "spec" && key(env_field)? == "env" && key(value)? == "value" =>
            {
                let list = key(list)?;
                if list != "containers" && list != "initContainers" {
                    return None;
                }
                let items = overlay.member("spec")?.member(list)?.as_array()?;
                let container = unique_name(items, index(item)?)?;
                let vars = items[index(item)?].member("env")?.as_array()?;
                let env = unique_name(vars, index(var)?)?;
                MergedHole::Env {
                    list: list.to_owned(),
                    container: container.to_owned(),
                    env: env.to_owned(),
                    text,
                }
            }
            _ => return None,
        };
        places.push(place);
    }
    Some(places)
}

/// The key of a step to a member.
fn key(step: &Step) -> Option<&str> {
    match step {
        Step::Key(key) => Some(key),
        Step::Index(_) => None,
    }
}

/// The index of a step to an item.
fn index(step: &Step) -> Option<usize> {
    match step {
        Step::Index(index) => Some(*index),
        Step::Key(_) => None,
    }
}

/// The `name` of `items[index]`, when it is a string no other item of `items` has.
fn unique_name(items: &[Value], index: usize) -> Option<&str> {
    let name = items.get(index)?.member("name")?.as_str()?;
    let holders = items
        .iter()
        .filter(|item| item.member("name").and_then(Value::as_str) == Some(name))
        .count();
    (holders == 1).then_some(name)
}

/// The value at `path` in `value`.
fn at<'v>(value: &'v Value, path: &[Step]) -> Option<&'v Value> {
    path.iter().try_fold(value, |value, step| match step {
        Step::Key(key) => value.member(key),
        Step::Index(index) => value.as_array()?.get(*index),
    })
}

/// Puts `named[i]` (the string of `holes[i]` with the pod's name in) at each of `holes` in
/// `merged`, the pod a render with `stand_in` was merged into: `false` when a place does not hold
/// the overlay's string (then `merged` is partly filled, and to be dropped).
///
/// The stand-in is then nowhere else in the pod: `holes` are every place of the overlay that held
/// it ([`super::holes`] walks every string and key, and [`merged_holes`] refuses a render with
/// one it cannot place), the merge puts each of the overlay's strings in one place, and no pod
/// holds the stand-in (made at random for each injector). Debug builds look through the whole pod.
pub fn fill_merged(merged: &mut Value, holes: &[MergedHole], named: &[String], stand_in: &str) -> bool {
    if holes.len() != named.len() {
        return false;
    }
    for (hole, named) in holes.iter().zip(named) {
        match hole.find(merged) {
            Some(Value::String(text)) if text.as_str() == hole.text() => text.clone_from(named),
            _ => return false,
        }
    }
    debug_assert!(
        !holds(merged, stand_in),
        "the stand-in is left in a merged pod after its holes were filled"
    );
    true
}

/// Whether any string or key in `value` holds `stand_in`.
pub fn holds(value: &Value, stand_in: &str) -> bool {
    holds_found(value, &memchr::memmem::Finder::new(stand_in))
}

fn holds_found(value: &Value, finder: &memchr::memmem::Finder<'_>) -> bool {
    let found = |text: &str| text.len() >= finder.needle().len() && finder.find(text.as_bytes()).is_some();
    match value {
        Value::String(text) => found(text),
        Value::Array(items) => items.iter().any(|item| holds_found(item, finder)),
        Value::Object(members) => members
            .iter()
            .any(|(key, member)| found(key) || holds_found(member, finder)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{StandIn, holes};
    use super::*;

    const STAND_IN: &str = "zzstandin";

    fn overlay() -> Value {
        json!({
            "metadata": {"labels": {"service.istio.io/canonical-name": "zzstandin"}},
            "spec": {"initContainers": [{"name": "istio-proxy", "env": [
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "ISTIO_META_WORKLOAD_NAME", "value": "zzstandin"},
                {"name": "ISTIO_META_OWNER", "value": "kubernetes://apis/v1/namespaces/ns/pods/zzstandin"}
            ]}]}
        })
    }

    fn places(overlay: &Value) -> Option<Vec<MergedHole>> {
        merged_holes(overlay, &holes(overlay, &StandIn(STAND_IN.into())))
    }

    #[test]
    fn env_values_and_label_values_are_places_in_the_merged_pod() {
        let places = places(&overlay()).expect("all places");
        assert_eq!(places.len(), 3);
        assert!(places.contains(&MergedHole::Metadata {
            map: "labels".into(),
            key: "service.istio.io/canonical-name".into(),
            text: "zzstandin".into()
        }));
        assert!(places.contains(&MergedHole::Env {
            list: "initContainers".into(),
            container: "istio-proxy".into(),
            env: "ISTIO_META_WORKLOAD_NAME".into(),
            text: "zzstandin".into()
        }));
    }

    #[test]
    fn a_key_another_field_or_a_repeated_name_is_not_a_place() {
        let mut in_key = overlay();
        in_key["metadata"]["annotations"] = json!({"zzstandin": "x"});
        let mut in_args = overlay();
        in_args["spec"]["initContainers"][0]["args"] = json!(["--name", "zzstandin"]);
        let mut in_name = overlay();
        in_name["spec"]["volumes"] = json!([{"name": "zzstandin-data", "emptyDir": {}}]);
        let mut repeated_var = overlay();
        repeated_var["spec"]["initContainers"][0]["env"]
            .as_array_mut()
            .expect("env")
            .push(json!({"name": "ISTIO_META_WORKLOAD_NAME", "value": "other"}));
        let mut repeated_container = overlay();
        repeated_container["spec"]["initContainers"]
            .as_array_mut()
            .expect("list")
            .push(json!({"name": "istio-proxy"}));
        for (what, overlay) in [
            ("a key", in_key),
            ("args", in_args),
            ("a volume's name", in_name),
            ("a repeated env var", repeated_var),
            ("a repeated container", repeated_container),
        ] {
            assert_eq!(places(&overlay), None, "{what}");
        }
    }

    #[test]
    fn the_name_goes_in_where_the_merged_pod_holds_the_overlays_strings() {
        let places = places(&overlay()).expect("places");
        let named: Vec<String> = places
            .iter()
            .map(|place| place.text().replace(STAND_IN, "db-0"))
            .collect();
        let mut merged = overlay();
        merged["spec"]["containers"] = json!([{"name": "app", "env": [{"name": "X", "value": "1"}]}]);
        merged["metadata"]["labels"]["app"] = json!("db");
        assert!(fill_merged(&mut merged, &places, &named, STAND_IN));
        let mut expected = overlay();
        expected["spec"]["containers"] = json!([{"name": "app", "env": [{"name": "X", "value": "1"}]}]);
        expected["metadata"]["labels"] = json!({"service.istio.io/canonical-name": "db-0", "app": "db"});
        expected["spec"]["initContainers"][0]["env"][1]["value"] = json!("db-0");
        expected["spec"]["initContainers"][0]["env"][2]["value"] =
            json!("kubernetes://apis/v1/namespaces/ns/pods/db-0");
        assert_eq!(merged, expected);
    }

    #[test]
    fn a_place_without_the_overlays_string_fails() {
        let places = places(&overlay()).expect("places");
        let named: Vec<String> = places
            .iter()
            .map(|p| p.text().replace(STAND_IN, "db-0"))
            .collect();
        let mut changed = overlay();
        changed["spec"]["initContainers"][0]["env"][1]["value"] = json!("something else");
        assert!(!fill_merged(&mut changed, &places, &named, STAND_IN));
        let mut missing = overlay();
        missing["metadata"]["labels"] = json!({});
        assert!(!fill_merged(&mut missing, &places, &named, STAND_IN));
        assert!(!fill_merged(&mut overlay(), &places, &named[1..], STAND_IN));
    }
}
