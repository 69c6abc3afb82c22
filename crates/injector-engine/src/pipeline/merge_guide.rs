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
//! The preparation itself (the overlay with its stubs, and the plan) depends on the pod only
//! through the keys its lists hold already: for the usual pod, which holds none of the render's,
//! it is worked out once per kept render too ([`Prepared`]), and debug builds check it against
//! the pod's own.
//!
//! Whenever the overlay is less plain (merge directives in a list, items without a key or with
//! one key twice), the whole list is walked.

use serde_json::{Map, Value};
use strategic_merge::Schema;

use super::spares::Spares;
use crate::member::Members;
use crate::normalize::Guide;

/// What merging one overlay may change, worked out from the overlay and the pod before the merge.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Plan {
    /// Anything under here.
    All,
    /// An object: its layout, and the members named (with their plans).
    Fields(Vec<(String, Plan)>),
    /// A list merged by `key`: items with a key in `fresh` went in as stubs, to be replaced by
    /// the normalized item at the position given (in the template pod's list); items with a key
    /// in `touched` were merged with the overlay's; the others are the pod's own.
    Keyed {
        key: &'static str,
        fresh: Vec<(Value, usize)>,
        touched: Vec<Value>,
    },
}

impl Plan {
    /// Puts the normalized items of `template_pod` (the value the plan was prepared with) in
    /// place of their stubs in the merged pod (spares when there are some, else copies), and
    /// gives the guide of its round trip.
    pub(super) fn finish(&self, merged: &mut Value, template_pod: Option<&Value>, spares: &Spares) -> Guide {
        match self {
            Plan::All => Guide::All,
            Plan::Fields(fields) => Guide::Fields(
                fields
                    .iter()
                    .map(|(name, plan)| {
                        let normalized = template_pod.and_then(|n| n.member(name));
                        let guide = match merged.member_mut(name) {
                            Some(member) => plan.finish(member, normalized, spares),
                            None => plan.finish(&mut Value::Null, normalized, spares),
                        };
                        (name.clone(), guide)
                    })
                    .collect(),
            ),
            Plan::Keyed { key, fresh, touched } => {
                let Some(items) = merged.as_array_mut() else {
                    return Guide::All;
                };
                let normalized = template_pod
                    .and_then(Value::as_array)
                    .map_or(&[][..], Vec::as_slice);
                Guide::Items(
                    items
                        .iter_mut()
                        .enumerate()
                        .map(|(index, item)| {
                            let Some(value) = key_of(item, key) else {
                                return Guide::All;
                            };
                            // New items go in first, in the overlay's order: look there first.
                            let position = fresh
                                .get(index)
                                .filter(|(fresh, _)| fresh == value)
                                .or_else(|| fresh.iter().find(|(fresh, _)| fresh == value))
                                .map(|&(_, position)| position);
                            match position {
                                Some(position) => match normalized.get(position) {
                                    Some(ready) => {
                                        *item = spares.copy_of(ready);
                                        Guide::Skip
                                    }
                                    // Not the template pod the plan was prepared with.
                                    None => Guide::All,
                                },
                                None if touched.contains(value) => Guide::All,
                                None => Guide::Skip,
                            }
                        })
                        .collect(),
                )
            }
        }
    }
}

/// An overlay prepared for any pod that holds none of the keys of its [`Plan::Keyed`] lists'
/// `fresh` items ([`prepare_for_any_pod`]): the same overlay and plan [`prepare`] gives for such a
/// pod, worked out once per kept render.
#[derive(Debug)]
pub(super) struct Prepared {
    /// The overlay with stubs.
    pub overlay: Value,
    /// What merging it changes.
    pub plan: Plan,
}

impl Prepared {
    /// Whether `pod` holds none of the fresh items' keys, so that [`prepare`] would give this.
    pub(super) fn fits(&self, pod: &Value) -> bool {
        fits(&self.plan, Some(pod))
    }
}

fn fits(plan: &Plan, pod: Option<&Value>) -> bool {
    match plan {
        Plan::All => true,
        Plan::Fields(fields) => fields
            .iter()
            .all(|(name, plan)| fits(plan, pod.and_then(|p| p.member(name)))),
        Plan::Keyed { key, fresh, .. } => pod.and_then(Value::as_array).is_none_or(|items| {
            !items
                .iter()
                .filter_map(|item| key_of(item, key))
                .any(|value| fresh.iter().any(|(fresh, _)| fresh == value))
        }),
    }
}

/// The overlay to merge into `pod` (normalized), with stubs for the items of keyed lists that the
/// pod does not hold yet and that `template_pod` (the overlay merged into an empty pod and
/// normalized) holds, and the plan of what the merge may change.
pub(super) fn prepare(overlay: &Value, template_pod: Option<&Value>, pod: &Value) -> (Value, Plan) {
    prepare_object(overlay, template_pod, Some(pod), Some(*Schema::pod()))
}

