//! `explain`: why a pod is (or is not) injected, in terms of the three conditions that decide
//! injection — the webhook's namespaceSelector, the default policy, the pod's
//! `sidecar.istio.io/inject` — evaluated in the order the cluster does:
//! first the API server's gate ([`crate::gate`]), then the injector's decision
//! ([`crate::decision`]). The result names the rule that decided, lists every check with its
//! inputs, carries warnings about settings that look effective but are not, and proposes the
//! commands that would flip the outcome.

pub mod istio_chart;

use serde::Serialize;

use crate::{
    config::InjectorConfig,
    decision::{self, ChoiceSource, Decision, INJECT_KEY, PodFacts, Rule},
    gate::{self, NamespaceFacts, WebhookConfiguration, WebhookVerdict},
    selector::{Labels, Operator, Requirement},
    shell,
    workload::{PodTemplate, WorkloadKind},
};

/// Where the injector configuration came from, for messages and remedies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigOrigin {
    /// No configuration given: Istio's defaults (policy `enabled`).
    IstioDefaults,
    /// A ConfigMap, `namespace/name`.
    ConfigMap(String),
    /// A raw `config` file.
    File,
    /// The configuration a running `serve` has in service without `--injector-config`: the
    /// embedded default (its console explains against it; nothing was assumed).
    Embedded,
}

/// Which webhooks the API server is taken to have.
#[derive(Debug, Clone, Copy)]
pub enum Webhooks<'a> {
    /// The cluster's MutatingWebhookConfigurations, as given.
    Given(&'a [WebhookConfiguration]),
    /// None given: the webhooks Istio's chart installs for this revision (see [`istio_chart`]).
    IstioChart {
        /// The revision (`default` for the default revision).
        revision: &'a str,
    },
    /// The API server is assumed to call the injector whatever the labels (`--webhook none`).
    AssumeCalled,
}

/// Where the webhooks `explain` checked came from, as reported in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum WebhookSource {
    /// Given by the user.
    Given,
    /// Assumed: the webhooks of Istio's chart.
    IstioChart,
    /// Not checked: the injector is assumed to be called.
    AssumedCalled,
}

/// What `explain` knows besides the workload.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The pod's namespace object, when given.
    pub namespace: Option<&'a NamespaceFacts>,
    /// The webhooks the API server has.
    pub webhooks: Webhooks<'a>,
    /// The injector configuration (Istio's defaults when none was given).
    pub config: &'a InjectorConfig,
    /// Where the configuration came from.
    pub origin: &'a ConfigOrigin,
}

/// Which component made a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Stage {
    /// The API server, deciding whether to call a webhook.
    ApiServer,
    /// The injector, deciding whether to inject.
    Injector,
}

/// One check, with its input and outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// Who checks.
    pub stage: Stage,
    /// The check (`rules`, `namespaceSelector`, `objectSelector`, `hostNetwork`, `podOverride`, …).
    pub check: String,
    /// The webhook concerned (API server checks only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
    /// What the check looked at.
    pub input: String,
    /// What it concluded.
    pub outcome: String,
    /// Whether this check decided the verdict.
    pub decisive: bool,
}

/// The three conditions that decide injection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Conditions {
    /// Whether a webhook registered for pod creation has a namespaceSelector that matches the
    /// namespace; `null` when the webhooks were not checked (`--webhook none`).
    pub namespace_selector_matches: Option<bool>,
    /// The namespaceSelectors considered, printed like kubectl.
    pub namespace_selectors: Vec<String>,
    /// The default policy as configured.
    pub policy: String,
    /// Whether the policy is one Istio accepts (`enabled` or `disabled`).
    pub policy_valid: bool,
    /// The pod's `sidecar.istio.io/inject` value that counts, when set.
    pub pod_override: Option<String>,
    /// `label` or `annotation`: where that value came from.
    pub pod_override_source: Option<ChoiceSource>,
}

