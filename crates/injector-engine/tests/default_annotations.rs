//! The embedded default configuration honours the pod annotations of Istio's annotation
//! reference that Istio's own sidecar template honours: one test per annotation, each rendering the
//! embedded default with the annotation and asserting its effect.
//!
//! Where Istio's chart configuration is available (Istio's corpus, as the `istio-corpus` crate
//! finds it: the shared copy, else the pinned Go module's), each case is also injected with Istio's
//! own template and chart settings through the same engine, and the fields the annotation drives
//! must be equal. Without it the comparison is skipped with a message, or fails under
//! `SIDECAR_INJECTOR_REQUIRE_CORPUS=1`.

// Tests report failures by panicking.
#![allow(clippy::panic)]

use std::sync::LazyLock;

use istio_corpus::Corpus;

use injector_engine::{
    CompiledConfig, Options, Outcome, Request, embedded_settings,
    settings::{parse_mesh, parse_values},
};
use serde_json::{Value, json};

fn embedded(native: bool) -> CompiledConfig {
    let (config, values, mesh) = embedded_settings().expect("the embedded defaults load");
    let options = Options {
        native_sidecars: native,
        ..Options::default()
    };
    CompiledConfig::new(config, values, mesh, options).expect("the embedded templates parse")
}

/// Istio's corpus, looked for once (so a missing one is reported once).
static CORPUS: LazyLock<Option<Corpus>> = LazyLock::new(|| {
    istio_corpus::istio_or_skip("default_annotations: the comparison with Istio's default chart")
});

/// Istio's default chart configuration from its corpus, if it loads.
fn istio(corpus: &Corpus, native: bool) -> Option<CompiledConfig> {
    let read = |path: &str| corpus.read(&format!("derived/{path}"));
    let config = injector_core::config::parse_injector_config(&read("config/default.yaml")?)
        .ok()?
        .config;
    let values = parse_values(&read("values/default.json")?).ok()?;
    let mesh = parse_mesh(&read("mesh/default.yaml")?).ok()?;
    let options = Options {
        native_sidecars: native,
        ..Options::default()
    };
    CompiledConfig::new(config, values, mesh, options).ok()
}

fn pod(annotations: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}, "annotations": annotations},
        "spec": {"containers": [{
            "name": "web", "image": "nginx",
            "ports": [{"name": "http", "containerPort": 8080}],
            "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}}
        }]}
    })
}

fn inject_with(injector: &CompiledConfig, pod: &Value) -> Value {
    let request = Request {
        pod: Some(pod),
        namespace: Some("shop"),
        ..Request::default()
    };
    match injector.inject(&request) {
        Ok(Outcome::Injected { pod, .. }) => pod,
        other => panic!("expected an injection, got {other:?}"),
    }
}

/// The pod injected by the embedded default (regular sidecar containers).
fn inject(annotations: Value) -> Value {
    inject_with(&embedded(false), &pod(annotations))
}

fn container<'a>(pod: &'a Value, name: &str) -> &'a Value {
    ["initContainers", "containers"]
        .iter()
        .filter_map(|list| pod["spec"][list].as_array())
        .flatten()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no container {name} in {pod:#}"))
}

fn init_args(pod: &Value) -> Vec<String> {
    strings(&container(pod, "istio-init")["args"])
}

fn proxy_args(pod: &Value) -> Vec<String> {
    strings(&container(pod, "istio-proxy")["args"])
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The value following `flag` in `args`.
fn flag<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

fn env<'a>(container: &'a Value, name: &str) -> Option<&'a Value> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .map(|e| &e["value"])
}

/// Injects `annotations` with the embedded default and, when available, with Istio's template,
/// and asserts that `fields` gives the same for both (for regular and native sidecars).
fn same_as_istio(annotations: Value, fields: impl Fn(&Value) -> Value) {
    // A missing corpus is reported once, where it is looked for.
    let Some(corpus) = CORPUS.as_ref() else {
        return;
    };
    for native in [false, true] {
        let Some(istio) = istio(corpus, native) else {
            istio_corpus::skip_or_fail(&format!(
                "default_annotations: Istio's default chart settings in {} do not load",
                corpus.describe()
            ));
            return;
        };
        let pod = pod(annotations.clone());
        let ours = fields(&inject_with(&embedded(native), &pod));
        let theirs = fields(&inject_with(&istio, &pod));
        assert_eq!(ours, theirs, "native {native}, annotations {annotations}");
    }
}

fn init_args_json(pod: &Value) -> Value {
    json!(init_args(pod))
}

