//! `explain` on the scenarios of Istio's injection troubleshooting page: the whole decision
//! table, misplaced annotations, remedies.

use serde_json::{Value, json};

use super::*;
use crate::{config::parse_injector_config, gate::NamespaceFacts, workload::pod_template};

fn deployment(template_annotations: Value, own_annotations: Value) -> PodTemplate {
    let object = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "annotations": own_annotations},
        "spec": {"template": {
            "metadata": {"labels": {"app": "web"}, "annotations": template_annotations},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}
    });
    pod_template(&object).expect("valid").expect("workload")
}

fn opt_in() -> Vec<WebhookConfiguration> {
    let object = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "istio-sidecar-injector"},
        "webhooks": [{
            "name": "sidecar-injector.istio.io",
            "clientConfig": {"service": {"name": "istiod", "namespace": "istio-system", "path": "/inject"}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
            "namespaceSelector": {"matchLabels": {"istio-injection": "enabled"}}
        }]
    });
    vec![WebhookConfiguration::from_object(&object).expect("valid")]
}

fn config(policy: &str) -> InjectorConfig {
    parse_injector_config(&format!("policy: {policy}\ntemplates: {{sidecar: x}}\n"))
        .expect("valid")
        .config
}

fn namespace(label: Option<&str>) -> NamespaceFacts {
    let labels = label
        .map(|v| ("istio-injection".to_owned(), v.to_owned()))
        .into_iter()
        .collect();
    NamespaceFacts::new("shop", labels)
}

fn run(workload: &PodTemplate, namespace: &NamespaceFacts, policy: &str) -> Explanation {
    let webhooks = opt_in();
    let config = config(policy);
    explain(
        workload,
        Context {
            namespace: Some(namespace),
            webhooks: Webhooks::Given(&webhooks),
            config: &config,
            origin: &ConfigOrigin::File,
        },
    )
}

fn inject_annotation(value: Option<&str>) -> Value {
    match value {
        Some(value) => json!({"sidecar.istio.io/inject": value}),
        None => json!({}),
    }
}

/// Every row of the troubleshooting page's decision table (namespaceSelector × default policy ×
/// pod annotation), through the API server gate and the injector.
#[test]
fn seed_decision_table() {
    let rows = [
        (true, "enabled", Some("true"), true),
        (true, "enabled", Some("false"), false),
        (true, "enabled", None, true),
        (true, "disabled", Some("true"), true),
        (true, "disabled", Some("false"), false),
        (true, "disabled", None, false),
        (false, "enabled", Some("true"), false),
        (false, "enabled", None, false),
        (false, "disabled", Some("true"), false),
        (false, "disabled", None, false),
    ];
    for (selector_matches, policy, annotation, expected) in rows {
        let workload = deployment(inject_annotation(annotation), json!({}));
        let namespace = namespace(selector_matches.then_some("enabled"));
        let explanation = run(&workload, &namespace, policy);
        let row = format!("{selector_matches} {policy} {annotation:?}");
        assert_eq!(
            explanation.injected, expected,
            "row {row}: {}",
            explanation.reason
        );
        assert_eq!(explanation.webhook_called, Some(selector_matches), "row {row}");
        assert_eq!(
            explanation.conditions.namespace_selector_matches,
            Some(selector_matches),
            "row {row}"
        );
        if !selector_matches {
            assert_eq!(explanation.decided_by, "namespaceSelector", "row {row}");
            assert!(
                explanation.steps.iter().all(|s| s.stage == Stage::ApiServer),
                "row {row}"
            );
        }
    }
}

