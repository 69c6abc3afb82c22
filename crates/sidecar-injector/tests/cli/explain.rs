//! `sidecar-injector explain` on YAML files: both outputs, every input form, every bad input.

use serde_json::Value;

use crate::util::{Files, example, run};

const OPT_IN_WEBHOOK: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: istio-sidecar-injector}
webhooks:
- name: sidecar-injector.istio.io
  clientConfig: {url: "https://127.0.0.1:15017/inject"}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  namespaceSelector: {matchLabels: {istio-injection: enabled}}
"#;

const OPT_OUT_WEBHOOK: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: istio-sidecar-injector}
webhooks:
- name: sidecar-injector.istio.io
  clientConfig: {url: "https://127.0.0.1:15017/inject"}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  namespaceSelector:
    matchExpressions: [{key: istio-injection, operator: NotIn, values: [disabled]}]
"#;

fn namespace(label: Option<&str>) -> String {
    let labels = label
        .map(|v| format!("\n  labels: {{istio-injection: {v}}}"))
        .unwrap_or_default();
    format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop{labels}\n")
}

fn deployment(template_annotation: Option<&str>, own_annotation: Option<&str>) -> String {
    let annotation = |value: Option<&str>, indent: &str| {
        value
            .map(|v| format!("\n{indent}annotations: {{sidecar.istio.io/inject: \"{v}\"}}"))
            .unwrap_or_default()
    };
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop{}\nspec:\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata:\n      labels: {{app: web}}{}\n    spec:\n      containers: [{{name: web, image: nginx}}]\n",
        annotation(own_annotation, "  "),
        annotation(template_annotation, "      ")
    )
}

fn config(policy: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: istio-sidecar-injector, namespace: istio-system}}\ndata:\n  config: |\n    policy: {policy}\n    templates:\n      sidecar: 'spec: {{}}'\n"
    )
}

