//! Istio's golden injection corpus: every case of its table, both paths.
//!
//! - **kube-inject**: the whole input file through [`inject_stream`], compared with the golden as
//!   text after trimming (Istio's `TestInjection` comparison), or the expected error / warning.
//! - **webhook**: each injectable document turned into the pod its controller would create, sent
//!   through [`CompiledConfig::inject`], the JSON Patch applied, and the result compared with the golden
//!   pod the way Istio's test compares them (Go JSON of both, without the status annotation and
//!   `fieldRef.apiVersion`).
//!
//! Cases that do not pass yet are listed with a reason in `tests/conformance-known-failures.txt`;
//! the test fails when a case outside that list fails, and when a listed case passes (so the list
//! only shrinks). It prints one line `N passed, M failed` (sub-tests counted one by one).
//! The corpus is found by the `istio-corpus` crate: the shared copy (`SIDECAR_INJECTOR_SHARED`,
//! default `../shared` beside the checkout; its `cases.json` lists every case), else the Go module
//! `istio.io/istio` at the pinned version (its `default-profile-cases.json`: the default profile's
//! cases). Without either it skips, loudly, or fails under `SIDECAR_INJECTOR_REQUIRE_CORPUS=1`.
//!
//! `releases` runs the release matrix: the default profile's goldens of every Istio release at
//! hand, each with the settings its own chart renders.

// Tests report failures by panicking.
#![allow(clippy::panic)]

#[path = "conformance/releases.rs"]
mod releases;

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
};

use injector_engine::{
    CompiledConfig, Options,
    cache::RenderCache,
    kube_inject::inject_stream,
    mesh::overlay_mesh_config,
    normalize::{normalize, to_go_json},
    patch::apply_patch,
    pipeline::{Outcome, Request},
    settings::{parse_mesh, parse_values},
};
use serde_json::{Value, json};

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

struct Settings {
    config: injector_core::config::InjectorConfig,
    values: Value,
    mesh: Value,
}

fn settings(istio: &Path, params: &Value) -> Result<Settings, String> {
    let text = |key: &str| {
        params[key]
            .as_str()
            .map(|p| read(&istio.join(p)))
            .ok_or(format!("no {key}"))
    };
    let config = injector_core::config::parse_injector_config(&text("config")?)
        .map_err(|e| e.to_string())?
        .config;
    let values = parse_values(&text("values")?).map_err(|e| e.to_string())?;
    let mut mesh = parse_mesh(&text("mesh")?).map_err(|e| e.to_string())?;
    if let Some(Value::Object(overlay)) = params.get("meshOverlay") {
        mesh = overlay_mesh_config(overlay.clone(), &mesh).map_err(|e| e.to_string())?;
    }
    Ok(Settings { config, values, mesh })
}

/// The istioctl CLI cases: `--meshConfigFile`, `--injectConfigFile` (a Config or a bare template),
/// `--valuesFile` and `--operatorFileName`, relative to the testdata directory.
fn cli_settings(istio: &Path, case: &Value) -> Result<Settings, String> {
    let dir = istio.join("istioctl/pkg/kubeinject/testdata");
    let args: Vec<&str> = case["params"]["cliArgs"]
        .as_str()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| *a == name)
            .and_then(|i| args.get(i + 1))
            .map(|f| dir.join(f))
    };
    let config_file = flag("--injectConfigFile").ok_or("no --injectConfigFile")?;
    let config = injector_core::config::parse_injector_config_or_template(&read(&config_file))
        .map_err(|e| e.to_string())?
        .config;
    let values = match flag("--valuesFile") {
        Some(path) => parse_values(&read(&path)).map_err(|e| e.to_string())?,
        None => json!({}),
    };
    let mut values = values;
    let mut mesh = match flag("--meshConfigFile") {
        Some(path) => parse_mesh(&read(&path)).map_err(|e| e.to_string())?,
        None => injector_engine::mesh::default_mesh_config(),
    };
    // `--operatorFileName`: the IstioOperator's values and meshConfig win.
    if let Some(path) = flag("--operatorFileName") {
        let operator =
            injector_engine::settings::parse_istio_operator(&read(&path)).map_err(|e| e.to_string())?;
        injector_engine::settings::apply_istio_operator(&operator, &mut values, &mut mesh)
            .map_err(|e| e.to_string())?;
    }
    Ok(Settings { config, values, mesh })
}

