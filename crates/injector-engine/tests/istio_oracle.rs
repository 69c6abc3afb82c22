//! Differential test against Go for Istio's template functions and template data: every case
//! of the `istio-funcs` and `istio-chart` oracle groups (`crates/gotemplate/tests/oracle/`) is
//! rendered with `render::istio_funcs()` on the data `render` builds, and compared byte for byte
//! (output, error text, phase) with what Go + Istio produced.
//!
//! Cases that cannot pass yet are listed in `tests/istio-known-failures.txt` with the reason.
//! A listed case that passes, or a listed name that does not exist, fails the test, so the list
//! only shrinks. Cases that need the shared dir (`SIDECAR_INJECTOR_SHARED`, default
//! `<repo root>/../shared`) are skipped, with a message, when it is missing.

#![allow(clippy::panic, clippy::unwrap_used)] // a test harness: failing loudly is the point

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gotemplate::Value;
use injector_engine::render::{self, TemplateInput, sidecar_template_data};
use injector_engine::{mesh, owner, settings};
use serde_json::Value as Json;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn shared_dir() -> PathBuf {
    match std::env::var_os("SIDECAR_INJECTOR_SHARED") {
        Some(p) => PathBuf::from(p),
        None => manifest_dir().join("../../../shared"),
    }
}

fn oracle_dir() -> PathBuf {
    manifest_dir().join("../gotemplate/tests/oracle")
}

#[derive(Debug, PartialEq)]
struct Outcome {
    output: String,
    error: Option<String>,
    phase: Option<String>,
}

fn read_json(path: &Path) -> Json {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn yaml_file(path: &Path) -> Result<Json, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let docs = injector_core::yaml::parse_documents(&text).map_err(|e| e.message)?;
    Ok(docs.into_iter().next().map_or(Json::Null, |(_, v)| v))
}

/// Builds `SidecarTemplateData` from a `kind: sidecar` fixture, as the oracle does.
fn sidecar_data(fixture: &Json, shared: &Path) -> Result<Value, String> {
    sidecar_input(fixture, shared).map(sidecar_template_data)
}

/// The template input of a `kind: sidecar` fixture.
fn sidecar_input(fixture: &Json, shared: &Path) -> Result<TemplateInput, String> {
    let s = |k: &str| fixture.get(k).and_then(Json::as_str).unwrap_or("").to_string();
    let values_text = std::fs::read_to_string(shared.join(s("valuesFile"))).map_err(|e| e.to_string())?;
    let values = settings::parse_values(&values_text).map_err(|e| e.to_string())?;
    let mesh_text = std::fs::read_to_string(shared.join(s("meshFile"))).map_err(|e| e.to_string())?;
    let mut mesh_config = settings::parse_mesh(&mesh_text).map_err(|e| e.to_string())?;
    if let Some(overlay) = fixture.get("meshOverlay").and_then(Json::as_str) {
        mesh_config = mesh::apply_mesh_config(overlay, &mesh_config).map_err(|e| e.0)?;
    }
    let pod = fixture.get("pod").cloned().unwrap_or(Json::Null);
    let annotation = injector_engine::pod::annotation(&pod, mesh::PROXY_CONFIG_ANNOTATION);
    let proxy_config = mesh::effective_proxy_config(&mesh_config, annotation).map_err(|e| e.0)?;
    let (proxy_image, proxy_init_image) = render::data::images(&values, &proxy_config, &pod);
    Ok(TemplateInput {
        owner: owner::owner_of(&pod),
        pod: Arc::new(pod),
        mesh: Arc::new(mesh_config),
        proxy_config: Arc::new(proxy_config),
        values: Value::from_json(&values),
        revision: s("revision"),
        native_sidecars: fixture
            .get("nativeSidecars")
            .and_then(Json::as_bool)
            .unwrap_or(false),
        compliance_policy: s("compliancePolicy"),
        proxy_uid: 1337,
        proxy_gid: 1337,
        proxy_image,
        proxy_init_image,
    })
}

