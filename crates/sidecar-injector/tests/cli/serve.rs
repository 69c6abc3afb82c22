//! `sidecar-injector serve`: the real binary, real TLS (its self-generated CA), a real client
//! (curl), an AdmissionReview in, a JSON Patch out that turns the pod into an injected pod.

use std::{
    process::Command,
    time::{Duration, Instant},
};

use serde_json::json;

use crate::{
    served::{Served, curl, have_curl, patch_of},
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
    let patch = patch_of(&response);
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

#[test]
fn a_client_ca_file_without_a_ca_stops_serve_naming_it() {
    let files = crate::util::Files::new();
    let bad = files.write("client-ca.pem", "not a certificate");
    let out = Command::new(env!("CARGO_BIN_EXE_sidecar-injector"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--monitoring-addr",
            "127.0.0.1:0",
        ])
        .arg("--client-ca")
        .arg(&bad)
        .output()
        .expect("sidecar-injector runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("--client-ca {bad}: no CERTIFICATE block")),
        "{stderr}"
    );
}

/// A replica of one Deployment as the API server sends it to the webhook: ServiceAccount
/// admission named its token volume, and the field manager stamped `managedFields` with the
/// second it wrote them.
fn replica_review(uid: &str, token: &str, written_at: &str) -> serde_json::Value {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": "web-5d8f9c-", "labels": {"app": "web", "pod-template-hash": "5d8f9c"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f9c",
                                          "uid": "0e6c", "controller": true}],
                     "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                                        "apiVersion": "v1", "time": written_at, "fieldsType": "FieldsV1",
                                        "fieldsV1": {"f:metadata": {"f:generateName": {}}}}]},
        "spec": {"containers": [{"name": "web", "image": "nginx",
                                 "volumeMounts": [{"name": token, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                                   "readOnly": true}]}],
                 "volumes": [{"name": token, "projected": {"defaultMode": 420, "sources": [
                     {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}]}});
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": uid, "namespace": "shop", "operation": "CREATE",
                    "kind": {"group": "", "version": "v1", "kind": "Pod"}, "object": pod}})
}

fn cache_hits(served: &Served) -> String {
    served
        .metrics()
        .lines()
        .find(|line| line.starts_with("sidecar_injection_cache_hits_total "))
        .unwrap_or_default()
        .to_owned()
}

/// Tried as a new user would scale a Deployment: no two of its pods are byte-identical (each has
/// a token volume of its own name, and `managedFields` carry the second they were written), yet
/// after the first, every replica is answered from the outcome cache, with its own volume name
/// in the patch, exactly what the engine computes for it.
#[test]
fn the_replicas_of_a_deployment_are_answered_from_the_outcome_cache_with_their_own_token_volume() {
    if !have_curl() {
        return;
    }
    let (files, reference_files) = (Files::new(), Files::new());
    let cached = Served::start(&files, &[]);
    let reference = Served::start(&reference_files, &["--outcome-cache-mib", "0"]);
    let replicas = [
        ("kube-api-access-7xk2p", "2026-12-04T10:00:00Z"),
        ("kube-api-access-b4zqq", "2026-12-04T10:00:00Z"),
        ("kube-api-access-x9wlr", "2026-12-04T10:00:01Z"),
        ("kube-api-access-2c6gn", "2026-12-04T10:00:02Z"),
    ];
    for (i, (token, written_at)) in replicas.iter().enumerate() {
        let review = files.write(
            &format!("replica-{i}.json"),
            &replica_review(&format!("uid-{i}"), token, written_at).to_string(),
        );
        let (ours, engine) = (cached.admit(&review), reference.admit(&review));
        assert_eq!(ours["response"]["uid"], format!("uid-{i}"));
        assert_eq!(ours["response"]["patch"], engine["response"]["patch"], "{token}");
        let patch = patch_of(&ours);
        assert!(
            String::from_utf8_lossy(&patch).contains(token),
            "{token}: the pod's own volume"
        );
    }
    assert_eq!(cache_hits(&cached), "sidecar_injection_cache_hits_total 3");

    // The name anywhere else in the pod: not taken out, so not answered from the cache.
    let mut labelled = replica_review("uid-9", "kube-api-access-q5v8m", "2026-12-04T10:00:03Z");
    labelled["request"]["object"]["metadata"]["labels"]["volume"] = json!("kube-api-access-q5v8m");
    let review = files.write("labelled.json", &labelled.to_string());
    assert_eq!(
        cached.admit(&review)["response"]["patch"],
        reference.admit(&review)["response"]["patch"]
    );
    assert_eq!(cache_hits(&cached), "sidecar_injection_cache_hits_total 3");
}

