//! Generated sequences of sibling pods (a Deployment's replicas, a Job's indexed pods, a
//! StatefulSet's ordinals, with and without annotations of their own) through every cache an
//! admission meets in `serve` (the outcome cache, then the engine's render cache), each answer
//! compared with a plain injection of the same pod.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};
use std::time::Instant;

use injector_core::creator_warnings;
use injector_engine::cache::RenderCache;
use injector_engine::settings::{parse_mesh, parse_values};
use injector_engine::{CompiledConfig, InjectError, Options, Outcome, Request};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::OutcomeCache;
use crate::injector::{AdmissionInput, AdmissionOutcome};

/// The configurations: the project's embedded one, and Istio's default chart when Istio's corpus
/// is at hand (as the `istio-corpus` crate finds it: the shared copy, else the pinned Go
/// module's; missing, it is reported, and fails under `SIDECAR_INJECTOR_REQUIRE_CORPUS=1`).
static CONFIGS: LazyLock<Vec<Arc<CompiledConfig>>> = LazyLock::new(|| {
    let (config, values, mesh) = injector_engine::embedded_settings().expect("the embedded settings load");
    let mut configs = vec![Arc::new(
        CompiledConfig::new(config, values, mesh, Options::default()).expect("the embedded templates parse"),
    )];
    let Some(corpus) = istio_corpus::istio_or_skip("outcome cache sibling tests: Istio's default chart")
    else {
        return configs;
    };
    let read = |path: &str| corpus.read(&format!("derived/{path}"));
    if let (Some(config), Some(values), Some(mesh)) = (
        read("config/default.yaml"),
        read("values/default.json"),
        read("mesh/default.yaml"),
    ) {
        let config = injector_core::config::parse_injector_config(&config)
            .expect("Istio's config parses")
            .config;
        let values = parse_values(&values).expect("Istio's values parse");
        let mesh = parse_mesh(&mesh).expect("Istio's mesh config parses");
        configs.push(Arc::new(
            CompiledConfig::new(config, values, mesh, Options::default()).expect("Istio's templates parse"),
        ));
    } else {
        istio_corpus::skip_or_fail(&format!(
            "outcome cache sibling tests: Istio's default chart settings are not in {}",
            corpus.describe()
        ));
    }
    configs
});

/// Which controller made a pod.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Deployment,
    Job,
    StatefulSet,
}