/// Builds the gateway template input from a `kind: gateway` fixture, as the oracle does.
fn gateway_data(fixture: &Json, shared: &Path) -> Result<Value, String> {
    let s = |k: &str| fixture.get(k).and_then(Json::as_str).unwrap_or("").to_string();
    let values_text = std::fs::read_to_string(shared.join(s("valuesFile"))).map_err(|e| e.to_string())?;
    let values = settings::parse_values(&values_text).map_err(|e| e.to_string())?;
    let mesh_text = std::fs::read_to_string(shared.join(s("meshFile"))).map_err(|e| e.to_string())?;
    let mut mesh_config = settings::parse_mesh(&mesh_text).map_err(|e| e.to_string())?;
    if let Some(overlay) = fixture.get("meshOverlay").and_then(Json::as_str) {
        mesh_config = mesh::apply_mesh_config(overlay, &mesh_config).map_err(|e| e.0)?;
    }
    let gateway = fixture.get("gateway").cloned().unwrap_or(Json::Null);
    let mut input = fixture.get("input").cloned().unwrap_or(Json::Null);
    if let Some(m) = input.as_object_mut() {
        m.insert("ProxyUID".into(), 1337.into());
        m.insert("ProxyGID".into(), 1337.into());
    }
    let proxy_config = mesh::effective_proxy_config(&mesh_config, None).map_err(|e| e.0)?;
    let (proxy_image, _) = render::data::images(&values, &proxy_config, &gateway);
    let annotation =
        injector_engine::pod::annotation(&gateway, injector_engine::images::PROXY_IMAGE_TYPE_ANNOTATION);
    let image_type = proxy_config
        .get("image")
        .map(|i| i.get("imageType").and_then(Json::as_str).unwrap_or(""));
    let agentgateway_image = injector_engine::images::agentgateway_image(&values, image_type, annotation);
    Ok(render::gateway_template_data(render::GatewayInput {
        gateway: Arc::new(gateway),
        input: Arc::new(input),
        mesh: Arc::new(mesh_config),
        proxy_config: Arc::new(proxy_config),
        values: Value::from_json(&values),
        proxy_image,
        agentgateway_image,
    }))
}

fn run(text: &str, data: Option<&Value>) -> Outcome {
    let t = match render::parse_template(text) {
        Ok(t) => t,
        Err(e) => {
            return Outcome {
                output: String::new(),
                error: Some(e.to_string()),
                phase: Some("parse".into()),
            };
        }
    };
    let Some(data) = data else {
        return Outcome {
            output: String::new(),
            error: None,
            phase: None,
        };
    };
    let mut out = String::new();
    match t.execute_to(&mut out, data) {
        Ok(()) => Outcome {
            output: out,
            error: None,
            phase: None,
        },
        Err(e) => Outcome {
            output: out,
            error: Some(e.to_string()),
            phase: Some("exec".into()),
        },
    }
}

fn load_known_failures(path: &Path) -> BTreeMap<String, String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return BTreeMap::new();
    };
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (name, reason) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
            (name.to_string(), reason.trim().to_string())
        })
        .collect()
}

enum Prepared {
    Run(String, Option<Value>),
    Skip(String),
}

fn prepare(case: &Json, shared: &Path, have_shared: bool) -> Prepared {
    let text = if let Some(t) = case.get("template").and_then(Json::as_str) {
        t.to_string()
    } else if let Some(file) = case.get("template_file").and_then(Json::as_str) {
        if !have_shared {
            return Prepared::Skip("needs the shared dir".into());
        }
        match std::fs::read_to_string(shared.join(file)) {
            Ok(t) => format!("{}\n", t.trim()),
            Err(e) => return Prepared::Skip(format!("{file}: {e}")),
        }
    } else {
        return Prepared::Skip("no template".into());
    };
    let kind = case.get("data_kind").and_then(Json::as_str).unwrap_or("");
    match kind {
        "parse-only" => Prepared::Run(text, None),
        "istio-json" => Prepared::Run(
            text,
            Some(Value::from_json(case.get("data").unwrap_or(&Json::Null))),
        ),
        "istio-sidecar" => {
            if !have_shared {
                return Prepared::Skip("needs the shared dir".into());
            }
            let name = case.get("fixture").and_then(Json::as_str).unwrap_or("");
            let fixture = match yaml_file(&oracle_dir().join(format!("istio-fixtures/{name}.yaml"))) {
                Ok(f) => f,
                Err(e) => return Prepared::Skip(e),
            };
            match sidecar_data(&fixture, shared) {
                Ok(data) => Prepared::Run(text, Some(data)),
                Err(e) => Prepared::Run(format!("fixture error: {e}"), None),
            }
        }
        "istio-gateway" => {
            if !have_shared {
                return Prepared::Skip("needs the shared dir".into());
            }
            let name = case.get("fixture").and_then(Json::as_str).unwrap_or("");
            let fixture = match yaml_file(&oracle_dir().join(format!("istio-fixtures/{name}.yaml"))) {
                Ok(f) => f,
                Err(e) => return Prepared::Skip(e),
            };
            match gateway_data(&fixture, shared) {
                Ok(data) => Prepared::Run(text, Some(data)),
                Err(e) => Prepared::Run(format!("fixture error: {e}"), None),
            }
        }
        other => Prepared::Skip(format!("data kind {other} not supported yet")),
    }
}

