//! Reading the metadata of Kubernetes objects held as JSON values.
//!
//! We never decode a whole object into typed structs (fields newer than the library would be
//! lost); we read the few fields we need and check their types, so that a label written as a
//! YAML boolean is reported instead of silently ignored.

use std::fmt;

use serde_json::Value;

use crate::selector::{Labels, describe, kind_of};

/// `apiVersion`, `kind`, name and namespace of an object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObjectRef {
    /// `apiVersion`, e.g. `apps/v1`.
    pub api_version: String,
    /// `kind`, e.g. `Deployment`.
    pub kind: String,
    /// `metadata.name`, or `metadata.generateName` followed by `*` when only that is set.
    pub name: String,
    /// `metadata.namespace`, when set.
    pub namespace: Option<String>,
}

impl ObjectRef {
    /// Reads the identity of an object; a missing `kind` is an error, a missing name is `""`.
    pub fn of(object: &Value) -> Result<Self, FieldError> {
        if !object.is_object() {
            return Err(FieldError::new(
                "(document)",
                format!("must be a Kubernetes object, got {}", kind_of(object)),
            ));
        }
        let kind = match object.get("kind") {
            Some(Value::String(kind)) if !kind.is_empty() => kind.clone(),
            None | Some(Value::Null) => {
                return Err(FieldError::new("kind", "missing; not a Kubernetes object".into()));
            }
            Some(other) => {
                return Err(FieldError::new(
                    "kind",
                    format!("must be a string, got {}", describe(other)),
                ));
            }
        };
        let api_version = optional_string(object, "apiVersion", "apiVersion")?.unwrap_or_default();
        let metadata = object.get("metadata").unwrap_or(&Value::Null);
        let name = match optional_string(metadata, "name", "metadata.name")? {
            Some(name) => name,
            None => optional_string(metadata, "generateName", "metadata.generateName")?
                .map(|prefix| format!("{prefix}*"))
                .unwrap_or_default(),
        };
        let namespace =
            optional_string(metadata, "namespace", "metadata.namespace")?.filter(|n| !n.is_empty());
        Ok(Self {
            api_version,
            kind,
            name,
            namespace,
        })
    }

    /// The API group (`apps` for `apps/v1`, `""` for `v1`).
    pub fn group(&self) -> &str {
        self.api_version.rsplit_once('/').map_or("", |(group, _)| group)
    }
}

impl fmt::Display for ObjectRef {
    /// `Kind namespace/name`, or `Kind name` without a namespace.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = if self.name.is_empty() {
            "<unnamed>"
        } else {
            &self.name
        };
        match &self.namespace {
            Some(namespace) => write!(f, "{} {namespace}/{name}", self.kind),
            None => write!(f, "{} {name}", self.kind),
        }
    }
}

/// A field of an object that has the wrong shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct FieldError {
    /// The field, e.g. `spec.template.metadata.annotations["sidecar.istio.io/inject"]`.
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

impl FieldError {
    /// A new error at `path`.
    pub fn new(path: &str, message: String) -> Self {
        Self {
            path: path.to_owned(),
            message,
        }
    }

    /// The same error, with `prefix.` in front of its path.
    pub fn under(self, prefix: &str) -> Self {
        Self {
            path: format!("{prefix}.{}", self.path),
            message: self.message,
        }
    }
}

/// Reads an optional string field of `object`; `path` names it in errors.
pub fn optional_string(object: &Value, field: &str, path: &str) -> Result<Option<String>, FieldError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(FieldError::new(
            path,
            format!("must be a string, got {}", describe(other)),
        )),
    }
}

/// Reads a map of strings (labels or annotations). A non-string value is an error that tells
/// the user to quote it — the API server rejects such manifests too.
pub fn string_map(object: &Value, field: &str, path: &str) -> Result<Labels, FieldError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(Labels::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(key, value)| match value {
                Value::String(text) => Ok((key.clone(), text.clone())),
                other => Err(FieldError::new(
                    &format!("{path}[{key:?}]"),
                    format!(
                        "must be a string, got {}; quote it (for example {key}: \"{}\") — the API server rejects \
                         unquoted values",
                        describe(other),
                        unquoted(other)
                    ),
                )),
            })
            .collect(),
        Some(other) => Err(FieldError::new(path, format!("must be a map of strings, got {}", kind_of(other)))),
    }
}

/// Reads an optional boolean field.
pub fn optional_bool(object: &Value, field: &str, path: &str) -> Result<Option<bool>, FieldError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(flag)) => Ok(Some(*flag)),
        Some(other) => Err(FieldError::new(
            path,
            format!("must be true or false, got {}", describe(other)),
        )),
    }
}

fn unquoted(value: &Value) -> String {
    match value {
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) => number.to_string(),
        _ => "...".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_identity() {
        let object = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}});
        let reference = ObjectRef::of(&object).expect("valid");
        assert_eq!(reference.to_string(), "Deployment shop/web");
        assert_eq!(reference.group(), "apps");
        let pod =
            ObjectRef::of(&json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "web-"}}))
                .expect("valid");
        assert_eq!((pod.name.as_str(), pod.group()), ("web-*", ""));
        assert_eq!(pod.to_string(), "Pod web-*");
    }

    #[test]
    fn rejects_non_objects() {
        assert_eq!(
            ObjectRef::of(&json!({"metadata": {}})).expect_err("no kind").path,
            "kind"
        );
        assert_eq!(ObjectRef::of(&json!([1])).expect_err("list").path, "(document)");
        assert_eq!(
            ObjectRef::of(&json!({"kind": "Pod", "metadata": {"name": 3}}))
                .expect_err("bad")
                .path,
            "metadata.name"
        );
    }

    #[test]
    fn unquoted_annotation_values_are_errors() {
        let metadata = json!({"annotations": {"sidecar.istio.io/inject": false}});
        let error = string_map(&metadata, "annotations", "metadata.annotations").expect_err("boolean");
        assert_eq!(error.path, "metadata.annotations[\"sidecar.istio.io/inject\"]");
        assert!(
            error
                .message
                .contains("quote it (for example sidecar.istio.io/inject: \"false\")"),
            "{error}"
        );
    }
}
