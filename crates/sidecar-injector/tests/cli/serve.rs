//! `sidecar-injector serve`: the real binary, real TLS (its self-generated CA), a real client
//! (curl), an AdmissionReview in, a JSON Patch out that turns the pod into an injected pod.

use std::{
    net::TcpListener,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::util::Files;

/// A free loopback port (bound and released; the server binds it right after).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

struct Served {
    child: Child,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn curl(args: &[&str]) -> (i32, String) {
    let output = Command::new("curl")
        .args(["-sS", "--max-time", "10"])
        .args(args)
        .output()
        .expect("curl runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn serves_admission_reviews_over_verified_tls() {
    if Command::new("curl")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_err()
    {
        eprintln!("curl is not installed: skipping (.ci/run installs it)");
        return;
    }
    let files = Files::new();
    let ca = files.write("ca.pem", "");
    std::fs::remove_file(&ca).expect("the CA file is created by the server");
    let (port, monitoring) = (free_port(), free_port());
    let child = Command::new(env!("CARGO_BIN_EXE_sidecar-injector"))
        .args([
            "serve",
            "--addr",
            &format!("127.0.0.1:{port}"),
            "--monitoring-addr",
            &format!("127.0.0.1:{monitoring}"),
        ])
        .args(["--write-ca", &ca, "--log-format", "json"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve starts");
    let served = Served { child };

    let ready = Instant::now();
    loop {
        let (code, body) = curl(&[&format!("http://127.0.0.1:{monitoring}/readyz")]);
        if code == 0 && body.contains("\"ready\":true") {
            break;
        }
        assert!(
            ready.elapsed() < Duration::from_secs(60),
            "not ready after 60 s: {body}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "nginx", "futureField": "kept"}]}});
    let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "8d9d2a61", "namespace": "shop", "operation": "CREATE",
                    "kind": {"group": "", "version": "v1", "kind": "Pod"}, "object": pod}});
    let review_file = files.write("review.json", &review.to_string());
    let (code, body) = curl(&[
        "--cacert",
        &ca,
        "-H",
        "Content-Type: application/json",
        "--data-binary",
        &format!("@{review_file}"),
        &format!("https://127.0.0.1:{port}/inject"),
    ]);
    assert_eq!(code, 0, "curl over verified TLS: {body}");
    let response: Value = serde_json::from_str(&body).expect("a JSON AdmissionReview");
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
