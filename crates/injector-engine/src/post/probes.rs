//! Application probe rewriting (Istio's `applyRewrite`, `DumpAppProbers`, `patchRewriteProbe`).
//!
//! With mutual TLS the kubelet can no longer reach the app's HTTP, TCP and gRPC probes directly,
//! so the injector hands them to the agent: every probe and `httpGet`/`tcpSocket` lifecycle handler
//! of every non-proxy container is recorded in the proxy's `ISTIO_KUBE_APP_PROBERS` env var (JSON,
//! keyed `/app-health/<container>/{readyz,livez,startupz}` and
//! `/app-lifecycle/<container>/{prestopz,poststartz}`), and replaced by an `httpGet` on the agent's
//! status port at that key.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::{
    gojson,
    member::Members,
    pod::{
        ContainerList, PROXY_CONTAINER, containers, containers_mut, env_mut, find_sidecar_mut, has_sidecar,
        name_of,
    },
    post::prometheus::parse_go_bool,
};

/// The env var carrying the app's probes to the agent.
pub const APP_PROBERS_ENV: &str = "ISTIO_KUBE_APP_PROBERS";
/// The annotation that turns rewriting on or off for one pod.
pub const REWRITE_ANNOTATION: &str = "sidecar.istio.io/rewriteAppHTTPProbers";
/// The annotation overriding the agent's status port.
pub const STATUS_PORT_ANNOTATION: &str = "status.sidecar.istio.io/port";

/// Probe fields and their URL suffixes.
const PROBES: [(&str, &str, &str); 3] = [
    ("readinessProbe", "app-health", "readyz"),
    ("livenessProbe", "app-health", "livez"),
    ("startupProbe", "app-health", "startupz"),
];
/// Lifecycle handler fields and their URL suffixes.
const HANDLERS: [(&str, &str, &str); 2] = [
    ("preStop", "app-lifecycle", "prestopz"),
    ("postStart", "app-lifecycle", "poststartz"),
];

/// Rewrites the pod's probes when the pod has a proxy and rewriting is on (the annotation when it
/// parses as a bool, else `values_setting`, the values' `sidecarInjectorWebhook.rewriteAppHTTPProbe`).
/// `mesh_status_port` is the mesh `defaultConfig.statusPort`.
pub fn apply_rewrite(pod: &mut Value, values_setting: bool, mesh_status_port: i64) {
    if !has_sidecar(pod) {
        return;
    }
    let annotations = pod.member("metadata").and_then(|m| m.member("annotations"));
    let annotation = |key: &str| annotations.and_then(|a| a.member(key)).and_then(Value::as_str);
    let rewrite = annotation(REWRITE_ANNOTATION)
        .and_then(parse_go_bool)
        .unwrap_or(values_setting);
    if !rewrite {
        return;
    }
    let previously_injected = annotation(crate::post::status::STATUS_ANNOTATION).is_some();
    // An unparseable annotation gives port 0, as Go's `strconv.Atoi` error path does.
    let rewrite_port =
        annotation(STATUS_PORT_ANNOTATION).map_or(mesh_status_port, |v| v.parse().unwrap_or(0));
    if let Some(probers) = dump_app_probers(pod, mesh_status_port)
        && let Some(sidecar) = find_sidecar_mut(pod)
    {
        merge_or_append_probers(previously_injected, env_mut(sidecar), &probers);
    }
    for list in [ContainerList::Containers, ContainerList::InitContainers] {
        if let Some(items) = containers_mut(pod, list) {
            for container in items.iter_mut().filter(|c| name_of(c) != PROXY_CONTAINER) {
                rewrite_container(container, rewrite_port);
            }
        }
    }
}