fn injector(settings: &Settings, params: &Value, kube_inject: bool) -> Result<CompiledConfig, String> {
    let revision_key = if kube_inject {
        "kubeInjectRevision"
    } else {
        "webhookRevision"
    };
    let openshift = params["platform"].as_str() == Some("openshift");
    let options = Options {
        revision: params[revision_key].as_str().unwrap_or("").to_owned(),
        native_sidecars: params["nativeSidecars"].as_bool().unwrap_or(true),
        compliance_policy: params["compliancePolicy"].as_str().unwrap_or("").to_owned(),
        proxy_uid: if openshift { 1_000_629_999 } else { 1337 },
        proxy_gid: if openshift { 1_000_629_999 } else { 1337 },
        kube_inject,
        openshift,
    };
    CompiledConfig::new(
        settings.config.clone(),
        settings.values.clone(),
        settings.mesh.clone(),
        options,
    )
    .map_err(|e| e.to_string())
}

fn kube_inject_case(istio: &Path, case: &Value, settings: &Settings) -> Result<(), String> {
    kube_inject_compared(istio, case, settings, &|golden| golden)
}

/// [`kube_inject_case`], with the golden read through `golden_as` first.
fn kube_inject_compared(
    istio: &Path,
    case: &Value,
    settings: &Settings,
    golden_as: &dyn Fn(String) -> String,
) -> Result<(), String> {
    let params = &case["params"];
    let injector = injector(settings, params, true)?;
    let input = read(&istio.join(case["input"].as_str().unwrap_or_default()));
    let result = inject_stream(&injector, &input);
    if let Some(expected) = params["expectedError"].as_str() {
        return match result {
            Err(error) if error.to_string().to_lowercase().contains(expected) => Ok(()),
            Err(error) => Err(format!("error {error:?} lacks {expected:?}")),
            Ok(_) => Err(format!("expected an error containing {expected:?}")),
        };
    }
    let output = result.map_err(|e| e.to_string())?;
    if let Some(log) = params["expectedLog"].as_str()
        && !output.warnings.iter().any(|w| w.contains(log))
    {
        return Err(format!("no warning contains {log:?}: {:?}", output.warnings));
    }
    let Some(golden) = case["golden"].as_str() else {
        return Ok(());
    };
    let want = golden_as(read(&istio.join(golden)));
    if output.text.trim() == want.trim() {
        Ok(())
    } else {
        Err(first_difference(want.trim(), output.text.trim()))
    }
}

