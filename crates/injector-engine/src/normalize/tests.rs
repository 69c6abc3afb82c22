//! The Go struct round trip, against Go's own output (`tools/k8s-schema normalize`) and against
//! Istio's goldens, which are Go round-trip output themselves.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::*;

fn oracle_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/normalize")
}

#[test]
fn matches_go_on_every_oracle_case() {
    let cases: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(oracle_dir().join("cases.json")).expect("cases"))
            .expect("json");
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(oracle_dir().join("expected.json")).expect("expected"))
            .expect("json");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap_or_default();
        let root = case["root"].as_str().unwrap_or_default();
        let want = &expected[name];
        let got = normalize(root, &case["json"]);
        let ok = match (&got, want["error"].as_str()) {
            (Ok(value), None) => *value == want["json"] && to_go_json(value) == to_go_json(&want["json"]),
            (Err(error), Some(message)) => error.to_string() == message,
            _ => false,
        };
        if !ok {
            failures.push(format!("{name}: got {got:?}, want {want}"));
        }
    }
    println!(
        "{} passed, {} failed",
        cases.len() - failures.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A normalized object is normalized in place (no map is rebuilt); that path must give exactly
/// what the first pass gave, in both modes, for every oracle case.
#[test]
fn normalizing_twice_changes_nothing() {
    let cases: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(oracle_dir().join("cases.json")).expect("cases"))
            .expect("json");
    let mut checked = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap_or_default();
        let root = case["root"].as_str().unwrap_or_default();
        if name == "pod/timestamps-in-utc" {
            // A `*Time` given the zero time prints as `null`, which Go reads back as a nil pointer
            // and then omits: Go's own round trip is not idempotent there.
            continue;
        }
        for normalize_once in [normalize, normalize_preserving] {
            let Ok(once) = normalize_once(root, &case["json"]) else {
                continue;
            };
            let twice = normalize_once(root, &once).expect("a normalized object normalizes");
            assert_eq!(to_go_json(&twice), to_go_json(&once), "{name}");
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} cases normalized");
}

