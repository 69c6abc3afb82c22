//! What `serve` writes on start when its stderr is redirected to a file: no ANSI escape codes
//! (even without `NO_COLOR`), where it listens, one line on how to try it, the CA as a file path
//! and a one-line fingerprint (never PEM), and RFC 3339 times.

use std::{
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use crate::util::{Files, free_port};

struct Stopped(Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `serve` with `args`, stderr into a file, and returns that file's text once the
/// "try it" line is there (or after 30 s).
fn startup_log(files: &Files, args: &[&str]) -> String {
    let log = files.write("serve.log", "");
    let stderr = std::fs::File::create(&log).expect("the log file");
    let (port, monitoring) = (free_port(), free_port());
    let child = Command::new(env!("CARGO_BIN_EXE_sidecar-injector"))
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .args(["--monitoring-addr", &format!("127.0.0.1:{monitoring}")])
        .args(args)
        .env_remove("NO_COLOR")
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("serve starts");
    let _stopped = Stopped(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("try it: ") || Instant::now() > deadline {
            return text;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn redirected_stderr_has_no_escape_codes_and_says_how_to_try_it() {
    let files = Files::new();
    let ca = format!("{}/ca.pem", files.dir().display());
    let log = startup_log(&files, &["--write-ca", &ca]);
    assert!(log.contains("try it: "), "no \"try it\" line within 30 s:\n{log}");
    assert!(
        !log.contains('\u{1b}'),
        "escape codes in a redirected log:\n{log:?}"
    );
    assert!(log.contains("webhook listening (HTTPS)"), "{log}");
    assert!(log.contains(&format!("ca_file={ca}")), "{log}");
    assert!(log.contains(&format!("--cacert {ca}")), "{log}");
    assert!(log.contains("ca_sha256="), "{log}");
    assert!(!log.contains("BEGIN CERTIFICATE"), "PEM in the log:\n{log}");
    for line in log.lines() {
        let time = line.split_whitespace().next().unwrap_or("");
        assert!(
            time.len() >= 20
                && time.as_bytes()[4] == b'-'
                && time.as_bytes()[10] == b'T'
                && time.ends_with('Z'),
            "not an RFC 3339 time at the start of {line:?}"
        );
    }
    let not_after = log
        .split("not_after=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no not_after field:\n{log}"));
    assert!(
        not_after.len() == 20 && not_after.as_bytes()[10] == b'T' && not_after.ends_with('Z'),
        "not_after is not RFC 3339: {not_after}"
    );
}

#[test]
fn without_write_ca_the_ca_is_a_fingerprint_never_pem() {
    let files = Files::new();
    let log = startup_log(&files, &["--log-format", "json"]);
    assert!(log.contains("try it: "), "{log}");
    assert!(!log.contains("BEGIN CERTIFICATE"), "PEM in the log:\n{log}");
    assert!(log.contains("\"ca_sha256\""), "{log}");
    assert!(log.contains("--write-ca"), "{log}");
    for line in log.lines() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let time = value["timestamp"].as_str().unwrap_or("");
        assert!(
            time.ends_with('Z') && time.as_bytes().get(10) == Some(&b'T'),
            "{line}"
        );
    }
}

fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::symlink_metadata(path).expect("exists").mode() & 0o7777
}

#[test]
fn write_ca_never_writes_through_planted_files_and_refuses_a_readable_key() {
    use std::os::unix::fs::PermissionsExt as _;
    let files = Files::new();
    let dir = files.dir();
    let ca = format!("{}/ca.pem", dir.display());
    let key = format!("{ca}.key");
    // What a local attacker could plant where the injector used to write its temporary files.
    let victim = files.write("victim", "the victim's content");
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let planted = files.write("ca.pem.tmp", "");
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    std::os::unix::fs::symlink(&victim, format!("{key}.tmp")).expect("symlink");

    let log = startup_log(&files, &["--write-ca", &ca]);
    assert!(log.contains("try it: "), "{log}");
    assert_eq!(mode(key.as_ref()), 0o600, "the CA key is owner-only");
    assert!(
        std::fs::read_to_string(&key)
            .expect("key")
            .contains("PRIVATE KEY")
    );
    assert_eq!(
        std::fs::read_to_string(&victim).expect("victim"),
        "the victim's content"
    );
    assert_eq!(mode(victim.as_ref()), 0o640);

    // A key others can read is refused, naming the file and the fix; nothing is replaced.
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let before = std::fs::read_to_string(&key).expect("key");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sidecar-injector"))
        .args(["serve", "--addr", &format!("127.0.0.1:{}", free_port())])
        .args(["--monitoring-addr", &format!("127.0.0.1:{}", free_port())])
        .args(["--write-ca", &ca])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("waits") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("serve started with a world-readable CA key");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr).expect("read");
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains(&key) && stderr.contains("mode 0644") && stderr.contains("chmod 600"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&key).expect("key"),
        before,
        "the key is kept"
    );
}
