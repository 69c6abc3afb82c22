//! The decision table of Istio's injection troubleshooting page (namespaceSelector × default
//! policy × pod annotation, <https://istio.io/latest/docs/ops/common-problems/injection/>) and Istio's `injectRequired`, row by row.

use serde_json::json;

use super::*;

/// A pod under test: namespace, hostNetwork, labels, annotations.
struct Pod {
    namespace: &'static str,
    host_network: bool,
    labels: Labels,
    annotations: Labels,
}

fn pod() -> Pod {
    Pod {
        namespace: "shop",
        host_network: false,
        labels: Labels::new(),
        annotations: Labels::new(),
    }
}

impl Pod {
    fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }
    fn annotation(mut self, key: &str, value: &str) -> Self {
        self.annotations.insert(key.into(), value.into());
        self
    }
    fn inject_annotation(self, value: &str) -> Self {
        self.annotation(INJECT_KEY, value)
    }
    fn inject_label(self, value: &str) -> Self {
        self.label(INJECT_KEY, value)
    }
    fn in_namespace(mut self, namespace: &'static str) -> Self {
        self.namespace = namespace;
        self
    }
    fn host_network(mut self) -> Self {
        self.host_network = true;
        self
    }
    fn decide(&self, config: &InjectionPolicy) -> Decision {
        let facts = PodFacts {
            namespace: self.namespace,
            host_network: self.host_network,
            labels: &self.labels,
            annotations: &self.annotations,
        };
        decide(facts, config)
    }
}

fn policy(text: &str) -> InjectionPolicy {
    InjectionPolicy {
        policy: Policy::parse(text),
        ..InjectionPolicy::default()
    }
}

fn selector(value: serde_json::Value) -> LabelSelector {
    LabelSelector::from_value(&value, "test").expect("valid selector")
}

fn with_selectors(
    text: &str,
    never: Vec<serde_json::Value>,
    always: Vec<serde_json::Value>,
) -> InjectionPolicy {
    InjectionPolicy {
        policy: Policy::parse(text),
        never_inject_selector: never.into_iter().map(selector).collect(),
        always_inject_selector: always.into_iter().map(selector).collect(),
    }
}

fn decisive(decision: &Decision) -> Vec<&'static str> {
    decision
        .checks
        .iter()
        .filter(|c| c.decisive)
        .map(|c| c.name)
        .collect()
}

// ---- The troubleshooting page's table (the namespaceSelector row: see crate::gate) ----

#[test]
fn seed_enabled_true_injects() {
    let d = pod().inject_annotation("true").decide(&policy("enabled"));
    assert!(d.inject);
    assert_eq!(
        d.rule,
        Rule::PodOverride {
            source: ChoiceSource::Annotation,
            inject: true
        }
    );
}

#[test]
fn seed_enabled_false_skips() {
    let d = pod().inject_annotation("false").decide(&policy("enabled"));
    assert!(!d.inject);
    assert_eq!(
        d.rule,
        Rule::PodOverride {
            source: ChoiceSource::Annotation,
            inject: false
        }
    );
}

#[test]
fn seed_enabled_absent_injects() {
    let d = pod().decide(&policy("enabled"));
    assert!(d.inject);
    assert_eq!(
        d.rule,
        Rule::DefaultPolicy {
            policy: "enabled".into()
        }
    );
    assert_eq!(decisive(&d), ["policy"]);
}

#[test]
fn seed_disabled_true_injects() {
    let d = pod().inject_annotation("true").decide(&policy("disabled"));
    assert!(d.inject);
    assert_eq!(decisive(&d), ["podOverride"]);
}

#[test]
fn seed_disabled_false_skips() {
    assert!(
        !pod()
            .inject_annotation("false")
            .decide(&policy("disabled"))
            .inject
    );
}

#[test]
fn seed_disabled_absent_skips() {
    let d = pod().decide(&policy("disabled"));
    assert!(!d.inject);
    assert_eq!(
        d.rule,
        Rule::DefaultPolicy {
            policy: "disabled".into()
        }
    );
}

// ---- Istio's rules ----

