//! User overrides of injected containers (Istio's `reapplyOverwrittenContainers` and
//! `adjustInitContainerUser`).
//!
//! A user who declares a container with the name of a template container (usually
//! `istio-proxy`, often with `image: auto`) customizes it: after the templates are merged, the
//! user's container is merged again *on top*, so its settings win. On the first injection the
//! overrides are saved in `proxy.istio.io/overrides`, so that a re-injection (which strips the
//! injected containers) can apply them again. On a re-injected pod, containers listed in the
//! previous status annotation are the old injection's, not overrides, and are skipped.

use serde_json::{Map, Value};

use super::merge_overlay;
use crate::{
    member::Members,
    normalize::{normalize, to_go_json},
    pod::{
        ContainerList, INIT_CONTAINER, PROXY_CONTAINER, VALIDATION_CONTAINER, annotation, annotations_mut,
        containers, containers_mut, name_of,
    },
    post::status::{PreviousInjection, STATUS_ANNOTATION, parse_status},
    prepare::strip::OVERRIDES_ANNOTATION,
};

/// The image value that means "keep the injected image".
const AUTO_IMAGE: &str = "auto";

/// Re-applies the user's versions of template containers on top of `merged`.
pub(crate) fn reapply(
    mut merged: Value,
    original: &Value,
    template_pod: &Value,
    proxy_config: &Value,
) -> Result<Value, String> {
    let saved = saved_overrides(original)?;
    let previous = previous_injection(original);
    let already_injected = previous.is_some();
    let previous = previous.unwrap_or_default();
    let mut applied: [Vec<Value>; 2] = [Vec::new(), Vec::new()];

    for (slot, list) in [ContainerList::Containers, ContainerList::InitContainers]
        .into_iter()
        .enumerate()
    {
        let skipped = if list == ContainerList::Containers {
            &previous.containers
        } else {
            &previous.init_containers
        };
        for template_container in containers(template_pod, list) {
            let name = name_of(template_container);
            if skipped.iter().any(|n| n == name) {
                continue;
            }
            let found = saved[slot]
                .iter()
                .find(|c| name_of(c) == name)
                .or_else(|| match list {
                    ContainerList::Containers => {
                        containers(original, list).iter().find(|c| name_of(c) == name)
                    }
                    ContainerList::InitContainers => containers(original, ContainerList::Containers)
                        .iter()
                        .chain(containers(original, ContainerList::InitContainers))
                        .find(|c| name_of(c) == name),
                })
                .cloned();
            let Some(found) = found else {
                continue;
            };
            let mut overlay = normalize("#Container", &found).map_err(|e| e.to_string())?;
            if overlay.member("image").and_then(Value::as_str) == Some(AUTO_IMAGE)
                && let Some(map) = overlay.as_object_mut()
            {
                map.shift_remove("image");
            }
            let mut spec = Map::new();
            if list == ContainerList::InitContainers {
                spec.insert("containers".to_owned(), Value::Array(Vec::new()));
            }
            spec.insert(list.field().to_owned(), Value::Array(vec![overlay.clone()]));
            let patch = serde_json::json!({"metadata": {}, "spec": spec, "status": {}});
            merged = merge_overlay(std::mem::take(&mut merged), patch)
                .map_err(|e| format!("failed to apply sidecar container: {}", e.0))?;
            applied[slot].push(overlay);
        }
    }
    if !already_injected && (!applied[0].is_empty() || !applied[1].is_empty()) {
        annotations_mut(&mut merged).insert(
            OVERRIDES_ANNOTATION.to_owned(),
            overrides_json(&applied[0], &applied[1]).into(),
        );
    }
    adjust_init_container_user(&mut merged, original, proxy_config);
    Ok(merged)
}

