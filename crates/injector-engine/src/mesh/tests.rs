//! Mesh config merging, ProxyConfig validation and `protoToJSON`, against Istio's goldens.

use serde_json::json;

use super::*;

fn mesh_with(overlay: &str) -> Value {
    apply_mesh_config(overlay, &default_mesh_config()).expect("valid mesh")
}

#[test]
fn default_proxy_config_prints_as_empty() {
    assert_eq!(proto_to_json(&default_proxy_config()), "{}");
    assert_eq!(
        proto_to_json(
            &mesh_with("defaultConfig:\n  discoveryAddress: istiod.istio-system.svc:15012\n")["defaultConfig"]
        ),
        "{}"
    );
}

#[test]
fn golden_proxy_configs() {
    let cases = [
        (
            "defaultConfig: {interceptionMode: TPROXY}",
            r#"{"interceptionMode":"TPROXY"}"#,
        ),
        ("defaultConfig: {tracing: {}}", r#"{"tracing":{}}"#),
        (
            "defaultConfig: {drainDuration: 23s}",
            r#"{"drainDuration":"23s"}"#,
        ),
        (
            "defaultConfig: {holdApplicationUntilProxyStarts: false}",
            r#"{"holdApplicationUntilProxyStarts":false}"#,
        ),
        (
            "defaultConfig: {holdApplicationUntilProxyStarts: true}",
            r#"{"holdApplicationUntilProxyStarts":true}"#,
        ),
        ("defaultConfig: {concurrency: 0}", r#"{"concurrency":0}"#),
        (
            "defaultConfig: {interceptionMode: REDIRECT, statusPort: 15020, drainDuration: 45.000s}",
            "{}",
        ),
        (
            "defaultConfig: {proxyMetadata: {B: '2', A: '1'}, meshId: m, interceptionMode: TPROXY}",
            r#"{"interceptionMode":"TPROXY","proxyMetadata":{"A":"1","B":"2"},"meshId":"m"}"#,
        ),
    ];
    for (overlay, expected) in cases {
        assert_eq!(
            proto_to_json(&mesh_with(overlay)["defaultConfig"]),
            expected,
            "{overlay}"
        );
    }
}

#[test]
fn annotation_merges_over_the_mesh_default() {
    let mesh = mesh_with("defaultConfig:\n  proxyMetadata: {A: mesh, B: mesh}\n  interceptionMode: TPROXY\n");
    let pc = effective_proxy_config(
        &mesh,
        Some("proxyMetadata: {B: pod, C: pod}\nholdApplicationUntilProxyStarts: true\n"),
    )
    .expect("valid annotation");
    assert_eq!(pc["proxyMetadata"], json!({"A": "mesh", "B": "pod", "C": "pod"}));
    assert_eq!(pc["interceptionMode"], "TPROXY");
    assert_eq!(pc["holdApplicationUntilProxyStarts"], true);
    let snake =
        effective_proxy_config(&mesh, Some("hold_application_until_proxy_starts: true")).expect("snake case");
    assert_eq!(snake["holdApplicationUntilProxyStarts"], true);
}

#[test]
fn invalid_proxy_configs_name_the_field() {
    for (yaml, fragment) in [
        (
            "drainDuration: 1x",
            "drainDuration: time: unknown unit \"x\" in duration \"1x\"",
        ),
        ("drainDuration: 5", "drainDuration: invalid value"),
        ("interceptionMode: MAGIC", "interceptionMode: invalid value"),
        ("statusPort: abc", "statusPort: invalid value for int32"),
        ("proxyMetadata: {A: 1}", "proxyMetadata: invalid value"),
        ("- a list", "must be a mapping"),
        ("a: [", "invalid YAML"),
    ] {
        let error = validate_proxy_config(yaml).expect_err(yaml);
        assert!(error.contains(fragment), "{yaml}: {error}");
    }
    assert_eq!(validate_proxy_config("{}"), Ok(()));
    assert_eq!(
        validate_proxy_config("concurrency: \"4\"\nterminationDrainDuration: 0.5s"),
        Ok(())
    );
}

#[test]
fn mesh_merge_rules() {
    let mesh = mesh_with(
        "trustDomain: example.org\ntrustDomainAliases: [b, a]\nextensionProviders:\n- {name: prometheus, prometheus: {x: 1}}\n- {name: otel, opentelemetry: {port: 4317}}\ndefaultProviders: {tracing: [otel]}\ninboundTrafficPolicy: {mode: LOCALHOST}\n",
    );
    assert_eq!(mesh["trustDomain"], "example.org");
    assert_eq!(mesh["trustDomainAliases"], json!(["a", "b"]));
    let providers: Vec<&str> = mesh["extensionProviders"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(providers, ["prometheus", "stackdriver", "envoy", "otel"]);
    assert_eq!(mesh["extensionProviders"][0]["prometheus"], json!({"x": 1}));
    assert_eq!(
        mesh["defaultProviders"],
        json!({"metrics": ["prometheus"], "tracing": ["otel"]})
    );
    assert_eq!(mesh["inboundTrafficPolicy"]["mode"], "LOCALHOST");
    assert_eq!(
        mesh["rootNamespace"], "istio-system",
        "untouched fields keep their defaults"
    );
}

#[test]
fn durations() {
    assert_eq!(parse_duration("23s"), Ok(23_000_000_000));
    assert_eq!(parse_duration("0.5s"), Ok(500_000_000));
    // Istio's jsonpb reads durations with Go's time.ParseDuration.
    for (text, nanos) in [
        ("1m", 60_000_000_000),
        ("1h30m", 5_400_000_000_000),
        ("500ms", 500_000_000),
        ("-1.5s", -1_500_000_000),
        ("+2us", 2_000),
        ("1.5µs", 1_500),
        (".5h", 1_800_000_000_000),
        ("0", 0),
        ("9223372036.854775807s", 9_223_372_036_854_775_807),
    ] {
        assert_eq!(parse_duration(text), Ok(nanos), "{text}");
    }
    for (text, error) in [
        ("", r#"time: invalid duration """#),
        ("1", r#"time: missing unit in duration "1""#),
        ("1d", r#"time: unknown unit "d" in duration "1d""#),
        (".s", r#"time: invalid duration ".s""#),
        ("1m-", r#"time: unknown unit "m-" in duration "1m-""#),
        ("9223372037s", r#"time: invalid duration "9223372037s""#),
    ] {
        assert_eq!(parse_duration(text), Err(error.to_owned()), "{text}");
    }
    assert_eq!(canonical_duration("1m30s"), "90s");
    assert_eq!(canonical_duration("1.5s"), "1.500s");
    assert_eq!(canonical_duration("45.000000000s"), "45s");
    for (input, expected) in [
        ("23s", "23s"),
        ("60s", "1m0s"),
        ("0.5s", "500ms"),
        ("3723.5s", "1h2m3.5s"),
        ("0s", "0s"),
        ("0.000001s", "1µs"),
    ] {
        assert_eq!(go_duration_string(input).as_deref(), Some(expected), "{input}");
    }
}

#[test]
fn unknown_proxy_config_fields_are_dropped_as_istio_retries_leniently() {
    // Istio's ApplyYAML: a strict decode, then on error one allowing unknown fields.
    let annotation = "concurrency: 3\nnoSuchField: 1";
    assert_eq!(validate_proxy_config(annotation), Ok(()));
    let pc = effective_proxy_config(&mesh_with(""), Some(annotation)).expect("lenient");
    assert_eq!(pc["concurrency"], 3);
    assert!(pc.get("noSuchField").is_none(), "{pc}");
    // A wrong type in a known field still fails, unknown fields or not.
    let error = validate_proxy_config("concurrency: abc\nnoSuchField: 1").expect_err("bad type");
    assert!(error.contains("concurrency"), "{error}");
}
