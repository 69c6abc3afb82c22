//! The injector and the three pods the engine is measured with, shared by the criterion bench
//! (`benches/inject.rs`) and the CPU-time probe (`examples/inject_cpu.rs`).

use std::path::PathBuf;

use injector_engine::{
    CompiledConfig, InjectError, Options, Outcome, Request,
    cache::RenderCache,
    embedded_settings,
    settings::{parse_mesh, parse_values},
};
use serde_json::{Value, json};

/// A configuration and the render cache in front of it, as `serve` runs them.
pub struct Engine {
    /// The compiled configuration.
    pub config: CompiledConfig,
    /// The render cache (`RENDER_CACHE=0` in the environment: none; `RENDER_CACHE=N`: N MiB).
    pub cache: RenderCache,
}

impl Engine {
    fn new(config: CompiledConfig) -> Engine {
        let budget = std::env::var("RENDER_CACHE")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .map_or(injector_engine::cache::DEFAULT_BUDGET, |mib| mib << 20);
        Engine {
            config,
            cache: RenderCache::new(budget),
        }
    }

    /// One injection through the render cache.
    pub fn inject(&self, request: &Request<'_>) -> Result<Outcome, InjectError> {
        self.cache.inject(&self.config, request)
    }
}

/// Istio's default chart configuration from the shared corpus (`SIDECAR_INJECTOR_SHARED`,
/// default `../shared` beside the checkout), or `None` when it is not there.
pub fn injector() -> Option<Engine> {
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
    CompiledConfig::new(config, values, mesh, Options::default())
        .ok()
        .map(Engine::new)
}

/// The project's embedded default configuration with native sidecars on, as `serve` and `inject`
/// run without flags.
pub fn embedded_injector() -> Result<Engine, String> {
    let (config, values, mesh) = embedded_settings()?;
    let options = Options {
        native_sidecars: true,
        ..Options::default()
    };
    CompiledConfig::new(config, values, mesh, options)
        .map(Engine::new)
        .map_err(|e| e.to_string())
}

/// The admission of `pod` in namespace `shop`, or `None` when `injector` does not inject it (a
/// measurement of anything else would mislead).
pub fn injected_request<'a>(injector: &Engine, pod: &'a Value) -> Option<Request<'a>> {
    let request = Request {
        pod: Some(pod),
        namespace: Some("shop"),
        ..Request::default()
    };
    matches!(injector.inject(&request), Ok(Outcome::Injected { .. })).then_some(request)
}

/// A ReplicaSet-created pod with these containers, its keys in the order the API server writes
/// them (Go struct fields in declaration order, map keys sorted), as `bench/reviews.py` writes the
/// same pod for Istio's injector.
pub fn pod(containers: Vec<Value>) -> Value {
    json!({
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {
            "generateName": "web-5d8f9c-", "namespace": "shop",
            "labels": {"app": "web", "pod-template-hash": "5d8f9c", "version": "v1"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f9c", "uid": "0b1c", "controller": true}]
        },
        "spec": {"containers": containers, "serviceAccountName": "web"}
    })
}

/// A container with `env` variables, a port, resources, a probe and a mount.
pub fn container(name: &str, env: usize) -> Value {
    let env: Vec<Value> = (0..env)
        .map(|i| json!({"name": format!("VARIABLE_{i}"), "value": format!("value-{i}")}))
        .collect();
    json!({
        "name": name, "image": "registry.example.com/shop/web:1.4.2",
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": env,
        "resources": {"limits": {"cpu": "1", "memory": "512Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/web"}],
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 5}
    })
}

/// The measured pods by name: a typical one-container pod, about 64 KB (32 containers of 40 env
/// vars each), and one container with 2,000 env vars.
pub fn measured_pods() -> [(&'static str, Value); 3] {
    [
        ("typical pod", pod(vec![container("web", 8)])),
        (
            "64 KB pod",
            pod((0..32).map(|i| container(&format!("c{i}"), 40)).collect()),
        ),
        ("2000 env vars", pod(vec![container("web", 2000)])),
    ]
}