// ---- Traffic capture: istio-init's flags ----

#[test]
fn exclude_outbound_ports_gives_dash_o() {
    let pod = inject(json!({"traffic.sidecar.istio.io/excludeOutboundPorts": "5432,6379"}));
    assert_eq!(flag(&init_args(&pod), "-o"), Some("5432,6379"));
    assert_eq!(
        flag(&init_args(&inject(json!({}))), "-o"),
        None,
        "no -o without the annotation"
    );
    same_as_istio(
        json!({"traffic.sidecar.istio.io/excludeOutboundPorts": "5432,6379"}),
        init_args_json,
    );
}

#[test]
fn include_outbound_ports_gives_dash_q() {
    let pod = inject(json!({"traffic.sidecar.istio.io/includeOutboundPorts": "80,443"}));
    assert_eq!(flag(&init_args(&pod), "-q"), Some("80,443"));
    assert_eq!(flag(&init_args(&inject(json!({}))), "-q"), None);
    same_as_istio(
        json!({"traffic.sidecar.istio.io/includeOutboundPorts": "80,443"}),
        init_args_json,
    );
}

#[test]
fn include_outbound_ip_ranges_gives_dash_i() {
    let pod = inject(json!({"traffic.sidecar.istio.io/includeOutboundIPRanges": "10.0.0.0/8"}));
    assert_eq!(flag(&init_args(&pod), "-i"), Some("10.0.0.0/8"));
    assert_eq!(flag(&init_args(&inject(json!({}))), "-i"), Some("*"));
    same_as_istio(
        json!({"traffic.sidecar.istio.io/includeOutboundIPRanges": "10.0.0.0/8"}),
        init_args_json,
    );
}

#[test]
fn exclude_outbound_ip_ranges_gives_dash_x() {
    let pod = inject(json!({"traffic.sidecar.istio.io/excludeOutboundIPRanges": "169.254.169.254/32"}));
    assert_eq!(flag(&init_args(&pod), "-x"), Some("169.254.169.254/32"));
    same_as_istio(
        json!({"traffic.sidecar.istio.io/excludeOutboundIPRanges": "169.254.169.254/32"}),
        init_args_json,
    );
}

#[test]
fn include_inbound_ports_gives_dash_b() {
    let pod = inject(json!({"traffic.sidecar.istio.io/includeInboundPorts": "8080"}));
    assert_eq!(flag(&init_args(&pod), "-b"), Some("8080"));
    same_as_istio(
        json!({"traffic.sidecar.istio.io/includeInboundPorts": "8080"}),
        init_args_json,
    );
}

#[test]
fn exclude_inbound_ports_join_the_proxys_own_ports() {
    let pod = inject(json!({"traffic.sidecar.istio.io/excludeInboundPorts": "9090"}));
    assert_eq!(flag(&init_args(&pod), "-d"), Some("15090,15021,9090,15020"));
    same_as_istio(
        json!({"traffic.sidecar.istio.io/excludeInboundPorts": "9090"}),
        init_args_json,
    );
}

#[test]
fn kubevirt_interfaces_give_dash_k_and_reroute_virtual_interfaces_win() {
    let pod = inject(json!({"traffic.sidecar.istio.io/kubevirtInterfaces": "net1"}));
    assert_eq!(flag(&init_args(&pod), "-k"), Some("net1"));
    let both = json!({"traffic.sidecar.istio.io/kubevirtInterfaces": "net1", "istio.io/reroute-virtual-interfaces": "net2"});
    assert_eq!(flag(&init_args(&inject(both.clone())), "-k"), Some("net2"));
    same_as_istio(both, init_args_json);
    same_as_istio(
        json!({"traffic.sidecar.istio.io/kubevirtInterfaces": "net1"}),
        init_args_json,
    );
}

#[test]
fn exclude_interfaces_give_dash_c() {
    let pod = inject(json!({"traffic.sidecar.istio.io/excludeInterfaces": "eth1"}));
    assert_eq!(flag(&init_args(&pod), "-c"), Some("eth1"));
    same_as_istio(
        json!({"traffic.sidecar.istio.io/excludeInterfaces": "eth1"}),
        init_args_json,
    );
}

