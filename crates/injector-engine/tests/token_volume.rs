//! The pods of one Deployment differ in the name of their ServiceAccount token volume
//! (`kube-api-access-` and five random characters, given by ServiceAccount admission before any
//! webhook): the webhook's outcome cache shares one entry among them when the engine says the
//! injection was blind to that name (`Outcome::Injected::blind_to_token_volume`, which the render
//! cache tells from what the templates read). This checks the
//! claim on the real templates: the project's embedded default and, where Istio's chart
//! configuration is available (Istio's corpus, as the `istio-corpus` crate finds it: the shared
//! copy, else the pinned Go module's), Istio's own templates, each with and without native
//! sidecars: every injection is blind, and each name's patch is the first name's patch with the
//! name put in its place. The `custom-template` and `spire-template` configurations are in the
//! shared copy only; what is missing is reported, and fails under
//! `SIDECAR_INJECTOR_REQUIRE_CORPUS=1`.

// Tests report failures by panicking.
#![allow(clippy::panic)]

use injector_engine::{
    CompiledConfig, Options, Outcome, Request,
    cache::RenderCache,
    embedded_settings,
    settings::{parse_mesh, parse_values},
};
use serde_json::{Value, json};

const NAMES: [&str; 4] = [
    "kube-api-access-7xk2p",
    "kube-api-access-b4zqq",
    "kube-api-access-x9wlr",
    "kube-api-access-2c6gn",
];

fn options(native: bool) -> Options {
    Options {
        native_sidecars: native,
        ..Options::default()
    }
}

/// The configurations to check, by name.
fn injectors(native: bool) -> Vec<(String, CompiledConfig)> {
    let (config, values, mesh) = embedded_settings().expect("the embedded defaults load");
    let mut injectors = vec![(
        "embedded default".to_owned(),
        CompiledConfig::new(config, values, mesh, options(native)).expect("the embedded templates parse"),
    )];
    let Some(corpus) = istio_corpus::istio_or_skip("token_volume: Istio's templates") else {
        return injectors;
    };
    let read = |path: &str| corpus.read(&format!("derived/{path}"));
    let (Some(values), Some(mesh)) = (read("values/default.json"), read("mesh/default.yaml")) else {
        istio_corpus::skip_or_fail(&format!(
            "token_volume: Istio's chart configuration is not in {}: checking the embedded default only",
            corpus.describe()
        ));
        return injectors;
    };
    let values = parse_values(&values).expect("Istio's values parse");
    let mesh = parse_mesh(&mesh).expect("Istio's mesh config parses");
    let mut missing = Vec::new();
    for profile in ["default", "custom-template", "spire-template"] {
        let Some(text) = read(&format!("config/{profile}.yaml")) else {
            missing.push(profile);
            continue;
        };
        let config = injector_core::config::parse_injector_config(&text)
            .unwrap_or_else(|e| panic!("Istio's {profile} config: {e}"))
            .config;
        let injector = CompiledConfig::new(config, values.clone(), mesh.clone(), options(native))
            .unwrap_or_else(|e| panic!("Istio's {profile} templates: {e}"));
        injectors.push((format!("Istio's {profile}"), injector));
    }
    if !missing.is_empty() {
        istio_corpus::shared_missing(&format!(
            "token_volume: Istio's {} configurations are not in {}",
            missing.join(" and "),
            corpus.describe()
        ));
    }
    injectors
}

/// A ReplicaSet's pod as the API server sends it to the webhook, its token volume named `token`.
fn replica(token: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "generateName": "reviews-v1-7d4b9c8f6-", "namespace": "bookinfo",
            "labels": {"app": "reviews", "version": "v1", "pod-template-hash": "7d4b9c8f6"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "reviews-v1-7d4b9c8f6",
                                 "uid": "4f7a0c1e", "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {
            "serviceAccountName": "bookinfo-reviews",
            "containers": [{
                "name": "reviews", "image": "docker.io/istio/examples-bookinfo-reviews-v1:1.20.2",
                "ports": [{"containerPort": 9080, "protocol": "TCP"}],
                "readinessProbe": {"httpGet": {"path": "/ready", "port": 9080}},
                "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"},
                                 {"name": token, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}]
            }],
            "volumes": [{"name": "tmp", "emptyDir": {}},
                        {"name": token, "projected": {"defaultMode": 420, "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst"
        }
    })
}

fn patch_and_blindness(injector: &CompiledConfig, cache: &RenderCache, pod: &Value) -> (String, bool) {
    let request = Request {
        pod: Some(pod),
        namespace: Some("bookinfo"),
        ..Request::default()
    };
    match cache.inject(injector, &request) {
        Ok(Outcome::Injected {
            patch,
            blind_to_token_volume,
            ..
        }) => (
            String::from_utf8(patch).expect("the patch is UTF-8"),
            blind_to_token_volume,
        ),
        other => panic!("expected an injection, got {other:?}"),
    }
}

#[test]
fn the_real_templates_are_blind_to_the_token_volume_and_its_name_is_only_copied() {
    for native in [false, true] {
        for (name, injector) in injectors(native) {
            let what = format!("{name}, native sidecars {native}");
            let cache = RenderCache::default();
            let (first, blind) = patch_and_blindness(&injector, &cache, &replica(NAMES[0]));
            assert!(blind, "{what}: the first render");
            assert!(
                first.contains(NAMES[0]),
                "{what}: the patch moves the pod's volumes: {first}"
            );
            for token in NAMES {
                let (patch, blind) = patch_and_blindness(&injector, &cache, &replica(token));
                assert!(blind, "{what}: {token}");
                assert_eq!(patch, first.replace(NAMES[0], token), "{what}: {token}");
            }
        }
    }
}