/// The table of the three conditions that decide injection, row by row, through the binary.
#[test]
fn decision_table_rows() {
    let rows = [
        (Some("enabled"), "enabled", Some("true"), true),
        (Some("enabled"), "enabled", Some("false"), false),
        (Some("enabled"), "enabled", None, true),
        (Some("enabled"), "disabled", Some("true"), true),
        (Some("enabled"), "disabled", Some("false"), false),
        (Some("enabled"), "disabled", None, false),
        (None, "enabled", Some("true"), false),
        (None, "disabled", None, false),
    ];
    let files = Files::new();
    let webhook = files.write("mwc.yaml", OPT_IN_WEBHOOK);
    for (label, policy, annotation, injected) in rows {
        let workload = files.write("deploy.yaml", &deployment(annotation, None));
        let ns = files.write("ns.yaml", &namespace(label));
        let cm = files.write("cm.yaml", &config(policy));
        let out = run(
            &[
                "explain",
                "-f",
                &workload,
                "--namespace",
                &ns,
                "--webhook",
                &webhook,
                "--injector-config",
                &cm,
                "-o",
                "json",
            ],
            "",
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        let json = out.json();
        let row = format!("{label:?} {policy} {annotation:?}");
        assert_eq!(json["injected"], injected, "row {row}: {}", json["reason"]);
        assert_eq!(json["webhookCalled"], label.is_some(), "row {row}");
        assert_eq!(json["kind"], "Deployment");
        assert_eq!(json["name"], "web");
        assert_eq!(json["namespace"], "shop");
        assert!(
            json["steps"].as_array().is_some_and(|s| !s.is_empty()),
            "row {row}"
        );
        assert!(json["warnings"].is_array(), "row {row}");
    }
}

#[test]
fn opt_out_selector_calls_unlabelled_namespaces() {
    let files = Files::new();
    let webhook = files.write("mwc.yaml", OPT_OUT_WEBHOOK);
    let workload = files.write("deploy.yaml", &deployment(None, None));
    for (label, injected) in [(None, true), (Some("enabled"), true), (Some("disabled"), false)] {
        let ns = files.write("ns.yaml", &namespace(label));
        let out = run(
            &[
                "explain",
                "-f",
                &workload,
                "--namespace",
                &ns,
                "--webhook",
                &webhook,
                "-o",
                "json",
            ],
            "",
        );
        assert_eq!(
            out.json()["injected"],
            injected,
            "label {label:?}: {}",
            out.stdout
        );
    }
}

#[test]
fn table_marks_the_deciding_condition_and_gives_the_fix() {
    let out = run(
        &[
            "explain",
            "-f",
            &example("deployment.yaml"),
            "--namespace",
            &example("namespace.yaml"),
            "--webhook",
            &example("webhook.yaml"),
            "--injector-config",
            &example("injector-configmap.yaml"),
        ],
        "",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = &out.stdout;
    assert!(text.starts_with("Deployment shop/web: NOT INJECTED\n"), "{text}");
    let deciding: Vec<&str> = text.lines().filter(|l| l.contains("◀ decides")).collect();
    assert!(
        deciding
            .iter()
            .any(|l| l.contains("namespaceSelector matches the namespace")),
        "{text}"
    );
    assert!(
        text.contains("kubectl label namespace shop istio-injection=enabled --overwrite"),
        "{text}"
    );
    assert!(
        text.contains("is on the Deployment's own metadata: sidecar.istio.io/inject has no effect here; move it to spec.template.metadata"),
        "{text}"
    );
    assert!(
        text.contains("default policy") && text.contains("\"disabled\""),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "no colour codes when NO_COLOR is set or stdout is not a terminal"
    );
}

#[test]
fn annotation_on_deployment_metadata_is_flagged_and_ignored() {
    let files = Files::new();
    let workload = files.write("deploy.yaml", &deployment(None, Some("false")));
    let out = run(
        &["explain", "-f", &workload, "--webhook", "none", "-o", "json"],
        "",
    );
    let json = out.json();
    assert_eq!(
        json["injected"], true,
        "the Deployment's own annotation must have no effect"
    );
    let warnings = json["warnings"].as_array().expect("warnings");
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .is_some_and(|w| w.contains("has no effect here; move it to spec.template.metadata"))),
        "{warnings:?}"
    );
}

#[test]
fn multi_document_gives_an_array_and_skips_non_workloads() {
    let stream = format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: web, namespace: shop}}\n---\n{}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: solo, namespace: shop, annotations: {{sidecar.istio.io/inject: \"false\"}}}}\nspec: {{containers: []}}\n",
        deployment(None, None)
    );
    let out = run(
        &["explain", "-f", "-", "--webhook", "none", "-o", "json"],
        &stream,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json = out.json();
    let items = json.as_array().expect("an array for several workloads");
    assert_eq!(items.len(), 2);
    assert_eq!(
        (items[0]["kind"].as_str(), items[0]["injected"].as_bool()),
        (Some("Deployment"), Some(true))
    );
    assert_eq!(
        (items[1]["kind"].as_str(), items[1]["injected"].as_bool()),
        (Some("Pod"), Some(false))
    );
    assert!(
        out.stderr
            .contains("<stdin>: document 1 (Service shop/web): not a workload"),
        "{}",
        out.stderr
    );
}

#[test]
fn list_items_are_explained() {
    let list = r#"{"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick", "namespace": "jobs"},
         "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {
            "metadata": {"annotations": {"sidecar.istio.io/inject": "false"}}, "spec": {"containers": []}}}}}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "kube-system"},
         "spec": {"template": {"spec": {"hostNetwork": true, "containers": []}}}}
    ]}"#;
    let out = run(&["explain", "-f", "-", "--webhook", "none", "-o", "json"], list);
    let json = out.json();
    let items = json.as_array().expect("array");
    assert_eq!(items[0]["decidedBy"], "podOverride");
    assert_eq!(items[1]["decidedBy"], "hostNetwork");
}

