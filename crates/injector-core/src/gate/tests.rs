//! The API server's webhook gate: rules, namespaceSelector, objectSelector.

use serde_json::{Value, json};

use super::*;

fn pods_rule() -> Value {
    json!([{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}])
}

fn configuration(webhooks: Vec<Value>) -> WebhookConfiguration {
    let object = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "istio-sidecar-injector"},
        "webhooks": webhooks,
    });
    WebhookConfiguration::from_object(&object).expect("valid configuration")
}

fn opt_in() -> WebhookConfiguration {
    configuration(vec![json!({
        "name": "sidecar-injector.istio.io",
        "clientConfig": {"service": {"name": "istiod", "namespace": "istio-system", "path": "/inject"}},
        "rules": pods_rule(),
        "namespaceSelector": {"matchLabels": {"istio-injection": "enabled"}},
    })])
}

fn opt_out() -> WebhookConfiguration {
    configuration(vec![json!({
        "name": "sidecar-injector.istio.io",
        "clientConfig": {"url": "https://127.0.0.1:15017/inject"},
        "rules": pods_rule(),
        "namespaceSelector": {"matchExpressions": [{"key": "istio-injection", "operator": "NotIn", "values": ["disabled"]}]},
    })])
}

fn namespace(labels: &[(&str, &str)]) -> NamespaceFacts {
    NamespaceFacts::new(
        "shop",
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

fn called(
    configuration: &WebhookConfiguration,
    namespace: &NamespaceFacts,
    pod_labels: &[(&str, &str)],
) -> bool {
    let labels: Labels = pod_labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    evaluate(std::slice::from_ref(configuration), namespace, &labels)
        .iter()
        .any(|v| v.called)
}

#[test]
fn opt_in_calls_only_labelled_namespaces() {
    assert!(called(
        &opt_in(),
        &namespace(&[("istio-injection", "enabled")]),
        &[]
    ));
    assert!(!called(&opt_in(), &namespace(&[]), &[]));
    assert!(!called(
        &opt_in(),
        &namespace(&[("istio-injection", "disabled")]),
        &[]
    ));
}

#[test]
fn opt_out_calls_every_namespace_not_disabled() {
    assert!(called(&opt_out(), &namespace(&[]), &[]));
    assert!(called(
        &opt_out(),
        &namespace(&[("istio-injection", "enabled")]),
        &[]
    ));
    assert!(!called(
        &opt_out(),
        &namespace(&[("istio-injection", "disabled")]),
        &[]
    ));
}

#[test]
fn verdict_explains_the_failed_selector() {
    let verdicts = evaluate(&[opt_in()], &namespace(&[]), &Labels::new());
    let verdict = &verdicts[0];
    assert!(verdict.rules_match);
    assert!(!verdict.namespace_selector.matched);
    assert_eq!(verdict.namespace_selector.unmet, ["istio-injection=enabled"]);
    assert!(verdict.object_selector.matched);
    assert_eq!(verdict.object_selector.selector, "<everything>");
    assert_eq!(verdict.client, "service istio-system/istiod:443/inject");
    assert_eq!(verdict.failure_policy, "Fail");
}

#[test]
fn object_selector_reads_pod_labels_only() {
    let configuration = configuration(vec![json!({
        "name": "object.sidecar-injector.istio.io",
        "rules": pods_rule(),
        "objectSelector": {"matchExpressions": [{"key": "sidecar.istio.io/inject", "operator": "In", "values": ["true"]}]},
    })]);
    assert!(called(
        &configuration,
        &namespace(&[]),
        &[("sidecar.istio.io/inject", "true")]
    ));
    assert!(!called(&configuration, &namespace(&[]), &[]));
}

#[test]
fn namespace_name_label_is_always_present() {
    let configuration = configuration(vec![json!({
        "name": "auto.sidecar-injector.istio.io",
        "rules": pods_rule(),
        "namespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "kube-public"]}]},
    })]);
    assert!(called(&configuration, &namespace(&[]), &[]));
    let system = NamespaceFacts::new("kube-system", Labels::new());
    assert!(!called(&configuration, &system, &[]));
}

#[test]
fn rules_must_select_pod_creation() {
    let cases = [
        (
            json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}),
            true,
        ),
        (
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}),
            true,
        ),
        (
            json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/*"]}),
            true,
        ),
        (
            json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["*/*"]}),
            true,
        ),
        (
            json!({"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}),
            false,
        ),
        (
            json!({"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["pods"]}),
            false,
        ),
        (
            json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/status"]}),
            false,
        ),
        (
            json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["deployments"]}),
            false,
        ),
        (
            json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "Cluster"}),
            false,
        ),
        (
            json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "Namespaced"}),
            true,
        ),
    ];
    for (rule, expected) in cases {
        let configuration = configuration(vec![json!({"name": "w", "rules": [rule.clone()]})]);
        assert_eq!(called(&configuration, &namespace(&[]), &[]), expected, "{rule}");
    }
    let no_rules = configuration(vec![json!({"name": "w"})]);
    assert!(!called(&no_rules, &namespace(&[]), &[]));
}

#[test]
fn match_conditions_are_evaluated_and_the_unknown_noted() {
    let configuration = configuration(vec![json!({
        "name": "w", "rules": pods_rule(),
        "matchConditions": [
            {"name": "not-host-network", "expression": "!object.spec.?hostNetwork.orValue(false)"},
            {"name": "not-system", "expression": "!request.userInfo.username.startsWith('system:')"},
        ],
    })]);
    let configurations = [configuration];
    let verdicts = evaluate(&configurations, &namespace(&[]), &Labels::new());
    assert!(verdicts[0].called);
    assert!(
        verdicts[0].notes[0].contains("not-system"),
        "{:?}",
        verdicts[0].notes
    );
    let host = json!({"metadata": {}, "spec": {"hostNetwork": true}});
    let verdicts = evaluate_pod(&configurations, &namespace(&[]), &host);
    assert!(!verdicts[0].called);
    assert_eq!(verdicts[0].match_conditions.failed, ["not-host-network"]);
    assert!(verdicts[0].notes.is_empty(), "{:?}", verdicts[0].notes);
}

#[test]
fn invalid_configurations_name_the_field() {
    let bad_selector = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration", "metadata": {"name": "x"},
        "webhooks": [{"name": "w", "namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["b"]}]}}]
    });
    let error = WebhookConfiguration::from_object(&bad_selector).expect_err("invalid");
    assert_eq!(
        error.path,
        "webhooks[0].namespaceSelector.matchExpressions[0].values"
    );

    let validating =
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration"});
    let error = WebhookConfiguration::from_object(&validating).expect_err("wrong kind");
    assert!(
        error.message.contains("validating webhooks never inject"),
        "{error}"
    );

    let unnamed = json!({"kind": "MutatingWebhookConfiguration", "webhooks": [{"rules": []}]});
    assert_eq!(
        WebhookConfiguration::from_object(&unnamed)
            .expect_err("no name")
            .path,
        "webhooks[0].name"
    );
}

#[test]
fn namespace_objects_are_read_with_their_labels() {
    let facts = NamespaceFacts::from_object(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": {"istio-injection": "enabled"}}}))
        .expect("valid namespace");
    assert_eq!(facts.labels.len(), 2);
    assert_eq!(facts.labels[NAMESPACE_NAME_LABEL], "shop");
    let error =
        NamespaceFacts::from_object(&json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}))
            .expect_err("pod");
    assert_eq!(error.path, "kind");
}