/// The containers saved in the overrides annotation, `[containers, initContainers]`.
fn saved_overrides(pod: &Value) -> Result<[Vec<Value>; 2], String> {
    let text = annotation(pod, OVERRIDES_ANNOTATION);
    let Some(text) = text else {
        return Ok([Vec::new(), Vec::new()]);
    };
    let parsed: Value =
        serde_json::from_str(text).map_err(|e| format!("failed to parse {OVERRIDES_ANNOTATION}: {e}"))?;
    let list = |field: &str| {
        parsed
            .member(field)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    Ok([list("containers"), list("initContainers")])
}

/// Makes the init/validation container's user match a user-supplied `istio-proxy`'s
/// `runAsUser`/`runAsGroup` (Istio's `adjustInitContainerUser`).
fn adjust_init_container_user(pod: &mut Value, original: &Value, proxy_config: &Value) {
    let user_proxy = containers(original, ContainerList::Containers)
        .iter()
        .chain(containers(original, ContainerList::InitContainers))
        .find(|c| name_of(c) == PROXY_CONTAINER);
    let Some(security) = user_proxy
        .and_then(|c| c.member("securityContext"))
        .filter(|s| s.is_object())
    else {
        return;
    };
    let run_as_user = security.member("runAsUser").and_then(Value::as_i64);
    let run_as_group = security.member("runAsGroup").and_then(Value::as_i64);
    if run_as_user.is_none() && run_as_group.is_none() {
        return;
    }
    let tproxy = proxy_config.member("interceptionMode").and_then(Value::as_str) == Some("TPROXY")
        || annotation(pod, "sidecar.istio.io/interceptionMode") == Some("TPROXY");
    if tproxy && run_as_user.is_some() {
        for list in [ContainerList::Containers, ContainerList::InitContainers] {
            if let Some(proxy) =
                containers_mut(pod, list).and_then(|l| l.iter_mut().find(|c| name_of(c) == PROXY_CONTAINER))
            {
                if let Some(context) = proxy.member_mut("securityContext").and_then(Value::as_object_mut) {
                    context.insert("runAsUser".to_owned(), Value::from(0));
                }
                break;
            }
        }
    }
    let Some(init) = containers_mut(pod, ContainerList::InitContainers).and_then(|list| {
        let index = list
            .iter()
            .position(|c| name_of(c) == INIT_CONTAINER)
            .or_else(|| list.iter().position(|c| name_of(c) == VALIDATION_CONTAINER))?;
        list.get_mut(index)
    }) else {
        return;
    };
    if !tproxy
        && name_of(init) == VALIDATION_CONTAINER
        && let Some(map) = init.as_object_mut()
    {
        let context = map
            .entry("securityContext")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(context) = context.as_object_mut() {
            if let Some(user) = run_as_user {
                context.insert("runAsUser".to_owned(), user.into());
            }
            if let Some(group) = run_as_group {
                context.insert("runAsGroup".to_owned(), group.into());
            }
        }
    }
    let Some(user) = run_as_user.filter(|u| *u != 0) else {
        return;
    };
    if let Some(args) = init.member_mut("args").and_then(Value::as_array_mut)
        && let Some(index) = args.iter().position(|a| a.as_str() == Some("-u"))
        && let Some(slot) = args.get_mut(index + 1)
    {
        *slot = Value::from(user.to_string());
    }
}

/// What a previous injection recorded in the pod's status annotation, if it was injected before.
fn previous_injection(pod: &Value) -> Option<PreviousInjection> {
    annotation(pod, STATUS_ANNOTATION).map(parse_status)
}

/// The Go JSON of the overrides annotation value.
fn overrides_json(containers: &[Value], init_containers: &[Value]) -> String {
    let mut object = Map::new();
    if !containers.is_empty() {
        object.insert("containers".to_owned(), Value::Array(containers.to_vec()));
    }
    if !init_containers.is_empty() {
        object.insert(
            "initContainers".to_owned(),
            Value::Array(init_containers.to_vec()),
        );
    }
    to_go_json(&Value::Object(object))
}
