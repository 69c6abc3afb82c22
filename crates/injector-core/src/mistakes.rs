//! Mistakes that one object shows on its own, in the words every tool uses for them.
//!
//! Some injection mistakes need nothing but the object to be seen: the inject setting on a
//! Deployment's own metadata, a value the injector does not understand, a namespace label the
//! webhooks do not act on. `explain` and `doctor` report them when asked; the chart's
//! ValidatingAdmissionPolicies (`templates/apply-warnings.yaml`, `validationActions: [Warn,
//! Audit]`) show them at `kubectl apply`, before anyone asks. Each message is written once, here:
//! the policies carry exactly these texts (a test renders the chart and compares), and the tools'
//! longer sentences contain them.

use crate::decision::{IGNORED_NAMESPACES, INJECT_KEY};

/// The namespace label of Istio's default revision (`enabled` or `disabled`).
pub const INJECTION_LABEL: &str = "istio-injection";

/// The namespace (and pod) label naming a revision.
pub const REVISION_LABEL: &str = "istio.io/rev";

/// One mistake: what the warning says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mistake {
    /// A short, stable name (`injectOnWorkloadMetadata`, …).
    pub id: &'static str,
    /// The message, as `kubectl apply` prints it after the policy's name.
    pub message: &'static str,
}

/// The inject label or annotation on a workload's own metadata (not a CronJob's).
pub const INJECT_ON_WORKLOAD_METADATA: Mistake = Mistake {
    id: "injectOnWorkloadMetadata",
    message: "sidecar.istio.io/inject has no effect here; move it to spec.template.metadata \
              (the injector sees only the pods, which are built from the pod template)",
};

/// The inject label or annotation on a CronJob's own metadata.
pub const INJECT_ON_CRONJOB_METADATA: Mistake = Mistake {
    id: "injectOnCronJobMetadata",
    message: "sidecar.istio.io/inject has no effect here; move it to spec.jobTemplate.spec.template.metadata \
              (the injector sees only the pods, which are built from the pod template)",
};

/// An inject value on the pod template other than `true` and `false` (and empty).
pub const INVALID_INJECT_VALUE: Mistake = Mistake {
    id: "invalidInjectValue",
    message: "sidecar.istio.io/inject on the pod template is neither \"true\" nor \"false\": the injector \
              ignores it and applies its default policy",
};

/// Both the label and the annotation on the pod template, with different values.
pub const LABEL_HIDES_ANNOTATION: Mistake = Mistake {
    id: "labelHidesAnnotation",
    message: "the pod template has both the label and the annotation sidecar.istio.io/inject, with different \
              values: the label wins and the annotation is ignored",
};

/// A pod template on the host network that asks for a sidecar.
pub const HOST_NETWORK_ASKS_INJECTION: Mistake = Mistake {
    id: "hostNetworkAsksInjection",
    message: "the pod template asks for a sidecar (sidecar.istio.io/inject: \"true\") but uses the host network \
              (spec.hostNetwork: true): such pods are never injected",
};

/// A workload in a namespace the injector ignores that asks for a sidecar.
pub const IGNORED_NAMESPACE_ASKS_INJECTION: Mistake = Mistake {
    id: "ignoredNamespaceAsksInjection",
    message: "the pod template asks for a sidecar (sidecar.istio.io/inject: \"true\") but its namespace is one the \
              injector always ignores (kube-system, kube-public, kube-node-lease, local-path-storage): its pods \
              are never injected",
};

/// A namespace whose `istio-injection` label is neither `enabled` nor `disabled`.
pub const INVALID_INJECTION_LABEL: Mistake = Mistake {
    id: "invalidInjectionLabel",
    message: "the label istio-injection is neither \"enabled\" nor \"disabled\", the only values the injection \
              webhooks act on: use one of them",
};

/// A namespace with both `istio-injection` and `istio.io/rev`.
pub const INJECTION_AND_REVISION_LABELS: Mistake = Mistake {
    id: "injectionAndRevisionLabels",
    message: "the namespace has both istio-injection and istio.io/rev: istio-injection takes precedence and \
              istio.io/rev is ignored; keep only one",
};

/// The mistakes the chart's workload policies warn of, beside the ignored annotations
/// ([`crate::ignored_annotations`]).
pub const WORKLOAD_MISTAKES: [Mistake; 6] = [
    INJECT_ON_WORKLOAD_METADATA,
    INJECT_ON_CRONJOB_METADATA,
    INVALID_INJECT_VALUE,
    LABEL_HIDES_ANNOTATION,
    HOST_NETWORK_ASKS_INJECTION,
    IGNORED_NAMESPACE_ASKS_INJECTION,
];

