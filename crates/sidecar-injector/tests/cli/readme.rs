//! The README's "Trying it with curl" commands, pasted in order into bash — run `serve`, wait for
//! `/readyz`, write the AdmissionReview, curl it — must give an injected pod's answer.
//!
//! Only what cannot be pasted as is changes: `cargo run --release --` becomes the binary under
//! test (already built), and the ports and the CA path become free ones in a temporary
//! directory, so that tests running at the same time do not collide.

use std::{
    net::TcpListener,
    path::PathBuf,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::{served::patch_of, util::Files};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The first ```sh block after the "Trying it with curl" paragraph of README.md.
fn readme_commands() -> String {
    let readme = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(&readme).expect("README.md is readable");
    let section = text
        .split_once("Trying it with curl")
        .map(|(_, rest)| rest)
        .expect("README.md has a \"Trying it with curl\" section");
    let block = section
        .split_once("```sh\n")
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .map(|(block, _)| block)
        .expect("the section has a ```sh block");
    block.to_owned()
}

#[test]
fn the_readme_curl_example_works_when_pasted() {
    if Command::new("curl")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_err()
    {
        eprintln!("curl is not installed: skipping (.ci/run installs it)");
        return;
    }
    let commands = readme_commands();
    for expected in [
        "cargo run --release -- serve",
        "/readyz",
        "cat > review.json",
        "curl --cacert",
    ] {
        assert!(
            commands.contains(expected),
            "the README's commands lack {expected:?}:\n{commands}"
        );
    }
    let readyz = commands.find("/readyz").expect("a wait");
    let post = commands.find("/inject").expect("a POST");
    assert!(readyz < post, "the README must wait for /readyz before posting");

    let files = Files::new();
    let dir = files.dir();
    let (port, monitoring) = (free_port(), free_port());
    let binary = env!("CARGO_BIN_EXE_sidecar-injector");
    let script = commands
        .replace("cargo run --release --", &format!("'{binary}'"))
        .replace("127.0.0.1:15017", &format!("127.0.0.1:{port}"))
        .replace("127.0.0.1:15014", &format!("127.0.0.1:{monitoring}"))
        .replace("/tmp/ca.pem", &format!("{}/ca.pem", dir.display()));
    // The server started with `&` is stopped when the script ends, however it ends.
    let script = format!("trap 'kill $(jobs -p) 2>/dev/null' EXIT\n{script}\n");
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash runs");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("the script can be waited for").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the README's commands did not finish within 60 s:\n{script}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = child.wait_with_output().expect("the script's output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the script failed:\n{script}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    // stdout: /readyz's JSON is not printed (-o /dev/null), then the AdmissionReview.
    let answer = stdout
        .lines()
        .rev()
        .find(|line| line.contains("AdmissionReview"))
        .unwrap_or_else(|| panic!("no AdmissionReview in stdout:\n{stdout}\nstderr:\n{stderr}"));
    let review: Value = serde_json::from_str(answer).expect("the answer is JSON");
    let response = &review["response"];
    assert_eq!(response["uid"], "1");
    assert_eq!(response["allowed"], true);
    assert_eq!(response["patchType"], "JSONPatch");
    let patch = String::from_utf8(patch_of(&review)).expect("UTF-8");
    assert!(patch.contains("istio-proxy"), "{patch}");
    assert!(stderr.contains("try it: "), "serve says how to try it:\n{stderr}");
}
