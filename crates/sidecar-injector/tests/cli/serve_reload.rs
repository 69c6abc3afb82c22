//! `serve --injector-config`: a broken edit of the configuration file is rejected on reload.
//! The last good configuration keeps injecting, `/readyz` shows the error, and
//! `sidecar_injector_config_last_reload_success` drops to 0 — for invalid YAML, a typo'd key and
//! a truncated file, each once taken for "the bare text of a sidecar template".

use std::time::Duration;

use serde_json::{Value, json};

use crate::{
    served::{Served, have_curl, patch_of},
    util::Files,
};

const GOOD: &str = "policy: enabled\ntemplates:\n  sidecar: |\n    spec:\n      containers:\n      - name: istio-proxy\n        image: example.com/proxyv2:good\n";

/// The bad edits, each with a fragment its error must contain.
const BAD: [(&str, &str, &str); 3] = [
    (
        "invalid YAML (the reproduction)",
        "policy: [enabled\n  templates: {\n",
        "line",
    ),
    (
        "a typo'd key",
        "policy: enabled\ntemplate:\n  sidecar: |\n    spec:\n      containers:\n      - name: istio-proxy\n",
        "did you mean `templates:`",
    ),
    (
        "a truncated file",
        "policy: enabled\ntemplates: {sidecar: \"spec:\\n  containers:\\n  - name: istio-pro",
        "document 1",
    ),
];

/// The names of the containers the admission's patch adds (the patch applied to the pod).
fn injected_containers(served: &Served, review_file: &str, pod: &Value) -> Vec<String> {
    let response = served.admit(review_file);
    assert_eq!(response["response"]["allowed"], true, "{response}");
    let patch = patch_of(&response);
    let injected = injector_engine::patch::apply_patch(pod, &patch).expect("the patch applies");
    injected["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .filter_map(|c| c["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_broken_config_edit_is_rejected_and_the_last_good_one_keeps_injecting() {
    if !have_curl() {
        return;
    }
    let files = Files::new();
    let config = files.write("config.yaml", GOOD);
    let served = Served::start(&files, &["--injector-config", &config]);
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
        "spec": {"containers": [{"name": "web", "image": "nginx"}]}});
    let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "1", "namespace": "shop", "operation": "CREATE",
                    "kind": {"group": "", "version": "v1", "kind": "Pod"}, "object": pod}});
    let review_file = files.write("review.json", &review.to_string());
    assert_eq!(
        injected_containers(&served, &review_file, &pod),
        ["web", "istio-proxy"]
    );
    let mut generation = served.readyz()["config"]["generation"].clone();

    for (what, text, fragment) in BAD {
        std::fs::write(&config, text).expect("the bad edit is written");
        let ready = served.wait_for(&format!("rejecting {what}"), Duration::from_secs(30), |ready| {
            !ready["config"]["lastReloadError"].is_null()
        });
        let error = ready["config"]["lastReloadError"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            error.contains("config.yaml"),
            "{what}: the error names the file: {error}"
        );
        assert!(error.contains(fragment), "{what}: {error}");
        assert_eq!(
            ready["ready"], true,
            "{what}: the last good configuration still serves"
        );
        assert_eq!(
            ready["config"]["generation"], generation,
            "{what}: not swapped in"
        );
        let metrics = served.metrics();
        assert!(
            metrics.contains("sidecar_injector_config_last_reload_success 0"),
            "{what}: {metrics}"
        );
        assert_eq!(
            injected_containers(&served, &review_file, &pod),
            ["web", "istio-proxy"],
            "{what}: admissions are still injected"
        );

        // Back to the good file: accepted again.
        std::fs::write(&config, GOOD).expect("the good file is written back");
        let ready = served.wait_for("reloading the good file", Duration::from_secs(30), |ready| {
            ready["config"]["lastReloadError"].is_null()
        });
        generation = ready["config"]["generation"].clone();
        assert!(
            served
                .metrics()
                .contains("sidecar_injector_config_last_reload_success 1")
        );
    }
}