/// A way to change the outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Remedy {
    /// What to do, in words.
    pub description: String,
    /// A command that does it, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// The answer to "why did (or didn't) this pod get a sidecar?".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// The workload's kind.
    pub kind: String,
    /// The workload's name.
    pub name: String,
    /// The namespace its pods are created in.
    pub namespace: String,
    /// Whether the API server calls an injection webhook; `null` when that is assumed
    /// (`--webhook none`).
    pub webhook_called: Option<bool>,
    /// Where the webhooks checked came from.
    pub webhook_source: WebhookSource,
    /// Whether the pod ends up with a sidecar.
    pub injected: bool,
    /// One sentence naming the rule that decided.
    pub reason: String,
    /// The deciding check (`namespaceSelector`, `objectSelector`, `matchConditions`, `rules`, `hostNetwork`,
    /// `ignoredNamespace`, `podOverride`, `neverInjectSelector`, `alwaysInjectSelector`,
    /// `defaultPolicy`, `invalidPolicy`).
    pub decided_by: String,
    /// The three conditions that decide injection.
    pub conditions: Conditions,
    /// Every check, in the order the cluster makes them.
    pub steps: Vec<Step>,
    /// Settings that look effective but are not, assumptions made, Istio's own warnings.
    pub warnings: Vec<String>,
    /// What would change the outcome.
    pub remedies: Vec<Remedy>,
}

/// Explains the injection of the pod that `workload` creates.
pub fn explain(workload: &PodTemplate, context: Context<'_>) -> Explanation {
    let mut warnings = workload.misplaced_settings();
    warnings.extend(crate::ignored_annotations::warnings(&workload.annotations));
    let namespace = resolve_namespace(workload, context.namespace, &mut warnings);
    warnings.extend(one_object_mistakes(
        workload,
        &namespace,
        context.namespace.is_some(),
    ));

    let decision = decision::decide(
        PodFacts {
            namespace: &namespace.name,
            host_network: workload.host_network,
            labels: &workload.labels,
            annotations: &workload.annotations,
        },
        &context.config.injection,
    );
    warnings.extend(decision.warnings.iter().cloned());

    let assumed;
    let (configurations, webhook_source) = match context.webhooks {
        Webhooks::Given(configurations) => (Some(configurations), WebhookSource::Given),
        Webhooks::IstioChart { revision } => {
            assumed = [istio_chart::webhooks(revision)];
            warnings.push(format!(
                "no --webhook given: assuming the webhooks Istio's chart installs for revision {:?} ({}: {}): {} \
                 (pass --webhook FILE to check your cluster's own, or --webhook none to assume the injector is called)",
                if revision.is_empty() { istio_chart::DEFAULT_REVISION } else { revision },
                assumed[0].name,
                assumed[0].webhooks.iter().map(|w| w.name.as_str()).collect::<Vec<_>>().join(", "),
                istio_chart::summary(revision),
            ));
            (Some(&assumed[..]), WebhookSource::IstioChart)
        }
        Webhooks::AssumeCalled => (None, WebhookSource::AssumedCalled),
    };
    let verdicts = configurations.map(|configurations| {
        gate::evaluate_pod(configurations, &namespace, &workload.pod_view(&namespace.name))
    });
    let called = verdicts
        .as_ref()
        .map(|verdicts| verdicts.iter().any(|v| v.called));
    let mut steps = Vec::new();
    match &verdicts {
        Some(verdicts) => {
            gate_warnings(verdicts, context.namespace.is_some(), &namespace, &mut warnings);
            steps.extend(verdicts.iter().flat_map(|v| gate_steps(v, called == Some(false))));
        }
        None => warnings.push(
            "--webhook none: assuming the API server calls the injector (pass the MutatingWebhookConfiguration \
             to check its namespaceSelector and objectSelector)"
                .to_owned(),
        ),
    }
    if called != Some(false) {
        steps.extend(decision.checks.iter().map(|check| Step {
            stage: Stage::Injector,
            check: check.name.to_owned(),
            webhook: None,
            input: check.input.clone(),
            outcome: check.outcome.clone(),
            decisive: check.decisive,
        }));
    }
    if *context.origin == ConfigOrigin::IstioDefaults {
        warnings.push(
            "no --injector-config given: using Istio's defaults (policy: enabled, no selectors)".to_owned(),
        );
    }

    let injected = called.unwrap_or(true) && decision.inject;
    let (reason, decided_by) = match (&verdicts, called) {
        (Some(verdicts), Some(false)) => not_called_reason(verdicts, &namespace.name),
        _ => (
            decision_reason(workload, &decision, context.config),
            decision.rule.id().to_owned(),
        ),
    };
    let mut remedies = match (&verdicts, called) {
        (Some(verdicts), Some(false)) => {
            gate_remedies(workload, &namespace.name, verdicts, &decision, context.origin)
        }
        _ => decision_remedies(workload, &namespace.name, &decision, context.origin),
    };
    let mut seen = Vec::new();
    remedies.retain(|remedy| {
        let fresh = !seen.contains(remedy);
        seen.push(remedy.clone());
        fresh
    });

    Explanation {
        kind: workload.owner.kind.clone(),
        name: workload.owner.name.clone(),
        namespace: namespace.name.clone(),
        webhook_called: called,
        webhook_source,
        injected,
        reason,
        decided_by,
        conditions: conditions(verdicts.as_deref(), &decision, context.config),
        steps,
        warnings,
        remedies,
    }
}

