//! `sidecar-injector inject` on manifests: injection, pass-through, output file, errors.

use crate::util::{Files, example, run};

#[test]
fn injects_the_example_with_the_embedded_configuration() {
    let out = run(&["inject", "-f", &example("deployment.yaml")], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = &out.stdout;
    assert!(
        text.starts_with("apiVersion: apps/v1\nkind: Deployment\n"),
        "{text}"
    );
    assert!(text.contains("name: istio-init"), "{text}");
    assert!(text.contains("name: istio-proxy"), "{text}");
    assert!(
        text.contains("restartPolicy: Always"),
        "native sidecars are on by default: {text}"
    );
    assert!(text.contains("image: docker.io/istio/proxyv2:1.28.0"), "{text}");
    assert!(text.ends_with("---\n"), "{text}");
}

#[test]
fn native_sidecars_can_be_turned_off() {
    let out = run(
        &[
            "inject",
            "-f",
            &example("deployment.yaml"),
            "--native-sidecars",
            "false",
        ],
        "",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains("restartPolicy: Always"), "{}", out.stdout);
}

#[test]
fn other_documents_are_unchanged_and_skips_are_warnings() {
    let stream = "# my service\napiVersion: v1\nkind: Service\nmetadata: {name: web}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: host\nspec:\n  hostNetwork: true\n  containers: [{name: c, image: i}]\n";
    let out = run(&["inject", "-f", "-"], stream);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .starts_with("# my service\napiVersion: v1\nkind: Service\nmetadata: {name: web}\n---\n"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("istio-proxy"));
    assert!(
        out.stderr
            .contains("===> Skipping injection because Pod \"host\" has host networking enabled"),
        "{}",
        out.stderr
    );
}

#[test]
fn writes_the_output_file_whole() {
    let files = Files::new();
    let target = files.write("out.yaml", "previous content\n");
    let out = run(&["inject", "-f", &example("deployment.yaml"), "-o", &target], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.is_empty());
    let written = std::fs::read_to_string(&target).expect("written");
    assert!(written.contains("name: istio-proxy"));

    // A failing run leaves the previous file as it was.
    let bad = files.write(
        "bad.yaml",
        "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: rc}\nspec: {}\n",
    );
    let out = run(&["inject", "-f", &bad, "-o", &target], "");
    out.assert_error(&["bad.yaml: document 1 (ReplicationController rc): spec.template is required value"]);
    assert_eq!(std::fs::read_to_string(&target).expect("kept"), written);
}

#[test]
fn bad_input_is_a_clear_error() {
    run(&["inject", "-f", "-"], "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    spec:\n      containers: [{name: c, ports: [{containerPort: http}]}]\n")
        .assert_error(&["<stdin>: document 1 (Deployment d)", "cannot unmarshal string into Go struct field ContainerPort.spec.template.spec.containers.ports.containerPort of type int32"]);
    run(&["inject", "-f", "-"], "kind: [\n").assert_error(&["<stdin>: document 1"]);
    let files = Files::new();
    let config = files.write(
        "config.yaml",
        "policy: enabled\ntemplates:\n  sidecar: '{{ if }}'\n",
    );
    run(
        &[
            "inject",
            "-f",
            &example("deployment.yaml"),
            "--injector-config",
            &config,
        ],
        "",
    )
    .assert_error(&[
        "injector configuration: template \"sidecar\"",
        "missing value for if",
    ]);
    let annotated = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {traffic.sidecar.istio.io/excludeOutboundPorts: \"abc\"}\nspec:\n  containers: [{name: c, image: i}]\n";
    run(&["inject", "-f", "-"], annotated).assert_error(&[
        "invalid value 'abc' for annotation 'traffic.sidecar.istio.io/excludeOutboundPorts'",
    ]);
}

#[test]
fn an_istio_operator_file_sets_values_and_mesh_config() {
    let files = Files::new();
    let template = files.write(
        "template.yaml",
        "spec:\n  initContainers:\n  - name: istio-init\n    image: example.com/proxy_init:{{ .Values.global.tag }}\n",
    );
    let operator = files.write(
        "operator.yaml",
        "apiVersion: install.istio.io/v1alpha1\nkind: IstioOperator\nspec:\n  values:\n    global:\n      tag: from-operator\n",
    );
    let values = files.write("values.yaml", "global:\n  tag: from-values\n");
    let out = run(
        &[
            "inject",
            "-f",
            &example("deployment.yaml"),
            "--injector-config",
            &template,
            "--values",
            &values,
            "--operator-file",
            &operator,
        ],
        "",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("image: example.com/proxy_init:from-operator"),
        "{}",
        out.stdout
    );

    let not_operator = files.write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\n");
    let out = run(
        &[
            "inject",
            "-f",
            &example("deployment.yaml"),
            "--operator-file",
            &not_operator,
        ],
        "",
    );
    out.assert_error(&["cm.yaml: kind: expected IstioOperator, got \"ConfigMap\""]);
}
