//! The whole injection (`Injector::inject`: decide, render, merge, post-process, patch) with
//! Istio's default chart configuration, for three pods: a typical one-container pod, a pod of about
//! 64 KB, and a pod with 2,000 env vars. Istio's own injector once needed 22 s for the second and
//! still about 0.9 s for the third.
//!
//! Needs Istio's derived settings from the shared corpus (`SIDECAR_INJECTOR_SHARED`, default
//! `../shared` beside the checkout); without them the benchmark says so and measures nothing.
//!
//! It runs on mimalloc, the allocator of the `sidecar-injector` binary, so it measures what
//! `serve` and `inject` run (delete the `#[global_allocator]` item to compare with glibc malloc).

use std::path::PathBuf;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use injector_engine::{
    pipeline::{Injector, Options, Outcome, Request},
    settings::{parse_mesh, parse_values},
};
use serde_json::{Value, json};

fn injector() -> Option<Injector> {
    let shared = std::env::var("SIDECAR_INJECTOR_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    let derived = shared.join("istio/derived");
    let read = |path: &str| std::fs::read_to_string(derived.join(path)).ok();
    let config = injector_core::config::parse_injector_config(&read("config/default.yaml")?)
        .ok()?
        .config;
    let values = parse_values(&read("values/default.json")?).ok()?;
    let mesh = parse_mesh(&read("mesh/default.yaml")?).ok()?;
    Injector::new(config, values, mesh, Options::default()).ok()
}

fn pod(containers: Vec<Value>) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "generateName": "web-5d8f9c-", "namespace": "shop",
            "labels": {"app": "web", "version": "v1", "pod-template-hash": "5d8f9c"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f9c", "controller": true, "uid": "0b1c"}]
        },
        "spec": {"serviceAccountName": "web", "containers": containers}
    })
}

fn container(name: &str, env: usize) -> Value {
    let env: Vec<Value> = (0..env)
        .map(|i| json!({"name": format!("VARIABLE_{i}"), "value": format!("value-{i}")}))
        .collect();
    json!({
        "name": name, "image": "registry.example.com/shop/web:1.4.2",
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": env,
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 5},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/web"}]
    })
}

fn bench(c: &mut Criterion) {
    let Some(injector) = injector() else {
        eprintln!("Istio's derived settings not found (set SIDECAR_INJECTOR_SHARED): nothing measured");
        return;
    };
    let typical = pod(vec![container("web", 8)]);
    // About 64 KB: 32 containers of 40 env vars each.
    let large = pod((0..32).map(|i| container(&format!("c{i}"), 40)).collect());
    let many_env = pod(vec![container("web", 2000)]);
    eprintln!(
        "pod sizes: typical {} B, large {} B, 2000 env vars {} B",
        typical.to_string().len(),
        large.to_string().len(),
        many_env.to_string().len()
    );
    for (name, pod) in [
        ("typical pod", &typical),
        ("64 KB pod", &large),
        ("2000 env vars", &many_env),
    ] {
        let request = Request {
            pod: Some(pod),
            namespace: Some("shop"),
            ..Request::default()
        };
        assert!(
            matches!(injector.inject(&request), Ok(Outcome::Injected { .. })),
            "{name} must be injected"
        );
        c.bench_function(&format!("inject {name}"), |b| {
            b.iter(|| black_box(injector.inject(black_box(&request))))
        });
    }
}

#[allow(missing_docs)]
mod group {
    use super::*;
    criterion_group!(benches, bench);
}
use group::benches;
criterion_main!(benches);
