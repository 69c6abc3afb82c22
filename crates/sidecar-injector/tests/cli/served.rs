//! A running `sidecar-injector serve` on loopback ports, and curl to talk to it.

use std::{
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use base64::Engine as _;
use serde_json::Value;

use crate::util::{Files, free_port};

/// Whether curl is there (the serve tests need it; `.ci/run` installs it).
pub fn have_curl() -> bool {
    let found = Command::new("curl")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok();
    if !found {
        eprintln!("curl is not installed: skipping (.ci/run installs it)");
    }
    found
}

/// Runs curl with `args`: (exit code, stdout).
pub fn curl(args: &[&str]) -> (i32, String) {
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

/// The JSON Patch of an AdmissionReview response, base64-decoded.
pub fn patch_of(review: &Value) -> Vec<u8> {
    let patch = review["response"]["patch"].as_str().expect("a patch");
    base64::engine::general_purpose::STANDARD
        .decode(patch)
        .expect("base64")
}

/// A `serve` process, killed when dropped.
pub struct Served {
    pub child: Child,
    /// The HTTPS port.
    pub port: u16,
    /// The plain-HTTP monitoring port.
    pub monitoring: u16,
    /// The self-generated CA (PEM) to verify the server with.
    pub ca: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    /// Starts `serve` with its own CA in `files` and `extra` flags, and waits until it is ready.
    pub fn start(files: &Files, extra: &[&str]) -> Self {
        Self::start_binary(env!("CARGO_BIN_EXE_sidecar-injector"), files, extra)
    }

    /// [`Served::start`] of the sidecar-injector binary at `binary`.
    pub fn start_binary(binary: &str, files: &Files, extra: &[&str]) -> Self {
        let ca = files.write("ca.pem", "");
        std::fs::remove_file(&ca).expect("the CA file is created by the server");
        let (port, monitoring) = (free_port(), free_port());
        let child = Command::new(binary)
            .args([
                "serve",
                "--addr",
                &format!("127.0.0.1:{port}"),
                "--monitoring-addr",
                &format!("127.0.0.1:{monitoring}"),
            ])
            .args(["--write-ca", &ca, "--log-format", "json"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve starts");
        let served = Served {
            child,
            port,
            monitoring,
            ca,
        };
        served.wait_for("ready", Duration::from_secs(60), |ready| ready["ready"] == true);
        served
    }

    /// `/readyz` as JSON (`null` when it cannot be read).
    pub fn readyz(&self) -> Value {
        let (code, body) = curl(&[&format!("http://127.0.0.1:{}/readyz", self.monitoring)]);
        if code != 0 {
            return Value::Null;
        }
        serde_json::from_str(&body).unwrap_or(Value::Null)
    }

    /// `/metrics` as text.
    pub fn metrics(&self) -> String {
        curl(&[&format!("http://127.0.0.1:{}/metrics", self.monitoring)]).1
    }

    /// Polls `/readyz` until `done` holds for it; panics with `what` and the last answer after
    /// `limit`.
    pub fn wait_for(&self, what: &str, limit: Duration, done: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        loop {
            let ready = self.readyz();
            if done(&ready) {
                return ready;
            }
            assert!(start.elapsed() < limit, "not {what} after {limit:?}: {ready}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// POSTs an AdmissionReview (a file) over verified TLS and returns the response as JSON.
    pub fn admit(&self, review_file: &str) -> Value {
        let (code, body) = curl(&[
            "--cacert",
            &self.ca,
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            &format!("@{review_file}"),
            &format!("https://127.0.0.1:{}/inject", self.port),
        ]);
        assert_eq!(code, 0, "curl over verified TLS: {body}");
        serde_json::from_str(&body).expect("a JSON AdmissionReview")
    }
}
