//! What the creator of a pod should hear from the injector, at the moment the pod is created:
//! the admission response's `warnings`, which kubectl prints as `Warning: …` (a controller's
//! pods carry them to the controller instead, and the audit log keeps the decision).
//!
//! Only what the creator may not expect: the deprecated annotation form of the inject setting,
//! an inject value the injector ignored (it applied its policy instead), a label hiding a
//! different annotation, a skip the pod did not ask for, and annotations the injector does not
//! act on. A pod injected or skipped as it asked gets none. Values quoted from the pod are cut
//! short: they are the tenant's, of any length.

use serde_json::Value;

use crate::decision::{ChoiceSource, Decision, INJECT_KEY, Rule};

/// At most this many characters of a value from the pod are quoted.
const QUOTED_CHARS: usize = 48;

/// The warnings for `pod` (as received, or as much of it as is known), given the decision on it.
pub fn for_pod(decision: &Decision, pod: &Value) -> Vec<String> {
    let metadata = pod.get("metadata");
    let read = |field: &str| {
        metadata
            .and_then(|m| m.get(field))
            .and_then(|map| map.get(INJECT_KEY))
            .and_then(Value::as_str)
    };
    let (label, annotation) = (read("labels"), read("annotations"));
    let mut warnings = Vec::new();
    if label.is_none() && annotation.is_some() {
        warnings.push(format!(
            "the annotation {INJECT_KEY} is deprecated in favor of the label of the same name, which the API \
             server can act on too"
        ));
    }
    if let (Some(label), Some(annotation)) = (label, annotation)
        && label != annotation
    {
        warnings.push(format!(
            "the label {INJECT_KEY}={} wins over the annotation of the same name ({}), which is ignored",
            quoted(label),
            quoted(annotation)
        ));
    }
    let choice = &decision.pod_override;
    if let Some(source) = choice.source
        && choice.explicit.is_none()
        && !choice.value.is_empty()
    {
        let noun = match source {
            ChoiceSource::Label => "label",
            ChoiceSource::Annotation => "annotation",
        };
        warnings.push(format!(
            "{INJECT_KEY} {noun} value {} is neither \"true\" nor \"false\": ignored, the injector's policy decided \
             ({})",
            quoted(&choice.value),
            if decision.inject { "injected" } else { "not injected" }
        ));
    }
    if let Some(why) = unexpected_skip(decision) {
        warnings.push(why);
    }
    warnings.extend(crate::ignored_annotations::warnings_for_object(pod));
    warnings
}

/// Why the pod was not injected, when the pod may not expect it: it asked for a sidecar, or the
/// injector's configuration (not the pod) decided.
fn unexpected_skip(decision: &Decision) -> Option<String> {
    if decision.inject {
        return None;
    }
    let asked = decision.pod_override.explicit == Some(true);
    match &decision.rule {
        Rule::HostNetwork if asked => Some(format!(
            "not injected although {INJECT_KEY} is \"true\": pods on the host network (spec.hostNetwork) are never \
             injected"
        )),
        Rule::IgnoredNamespace { namespace } if asked => Some(format!(
            "not injected although {INJECT_KEY} is \"true\": the injector always ignores pods in namespace {namespace}"
        )),
        Rule::NeverInjectSelector { index, selector } => Some(format!(
            "not injected: the pod's labels match the injector's neverInjectSelector[{index}] ({}); set {INJECT_KEY} \
             to \"true\" to inject it",
            shortened(selector, 3 * QUOTED_CHARS)
        )),
        Rule::InvalidPolicy { policy } => Some(format!(
            "not injected: the injector's policy {} is neither \"enabled\" nor \"disabled\", which disables injection \
             for every pod",
            quoted(policy)
        )),
        _ => None,
    }
}

/// `value` in double quotes, escaped, cut to [`QUOTED_CHARS`] characters.
fn quoted(value: &str) -> String {
    format!("{:?}", shortened(value, QUOTED_CHARS))
}