#[test]
fn host_network_is_never_injected_even_when_asked() {
    let d = pod()
        .host_network()
        .inject_annotation("true")
        .decide(&policy("enabled"));
    assert!(!d.inject);
    assert_eq!(d.rule, Rule::HostNetwork);
    assert_eq!(decisive(&d), ["hostNetwork"]);
}

#[test]
fn ignored_namespaces_are_never_injected() {
    for namespace in IGNORED_NAMESPACES {
        let d = pod()
            .in_namespace(namespace)
            .inject_label("true")
            .decide(&policy("enabled"));
        assert!(!d.inject, "{namespace}");
        assert_eq!(
            d.rule,
            Rule::IgnoredNamespace {
                namespace: namespace.into()
            }
        );
    }
    // Only those four: istio-system itself is injectable.
    assert!(
        pod()
            .in_namespace("istio-system")
            .decide(&policy("enabled"))
            .inject
    );
}

#[test]
fn label_wins_over_annotation() {
    let d = pod()
        .inject_label("true")
        .inject_annotation("false")
        .decide(&policy("disabled"));
    assert!(d.inject);
    assert_eq!(
        d.rule,
        Rule::PodOverride {
            source: ChoiceSource::Label,
            inject: true
        }
    );
    assert!(
        d.warnings.iter().any(|w| w.contains("the label wins")),
        "{:?}",
        d.warnings
    );

    let d = pod()
        .inject_label("false")
        .inject_annotation("true")
        .decide(&policy("enabled"));
    assert!(!d.inject);
    assert_eq!(
        d.rule,
        Rule::PodOverride {
            source: ChoiceSource::Label,
            inject: false
        }
    );
}

#[test]
fn empty_label_hides_the_annotation_and_takes_the_default_path() {
    let d = pod()
        .inject_label("")
        .inject_annotation("true")
        .decide(&policy("disabled"));
    assert!(!d.inject, "the annotation must be ignored");
    assert_eq!(
        d.rule,
        Rule::DefaultPolicy {
            policy: "disabled".into()
        }
    );
    assert_eq!(d.pod_override.source, Some(ChoiceSource::Label));

    let d = pod()
        .inject_label("")
        .inject_annotation("false")
        .decide(&policy("enabled"));
    assert!(d.inject);
}

#[test]
fn empty_annotation_takes_the_default_path_without_warning() {
    let d = pod().inject_annotation("").decide(&policy("enabled"));
    assert!(d.inject);
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
}

#[test]
fn only_exact_true_and_false_count() {
    for value in ["yes", "True", "TRUE", "1", "on", "enabled", " true", "false "] {
        let enabled = pod().inject_annotation(value).decide(&policy("enabled"));
        assert!(enabled.inject, "{value:?} with enabled");
        assert_eq!(
            enabled.rule,
            Rule::DefaultPolicy {
                policy: "enabled".into()
            }
        );
        let expected = format!(
            "Invalid value for sidecar.istio.io/inject: {value:?}. Only 'true' and 'false' are accepted. \
             Falling back to default injection policy."
        );
        assert_eq!(enabled.warnings, [expected], "{value:?}");

        let disabled = pod().inject_label(value).decide(&policy("disabled"));
        assert!(!disabled.inject, "{value:?} with disabled");
    }
}

#[test]
fn never_selector_is_checked_before_always() {
    let both = with_selectors(
        "enabled",
        vec![json!({"matchLabels": {"app": "web"}})],
        vec![json!({"matchLabels": {"app": "web"}})],
    );
    let d = pod().label("app", "web").decide(&both);
    assert!(!d.inject);
    assert_eq!(
        d.rule,
        Rule::NeverInjectSelector {
            index: 0,
            selector: "app=web".into()
        }
    );

    let both_disabled = with_selectors(
        "disabled",
        vec![json!({"matchLabels": {"app": "web"}})],
        vec![json!({"matchLabels": {"app": "web"}})],
    );
    assert!(!pod().label("app", "web").decide(&both_disabled).inject);
}