#[test]
fn not_called_names_the_selector_and_proposes_the_label() {
    let workload = deployment(json!({}), json!({}));
    let explanation = run(&workload, &namespace(None), "enabled");
    assert!(!explanation.injected);
    assert_eq!(
        explanation.reason,
        "not injected: the API server does not call the injector — namespace \"shop\" does not match the \
         namespaceSelector of webhook sidecar-injector.istio.io (istio-injection=enabled)"
    );
    let commands: Vec<&str> = explanation
        .remedies
        .iter()
        .filter_map(|r| r.command.as_deref())
        .collect();
    assert!(
        commands.contains(&"kubectl label namespace shop istio-injection=enabled --overwrite"),
        "{commands:?}"
    );
    assert!(
        commands.contains(&"kubectl -n shop rollout restart deployment web"),
        "{commands:?}"
    );
    let decisive: Vec<&str> = explanation
        .steps
        .iter()
        .filter(|s| s.decisive)
        .map(|s| s.check.as_str())
        .collect();
    assert_eq!(decisive, ["namespaceSelector"]);
}

#[test]
fn annotation_on_deployment_metadata_has_no_effect() {
    let workload = deployment(json!({}), json!({"sidecar.istio.io/inject": "true"}));
    let explanation = run(&workload, &namespace(Some("enabled")), "disabled");
    assert!(
        !explanation.injected,
        "the Deployment's own annotation must not count"
    );
    assert_eq!(explanation.decided_by, "defaultPolicy");
    assert!(
        explanation.warnings.iter().any(
            |w| w.contains("Deployment's own metadata: sidecar.istio.io/inject has no effect here; move it to spec.template.metadata")
                && w.contains("set it at spec.template.metadata.annotations instead")
        ),
        "{:?}",
        explanation.warnings
    );
    let commands: Vec<&str> = explanation
        .remedies
        .iter()
        .filter_map(|r| r.command.as_deref())
        .collect();
    assert!(
        commands.contains(
            &r#"kubectl -n shop patch deployment web --type merge -p '{"spec":{"template":{"metadata":{"annotations":{"sidecar.istio.io/inject":"true"}}}}}'"#
        ),
        "{commands:?}"
    );
}

#[test]
fn annotation_on_pod_template_counts() {
    let workload = deployment(json!({"sidecar.istio.io/inject": "true"}), json!({}));
    let explanation = run(&workload, &namespace(Some("enabled")), "disabled");
    assert!(explanation.injected);
    assert_eq!(
        explanation.reason,
        "injected: the pod template's annotation sidecar.istio.io/inject is \"true\""
    );
    assert_eq!(explanation.conditions.pod_override.as_deref(), Some("true"));
    assert_eq!(
        explanation.conditions.pod_override_source,
        Some(ChoiceSource::Annotation)
    );
}

#[test]
fn unknown_policy_is_explained() {
    let workload = deployment(json!({"sidecar.istio.io/inject": "true"}), json!({}));
    let explanation = run(&workload, &namespace(Some("enabled")), "Enabled");
    assert!(!explanation.injected);
    assert_eq!(explanation.decided_by, "invalidPolicy");
    assert!(!explanation.conditions.policy_valid);
    assert!(
        explanation
            .reason
            .contains("\"Enabled\" is neither \"enabled\" nor \"disabled\""),
        "{}",
        explanation.reason
    );
    assert!(explanation.remedies.iter().any(
        |r| r.command.as_deref() == Some("kubectl -n istio-system edit configmap istio-sidecar-injector")
    ));
}

#[test]
fn with_webhook_none_the_gate_is_unknown() {
    let workload = deployment(json!({}), json!({}));
    let config = InjectorConfig::default();
    let explanation = explain(
        &workload,
        Context {
            namespace: None,
            webhooks: Webhooks::AssumeCalled,
            config: &config,
            origin: &ConfigOrigin::IstioDefaults,
        },
    );
    assert_eq!(explanation.webhook_called, None);
    assert!(explanation.injected);
    assert_eq!(explanation.decided_by, "defaultPolicy");
    assert_eq!(explanation.conditions.namespace_selector_matches, None);
    assert!(
        explanation
            .warnings
            .iter()
            .any(|w| w.starts_with("--webhook none: assuming the API server calls the injector"))
    );
    assert!(
        explanation
            .warnings
            .iter()
            .any(|w| w.starts_with("no --injector-config given"))
    );
    let json = serde_json::to_value(&explanation).expect("serializes");
    assert_eq!(json["webhookCalled"], Value::Null);
    for key in [
        "kind",
        "name",
        "namespace",
        "injected",
        "reason",
        "steps",
        "warnings",
    ] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
}

