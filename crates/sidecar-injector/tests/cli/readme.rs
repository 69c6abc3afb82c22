//! Every command README.md shows, checked. The README's `sh` blocks are read in order, and each
//! command in them must be one this test knows how to check; a new kind of command fails here
//! until it is taught.
//!
//! - The first screen holds exactly two commands, the run command and the test command, and
//!   `.ci/run` runs that same test command.
//! - The quick start is pasted into bash in order — `serve` in the background, wait for
//!   `/readyz`, write the AdmissionReview, curl it, `explain` the example — and must give an
//!   injected pod's answer and `explain`'s report. Only what cannot be pasted as is changes:
//!   `cargo run --release --` becomes the binary under test (already built), the ports and the CA
//!   path become free ones in a temporary directory (so tests running at the same time do not
//!   collide), and `examples/` the checkout's examples directory.
//! - Commands that need a cluster are checked as far as they can be without one: the files and
//!   directories they name exist, and `helm install` renders with `helm template` when Helm is at
//!   hand (`HELM`, or `tools/helm/build.sh`'s cache; `CI_REQUIRE_HELM=1` makes its absence fail).
//! - `cargo test` commands name a package and a test target that exist.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::{
    served::patch_of,
    util::{Files, free_port},
};

/// The command that runs the webhook on its embedded default, on a fresh machine.
const RUN: &str = "cargo run --release -- serve";
/// The command that runs the tests, on a fresh machine; `.ci/run` runs it too.
const TEST: &str = "cargo test --workspace";
/// How many lines of the README count as its first screen.
const FIRST_SCREEN: usize = 30;

fn checkout() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn readme() -> String {
    std::fs::read_to_string(checkout().join("README.md")).expect("README.md is readable")
}

/// A fenced `sh` block: the line its fence opens on (0-based) and its text.
struct Block {
    line: usize,
    text: String,
}

/// Every ```sh block of `text`, in order.
fn sh_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, Vec<&str>)> = None;
    for (number, line) in text.lines().enumerate() {
        match &mut open {
            None if line.trim_start().starts_with("```sh") => open = Some((number, Vec::new())),
            None => {}
            Some(_) if line.trim_start().starts_with("```") => {
                let (line, body) = open.take().expect("an open block");
                blocks.push(Block {
                    line,
                    text: body.join("\n"),
                });
            }
            Some((_, body)) => body.push(line),
        }
    }
    assert!(open.is_none(), "README.md has an unclosed ```sh block");
    blocks
}

/// The commands of a block: continuation lines joined, comments and blank lines dropped.
fn commands(block: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut current = String::new();
    for line in block.lines() {
        if line.trim_start().starts_with('#') {
            continue;
        }
        let line = match line.find(" #") {
            Some(at) if !line[..at].contains('\'') && !line[..at].contains('"') => &line[..at],
            _ => line,
        };
        let line = line.trim();
        if line.is_empty() && current.is_empty() {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(start) => {
                current.push_str(start.trim_end());
                current.push(' ');
            }
            None => {
                current.push_str(line);
                commands.push(std::mem::take(&mut current));
            }
        }
    }
    commands
}

#[test]
fn the_first_screen_gives_the_run_and_test_commands_and_ci_runs_the_test_command() {
    let text = readme();
    let first: Vec<Block> = sh_blocks(&text)
        .into_iter()
        .filter(|b| b.line < FIRST_SCREEN)
        .collect();
    let found: Vec<&str> = first.iter().map(|b| b.text.trim()).collect();
    assert_eq!(
        found,
        [RUN, TEST],
        "the README's first {FIRST_SCREEN} lines must show exactly the run and the test command"
    );
    let ci = std::fs::read_to_string(checkout().join(".ci/run")).expect(".ci/run is readable");
    assert!(
        ci.lines().any(|line| line.trim() == TEST),
        ".ci/run must run the README's test command {TEST:?} as a line of its own"
    );
}

/// The quick start: the block that starts `serve` in the background.
fn quick_start(blocks: &[Block]) -> &Block {
    let mut found = blocks.iter().filter(|b| b.text.contains(&format!("{RUN} ")));
    let block = found.next().expect("README.md has a quick start that runs serve");
    assert!(found.next().is_none(), "one quick start");
    block
}