#[test]
fn istio_oracle() {
    let dir = oracle_dir();
    let shared = shared_dir();
    let have_shared = shared.is_dir();
    if !have_shared {
        eprintln!(
            "shared directory {} not found (set SIDECAR_INJECTOR_SHARED); skipping the cases that need it",
            shared.display()
        );
    }
    let known = load_known_failures(&manifest_dir().join("tests/istio-known-failures.txt"));
    let (mut passed, mut failed, mut skipped, mut known_failed) = (0, 0, 0, 0);
    let mut seen = BTreeSet::new();
    let mut stale = vec![];
    for group in ["istio-funcs", "istio-chart"] {
        let cases = read_json(&dir.join(format!("cases/{group}.json")));
        let expected = read_json(&dir.join(format!("expected/{group}.json")));
        for case in cases.as_array().into_iter().flatten() {
            let name = case.get("name").and_then(Json::as_str).unwrap_or("").to_string();
            seen.insert(name.clone());
            let Some(want) = expected.get(&name) else {
                eprintln!("{name}: no expected result");
                skipped += 1;
                continue;
            };
            let want = Outcome {
                output: want
                    .get("output")
                    .and_then(Json::as_str)
                    .unwrap_or("")
                    .to_string(),
                error: want.get("error").and_then(Json::as_str).map(str::to_string),
                phase: want.get("phase").and_then(Json::as_str).map(str::to_string),
            };
            let got = match prepare(case, &shared, have_shared) {
                Prepared::Skip(reason) => {
                    if std::env::var_os("ORACLE_VERBOSE").is_some() {
                        eprintln!("skip {name}: {reason}");
                    }
                    skipped += 1;
                    continue;
                }
                Prepared::Run(text, data) => run(&text, data.as_ref()),
            };
            let ok = got == want;
            match (ok, known.contains_key(&name)) {
                (true, false) => passed += 1,
                (true, true) => stale.push(name),
                (false, true) => known_failed += 1,
                (false, false) => {
                    failed += 1;
                    eprintln!(
                        "FAIL {name}\n  want: {:?} {:?}\n  got:  {:?} {:?}",
                        want.error, want.output, got.error, got.output
                    );
                }
            }
        }
    }
    let unknown: Vec<&String> = known.keys().filter(|k| !seen.contains(*k)).collect();
    eprintln!("{passed} passed, {failed} failed, {skipped} skipped, {known_failed} known failures");
    assert!(
        stale.is_empty(),
        "known failures that now pass (remove them): {stale:?}"
    );
    assert!(
        unknown.is_empty(),
        "known failures that are not cases: {unknown:?}"
    );
    assert_eq!(failed, 0, "{failed} oracle cases differ from Go");
}