#[test]
fn pod_in_unlabelled_namespace_without_namespace_file_is_assumed_unlabelled() {
    let pod = pod_template(&json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "shop"}, "spec": {}}))
        .expect("valid")
        .expect("pod");
    let webhooks = opt_in();
    let config = config("enabled");
    let explanation = explain(
        &pod,
        Context {
            namespace: None,
            webhooks: Webhooks::Given(&webhooks),
            config: &config,
            origin: &ConfigOrigin::File,
        },
    );
    assert!(!explanation.injected);
    assert!(
        explanation
            .warnings
            .iter()
            .any(|w| w.contains("assuming namespace \"shop\" has no labels"))
    );
    assert!(
        explanation
            .remedies
            .iter()
            .any(|r| r.description.contains("delete and re-create the pod"))
    );
}

#[test]
fn namespace_mismatch_is_warned_about() {
    let workload = deployment(json!({}), json!({}));
    let other = NamespaceFacts::new(
        "other",
        [("istio-injection".to_owned(), "enabled".to_owned())].into(),
    );
    let explanation = run(&workload, &other, "enabled");
    assert_eq!(explanation.namespace, "shop");
    assert!(
        !explanation.injected,
        "the other namespace's labels must not be used"
    );
    assert!(
        explanation
            .warnings
            .iter()
            .any(|w| w.contains("--namespace describes \"other\""))
    );
}