fn first_difference(want: &str, got: &str) -> String {
    let line = want
        .lines()
        .zip(got.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(want.lines().count().min(got.lines().count()));
    let show = |text: &str| {
        text.lines()
            .skip(line.saturating_sub(2))
            .take(5)
            .collect::<Vec<_>>()
            .join("\n")
    };
    format!(
        "output differs at line {}:\n--- want\n{}\n--- got\n{}",
        line + 1,
        show(want),
        show(got)
    )
}

const INJECTABLE: [&str; 9] = [
    "Deployment",
    "DeploymentConfig",
    "DaemonSet",
    "StatefulSet",
    "Job",
    "ReplicaSet",
    "ReplicationController",
    "CronJob",
    "Pod",
];

/// The injectable documents of a file, Lists expanded.
fn injectable_documents(text: &str) -> Vec<Value> {
    fn collect(value: Value, out: &mut Vec<Value>) {
        match value.get("kind").and_then(Value::as_str) {
            Some("List") => {
                for item in value
                    .get("items")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
                {
                    collect(item, out);
                }
            }
            Some(kind) if INJECTABLE.contains(&kind) => out.push(value),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for piece in text.split("\n---") {
        if let Ok(documents) = injector_core::yaml::parse_documents(piece) {
            for (_, document) in documents {
                collect(document, &mut out);
            }
        }
    }
    out
}

/// The pod a controller would create from the object (the Go test's `objectToPod`).
fn object_to_pod(object: &Value) -> Option<Value> {
    let kind = object["kind"].as_str()?;
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if kind == "Pod" {
        return Some(object.clone());
    }
    let template = if kind == "CronJob" {
        object.pointer("/spec/jobTemplate/spec/template")?
    } else {
        object.pointer("/spec/template")?
    };
    let mut metadata = template.get("metadata").cloned().unwrap_or_else(|| json!({}));
    if !metadata.is_object() {
        metadata = json!({});
    }
    let (generate_name, owner) = if kind == "Deployment" {
        metadata["labels"]["pod-template-hash"] = json!("fake");
        (
            format!("{name}-fake-"),
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{name}-fake"), "controller": true}),
        )
    } else {
        (
            name.to_owned(),
            json!({"apiVersion": object["apiVersion"], "kind": kind, "name": name, "controller": true}),
        )
    };
    metadata["generateName"] = json!(generate_name);
    metadata["ownerReferences"] = json!([owner]);
    if let Some(namespace) = object.pointer("/metadata/namespace") {
        metadata["namespace"] = namespace.clone();
    }
    Some(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template.get("spec").cloned().unwrap_or(json!({}))}),
    )
}

/// Istio's comparison: Go JSON without the status annotation and `fieldRef.apiVersion`.
fn comparable(pod: &Value) -> Result<String, String> {
    let mut pod = pod.clone();
    if let Some(annotations) = pod
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.shift_remove("sidecar.istio.io/status");
    }
    let mut pod = normalize("v1/Pod", &pod).map_err(|e| e.to_string())?;
    for list in ["containers", "initContainers"] {
        for container in pod
            .pointer_mut(&format!("/spec/{list}"))
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            for env in container
                .get_mut("env")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if let Some(field_ref) = env
                    .pointer_mut("/valueFrom/fieldRef")
                    .and_then(Value::as_object_mut)
                {
                    field_ref.shift_remove("apiVersion");
                }
            }
        }
    }
    Ok(to_go_json(&pod))
}

fn webhook_case(istio: &Path, case: &Value, settings: &Settings) -> Result<(), String> {
    let params = &case["params"];
    let injector = injector(settings, params, false)?;
    let inputs = injectable_documents(&read(&istio.join(case["input"].as_str().unwrap_or_default())));
    let Some(golden) = case["golden"].as_str() else {
        return Ok(());
    };
    let wants = injectable_documents(&read(&istio.join(golden)));
    if inputs.len() != wants.len() {
        return Err(format!(
            "{} input documents, {} golden documents",
            inputs.len(),
            wants.len()
        ));
    }
    for (index, (input, want)) in inputs.iter().zip(&wants).enumerate() {
        if input["kind"] == "CronJob" {
            continue; // Istio's webhook test skips CronJobs.
        }
        let (Some(pod), Some(want_pod)) = (object_to_pod(input), object_to_pod(want)) else {
            return Err(format!("document {index}: no pod template"));
        };
        let namespace = input.pointer("/metadata/namespace").and_then(Value::as_str);
        let request = Request {
            pod: Some(&pod),
            namespace,
            ..Request::default()
        };
        let first = injector
            .inject(&request)
            .map_err(|e| format!("document {index}: {e}"))?;
        // Through the render cache, which renders and keeps the first time and serves its render
        // the second: the patch must not change.
        let cache = RenderCache::default();
        for round in ["rendered through the cache", "served by the cache"] {
            let cached = cache
                .inject(&injector, &request)
                .map_err(|e| format!("document {index}, {round}: {e}"))?;
            if let (Outcome::Injected { patch: a, .. }, Outcome::Injected { patch: b, .. }) =
                (&first, &cached)
                && a != b
            {
                return Err(format!("document {index}: {round}, the patch differs"));
            }
        }
        check_siblings(&injector, &cache, &pod, namespace).map_err(|e| format!("document {index}: {e}"))?;
        let got = match first {
            Outcome::Injected { patch, .. } => apply_patch(&pod, &patch).map_err(|e| e.to_string())?,
            Outcome::Skipped { .. } => pod.clone(),
        };
        let (got, want) = (comparable(&got)?, comparable(&want_pod)?);
        if got != want {
            return Err(format!(
                "document {index} differs:\n--- want\n{want}\n--- got\n{got}"
            ));
        }
    }
    Ok(())
}

