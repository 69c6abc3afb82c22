//! The API server's gate: which webhooks of a MutatingWebhookConfiguration it calls for a pod.
//!
//! Before the injector sees anything, the API server filters every webhook entry by its `rules`
//! (operation CREATE on `pods` in the core group), its `namespaceSelector` (against the labels of
//! the pod's **namespace**) and its `objectSelector` (against the pod's own labels). A missing
//! selector matches everything. Only labels count here: the pod *annotation*
//! `sidecar.istio.io/inject` is invisible to the API server.
//!
//! `matchConditions` (CEL expressions) are evaluated by the API server after the selectors, with
//! the pod; [`match_conditions`] evaluates them the same way, and notes those it cannot.

use serde::Serialize;
use serde_json::Value;

use crate::{
    object::{FieldError, ObjectRef, optional_string, string_map},
    selector::{LabelSelector, Labels, Requirement, kind_of},
};

pub mod match_conditions;

pub use match_conditions::{ConditionsOutcome, MatchCondition};

/// The label the API server puts on every namespace, holding its name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The namespace of the pod, as the API server sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceFacts {
    /// Its name.
    pub name: String,
    /// Its labels, including `kubernetes.io/metadata.name`.
    pub labels: Labels,
}

impl NamespaceFacts {
    /// A namespace with these labels; `kubernetes.io/metadata.name` is added as the API server does.
    pub fn new(name: &str, mut labels: Labels) -> Self {
        labels.insert(NAMESPACE_NAME_LABEL.to_owned(), name.to_owned());
        Self {
            name: name.to_owned(),
            labels,
        }
    }

    /// Reads a Namespace object.
    pub fn from_object(object: &Value) -> Result<Self, FieldError> {
        let reference = ObjectRef::of(object)?;
        if reference.kind != "Namespace" {
            return Err(FieldError::new(
                "kind",
                format!("expected a Namespace, got {}", reference.kind),
            ));
        }
        if reference.name.is_empty() {
            return Err(FieldError::new(
                "metadata.name",
                "missing; a Namespace needs a name".into(),
            ));
        }
        let metadata = object.get("metadata").unwrap_or(&Value::Null);
        Ok(Self::new(
            &reference.name,
            string_map(metadata, "labels", "metadata.labels")?,
        ))
    }
}

/// One `rules` entry of a webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleWithOperations {
    /// `operations` (`CREATE`, `*`, …).
    pub operations: Vec<String>,
    /// `apiGroups` (`""` is the core group).
    pub api_groups: Vec<String>,
    /// `apiVersions`.
    pub api_versions: Vec<String>,
    /// `resources` (`pods`, `pods/*`, `*`, `*/*`).
    pub resources: Vec<String>,
    /// `scope` (`*`, `Namespaced`, `Cluster`); `*` when absent.
    pub scope: String,
}

impl RuleWithOperations {
    /// Whether this rule selects the creation of a pod (core `v1`, resource `pods`, no subresource).
    pub fn matches_pod_create(&self) -> bool {
        let any = |list: &[String], wanted: &str| list.iter().any(|item| item == "*" || item == wanted);
        let resource = self.resources.iter().any(|entry| {
            let (resource, subresource) = entry.split_once('/').unwrap_or((entry, ""));
            (resource == "*" || resource == "pods") && (subresource == "*" || subresource.is_empty())
        });
        any(&self.operations, "CREATE")
            && any(&self.api_groups, "")
            && any(&self.api_versions, "v1")
            && resource
            && matches!(self.scope.as_str(), "*" | "Namespaced")
    }
}

/// One webhook entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Webhook {
    /// Its name (e.g. `namespace.sidecar-injector.istio.io`).
    pub name: String,
    /// Where the API server sends requests: the `url`, or `service ns/name:port/path`.
    pub client: String,
    /// Its rules.
    pub rules: Vec<RuleWithOperations>,
    /// Against the namespace's labels; everything when absent.
    pub namespace_selector: LabelSelector,
    /// Against the pod's labels; everything when absent.
    pub object_selector: LabelSelector,
    /// `Fail` (the default) or `Ignore`.
    pub failure_policy: String,
    /// The CEL `matchConditions`.
    pub match_conditions: Vec<MatchCondition>,
}

