//! Spare copies of a kept render's new items, handed back by the pods that were done with them.
//!
//! A pod that reuses a kept render gets the render's new list items (the sidecar's containers and
//! volumes, most of an injected pod) as copies of the normalized items of its template pod
//! (the pipeline's `merge_guide`). Copying them is a good part of an injection's work, and so is
//! freeing them once the patch is written. When the caller needs only the patch (the webhook,
//! [`super::Injector::answer`]), the items the finished pod still holds unchanged are taken back
//! here instead of freed, and the next pod of the render gets them without a copy.
//!
//! An item is taken back only when it is equal to the template pod's, member for member in the
//! same order, or when the patch found it equal but for items of its `env` (post-processing adds
//! the probers to the proxy's, and a pod that is its own owner gets its name in some): those are
//! put back as the template pod has them first. Any other changed item is freed. A spare is
//! indistinguishable from a fresh copy. At most [`PER_ITEM`] spares are kept of each item, so a
//! render holds at most that many copies of its items besides its own.

use std::sync::Mutex;

use serde_json::Value;

use crate::{
    member::Members,
    patch::{Copied, EnvChange, address, same},
};

/// The most spare copies kept of one item.
pub const PER_ITEM: usize = 4;

/// The spares of one kept render's items, by the item's address in its template pod (which the
/// kept render owns and never moves; [`address`]).
#[derive(Debug, Default)]
pub struct Spares {
    slots: Mutex<Vec<Slot>>,
}

#[derive(Debug)]
struct Slot {
    item: usize,
    copies: Vec<Value>,
}

impl Spares {
    /// A copy of `item` (an item of the kept render's template pod): a spare when there is one,
    /// else a new copy.
    pub fn copy_of(&self, item: &Value) -> Value {
        let spare = self
            .slots
            .lock()
            .ok()
            .and_then(|mut slots| slot(&mut slots, item).copies.pop());
        spare.unwrap_or_else(|| item.clone())
    }

    /// Takes back from `pod` (done with) each item of `template_pod`'s `spec` lists that it holds
    /// unchanged, in the same list under the same `name`, up to [`PER_ITEM`] of each. `proven`
    /// tells values of `pod` already found equal to items of `template_pod`, member for member in
    /// the same order, or equal but for items of their `env` (by the patch,
    /// [`crate::patch::KnownPatch::copied`]): those are put back as the item has them, and the
    /// item comes back as it was handed out. Any other is compared.
    pub fn take_back(&self, template_pod: &Value, pod: &mut Value, proven: &[Copied]) {
        let (Some(template), Some(spec)) = (
            template_pod.member("spec").and_then(Value::as_object),
            pod.member_mut("spec").and_then(Value::as_object_mut),
        ) else {
            return;
        };
        let Ok(mut slots) = self.slots.lock() else {
            return;
        };
        for (field, items) in template {
            let (Some(items), Some(held)) = (
                items.as_array(),
                spec.get_mut(field).and_then(Value::as_array_mut),
            ) else {
                continue;
            };
            for item in items {
                let Some(name) = item.member("name").filter(|name| name.is_string()) else {
                    continue;
                };
                let slot = slot(&mut slots, item);
                if slot.copies.len() >= PER_ITEM {
                    continue;
                }
                let Some(candidate) = held
                    .iter_mut()
                    .find(|candidate| candidate.member("name") == Some(name))
                else {
                    continue;
                };
                let found = proven
                    .iter()
                    .find(|copied| copied.value == address(candidate) && copied.known == address(item));
                let unchanged = match found {
                    Some(copied) => restore_env(candidate, item, &copied.env),
                    None => same(candidate, item),
                };
                if unchanged {
                    debug_assert!(same(candidate, item), "a spare taken back differs from its item");
                    slot.copies.push(std::mem::take(candidate));
                }
            }
        }
    }

    /// How many spares are kept, of all items.
    pub fn len(&self) -> usize {
        self.slots
            .lock()
            .map(|slots| slots.iter().map(|slot| slot.copies.len()).sum())
            .unwrap_or(0)
    }