/// The pods a controller would make of `pod`, alike but for the values of each pod's own: each
/// injected through the render cache (which serves the later ones from the earlier ones' renders)
/// as its own plain injection patches it.
fn check_siblings(
    injector: &CompiledConfig,
    cache: &RenderCache,
    pod: &Value,
    namespace: Option<&str>,
) -> Result<(), String> {
    for (index, named) in [
        (0, false),
        (1, false),
        (2, false),
        (0, true),
        (1, true),
        (2, true),
    ] {
        let sibling = sibling(pod, index, named);
        let request = Request {
            pod: Some(&sibling),
            namespace,
            ..Request::default()
        };
        let own = injector.inject(&request).map(|outcome| match outcome {
            Outcome::Injected { patch, .. } => Some(patch),
            Outcome::Skipped { .. } => None,
        });
        let answered = cache.inject(injector, &request).map(|outcome| match outcome {
            Outcome::Injected { patch, .. } => Some(patch),
            Outcome::Skipped { .. } => None,
        });
        if own != answered {
            return Err(format!(
                "sibling {index} (named: {named}): answered {:?}, injected {:?}",
                answered.map(|patch| patch.map(|p| String::from_utf8_lossy(&p).into_owned())),
                own.map(|patch| patch.map(|p| String::from_utf8_lossy(&p).into_owned()))
            ));
        }
    }
    Ok(())
}