/// A MutatingWebhookConfiguration.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookConfiguration {
    /// `metadata.name`.
    pub name: String,
    /// Its webhook entries.
    pub webhooks: Vec<Webhook>,
}

impl WebhookConfiguration {
    /// Reads a MutatingWebhookConfiguration object.
    pub fn from_object(object: &Value) -> Result<Self, FieldError> {
        let reference = ObjectRef::of(object)?;
        if reference.kind != "MutatingWebhookConfiguration" {
            let hint = if reference.kind == "ValidatingWebhookConfiguration" {
                "; validating webhooks never inject"
            } else {
                ""
            };
            return Err(FieldError::new(
                "kind",
                format!(
                    "expected a MutatingWebhookConfiguration, got {}{hint}",
                    reference.kind
                ),
            ));
        }
        let webhooks = match object.get("webhooks") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(index, item)| webhook(item, &format!("webhooks[{index}]")))
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(FieldError::new(
                    "webhooks",
                    format!("must be a list, got {}", kind_of(other)),
                ));
            }
        };
        Ok(Self {
            name: reference.name,
            webhooks,
        })
    }
}

fn webhook(value: &Value, at: &str) -> Result<Webhook, FieldError> {
    if !value.is_object() {
        return Err(FieldError::new(
            at,
            format!("must be an object, got {}", kind_of(value)),
        ));
    }
    let path = |field: &str| format!("{at}.{field}");
    let name = optional_string(value, "name", &path("name"))?
        .ok_or_else(|| FieldError::new(&path("name"), "missing; every webhook needs a name".into()))?;
    let selector = |field: &str| {
        LabelSelector::from_value(value.get(field).unwrap_or(&Value::Null), &path(field))
            .map_err(|e| FieldError::new(&e.path, e.message))
    };
    let rules = match value.get("rules") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| rule(item, &path(&format!("rules[{index}]"))))
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(FieldError::new(
                &path("rules"),
                format!("must be a list, got {}", kind_of(other)),
            ));
        }
    };
    let match_conditions = match value.get("matchConditions") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                let text = |field: &str, default: &str| {
                    item.get(field)
                        .and_then(Value::as_str)
                        .unwrap_or(default)
                        .to_owned()
                };
                MatchCondition {
                    name: text("name", "<unnamed>"),
                    expression: text("expression", ""),
                }
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(Webhook {
        client: client(value.get("clientConfig").unwrap_or(&Value::Null)),
        namespace_selector: selector("namespaceSelector")?,
        object_selector: selector("objectSelector")?,
        failure_policy: optional_string(value, "failurePolicy", &path("failurePolicy"))?
            .unwrap_or_else(|| "Fail".into()),
        rules,
        match_conditions,
        name,
    })
}

fn rule(value: &Value, at: &str) -> Result<RuleWithOperations, FieldError> {
    let list = |field: &str| -> Result<Vec<String>, FieldError> {
        match value.get(field) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(index, item)| {
                    item.as_str().map(str::to_owned).ok_or_else(|| {
                        FieldError::new(
                            &format!("{at}.{field}[{index}]"),
                            format!("must be a string, got {}", kind_of(item)),
                        )
                    })
                })
                .collect(),
            Some(other) => Err(FieldError::new(
                &format!("{at}.{field}"),
                format!("must be a list, got {}", kind_of(other)),
            )),
        }
    };
    Ok(RuleWithOperations {
        operations: list("operations")?,
        api_groups: list("apiGroups")?,
        api_versions: list("apiVersions")?,
        resources: list("resources")?,
        scope: optional_string(value, "scope", &format!("{at}.scope"))?.unwrap_or_else(|| "*".into()),
    })
}

fn client(config: &Value) -> String {
    if let Some(url) = config.get("url").and_then(Value::as_str) {
        return url.to_owned();
    }
    match config.get("service") {
        Some(service) => {
            let field = |name: &str| service.get(name).and_then(Value::as_str).unwrap_or("");
            let port = service.get("port").and_then(Value::as_u64).unwrap_or(443);
            format!(
                "service {}/{}:{port}{}",
                field("namespace"),
                field("name"),
                field("path")
            )
        }
        None => "<no clientConfig>".to_owned(),
    }
}