#[test]
fn yaml_output_is_yaml() {
    let out = run(
        &[
            "explain",
            "-f",
            &example("deployment.yaml"),
            "--webhook",
            "none",
            "-o",
            "yaml",
        ],
        "",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("kind: Deployment\n"), "{}", out.stdout);
    assert!(out.stdout.contains("\ninjected: true\n"), "{}", out.stdout);
    assert!(out.stdout.contains("webhookCalled: null"), "{}", out.stdout);
}

#[test]
fn raw_config_with_unknown_policy() {
    let files = Files::new();
    let cm = files.write(
        "config.yaml",
        "policy: Enabled\ntemplates: {sidecar: 'spec: {}'}\n",
    );
    let workload = files.write("deploy.yaml", &deployment(Some("true"), None));
    let out = run(
        &[
            "explain",
            "-f",
            &workload,
            "--webhook",
            "none",
            "--injector-config",
            &cm,
            "-o",
            "json",
        ],
        "",
    );
    let json = out.json();
    assert_eq!(json["injected"], false);
    assert_eq!(json["decidedBy"], "invalidPolicy");
    let warnings: Vec<&str> = json["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("Illegal value for autoInject:Enabled")),
        "{warnings:?}"
    );
}

// ---- Bad input: a clear error naming file, document and field; nothing on stdout ----

#[test]
fn malformed_yaml() {
    let files = Files::new();
    let path = files.write("bad.yaml", &format!("{}---\nkind: [\n", deployment(None, None)));
    run(&["explain", "-f", &path, "-o", "json"], "")
        .assert_error(&["bad.yaml: document 2 (starting at line 14): line 14 column 7: unclosed bracket"]);
}

#[test]
fn unknown_kind() {
    run(
        &["explain", "-f", "-"],
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
    )
    .assert_error(&["<stdin>: document 1 (Widget w): not a workload with a pod template"]);
}

#[test]
fn not_an_object() {
    run(&["explain", "-f", "-"], "- just\n- a list\n")
        .assert_error(&["<stdin>: document 1: (document): must be a Kubernetes object"]);
    run(&["explain", "-f", "-"], "metadata: {name: x}\n")
        .assert_error(&["<stdin>: document 1: kind: missing"]);
    run(&["explain", "-f", "-"], "# nothing\n").assert_error(&["<stdin>: no YAML documents found"]);
}

#[test]
fn workload_without_pod_template() {
    run(
        &["explain", "-f", "-"],
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: shop}\nspec: {}\n",
    )
    .assert_error(&["document 1 (StatefulSet shop/db): spec.template: missing"]);
}

#[test]
fn unquoted_annotation_value() {
    run(&["explain", "-f", "-"], "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {sidecar.istio.io/inject: true}\nspec: {}\n")
        .assert_error(&["metadata.annotations[\"sidecar.istio.io/inject\"]: must be a string", "quote it"]);
}

#[test]
fn config_map_without_config() {
    let files = Files::new();
    let cm = files.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio-sidecar-injector}\ndata: {values: '{}'}\n",
    );
    run(
        &[
            "explain",
            "-f",
            &example("deployment.yaml"),
            "--injector-config",
            &cm,
        ],
        "",
    )
    .assert_error(&["cm.yaml: data.config: ConfigMap istio-sidecar-injector has no `config` key"]);
}

#[test]
fn invalid_selector_in_webhook() {
    let files = Files::new();
    let webhook = files.write("mwc.yaml", &OPT_OUT_WEBHOOK.replace("NotIn", "Notin"));
    run(
        &[
            "explain",
            "-f",
            &example("deployment.yaml"),
            "--webhook",
            &webhook,
        ],
        "",
    )
    .assert_error(&[
        "mwc.yaml: document 1 (MutatingWebhookConfiguration istio-sidecar-injector)",
        "webhooks[0].namespaceSelector.matchExpressions[0].operator",
        "\"Notin\" is not a valid label selector operator",
    ]);
}

