//! The injector's own decision: Istio's `injectRequired`, rule for rule.
//!
//! The API server has already decided to call the webhook (see [`crate::gate`]); this is what
//! the injector then decides for the pod it received. The rules, in the order Istio applies them:
//!
//! 1. `spec.hostNetwork: true` → skip.
//! 2. Namespace `kube-system`, `kube-public`, `kube-node-lease` or `local-path-storage` → skip.
//! 3. The explicit value: the annotation `sidecar.istio.io/inject`, replaced by the *label* of the
//!    same name whenever the label is present — even with an empty value.
//! 4. Only the exact strings `"true"` and `"false"` count; anything else (`"yes"`, `"True"`) falls
//!    back to the default path with a warning.
//! 5. On the default path only: `neverInjectSelector` (first match → skip), then
//!    `alwaysInjectSelector` (first match → inject). Empty selectors never match.
//! 6. The policy: `enabled` injects on the default path, `disabled` skips; an explicit value wins
//!    over either. **Any other policy disables injection, even for an explicit `"true"`.**
//!
//! The function returns not just the verdict but the trail of checks, so that `explain` can
//! show which rule decided and what each input was.

use serde::Serialize;

use crate::selector::{LabelSelector, Labels};

/// The label and annotation that turn injection on or off for one pod.
pub const INJECT_KEY: &str = "sidecar.istio.io/inject";

/// Namespaces whose pods are never injected (Istio's `IgnoredNamespaces`).
pub const IGNORED_NAMESPACES: [&str; 4] = [
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "local-path-storage",
];

/// The default injection policy of the injector configuration (`config.policy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Policy {
    /// Inject pods that make no explicit choice.
    Enabled,
    /// Skip pods that make no explicit choice.
    Disabled,
    /// Any other value (including empty and `Enabled`): injection is off for every pod.
    Invalid(String),
}

impl Policy {
    /// Reads a policy exactly as Istio compares it: case-sensitive, no trimming.
    pub fn parse(text: &str) -> Self {
        match text {
            "enabled" => Self::Enabled,
            "disabled" => Self::Disabled,
            other => Self::Invalid(other.to_owned()),
        }
    }

    /// The policy as written in the configuration.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Enabled => "enabled",
            Self::Disabled => "disabled",
            Self::Invalid(text) => text,
        }
    }

    /// Istio's log message for an unusable policy.
    pub fn invalid_message(value: &str) -> String {
        format!(
            "Illegal value for autoInject:{value}, must be one of [disabled,enabled]. Auto injection disabled!"
        )
    }
}

/// The parts of the injector configuration that the decision reads.
#[derive(Debug, Clone)]
pub struct InjectionPolicy {
    /// The default policy.
    pub policy: Policy,
    /// Pods matching one of these (non-empty) selectors are skipped on the default path.
    pub never_inject_selector: Vec<LabelSelector>,
    /// Pods matching one of these (non-empty) selectors are injected on the default path.
    pub always_inject_selector: Vec<LabelSelector>,
}

impl Default for InjectionPolicy {
    /// Istio's defaults: policy `enabled`, no selectors.
    fn default() -> Self {
        Self {
            policy: Policy::Enabled,
            never_inject_selector: Vec::new(),
            always_inject_selector: Vec::new(),
        }
    }
}

/// What the decision reads of a pod.
#[derive(Debug, Clone, Copy)]
pub struct PodFacts<'a> {
    /// The pod's namespace (in the webhook, defaulted from the admission request).
    pub namespace: &'a str,
    /// `spec.hostNetwork`.
    pub host_network: bool,
    /// `metadata.labels`.
    pub labels: &'a Labels,
    /// `metadata.annotations`.
    pub annotations: &'a Labels,
}

/// Where the explicit choice came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ChoiceSource {
    /// The pod label `sidecar.istio.io/inject`.
    Label,
    /// The pod annotation `sidecar.istio.io/inject`.
    Annotation,
}

impl ChoiceSource {
    /// `label` or `annotation`.
    pub fn noun(self) -> &'static str {
        match self {
            Self::Label => "label",
            Self::Annotation => "annotation",
        }
    }
}

/// The pod's own `sidecar.istio.io/inject` setting, as the decision read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Override {
    /// Where the value that counts came from; `None` when neither label nor annotation is set.
    pub source: Option<ChoiceSource>,
    /// The raw value (`""` when absent).
    pub value: String,
    /// `Some(true/false)` for the exact strings `"true"`/`"false"`, otherwise `None` (default path).
    pub explicit: Option<bool>,
}