/// The mistakes the workload and its namespace show on their own, in the words `kubectl apply`
/// prints them (the chart's admission policies). A value other than `true`/`false` and a label
/// hiding the annotation are left to the decision's own warnings, which say the same.
fn one_object_mistakes(
    workload: &PodTemplate,
    namespace: &NamespaceFacts,
    namespace_given: bool,
) -> Vec<String> {
    let mut found: Vec<String> = crate::mistakes::template_mistakes(
        Some(&namespace.name),
        workload.host_network,
        &workload.labels,
        &workload.annotations,
    )
    .into_iter()
    .filter(|m| {
        ![
            crate::mistakes::INVALID_INJECT_VALUE,
            crate::mistakes::LABEL_HIDES_ANNOTATION,
        ]
        .contains(m)
    })
    .map(|m| m.message.to_owned())
    .collect();
    if namespace_given {
        found.extend(
            crate::mistakes::namespace_mistakes(&namespace.labels)
                .into_iter()
                .map(|m| format!("namespace {}: {}", namespace.name, m.message)),
        );
    }
    found
}

/// The namespace pods are created in: the workload's, else the given Namespace's, else `default`.
fn resolve_namespace(
    workload: &PodTemplate,
    given: Option<&NamespaceFacts>,
    warnings: &mut Vec<String>,
) -> NamespaceFacts {
    match (&workload.owner.namespace, given) {
        (Some(name), Some(facts)) if *name != facts.name => {
            warnings.push(format!(
                "the {} is in namespace {name:?} but --namespace describes {:?}; its labels are not used",
                workload.owner.kind, facts.name
            ));
            NamespaceFacts::new(name, Labels::new())
        }
        (_, Some(facts)) => facts.clone(),
        (Some(name), None) => NamespaceFacts::new(name, Labels::new()),
        (None, None) => {
            warnings.push(format!(
                "the {} names no namespace: assuming \"default\" (kubectl uses the current context's namespace)",
                workload.owner.kind
            ));
            NamespaceFacts::new("default", Labels::new())
        }
    }
}

fn gate_warnings(
    verdicts: &[WebhookVerdict],
    namespace_given: bool,
    namespace: &NamespaceFacts,
    warnings: &mut Vec<String>,
) {
    if verdicts.is_empty() {
        warnings.push("the webhook configuration has no webhooks: the API server calls nothing".to_owned());
    }
    let needs_labels = verdicts
        .iter()
        .any(|v| v.namespace_selector.selector != "<everything>");
    if !namespace_given && needs_labels {
        warnings.push(format!(
            "no --namespace given: assuming namespace {:?} has no labels (check with: {})",
            namespace.name,
            shell::command(["kubectl", "get", "namespace", &namespace.name, "--show-labels"])
        ));
    }
    let called: Vec<&str> = verdicts
        .iter()
        .filter(|v| v.called)
        .map(|v| v.webhook.as_str())
        .collect();
    if called.len() > 1 {
        warnings.push(format!(
            "{} webhooks would be called ({}): the pod may be mutated more than once, which can lead to errors",
            called.len(),
            called.join(", ")
        ));
    }
    for verdict in verdicts {
        warnings.extend(
            verdict
                .notes
                .iter()
                .map(|note| format!("webhook {}: {note}", verdict.webhook)),
        );
    }
}