/// How one selector fared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SelectorOutcome {
    /// The selector, printed like kubectl.
    pub selector: String,
    /// Whether it matched.
    pub matched: bool,
    /// The requirements that failed, printed like kubectl.
    pub unmet: Vec<String>,
    /// The requirements that failed.
    #[serde(skip)]
    pub unmet_requirements: Vec<Requirement>,
}

impl SelectorOutcome {
    fn evaluate(selector: &LabelSelector, labels: &Labels) -> Self {
        Self {
            selector: selector.to_string(),
            matched: selector.matches(labels),
            unmet: selector.unmet(labels).map(ToString::to_string).collect(),
            unmet_requirements: selector.unmet(labels).cloned().collect(),
        }
    }
}

/// Whether the API server calls one webhook, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookVerdict {
    /// The configuration's name.
    pub configuration: String,
    /// The webhook's name.
    pub webhook: String,
    /// Where it sends requests.
    pub client: String,
    /// Whether a rule selects pod creation.
    pub rules_match: bool,
    /// The namespaceSelector against the namespace's labels.
    pub namespace_selector: SelectorOutcome,
    /// The objectSelector against the pod's labels.
    pub object_selector: SelectorOutcome,
    /// Its `matchConditions` for the pod, once the selectors matched (none evaluated otherwise).
    pub match_conditions: ConditionsOutcome,
    /// Whether the API server calls this webhook for the pod.
    pub called: bool,
    /// `Fail` or `Ignore`: what happens when the call fails.
    pub failure_policy: String,
    /// Things worth knowing (matchConditions that could not be evaluated).
    pub notes: Vec<String>,
}

/// Evaluates every webhook of every configuration for a pod with `pod_labels` (and nothing else
/// known of it) in `namespace`.
pub fn evaluate(
    configurations: &[WebhookConfiguration],
    namespace: &NamespaceFacts,
    pod_labels: &Labels,
) -> Vec<WebhookVerdict> {
    let pod = serde_json::json!({
        "metadata": {"namespace": namespace.name, "labels": pod_labels},
        "spec": {},
    });
    evaluate_pod(configurations, namespace, &pod)
}

/// Evaluates every webhook of every configuration for the creation of `pod` (a Pod object, or
/// as much of one as is known: `metadata.labels`, `metadata.annotations`, `spec`) in
/// `namespace`: rules, selectors, then matchConditions.
pub fn evaluate_pod(
    configurations: &[WebhookConfiguration],
    namespace: &NamespaceFacts,
    pod: &Value,
) -> Vec<WebhookVerdict> {
    let pod_labels = pod
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect::<Labels>()
        })
        .unwrap_or_default();
    configurations
        .iter()
        .flat_map(|configuration| {
            let pod_labels = &pod_labels;
            configuration.webhooks.iter().map(move |webhook| {
                let rules_match = webhook.rules.iter().any(RuleWithOperations::matches_pod_create);
                let namespace_selector =
                    SelectorOutcome::evaluate(&webhook.namespace_selector, &namespace.labels);
                let object_selector = SelectorOutcome::evaluate(&webhook.object_selector, pod_labels);
                let selected = rules_match && namespace_selector.matched && object_selector.matched;
                let match_conditions = if selected {
                    match_conditions::evaluate(&webhook.match_conditions, pod, &namespace.name)
                } else {
                    ConditionsOutcome::default()
                };
                let called = selected && match_conditions.pass();
                let notes = if match_conditions.unevaluated.is_empty() || !called {
                    Vec::new()
                } else {
                    vec![format!(
                        "matchConditions not evaluated here, assumed to pass: {}",
                        match_conditions.unevaluated.join("; ")
                    )]
                };
                WebhookVerdict {
                    configuration: configuration.name.clone(),
                    webhook: webhook.name.clone(),
                    client: webhook.client.clone(),
                    rules_match,
                    namespace_selector,
                    object_selector,
                    match_conditions,
                    called,
                    failure_policy: webhook.failure_policy.clone(),
                    notes,
                }
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
