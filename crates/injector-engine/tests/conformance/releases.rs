//! The release matrix: every golden of Istio's default profile, of every Istio release at hand,
//! through the engine, both paths (kube-inject compared as text, the webhook's pod as Istio's
//! test compares it), with the settings that release's own chart renders.
//!
//! The releases: each folder of `$SIDECAR_INJECTOR_SHARED/istio-releases/` (`inject/` and
//! `settings/`), Istio's master branch (`$SIDECAR_INJECTOR_SHARED/istio`) and the Go module
//! `istio.io/istio` at the version `tools/istio-webhook/go.mod` pins. The cases are the default
//! profile's of Istio's test table (master's, which names the same files in every release; a
//! case whose input or golden a release lacks is not run for it). What differs between releases
//! and how the comparison allows for it is in `docs/compatibility.md` and [`golden_as`].
//!
//! It prints one line per release: goldens run, passed.

use std::collections::BTreeSet;

use istio_corpus::{Corpus, Release};

use super::*;

/// One release's goldens: where its files are and which cases to run.
struct Target {
    name: String,
    root: PathBuf,
    /// `(major, minor)` for a numbered release; `None` for master and the pinned module.
    minor: Option<(u32, u32)>,
    cases: Vec<Value>,
}

/// The cases of the default profile that need no other parameter, one per distinct run.
fn default_profile(table: &Value) -> Vec<Value> {
    let mut seen = BTreeSet::new();
    table["cases"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|case| {
            let p = &case["params"];
            case["suite"] != "istioctl TestKubeInject"
                && p["profile"] == "default"
                && p["meshOverlay"].is_null()
                && p["compliancePolicy"].as_str().unwrap_or("").is_empty()
                && p["platform"].as_str().unwrap_or("").is_empty()
                && p["kubeInjectRevision"].as_str().unwrap_or("").is_empty()
                && p["webhookRevision"] == "default"
        })
        .filter(|case| {
            let p = &case["params"];
            seen.insert(format!(
                "{} {} {} {} {}",
                case["input"], case["golden"], p["nativeSidecars"], p["kubeInject"], p["webhook"]
            ))
        })
        .cloned()
        .collect()
}

fn file_name(path: &Value) -> Option<&str> {
    path.as_str().and_then(|p| p.rsplit('/').next())
}

/// Whether the golden was made with native sidecars on: its `istio-proxy` is an init container
/// with `restartPolicy: Always`.
fn native_golden(path: &Path) -> bool {
    injectable_documents(&read(path))
        .iter()
        .filter_map(object_to_pod)
        .any(|pod| {
            pod.pointer("/spec/initContainers")
                .and_then(Value::as_array)
                .is_some_and(|list| {
                    list.iter()
                        .any(|c| c["name"] == "istio-proxy" && c["restartPolicy"] == "Always")
                })
        })
}

/// `cases` moved to a release's folder: input and golden under `inject/`, settings under
/// `settings/`; the cases whose files the release lacks are left out. Up to 1.26 native sidecars
/// were off by default and Istio's test turned them on per case (`ENABLE_NATIVE_SIDECARS=true`):
/// there the setting is the golden's own.
fn for_release(cases: &[Value], release: &Release) -> Vec<Value> {
    cases
        .iter()
        .filter_map(|case| {
            let mut case = case.clone();
            let input = format!("inject/{}", file_name(&case["input"])?);
            if !release.dir.join(&input).is_file() {
                return None;
            }
            if let Some(golden) = file_name(&case["golden"]) {
                let golden = format!("inject/{golden}");
                if !release.dir.join(&golden).is_file() {
                    return None;
                }
                if release.minor() <= (1, 26) {
                    case["params"]["nativeSidecars"] = json!(native_golden(&release.dir.join(&golden)));
                }
                case["golden"] = json!(golden);
            }
            case["input"] = json!(input);
            let params = &mut case["params"];
            params["config"] = json!("settings/config.yaml");
            params["values"] = json!("settings/values.json");
            params["mesh"] = json!("settings/mesh.yaml");
            Some(case)
        })
        .collect()
}

