//! `doctor` and live `explain` without a cluster: every check says why it cannot run, the exit
//! code says so, and bad input fails with a message naming it. (With a cluster:
//! tests/e2e/doctor.sh.)

use crate::util::{Files, run};

/// A kubeconfig for an API server on a closed loopback port.
fn closed_kubeconfig(files: &Files) -> String {
    files.write(
        "closed.kubeconfig",
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:1\", insecure-skip-tls-verify: true}\n\
         users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
    )
}

#[test]
fn without_a_kubeconfig_every_check_says_why_it_cannot_run_and_the_exit_code_is_2() {
    let files = Files::new();
    let missing = files.path("missing.kubeconfig");
    let out = run(&["doctor", "--kubeconfig", &missing], "");
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stdout.lines().take(9).collect();
    assert_eq!(lines.len(), 9, "{}", out.stdout);
    for line in lines {
        assert!(line.starts_with("? "), "{line}");
    }
    assert!(
        out.stdout.contains("no Kubernetes configuration"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains(&missing), "{}", out.stdout);
    assert!(out.stdout.contains("9 could not run"));
}

#[test]
fn an_unreachable_api_server_is_reported_per_check_in_json() {
    let files = Files::new();
    let kubeconfig = closed_kubeconfig(&files);
    let out = run(
        &[
            "doctor",
            "--kubeconfig",
            &kubeconfig,
            "-o",
            "json",
            "--timeout",
            "2s",
        ],
        "",
    );
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    let report = out.json();
    let checks = report["checks"].as_array().expect("checks");
    assert!(!checks.is_empty());
    for check in checks {
        assert_eq!(check["verdict"], "unknown", "{check}");
    }
    assert!(
        checks[0]["summary"]
            .as_str()
            .unwrap_or("")
            .contains("the API server is unreachable"),
        "{report}"
    );
    assert_eq!(report["summary"]["errors"], 0);
}

#[test]
fn live_explain_names_a_bad_kubeconfig_an_unknown_type_and_flags_meant_for_files() {
    let files = Files::new();
    let missing = files.path("missing.kubeconfig");
    run(&["explain", "deployment/web", "--kubeconfig", &missing], "").assert_error(&["kubeconfig", &missing]);
    let kubeconfig = closed_kubeconfig(&files);
    run(&["explain", "service/web", "--kubeconfig", &kubeconfig], "")
        .assert_error(&["service: explain reads pod, deployment, statefulset"]);
    run(&["explain", "web", "--kubeconfig", &kubeconfig], "").assert_error(&["web: expected TYPE/NAME"]);
    let webhook = files.write("mwc.yaml", "kind: MutatingWebhookConfiguration\n");
    run(
        &[
            "explain",
            "deployment/web",
            "--kubeconfig",
            &kubeconfig,
            "--webhook",
            &webhook,
        ],
        "",
    )
    .assert_error(&["--webhook, --injector-config and --show-patch are for files"]);
    run(
        &[
            "explain",
            "-n",
            "shop",
            "deployment/web",
            "--kubeconfig",
            &kubeconfig,
        ],
        "",
    )
    .assert_error(&["cannot get deployments shop/web: the API server is unreachable"]);
}