#[test]
fn the_quick_start_works_when_pasted() {
    if Command::new("curl")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_err()
    {
        eprintln!("curl is not installed: skipping (.ci/run installs it)");
        return;
    }
    let text = readme();
    let blocks = sh_blocks(&text);
    let commands = quick_start(&blocks).text.clone();
    for expected in [
        RUN,
        "/readyz",
        "cat > review.json",
        "curl --cacert",
        "cargo run --release -- explain",
    ] {
        assert!(
            commands.contains(expected),
            "the quick start lacks {expected:?}:\n{commands}"
        );
    }
    let readyz = commands.find("/readyz").expect("a wait");
    let post = commands.find("/inject").expect("a POST");
    assert!(
        readyz < post,
        "the quick start must wait for /readyz before posting"
    );

    let files = Files::new();
    let dir = files.dir();
    let (port, monitoring) = (free_port(), free_port());
    let binary = env!("CARGO_BIN_EXE_sidecar-injector");
    let examples = checkout().join("examples");
    let script = commands
        .replace("cargo run --release --", &format!("'{binary}'"))
        .replace("127.0.0.1:15017", &format!("127.0.0.1:{port}"))
        .replace("127.0.0.1:15014", &format!("127.0.0.1:{monitoring}"))
        .replace("/tmp/ca.pem", &format!("{}/ca.pem", dir.display()))
        .replace(" examples/", &format!(" {}/", examples.display()));
    // Each command must succeed; the server started with `&` is stopped when the script ends,
    // however it ends.
    let script = format!("set -e\ntrap 'kill $(jobs -p) 2>/dev/null' EXIT\n{script}\n");
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
            panic!("the quick start did not finish within 60 s:\n{script}");
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
    // stdout: /readyz's JSON is not printed (-o /dev/null), then the AdmissionReview, then
    // explain's report.
    // explain's report, printed next, starts on the line curl's answer ends without a newline.
    let answer = stdout
        .lines()
        .find(|line| line.contains("AdmissionReview"))
        .unwrap_or_else(|| panic!("no AdmissionReview in stdout:\n{stdout}\nstderr:\n{stderr}"));
    let review: Value = serde_json::Deserializer::from_str(answer)
        .into_iter()
        .next()
        .expect("an answer")
        .expect("the answer is JSON");
    let response = &review["response"];
    assert_eq!(response["uid"], "1");
    assert_eq!(response["allowed"], true);
    assert_eq!(response["patchType"], "JSONPatch");
    let patch = String::from_utf8(patch_of(&review)).expect("UTF-8");
    assert!(patch.contains("istio-proxy"), "{patch}");
    assert!(stderr.contains("try it: "), "serve says how to try it:\n{stderr}");
    // What the README says of the example: not injected, because of the namespace's label, and
    // the annotation on the Deployment's own metadata.
    for expected in [
        "Deployment shop/web: NOT INJECTED",
        "namespaceSelector",
        "istio-injection=enabled",
        "spec.template.metadata",
        "kubectl label namespace shop istio-injection=enabled",
    ] {
        assert!(
            stdout.contains(expected),
            "explain's report lacks {expected:?}:\n{stdout}"
        );
    }
}

/// Helm: `HELM`, else the binary `tools/helm/build.sh` caches.
fn helm() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("HELM").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let home = std::env::var_os("HOME")?;
    let path = Path::new(&home).join(".cache/sidecar-injector/helm-v3.22.0/helm");
    path.is_file().then_some(path)
}

/// Every argument of `command` that names a path in the checkout must exist.
fn assert_paths_exist(command: &str) {
    for word in command.split_whitespace() {
        let word = word.trim_matches(|c| c == '\'' || c == '"');
        let is_path = ["deploy/", "tests/", "examples/", ".ci/", "crates/", "bench/"]
            .iter()
            .any(|prefix| word.starts_with(prefix));
        if is_path {
            assert!(
                checkout().join(word).exists(),
                "the README's command names {word}, which does not exist: {command}"
            );
        }
    }
}