/// The mistakes the chart's namespace policy warns of.
pub const NAMESPACE_MISTAKES: [Mistake; 2] = [INVALID_INJECTION_LABEL, INJECTION_AND_REVISION_LABELS];

/// The mistakes a Namespace's labels show.
pub fn namespace_mistakes(labels: &crate::selector::Labels) -> Vec<Mistake> {
    let mut found = Vec::new();
    if labels
        .get(INJECTION_LABEL)
        .is_some_and(|value| value != "enabled" && value != "disabled")
    {
        found.push(INVALID_INJECTION_LABEL);
    }
    if labels.contains_key(INJECTION_LABEL) && labels.contains_key(REVISION_LABEL) {
        found.push(INJECTION_AND_REVISION_LABELS);
    }
    found
}

/// The mistakes a pod template's own settings show (not its owner's metadata): a value
/// other than `true` and `false`, a label hiding a different annotation, a request for a
/// sidecar that can never be met.
pub fn template_mistakes(
    namespace: Option<&str>,
    host_network: bool,
    labels: &crate::selector::Labels,
    annotations: &crate::selector::Labels,
) -> Vec<Mistake> {
    let label = labels.get(INJECT_KEY);
    let annotation = annotations.get(INJECT_KEY);
    let mut found = Vec::new();
    let invalid =
        |value: Option<&String>| value.is_some_and(|v| !matches!(v.as_str(), "true" | "false" | ""));
    if invalid(label) || invalid(annotation) {
        found.push(INVALID_INJECT_VALUE);
    }
    if let (Some(label), Some(annotation)) = (label, annotation)
        && label != annotation
    {
        found.push(LABEL_HIDES_ANNOTATION);
    }
    let asks = label.or(annotation).is_some_and(|value| value == "true");
    if asks && host_network {
        found.push(HOST_NETWORK_ASKS_INJECTION);
    }
    if asks && namespace.is_some_and(|namespace| IGNORED_NAMESPACES.contains(&namespace)) {
        found.push(IGNORED_NAMESPACE_ASKS_INJECTION);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selector::Labels;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn namespace_labels() {
        assert!(namespace_mistakes(&labels(&[("istio-injection", "enabled")])).is_empty());
        assert!(namespace_mistakes(&labels(&[("istio.io/rev", "canary")])).is_empty());
        assert_eq!(
            namespace_mistakes(&labels(&[("istio-injection", "enable")])),
            [INVALID_INJECTION_LABEL]
        );
        assert_eq!(
            namespace_mistakes(&labels(&[
                ("istio-injection", "Enabled"),
                ("istio.io/rev", "canary")
            ])),
            [INVALID_INJECTION_LABEL, INJECTION_AND_REVISION_LABELS]
        );
    }

    #[test]
    fn template_settings() {
        let none = Labels::new();
        assert!(template_mistakes(Some("shop"), false, &none, &none).is_empty());
        let yes = labels(&[(INJECT_KEY, "yes")]);
        assert_eq!(
            template_mistakes(None, false, &yes, &none),
            [INVALID_INJECT_VALUE]
        );
        assert_eq!(
            template_mistakes(None, false, &none, &yes),
            [INVALID_INJECT_VALUE]
        );
        // An empty value makes no choice: the default path, as without it.
        let empty = labels(&[(INJECT_KEY, "")]);
        assert!(template_mistakes(None, false, &none, &empty).is_empty());
        let asked = labels(&[(INJECT_KEY, "true")]);
        let refused = labels(&[(INJECT_KEY, "false")]);
        assert_eq!(
            template_mistakes(None, false, &refused, &asked),
            [LABEL_HIDES_ANNOTATION]
        );
        assert!(template_mistakes(None, false, &asked, &asked).is_empty());
        assert_eq!(
            template_mistakes(Some("kube-public"), true, &none, &asked),
            [HOST_NETWORK_ASKS_INJECTION, IGNORED_NAMESPACE_ASKS_INJECTION]
        );
        // The label decides what is asked.
        assert_eq!(
            template_mistakes(None, true, &refused, &asked),
            [LABEL_HIDES_ANNOTATION]
        );
    }

    #[test]
    fn the_ignored_namespaces_message_names_each() {
        for namespace in IGNORED_NAMESPACES {
            assert!(IGNORED_NAMESPACE_ASKS_INJECTION.message.contains(namespace));
        }
        assert!(INJECT_ON_WORKLOAD_METADATA.message.contains(INJECT_KEY));
    }
}
