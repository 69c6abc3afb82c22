//! Cluster and network identity of the proxy (Istio's `extractClusterAndNetwork` and
//! `overwriteClusterInfo`).
//!
//! The cluster comes from `values.global.multiCluster.clusterName` and the network from
//! `values.global.network`; the webhook URL's path parameters (`/inject/cluster/C/net/N`) override
//! both, and the pod label `topology.istio.io/network` overrides the network. Non-empty results are
//! written back into the proxy env map, and after the merge those env vars are moved to the end of
//! the proxy's env, sorted by name.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::pod::{env_mut, find_sidecar_mut};

/// The cluster env var.
pub const CLUSTER_ENV: &str = "ISTIO_META_CLUSTER_ID";
/// The network env var.
pub const NETWORK_ENV: &str = "ISTIO_META_NETWORK";
/// The pod label that names the network.
pub const NETWORK_LABEL: &str = "topology.istio.io/network";

/// Resolves cluster and network into `proxy_envs` (the URL path parameters) and returns them.
pub fn resolve_cluster_and_network(
    values: &Value,
    pod_labels: &BTreeMap<String, String>,
    proxy_envs: &mut BTreeMap<String, String>,
) -> (String, String) {
    let global = values.get("global").unwrap_or(&Value::Null);
    let text = |value: Option<&Value>| value.and_then(Value::as_str).unwrap_or("").to_owned();
    let mut cluster = text(global.get("multiCluster").and_then(|m| m.get("clusterName")));
    let mut network = text(global.get("network"));
    if let Some(value) = proxy_envs.get(CLUSTER_ENV).filter(|v| !v.is_empty()) {
        cluster = value.clone();
    }
    if let Some(value) = proxy_envs.get(NETWORK_ENV).filter(|v| !v.is_empty()) {
        network = value.clone();
    }
    if let Some(value) = pod_labels.get(NETWORK_LABEL) {
        network = value.clone();
    }
    if !cluster.is_empty() {
        proxy_envs.insert(CLUSTER_ENV.to_owned(), cluster.clone());
    }
    if !network.is_empty() {
        proxy_envs.insert(NETWORK_ENV.to_owned(), network.clone());
    }
    (cluster, network)
}

/// Moves the proxy env vars named in `proxy_envs` to the end of the proxy container's env, with
/// the values of `proxy_envs`, sorted by name.
pub fn overwrite_cluster_info(pod: &mut Value, proxy_envs: &BTreeMap<String, String>) {
    if proxy_envs.is_empty() {
        return;
    }
    let Some(sidecar) = find_sidecar_mut(pod) else {
        return;
    };
    let env = env_mut(sidecar);
    env.retain(|e| {
        !e.get("name")
            .and_then(Value::as_str)
            .is_some_and(|name| proxy_envs.contains_key(name))
    });
    for (name, value) in proxy_envs {
        let mut entry = Map::new();
        entry.insert("name".into(), name.clone().into());
        entry.insert("value".into(), value.clone().into());
        env.push(Value::Object(entry));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn precedence_values_then_url_then_label() {
        let values = json!({"global": {"multiCluster": {"clusterName": "c1"}, "network": "n1"}});
        let mut envs = BTreeMap::new();
        assert_eq!(
            resolve_cluster_and_network(&values, &BTreeMap::new(), &mut envs),
            ("c1".into(), "n1".into())
        );
        assert_eq!(envs.len(), 2);

        let mut from_url = BTreeMap::from([
            (CLUSTER_ENV.to_owned(), "c2".to_owned()),
            (NETWORK_ENV.to_owned(), "n2".to_owned()),
        ]);
        let labels = BTreeMap::from([(NETWORK_LABEL.to_owned(), "n3".to_owned())]);
        assert_eq!(
            resolve_cluster_and_network(&values, &labels, &mut from_url),
            ("c2".into(), "n3".into())
        );
        assert_eq!(from_url[NETWORK_ENV], "n3");

        let mut none = BTreeMap::new();
        resolve_cluster_and_network(&json!({}), &BTreeMap::new(), &mut none);
        assert!(none.is_empty());
    }

    #[test]
    fn moves_env_to_the_end_sorted() {
        let mut pod = json!({"spec": {"containers": [{"name": "istio-proxy", "env": [
            {"name": "ISTIO_META_NETWORK", "value": "old"}, {"name": "A", "value": "1"},
            {"name": "ISTIO_META_CLUSTER_ID", "valueFrom": {}}, {"name": "B", "value": "2"}]}]}});
        let envs = BTreeMap::from([
            (NETWORK_ENV.to_owned(), "n".to_owned()),
            (CLUSTER_ENV.to_owned(), "c".to_owned()),
            ("CUSTOM".to_owned(), "x".to_owned()),
        ]);
        overwrite_cluster_info(&mut pod, &envs);
        let names: Vec<&str> = pod["spec"]["containers"][0]["env"]
            .as_array()
            .expect("env")
            .iter()
            .filter_map(|e| e["name"].as_str())
            .collect();
        assert_eq!(
            names,
            ["A", "B", "CUSTOM", "ISTIO_META_CLUSTER_ID", "ISTIO_META_NETWORK"]
        );
        assert_eq!(pod["spec"]["containers"][0]["env"][4]["value"], "n");
    }
}