/// `pod` as its controller would make its pod number `index`: a Job's (a `generateName` and a
/// controller owner reference when it has none, a completion index label and annotation) or,
/// `named`, a StatefulSet's (a name of its own and its pod-name and pod-index labels, no
/// `generateName`); either with a hostname, a token volume mounted in its first container, and
/// its containers' env values (plus one more, with characters JSON escapes) made its own.
fn sibling(pod: &Value, index: usize, named: bool) -> Value {
    let mut pod = pod.clone();
    let own = format!("{index}");
    if let Some(metadata) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        let base = metadata
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("pod")
            .to_owned();
        let owners = metadata.entry("ownerReferences").or_insert_with(|| json!([]));
        if let Some(owners) = owners.as_array_mut()
            && !owners.iter().any(|owner| owner["controller"] == json!(true))
        {
            let (api_version, kind) = if named {
                ("apps/v1", "StatefulSet")
            } else {
                ("batch/v1", "Job")
            };
            owners.push(
                json!({"apiVersion": api_version, "kind": kind, "name": "siblings", "uid": "u-1",
                "controller": true, "blockOwnerDeletion": true}),
            );
        }
        if named {
            let name = format!("{base}-{own}");
            metadata.remove("generateName");
            metadata.insert("name".into(), json!(name));
            if let Some(labels) = metadata
                .entry("labels")
                .or_insert_with(|| json!({}))
                .as_object_mut()
            {
                labels.insert("statefulset.kubernetes.io/pod-name".into(), json!(name));
                labels.insert("apps.kubernetes.io/pod-index".into(), json!(own));
            }
        } else {
            if metadata
                .get("generateName")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                metadata.remove("name");
                metadata.insert("generateName".into(), json!(format!("{base}-{own}-")));
            }
            for field in ["labels", "annotations"] {
                if let Some(map) = metadata.entry(field).or_insert_with(|| json!({})).as_object_mut() {
                    map.insert("batch.kubernetes.io/job-completion-index".into(), json!(own));
                }
            }
        }
    }
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("hostname".into(), json!(format!("host-{own}")));
        let token = format!("kube-api-access-{index:05}");
        if let Some(volumes) = spec.entry("volumes").or_insert_with(|| json!([])).as_array_mut() {
            volumes.push(json!({"name": token, "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}));
        }
        if let Some(containers) = spec.get_mut("containers").and_then(Value::as_array_mut) {
            for (position, container) in containers.iter_mut().enumerate() {
                let Some(container) = container.as_object_mut() else {
                    continue;
                };
                if position == 0
                    && let Some(mounts) = container
                        .entry("volumeMounts")
                        .or_insert_with(|| json!([]))
                        .as_array_mut()
                {
                    mounts.push(json!({"name": token, "readOnly": true,
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}));
                }
                if let Some(env) = container.entry("env").or_insert_with(|| json!([])).as_array_mut() {
                    for item in env.iter_mut() {
                        if let Some(value) = item.get_mut("value")
                            && let Some(text) = value.as_str().filter(|text| !text.is_empty())
                        {
                            *value = json!(format!("{text}-{own}"));
                        }
                    }
                    env.push(json!({"name": "SIBLING", "value": format!("\"{own}\"\\é\u{1}")}));
                }
            }
        }
    }
    pod
}

#[test]
fn istio_golden_cases() {
    let Some(corpus) = istio_corpus::istio() else {
        istio_corpus::unavailable("conformance: Istio's golden cases");
        return;
    };
    let istio = corpus.root.clone();
    let table = corpus.case_table();
    let cases: Value = serde_json::from_str(&read(&table))
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", table.display()));
    let known: BTreeSet<String> = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance-known-failures.txt"),
    )
    .unwrap_or_default()
    .lines()
    .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    .map(|l| l.split(" #").next().unwrap_or(l).trim().to_owned())
    .collect();
    let (mut passed, mut failed) = (0, 0);
    let (mut unexpected, mut now_passing) = (Vec::new(), Vec::new());
    for case in cases["cases"].as_array().into_iter().flatten() {
        let name = case["name"].as_str().unwrap_or_default();
        let params = &case["params"];
        let loaded = if case["suite"] == "istioctl TestKubeInject" {
            cli_settings(&istio, case)
        } else {
            settings(&istio, params)
        };
        let settings = match loaded {
            Ok(settings) => settings,
            Err(error) => {
                failed += 1;
                let id = format!("{name} [kube-inject]");
                if !known.contains(&id) {
                    unexpected.push(format!("{id}: settings: {error}"));
                }
                continue;
            }
        };
        let mut run = |path: &str, result: Result<(), String>| {
            let id = format!("{name} [{path}]");
            match (result, known.contains(&id)) {
                (Ok(()), false) => passed += 1,
                (Ok(()), true) => {
                    passed += 1;
                    now_passing.push(id);
                }
                (Err(_), true) => failed += 1,
                (Err(error), false) => {
                    failed += 1;
                    unexpected.push(format!("{id}: {error}"));
                }
            }
        };
        if params["kubeInject"].as_bool().unwrap_or(true) {
            run("kube-inject", kube_inject_case(&istio, case, &settings));
        }
        if params["webhook"].as_bool().unwrap_or(true) && params["expectedError"].is_null() {
            run("webhook", webhook_case(&istio, case, &settings));
        }
    }
    println!("{passed} passed, {failed} failed ({})", corpus.describe());
    let listed = cases["cases"].as_array().map_or(0, Vec::len);
    assert!(
        listed > 0 && passed + failed >= listed,
        "{} lists {listed} cases and {} ran: the corpus is incomplete",
        table.display(),
        passed + failed
    );
    if std::env::var_os("CONFORMANCE_LIST_FAILURES").is_some() {
        for line in &unexpected {
            println!("{}", line.lines().next().unwrap_or_default());
        }
    }
    assert!(
        now_passing.is_empty(),
        "cases listed as known failures now pass; remove them:\n{}",
        now_passing.join("\n")
    );
    assert!(
        unexpected.is_empty(),
        "{} unexpected failures:\n\n{}",
        unexpected.len(),
        unexpected.join("\n\n")
    );
}