fn gate_steps(verdict: &WebhookVerdict, none_called: bool) -> Vec<Step> {
    let step = |check: &str, input: String, outcome: String, decisive: bool| Step {
        stage: Stage::ApiServer,
        check: check.to_owned(),
        webhook: Some(verdict.webhook.clone()),
        input,
        outcome,
        decisive,
    };
    let rules_outcome = if verdict.rules_match {
        "registered for pod creation"
    } else {
        "not registered for pod creation"
    };
    let mut steps = vec![step(
        "rules",
        "CREATE pods (v1)".to_owned(),
        rules_outcome.to_owned(),
        none_called && !verdict.rules_match,
    )];
    if !verdict.rules_match {
        return steps;
    }
    let namespace = &verdict.namespace_selector;
    let object = &verdict.object_selector;
    let outcome = |matched: bool, unmet: &[String]| {
        if matched {
            "matches".to_owned()
        } else {
            format!("does not match (unmet: {})", unmet.join(", "))
        }
    };
    steps.push(step(
        "namespaceSelector",
        namespace.selector.clone(),
        outcome(namespace.matched, &namespace.unmet),
        none_called && !namespace.matched,
    ));
    steps.push(step(
        "objectSelector",
        object.selector.clone(),
        outcome(object.matched, &object.unmet),
        none_called && namespace.matched && !object.matched,
    ));
    let conditions = &verdict.match_conditions;
    if namespace.matched && object.matched && (!conditions.pass() || !conditions.unevaluated.is_empty()) {
        let outcome = if conditions.pass() {
            format!(
                "not evaluated here, assumed true: {}",
                conditions.unevaluated.join("; ")
            )
        } else {
            format!("false: {}", conditions.failed.join(", "))
        };
        steps.push(step(
            "matchConditions",
            "CEL, with the pod".to_owned(),
            outcome,
            none_called && !conditions.pass(),
        ));
    }
    let call = if verdict.called { "called" } else { "not called" };
    steps.push(step(
        "call",
        verdict.client.clone(),
        format!("{call} (failurePolicy {})", verdict.failure_policy),
        false,
    ));
    steps
}

fn not_called_reason(verdicts: &[WebhookVerdict], namespace: &str) -> (String, String) {
    let registered: Vec<&WebhookVerdict> = verdicts.iter().filter(|v| v.rules_match).collect();
    let Some(first) = registered.first() else {
        let reason = if verdicts.is_empty() {
            "not injected: the webhook configuration has no webhooks, so the API server never calls the injector"
        } else {
            "not injected: no webhook is registered for pod creation (its rules must cover CREATE on pods), so the \
             API server never calls the injector"
        };
        return (reason.to_owned(), "rules".to_owned());
    };
    let others = match registered.len() - 1 {
        0 => String::new(),
        1 => " (nor does the other webhook)".to_owned(),
        n => format!(" (nor do the other {n} webhooks)"),
    };
    if first.namespace_selector.matched && first.object_selector.matched {
        let reason = format!(
            "not injected: the API server does not call the injector — the pod fails matchConditions {} of \
             webhook {}{others}",
            first.match_conditions.failed.join(", "),
            first.webhook
        );
        return (reason, "matchConditions".to_owned());
    }
    if !first.namespace_selector.matched {
        let reason = format!(
            "not injected: the API server does not call the injector — namespace {namespace:?} does not match the \
             namespaceSelector of webhook {} ({}){others}",
            first.webhook, first.namespace_selector.selector
        );
        (reason, "namespaceSelector".to_owned())
    } else {
        let reason = format!(
            "not injected: the API server does not call the injector — the pod's labels do not match the \
             objectSelector of webhook {} ({}){others}",
            first.webhook, first.object_selector.selector
        );
        (reason, "objectSelector".to_owned())
    }
}