    /// Whether no spare is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Puts back into `container`'s `env` the items of `item`'s that `change` says it does not hold:
/// whether it could (it can, when the patch said so).
fn restore_env(container: &mut Value, item: &Value, change: &EnvChange) -> bool {
    if change.is_none() {
        return true;
    }
    let (Some(original), Some(env)) = (
        item.member("env").and_then(Value::as_array),
        container.member_mut("env").and_then(Value::as_array_mut),
    ) else {
        return false;
    };
    if env.len() != original.len() + change.added {
        return false;
    }
    env.truncate(original.len());
    for &index in &change.replaced {
        match (env.get_mut(index), original.get(index)) {
            (Some(slot), Some(original)) => *slot = original.clone(),
            _ => return false,
        }
    }
    true
}

/// The slot of `item` (made when it has none yet).
fn slot<'s>(slots: &'s mut Vec<Slot>, item: &Value) -> &'s mut Slot {
    let at = address(item);
    let index = match slots.iter().position(|slot| slot.item == at) {
        Some(index) => index,
        None => {
            slots.push(Slot {
                item: at,
                copies: Vec::new(),
            });
            slots.len() - 1
        }
    };
    &mut slots[index]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn template_pod() -> Value {
        json!({"spec": {
            "initContainers": [{"name": "istio-proxy", "image": "proxy", "env": [{"name": "A", "value": "1"}]}],
            "volumes": [{"name": "istio-envoy", "emptyDir": {}}, {"name": "istio-data", "emptyDir": {}}]
        }})
    }

    fn item<'a>(pod: &'a Value, list: &str, index: usize) -> &'a Value {
        &pod["spec"][list][index]
    }

    #[test]
    fn unchanged_items_come_back_and_are_handed_out_instead_of_copies() {
        let template = template_pod();
        let spares = Spares::default();
        let proxy = item(&template, "initContainers", 0);
        let mut pod = json!({"spec": {
            "initContainers": [spares.copy_of(proxy)],
            "containers": [{"name": "app"}],
            "volumes": [{"name": "app-data"}, spares.copy_of(item(&template, "volumes", 1))]
        }});
        // The patch found the proxy equal already; the volume is compared here.
        let proven = [Copied {
            value: address(&pod["spec"]["initContainers"][0]),
            known: address(proxy),
            env: EnvChange::default(),
        }];
        spares.take_back(&template, &mut pod, &proven);
        assert_eq!(spares.len(), 2, "the proxy and istio-data came back");
        assert_eq!(
            pod["spec"]["containers"][0],
            json!({"name": "app"}),
            "the pod's own stay"
        );
        assert_eq!(pod["spec"]["volumes"][0], json!({"name": "app-data"}));
        assert_eq!(spares.copy_of(proxy), *proxy);
        assert_eq!(spares.len(), 1);
    }

    #[test]
    fn changed_items_and_items_over_the_limit_are_not_taken_back() {
        let template = template_pod();
        let spares = Spares::default();
        let proxy = item(&template, "initContainers", 0);
        let mut changed = proxy.clone();
        changed["env"][0]["value"] = json!("2");
        let mut first = json!({"spec": {"initContainers": [changed], "volumes": [json!({"emptyDir": {}, "name": "istio-envoy"})]}});
        spares.take_back(&template, &mut first, &[]);
        assert!(
            spares.is_empty(),
            "a changed proxy, or the same members in another order, is freed"
        );

        for _ in 0..PER_ITEM + 2 {
            let mut pod = json!({"spec": {"initContainers": [proxy.clone()]}});
            spares.take_back(&template, &mut pod, &[]);
        }
        assert_eq!(spares.len(), PER_ITEM);
        for _ in 0..PER_ITEM + 1 {
            assert_eq!(
                spares.copy_of(proxy),
                *proxy,
                "a spare, then a new copy, is the item"
            );
        }
        assert!(spares.is_empty());
    }

    #[test]
    fn a_proxy_with_env_items_replaced_or_added_comes_back_as_it_was_handed_out() {
        let template = template_pod();
        let spares = Spares::default();
        let proxy = item(&template, "initContainers", 0);
        let mut probed = spares.copy_of(proxy);
        probed["env"][0]["value"] = json!("web-0");
        probed["env"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "ISTIO_KUBE_APP_PROBERS", "value": "{}"}));
        let mut pod = json!({"spec": {"initContainers": [probed]}});
        let proven = [Copied {
            value: address(&pod["spec"]["initContainers"][0]),
            known: address(proxy),
            env: EnvChange {
                replaced: vec![0],
                added: 1,
            },
        }];
        spares.take_back(&template, &mut pod, &proven);
        assert_eq!(spares.len(), 1);
        assert_eq!(spares.copy_of(proxy), *proxy, "the item's own env is back");

        // Without the patch's word, a proxy with added items is compared, and freed; so is one
        // that does not hold what the patch said.
        let mut probed = proxy.clone();
        probed["env"].as_array_mut().unwrap().push(json!({"name": "B"}));
        let mut pod = json!({"spec": {"initContainers": [probed]}});
        spares.take_back(&template, &mut pod, &[]);
        let proven = [Copied {
            value: address(&pod["spec"]["initContainers"][0]),
            known: address(proxy),
            env: EnvChange {
                replaced: Vec::new(),
                added: 3,
            },
        }];
        spares.take_back(&template, &mut pod, &proven);
        assert!(spares.is_empty());
    }

    #[test]
    fn a_pod_without_the_lists_gives_nothing_back() {
        let spares = Spares::default();
        for mut pod in [json!({}), json!({"spec": {"volumes": "not a list"}}), json!(null)] {
            spares.take_back(&template_pod(), &mut pod, &[]);
        }
        assert!(spares.is_empty());
    }
}