/// Rendering time of the sidecar template for the richest fixture (data built per request, as
/// the webhook does). Run with `cargo test --release -- --ignored render_timing --nocapture`.
#[test]
#[ignore]
fn render_timing() {
    let shared = shared_dir();
    if !shared.is_dir() {
        eprintln!("shared directory {} not found; skipping", shared.display());
        return;
    }
    let file =
        shared.join("istio/manifests/charts/istio-control/istio-discovery/files/injection-template.yaml");
    let text = format!("{}\n", std::fs::read_to_string(file).unwrap().trim());
    let template = render::parse_template(&text).unwrap();
    for fixture_name in ["sidecar-hello", "sidecar-annotated"] {
        let fixture = yaml_file(&oracle_dir().join(format!("istio-fixtures/{fixture_name}.yaml"))).unwrap();
        let input = sidecar_input(&fixture, &shared).unwrap();
        let n: u32 = 2000;
        template.execute(&sidecar_template_data(input.clone())).unwrap();
        let start = std::time::Instant::now();
        for _ in 0..n {
            // Fresh data each time (no cached fields), as for a new admission request.
            let data = sidecar_template_data(input.clone());
            std::hint::black_box(template.execute(&data).unwrap());
        }
        let fresh = start.elapsed() / n;
        let data = sidecar_template_data(input.clone());
        let start = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(template.execute(&data).unwrap());
        }
        eprintln!(
            "{fixture_name}: {fresh:?} per render with fresh data, {:?} with warm field caches",
            start.elapsed() / n
        );
    }
}

/// The pod templates of a workload document (Pod, Deployment, CronJob, ...).
fn pod_templates(doc: &Json) -> Vec<Json> {
    if doc.get("kind").and_then(Json::as_str) == Some("Pod") {
        return vec![doc.clone()];
    }
    let mut out = vec![];
    if let Some(t) = doc.pointer("/spec/template") {
        out.push(t.clone());
    }
    if let Some(t) = doc.pointer("/spec/jobTemplate/spec/template") {
        out.push(t.clone());
    }
    if let Some(items) = doc.get("items").and_then(Json::as_array) {
        out.extend(items.iter().flat_map(pod_templates));
    }
    out
}

/// Smoke test: the chart's sidecar templates execute without error on every pod of Istio's
/// golden corpus (default values and mesh), so no field or method the templates reach is missing.
#[test]
fn golden_corpus_pods_render() {
    let shared = shared_dir();
    if !shared.is_dir() {
        eprintln!("shared directory {} not found; skipping", shared.display());
        return;
    }
    let files = shared.join("istio/manifests/charts/istio-control/istio-discovery/files");
    let templates: Vec<(String, gotemplate::Template)> = [
        "injection-template.yaml",
        "gateway-injection-template.yaml",
        "grpc-agent.yaml",
        "grpc-simple.yaml",
    ]
    .iter()
    .map(|f| {
        let text = format!("{}\n", std::fs::read_to_string(files.join(f)).unwrap().trim());
        ((*f).to_string(), render::parse_template(&text).unwrap())
    })
    .collect();
    let fixture = serde_json::json!({
        "valuesFile": "istio/derived/values/default.json",
        "meshFile": "istio/derived/mesh/default.yaml",
        "revision": "default",
    });
    let corpus = shared.join("istio/pkg/kube/inject/testdata/inject");
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().and_then(|e| e.to_str()) == Some("yaml")
                && !p.to_string_lossy().ends_with(".iop.yaml")
        })
        .collect();
    entries.sort();
    let (mut rendered, mut errors) = (0, vec![]);
    for path in entries {
        let text = std::fs::read_to_string(&path).unwrap();
        let Ok(docs) = injector_core::yaml::parse_documents(&text) else {
            continue;
        };
        for (_, doc) in docs {
            for mut pod in pod_templates(&doc) {
                if pod.pointer("/metadata/namespace").is_none()
                    && let Some(m) = pod.get_mut("metadata").and_then(Json::as_object_mut)
                {
                    m.insert("namespace".into(), "default".into());
                }
                let mut f = fixture.clone();
                f["pod"] = pod;
                let data = match sidecar_data(&f, &shared) {
                    Ok(d) => d,
                    Err(e) => {
                        // An invalid proxy config annotation: rejected before rendering.
                        eprintln!("{}: {e}", path.display());
                        continue;
                    }
                };
                for (name, t) in &templates {
                    match t.execute(&data) {
                        Ok(_) => rendered += 1,
                        Err(e) => errors.push(format!("{} with {name}: {e}", path.display())),
                    }
                }
            }
        }
    }
    eprintln!("{rendered} renders, {} errors", errors.len());
    assert!(errors.is_empty(), "{errors:#?}");
}