/// One pod of a sequence: its controller, its index among its siblings, the random part of its
/// token volume's name, and the annotations of its own.
#[derive(Debug, Clone)]
struct Sibling {
    kind: Kind,
    index: u8,
    token: String,
    annotations: Vec<(&'static str, String)>,
}

fn sibling() -> impl Strategy<Value = Sibling> {
    let kind = prop_oneof![Just(Kind::Deployment), Just(Kind::Job), Just(Kind::StatefulSet)];
    let annotation = prop_oneof![
        // Read by no template: only its presence differs.
        "[a-z0-9]{1,8}".prop_map(|v| ("example.com/trace", v)),
        // Read by the templates, a few values: a family with several renders.
        prop_oneof![Just("100m"), Just("200m"), Just("1")]
            .prop_map(|v| ("sidecar.istio.io/proxyCPU", v.to_owned())),
        prop_oneof![Just("debug"), Just("info")].prop_map(|v| ("sidecar.istio.io/logLevel", v.to_owned())),
        // Istio's own, not read by the sidecar template.
        prop_oneof![Just("true"), Just("false")].prop_map(|v| ("prometheus.io/scrape", v.to_owned())),
    ];
    (
        kind,
        0u8..6,
        "[a-z0-9]{5}",
        proptest::collection::vec(annotation, 0..3),
    )
        .prop_map(|(kind, index, token, annotations)| Sibling {
            kind,
            index,
            token,
            annotations,
        })
}

/// The pod as the webhook sees it (no `managedFields`).
fn pod_of(sibling: &Sibling) -> Value {
    let index = sibling.index.to_string();
    let token = format!("kube-api-access-{}", sibling.token);
    let (metadata, hostname, env) = match sibling.kind {
        Kind::Deployment => (
            json!({"generateName": "web-5d8f9c-", "namespace": "shop",
                   "labels": {"app": "web", "pod-template-hash": "5d8f9c"},
                   "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f9c",
                                        "uid": "a1", "controller": true, "blockOwnerDeletion": true}]}),
            None,
            json!([{"name": "MODE", "value": "serve"}]),
        ),
        Kind::Job => (
            json!({"generateName": format!("batch-{index}-"), "namespace": "shop",
                   "labels": {"job-name": "batch", "batch.kubernetes.io/job-completion-index": index},
                   "annotations": {"batch.kubernetes.io/job-completion-index": index},
                   "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "batch",
                                        "uid": "b2", "controller": true, "blockOwnerDeletion": true}]}),
            Some(format!("batch-{index}")),
            json!([{"name": "SHARD", "value": format!("shard \"{index}\"")}]),
        ),
        Kind::StatefulSet => (
            json!({"name": format!("db-{index}"), "namespace": "shop",
                   "labels": {"app": "db", "statefulset.kubernetes.io/pod-name": format!("db-{index}"),
                              "apps.kubernetes.io/pod-index": index},
                   "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db",
                                        "uid": "c3", "controller": true, "blockOwnerDeletion": true}]}),
            Some(format!("db-{index}")),
            json!([{"name": "ORDINAL", "value": index}]),
        ),
    };
    let mut pod = json!({
        "kind": "Pod", "apiVersion": "v1", "metadata": metadata,
        "spec": {
            "containers": [{
                "name": "app", "image": "registry.example.com/app:1.2", "env": env,
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}},
                "volumeMounts": [{"name": token, "readOnly": true,
                                  "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]
            }],
            "volumes": [{"name": token, "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}],
            "serviceAccountName": "default", "restartPolicy": "Always"
        }
    });
    if let Some(hostname) = hostname {
        pod["spec"]["hostname"] = json!(hostname);
    }
    for (key, value) in &sibling.annotations {
        pod["metadata"]["annotations"][*key] = json!(value);
    }
    pod
}

fn input(pod: Value) -> AdmissionInput {
    AdmissionInput {
        uid: "uid".to_owned(),
        namespace: "shop".to_owned(),
        operation: "CREATE".to_owned(),
        dry_run: false,
        object: pod,
        path_env: BTreeMap::new(),
        path: "/inject".to_owned(),
        deadline: Instant::now() + std::time::Duration::from_secs(10),
    }
}

/// The engine's outcome as the server's (the reason aside, the warnings to `pod`'s creator as
/// `serve` gives them), with whether it holds for any token volume name.
fn outcome_of(outcome: Result<Outcome, InjectError>, pod: &Value) -> (AdmissionOutcome, bool) {
    match outcome {
        Ok(Outcome::Skipped { decision }) => (
            AdmissionOutcome::Skipped {
                reason: String::new(),
                warnings: creator_warnings::for_pod(&decision, pod),
            },
            true,
        ),
        Ok(Outcome::Injected {
            patch,
            decision,
            blind_to_token_volume,
            ..
        }) => (
            AdmissionOutcome::Patched {
                patch,
                reason: String::new(),
                warnings: creator_warnings::for_pod(&decision, pod),
            },
            blind_to_token_volume,
        ),
        Err(error) => (AdmissionOutcome::Denied { message: error.0 }, false),
    }
}

fn text(outcome: &AdmissionOutcome) -> String {
    match outcome {
        AdmissionOutcome::Patched { patch, .. } => String::from_utf8_lossy(patch).into_owned(),
        other => format!("{other:?}"),
    }
}

proptest! {
    // The configurations are made before any case runs: a missing corpus under
    // `SIDECAR_INJECTOR_REQUIRE_CORPUS=1` then fails the test once, not in every shrinking step.
    #![proptest_config({
        LazyLock::force(&CONFIGS);
        ProptestConfig {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(24),
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    })]

    #[test]
    fn every_cached_answer_is_the_plain_injections(siblings in proptest::collection::vec(sibling(), 1..14)) {
        for config in CONFIGS.iter() {
            let outcomes = OutcomeCache::new(8 << 20, true).expect("a budget");
            let renders = RenderCache::default();
            for (position, sibling) in siblings.iter().enumerate() {
                let pod = pod_of(sibling);
                let plain = outcome_of(
                    config.inject(&Request {
                        pod: Some(&pod),
                        namespace: Some("shop"),
                        ..Request::default()
                    }),
                    &pod,
                )
                .0;
                let input = input(pod);
                let key = outcomes.key(&input);
                let answered = match key.as_ref().and_then(|key| outcomes.get(config, key)) {
                    Some(hit) => hit,
                    None => {
                        let (outcome, any_token_name) = outcome_of(
                            renders.inject(config, &Request {
                                pod: Some(&input.object),
                                namespace: Some("shop"),
                                ..Request::default()
                            }),
                            &input.object,
                        );
                        if let Some(key) = key {
                            let any_token_name = any_token_name && key.token.is_some();
                            outcomes.insert(config, key, outcome.clone(), any_token_name);
                        }
                        outcome
                    }
                };
                prop_assert_eq!(
                    text(&answered),
                    text(&plain),
                    "pod {} ({:?}) of {:?}",
                    position,
                    sibling,
                    siblings
                );
            }
        }
    }
}