/// [`prepare`] for a pod that holds none of the keys the overlay's keyed lists bring: worked out
/// once for a kept render, and good for every pod it [`Prepared::fits`].
pub(super) fn prepare_for_any_pod(overlay: &Value, template_pod: Option<&Value>) -> Prepared {
    let (overlay, plan) = prepare_object(overlay, template_pod, None, Some(*Schema::pod()));
    Prepared { overlay, plan }
}

fn prepare_object(
    overlay: &Value,
    normalized: Option<&Value>,
    pod: Option<&Value>,
    schema: Option<Schema>,
) -> (Value, Plan) {
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
        plans.push((name.clone(), plan));
    }
    (Value::Object(out), Plan::Fields(plans))
}

/// The plan of an overlay that goes in as it is: every member it names, all the way down.
fn plan_of(overlay: &Value) -> Plan {
    match overlay {
        Value::Object(members) => Plan::Fields(
            members
                .iter()
                .filter(|(name, _)| !name.starts_with('$'))
                .map(|(name, value)| (name.clone(), plan_of(value)))
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

fn keyed_list(
    items: &[Value],
    key: &'static str,
    normalized: Option<&Value>,
    pod: Option<&Value>,
) -> (Value, Plan) {
    let whole = || (Value::Array(items.to_vec()), Plan::All);
    let mut keys: Vec<&Value> = Vec::with_capacity(items.len());
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
            Some(position) => {
                let mut stub = Map::with_capacity(1);
                stub.insert(key.to_owned(), value.clone());
                out.push(Value::Object(stub));
                fresh.push((value.clone(), position));
            }
            None => {
                out.push(item.clone());
                touched.push(value.clone());
            }
        }
    }
    (Value::Array(out), Plan::Keyed { key, fresh, touched })
}

/// The position of the one item of `list` whose key is `value` (`None` if none or several).
fn only_item(list: &[Value], key: &str, value: &Value) -> Option<usize> {
    let mut found = list
        .iter()
        .enumerate()
        .filter(|(_, item)| key_of(item, key) == Some(value))
        .map(|(position, _)| position);
    match (found.next(), found.next()) {
        (Some(position), None) => Some(position),
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
        let guide = plan.finish(&mut merged, Some(&template_pod), &Spares::default());
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
    fn a_preparation_for_any_pod_is_the_pods_own_when_the_pod_holds_none_of_its_new_keys() {
        let overlay = json!({"metadata": {"labels": {"a": "1"}},
                             "spec": {"containers": [{"name": "istio-proxy", "image": "p"}],
                                      "volumes": [{"name": "v", "emptyDir": {}}]}});
        let template_pod = json!({"spec": {"containers": [{"name": "istio-proxy", "image": "p", "resources": {}}],
                                           "volumes": [{"name": "v", "emptyDir": {}}]}});
        let prepared = prepare_for_any_pod(&overlay, Some(&template_pod));
        let clean = json!({"spec": {"containers": [{"name": "app"}], "volumes": [{"name": "data"}]}});
        assert!(prepared.fits(&clean));
        assert!(
            prepared.fits(&json!({})),
            "a pod without the lists holds none of the keys"
        );
        assert_eq!(
            prepare(&overlay, Some(&template_pod), &clean),
            (prepared.overlay.clone(), prepared.plan.clone())
        );
        for holding in [
            json!({"spec": {"containers": [{"name": "istio-proxy"}]}}),
            json!({"spec": {"volumes": [{"name": "data"}, {"name": "v"}]}}),
        ] {
            assert!(
                !prepared.fits(&holding),
                "{holding} holds a key the overlay brings"
            );
            assert_ne!(prepare(&overlay, Some(&template_pod), &holding).1, prepared.plan);
        }
    }

    #[test]
    fn a_map_goes_in_as_it_is_and_its_plan_names_its_members() {
        let overlay = json!({"metadata": {"labels": {"app": "web", "$patch": "replace"},
                                          "annotations": {"a": "1"}},
                             "spec": {"nodeSelector": {"disk": "ssd"}, "unknownField": {"x": {"y": 1}}}});
        let (prepared, plan) = prepare(&overlay, None, &json!({}));
        assert_eq!(prepared, overlay);
        let mut merged = overlay.clone();
        let guide = plan.finish(&mut merged, None, &Spares::default());
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
                plan.finish(
                    &mut json!({"spec": {"containers": []}}),
                    Some(&overlay),
                    &Spares::default()
                )
                .field("spec")
                .field("containers"),
                &Guide::All
            );
        }
    }
}
