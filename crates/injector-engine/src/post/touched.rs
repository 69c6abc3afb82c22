//! Where post-processing writes: the guide of the pod's last round trip.
//!
//! Post-processing changes a merged, normalized pod in few places: the pod's annotations and
//! labels, the proxy container's `env` (cluster and network, Prometheus and probe variables; the
//! steps say from which item on they wrote it: they add or replace items, and only the first
//! takes some out), the other containers' probes and lifecycle handlers (probe
//! rewriting) and the order of the container lists. [`guide`] names exactly those places, so the
//! round trip after it walks them and leaves the rest of the pod (most of it) as it is. Debug
//! builds check the result against the full walk. A step that writes anywhere else must be named
//! here.

use serde_json::Value;

use crate::{
    normalize::Guide,
    pod::{ContainerList, PROXY_CONTAINER, containers, name_of},
};

/// The container fields probe rewriting replaces.
const REWRITTEN: [&str; 4] = ["readinessProbe", "livenessProbe", "startupProbe", "lifecycle"];

/// The guide of the round trip of `pod` after post-processing; `proxy_env_from` is the first item
/// of the proxy's `env` (a long list) that a step wrote, if any: only it and the items after it
/// are walked.
pub fn guide(pod: &Value, proxy_env_from: Option<usize>) -> Guide {
    let all = |names: &[&str]| {
        Guide::Fields(
            names
                .iter()
                .map(|name| ((*name).to_owned(), Guide::All))
                .collect(),
        )
    };
    let list = |which: ContainerList| {
        Guide::Items(
            containers(pod, which)
                .iter()
                .map(|container| {
                    if name_of(container) == PROXY_CONTAINER {
                        match proxy_env_from {
                            Some(from) => {
                                Guide::Fields(vec![("env".to_owned(), Guide::Items(vec![Guide::Skip; from]))])
                            }
                            None => Guide::Skip,
                        }
                    } else {
                        all(&REWRITTEN)
                    }
                })
                .collect(),
        )
    };
    Guide::Fields(vec![
        ("metadata".to_owned(), all(&["annotations", "labels"])),
        (
            "spec".to_owned(),
            Guide::Fields(vec![
                (
                    ContainerList::Containers.field().to_owned(),
                    list(ContainerList::Containers),
                ),
                (
                    ContainerList::InitContainers.field().to_owned(),
                    list(ContainerList::InitContainers),
                ),
            ]),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_proxys_env_is_walked_only_from_the_first_item_a_step_wrote() {
        let pod =
            json!({"spec": {"initContainers": [{"name": "istio-proxy"}], "containers": [{"name": "app"}]}});
        let proxy = |guide: &Guide| guide.field("spec").field("initContainers").item(0).clone();
        assert_eq!(proxy(&guide(&pod, None)), Guide::Skip);
        let env = proxy(&guide(&pod, Some(2))).field("env").clone();
        assert_eq!(
            env.item(1),
            &Guide::Skip,
            "an item before the first written is as it was"
        );
        assert_eq!(env.item(2), &Guide::All);
        assert_eq!(env.item(7), &Guide::All);
        assert_eq!(proxy(&guide(&pod, Some(0))).field("env").item(0), &Guide::All);
        assert_eq!(
            guide(&pod, None)
                .field("spec")
                .field("containers")
                .item(0)
                .field("readinessProbe"),
            &Guide::All,
            "the other containers' probes are walked either way"
        );
    }
}
