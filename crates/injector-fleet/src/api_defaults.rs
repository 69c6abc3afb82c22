//! The fields the API server fills in when it stores a pod, applied to a freshly rendered one,
//! so that a running pod and what the configuration would inject today compare equal when
//! nothing changed. Only defaults that land on what the injector adds (its containers and
//! volumes) are applied, and the token mount the ServiceAccount admission plugin adds is
//! removed; anything empty (`{}`, `[]`, `""`, `null`) is pruned from both sides.

use serde_json::{Map, Value, json};

use crate::pod_diff::is_empty_value;

/// Applies the API server's container defaults (`SetDefaults_Container`, `_Probe`,
/// `_ContainerPort`, `_ObjectFieldSelector`, limits as requests).
pub fn default_container(container: &mut Value) {
    let Some(map) = container.as_object_mut() else {
        return;
    };
    // The ServiceAccount admission plugin mounts the pod's API token into every container.
    if let Some(Value::Array(mounts)) = map.get_mut("volumeMounts") {
        mounts.retain(|mount| !is_service_account_token_mount(mount));
    }
    set_default(map, "terminationMessagePath", json!("/dev/termination-log"));
    set_default(map, "terminationMessagePolicy", json!("File"));
    let image = map.get("image").and_then(Value::as_str).unwrap_or("");
    set_default(map, "imagePullPolicy", json!(default_pull_policy(image)));
    if let Some(Value::Array(ports)) = map.get_mut("ports") {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_default(port, "protocol", json!("TCP"));
        }
    }
    for probe in ["readinessProbe", "livenessProbe", "startupProbe"] {
        if let Some(Value::Object(probe)) = map.get_mut(probe) {
            set_default(probe, "timeoutSeconds", json!(1));
            set_default(probe, "periodSeconds", json!(10));
            set_default(probe, "successThreshold", json!(1));
            set_default(probe, "failureThreshold", json!(3));
            if let Some(Value::Object(get)) = probe.get_mut("httpGet") {
                set_default(get, "scheme", json!("HTTP"));
            }
        }
    }
    if let Some(Value::Array(env)) = map.get_mut("env") {
        for entry in env.iter_mut() {
            if let Some(Value::Object(field_ref)) = entry.pointer_mut("/valueFrom/fieldRef") {
                set_default(field_ref, "apiVersion", json!("v1"));
            }
        }
    }
    if let Some(Value::Object(resources)) = map.get_mut("resources") {
        let limits = resources.get("limits").and_then(Value::as_object).cloned();
        if let Some(limits) = limits.filter(|l| !l.is_empty()) {
            let requests = resources
                .entry("requests")
                .or_insert_with(|| Value::Object(Map::new()));
            if !requests.is_object() {
                *requests = Value::Object(Map::new());
            }
            if let Some(requests) = requests.as_object_mut() {
                for (name, quantity) in limits {
                    requests.entry(name).or_insert(quantity);
                }
            }
        }
    }
}

/// The mount the ServiceAccount admission plugin adds (`kube-api-access-*` at
/// `/var/run/secrets/kubernetes.io/serviceaccount`).
fn is_service_account_token_mount(mount: &Value) -> bool {
    let text = |key: &str| mount.get(key).and_then(Value::as_str).unwrap_or("");
    text("name").starts_with(injector_core::kube_names::TOKEN_VOLUME_PREFIX)
        && text("mountPath") == "/var/run/secrets/kubernetes.io/serviceaccount"
}