/// The JSON of every app probe (keys sorted), or `None` when there is none.
pub fn dump_app_probers(pod: &Value, mesh_status_port: i64) -> Option<String> {
    let mut probers: BTreeMap<String, Value> = BTreeMap::new();
    let all = containers(pod, ContainerList::InitContainers)
        .iter()
        .chain(containers(pod, ContainerList::Containers));
    for container in all.filter(|c| name_of(c) != PROXY_CONTAINER) {
        let name = name_of(container);
        for (field, prefix, suffix) in PROBES {
            if let Some(prober) = container
                .member(field)
                .and_then(|probe| prober(probe, container, mesh_status_port, true))
            {
                probers.insert(format!("/{prefix}/{name}/{suffix}"), prober);
            }
        }
        let lifecycle = container.member("lifecycle");
        for (field, prefix, suffix) in HANDLERS {
            if let Some(prober) = lifecycle
                .and_then(|l| l.member(field))
                .and_then(|handler| prober(handler, container, mesh_status_port, false))
            {
                probers.insert(format!("/{prefix}/{name}/{suffix}"), prober);
            }
        }
    }
    if probers.is_empty() {
        return None;
    }
    Some(gojson::to_string(&Value::Object(probers.into_iter().collect())))
}

/// Istio's `Prober` for one probe or handler: `{httpGet|tcpSocket|grpc, timeoutSeconds}` in Go's
/// field order, with named ports resolved. `None` for exec/sleep, unknown port names, and ports
/// already pointing at the status port.
fn prober(probe: &Value, container: &Value, status_port: i64, with_timeout: bool) -> Option<Value> {
    let mut out = Map::new();
    if let Some(action) = probe.member("httpGet").filter(|v| v.is_object()) {
        let port = resolve_port(action.member("port"), container, status_port)?;
        out.insert("httpGet".into(), http_get_action(action, port));
    } else if let Some(action) = probe.member("tcpSocket").filter(|v| v.is_object()) {
        let port = resolve_port(action.member("port"), container, status_port)?;
        let mut tcp = Map::new();
        tcp.insert("port".into(), port.into());
        copy_string(action, &mut tcp, "host");
        out.insert("tcpSocket".into(), Value::Object(tcp));
    } else if let Some(action) = probe.member("grpc").filter(|v| v.is_object() && with_timeout) {
        let mut grpc = Map::new();
        grpc.insert(
            "port".into(),
            action.member("port").cloned().unwrap_or(Value::from(0)),
        );
        // `GRPCAction.Service` is a `*string` without `omitempty`: Go writes `null` when unset.
        let service = action.member("service").filter(|v| v.is_string());
        grpc.insert("service".into(), service.cloned().unwrap_or(Value::Null));
        out.insert("grpc".into(), Value::Object(grpc));
    } else {
        return None;
    }
    if with_timeout
        && let Some(timeout) = probe
            .member("timeoutSeconds")
            .and_then(Value::as_i64)
            .filter(|t| *t != 0)
    {
        out.insert("timeoutSeconds".into(), timeout.into());
    }
    Some(Value::Object(out))
}

/// A probe port as a number: numbers as they are, names through the container's ports.
fn resolve_port(port: Option<&Value>, container: &Value, status_port: i64) -> Option<i64> {
    let number = match port? {
        Value::Number(number) => number.as_i64()?,
        Value::String(name) => containers_port_named(container, name)?,
        _ => return None,
    };
    (number != status_port).then_some(number)
}

fn containers_port_named(container: &Value, name: &str) -> Option<i64> {
    container
        .member("ports")
        .and_then(Value::as_array)?
        .iter()
        .find(|port| !name.is_empty() && port.member("name").and_then(Value::as_str) == Some(name))
        .and_then(|port| port.member("containerPort").and_then(Value::as_i64))
}

