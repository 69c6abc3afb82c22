//! Container ordering after the merge (Istio's `reorderPod`).
//!
//! The strategic merge puts template containers first. Istio then moves only its own containers:
//!
//! - `istio-proxy` in `containers` goes **last** (so `kubectl exec` defaults to the app), or
//!   **first** when `holdApplicationUntilProxyStarts` is on;
//! - with native sidecars (`istio-proxy` in `initContainers`) the init list becomes
//!   `istio-init`/`istio-validation`, `istio-proxy`, `enable-core-dump`, then the user's init
//!   containers in their order;
//! - otherwise `istio-validation` goes first (it must block user containers until the network is
//!   ready), `istio-init` and then `enable-core-dump` go last.
//!
//! Moving a name collapses duplicates of that name into one entry, keeping the last, as Istio does.

use serde_json::Value;

use crate::pod::{
    ContainerList, ENABLE_CORE_DUMP_CONTAINER, INIT_CONTAINER, PROXY_CONTAINER, VALIDATION_CONTAINER,
    containers_mut, name_of,
};

/// Where to move a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    First,
    Last,
}

/// Reorders the pod's containers in place. `hold_application` is Istio's
/// `holdApplicationUntilProxyStarts` (from the pod's ProxyConfig or the values).
pub fn reorder_pod(pod: &mut Value, hold_application: bool) {
    if let Some(list) = containers_mut(pod, ContainerList::Containers) {
        move_container(
            list,
            PROXY_CONTAINER,
            if hold_application {
                Place::First
            } else {
                Place::Last
            },
        );
    }
    let Some(init) = containers_mut(pod, ContainerList::InitContainers) else {
        return;
    };
    if init.iter().any(|c| name_of(c) == PROXY_CONTAINER) {
        for name in [
            ENABLE_CORE_DUMP_CONTAINER,
            PROXY_CONTAINER,
            VALIDATION_CONTAINER,
            INIT_CONTAINER,
        ] {
            move_container(init, name, Place::First);
        }
    } else {
        move_container(init, VALIDATION_CONTAINER, Place::First);
        move_container(init, INIT_CONTAINER, Place::Last);
        move_container(init, ENABLE_CORE_DUMP_CONTAINER, Place::Last);
    }
}

/// Istio's `modifyContainers`: removes every container called `name` and puts the last of them
/// at `place`. A list without such a container is left as it is.
fn move_container(list: &mut Vec<Value>, name: &str, place: Place) {
    let Some(last) = list.iter().rposition(|c| name_of(c) == name) else {
        return;
    };
    let moved = list.remove(last);
    list.retain(|c| name_of(c) != name);
    match place {
        Place::First => list.insert(0, moved),
        Place::Last => list.push(moved),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(containers: &[&str], init: &[&str]) -> Value {
        let list = |names: &[&str]| names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>();
        json!({"spec": {"containers": list(containers), "initContainers": list(init)}})
    }

    fn names(pod: &Value, field: &str) -> Vec<String> {
        pod["spec"][field]
            .as_array()
            .map_or(Vec::new(), |l| l.iter().map(|c| name_of(c).to_owned()).collect())
    }

    #[test]
    fn proxy_goes_last_or_first() {
        let mut p = pod(&["istio-proxy", "app", "other"], &[]);
        reorder_pod(&mut p, false);
        assert_eq!(names(&p, "containers"), ["app", "other", "istio-proxy"]);
        reorder_pod(&mut p, true);
        assert_eq!(names(&p, "containers"), ["istio-proxy", "app", "other"]);
    }

    #[test]
    fn classic_init_order() {
        let mut p = pod(
            &["app"],
            &[
                "istio-init",
                "enable-core-dump",
                "user-a",
                "istio-validation",
                "user-b",
            ],
        );
        reorder_pod(&mut p, false);
        assert_eq!(
            names(&p, "initContainers"),
            [
                "istio-validation",
                "user-a",
                "user-b",
                "istio-init",
                "enable-core-dump"
            ]
        );
    }

    #[test]
    fn native_sidecar_init_order() {
        let mut p = pod(
            &["app"],
            &[
                "user-a",
                "enable-core-dump",
                "istio-proxy",
                "istio-init",
                "user-b",
            ],
        );
        reorder_pod(&mut p, true);
        assert_eq!(
            names(&p, "initContainers"),
            [
                "istio-init",
                "istio-proxy",
                "enable-core-dump",
                "user-a",
                "user-b"
            ]
        );
        assert_eq!(
            names(&p, "containers"),
            ["app"],
            "hold has nothing to move without a proxy container"
        );
    }

    #[test]
    fn duplicates_collapse_keeping_the_last() {
        let mut p = json!({"spec": {"containers": [
            {"name": "istio-proxy", "image": "old"}, {"name": "app"}, {"name": "istio-proxy", "image": "new"}]}});
        reorder_pod(&mut p, false);
        assert_eq!(
            p["spec"]["containers"],
            json!([{"name": "app"}, {"name": "istio-proxy", "image": "new"}])
        );
    }

    #[test]
    fn absent_lists_stay_absent() {
        let mut p = json!({"spec": {"containers": [{"name": "app"}]}});
        reorder_pod(&mut p, false);
        assert_eq!(p, json!({"spec": {"containers": [{"name": "app"}]}}));
    }
}