/// Extra differential run over a directory produced by the istio oracle binary
/// (`ISTIO_ORACLE_EXTRA=<dir>` with `cases/`, `expected/`, `fixtures/`); ignored by default.
#[test]
#[ignore]
fn extra_oracle_dir() {
    let Some(dir) = std::env::var_os("ISTIO_ORACLE_EXTRA").map(PathBuf::from) else {
        eprintln!("ISTIO_ORACLE_EXTRA not set; skipping");
        return;
    };
    let shared = shared_dir();
    let mut failed = 0;
    let mut passed = 0;
    for entry in std::fs::read_dir(dir.join("cases")).unwrap() {
        let path = entry.unwrap().path();
        let group = path.file_stem().unwrap().to_string_lossy().to_string();
        let cases = read_json(&path);
        let expected = read_json(&dir.join(format!("expected/{group}.json")));
        for case in cases.as_array().unwrap() {
            let name = case["name"].as_str().unwrap();
            let fixture =
                yaml_file(&dir.join(format!("fixtures/{}.yaml", case["fixture"].as_str().unwrap()))).unwrap();
            let file = case["template_file"].as_str().unwrap();
            let text = format!("{}\n", std::fs::read_to_string(shared.join(file)).unwrap().trim());
            let got = run(&text, Some(&sidecar_data(&fixture, &shared).unwrap()));
            let want = &expected[name];
            if want["output"].as_str() == Some(got.output.as_str())
                && want["error"].as_str() == got.error.as_deref()
            {
                passed += 1;
            } else {
                failed += 1;
                if failed <= 5 {
                    let w = want["output"].as_str().unwrap_or("");
                    let at = w
                        .bytes()
                        .zip(got.output.bytes())
                        .position(|(a, b)| a != b)
                        .unwrap_or(w.len().min(got.output.len()));
                    let from = at.saturating_sub(200);
                    eprintln!(
                        "FAIL {name} at byte {at}: error {:?} vs {:?}\n  want: {:?}\n  got:  {:?}",
                        want["error"],
                        got.error,
                        &w[from..(at + 200).min(w.len())],
                        &got.output[from.min(got.output.len())..(at + 200).min(got.output.len())]
                    );
                }
            }
        }
    }
    eprintln!("{passed} passed, {failed} failed");
    assert_eq!(failed, 0);
}

/// Istio's rendering of the chart's sidecar templates on the 100 pods of its golden corpus,
/// under several values profiles (`tests/data/corpus`, generated by `gen.py` with the istio
/// oracle): 700 renders compared by SHA-256 of the output and by error text.
#[test]
fn corpus_matches_go() {
    use sha2::Digest;
    let shared = shared_dir();
    if !shared.is_dir() {
        eprintln!(
            "shared directory {} not found; skipping the corpus comparison",
            shared.display()
        );
        return;
    }
    let data_dir = manifest_dir().join("tests/data/corpus");
    let pods = read_json(&data_dir.join("pods.json"));
    let expected = read_json(&data_dir.join("expected.json"));
    let files = shared.join("istio/manifests/charts/istio-control/istio-discovery/files");
    let mut templates: BTreeMap<String, gotemplate::Template> = BTreeMap::new();
    let (mut passed, mut failures) = (0, vec![]);
    for row in expected.as_array().unwrap() {
        let s = |k: &str| row[k].as_str().unwrap_or("").to_string();
        let template = templates.entry(s("template")).or_insert_with(|| {
            let text = std::fs::read_to_string(files.join(s("template"))).unwrap();
            render::parse_template(&format!("{}\n", text.trim())).unwrap()
        });
        let fixture = serde_json::json!({
            "valuesFile": format!("istio/derived/values/{}.json", s("values")),
            "meshFile": "istio/derived/mesh/default.yaml",
            "revision": "default",
            "nativeSidecars": row["native"],
            "compliancePolicy": "",
            "pod": pods[s("pod")],
        });
        let data = sidecar_data(&fixture, &shared).unwrap();
        let mut out = String::new();
        let error = template.execute_to(&mut out, &data).err().map(|e| e.to_string());
        let digest: String = sha2::Sha256::digest(out.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if digest == s("sha256") && error.as_deref() == row["error"].as_str() {
            passed += 1;
        } else {
            failures.push(format!(
                "{} ({} bytes, want {}; error {error:?})",
                s("name"),
                out.len(),
                row["bytes"]
            ));
        }
    }
    eprintln!("corpus: {passed} renders match Go, {} differ", failures.len());
    assert!(failures.is_empty(), "{failures:#?}");
}