/// In place, a present field that normalizes to an empty value is still dropped by `omitempty`,
/// and `null` still becomes the zero value.
#[test]
fn in_place_path_applies_omitempty_and_zero_values() {
    let shaped = json!({"name": "app", "image": "", "ports": [], "resources": null, "stdin": false});
    let normalized = normalize("#Container", &shaped).expect("normalizes");
    assert_eq!(to_go_json(&normalized), r#"{"name":"app","resources":{}}"#);
    let map_values = json!({"metadata": {"labels": {"b": "2", "a": "1"}}, "spec": {"containers": null}});
    let normalized = normalize("v1/Pod", &map_values).expect("normalizes");
    assert_eq!(
        to_go_json(&normalized["metadata"]),
        r#"{"labels":{"a":"1","b":"2"}}"#
    );
}

#[test]
fn field_order_is_go_struct_order() {
    let container =
        normalize("#Container", &json!({"image": "i", "resources": {}, "name": "n"})).expect("valid");
    assert_eq!(
        to_go_json(&container),
        r#"{"name":"n","image":"i","resources":{}}"#
    );
}

#[test]
fn roots_are_found_by_api_version_and_kind() {
    assert_eq!(root_for("apps/v1", "Deployment"), Some("apps/v1/Deployment"));
    assert_eq!(
        root_for("apps.openshift.io/v1", "DeploymentConfig"),
        Some("apps.openshift.io/v1/DeploymentConfig")
    );
    assert_eq!(root_for("extensions/v1beta1", "Deployment"), None);
}

#[test]
fn hostile_nesting_is_refused_not_overflowed() {
    let mut deep = json!("x");
    for _ in 0..200 {
        deep = json!({"spec": {"template": deep}});
    }
    assert!(
        normalize(
            "v1/Pod",
            &json!({"kind": "Pod", "metadata": {"annotations": {"a": deep}}})
        )
        .is_err()
    );
}

/// Istio's goldens are Go round-trip output: normalizing them changes nothing.
#[test]
fn goldens_are_fixed_points() {
    let Some(corpus) = istio_corpus::istio_or_skip("normalize: Istio's goldens as fixed points") else {
        return;
    };
    let dir = corpus.path("pkg/kube/inject/testdata/inject");
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let (mut checked, mut failures) = (0, Vec::new());
    let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    for path in files {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        if !name.ends_with(".injected") || name.contains("openshift") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable golden");
        let Ok(documents) = injector_core::yaml::parse_documents(&text) else {
            failures.push(format!("{name}: not YAML"));
            continue;
        };
        for (index, document) in documents {
            let api_version = document["apiVersion"].as_str().unwrap_or_default();
            let kind = document["kind"].as_str().unwrap_or_default();
            let Some(root) = root_for(api_version, kind) else {
                continue;
            };
            checked += 1;
            match normalize(root, &document) {
                Ok(normalized) if normalized == document => {
                    // Again, now in struct order: the in-place path must agree.
                    let again = normalize(root, &normalized).map(|v| to_go_json(&v));
                    if again.as_ref() != Ok(&to_go_json(&normalized)) {
                        failures.push(format!("{name} #{index}: second pass differs: {again:?}"));
                    }
                }
                Ok(normalized) => {
                    failures.push(format!("{name} #{index}: changed:\n{normalized}\nvs\n{document}"))
                }
                Err(error) => failures.push(format!("{name} #{index}: {error}")),
            }
        }
    }
    println!("{} passed, {} failed", checked - failures.len(), failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(checked > 0, "no goldens in {}", dir.display());
}

#[test]
fn schema_loads() {
    let parsed: Result<Schema, _> = serde_json::from_str(SCHEMA_JSON);
    assert!(parsed.is_ok(), "{:?}", parsed.err());
}

#[test]
fn preserving_mode_keeps_unknown_fields() {
    let pod = json!({"kind": "Pod", "spec": {"containers": [{"name": "c", "futureField": {"a": 1}}], "newKnob": true}});
    let kept = normalize_preserving("v1/Pod", &pod).expect("valid");
    assert_eq!(kept["spec"]["containers"][0]["futureField"], json!({"a": 1}));
    assert_eq!(kept["spec"]["newKnob"], true);
    assert_eq!(
        kept["spec"]["containers"][0]["resources"],
        json!({}),
        "Go's zero values are still added"
    );
    let dropped = normalize("v1/Pod", &pod).expect("valid");
    assert!(dropped["spec"].get("newKnob").is_none());
}

#[test]
fn a_struct_out_of_field_order_comes_out_as_a_rebuild_would_give_it() {
    let ordered = json!({"metadata": {"name": "a", "labels": {"x": "1"}},
                         "spec": {"initContainers": [{"name": "i", "image": "x"}],
                                  "containers": [{"name": "c", "image": "y"}], "restartPolicy": "Always"}});
    let expected =
        serde_json::to_string(&normalize_preserving("v1/Pod", &ordered).expect("normalizes")).expect("text");
    // Every key names its field: moved into place.
    let shuffled = json!({"spec": {"restartPolicy": "Always", "containers": [{"image": "y", "name": "c"}],
                                   "initContainers": [{"image": "x", "name": "i"}]},
                          "metadata": {"labels": {"x": "1"}, "name": "a"}});
    let got = normalize_preserving("v1/Pod", &shuffled).expect("normalizes");
    assert_eq!(serde_json::to_string(&got).expect("text"), expected);
    // A key named case-insensitively, or one no field has, still goes through the rebuild.
    let folded = json!({"spec": {"Containers": [{"name": "c", "image": "y"}], "restartPolicy": "Always",
                                 "initContainers": [{"name": "i", "image": "x"}]},
                        "metadata": {"name": "a", "labels": {"x": "1"}}});
    let got = normalize_preserving("v1/Pod", &folded).expect("normalizes");
    assert_eq!(serde_json::to_string(&got).expect("text"), expected);
    let unknown = json!({"spec": {"zzUnknown": 1, "restartPolicy": "Always", "containers": [{"name": "c", "image": "y"}]}});
    let got = normalize_preserving("v1/Pod", &unknown).expect("normalizes");
    let keys: Vec<&String> = got["spec"].as_object().expect("spec").keys().collect();
    assert_eq!(
        keys.last().map(|k| k.as_str()),
        Some("zzUnknown"),
        "an unknown field goes last: {keys:?}"
    );
}
