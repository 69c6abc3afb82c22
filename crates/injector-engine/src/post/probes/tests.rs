//! Probe rewriting, checked against the shapes of Istio's golden files.

use serde_json::{Value, json};

use super::*;

fn hello_probes() -> Value {
    json!({
        "metadata": {"annotations": {}},
        "spec": {
            "containers": [
                {"name": "hello", "ports": [{"name": "http", "containerPort": 80}],
                 "livenessProbe": {"httpGet": {"port": "http"}},
                 "readinessProbe": {"httpGet": {"port": 3333}},
                 "lifecycle": {"preStop": {"httpGet": {"port": 91}}, "postStart": {"tcpSocket": {"port": 93}}}},
                {"name": "world", "ports": [{"name": "http", "containerPort": 90}],
                 "livenessProbe": {"httpGet": {"port": "http"}},
                 "readinessProbe": {"exec": {"command": ["cat", "/tmp/healthy"]}}}
            ],
            "initContainers": [{"name": "istio-proxy", "env": [{"name": "X", "value": "y"}]}]
        }
    })
}

fn probers_env(pod: &Value) -> Option<String> {
    pod["spec"]["initContainers"][0]["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == APP_PROBERS_ENV)
        .and_then(|e| e["value"].as_str().map(str::to_owned))
}

#[test]
fn matches_the_hello_probes_golden() {
    let mut pod = hello_probes();
    apply_rewrite(&mut pod, true, 15020);
    assert_eq!(
        probers_env(&pod).as_deref(),
        Some(
            r#"{"/app-health/hello/livez":{"httpGet":{"port":80}},"/app-health/hello/readyz":{"httpGet":{"port":3333}},"/app-health/world/livez":{"httpGet":{"port":90}},"/app-lifecycle/hello/poststartz":{"tcpSocket":{"port":93}},"/app-lifecycle/hello/prestopz":{"httpGet":{"port":91}}}"#
        )
    );
    let hello = &pod["spec"]["containers"][0];
    assert_eq!(
        hello["livenessProbe"],
        json!({"httpGet": {"port": 15020, "path": "/app-health/hello/livez"}})
    );
    assert_eq!(
        hello["lifecycle"]["postStart"],
        json!({"httpGet": {"path": "/app-lifecycle/hello/poststartz", "port": 15020}})
    );
    assert_eq!(
        hello["lifecycle"]["preStop"]["httpGet"]["path"],
        "/app-lifecycle/hello/prestopz"
    );
    let world = &pod["spec"]["containers"][1];
    assert_eq!(
        world["readinessProbe"],
        json!({"exec": {"command": ["cat", "/tmp/healthy"]}}),
        "exec probes stay"
    );
}

#[test]
fn https_becomes_http_and_keeps_scheme_in_the_prober() {
    let mut pod = json!({"spec": {"containers": [
        {"name": "app", "readinessProbe": {"httpGet": {"port": 3333, "scheme": "HTTPS", "path": "/ready"}, "timeoutSeconds": 5}},
        {"name": "istio-proxy"}]}});
    apply_rewrite(&mut pod, true, 15020);
    let env = pod["spec"]["containers"][1]["env"][0]["value"]
        .as_str()
        .expect("env");
    assert_eq!(
        env,
        r#"{"/app-health/app/readyz":{"httpGet":{"path":"/ready","port":3333,"scheme":"HTTPS"},"timeoutSeconds":5}}"#
    );
    let probe = &pod["spec"]["containers"][0]["readinessProbe"];
    assert_eq!(probe["httpGet"]["scheme"], "HTTP");
    assert_eq!(probe["httpGet"]["path"], "/app-health/app/readyz");
    assert_eq!(probe["timeoutSeconds"], 5, "other probe fields are kept");
}

#[test]
fn tcp_and_grpc_probes_become_http() {
    let mut pod = json!({"spec": {"containers": [
        {"name": "app", "livenessProbe": {"tcpSocket": {"port": 80}}, "readinessProbe": {"grpc": {"port": 9000}, "periodSeconds": 3}},
        {"name": "istio-proxy"}]}});
    apply_rewrite(&mut pod, true, 15020);
    let env = pod["spec"]["containers"][1]["env"][0]["value"]
        .as_str()
        .expect("env");
    assert_eq!(
        env,
        r#"{"/app-health/app/livez":{"tcpSocket":{"port":80}},"/app-health/app/readyz":{"grpc":{"port":9000,"service":null}}}"#
    );
    let app = &pod["spec"]["containers"][0];
    assert_eq!(
        app["livenessProbe"],
        json!({"httpGet": {"path": "/app-health/app/livez", "port": 15020}})
    );
    assert_eq!(
        app["readinessProbe"],
        json!({"periodSeconds": 3, "httpGet": {"path": "/app-health/app/readyz", "port": 15020}})
    );
}

#[test]
fn no_sidecar_or_disabled_means_no_change() {
    let mut without_proxy =
        json!({"spec": {"containers": [{"name": "app", "livenessProbe": {"httpGet": {"port": 80}}}]}});
    let before = without_proxy.clone();
    apply_rewrite(&mut without_proxy, true, 15020);
    assert_eq!(without_proxy, before);

    let mut pod = hello_probes();
    pod["metadata"]["annotations"][REWRITE_ANNOTATION] = json!("false");
    let before = pod.clone();
    apply_rewrite(&mut pod, true, 15020);
    assert_eq!(pod, before, "the annotation wins over the values");

    let mut pod = hello_probes();
    let before = pod.clone();
    apply_rewrite(&mut pod, false, 15020);
    assert_eq!(pod, before);
}

#[test]
fn status_port_annotation_moves_the_rewrite_only() {
    let mut pod = hello_probes();
    pod["metadata"]["annotations"][STATUS_PORT_ANNOTATION] = json!("15999");
    apply_rewrite(&mut pod, true, 15020);
    assert_eq!(
        pod["spec"]["containers"][0]["livenessProbe"]["httpGet"]["port"],
        15999
    );
    let mut bad = hello_probes();
    bad["metadata"]["annotations"][STATUS_PORT_ANNOTATION] = json!("abc");
    apply_rewrite(&mut bad, true, 15020);
    assert_eq!(
        bad["spec"]["containers"][0]["livenessProbe"]["httpGet"]["port"], 0,
        "Go's Atoi error gives 0"
    );
}

#[test]
fn already_rewritten_probes_are_not_recorded_again() {
    let pod = json!({"spec": {"containers": [{"name": "app", "readinessProbe": {"httpGet": {"path": "/app-health/app/readyz", "port": 15020}}}]}});
    assert_eq!(dump_app_probers(&pod, 15020), None);
}

#[test]
fn unknown_named_ports_are_skipped() {
    let pod =
        json!({"spec": {"containers": [{"name": "app", "readinessProbe": {"httpGet": {"port": "nope"}}}]}});
    assert_eq!(dump_app_probers(&pod, 15020), None);
}

#[test]
fn re_injection_merges_with_old_keys_winning() {
    let mut env = vec![json!({"name": APP_PROBERS_ENV, "value": r#"{"/a":{"httpGet":{"port":1}}}"#})];
    merge_or_append_probers(
        true,
        &mut env,
        r#"{"/a":{"httpGet":{"port":2}},"/b":{"httpGet":{"port":3}}}"#,
    );
    assert_eq!(
        env[0]["value"],
        r#"{"/a":{"httpGet":{"port":1}},"/b":{"httpGet":{"port":3}}}"#
    );
    let mut fresh = vec![json!({"name": APP_PROBERS_ENV, "value": "{}"})];
    merge_or_append_probers(false, &mut fresh, r#"{"/b":{}}"#);
    assert_eq!(fresh.len(), 2, "a first injection appends");
}

#[test]
fn grpc_probers_carry_the_service_as_go_marshals_it() {
    // `GRPCAction.Service` is a `*string` without `omitempty`: unset is `null`, set is kept.
    let mut pod = json!({"spec": {"containers": [
        {"name": "app",
         "readinessProbe": {"grpc": {"port": 9090}},
         "livenessProbe": {"grpc": {"port": 9091, "service": "health"}},
         "startupProbe": {"grpc": {"port": 9092, "service": ""}}},
        {"name": "istio-proxy"}]}});
    apply_rewrite(&mut pod, true, 15020);
    assert_eq!(
        pod["spec"]["containers"][1]["env"][0]["value"],
        r#"{"/app-health/app/livez":{"grpc":{"port":9091,"service":"health"}},"/app-health/app/readyz":{"grpc":{"port":9090,"service":null}},"/app-health/app/startupz":{"grpc":{"port":9092,"service":""}}}"#
    );
}