#[test]
fn interception_mode_none_leaves_out_istio_init() {
    let pod = inject(json!({"sidecar.istio.io/interceptionMode": "NONE"}));
    let inits = pod["spec"]["initContainers"].as_array().map_or(0, Vec::len);
    assert_eq!(inits, 0, "{:#}", pod["spec"]);
    assert_eq!(
        env(container(&pod, "istio-proxy"), "ISTIO_META_INTERCEPTION_MODE"),
        Some(&json!("NONE"))
    );
    let native = inject_with(
        &embedded(true),
        &self::pod(json!({"sidecar.istio.io/interceptionMode": "NONE"})),
    );
    let names: Vec<&Value> = native["spec"]["initContainers"]
        .as_array()
        .expect("init containers")
        .iter()
        .map(|c| &c["name"])
        .collect();
    assert_eq!(names, [&json!("istio-proxy")]);
}

#[test]
fn interception_mode_tproxy_is_passed_to_iptables() {
    let pod = inject(json!({"sidecar.istio.io/interceptionMode": "TPROXY"}));
    assert_eq!(flag(&init_args(&pod), "-m"), Some("TPROXY"));
    same_as_istio(json!({"sidecar.istio.io/interceptionMode": "TPROXY"}), |pod| {
        json!([init_args(pod), container(pod, "istio-proxy")["securityContext"]])
    });
}

// ---- The proxy ----