/// Applies the API server's volume defaults (`defaultMode: 420`, downward API field
/// references, projected token expiry).
pub fn default_volume(volume: &mut Value) {
    let Some(map) = volume.as_object_mut() else {
        return;
    };
    for source in ["configMap", "secret", "downwardAPI", "projected"] {
        if let Some(Value::Object(source)) = map.get_mut(source) {
            set_default(source, "defaultMode", json!(420));
        }
    }
    let default_items = |items: Option<&mut Value>| {
        if let Some(Value::Array(items)) = items {
            for item in items.iter_mut() {
                if let Some(Value::Object(field_ref)) = item.get_mut("fieldRef") {
                    set_default(field_ref, "apiVersion", json!("v1"));
                }
            }
        }
    };
    if let Some(Value::Object(downward)) = map.get_mut("downwardAPI") {
        default_items(downward.get_mut("items"));
    }
    if let Some(Value::Array(sources)) = map.get_mut("projected").and_then(|p| p.get_mut("sources")) {
        for source in sources.iter_mut() {
            if let Some(Value::Object(token)) = source.get_mut("serviceAccountToken") {
                set_default(token, "expirationSeconds", json!(3600));
            }
            if let Some(Value::Object(downward)) = source.get_mut("downwardAPI") {
                default_items(downward.get_mut("items"));
            }
        }
    }
}

/// Removes `null`, `""`, `{}` and `[]` everywhere (Go's `omitempty` and the engine's zero
/// values make both forms appear).
pub fn prune(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for item in map.values_mut() {
                prune(item);
            }
            map.retain(|_, item| !is_empty_value(item));
        }
        Value::Array(items) => items.iter_mut().for_each(prune),
        _ => {}
    }
}

/// `Always` for an image without a tag or with `:latest` (and no digest), else `IfNotPresent`.
pub fn default_pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.split_once(':') {
        Some((_, tag)) if tag != "latest" => "IfNotPresent",
        _ => "Always",
    }
}

fn set_default(map: &mut Map<String, Value>, key: &str, value: Value) {
    let entry = map.entry(key.to_owned()).or_insert(Value::Null);
    if is_empty_value(entry) || (entry.as_i64() == Some(0) && value.is_number()) {
        *entry = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rendered_proxy_gets_what_the_api_server_adds() {
        let mut proxy = json!({"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.28.0",
            "ports": [{"containerPort": 15090, "name": "http-envoy-prom"}],
            "readinessProbe": {"httpGet": {"path": "/healthz/ready", "port": 15021}, "periodSeconds": 15, "timeoutSeconds": 0},
            "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "resources": {"limits": {"cpu": "2"}, "requests": {"memory": "128Mi"}}, "terminationMessagePath": "",
            "volumeMounts": [{"name": "istio-envoy", "mountPath": "/etc/istio/proxy"},
                             {"name": "kube-api-access-x5dn4", "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]});
        default_container(&mut proxy);
        assert_eq!(proxy["imagePullPolicy"], "IfNotPresent");
        assert_eq!(proxy["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(proxy["ports"][0]["protocol"], "TCP");
        assert_eq!(proxy["readinessProbe"]["periodSeconds"], 15);
        assert_eq!(proxy["readinessProbe"]["timeoutSeconds"], 1);
        assert_eq!(proxy["readinessProbe"]["httpGet"]["scheme"], "HTTP");
        assert_eq!(proxy["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
        assert_eq!(
            proxy["resources"]["requests"],
            json!({"memory": "128Mi", "cpu": "2"})
        );
    }

    #[test]
    fn pull_policy_follows_the_tag() {
        assert_eq!(default_pull_policy("nginx"), "Always");
        assert_eq!(default_pull_policy("nginx:latest"), "Always");
        assert_eq!(default_pull_policy("localhost:5000/nginx"), "Always");
        assert_eq!(default_pull_policy("localhost:5000/nginx:1.2"), "IfNotPresent");
        assert_eq!(default_pull_policy("nginx@sha256:abc"), "IfNotPresent");
    }

    #[test]
    fn volumes_get_default_modes_and_token_expiry() {
        let mut volume = json!({"name": "istio-token", "projected": {"sources": [{"serviceAccountToken": {"audience": "istio-ca", "path": "istio-token"}}]}});
        default_volume(&mut volume);
        assert_eq!(volume["projected"]["defaultMode"], 420);
        assert_eq!(
            volume["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
            3600
        );
        let mut pruned = json!({"a": {}, "b": [], "c": "", "d": null, "e": {"f": {}}, "g": 0});
        prune(&mut pruned);
        assert_eq!(pruned, json!({"g": 0}));
    }
}