#[test]
fn injected_pod_gets_the_way_to_opt_out() {
    let workload = deployment(json!({}), json!({}));
    let explanation = run(&workload, &namespace(Some("enabled")), "enabled");
    assert!(explanation.injected);
    assert!(
        explanation
            .remedies
            .iter()
            .any(|r| r.description.starts_with("to skip injection")
                && r.command
                    .as_deref()
                    .is_some_and(|c| c.contains(r#""sidecar.istio.io/inject":"false""#))),
        "{:?}",
        explanation.remedies
    );
}

fn explain_with_istio_chart(
    workload: &PodTemplate,
    namespace: Option<&NamespaceFacts>,
    revision: &str,
) -> Explanation {
    let config = InjectorConfig::default();
    explain(
        workload,
        Context {
            namespace,
            webhooks: Webhooks::IstioChart { revision },
            config: &config,
            origin: &ConfigOrigin::IstioDefaults,
        },
    )
}

fn pod_with_labels(labels: Value) -> PodTemplate {
    let object = json!({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": "web", "namespace": "shop", "labels": labels},
                        "spec": {"containers": [{"name": "web", "image": "nginx"}]}});
    pod_template(&object).expect("valid").expect("workload")
}

/// Regression (tried as a new user would): without --webhook, a namespace labelled
/// `istio-injection=disabled` was reported INJECTED. Istio's chart never calls the injector there.
#[test]
fn without_webhook_istio_disabled_namespace_is_not_injected() {
    let workload = deployment(json!({}), json!({}));
    let explanation = explain_with_istio_chart(&workload, Some(&namespace(Some("disabled"))), "default");
    assert!(!explanation.injected, "{explanation:#?}");
    assert_eq!(explanation.webhook_called, Some(false));
    assert_eq!(explanation.webhook_source, WebhookSource::IstioChart);
    assert_eq!(explanation.decided_by, "namespaceSelector");
    assert!(
        explanation.warnings[0]
            .starts_with("no --webhook given: assuming the webhooks Istio's chart installs"),
        "{:?}",
        explanation.warnings
    );
    assert!(explanation.warnings[0].contains("--webhook none"));
}

/// Namespace labels, pod labels, whether the chart's webhooks call the injector.
type ChartRow = (&'static [(&'static str, &'static str)], Value, bool);

/// The chart's opt-in rules, row by row: namespace labels × pod labels → called.
#[test]
fn istio_chart_webhooks_are_opt_in() {
    let rows: [ChartRow; 10] = [
        (&[("istio-injection", "enabled")], json!({}), true),
        (
            &[("istio-injection", "enabled")],
            json!({"sidecar.istio.io/inject": "false"}),
            false,
        ),
        (
            &[("istio-injection", "disabled")],
            json!({"sidecar.istio.io/inject": "true"}),
            false,
        ),
        (&[], json!({}), false),
        (&[], json!({"sidecar.istio.io/inject": "true"}), true),
        (&[], json!({"istio.io/rev": "default"}), true),
        (&[], json!({"istio.io/rev": "canary"}), false),
        (&[("istio.io/rev", "default")], json!({}), true),
        (&[("istio.io/rev", "canary")], json!({}), false),
        (
            &[("istio.io/rev", "default"), ("istio-injection", "enabled")],
            json!({}),
            true,
        ),
    ];
    for (row, (namespace_labels, pod_labels, called)) in rows.into_iter().enumerate() {
        let labels = namespace_labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let namespace = NamespaceFacts::new("shop", labels);
        let explanation = explain_with_istio_chart(&pod_with_labels(pod_labels), Some(&namespace), "default");
        assert_eq!(
            explanation.webhook_called,
            Some(called),
            "row {row}: {explanation:#?}"
        );
        assert_eq!(explanation.injected, called, "row {row}");
    }
}

/// A revision other than the default gets only the two `rev.` webhooks, selecting that revision.
#[test]
fn istio_chart_webhooks_for_a_canary_revision() {
    let configuration = istio_chart::webhooks("canary");
    assert_eq!(configuration.name, "istio-sidecar-injector-canary");
    let names: Vec<&str> = configuration.webhooks.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "rev.namespace.sidecar-injector.istio.io",
            "rev.object.sidecar-injector.istio.io"
        ]
    );
    let canary = NamespaceFacts::new(
        "shop",
        [("istio.io/rev".to_owned(), "canary".to_owned())]
            .into_iter()
            .collect(),
    );
    let enabled = namespace(Some("enabled"));
    let workload = pod_with_labels(json!({}));
    assert!(explain_with_istio_chart(&workload, Some(&canary), "canary").injected);
    assert!(!explain_with_istio_chart(&workload, Some(&enabled), "canary").injected);
    assert_eq!(
        istio_chart::webhooks("default").webhooks.len(),
        4,
        "the default revision also has namespace. and object."
    );
}

/// A webhook's matchConditions are evaluated with the pod: one that is false decides.
#[test]
fn a_false_match_condition_decides_and_is_named() {
    let mut webhooks = opt_in();
    webhooks[0].webhooks[0].match_conditions = vec![crate::gate::MatchCondition {
        name: "not-host-network".into(),
        expression: "!object.spec.?hostNetwork.orValue(false)".into(),
    }];
    let config = config("enabled");
    let explain_for = |workload: &PodTemplate| {
        explain(
            workload,
            Context {
                namespace: Some(&namespace(Some("enabled"))),
                webhooks: Webhooks::Given(&webhooks),
                config: &config,
                origin: &ConfigOrigin::File,
            },
        )
    };
    let plain = deployment(json!({}), json!({}));
    assert!(explain_for(&plain).injected);
    let mut host = plain.clone();
    host.host_network = true;
    let explanation = explain_for(&host);
    assert!(!explanation.injected);
    assert_eq!(explanation.decided_by, "matchConditions");
    assert!(
        explanation
            .reason
            .contains("fails matchConditions not-host-network of webhook sidecar-injector.istio.io"),
        "{}",
        explanation.reason
    );
    assert!(
        explanation
            .steps
            .iter()
            .any(|s| s.check == "matchConditions" && s.decisive && s.outcome == "false: not-host-network"),
        "{:?}",
        explanation.steps
    );
}