#[test]
fn proxy_resources_come_from_the_annotations() {
    let annotations = json!({
        "sidecar.istio.io/proxyCPU": "250m", "sidecar.istio.io/proxyMemory": "256Mi",
        "sidecar.istio.io/proxyCPULimit": "1", "sidecar.istio.io/proxyMemoryLimit": "512Mi"
    });
    let pod = inject(annotations.clone());
    for name in ["istio-proxy", "istio-init"] {
        assert_eq!(
            container(&pod, name)["resources"],
            json!({"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}}),
            "{name}"
        );
    }
    let resources = |pod: &Value| {
        json!([
            container(pod, "istio-proxy")["resources"],
            container(pod, "istio-init")["resources"]
        ])
    };
    same_as_istio(annotations, resources);
    // One annotation replaces the defaults altogether, as in Istio's template.
    let pod = inject(json!({"sidecar.istio.io/proxyMemory": "64Mi"}));
    assert_eq!(
        container(&pod, "istio-proxy")["resources"],
        json!({"requests": {"memory": "64Mi"}})
    );
    same_as_istio(json!({"sidecar.istio.io/proxyMemory": "64Mi"}), resources);
    same_as_istio(json!({"sidecar.istio.io/proxyCPULimit": "3"}), resources);
}

#[test]
fn proxy_image_replaces_both_images() {
    let pod = inject(json!({"sidecar.istio.io/proxyImage": "registry.example.com/proxyv2:custom"}));
    assert_eq!(
        container(&pod, "istio-proxy")["image"],
        "registry.example.com/proxyv2:custom"
    );
    assert_eq!(
        container(&pod, "istio-init")["image"],
        "registry.example.com/proxyv2:custom"
    );
    same_as_istio(
        json!({"sidecar.istio.io/proxyImage": "registry.example.com/proxyv2:custom"}),
        |pod| {
            json!([
                container(pod, "istio-proxy")["image"],
                container(pod, "istio-init")["image"]
            ])
        },
    );
}

#[test]
fn log_levels_reach_the_proxy_and_the_agent() {
    let annotations = json!({
        "sidecar.istio.io/logLevel": "debug",
        "sidecar.istio.io/componentLogLevel": "upstream:debug",
        "sidecar.istio.io/agentLogLevel": "default:debug"
    });
    let pod = inject(annotations.clone());
    let args = proxy_args(&pod);
    for expected in [
        "--proxyLogLevel=debug",
        "--proxyComponentLogLevel=upstream:debug",
        "--log_output_level=default:debug",
    ] {
        assert!(args.iter().any(|a| a == expected), "{expected} in {args:?}");
    }
    assert!(
        init_args(&pod)
            .iter()
            .any(|a| a == "--log_output_level=default:debug")
    );
    same_as_istio(annotations, |pod| json!([proxy_args(pod), init_args(pod)]));
    same_as_istio(json!({}), |pod| json!([proxy_args(pod), init_args(pod)]));
}

#[test]
fn status_port_moves_the_exclusion_and_zero_removes_the_readiness_probe() {
    let pod = inject(json!({"status.sidecar.istio.io/port": "15099"}));
    assert_eq!(flag(&init_args(&pod), "-d"), Some("15090,15021,15099"));
    let off = inject(json!({"status.sidecar.istio.io/port": "0"}));
    assert!(container(&off, "istio-proxy").get("readinessProbe").is_none());
    assert!(container(&off, "istio-proxy").get("startupProbe").is_none());
    let probes = |pod: &Value| {
        let proxy = container(pod, "istio-proxy");
        json!([init_args(pod), proxy["readinessProbe"], proxy["startupProbe"]])
    };
    same_as_istio(json!({"status.sidecar.istio.io/port": "15099"}), probes);
    same_as_istio(json!({"status.sidecar.istio.io/port": "0"}), probes);
}

#[test]
fn readiness_annotations_shape_the_proxys_readiness_probe() {
    let annotations = json!({
        "readiness.status.sidecar.istio.io/initialDelaySeconds": "5",
        "readiness.status.sidecar.istio.io/periodSeconds": "7",
        "readiness.status.sidecar.istio.io/failureThreshold": "9"
    });
    let pod = inject(annotations.clone());
    let probe = &container(&pod, "istio-proxy")["readinessProbe"];
    assert_eq!(
        (
            &probe["initialDelaySeconds"],
            &probe["periodSeconds"],
            &probe["failureThreshold"]
        ),
        (&json!(5), &json!(7), &json!(9))
    );
    same_as_istio(annotations, |pod| {
        container(pod, "istio-proxy")["readinessProbe"].clone()
    });
}

#[test]
fn hold_application_until_proxy_starts_from_proxy_config() {
    let annotations = json!({"proxy.istio.io/config": "holdApplicationUntilProxyStarts: true"});
    let pod = inject(annotations.clone());
    assert_eq!(
        container(&pod, "istio-proxy")["lifecycle"],
        json!({"postStart": {"exec": {"command": ["pilot-agent", "wait"]}}})
    );
    let containers = pod["spec"]["containers"].as_array().expect("containers");
    assert_eq!(containers[0]["name"], "istio-proxy", "the proxy starts first");
    same_as_istio(annotations, |pod| {
        container(pod, "istio-proxy")["lifecycle"].clone()
    });
    same_as_istio(json!({}), |pod| {
        container(pod, "istio-proxy")["lifecycle"].clone()
    });
}

#[test]
fn proxy_metadata_from_proxy_config_is_in_the_env() {
    let annotations = json!({"proxy.istio.io/config": "proxyMetadata: {ISTIO_META_DNS_CAPTURE: \"true\"}"});
    let pod = inject(annotations);
    assert_eq!(
        env(container(&pod, "istio-proxy"), "ISTIO_META_DNS_CAPTURE"),
        Some(&json!("true"))
    );
    assert_eq!(
        env(container(&pod, "istio-init"), "ISTIO_META_DNS_CAPTURE"),
        Some(&json!("true"))
    );
}

#[test]
fn cap_net_bind_service_runs_the_proxy_as_root_with_the_capability() {
    let annotations = json!({"sidecar.istio.io/capNetBindService": "true"});
    let pod = inject(annotations.clone());
    let security = &container(&pod, "istio-proxy")["securityContext"];
    assert_eq!(security["capabilities"]["add"], json!(["NET_BIND_SERVICE"]));
    assert_eq!(security["runAsUser"], 0);
    same_as_istio(annotations, |pod| {
        container(pod, "istio-proxy")["securityContext"].clone()
    });
    same_as_istio(json!({}), |pod| {
        container(pod, "istio-proxy")["securityContext"].clone()
    });
}

#[test]
fn bootstrap_override_mounts_the_config_map() {
    let annotations = json!({"sidecar.istio.io/bootstrapOverride": "my-bootstrap"});
    let pod = inject(annotations.clone());
    let proxy = container(&pod, "istio-proxy");
    assert_eq!(
        env(proxy, "ISTIO_BOOTSTRAP_OVERRIDE"),
        Some(&json!("/etc/istio/custom-bootstrap/custom_bootstrap.json"))
    );
    assert!(
        proxy["volumeMounts"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["mountPath"] == "/etc/istio/custom-bootstrap"))
    );
    let volumes = pod["spec"]["volumes"].as_array().expect("volumes");
    assert!(
        volumes
            .iter()
            .any(|v| v["name"] == "custom-bootstrap-volume" && v["configMap"]["name"] == "my-bootstrap")
    );
}

#[test]
fn user_volumes_and_mounts_are_added() {
    let annotations = json!({
        "sidecar.istio.io/userVolume": r#"{"certs":{"secret":{"secretName":"web-certs"}}}"#,
        "sidecar.istio.io/userVolumeMount": r#"{"certs":{"mountPath":"/etc/certs","readOnly":true}}"#
    });
    let pod = inject(annotations.clone());
    let volumes = pod["spec"]["volumes"].as_array().expect("volumes");
    assert!(
        volumes.contains(&json!({"name": "certs", "secret": {"secretName": "web-certs"}})),
        "{volumes:#?}"
    );
    let mounts = container(&pod, "istio-proxy")["volumeMounts"]
        .as_array()
        .expect("mounts");
    assert!(
        mounts.contains(&json!({"name": "certs", "mountPath": "/etc/certs", "readOnly": true})),
        "{mounts:#?}"
    );
    let user = |pod: &Value| {
        let find = |list: &Value| {
            list.as_array()
                .and_then(|l| l.iter().find(|i| i["name"] == "certs").cloned())
        };
        json!([
            find(&pod["spec"]["volumes"]),
            find(&container(pod, "istio-proxy")["volumeMounts"])
        ])
    };
    same_as_istio(annotations, user);
}

#[test]
fn native_sidecar_annotation_wins_over_the_setting() {
    let off = inject_with(
        &embedded(true),
        &pod(json!({"sidecar.istio.io/nativeSidecar": "false"})),
    );
    assert!(
        off["spec"]["containers"]
            .as_array()
            .expect("containers")
            .iter()
            .any(|c| c["name"] == "istio-proxy")
    );
    let on = inject_with(
        &embedded(false),
        &pod(json!({"sidecar.istio.io/nativeSidecar": "true"})),
    );
    assert_eq!(container(&on, "istio-proxy")["restartPolicy"], "Always");
}

// ---- Applied by the injector after rendering ----

#[test]
fn rewrite_app_http_probers_sends_probes_through_the_agent() {
    let rewritten = inject(json!({}));
    let web = container(&rewritten, "web");
    assert_eq!(web["readinessProbe"]["httpGet"]["port"], 15020, "{web:#}");
    assert!(env(container(&rewritten, "istio-proxy"), "ISTIO_KUBE_APP_PROBERS").is_some());
    let kept = inject(json!({"sidecar.istio.io/rewriteAppHTTPProbers": "false"}));
    assert_eq!(container(&kept, "web")["readinessProbe"]["httpGet"]["port"], 8080);
    same_as_istio(
        json!({"sidecar.istio.io/rewriteAppHTTPProbers": "false"}),
        |pod| container(pod, "web")["readinessProbe"].clone(),
    );
    same_as_istio(json!({}), |pod| container(pod, "web")["readinessProbe"].clone());
}

#[test]
fn prometheus_merge_metrics_is_honoured() {
    let merged = inject(json!({"prometheus.io/scrape": "true", "prometheus.io/port": "8080"}));
    assert_eq!(merged["metadata"]["annotations"]["prometheus.io/port"], "15020");
    let kept = inject(
        json!({"prometheus.io/scrape": "true", "prometheus.io/port": "8080",
                             "prometheus.istio.io/merge-metrics": "false"}),
    );
    assert_eq!(kept["metadata"]["annotations"]["prometheus.io/port"], "8080");
    assert!(env(container(&kept, "istio-proxy"), "ISTIO_PROMETHEUS_ANNOTATIONS").is_none());
}

#[test]
fn kubectl_default_container_points_at_the_application() {
    let pod = inject(json!({}));
    assert_eq!(
        pod["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"],
        "web"
    );
    assert_eq!(
        pod["metadata"]["annotations"]["kubectl.kubernetes.io/default-logs-container"],
        "web"
    );
    let own = inject(json!({"kubectl.kubernetes.io/default-container": "sidecar"}));
    assert_eq!(
        own["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"],
        "sidecar"
    );
    same_as_istio(json!({}), |pod| {
        let annotations = &pod["metadata"]["annotations"];
        json!([
            pod["metadata"]["labels"],
            annotations["kubectl.kubernetes.io/default-container"],
            annotations["kubectl.kubernetes.io/default-logs-container"],
            annotations["istio.io/rev"]
        ])
    });
}

/// With no annotation at all, the proxy's arguments, probes, lifecycle, security context and
/// istio-init's arguments are Istio's.
#[test]
fn without_annotations_the_driven_fields_are_istios() {
    same_as_istio(json!({}), |pod| {
        let proxy = container(pod, "istio-proxy");
        json!({
            "init": init_args(pod),
            "args": proxy["args"], "readiness": proxy["readinessProbe"], "startup": proxy["startupProbe"],
            "lifecycle": proxy["lifecycle"], "security": proxy["securityContext"], "restart": proxy["restartPolicy"],
            "labels": pod["metadata"]["labels"]
        })
    });
}