#[test]
fn invalid_selector_in_config() {
    let files = Files::new();
    let cm = files.write(
        "config.yaml",
        "policy: enabled\nneverInjectSelector:\n- matchExpressions: [{key: app, operator: In}]\n",
    );
    run(&["explain", "-f", &example("deployment.yaml"), "--injector-config", &cm], "")
        .assert_error(&["config.yaml: config.neverInjectSelector[0].matchExpressions[0].values: invalid label selector: operator In needs at least one value"]);
}

#[test]
fn wrong_kind_for_namespace() {
    run(&["explain", "-f", &example("deployment.yaml"), "--namespace", &example("webhook.yaml")], "")
        .assert_error(&["webhook.yaml: document 1 (MutatingWebhookConfiguration istio-sidecar-injector): kind: expected a Namespace"]);
}

#[test]
fn missing_file() {
    run(&["explain", "-f", "/nonexistent/deploy.yaml"], "")
        .assert_error(&["cannot read /nonexistent/deploy.yaml"]);
}

#[test]
fn show_patch_gives_the_patch_and_a_diff() {
    let out = run(
        &[
            "explain",
            "-f",
            &example("deployment.yaml"),
            "--show-patch",
            "-o",
            "json",
        ],
        "",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json = out.json();
    let patch = json["patch"].as_array().expect("a patch");
    assert!(
        patch.iter().any(|op| op["path"] == "/spec/initContainers"),
        "{patch:?}"
    );
    let table = run(
        &["explain", "-f", &example("deployment.yaml"), "--show-patch"],
        "",
    );
    assert!(
        table
            .stdout
            .contains("What the injector would change in the pod of Deployment shop/web"),
        "{}",
        table.stdout
    );
    assert!(table.stdout.contains("+  initContainers:"), "{}", table.stdout);

    let files = Files::new();
    let disabled = files.write("config.yaml", "policy: enabled\ntemplates:\n  sidecar: |\n    spec:\n      containers:\n      - name: istio-proxy\n        image: p\n");
    let skipped = run(
        &[
            "explain",
            "-f",
            &example("deployment.yaml"),
            "--injector-config",
            &disabled,
            "--show-patch",
            "-o",
            "json",
        ],
        "",
    );
    assert_eq!(skipped.code, 0, "{}", skipped.stderr);
    assert!(skipped.json()["patch"].as_array().is_some_and(|p| !p.is_empty()));
}

// ---- Without --webhook: the webhooks of Istio's chart ----

/// Regression (tried as a new user would): without --webhook, a namespace labelled
/// `istio-injection=disabled` was reported INJECTED with only a generic warning.
#[test]
fn without_webhook_a_disabled_namespace_is_not_injected() {
    let files = Files::new();
    let workload = files.write("deploy.yaml", &deployment(None, None));
    let ns = files.write("ns.yaml", &namespace(Some("disabled")));
    let out = run(
        &["explain", "-f", &workload, "--namespace", &ns, "-o", "json"],
        "",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json = out.json();
    assert_eq!(json["injected"], false, "{json:#}");
    assert_eq!(json["webhookCalled"], false);
    assert_eq!(json["webhookSource"], "istioChart");
    assert_eq!(json["decidedBy"], "namespaceSelector");
    assert!(
        json["warnings"][0].as_str().is_some_and(
            |w| w.starts_with("no --webhook given: assuming the webhooks Istio's chart installs")
        ),
        "{json:#}"
    );

    let table = run(&["explain", "-f", &workload, "--namespace", &ns], "");
    assert!(
        table.stdout.contains("Deployment shop/web: NOT INJECTED"),
        "{}",
        table.stdout
    );
    assert!(
        table.stdout.contains("Istio's chart webhooks assumed"),
        "{}",
        table.stdout
    );
}

/// The chart's opt-in: `istio-injection=enabled` is injected, a namespace without labels is not
/// (unless the pod opts in with the label), and `--webhook none` keeps "assume called".
#[test]
fn without_webhook_injection_is_opt_in_as_in_istios_chart() {
    let files = Files::new();
    let workload = files.write("deploy.yaml", &deployment(None, None));
    let enabled = files.write("enabled.yaml", &namespace(Some("enabled")));
    let bare = files.write("bare.yaml", &namespace(None));
    let injected = |args: &[&str]| {
        let mut all = vec!["explain", "-f", &workload, "-o", "json"];
        all.extend_from_slice(args);
        let out = run(&all, "");
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.json()["injected"].as_bool().expect("a verdict")
    };
    assert!(injected(&["--namespace", &enabled]));
    assert!(!injected(&["--namespace", &bare]));
    assert!(!injected(&[]));
    assert!(injected(&["--namespace", &bare, "--webhook", "none"]));
    let canary = files.write(
        "canary.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n  labels: {istio.io/rev: canary}\n",
    );
    assert!(!injected(&["--namespace", &canary]));
    assert!(injected(&["--namespace", &canary, "--revision", "canary"]));

    let labelled = files.write(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: shop\n  labels: {sidecar.istio.io/inject: \"true\"}\nspec:\n  containers: [{name: a, image: nginx}]\n",
    );
    let out = run(
        &["explain", "-f", &labelled, "--namespace", &bare, "-o", "json"],
        "",
    );
    assert_eq!(out.json()["injected"], true, "{}", out.stdout);
}

// ---- A workload that cannot be injected ----

/// Regression (tried as a new user would): `containers: "x"` was explained as INJECTED with exit
/// code 0; `inject` rejects it. Both now give the same message and exit code 1.
#[test]
fn a_workload_inject_rejects_is_an_error_with_the_same_message() {
    let files = Files::new();
    let pod = files.write(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec:\n  containers: \"x\"\n",
    );
    let injected = run(&["inject", "-f", &pod], "");
    assert_eq!(injected.code, 1, "{}", injected.stderr);
    let message = injected
        .stderr
        .trim()
        .rsplit(": ")
        .next()
        .expect("a message")
        .to_owned();
    assert!(message.contains("containers"), "{}", injected.stderr);
    for args in [
        vec!["explain", "-f", &pod],
        vec!["explain", "-f", &pod, "-o", "json"],
        vec!["explain", "-f", &pod, "--webhook", "none", "--show-patch"],
    ] {
        let explained = run(&args, "");
        explained.assert_error(&["pod.yaml: document 1 (Pod shop/web): ", &message]);
    }
    let deployment = files.write(
        "deploy.yaml",
        &deployment(None, None).replace("containers: [{name: web, image: nginx}]", "containers: 7"),
    );
    let injected = run(&["inject", "-f", &deployment], "");
    assert_eq!(injected.code, 1);
    run(&["explain", "-f", &deployment], "")
        .assert_error(&["deploy.yaml: document 1 (Deployment shop/web): "]);
}

// ---- Annotations that have no effect ----

/// `sidecar.istio.io/enableCoreDump` is in Istio's annotation reference but Istio's sidecar
/// template ignores it (and so does ours): `explain` and `inject` say so instead of staying silent.
#[test]
fn annotations_without_effect_are_reported_by_explain_and_inject() {
    let files = Files::new();
    let pod = files.write(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: shop\n  annotations: {sidecar.istio.io/enableCoreDump: \"true\"}\nspec:\n  containers: [{name: web, image: nginx}]\n",
    );
    let explained = run(&["explain", "-f", &pod, "-o", "json"], "");
    assert_eq!(explained.code, 0, "{}", explained.stderr);
    let warnings = explained.json()["warnings"].to_string();
    assert!(
        warnings.contains("annotation sidecar.istio.io/enableCoreDump has no effect"),
        "{warnings}"
    );
    let injected = run(&["inject", "-f", &pod], "");
    assert_eq!(injected.code, 0, "{}", injected.stderr);
    assert!(
        injected.stderr.contains(
            "warning: pod.yaml: document 1 (Pod shop/web): annotation sidecar.istio.io/enableCoreDump has no effect"
        ) || injected.stderr.contains("(Pod shop/web): annotation sidecar.istio.io/enableCoreDump has no effect"),
        "{}",
        injected.stderr
    );
}