/// The rule that decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "rule", rename_all = "camelCase")]
pub enum Rule {
    /// The pod uses the host network.
    HostNetwork,
    /// The pod is in a namespace the injector always ignores.
    #[serde(rename_all = "camelCase")]
    IgnoredNamespace {
        /// The namespace.
        namespace: String,
    },
    /// The pod's label or annotation said `"true"` or `"false"`.
    #[serde(rename_all = "camelCase")]
    PodOverride {
        /// Label or annotation.
        source: ChoiceSource,
        /// The value it gave.
        inject: bool,
    },
    /// A `neverInjectSelector` entry matched the pod's labels.
    #[serde(rename_all = "camelCase")]
    NeverInjectSelector {
        /// Index in the list.
        index: usize,
        /// The selector, printed like kubectl.
        selector: String,
    },
    /// An `alwaysInjectSelector` entry matched the pod's labels.
    #[serde(rename_all = "camelCase")]
    AlwaysInjectSelector {
        /// Index in the list.
        index: usize,
        /// The selector, printed like kubectl.
        selector: String,
    },
    /// The default policy applied (`enabled` injects, `disabled` skips).
    #[serde(rename_all = "camelCase")]
    DefaultPolicy {
        /// `enabled` or `disabled`.
        policy: String,
    },
    /// The policy is neither `enabled` nor `disabled`: nothing is injected.
    #[serde(rename_all = "camelCase")]
    InvalidPolicy {
        /// The policy as written.
        policy: String,
    },
}

impl Rule {
    /// A short, stable identifier of the rule (`hostNetwork`, `podOverride`, …).
    pub fn id(&self) -> &'static str {
        match self {
            Self::HostNetwork => "hostNetwork",
            Self::IgnoredNamespace { .. } => "ignoredNamespace",
            Self::PodOverride { .. } => "podOverride",
            Self::NeverInjectSelector { .. } => "neverInjectSelector",
            Self::AlwaysInjectSelector { .. } => "alwaysInjectSelector",
            Self::DefaultPolicy { .. } => "defaultPolicy",
            Self::InvalidPolicy { .. } => "invalidPolicy",
        }
    }
}

/// One check the decision made, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    /// The rule checked (`hostNetwork`, `namespace`, `podOverride`, `neverInjectSelector`,
    /// `alwaysInjectSelector`, `policy`).
    pub name: &'static str,
    /// The input the rule looked at, in words.
    pub input: String,
    /// What the rule concluded.
    pub outcome: String,
    /// Whether this check decided the verdict.
    pub decisive: bool,
}

/// The verdict with its reasons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Whether the injector injects the pod.
    pub inject: bool,
    /// The rule that decided.
    pub rule: Rule,
    /// The pod's own setting.
    pub pod_override: Override,
    /// Every check made, in order, the decisive one marked.
    pub checks: Vec<Check>,
    /// What Istio would log as warnings or errors while deciding.
    pub warnings: Vec<String>,
}

/// Decides whether the injector injects this pod (Istio's `injectRequired`).
pub fn decide(pod: PodFacts<'_>, config: &InjectionPolicy) -> Decision {
    let mut trail = Trail::default();

    if pod.host_network {
        trail.check(
            "hostNetwork",
            "spec.hostNetwork: true",
            "pods on the host network are never injected",
        );
        return trail.finish(false, Rule::HostNetwork, read_override(pod, &mut Vec::new()));
    }
    trail.pass(
        "hostNetwork",
        "spec.hostNetwork: false",
        "not on the host network",
    );

    if IGNORED_NAMESPACES.contains(&pod.namespace) {
        trail.check(
            "namespace",
            pod.namespace,
            "this namespace is always ignored by the injector",
        );
        let rule = Rule::IgnoredNamespace {
            namespace: pod.namespace.to_owned(),
        };
        return trail.finish(false, rule, read_override(pod, &mut Vec::new()));
    }
    trail.pass("namespace", pod.namespace, "not an ignored namespace");

    let choice = read_override(pod, &mut trail.warnings);
    trail.pass(
        "podOverride",
        &describe_override(&choice),
        &override_outcome(&choice),
    );

    let mut outcome: Option<(bool, Rule)> = choice
        .explicit
        .zip(choice.source)
        .map(|(inject, source)| (inject, Rule::PodOverride { source, inject }));

    if outcome.is_none() {
        outcome = walk_selectors(
            &mut trail,
            "neverInjectSelector",
            &config.never_inject_selector,
            pod.labels,
        )
        .map(|(index, selector)| (false, Rule::NeverInjectSelector { index, selector }));
    } else {
        trail.pass(
            "neverInjectSelector",
            "-",
            "not consulted: the pod made an explicit choice",
        );
    }
    if outcome.is_none() {
        outcome = walk_selectors(
            &mut trail,
            "alwaysInjectSelector",
            &config.always_inject_selector,
            pod.labels,
        )
        .map(|(index, selector)| (true, Rule::AlwaysInjectSelector { index, selector }));
    } else {
        trail.pass(
            "alwaysInjectSelector",
            "-",
            "not consulted: an earlier rule decided",
        );
    }

    match &config.policy {
        Policy::Invalid(text) => {
            trail.warnings.push(Policy::invalid_message(text));
            trail.check(
                "policy",
                &format!("{text:?}"),
                "not \"enabled\" or \"disabled\": injection is disabled for every pod, even with an explicit \"true\"",
            );
            // Whatever the earlier rules concluded, an invalid policy overrides it.
            trail.demote_earlier_decisive();
            trail.finish(false, Rule::InvalidPolicy { policy: text.clone() }, choice)
        }
        policy => match outcome {
            Some((inject, rule)) => {
                trail.pass(
                    "policy",
                    policy.as_str(),
                    "not consulted: an earlier rule decided",
                );
                trail.finish(inject, rule, choice)
            }
            None => {
                let inject = *policy == Policy::Enabled;
                let verdict = if inject {
                    "inject by default"
                } else {
                    "do not inject by default"
                };
                trail.check("policy", policy.as_str(), verdict);
                trail.finish(
                    inject,
                    Rule::DefaultPolicy {
                        policy: policy.as_str().to_owned(),
                    },
                    choice,
                )
            }
        },
    }
}

