//! `sidecar-injector completion SHELL` and `sidecar-injector man`.

use std::process::{Command, Stdio};

use crate::util::{Files, run};

#[test]
fn completion_scripts_know_the_subcommands_and_flags() {
    let cases = [
        ("bash", "_sidecar__injector()"),
        ("zsh", "#compdef sidecar-injector"),
        ("fish", "complete -c sidecar-injector"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "edit:completion:arg-completer[sidecar-injector]"),
    ];
    for (shell, marker) in cases {
        let out = run(&["completion", shell], "");
        assert_eq!(out.code, 0, "{shell}: {}", out.stderr);
        assert!(out.stdout.contains(marker), "{shell} lacks {marker:?}");
        for word in [
            "explain",
            "serve",
            "inject",
            "template",
            "webhook",
            "show-patch",
            "native-sidecars",
        ] {
            assert!(out.stdout.contains(word), "{shell} completion lacks {word}");
        }
    }
    let bad = run(&["completion", "tcsh"], "");
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr
            .contains("possible values: bash, elvish, fish, powershell, zsh"),
        "{}",
        bad.stderr
    );
}

/// The bash script parses, and completing `sidecar-injector ex` in bash offers `explain`.
#[test]
fn bash_completion_completes_a_subcommand() {
    if Command::new("bash")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_err()
    {
        eprintln!("bash is not installed: skipping");
        return;
    }
    let files = Files::new();
    let script = files.write("completion.bash", &run(&["completion", "bash"], "").stdout);
    let probe = format!(
        "source '{script}'\nCOMP_WORDS=(sidecar-injector ex)\nCOMP_CWORD=1\nCOMP_LINE='sidecar-injector ex'\nCOMP_POINT=${{#COMP_LINE}}\n_sidecar__injector sidecar-injector ex sidecar-injector\necho \"${{COMPREPLY[@]}}\"\n"
    );
    let output = Command::new("bash")
        .arg("-c")
        .arg(&probe)
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(stdout.trim(), "explain", "{stdout}");
}

#[test]
fn man_prints_roff_and_writes_one_page_per_subcommand() {
    let out = run(&["man"], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with(".ie \\n(.g .ds Aq"),
        "{}",
        &out.stdout[..200.min(out.stdout.len())]
    );
    assert!(out.stdout.contains(".TH sidecar-injector 1"), "{}", out.stdout);
    assert!(out.stdout.contains(".SH NAME"), "{}", out.stdout);
    assert!(out.stdout.contains("explain"), "{}", out.stdout);

    let files = Files::new();
    let dir = files.dir().join("man1");
    let written = run(&["man", "--out-dir", &dir.display().to_string()], "");
    assert_eq!(written.code, 0, "{}", written.stderr);
    for page in [
        "sidecar-injector.1",
        "sidecar-injector-explain.1",
        "sidecar-injector-serve.1",
        "sidecar-injector-template-render.1",
    ] {
        let text = std::fs::read_to_string(dir.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.contains(".TH "), "{page}");
    }
    let explain = std::fs::read_to_string(dir.join("sidecar-injector-explain.1")).expect("explain's page");
    assert!(explain.contains("webhook"), "{explain}");
}
