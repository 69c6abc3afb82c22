//! A kept render merged into the pod, with a round trip that walks only what the merge changed.
//!
//! Istio round-trips the whole pod after each template's strategic merge. Here the pod before the
//! merge is normalized already, so only what the overlay reaches can differ from its round trip:
//! the members the overlay names (and the structs and maps holding them), and in a list merged by
//! key, the items whose key the overlay names. The rest keeps its normalized form ([`Plan`] →
//! [`Guide`]).
//!
//! An item the pod's list does not hold yet is inserted exactly as the overlay gives it (merge
//! directives removed), which is also what merging the overlay into an empty pod inserts. For a
//! kept render that merge is worked out once ([`super::render_cache::Kept::template_pod`]). Such
//! an item goes through the strategic merge as a stub holding only its merge key (where it lands
//! depends on its key alone), and the stub is then replaced by the normalized item, which is not
//! walked: the sidecar's containers and volumes, most of an injected pod, are merged and
//! normalized once per kept render instead of once per admission. Debug builds check every such
//! merge against the plain one.
//!
//! Whenever the overlay is less plain (merge directives in a list, items without a key or with
//! one key twice), the whole list is walked.

use serde_json::{Map, Value};
use strategic_merge::Schema;

use super::spares::Spares;
use crate::member::Members;
use crate::normalize::Guide;

/// What merging one overlay may change, worked out from the overlay and the pod before the merge.
#[derive(Debug)]
pub(super) enum Plan<'a> {
    /// Anything under here.
    All,
    /// An object: its layout, and the members named (with their plans).
    Fields(Vec<(&'a str, Plan<'a>)>),
    /// A list merged by `key`: items with a key in `fresh` went in as stubs, to be replaced by
    /// their normalized item; items with a key in `touched` were merged with the overlay's; the
    /// others are the pod's own.
    Keyed {
        key: &'static str,
        fresh: Vec<(&'a Value, &'a Value)>,
        touched: Vec<&'a Value>,
    },
}

impl Plan<'_> {
    /// Puts the normalized items in place of their stubs in the merged pod (spares when there are
    /// some, else copies), and gives the guide of its round trip.
    pub(super) fn finish(&self, merged: &mut Value, spares: &Spares) -> Guide {
        match self {
            Plan::All => Guide::All,
            Plan::Fields(fields) => Guide::Fields(
                fields
                    .iter()
                    .map(|(name, plan)| {
                        let guide = match merged.member_mut(name) {
                            Some(member) => plan.finish(member, spares),
                            None => plan.finish(&mut Value::Null, spares),
                        };
                        ((*name).to_owned(), guide)
                    })
                    .collect(),
            ),
            Plan::Keyed { key, fresh, touched } => match merged.as_array_mut() {
                Some(items) => Guide::Items(
                    items
                        .iter_mut()
                        .map(|item| {
                            let Some(value) = key_of(item, key) else {
                                return Guide::All;
                            };
                            if let Some((_, ready)) = fresh.iter().find(|(fresh, _)| *fresh == value) {
                                *item = spares.copy_of(ready);
                                Guide::Skip
                            } else if touched.contains(&value) {
                                Guide::All
                            } else {
                                Guide::Skip
                            }
                        })
                        .collect(),
                ),
                None => Guide::All,
            },
        }
    }
}

/// The overlay to merge into `pod` (normalized), with stubs for the items of keyed lists that the
/// pod does not hold yet and that `template_pod` (the overlay merged into an empty pod and
/// normalized) holds, and the plan of what the merge may change.
pub(super) fn prepare<'a>(
    overlay: &'a Value,
    template_pod: Option<&'a Value>,
    pod: &Value,
) -> (Value, Plan<'a>) {
    prepare_object(overlay, template_pod, Some(pod), Some(*Schema::pod()))
}

