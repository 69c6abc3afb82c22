//! `sidecar-injector serve`: the real binary, real TLS (its self-generated CA), a real client
//! (curl), an AdmissionReview in, a JSON Patch out that turns the pod into an injected pod.

use std::{
    process::Command,
    time::{Duration, Instant},
};

use base64::Engine as _;
use serde_json::json;

use crate::{
    served::{Served, curl, have_curl},
    util::Files,
};

#[test]
fn serves_admission_reviews_over_verified_tls() {
    if !have_curl() {
        return;
    }
    let files = Files::new();
    let served = Served::start(&files, &[]);
    let (ca, port, monitoring) = (served.ca.clone(), served.port, served.monitoring);

    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "nginx", "futureField": "kept"}]}});
    let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "8d9d2a61", "namespace": "shop", "operation": "CREATE",
                    "kind": {"group": "", "version": "v1", "kind": "Pod"}, "object": pod}});
    let review_file = files.write("review.json", &review.to_string());
    let response = served.admit(&review_file);
    assert_eq!(response["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(response["response"]["uid"], "8d9d2a61");
    assert_eq!(response["response"]["allowed"], true);
    assert_eq!(response["response"]["patchType"], "JSONPatch");
    let patch = base64::engine::general_purpose::STANDARD
        .decode(response["response"]["patch"].as_str().expect("a patch"))
        .expect("base64");
    let injected =
        injector_engine::patch::apply_patch(&pod, &patch).expect("the patch applies to the pod as sent");
    let names: Vec<&str> = injected["spec"]["initContainers"]
        .as_array()
        .expect("init containers")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["istio-init", "istio-proxy"]);
    assert_eq!(injected["spec"]["containers"][0]["futureField"], "kept");

    // Wrong content type: 415, like Istio.
    let (_, status) = curl(&[
        "--cacert",
        &ca,
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "-H",
        "Content-Type: text/plain",
        "--data",
        "{}",
        &format!("https://127.0.0.1:{port}/inject"),
    ]);
    assert_eq!(status, "415");
    let (_, metrics) = curl(&[&format!("http://127.0.0.1:{monitoring}/metrics")]);
    assert!(
        metrics.contains("sidecar_injection_requests_total 2"),
        "{metrics}"
    );

    // SIGTERM drains and exits cleanly.
    let mut served = served;
    let pid = served.child.id().to_string();
    Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill runs");
    let stopped = Instant::now();
    loop {
        if let Some(status) = served.child.try_wait().expect("waits") {
            assert!(status.success(), "serve exits 0 on SIGTERM: {status}");
            break;
        }
        assert!(
            stopped.elapsed() < Duration::from_secs(30),
            "serve did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_probe_needs_cluster_mode() {
    let out = Command::new(env!("CARGO_BIN_EXE_sidecar-injector"))
        .args(["serve", "--probe-namespace", "probe"])
        .output()
        .expect("sidecar-injector runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--probe-namespace and --probe-opted-out-namespace need --cluster"),
        "{stderr}"
    );
}
