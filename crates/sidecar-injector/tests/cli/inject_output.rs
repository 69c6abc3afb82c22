//! `inject -o`: the user's files are safe. Permissions are kept, symlinks, FIFOs and
//! `/dev/stdout` are written through (not replaced by regular files), `-o -` is standard output,
//! and a failing run changes nothing and leaves no temporary file behind.

use std::{
    io::Read,
    os::unix::fs::{PermissionsExt, symlink},
    path::Path,
    process::Command,
};

use crate::util::{Files, example, run};

fn mode(path: &str) -> u32 {
    std::fs::metadata(path).expect("exists").permissions().mode() & 0o7777
}

fn inject_to(target: &str) -> crate::util::Output {
    run(&["inject", "-f", &example("deployment.yaml"), "-o", target], "")
}

/// A stream whose second document cannot be injected.
fn failing_input(files: &Files) -> String {
    let deployment = std::fs::read_to_string(example("deployment.yaml")).expect("the example");
    files.write(
        "bad.yaml",
        &format!("{deployment}---\napiVersion: v1\nkind: ReplicationController\nmetadata: {{name: rc}}\nspec: {{}}\n"),
    )
}

#[test]
fn a_private_file_stays_private() {
    let files = Files::new();
    let target = files.write("secret.yaml", "old\n");
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let out = inject_to(&target);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        std::fs::read_to_string(&target)
            .expect("read")
            .contains("name: istio-proxy")
    );
    assert_eq!(mode(&target), 0o600);
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    assert_eq!(inject_to(&target).code, 0);
    assert_eq!(mode(&target), 0o640);
    assert_eq!(files.leftovers(), ["secret.yaml"]);
}

#[test]
fn a_new_file_gets_the_umask_default() {
    let files = Files::new();
    let umask = Command::new("sh")
        .args(["-c", "umask"])
        .output()
        .expect("sh runs");
    let umask = u32::from_str_radix(String::from_utf8_lossy(&umask.stdout).trim(), 8).expect("octal");
    let target = files.path("new.yaml");
    let out = inject_to(&target);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(mode(&target), 0o666 & !umask);
}

#[test]
fn a_symlink_is_written_through_and_kept() {
    let files = Files::new();
    let real = files.write("real.yaml", "old\n");
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let link = files.path("link.yaml");
    symlink("real.yaml", &link).expect("symlink");
    let out = inject_to(&link);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let link_metadata = std::fs::symlink_metadata(&link).expect("the link");
    assert!(
        link_metadata.file_type().is_symlink(),
        "the link was replaced by a file"
    );
    assert!(
        std::fs::read_to_string(&real)
            .expect("read")
            .contains("name: istio-proxy")
    );
    assert_eq!(mode(&real), 0o600);
    // A dangling link: its target is created.
    let dangling = files.path("dangling.yaml");
    symlink("created.yaml", &dangling).expect("symlink");
    assert_eq!(inject_to(&dangling).code, 0);
    assert!(
        std::fs::symlink_metadata(&dangling)
            .expect("link")
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::read_to_string(files.path("created.yaml"))
            .expect("created")
            .contains("istio-proxy")
    );
    assert_eq!(
        files.leftovers(),
        ["created.yaml", "dangling.yaml", "link.yaml", "real.yaml"]
    );
}

#[test]
fn a_fifo_is_written_through() {
    let files = Files::new();
    let fifo = files.path("pipe");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            std::fs::File::open(&fifo)
                .expect("the FIFO opens")
                .read_to_string(&mut text)
                .expect("the FIFO is read");
            text
        })
    };
    let out = inject_to(&fifo);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = reader.join().expect("the reader finishes");
    assert!(text.contains("name: istio-proxy"), "{text}");
    let metadata = std::fs::symlink_metadata(&fifo).expect("still there");
    assert!(!metadata.is_file(), "the FIFO was replaced by a regular file");
    assert_eq!(files.leftovers(), ["pipe"]);
}

#[test]
fn dash_and_dev_stdout_are_standard_output() {
    let files = Files::new();
    for target in ["-", "/dev/stdout"] {
        let out = run(&["inject", "-f", &example("deployment.yaml"), "-o", target], "");
        assert_eq!(out.code, 0, "{target}: {}", out.stderr);
        assert!(
            out.stdout.contains("name: istio-proxy"),
            "{target}: {}",
            out.stdout
        );
    }
    assert!(!Path::new("-").exists(), "a file named - was written");
    // A failure writes nothing to standard output either.
    let bad = failing_input(&files);
    run(&["inject", "-f", &bad, "-o", "/dev/stdout"], "").assert_error(&["document 2"]);
    run(&["inject", "-f", &bad, "-o", "-"], "").assert_error(&["document 2"]);
}

#[test]
fn a_failure_leaves_the_file_and_its_directory_as_they_were() {
    let files = Files::new();
    let target = files.write("out.yaml", "previous\n");
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let bad = failing_input(&files);
    run(&["inject", "-f", &bad, "-o", &target], "").assert_error(&["bad.yaml: document 2"]);
    assert_eq!(std::fs::read_to_string(&target).expect("kept"), "previous\n");
    assert_eq!(mode(&target), 0o600);
    assert_eq!(files.leftovers(), ["bad.yaml", "out.yaml"]);
    // A directory is not a file to write.
    let out = run(
        &["inject", "-f", &example("deployment.yaml"), "-o", &files.path("")],
        "",
    );
    out.assert_error(&["is a directory"]);
}

#[test]
fn a_planted_symlink_with_the_old_temporary_name_is_not_followed() {
    // The temporary file's name was once `.NAME.PID.tmp`: predictable, opened without O_EXCL.
    // Whatever sits in the directory now, the temporary file is a new one of its own.
    // Links are planted for the next few hundred process ids, so that the child's is among them.
    let files = Files::new();
    let victim = files.write("victim", "untouched\n");
    let target = files.path("out.yaml");
    let last_pid: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(1);
    const PLANTED: u32 = 500;
    for pid in last_pid + 1..=last_pid + PLANTED {
        symlink(&victim, files.path(&format!(".out.yaml.{pid}.tmp"))).expect("symlink");
    }
    assert_eq!(inject_to(&target).code, 0);
    assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "untouched\n");
    assert!(
        std::fs::read_to_string(&target)
            .expect("written")
            .contains("istio-proxy")
    );
    assert_eq!(files.leftovers().len(), 2 + PLANTED as usize);
}