fn prepare_object<'a>(
    overlay: &'a Value,
    normalized: Option<&'a Value>,
    pod: Option<&Value>,
    schema: Option<Schema>,
) -> (Value, Plan<'a>) {
    let Value::Object(members) = overlay else {
        return (overlay.clone(), Plan::All);
    };
    // Below anything but a struct (a map of labels, a field the schema does not know) no list is
    // merged by key: the overlay goes in as it is.
    let Some(schema) = schema.filter(Schema::is_struct) else {
        return (overlay.clone(), plan_of(overlay));
    };
    let mut out = Map::with_capacity(members.len());
    let mut plans = Vec::with_capacity(members.len());
    for (name, value) in members {
        // Directives change the layout of this object only, which its plan covers.
        if name.starts_with('$') {
            out.insert(name.clone(), value.clone());
            continue;
        }
        let (member, plan) = match value {
            Value::Array(items) => match merge_key(&schema, name) {
                Some(key) => keyed_list(
                    items,
                    key,
                    normalized.and_then(|n| n.member(name)),
                    pod.and_then(|p| p.member(name)),
                ),
                None => (value.clone(), Plan::All),
            },
            Value::Object(_) => prepare_object(
                value,
                normalized.and_then(|n| n.member(name)),
                pod.and_then(|p| p.member(name)),
                schema.field(name),
            ),
            _ => (value.clone(), Plan::All),
        };
        out.insert(name.clone(), member);
        plans.push((name.as_str(), plan));
    }
    (Value::Object(out), Plan::Fields(plans))
}

/// The plan of an overlay that goes in as it is: every member it names, all the way down.
fn plan_of(overlay: &Value) -> Plan<'_> {
    match overlay {
        Value::Object(members) => Plan::Fields(
            members
                .iter()
                .filter(|(name, _)| !name.starts_with('$'))
                .map(|(name, value)| (name.as_str(), plan_of(value)))
                .collect(),
        ),
        _ => Plan::All,
    }
}

/// The key of list field `name` of `schema` when Go merges the list by key.
fn merge_key(schema: &Schema, name: &str) -> Option<&'static str> {
    schema
        .lookup_slice(name)
        .ok()
        .filter(|(_, meta)| !meta.merge_key.is_empty() && meta.strategies().any(|s| s == "merge"))
        .map(|(_, meta)| meta.merge_key)
}

/// The merge key's value of a list item, when it has a plain one.
fn key_of<'a>(item: &'a Value, key: &str) -> Option<&'a Value> {
    item.as_object()?
        .member(key)
        .filter(|value| value.is_string() || value.is_number())
}

fn keyed_list<'a>(
    items: &'a [Value],
    key: &'static str,
    normalized: Option<&'a Value>,
    pod: Option<&Value>,
) -> (Value, Plan<'a>) {
    let whole = || (Value::Array(items.to_vec()), Plan::All);
    let mut keys: Vec<&'a Value> = Vec::with_capacity(items.len());
    for item in items {
        let plain = item
            .as_object()
            .is_some_and(|object| !object.keys().any(|k| k.starts_with('$')));
        match key_of(item, key) {
            Some(value) if plain && !keys.contains(&value) => keys.push(value),
            _ => return whole(),
        }
    }
    let in_pod: Vec<&Value> = pod
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(|item| key_of(item, key)).collect())
        .unwrap_or_default();
    let normalized = normalized.and_then(Value::as_array);
    let mut out = Vec::with_capacity(items.len());
    let (mut fresh, mut touched) = (Vec::new(), Vec::new());
    for (item, value) in items.iter().zip(keys) {
        let ready = (!in_pod.contains(&value))
            .then(|| normalized.and_then(|list| only_item(list, key, value)))
            .flatten();
        match ready {
            Some(ready) => {
                let mut stub = Map::with_capacity(1);
                stub.insert(key.to_owned(), value.clone());
                out.push(Value::Object(stub));
                fresh.push((value, ready));
            }
            None => {
                out.push(item.clone());
                touched.push(value);
            }
        }
    }
    (Value::Array(out), Plan::Keyed { key, fresh, touched })
}