/// Tried as a new user would run an Indexed Job with the outcome cache off: its pods differ in
/// their completion index (label, annotation, `generateName`, hostname, an env value) and token
/// volume, so from the second on they take the first one's render, each with its own values;
/// `--render-cache-mib 0` renders each on its own and answers the same bytes.
#[test]
fn a_jobs_pods_take_one_render_and_the_render_cache_can_be_turned_off() {
    if !have_curl() {
        return;
    }
    let (files, reference_files) = (Files::new(), Files::new());
    let served = Served::start(&files, &["--outcome-cache-mib", "0"]);
    let reference = Served::start(
        &reference_files,
        &["--outcome-cache-mib", "0", "--render-cache-mib", "0"],
    );
    for index in 0..5 {
        let mut review = replica_review(
            &format!("job-{index}"),
            &format!("kube-api-access-j{index:04}"),
            "2026-12-04T10:00:00Z",
        );
        let pod = &mut review["request"]["object"];
        pod["metadata"]["generateName"] = json!(format!("batch-{index}-"));
        pod["metadata"]["ownerReferences"][0] = json!({"apiVersion": "batch/v1", "kind": "Job", "name": "batch", "uid": "7a1c", "controller": true});
        pod["metadata"]["labels"] =
            json!({"job-name": "batch", "batch.kubernetes.io/job-completion-index": index.to_string()});
        pod["metadata"]["annotations"] =
            json!({"batch.kubernetes.io/job-completion-index": index.to_string()});
        pod["spec"]["hostname"] = json!(format!("batch-{index}"));
        pod["spec"]["containers"][0]["env"] =
            json!([{"name": "SHARD", "value": format!("shard \"{index}\"")}]);
        let file = files.write(&format!("job-{index}.json"), &review.to_string());
        let (ours, own) = (served.admit(&file), reference.admit(&file));
        assert_eq!(ours["response"]["allowed"], true, "job-{index}");
        assert_eq!(ours["response"]["patch"], own["response"]["patch"], "job-{index}");
        let patch = patch_of(&ours);
        assert!(
            String::from_utf8_lossy(&patch).contains(&format!("kube-api-access-j{index:04}")),
            "job-{index}: its own token volume in its patch"
        );
    }
    // Every admission counted once: the first rendered, the others from the kept render; without
    // the render cache, every one rendered.
    for (server, lines) in [
        (
            &served,
            [
                "sidecar_injector_renders_total{source=\"rendered\"} 1",
                "sidecar_injector_renders_total{source=\"kept\"} 4",
            ],
        ),
        (
            &reference,
            [
                "sidecar_injector_renders_total{source=\"rendered\"} 5",
                "sidecar_injector_renders_total{source=\"kept\"} 0",
            ],
        ),
    ] {
        let metrics = server.metrics();
        for line in lines {
            assert!(metrics.lines().any(|l| l == line), "{line} in:\n{metrics}");
        }
    }
}

/// Tried as a new user would look at the render cache: with the outcome cache off, a
/// Deployment's second replica takes its first one's render, and a StatefulSet's pods share
/// one; `/metrics` says where each injection's renders came from and what the cache holds.
#[test]
fn metrics_say_where_each_injections_renders_came_from() {
    if !have_curl() {
        return;
    }
    let files = Files::new();
    let served = Served::start(&files, &["--outcome-cache-mib", "0"]);
    let replicas = [
        ("uid-0", "kube-api-access-7xk2p"),
        ("uid-1", "kube-api-access-b4zqq"),
    ];
    for (uid, token) in replicas {
        let review = files.write(
            &format!("{uid}.json"),
            &replica_review(uid, token, "2026-12-04T10:00:00Z").to_string(),
        );
        assert_eq!(served.admit(&review)["response"]["allowed"], true);
    }
    for i in 0..3 {
        let mut review = replica_review(
            &format!("db-{i}"),
            "kube-api-access-x9wlr",
            "2026-12-04T10:00:00Z",
        );
        let metadata = review["request"]["object"]["metadata"]
            .as_object_mut()
            .expect("metadata");
        metadata.shift_remove("generateName");
        metadata.insert("name".to_owned(), json!(format!("db-{i}")));
        metadata["ownerReferences"][0] = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db",
                                                "uid": "5b1a", "controller": true});
        let review = files.write(&format!("db-{i}.json"), &review.to_string());
        let response = served.admit(&review);
        let patch = patch_of(&response);
        assert!(
            String::from_utf8_lossy(&patch).contains(&format!("\"db-{i}\"")),
            "db-{i}: its own name in its patch"
        );
    }
    let metrics = served.metrics();
    for line in [
        "# TYPE sidecar_injector_renders_total counter",
        "sidecar_injector_renders_total{source=\"rendered\"} 2",
        "sidecar_injector_renders_total{source=\"kept\"} 1",
        "sidecar_injector_renders_total{source=\"shared\"} 2",
        "sidecar_injector_render_cache_evictions_total 0",
        "sidecar_injector_render_cache_entries 2",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in:\n{metrics}");
    }
    let bytes = metrics
        .lines()
        .find_map(|line| line.strip_prefix("sidecar_injector_render_cache_bytes "))
        .and_then(|bytes| bytes.parse::<u64>().ok())
        .expect("the cache's bytes are exported");
    assert!(bytes > 0 && bytes <= 16 << 20, "{bytes}");
}
