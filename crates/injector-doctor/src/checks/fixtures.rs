//! Hand-built snapshots for the checks' tests.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::{ReadFailure, ReadFailureKind, Settings, Snapshot};

/// "now" in every test.
pub const NOW: i64 = 1_800_000_000;

/// Istio's defaults: revision `default` in `istio-system`.
pub fn settings() -> Settings {
    Settings {
        revision: "default".into(),
        injector_namespace: "istio-system".into(),
        injector_configmap: "istio-sidecar-injector".into(),
        ca_secret: "sidecar-injector-ca".into(),
        tls_secret: None,
        focus: None,
        extra_webhook_configurations: Vec::new(),
        service_name: "istiod".into(),
        dns_names: Vec::new(),
    }
}

/// A snapshot of a cluster with nothing in it (every read succeeded).
pub fn empty() -> Snapshot {
    Snapshot {
        now: NOW,
        settings: settings(),
        namespaces: Ok(Vec::new()),
        webhook_configurations: Ok(Vec::new()),
        injector_configmap: Ok(None),
        workloads: BTreeMap::new(),
        pods: Ok(Vec::new()),
        services: BTreeMap::new(),
        endpoint_slices: BTreeMap::new(),
        service_pods: BTreeMap::new(),
        disruption_budgets: BTreeMap::new(),
        events: Ok(Vec::new()),
        certificates: BTreeMap::new(),
        handshakes: BTreeMap::new(),
        probe: None,
    }
}

/// A forbidden read.
pub fn forbidden(attempted: &str) -> ReadFailure {
    ReadFailure {
        attempted: attempted.into(),
        kind: ReadFailureKind::Forbidden,
        message: "forbidden".into(),
    }
}

/// Decodes a Kubernetes object from JSON.
pub fn object<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

/// A namespace with labels.
pub fn namespace(name: &str, labels: Value) -> k8s_openapi::api::core::v1::Namespace {
    object(json!({"metadata": {"name": name, "labels": labels}}))
}

/// Istio's opt-in webhook (`istio-injection=enabled`) by `url`, with `ca_bundle` (PEM).
pub fn url_webhook(url: &str, ca_bundle: &str) -> Value {
    json!({
        "name": "namespace.sidecar-injector.istio.io",
        "clientConfig": {"url": url, "caBundle": base64(ca_bundle)},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
        "namespaceSelector": {"matchLabels": {"istio-injection": "enabled"}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "failurePolicy": "Fail"
    })
}

/// A MutatingWebhookConfiguration with these webhooks.
pub fn configuration(
    name: &str,
    webhooks: Vec<Value>,
) -> k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration {
    object(json!({"metadata": {"name": name}, "webhooks": webhooks}))
}

/// Base64 of text.
pub fn base64(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// The injector ConfigMap with `config`.
pub fn configmap(config: &str) -> k8s_openapi::api::core::v1::ConfigMap {
    object(
        json!({"metadata": {"name": "istio-sidecar-injector", "namespace": "istio-system"}, "data": {"config": config}}),
    )
}
