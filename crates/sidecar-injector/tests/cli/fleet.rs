//! `preview` and `outdated` offline, on snapshots written here, tried as a new user would.

use crate::util::{Files, run};

const NAMESPACES: &str = "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop, labels: {istio-injection: enabled}}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: plain}\n";

fn deployment(namespace: &str, name: &str, class: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}, class: {class}}}}}\n    spec:\n      containers: [{{name: app, image: \"app:1\"}}]\n"
    )
}

fn snapshot(files: &Files) -> String {
    let text = [
        NAMESPACES.to_owned(),
        deployment("shop", "web", "web"),
        deployment("shop", "api", "web"),
        deployment("shop", "nightly", "batch"),
        deployment("plain", "legacy", "web"),
    ]
    .join("---\n");
    files.write("snapshot.yaml", &text)
}

fn embedded_values_with_tag(tag: &str) -> String {
    let text = include_str!("../../../injector-engine/defaults/values.json");
    let mut values: serde_json::Value = serde_json::from_str(text).expect("the embedded values are JSON");
    values["global"]["tag"] = serde_json::json!(tag);
    values.to_string()
}

/// The embedded sidecar template with a first line that fails for pods labelled class=batch.
fn breaking_template() -> String {
    let config = include_str!("../../../injector-engine/defaults/injector-config.yaml");
    let start = config
        .find("  sidecar: |\n")
        .expect("the embedded config has a sidecar template")
        + "  sidecar: |\n".len();
    let body: String = config[start..]
        .lines()
        .take_while(|line| line.is_empty() || line.starts_with("    "))
        .map(|line| format!("{}\n", line.strip_prefix("    ").unwrap_or(line)))
        .collect();
    format!(
        "{{{{- if eq (index .ObjectMeta.Labels \"class\") \"batch\" }}}}{{{{ fail \"batch pods are not supported\" }}}}{{{{ end }}}}\n{body}"
    )
}

#[test]
fn an_image_bump_changes_every_injected_workload_by_image_only() {
    let files = Files::new();
    let snapshot = snapshot(&files);
    let values = files.write("values.json", &embedded_values_with_tag("1.29.0"));
    let out = run(
        &["preview", "-f", &snapshot, "--values", &values, "-o", "json"],
        "",
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let report = out.json();
    assert_eq!(report["counts"]["changed"], 3, "{report:#}");
    assert_eq!(report["counts"]["notInjected"], 1, "{report:#}");
    let changed = &report["groups"][0];
    assert_eq!(changed["change"], "changed");
    assert_eq!(changed["count"], 3);
    for container in changed["diff"]["containers"].as_array().expect("containers") {
        for field in container["fields"].as_array().expect("fields") {
            assert_eq!(field["field"], "image", "{changed:#}");
            assert_eq!(field["after"], "docker.io/istio/proxyv2:1.29.0");
        }
    }
    let table = run(&["preview", "-f", &snapshot, "--values", &values], "");
    assert_eq!(table.code, 0);
    assert!(
        table.stdout.contains("CHANGED 3 workloads: image only"),
        "{}",
        table.stdout
    );
    assert!(
        table.stdout.contains(
            "istio-proxy (init): image docker.io/istio/proxyv2:1.28.0 → docker.io/istio/proxyv2:1.29.0"
        ),
        "{}",
        table.stdout
    );
    assert!(table.stdout.contains("Exit status 0"), "{}", table.stdout);
}

#[test]
fn a_template_that_breaks_one_class_reports_exactly_those_and_exits_3() {
    let files = Files::new();
    let snapshot = snapshot(&files);
    let template = files.write("sidecar.tmpl", &breaking_template());
    let out = run(
        &[
            "preview",
            "-f",
            &snapshot,
            "--template",
            &format!("sidecar={template}"),
        ],
        "",
    );
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("BREAKS 1 workload: "), "{}", out.stdout);
    assert!(
        out.stdout.contains("template: inject:1:"),
        "the template line: {}",
        out.stdout
    );
    assert!(
        out.stdout.contains("  Deployment shop/nightly\n"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("UNCHANGED 2 workloads"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("Exit status 3: the proposal breaks 1 workload"),
        "{}",
        out.stdout
    );
}

#[test]
fn preview_needs_a_proposal_and_names_a_bad_file() {
    let files = Files::new();
    let snapshot = snapshot(&files);
    run(&["preview", "-f", &snapshot], "").assert_error(&["nothing proposed"]);
    let bad = files.write("proposed.yaml", "policy: [enabled\n");
    let out = run(&["preview", "-f", &snapshot, "--injector-config", &bad], "");
    out.assert_error(&["the proposed configuration", "proposed.yaml"]);
    let unparsable = files.write("bad.tmpl", "spec: {{ if }}\n");
    run(&["preview", "-f", &snapshot, "--template", &unparsable], "")
        .assert_error(&["bad.tmpl", "template \"sidecar\""]);
}

#[test]
fn outdated_lists_pods_injected_before_a_change_with_the_rollout_command() {
    let files = Files::new();
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web-5d8f-abcde\n  generateName: web-5d8f-\n  namespace: shop\n  labels: {app: web, pod-template-hash: 5d8f}\n  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d8f, uid: u1, controller: true}]\nspec:\n  containers: [{name: app, image: \"app:1\"}]\n";
    let pod = files.write("pod.yaml", pod);
    let injected = run(&["inject", "-f", &pod, "--revision", "default"], "");
    assert_eq!(injected.code, 0, "{}", injected.stderr);
    let snapshot = files.write("snapshot.yaml", &format!("{NAMESPACES}---\n{}", injected.stdout));
    let up_to_date = run(&["outdated", "-f", &snapshot, "-o", "json"], "");
    assert_eq!(up_to_date.code, 0, "{}", up_to_date.stderr);
    assert_eq!(up_to_date.json()["upToDate"], 1, "{}", up_to_date.stdout);

    let values = files.write("values.json", &embedded_values_with_tag("1.29.0"));
    let out = run(&["outdated", "-f", &snapshot, "--current-values", &values], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("Deployment shop/web — 1 pod: image only"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("  kubectl rollout restart deployment/web -n shop\n"),
        "{}",
        out.stdout
    );
    let json = run(
        &[
            "outdated",
            "-f",
            &snapshot,
            "--current-values",
            &values,
            "-o",
            "json",
        ],
        "",
    )
    .json();
    assert_eq!(json["owners"][0]["pods"][0]["difference"], "image", "{json:#}");
    assert_eq!(json["owners"][0]["remedy"]["restartable"], true);
}

#[test]
fn restart_needs_the_live_cluster() {
    let files = Files::new();
    let snapshot = snapshot(&files);
    run(&["outdated", "-f", &snapshot, "--restart"], "")
        .assert_error(&["--restart acts on the live cluster"]);
}

#[test]
fn a_snapshot_on_standard_input_reads_as_the_file_and_the_report_can_go_to_a_file() {
    let files = Files::new();
    let snapshot = snapshot(&files);
    let values = files.write("values.json", &embedded_values_with_tag("1.29.0"));
    let text = std::fs::read_to_string(&snapshot).expect("the snapshot");
    let from_file = run(
        &["preview", "-f", &snapshot, "--values", &values, "-o", "json"],
        "",
    );
    let from_stdin = run(&["preview", "-f", "-", "--values", &values, "-o", "json"], &text);
    assert_eq!(from_stdin.code, 0, "{}", from_stdin.stderr);
    assert_eq!(from_stdin.json()["groups"], from_file.json()["groups"]);

    let report = files.write("report.json", "the previous report\n");
    let out = run(
        &[
            "preview",
            "-f",
            &snapshot,
            "--values",
            &values,
            "-o",
            "json",
            "--output-file",
            &report,
        ],
        "",
    );
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{}", out.stderr);
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("written")).expect("JSON");
    assert_eq!(written["groups"], from_file.json()["groups"]);

    // A run that fails leaves the file as it was.
    std::fs::write(&report, "the previous report\n").expect("reset");
    let broken = files.write(
        "broken.yaml",
        "kind: List\nitems:\n- kind: Deployment\n  spec: [\n",
    );
    run(
        &[
            "preview",
            "-f",
            &broken,
            "--values",
            &values,
            "--output-file",
            &report,
        ],
        "",
    )
    .assert_error(&["broken.yaml: document 1"]);
    assert_eq!(
        std::fs::read_to_string(&report).expect("kept"),
        "the previous report\n"
    );
}