fn decision_reason(workload: &PodTemplate, decision: &Decision, config: &InjectorConfig) -> String {
    let whose = if workload.kind == WorkloadKind::Pod {
        "the pod's"
    } else {
        "the pod template's"
    };
    match &decision.rule {
        Rule::HostNetwork => {
            "not injected: the pod uses the host network (spec.hostNetwork: true), which the injector never injects"
                .to_owned()
        }
        Rule::IgnoredNamespace { namespace } => {
            format!("not injected: the injector always ignores pods in namespace {namespace:?}")
        }
        Rule::PodOverride { source, inject } => format!(
            "{}: {whose} {} {INJECT_KEY} is \"{inject}\"",
            if *inject { "injected" } else { "not injected" },
            source.noun()
        ),
        Rule::NeverInjectSelector { index, selector } => format!(
            "not injected: the pod's labels match neverInjectSelector[{index}] ({selector}) of the injector \
             configuration"
        ),
        Rule::AlwaysInjectSelector { index, selector } => format!(
            "injected: the pod's labels match alwaysInjectSelector[{index}] ({selector}) of the injector configuration"
        ),
        Rule::DefaultPolicy { policy } => {
            let verdict = if decision.inject { "injected" } else { "not injected" };
            let choice = if decision.pod_override.source.is_some() && decision.pod_override.explicit.is_none() {
                format!("{whose} {INJECT_KEY} value {:?} is not \"true\" or \"false\"", decision.pod_override.value)
            } else {
                "the pod makes no explicit choice".to_owned()
            };
            let selectors = if config.injection.never_inject_selector.is_empty()
                && config.injection.always_inject_selector.is_empty()
            {
                ""
            } else {
                ", no injection selector matches,"
            };
            format!("{verdict}: {choice}{selectors} and the default policy is {policy:?}")
        }
        Rule::InvalidPolicy { policy } => format!(
            "not injected: the injector's policy {policy:?} is neither \"enabled\" nor \"disabled\", which disables \
             injection for every pod, even those that ask for it"
        ),
    }
}

fn conditions(
    verdicts: Option<&[WebhookVerdict]>,
    decision: &Decision,
    config: &InjectorConfig,
) -> Conditions {
    let registered = || verdicts.into_iter().flatten().filter(|v| v.rules_match);
    Conditions {
        namespace_selector_matches: verdicts.map(|_| registered().any(|v| v.namespace_selector.matched)),
        namespace_selectors: registered()
            .map(|v| v.namespace_selector.selector.clone())
            .collect(),
        policy: config.injection.policy.as_str().to_owned(),
        policy_valid: !matches!(config.injection.policy, decision::Policy::Invalid(_)),
        pod_override: decision
            .pod_override
            .source
            .map(|_| decision.pod_override.value.clone()),
        pod_override_source: decision.pod_override.source,
    }
}

// ---- Remedies ----

