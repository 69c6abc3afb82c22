//! Kubernetes label selectors, evaluated exactly as `k8s.io/apimachinery` does.
//!
//! A `metav1.LabelSelector` is `matchLabels` (each pair an equality requirement) plus
//! `matchExpressions` (`In`, `NotIn`, `Exists`, `DoesNotExist`); all requirements are ANDed.
//! The corner cases users trip over are pinned down here and in the tests:
//!
//! - `NotIn` is **true when the key is absent** (so `istio-injection NotIn [disabled]` selects
//!   every unlabelled namespace);
//! - an empty selector `{}` matches everything (callers that want Istio's "empty never matches"
//!   rule check [`LabelSelector::is_empty`] themselves);
//! - `In`/`NotIn` need at least one value, `Exists`/`DoesNotExist` take none, operators are
//!   case-sensitive, keys and values must be valid label keys and values. Each of these is an
//!   error that names the offending field, never a silently non-matching selector.

use std::{collections::BTreeMap, fmt};

use serde::Serialize;
use serde_json::Value;

use crate::validation::{validate_label_key, validate_label_value};

/// Labels (or annotations) of one object: key to value, ordered by key.
pub type Labels = BTreeMap<String, String>;

/// The operator of one requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Operator {
    /// `matchLabels` entry: the key is present with exactly this value.
    Equals,
    /// The key is present and its value is one of the values.
    In,
    /// The key is absent, or its value is none of the values.
    NotIn,
    /// The key is present (any value).
    Exists,
    /// The key is absent.
    DoesNotExist,
}

/// One requirement of a selector: `key operator values`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Requirement {
    /// The label key.
    pub key: String,
    /// How the key is tested.
    pub operator: Operator,
    /// The values for `Equals`, `In` and `NotIn`; sorted and de-duplicated.
    pub values: Vec<String>,
}

impl Requirement {
    /// Whether the labels satisfy this requirement.
    pub fn matches(&self, labels: &Labels) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::Equals | Operator::In => value.is_some_and(|v| self.values.contains(v)),
            Operator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
        }
    }
}

impl fmt::Display for Requirement {
    /// Formats the requirement the way `kubectl get -l` and apimachinery print it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let values = self.values.join(",");
        match self.operator {
            Operator::Equals => write!(f, "{}={}", self.key, values),
            Operator::In => write!(f, "{} in ({})", self.key, values),
            Operator::NotIn => write!(f, "{} notin ({})", self.key, values),
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
        }
    }
}

/// A validated label selector.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

/// A selector that cannot be evaluated, with the path of the offending field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid label selector at {path}: {message}")]
pub struct SelectorError {
    /// Where the problem is, e.g. `webhooks[0].namespaceSelector.matchExpressions[1].operator`.
    pub path: String,
    /// What is wrong, and how to fix it.
    pub message: String,
}

impl LabelSelector {
    /// The selector that matches everything (what the API server uses for a missing selector).
    pub fn everything() -> Self {
        Self::default()
    }

    /// Builds a selector from its requirements, validating each one like
    /// `labels.NewRequirement`. `path` names the selector in errors.
    pub fn new(requirements: Vec<Requirement>, path: &str) -> Result<Self, SelectorError> {
        let located = requirements
            .into_iter()
            .enumerate()
            .map(|(index, r)| (r, format!("{path}[{index}]")));
        Self::checked(located.collect())
    }