/// `HTTPGetAction` in Go's field order: path, port, host, scheme, httpHeaders.
fn http_get_action(action: &Value, port: i64) -> Value {
    let mut out = Map::new();
    copy_string(action, &mut out, "path");
    out.insert("port".into(), port.into());
    copy_string(action, &mut out, "host");
    copy_string(action, &mut out, "scheme");
    if let Some(headers) = action
        .member("httpHeaders")
        .and_then(Value::as_array)
        .filter(|h| !h.is_empty())
    {
        let headers = headers
            .iter()
            .map(|header| {
                let mut pair = Map::new();
                pair.insert(
                    "name".into(),
                    header.member("name").cloned().unwrap_or(Value::from("")),
                );
                pair.insert(
                    "value".into(),
                    header.member("value").cloned().unwrap_or(Value::from("")),
                );
                Value::Object(pair)
            })
            .collect();
        out.insert("httpHeaders".into(), Value::Array(headers));
    }
    Value::Object(out)
}

fn copy_string(from: &Value, to: &mut Map<String, Value>, field: &str) {
    if let Some(text) = from
        .member(field)
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    {
        to.insert(field.into(), text.into());
    }
}

/// Replaces the container's probes and handlers by `httpGet`s on the status port.
fn rewrite_container(container: &mut Value, status_port: i64) {
    let name = name_of(container).to_owned();
    for (field, prefix, suffix) in PROBES {
        if let Some(probe) = container.member_mut(field).filter(|p| p.is_object()) {
            rewrite_handler(probe, &format!("/{prefix}/{name}/{suffix}"), status_port, true);
        }
    }
    if let Some(lifecycle) = container.member_mut("lifecycle").filter(|l| l.is_object()) {
        for (field, prefix, suffix) in HANDLERS {
            if let Some(handler) = lifecycle.member_mut(field).filter(|h| h.is_object()) {
                rewrite_handler(handler, &format!("/{prefix}/{name}/{suffix}"), status_port, false);
            }
        }
    }
}

fn rewrite_handler(handler: &mut Value, path: &str, status_port: i64, is_probe: bool) {
    let Some(map) = handler.as_object_mut() else {
        return;
    };
    let has = |map: &Map<String, Value>, key: &str| map.member(key).is_some_and(Value::is_object);
    let mut action = if has(map, "httpGet") {
        map.member("httpGet").cloned().unwrap_or_default()
    } else if has(map, "tcpSocket") || (is_probe && has(map, "grpc")) {
        map.shift_remove("tcpSocket");
        map.shift_remove("grpc");
        Value::Object(Map::new())
    } else {
        return;
    };
    if let Some(action_map) = action.as_object_mut() {
        action_map.insert("path".into(), path.into());
        action_map.insert("port".into(), status_port.into());
        if action_map.member("scheme").and_then(Value::as_str) == Some("HTTPS") {
            action_map.insert("scheme".into(), "HTTP".into());
        }
    }
    map.insert("httpGet".into(), action);
}

/// Adds the probers env var; on a re-injected pod, merges into the existing one, old keys winning.
pub fn merge_or_append_probers(previously_injected: bool, env: &mut Vec<Value>, probers: &str) {
    let entry = |value: String| {
        let mut map = Map::new();
        map.insert("name".into(), APP_PROBERS_ENV.into());
        map.insert("value".into(), value.into());
        Value::Object(map)
    };
    let existing = env
        .iter()
        .position(|e| e.member("name").and_then(Value::as_str) == Some(APP_PROBERS_ENV));
    match (previously_injected, existing) {
        (true, Some(index)) => {
            let old = env[index].member("value").and_then(Value::as_str).unwrap_or("");
            let (Ok(Value::Object(old)), Ok(Value::Object(new))) = (
                serde_json::from_str::<Value>(old),
                serde_json::from_str::<Value>(probers),
            ) else {
                return; // Istio logs and keeps the env as it is.
            };
            let mut merged: BTreeMap<String, Value> = new.into_iter().collect();
            merged.extend(old);
            env[index] = entry(gojson::to_string(&Value::Object(merged.into_iter().collect())));
        }
        _ => env.push(entry(probers.to_owned())),
    }
}

#[cfg(test)]
mod tests;