fn gate_remedies(
    workload: &PodTemplate,
    namespace: &str,
    verdicts: &[WebhookVerdict],
    decision: &Decision,
    origin: &ConfigOrigin,
) -> Vec<Remedy> {
    let mut remedies: Vec<Remedy> = Vec::new();
    let mut alternatives: Vec<(usize, Remedy)> = Vec::new();
    for verdict in verdicts.iter().filter(|v| v.rules_match) {
        if verdict.namespace_selector.matched && verdict.object_selector.matched {
            remedies.push(Remedy {
                description: format!(
                    "webhook {} skips the pod by its matchConditions ({}): change what they test, such as \
                     spec.hostNetwork or a sidecar.istio.io/inject of \"false\"",
                    verdict.webhook,
                    verdict.match_conditions.failed.join(", ")
                ),
                command: None,
            });
            continue;
        }
        let namespace_changes = label_changes(&verdict.namespace_selector.unmet_requirements);
        let pod_changes = label_changes(&verdict.object_selector.unmet_requirements);
        let mut parts = Vec::new();
        let mut commands = Vec::new();
        if !namespace_changes.is_empty() {
            parts.push(format!(
                "label namespace {namespace} ({})",
                describe_changes(&namespace_changes)
            ));
            commands.push(label_namespace_command(namespace, &namespace_changes));
        }
        if !pod_changes.is_empty() {
            parts.push(format!("set pod label(s) {}", describe_changes(&pod_changes)));
            match metadata_patch_command(workload, namespace, "labels", &pod_changes) {
                Some(command) => commands.push(command),
                None => parts.push("in the Pod manifest and re-create the pod".to_owned()),
            }
        }
        let remedy = Remedy {
            description: format!("to match webhook {}: {}", verdict.webhook, parts.join(", and ")),
            command: (!commands.is_empty()).then(|| commands.join(" && ")),
        };
        if !alternatives
            .iter()
            .any(|(_, known)| known.command == remedy.command && remedy.command.is_some())
        {
            alternatives.push((namespace_changes.len() + pod_changes.len(), remedy));
        }
    }
    alternatives.sort_by_key(|(cost, _)| *cost);
    remedies.extend(alternatives.into_iter().take(4).map(|(_, remedy)| remedy));
    if remedies.is_empty() {
        remedies.push(Remedy {
            description: "register the webhook for pod creation: its rules need operations [CREATE], apiGroups [\"\"], \
                          apiVersions [v1], resources [pods]"
                .to_owned(),
            command: None,
        });
    }
    if !decision.inject {
        remedies.push(Remedy {
            description: "even once the webhook is called, the injector would not inject this pod; see below"
                .to_owned(),
            command: None,
        });
        remedies.extend(decision_remedies(workload, namespace, decision, origin));
    }
    remedies.push(restart_remedy(workload, namespace));
    remedies
}

fn decision_remedies(
    workload: &PodTemplate,
    namespace: &str,
    decision: &Decision,
    origin: &ConfigOrigin,
) -> Vec<Remedy> {
    let annotate = |value: &str, why: &str| {
        let changes = vec![LabelChange::Set(INJECT_KEY.to_owned(), value.to_owned())];
        Remedy {
            description: format!(
                "{why}: set the annotation {INJECT_KEY}: \"{value}\" on the {}",
                template_noun(workload)
            ),
            command: metadata_patch_command(workload, namespace, "annotations", &changes),
        }
    };
    let edit_policy = |why: &str, policy: &str| {
        let (config_map_namespace, config_map) = match origin {
            ConfigOrigin::ConfigMap(name) => name.split_once('/').unwrap_or(("istio-system", name.as_str())),
            _ => ("istio-system", "istio-sidecar-injector"),
        };
        Remedy {
            description: format!("{why}: set `policy: {policy}` in data.config of the injector ConfigMap"),
            command: Some(shell::command([
                "kubectl",
                "-n",
                config_map_namespace,
                "edit",
                "configmap",
                config_map,
            ])),
        }
    };
    let mut remedies = match &decision.rule {
        Rule::HostNetwork => vec![Remedy {
            description:
                "pods with spec.hostNetwork: true are never injected; remove hostNetwork to get a sidecar"
                    .to_owned(),
            command: None,
        }],
        Rule::IgnoredNamespace { namespace } => vec![Remedy {
            description: format!(
                "pods in {namespace} are never injected; run the workload in another namespace"
            ),
            command: None,
        }],
        Rule::InvalidPolicy { .. } => vec![edit_policy(
            "to make the injector work at all",
            "enabled (or disabled)",
        )],
        Rule::PodOverride {
            source: ChoiceSource::Label,
            inject,
        } => {
            let value = (!inject).to_string();
            let changes = vec![LabelChange::Set(INJECT_KEY.to_owned(), value.clone())];
            vec![Remedy {
                description: format!(
                    "set the label {INJECT_KEY}: \"{value}\" on the {}",
                    template_noun(workload)
                ),
                command: metadata_patch_command(workload, namespace, "labels", &changes),
            }]
        }
        _ if decision.inject => vec![annotate("false", "to skip injection")],
        Rule::DefaultPolicy { .. } => vec![
            annotate("true", "to inject this pod"),
            edit_policy("to inject every pod that makes no explicit choice", "enabled"),
        ],
        _ => vec![annotate(
            "true",
            "to inject this pod (an explicit value wins over the selectors)",
        )],
    };
    if matches!(
        decision.rule,
        Rule::PodOverride { .. }
            | Rule::DefaultPolicy { .. }
            | Rule::NeverInjectSelector { .. }
            | Rule::AlwaysInjectSelector { .. }
    ) {
        remedies.push(restart_remedy(workload, namespace));
    }
    remedies
}