/// The one item of `list` whose key is `value` (`None` if none or several).
fn only_item<'a>(list: &'a [Value], key: &str, value: &Value) -> Option<&'a Value> {
    let mut found = list.iter().filter(|item| key_of(item, key) == Some(value));
    match (found.next(), found.next()) {
        (Some(item), None) => Some(item),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn items_the_pod_lacks_come_normalized_and_the_pods_own_are_skipped() {
        let overlay = json!({"spec": {"initContainers": [{"name": "istio-proxy", "image": "p"}],
                                       "containers": [{"name": "app", "env": [{"name": "A", "value": "1"}]}]}});
        let template_pod = json!({"spec": {"initContainers": [{"name": "istio-proxy", "image": "p", "resources": {}}],
                                           "containers": [{"name": "app", "resources": {}}]}});
        let pod = json!({"spec": {"containers": [{"name": "app", "image": "a", "resources": {}}, {"name": "other", "image": "o", "resources": {}}]}});
        let (prepared, plan) = prepare(&overlay, Some(&template_pod), &pod);
        assert_eq!(
            prepared["spec"]["initContainers"][0],
            json!({"name": "istio-proxy"}),
            "a new item goes through the merge as a stub"
        );
        assert_eq!(
            prepared["spec"]["containers"][0], overlay["spec"]["containers"][0],
            "an item merged into the pod's own stays as rendered"
        );
        let mut merged = json!({"spec": {"initContainers": [{"name": "istio-proxy"}],
                                         "containers": [{"name": "app"}, {"name": "other"}]}});
        let guide = plan.finish(&mut merged, &Spares::default());
        assert_eq!(
            merged["spec"]["initContainers"][0],
            json!({"name": "istio-proxy", "image": "p", "resources": {}}),
            "the stub is replaced by the normalized item"
        );
        assert_eq!(guide.field("spec").field("initContainers").item(0), &Guide::Skip);
        assert_eq!(guide.field("spec").field("containers").item(0), &Guide::All);
        assert_eq!(guide.field("spec").field("containers").item(1), &Guide::Skip);
        assert_eq!(guide.field("metadata"), &Guide::Skip);
    }

    #[test]
    fn a_map_goes_in_as_it_is_and_its_plan_names_its_members() {
        let overlay = json!({"metadata": {"labels": {"app": "web", "$patch": "replace"},
                                          "annotations": {"a": "1"}},
                             "spec": {"nodeSelector": {"disk": "ssd"}, "unknownField": {"x": {"y": 1}}}});
        let (prepared, plan) = prepare(&overlay, None, &json!({}));
        assert_eq!(prepared, overlay);
        let mut merged = overlay.clone();
        let guide = plan.finish(&mut merged, &Spares::default());
        let labels = guide.field("metadata").field("labels");
        assert_eq!(labels.field("app"), &Guide::All);
        assert_eq!(labels.field("$patch"), &Guide::Skip, "a directive is no member");
        assert_eq!(
            labels.field("other"),
            &Guide::Skip,
            "what the pod had is not walked"
        );
        assert_eq!(guide.field("metadata").field("name"), &Guide::Skip);
        assert_eq!(
            guide.field("spec").field("nodeSelector").field("disk"),
            &Guide::All
        );
        assert_eq!(
            guide.field("spec").field("unknownField").field("x").field("y"),
            &Guide::All
        );
    }

    #[test]
    fn lists_with_directives_or_repeated_keys_are_walked_whole() {
        for items in [
            json!([{"name": "a"}, {"name": "a"}]),
            json!([{"name": "a", "$patch": "delete"}]),
            json!([{"image": "no name"}]),
        ] {
            let overlay = json!({"spec": {"containers": items}});
            let (prepared, plan) = prepare(&overlay, Some(&overlay), &json!({}));
            assert_eq!(prepared, overlay);
            assert_eq!(
                plan.finish(&mut json!({"spec": {"containers": []}}), &Spares::default())
                    .field("spec")
                    .field("containers"),
                &Guide::All
            );
        }
    }
}
