//! Writes a generated cluster snapshot, as `kubectl get -A -o yaml` prints one (a `List`), for
//! benchmarking `preview` and `outdated`:
//!
//! ```sh
//! cargo run --release -p injector-fleet --example fleet_snapshot -- 10000 > /tmp/fleet-10k.yaml
//! ```
//!
//! N workloads spread over N/100 namespaces (nine in ten labelled `istio-injection=enabled`):
//! 60% Deployments, 10% StatefulSets, 5% DaemonSets, 10% Jobs, 5% CronJobs, 10% bare Pods. One
//! in twenty pod templates is labelled `class: batch`; one in ten asks for its own proxy
//! resources (`sidecar.istio.io/proxyCPU`), one in fifteen opts out
//! (`sidecar.istio.io/inject: "false"`). Deterministic: the same N gives the same file.

use serde_json::{Value, json};

fn main() {
    let count: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let namespaces = count.div_ceil(100).max(1);
    let mut items = Vec::with_capacity(count + namespaces);
    for n in 0..namespaces {
        let labels = if n % 10 == 9 {
            json!({"team": format!("t{n}")})
        } else {
            json!({"istio-injection": "enabled", "team": format!("t{n}")})
        };
        items.push(json!({"apiVersion": "v1", "kind": "Namespace",
                          "metadata": {"name": format!("ns-{n}"), "labels": labels}}));
    }
    for i in 0..count {
        items.push(workload(i, &format!("ns-{}", i % namespaces)));
    }
    let list =
        json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items});
    print!("{}", goyaml::to_string(&list));
}

fn workload(i: usize, namespace: &str) -> Value {
    let name = format!("app-{i}");
    let mut labels = json!({"app": name, "version": "v1"});
    if i % 20 == 7 {
        labels["class"] = json!("batch");
    }
    let mut annotations = json!({"prometheus.io/scrape": "true", "prometheus.io/port": "8080"});
    if i % 10 == 3 {
        annotations["sidecar.istio.io/proxyCPU"] = json!("250m");
        annotations["sidecar.istio.io/proxyMemory"] = json!("256Mi");
    }
    if i % 15 == 11 {
        annotations["sidecar.istio.io/inject"] = json!("false");
    }
    let spec = json!({
        "serviceAccountName": name,
        "containers": [{
            "name": "app", "image": format!("registry.example.com/app-{}:1.{}", i % 50, i % 7),
            "ports": [{"containerPort": 8080, "name": "http"}],
            "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}},
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
            "env": [{"name": "MODE", "value": "production"}]
        }]
    });
    let template = json!({"metadata": {"labels": labels, "annotations": annotations}, "spec": spec});
    let metadata = json!({"name": name, "namespace": namespace, "labels": {"app": name}});
    let selector = json!({"matchLabels": {"app": name}});
    match i % 20 {
        0..=11 => json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata,
                          "spec": {"replicas": 2, "selector": selector, "template": template}}),
        12 | 13 => json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": metadata,
                           "spec": {"serviceName": name, "selector": selector, "template": template}}),
        14 => json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": metadata,
                      "spec": {"selector": selector, "template": template}}),
        15 | 16 => {
            let mut template = template;
            template["spec"]["restartPolicy"] = json!("Never");
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": {"template": template}})
        }
        17 => {
            let mut template = template;
            template["spec"]["restartPolicy"] = json!("OnFailure");
            json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": metadata,
                   "spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": template}}}})
        }
        _ => {
            let mut pod = template;
            pod["apiVersion"] = json!("v1");
            pod["kind"] = json!("Pod");
            pod["metadata"]["name"] = json!(name);
            pod["metadata"]["namespace"] = json!(namespace);
            pod
        }
    }
}
