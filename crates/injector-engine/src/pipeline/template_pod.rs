//! The names of what the templates add, read from a rendered template without a second merge.
//!
//! Istio merges each rendered template twice: into the pod, and into an empty "template pod".
//! Of the template pod only the names of four lists are ever read (to re-apply the user's
//! versions of template containers, and for the `sidecar.istio.io/status` annotation). For a
//! single template whose overlay names its items plainly, those names are the overlay's own, in
//! its order: merging into an empty pod keeps every item of those lists, and Go's round trip
//! keeps their names. Reading them directly saves a copy, a merge and a normalization of the whole
//! rendered template. Anything less plain (merge directives, case variants of the field names Go
//! would still match, items without a string name, repeated names) is left to the full merge.

use serde_json::{Map, Value};

use crate::member::Members;

/// The lists of the template pod whose item names are read.
const NAMED_LISTS: [&str; 4] = ["initContainers", "containers", "volumes", "imagePullSecrets"];

/// A template pod holding only `{name}` items of the four named lists, as merging `overlay` into
/// an empty pod would name them; `None` when the overlay is not plain enough to be sure.
pub(super) fn names_only(overlay: &Value) -> Option<Value> {
    let top = overlay.as_object()?;
    if !plain_keys(top, &["spec"]) {
        return None;
    }
    let mut spec = Map::new();
    if let Some(overlay_spec) = top.member("spec") {
        let overlay_spec = overlay_spec.as_object()?;
        if !plain_keys(overlay_spec, &NAMED_LISTS) {
            return None;
        }
        for list in NAMED_LISTS {
            if let Some(items) = overlay_spec.member(list) {
                spec.insert(list.to_owned(), Value::Array(item_names(items)?));
            }
        }
    }
    let mut pod = Map::new();
    pod.insert("spec".to_owned(), Value::Object(spec));
    Some(Value::Object(pod))
}

/// No merge directive (`$patch`, `$setElementOrder/…`, `$retainKeys`, …) among `map`'s keys, and
/// no key that case-insensitive field matching (as `normalize` does it) would take for one of
/// `fields` other than the field's exact name.
fn plain_keys(map: &Map<String, Value>, fields: &[&str]) -> bool {
    map.keys().all(|key| {
        !key.starts_with('$')
            && (fields.contains(&key.as_str()) || !fields.iter().any(|field| key.eq_ignore_ascii_case(field)))
    })
}

/// `[{name}]` for a list whose items are objects with distinct string names and plain keys.
fn item_names(items: &Value) -> Option<Vec<Value>> {
    let items = items.as_array()?;
    let mut names: Vec<&str> = Vec::with_capacity(items.len());
    for item in items {
        let item = item.as_object()?;
        if !plain_keys(item, &["name"]) {
            return None;
        }
        let name = item.member("name")?.as_str()?;
        if names.contains(&name) {
            return None;
        }
        names.push(name);
    }
    Some(
        names
            .into_iter()
            .map(|name| {
                let mut item = Map::new();
                item.insert("name".to_owned(), Value::from(name));
                Value::Object(item)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_the_names_of_a_plain_overlay() {
        let overlay = json!({
            "metadata": {"labels": {"a": "b"}},
            "spec": {
                "initContainers": [{"name": "istio-init", "image": "x"}],
                "containers": [{"name": "istio-proxy", "env": [{"name": "A"}]}],
                "volumes": [{"name": "v1", "emptyDir": {}}, {"name": "v2"}],
                "securityContext": {}
            }
        });
        assert_eq!(
            names_only(&overlay),
            Some(json!({"spec": {
                "initContainers": [{"name": "istio-init"}],
                "containers": [{"name": "istio-proxy"}],
                "volumes": [{"name": "v1"}, {"name": "v2"}]
            }}))
        );
        assert_eq!(names_only(&json!({})), Some(json!({"spec": {}})));
        assert_eq!(
            names_only(&json!({"spec": {"volumes": []}})),
            Some(json!({"spec": {"volumes": []}}))
        );
    }

    #[test]
    fn leaves_anything_less_plain_to_the_full_merge() {
        for overlay in [
            json!([]),
            json!({"spec": []}),
            json!({"Spec": {}}),
            json!({"$patch": "replace"}),
            json!({"spec": {"$setElementOrder/containers": [{"name": "a"}]}}),
            json!({"spec": {"Containers": [{"name": "a"}]}}),
            json!({"spec": {"containers": null}}),
            json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}),
            json!({"spec": {"containers": [{"Name": "a"}]}}),
            json!({"spec": {"containers": [{"name": "a", "NAME": "b"}]}}),
            json!({"spec": {"containers": [{"name": 1}]}}),
            json!({"spec": {"containers": [{"image": "x"}]}}),
            json!({"spec": {"containers": ["a"]}}),
            json!({"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}),
        ] {
            assert_eq!(names_only(&overlay), None, "{overlay}");
        }
    }
}