fn restart_remedy(workload: &PodTemplate, namespace: &str) -> Remedy {
    let name = object_name(workload);
    match workload.kind {
        WorkloadKind::Deployment | WorkloadKind::StatefulSet | WorkloadKind::DaemonSet => Remedy {
            description:
                "injection happens only when a pod is created: restart the workload so existing pods are \
                          replaced"
                    .to_owned(),
            command: Some(shell::command([
                "kubectl",
                "-n",
                namespace,
                "rollout",
                "restart",
                workload.kind.resource(),
                name,
            ])),
        },
        WorkloadKind::Pod => Remedy {
            description: "injection happens only when a pod is created: delete and re-create the pod"
                .to_owned(),
            command: None,
        },
        _ => Remedy {
            description:
                "injection happens only when a pod is created: existing pods keep their current containers"
                    .to_owned(),
            command: None,
        },
    }
}

/// A label to set or remove.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LabelChange {
    Set(String, String),
    Remove(String),
}

/// The label changes that satisfy unmet requirements.
fn label_changes(unmet: &[Requirement]) -> Vec<LabelChange> {
    unmet
        .iter()
        .map(|requirement| match requirement.operator {
            Operator::Equals | Operator::In => LabelChange::Set(
                requirement.key.clone(),
                requirement.values.first().cloned().unwrap_or_default(),
            ),
            Operator::Exists => LabelChange::Set(requirement.key.clone(), "<value>".to_owned()),
            Operator::NotIn | Operator::DoesNotExist => LabelChange::Remove(requirement.key.clone()),
        })
        .collect()
}

fn describe_changes(changes: &[LabelChange]) -> String {
    changes
        .iter()
        .map(|change| match change {
            LabelChange::Set(key, value) => format!("{key}={value}"),
            LabelChange::Remove(key) => format!("remove {key}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn label_namespace_command(namespace: &str, changes: &[LabelChange]) -> String {
    let mut words = vec![
        "kubectl".to_owned(),
        "label".to_owned(),
        "namespace".to_owned(),
        namespace.to_owned(),
    ];
    words.extend(changes.iter().map(|change| match change {
        LabelChange::Set(key, value) => format!("{key}={value}"),
        LabelChange::Remove(key) => format!("{key}-"),
    }));
    words.push("--overwrite".to_owned());
    shell::command(words)
}

/// A `kubectl patch` (JSON merge patch) that sets or removes labels or annotations on the pod
/// template. `None` for a bare Pod: its metadata can be patched, but a running pod is never
/// re-injected.
fn metadata_patch_command(
    workload: &PodTemplate,
    namespace: &str,
    field: &str,
    changes: &[LabelChange],
) -> Option<String> {
    if workload.kind == WorkloadKind::Pod {
        return None;
    }
    let mut entries = serde_json::Map::new();
    for change in changes {
        match change {
            LabelChange::Set(key, value) => entries.insert(key.clone(), value.clone().into()),
            LabelChange::Remove(key) => entries.insert(key.clone(), serde_json::Value::Null),
        };
    }
    let mut patch = serde_json::json!({"metadata": {field: entries}});
    for segment in workload.template_path.split('.').rev() {
        patch = serde_json::json!({segment: patch});
    }
    Some(shell::command([
        "kubectl",
        "-n",
        namespace,
        "patch",
        workload.kind.resource(),
        object_name(workload),
        "--type",
        "merge",
        "-p",
        &shell::json(&patch),
    ]))
}

fn template_noun(workload: &PodTemplate) -> String {
    if workload.kind == WorkloadKind::Pod {
        "pod (in its manifest; then re-create it)".to_owned()
    } else {
        format!("pod template ({}.metadata)", workload.template_path)
    }
}

fn object_name(workload: &PodTemplate) -> &str {
    if workload.owner.name.is_empty() {
        "<name>"
    } else {
        &workload.owner.name
    }
}

#[cfg(test)]
mod tests;