#[test]
fn always_selector_injects_under_disabled_policy() {
    let config = with_selectors("disabled", vec![], vec![json!({"matchLabels": {"app": "web"}})]);
    let d = pod().label("app", "web").decide(&config);
    assert!(d.inject);
    assert_eq!(
        d.rule,
        Rule::AlwaysInjectSelector {
            index: 0,
            selector: "app=web".into()
        }
    );
    assert!(!pod().label("app", "db").decide(&config).inject);
}

#[test]
fn first_matching_selector_is_reported() {
    let config = with_selectors(
        "enabled",
        vec![
            json!({"matchLabels": {"tier": "x"}}),
            json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]}),
        ],
        vec![],
    );
    let d = pod().label("app", "web").decide(&config);
    assert_eq!(
        d.rule,
        Rule::NeverInjectSelector {
            index: 1,
            selector: "app".into()
        }
    );
}

#[test]
fn empty_selectors_never_match() {
    let config = with_selectors("disabled", vec![], vec![json!({})]);
    assert!(
        !pod().decide(&config).inject,
        "an empty always-selector must not match"
    );
    let config = with_selectors("enabled", vec![json!({})], vec![]);
    let d = pod().decide(&config);
    assert!(d.inject, "an empty never-selector must not match");
    assert!(d.checks.iter().any(|c| c.outcome.contains("empty selector")));
}

#[test]
fn selectors_are_ignored_when_the_pod_is_explicit() {
    let config = with_selectors("enabled", vec![json!({"matchLabels": {"app": "web"}})], vec![]);
    assert!(
        pod()
            .label("app", "web")
            .inject_annotation("true")
            .decide(&config)
            .inject
    );
    let config = with_selectors("enabled", vec![], vec![json!({"matchLabels": {"app": "web"}})]);
    assert!(
        !pod()
            .label("app", "web")
            .inject_annotation("false")
            .decide(&config)
            .inject
    );
}

#[test]
fn selectors_apply_when_the_value_is_invalid() {
    let config = with_selectors("enabled", vec![json!({"matchLabels": {"app": "web"}})], vec![]);
    let d = pod().label("app", "web").inject_annotation("yes").decide(&config);
    assert!(!d.inject);
    assert_eq!(d.warnings.len(), 1);
}

#[test]
fn unknown_policy_disables_injection_even_for_explicit_true() {
    for text in ["", "Enabled", "ENABLED", "on", "true", " enabled"] {
        for pod in [pod(), pod().inject_annotation("true"), pod().inject_label("true")] {
            let d = pod.decide(&policy(text));
            assert!(!d.inject, "policy {text:?}");
            assert_eq!(d.rule, Rule::InvalidPolicy { policy: text.into() });
            assert_eq!(decisive(&d), ["policy"]);
            let message = format!(
                "Illegal value for autoInject:{text}, must be one of [disabled,enabled]. Auto injection disabled!"
            );
            assert!(d.warnings.contains(&message), "{:?}", d.warnings);
        }
    }
}

#[test]
fn unknown_policy_wins_over_always_selector() {
    let config = with_selectors("Enabled", vec![], vec![json!({"matchLabels": {"app": "web"}})]);
    let d = pod().label("app", "web").decide(&config);
    assert!(!d.inject);
    assert_eq!(d.rule.id(), "invalidPolicy");
}

/// Istio's `TestInjectRequired` examples quoted in the specification.
#[test]
fn istio_examples() {
    assert!(pod().inject_annotation("yes").decide(&policy("enabled")).inject);
    assert!(!pod().inject_annotation("on").decide(&policy("disabled")).inject);
    assert!(pod().inject_label("random").decide(&policy("enabled")).inject);
    assert!(
        pod()
            .inject_label("true")
            .inject_annotation("false")
            .decide(&policy("disabled"))
            .inject
    );
}

#[test]
fn checks_follow_istio_order() {
    let d = pod().decide(&policy("enabled"));
    let names: Vec<&str> = d.checks.iter().map(|c| c.name).collect();
    assert_eq!(
        names,
        [
            "hostNetwork",
            "namespace",
            "podOverride",
            "neverInjectSelector",
            "alwaysInjectSelector",
            "policy"
        ]
    );
}
