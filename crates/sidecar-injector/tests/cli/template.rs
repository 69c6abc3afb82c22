//! `sidecar-injector template render`: Istio's injection functions by default, `--funcs sprig`
//! for sprig alone, and `--pod` to render Istio's own injection template with the data the
//! injector gives a pod.

use crate::util::{Files, run};

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: web-5d8f9c-x2x7q
  generateName: web-5d8f9c-
  namespace: shop
  labels: {app: web, version: v1, pod-template-hash: 5d8f9c}
  annotations:
    traffic.sidecar.istio.io/excludeOutboundPorts: "5432"
    sidecar.istio.io/proxyCPU: 250m
  ownerReferences:
  - {apiVersion: apps/v1, kind: ReplicaSet, name: web-5d8f9c, controller: true, uid: 0b1c}
spec:
  serviceAccountName: web
  containers:
  - name: web
    image: registry.example.com/shop/web:1.4.2
    ports: [{name: http, containerPort: 8080, protocol: TCP}]
"#;

#[test]
fn istios_injection_functions_are_there_by_default() {
    let files = Files::new();
    let template = files.write(
        "t.tmpl",
        "{{ $m := strdict \"b\" \"2\" \"a\" \"1\" }}{{ toJSON (omit $m \"b\") }} {{ strdict \"k\" \"v\" | toJSON }} \
         {{ directory \"/etc/certs/root.pem\" }} {{ contains \"/\" \"a/b\" }} {{ appendMultusNetwork \"\" \"default/istio-cni\" }}\n\
         {{ toYaml (fromJSON `{\"x\":[1]}`) }}",
    );
    let out = run(&["template", "render", "--template", &template], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "{\"a\":\"1\"} {\"k\":\"v\"} /etc/certs/ true default/istio-cni\nx:\n- 1\n"
    );
    let sprig = run(
        &["template", "render", "--template", &template, "--funcs", "sprig"],
        "",
    );
    assert_eq!(sprig.code, 1);
    assert!(
        sprig.stderr.contains("function \"strdict\" not defined"),
        "{}",
        sprig.stderr
    );
}

#[test]
fn data_from_yaml_still_works() {
    let files = Files::new();
    let template = files.write("t.tmpl", "{{ .name | upper }} {{ .n }}");
    let data = files.write("d.yaml", "name: web\nn: 3\n");
    let out = run(
        &["template", "render", "--template", &template, "--data", &data],
        "",
    );
    assert_eq!((out.code, out.stdout.as_str()), (0, "WEB 3"), "{}", out.stderr);
}

/// Istio's own sidecar template, from Istio's chart, renders for a ReplicaSet's pod with
/// Istio's default chart values and mesh config, and the result is the overlay Istio would merge.
/// Istio's corpus is found by the `istio-corpus` crate (the shared copy, else the pinned Go
/// module's).
#[test]
fn renders_istios_injection_template_for_a_pod() {
    let Some(corpus) = istio_corpus::istio_or_skip("template render: Istio's sidecar template") else {
        return;
    };
    let template =
        corpus.path("manifests/charts/istio-control/istio-discovery/files/injection-template.yaml");
    let values = corpus.path("derived/values/default.json");
    let mesh = corpus.path("derived/mesh/default.yaml");
    if !template.exists() || !values.exists() {
        istio_corpus::skip_or_fail(&format!(
            "template render: Istio's sidecar template or default values are not in {}",
            corpus.describe()
        ));
        return;
    }
    let files = Files::new();
    let pod = files.write("pod.yaml", POD);
    let out = run(
        &[
            "template",
            "render",
            "--template",
            &template.display().to_string(),
            "--pod",
            &pod,
            "--values",
            &values.display().to_string(),
            "--mesh",
            &mesh.display().to_string(),
        ],
        "",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let overlay: serde_json::Value = serde_saphyr::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("the rendered template is not YAML ({e}):\n{}", out.stdout));
    let init = &overlay["spec"]["initContainers"];
    let proxy = init
        .as_array()
        .and_then(|l| l.iter().find(|c| c["name"] == "istio-proxy"))
        .unwrap_or_else(|| panic!("a native istio-proxy:\n{}", out.stdout));
    assert_eq!(proxy["restartPolicy"], "Always");
    assert_eq!(proxy["resources"]["requests"]["cpu"], "250m");
    let iptables = &init[0];
    assert_eq!(iptables["name"], "istio-init");
    let args: Vec<&str> = iptables["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    let o = args.iter().position(|a| *a == "-o").expect("-o");
    assert_eq!(args[o + 1], "5432");
    let env = proxy["env"].as_array().expect("env");
    let workload = env
        .iter()
        .find(|e| e["name"] == "ISTIO_META_WORKLOAD_NAME")
        .expect("the workload name");
    assert_eq!(workload["value"], "web");
    assert_eq!(
        overlay["metadata"]["labels"]["service.istio.io/canonical-name"],
        "web"
    );

    let not_a_pod = files.write(
        "svc.yaml",
        "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n",
    );
    run(
        &[
            "template",
            "render",
            "--template",
            &template.display().to_string(),
            "--pod",
            &not_a_pod,
        ],
        "",
    )
    .assert_error(&["svc.yaml: document 1 (Service web): --pod takes a Pod"]);
}