fn shortened(value: &str, chars: usize) -> String {
    match value.char_indices().nth(chars) {
        Some((end, _)) => format!("{}…", &value[..end]),
        None => value.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::decision::{InjectionPolicy, PodFacts, Policy, decide};
    use crate::selector::{LabelSelector, Labels};

    fn warnings(pod: Value, config: &InjectionPolicy) -> Vec<String> {
        let map = |field: &str| -> Labels {
            pod["metadata"][field]
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (labels, annotations) = (map("labels"), map("annotations"));
        let decision = decide(
            PodFacts {
                namespace: pod["metadata"]["namespace"].as_str().unwrap_or("shop"),
                host_network: pod["spec"]["hostNetwork"] == true,
                labels: &labels,
                annotations: &annotations,
            },
            config,
        );
        for_pod(&decision, &pod)
    }

    #[test]
    fn a_pod_that_got_what_it_asked_hears_nothing() {
        let enabled = InjectionPolicy::default();
        assert!(warnings(json!({"metadata": {}}), &enabled).is_empty());
        assert!(warnings(json!({"metadata": {"labels": {INJECT_KEY: "false"}}}), &enabled).is_empty());
        assert!(warnings(json!({"metadata": {"labels": {INJECT_KEY: "true"}}}), &enabled).is_empty());
        let host = json!({"metadata": {}, "spec": {"hostNetwork": true}});
        assert!(warnings(host, &enabled).is_empty(), "did not ask");
    }

    #[test]
    fn the_deprecated_annotation_and_a_hidden_one() {
        let enabled = InjectionPolicy::default();
        let found = warnings(
            json!({"metadata": {"annotations": {INJECT_KEY: "true"}}}),
            &enabled,
        );
        assert_eq!(found.len(), 1);
        assert!(found[0].starts_with("the annotation sidecar.istio.io/inject is deprecated"));
        let found = warnings(
            json!({"metadata": {"labels": {INJECT_KEY: "true"}, "annotations": {INJECT_KEY: "false"}}}),
            &enabled,
        );
        assert_eq!(
            found,
            [
                "the label sidecar.istio.io/inject=\"true\" wins over the annotation of the same name (\"false\"), which \
              is ignored"
            ]
        );
    }

    #[test]
    fn an_ignored_value_says_what_the_policy_did_quoting_it_short() {
        let disabled = InjectionPolicy {
            policy: Policy::Disabled,
            ..InjectionPolicy::default()
        };
        let long = "y".repeat(10_000);
        let found = warnings(json!({"metadata": {"labels": {INJECT_KEY: long}}}), &disabled);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with(&format!(
            "sidecar.istio.io/inject label value \"{}…\"",
            "y".repeat(48)
        )));
        assert!(found[0].ends_with("(not injected)"), "{}", found[0]);
        assert!(found[0].len() < 200);
    }

    #[test]
    fn unexpected_skips() {
        let asked = json!({"metadata": {"labels": {INJECT_KEY: "true"}, "namespace": "kube-public"}});
        let found = warnings(asked, &InjectionPolicy::default());
        assert_eq!(found.len(), 1);
        assert!(found[0].contains("namespace kube-public"), "{found:?}");
        let host = json!({"metadata": {"labels": {INJECT_KEY: "true"}}, "spec": {"hostNetwork": true}});
        assert!(warnings(host, &InjectionPolicy::default())[0].contains("host network"));
        let never = InjectionPolicy {
            never_inject_selector: vec![
                LabelSelector::from_value(&json!({"matchLabels": {"app": "batch"}}), "s").expect("valid"),
            ],
            ..InjectionPolicy::default()
        };
        let found = warnings(json!({"metadata": {"labels": {"app": "batch"}}}), &never);
        assert_eq!(
            found,
            [
                "not injected: the pod's labels match the injector's neverInjectSelector[0] (app=batch); set \
              sidecar.istio.io/inject to \"true\" to inject it"
            ]
        );
        let invalid = InjectionPolicy {
            policy: Policy::parse("Enabled"),
            ..InjectionPolicy::default()
        };
        assert!(warnings(json!({"metadata": {}}), &invalid)[0].contains("policy \"Enabled\""));
    }

    #[test]
    fn annotations_without_effect() {
        let pod = json!({"metadata": {"labels": {INJECT_KEY: "true"}, "annotations": {"sidecar.istio.io/statusPort": "1"}}});
        let found = warnings(pod, &InjectionPolicy::default());
        assert_eq!(found.len(), 1);
        assert!(found[0].starts_with("annotation sidecar.istio.io/statusPort has no effect"));
    }
}