/// Reads the explicit value: annotation first, replaced by the label when the label is present.
fn read_override(pod: PodFacts<'_>, warnings: &mut Vec<String>) -> Override {
    let annotation = pod.annotations.get(INJECT_KEY);
    let label = pod.labels.get(INJECT_KEY);
    let (source, value) = match (label, annotation) {
        (Some(label), annotation) => {
            if let Some(annotation) = annotation.filter(|a| *a != label) {
                warnings.push(format!(
                    "the pod has both the label and the annotation {INJECT_KEY} ({label:?} and {annotation:?}); \
                     the label wins and the annotation is ignored"
                ));
            }
            (Some(ChoiceSource::Label), label.clone())
        }
        (None, Some(annotation)) => (Some(ChoiceSource::Annotation), annotation.clone()),
        (None, None) => (None, String::new()),
    };
    let explicit = match value.as_str() {
        "true" => Some(true),
        "false" => Some(false),
        "" => None,
        other => {
            warnings.push(format!(
                "Invalid value for {INJECT_KEY}: {other:?}. Only 'true' and 'false' are accepted. \
                 Falling back to default injection policy."
            ));
            None
        }
    };
    Override {
        source,
        value,
        explicit,
    }
}

fn describe_override(choice: &Override) -> String {
    match choice.source {
        None => format!("no {INJECT_KEY} label or annotation"),
        Some(source) => format!("{} {INJECT_KEY}={:?}", source.noun(), choice.value),
    }
}

fn override_outcome(choice: &Override) -> String {
    match (choice.explicit, choice.source) {
        (Some(true), _) => "explicitly requests injection".into(),
        (Some(false), _) => "explicitly refuses injection".into(),
        (None, None) => "no explicit choice: the default path applies".into(),
        (None, Some(_)) if choice.value.is_empty() => "empty value: the default path applies".into(),
        (None, Some(_)) => "not exactly \"true\" or \"false\": ignored, the default path applies".into(),
    }
}

/// Walks a selector list; returns the first non-empty selector that matches.
fn walk_selectors(
    trail: &mut Trail,
    name: &'static str,
    selectors: &[LabelSelector],
    labels: &Labels,
) -> Option<(usize, String)> {
    if selectors.is_empty() {
        trail.pass(name, "none configured", "no match");
        return None;
    }
    let found = selectors
        .iter()
        .enumerate()
        .find(|(_, s)| !s.is_empty() && s.matches(labels));
    match found {
        Some((index, selector)) => {
            let text = selector.to_string();
            trail.check(name, &format!("[{index}] {text}"), "matches the pod's labels");
            Some((index, text))
        }
        None => {
            let listed: Vec<String> = selectors.iter().map(|s| s.to_string()).collect();
            let empty = selectors.iter().filter(|s| s.is_empty()).count();
            let outcome = if empty > 0 {
                format!("no match ({empty} empty selector(s) never match)")
            } else {
                "no match".to_owned()
            };
            trail.pass(name, &listed.join("; "), &outcome);
            None
        }
    }
}

/// Accumulates checks and warnings while deciding.
#[derive(Default)]
struct Trail {
    checks: Vec<Check>,
    warnings: Vec<String>,
}

impl Trail {
    fn pass(&mut self, name: &'static str, input: &str, outcome: &str) {
        self.push(name, input, outcome, false);
    }

    fn check(&mut self, name: &'static str, input: &str, outcome: &str) {
        self.push(name, input, outcome, true);
    }

    fn push(&mut self, name: &'static str, input: &str, outcome: &str, decisive: bool) {
        self.checks.push(Check {
            name,
            input: input.to_owned(),
            outcome: outcome.to_owned(),
            decisive,
        });
    }

    fn demote_earlier_decisive(&mut self) {
        let last = self.checks.len().saturating_sub(1);
        for check in &mut self.checks[..last] {
            check.decisive = false;
        }
    }

    fn finish(mut self, inject: bool, rule: Rule, pod_override: Override) -> Decision {
        // The explicit-override check is recorded as a pass; mark it when it is the decider.
        if let Rule::PodOverride { .. } = rule
            && let Some(check) = self.checks.iter_mut().find(|c| c.name == "podOverride")
        {
            check.decisive = true;
        }
        Decision {
            inject,
            rule,
            pod_override,
            checks: self.checks,
            warnings: self.warnings,
        }
    }
}

#[cfg(test)]
mod tests;