/// `cargo test -p PACKAGE --test TARGET [FILTER]`: the package and its test target exist.
fn assert_cargo_test_target(command: &str) {
    if command == TEST {
        return;
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    let value = |flag: &str| {
        words
            .iter()
            .position(|w| *w == flag)
            .and_then(|i| words.get(i + 1))
            .copied()
            .unwrap_or_else(|| panic!("the README's {command:?} lacks {flag}"))
    };
    let crate_dir = checkout().join("crates").join(value("-p"));
    assert!(crate_dir.is_dir(), "no package {}: {command}", value("-p"));
    let target = value("--test");
    let tests = crate_dir.join("tests");
    assert!(
        tests.join(format!("{target}.rs")).is_file() || tests.join(target).join("main.rs").is_file(),
        "no test target {target} in {}: {command}",
        crate_dir.display()
    );
    if let Some(filter) = words.last().filter(|w| !w.starts_with('-') && **w != target) {
        assert!(
            tests.join(target).join(format!("{filter}.rs")).is_file(),
            "the filter {filter} names no module of the test target {target}: {command}"
        );
    }
}

/// `helm install NAME CHART ARGS…`, rendered with `helm template` instead.
fn render_with_helm(helm: &Path, command: &str) {
    assert!(
        !command.contains(['\'', '"']),
        "quoted helm arguments: teach this test to split them: {command}"
    );
    let args: Vec<&str> = command
        .split_whitespace()
        .skip(2)
        .filter(|w| *w != "--create-namespace")
        .collect();
    let output = Command::new(helm)
        .arg("template")
        .args(&args)
        .current_dir(checkout())
        .output()
        .expect("helm runs");
    assert!(
        output.status.success(),
        "the README's {command:?} does not render: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let rendered = String::from_utf8_lossy(&output.stdout);
    assert!(
        rendered.contains("kind: MutatingWebhookConfiguration"),
        "{command:?} renders no webhook"
    );
}

#[test]
fn every_other_readme_command_is_known_and_checked() {
    let text = readme();
    let blocks = sh_blocks(&text);
    let quick = quick_start(&blocks).line;
    let helm = helm();
    if helm.is_none() {
        assert!(
            std::env::var_os("CI_REQUIRE_HELM").is_none_or(|v| v.is_empty()),
            "CI_REQUIRE_HELM is set but there is no Helm (HELM, or tools/helm/build.sh's cache)"
        );
        eprintln!("no Helm (set HELM, or run tools/helm/build.sh): helm install is not rendered");
    }
    let mut checked = 0;
    for block in blocks.iter().filter(|b| b.line != quick) {
        for command in commands(&block.text) {
            assert_paths_exist(&command);
            let words: Vec<&str> = command.split_whitespace().collect();
            match words.as_slice() {
                ["cargo", "run", "--release", "--", "serve"] => {}
                ["cargo", "test", ..] => assert_cargo_test_target(&command),
                ["helm", "install", ..] => {
                    if let Some(helm) = &helm {
                        render_with_helm(helm, &command);
                    }
                }
                ["kubectl", "apply", "-f", file] => {
                    let text = std::fs::read_to_string(checkout().join(file))
                        .unwrap_or_else(|e| panic!("{file}: {e}"));
                    assert!(text.contains("kind: MutatingWebhookConfiguration"), "{file}");
                }
                ["kubectl", "label", "namespace", _, label] => {
                    assert!(label.contains('='), "{command}");
                }
                ["bash", script] => {
                    assert!(script.starts_with("tests/e2e/"), "{command}");
                }
                [".ci/run"] => {}
                _ => panic!(
                    "the README shows a command this test does not know how to check; teach \
                     tests/cli/readme.rs: {command}"
                ),
            }
            checked += 1;
        }
    }
    assert!(checked >= 8, "only {checked} commands checked");
}

#[test]
fn commands_are_split_as_a_shell_would_read_them() {
    let block = "a \\\n  b   # note\n\n# comment\nc 'x # y'\n";
    assert_eq!(commands(block), ["a b", "c 'x # y'"]);
}