    /// Validates located requirements and puts them in apimachinery's canonical form.
    fn checked(located: Vec<(Requirement, String)>) -> Result<Self, SelectorError> {
        let mut requirements = Vec::with_capacity(located.len());
        for (mut requirement, path) in located {
            check_requirement(&requirement, &path)?;
            requirement.values.sort();
            requirement.values.dedup();
            requirements.push(requirement);
        }
        // apimachinery keeps requirements sorted by key; the order never changes a match, but it
        // makes the printed form stable.
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self { requirements })
    }

    /// Parses a `metav1.LabelSelector` from its JSON form. `null` is the empty selector.
    /// `path` names the selector in errors (e.g. `webhooks[0].namespaceSelector`).
    pub fn from_value(value: &Value, path: &str) -> Result<Self, SelectorError> {
        let object = match value {
            Value::Null => return Ok(Self::everything()),
            Value::Object(object) => object,
            other => return Err(error(path, format!("must be an object, got {}", kind_of(other)))),
        };
        let mut requirements = Vec::new();
        for (field, field_value) in object {
            match field.as_str() {
                "matchLabels" => {
                    requirements.extend(match_labels(field_value, &format!("{path}.matchLabels"))?)
                }
                "matchExpressions" => requirements.extend(match_expressions(
                    field_value,
                    &format!("{path}.matchExpressions"),
                )?),
                unknown => {
                    return Err(error(
                        &format!("{path}.{unknown}"),
                        "unknown field; a label selector has only matchLabels and matchExpressions".into(),
                    ));
                }
            }
        }
        Self::checked(requirements)
    }

    /// Whether the selector has no requirement at all (`{}` or missing).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether the labels satisfy every requirement. An empty selector matches everything.
    pub fn matches(&self, labels: &Labels) -> bool {
        self.requirements
            .iter()
            .all(|requirement| requirement.matches(labels))
    }

    /// The requirements the labels do not satisfy, in key order.
    pub fn unmet<'a>(&'a self, labels: &'a Labels) -> impl Iterator<Item = &'a Requirement> + 'a {
        self.requirements
            .iter()
            .filter(move |requirement| !requirement.matches(labels))
    }
}

impl fmt::Display for LabelSelector {
    /// Formats the selector like `kubectl` (`a=b,c in (d),!e`); the empty selector prints as
    /// `<everything>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.requirements.is_empty() {
            return f.write_str("<everything>");
        }
        for (index, requirement) in self.requirements.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

fn match_labels(value: &Value, path: &str) -> Result<Vec<(Requirement, String)>, SelectorError> {
    let object = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Object(object) => object,
        other => {
            return Err(error(
                path,
                format!("must be a map of strings, got {}", kind_of(other)),
            ));
        }
    };
    object
        .iter()
        .map(|(key, value)| {
            let at = format!("{path}[{key:?}]");
            match value {
                Value::String(text) => Ok((
                    Requirement {
                        key: key.clone(),
                        operator: Operator::Equals,
                        values: vec![text.clone()],
                    },
                    at,
                )),
                other => Err(error(
                    &at,
                    format!("must be a string, got {}; quote it", describe(other)),
                )),
            }
        })
        .collect()
}

fn match_expressions(value: &Value, path: &str) -> Result<Vec<(Requirement, String)>, SelectorError> {
    let items = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => return Err(error(path, format!("must be a list, got {}", kind_of(other)))),
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let at = format!("{path}[{index}]");
            expression(item, &at).map(|requirement| (requirement, at))
        })
        .collect()
}