/// A golden as this engine's output is compared with it, for the release that wrote it: releases
/// up to 1.27 print `creationTimestamp: null` in the metadata of kube-inject's output (their
/// Kubernetes libraries did; later ones omit it, as this injector does). The field carries no
/// value, so it is taken out of those goldens (a `metadata:` left empty becomes `metadata: {}`).
fn golden_as(minor: Option<(u32, u32)>) -> impl Fn(String) -> String {
    move |golden: String| {
        if minor.is_none_or(|m| m > (1, 27)) {
            return golden;
        }
        let indent = |line: &str| line.len() - line.trim_start().len();
        let lines: Vec<&str> = golden.lines().collect();
        let mut out: Vec<String> = Vec::with_capacity(lines.len());
        for (i, line) in lines.iter().enumerate() {
            if line.trim() != "creationTimestamp: null" {
                out.push((*line).to_owned());
                continue;
            }
            let next_is_sibling = lines.get(i + 1).is_some_and(|next| indent(next) >= indent(line));
            if let Some(parent) = out.last_mut()
                && parent.ends_with(':')
                && !next_is_sibling
            {
                parent.push_str(" {}");
            }
        }
        out.join("\n")
    }
}

fn table(corpus: &Corpus) -> Value {
    let path = corpus.case_table();
    serde_json::from_str(&read(&path)).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Runs one release's cases; the number of goldens passed, and what failed.
fn run(target: &Target) -> (usize, Vec<String>) {
    let golden_as = golden_as(target.minor);
    let (mut passed, mut failures) = (0, Vec::new());
    for case in &target.cases {
        let params = &case["params"];
        let name = case["name"].as_str().unwrap_or_default();
        let settings = match settings(&target.root, params) {
            Ok(settings) => settings,
            Err(error) => {
                failures.push(format!("{} {name}: settings: {error}", target.name));
                continue;
            }
        };
        let mut errors = Vec::new();
        if params["kubeInject"].as_bool().unwrap_or(true)
            && let Err(error) = kube_inject_compared(&target.root, case, &settings, &golden_as)
        {
            errors.push(format!("[kube-inject] {error}"));
        }
        if params["webhook"].as_bool().unwrap_or(true)
            && params["expectedError"].is_null()
            && let Err(error) = webhook_case(&target.root, case, &settings)
        {
            errors.push(format!("[webhook] {error}"));
        }
        if errors.is_empty() {
            passed += 1;
        } else {
            failures.push(format!("{} {name}: {}", target.name, errors.join("\n")));
        }
    }
    (passed, failures)
}

#[test]
fn istio_release_matrix() {
    let shared = istio_corpus::shared_istio();
    let module = istio_corpus::module_proxy();
    let releases = istio_corpus::releases();
    if module.is_none() {
        istio_corpus::unavailable("release matrix: the pinned istio.io/istio module's goldens");
    }
    if releases.is_empty() {
        istio_corpus::skip_or_fail(&format!(
            "release matrix: no release goldens in {}/istio-releases (set SIDECAR_INJECTOR_SHARED)",
            istio_corpus::shared_dir().display()
        ));
    }
    // Master's table names the default profile's cases; every release runs those it has files for.
    let Some(master_cases) = shared
        .as_ref()
        .or(module.as_ref())
        .map(|c| default_profile(&table(c)))
    else {
        return;
    };
    let mut targets: Vec<Target> = releases
        .iter()
        .map(|release| Target {
            name: release.version.clone(),
            root: release.dir.clone(),
            minor: Some(release.minor()),
            cases: for_release(&master_cases, release),
        })
        .collect();
    if let Some(shared) = &shared {
        targets.push(Target {
            name: "master".to_owned(),
            root: shared.root.clone(),
            minor: None,
            cases: master_cases.clone(),
        });
    }
    if let Some(module) = &module {
        let istio_corpus::Source::ModuleProxy(version) = &module.source else {
            unreachable!("module_proxy() gives a module's corpus");
        };
        targets.push(Target {
            name: format!("istio.io/istio@{version}"),
            root: module.root.clone(),
            minor: None,
            cases: default_profile(&table(module)),
        });
    }
    let mut failures = Vec::new();
    println!("Istio release matrix (default profile's goldens):");
    for target in &targets {
        let (passed, failed) = run(target);
        println!(
            "  {:<45} {:>3} goldens run, {:>3} passed",
            target.name,
            target.cases.len(),
            passed
        );
        assert!(
            !target.cases.is_empty(),
            "release {}: no golden of the default profile found under {}",
            target.name,
            target.root.display()
        );
        failures.extend(failed);
    }
    assert!(
        failures.is_empty(),
        "{} goldens differ:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