fn expression(item: &Value, path: &str) -> Result<Requirement, SelectorError> {
    let Value::Object(object) = item else {
        return Err(error(
            path,
            format!(
                "must be an object with key, operator and values, got {}",
                kind_of(item)
            ),
        ));
    };
    if let Some(unknown) = object
        .keys()
        .find(|k| !matches!(k.as_str(), "key" | "operator" | "values"))
    {
        return Err(error(
            &format!("{path}.{unknown}"),
            "unknown field; an expression has only key, operator and values".into(),
        ));
    }
    let key = match object.get("key") {
        Some(Value::String(key)) => key.clone(),
        None | Some(Value::Null) => return Err(error(&format!("{path}.key"), "is required".into())),
        Some(other) => {
            return Err(error(
                &format!("{path}.key"),
                format!("must be a string, got {}", kind_of(other)),
            ));
        }
    };
    let operator = match object.get("operator") {
        Some(Value::String(operator)) => match operator.as_str() {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            other => {
                return Err(error(
                    &format!("{path}.operator"),
                    format!(
                        "{other:?} is not a valid label selector operator; use one of In, NotIn, Exists, DoesNotExist (case-sensitive)"
                    ),
                ));
            }
        },
        None | Some(Value::Null) => return Err(error(&format!("{path}.operator"), "is required".into())),
        Some(other) => {
            return Err(error(
                &format!("{path}.operator"),
                format!("must be a string, got {}", kind_of(other)),
            ));
        }
    };
    let values = match object.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(values)) => values
            .iter()
            .enumerate()
            .map(|(index, value)| match value {
                Value::String(text) => Ok(text.clone()),
                other => Err(error(
                    &format!("{path}.values[{index}]"),
                    format!("must be a string, got {}; quote it", describe(other)),
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(error(
                &format!("{path}.values"),
                format!("must be a list of strings, got {}", kind_of(other)),
            ));
        }
    };
    Ok(Requirement {
        key,
        operator,
        values,
    })
}

/// The checks of `labels.NewRequirement`.
fn check_requirement(requirement: &Requirement, path: &str) -> Result<(), SelectorError> {
    // A matchLabels entry is one field (`matchLabels["k"]`): name it rather than sub-fields
    // that do not exist in the user's YAML.
    let equality = requirement.operator == Operator::Equals;
    let field = |name: &str| {
        if equality {
            path.to_owned()
        } else {
            format!("{path}.{name}")
        }
    };
    if let Err(message) = validate_label_key(&requirement.key) {
        return Err(error(
            &field("key"),
            format!("invalid label key {:?}: {message}", requirement.key),
        ));
    }
    match requirement.operator {
        Operator::In | Operator::NotIn if requirement.values.is_empty() => {
            return Err(error(
                &format!("{path}.values"),
                format!("operator {:?} needs at least one value", requirement.operator),
            ));
        }
        Operator::Equals if requirement.values.len() != 1 => {
            return Err(error(
                path,
                "an equality requirement needs exactly one value".into(),
            ));
        }
        Operator::Exists | Operator::DoesNotExist if !requirement.values.is_empty() => {
            return Err(error(
                &format!("{path}.values"),
                format!("operator {:?} takes no values; remove them", requirement.operator),
            ));
        }
        _ => {}
    }
    for (index, value) in requirement.values.iter().enumerate() {
        if let Err(message) = validate_label_value(value) {
            let at = if equality {
                path.to_owned()
            } else {
                format!("{path}.values[{index}]")
            };
            return Err(error(&at, format!("invalid label value {value:?}: {message}")));
        }
    }
    Ok(())
}

fn error(path: &str, message: String) -> SelectorError {
    SelectorError {
        path: path.to_owned(),
        message,
    }
}

/// The JSON type of a value, for error messages.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The JSON type and value of a scalar, for "quote it" messages.
pub(crate) fn describe(value: &Value) -> String {
    match value {
        Value::Bool(_) | Value::Number(_) => format!("{} {value}", kind_of(value)),
        other => kind_of(other).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn selector(value: Value) -> LabelSelector {
        LabelSelector::from_value(&value, "sel").expect("valid selector")
    }

    fn invalid(value: Value) -> SelectorError {
        LabelSelector::from_value(&value, "sel").expect_err("invalid selector")
    }

    #[test]
    fn empty_selector_matches_everything() {
        assert!(selector(json!({})).matches(&labels(&[])));
        assert!(selector(json!(null)).matches(&labels(&[("a", "b")])));
        assert!(selector(json!({"matchLabels": {}, "matchExpressions": []})).is_empty());
    }

    #[test]
    fn match_labels_is_equality() {
        let s = selector(json!({"matchLabels": {"istio-injection": "enabled"}}));
        assert!(s.matches(&labels(&[("istio-injection", "enabled")])));
        assert!(!s.matches(&labels(&[("istio-injection", "disabled")])));
        assert!(!s.matches(&labels(&[])));
        assert!(!s.matches(&labels(&[("istio-injection", "Enabled")])));
    }

    #[test]
    fn in_requires_the_key_and_one_of_the_values() {
        let s =
            selector(json!({"matchExpressions": [{"key": "env", "operator": "In", "values": ["a", "b"]}]}));
        assert!(s.matches(&labels(&[("env", "a")])));
        assert!(s.matches(&labels(&[("env", "b")])));
        assert!(!s.matches(&labels(&[("env", "c")])));
        assert!(!s.matches(&labels(&[])));
    }

    #[test]
    fn not_in_is_true_when_the_key_is_missing() {
        let s = selector(json!({"matchExpressions": [
            {"key": "istio-injection", "operator": "NotIn", "values": ["disabled"]}]}));
        assert!(s.matches(&labels(&[])));
        assert!(s.matches(&labels(&[("istio-injection", "enabled")])));
        assert!(s.matches(&labels(&[("istio-injection", "")])));
        assert!(!s.matches(&labels(&[("istio-injection", "disabled")])));
    }

    #[test]
    fn exists_and_does_not_exist_test_presence_only() {
        let exists = selector(json!({"matchExpressions": [{"key": "k", "operator": "Exists"}]}));
        let absent =
            selector(json!({"matchExpressions": [{"key": "k", "operator": "DoesNotExist", "values": []}]}));
        assert!(exists.matches(&labels(&[("k", "")])));
        assert!(!exists.matches(&labels(&[])));
        assert!(absent.matches(&labels(&[])));
        assert!(!absent.matches(&labels(&[("k", "x")])));
    }

    #[test]
    fn requirements_are_anded() {
        let s = selector(json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]
        }));
        assert!(s.matches(&labels(&[("app", "web")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "db")])));
        assert!(!s.matches(&labels(&[("tier", "front")])));
        let unmet: Vec<String> = s
            .unmet(&labels(&[("tier", "db")]))
            .map(|r| r.to_string())
            .collect();
        assert_eq!(unmet, ["app=web", "tier notin (db)"]);
    }

    #[test]
    fn prints_like_kubectl() {
        let s = selector(json!({
            "matchLabels": {"b": "1"},
            "matchExpressions": [
                {"key": "a", "operator": "In", "values": ["y", "x"]},
                {"key": "c", "operator": "DoesNotExist"},
                {"key": "d", "operator": "Exists"},
                {"key": "e", "operator": "NotIn", "values": ["z"]}
            ]
        }));
        assert_eq!(s.to_string(), "a in (x,y),b=1,!c,d,e notin (z)");
        assert_eq!(LabelSelector::everything().to_string(), "<everything>");
    }

    #[test]
    fn unknown_operator_is_an_error_naming_the_field() {
        let e = invalid(json!({"matchExpressions": [{"key": "k", "operator": "in", "values": ["a"]}]}));
        assert_eq!(e.path, "sel.matchExpressions[0].operator");
        assert!(
            e.message
                .contains("\"in\" is not a valid label selector operator"),
            "{e}"
        );
    }

    #[test]
    fn in_without_values_is_an_error() {
        let e = invalid(json!({"matchExpressions": [{"key": "k", "operator": "In", "values": []}]}));
        assert_eq!(e.path, "sel.matchExpressions[0].values");
        let e = invalid(json!({"matchExpressions": [{"key": "k", "operator": "NotIn"}]}));
        assert_eq!(e.path, "sel.matchExpressions[0].values");
    }

    #[test]
    fn exists_with_values_is_an_error() {
        let e = invalid(json!({"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["a"]}]}));
        assert_eq!(e.path, "sel.matchExpressions[0].values");
        assert!(e.message.contains("takes no values"));
    }

    #[test]
    fn malformed_selectors_are_errors() {
        assert_eq!(invalid(json!("app=web")).path, "sel");
        assert_eq!(invalid(json!({"matchLabel": {"a": "b"}})).path, "sel.matchLabel");
        assert_eq!(
            invalid(json!({"matchLabels": {"a": true}})).path,
            "sel.matchLabels[\"a\"]"
        );
        assert_eq!(
            invalid(json!({"matchExpressions": [{"operator": "Exists"}]})).path,
            "sel.matchExpressions[0].key"
        );
        assert_eq!(
            invalid(json!({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]})).path,
            "sel.matchExpressions[0].values[0]"
        );
        assert_eq!(
            invalid(json!({"matchLabels": {"bad key": "x"}})).path,
            "sel.matchLabels[\"bad key\"]"
        );
        assert_eq!(
            invalid(json!({"matchLabels": {"k": "bad value"}})).path,
            "sel.matchLabels[\"k\"]"
        );
    }
}
