//! The data the templates render against (Istio's `SidecarTemplateData`) and the function map.
//!
//! Values here are plain data with Go field names: maps for `ObjectMeta`, `Spec`, `ProxyConfig`
//! and `MeshConfig`, numbers as Go would type them where the templates compare them. Go methods
//! on Istio's types (`.InterceptionMode.String`, nil-safe getters) come with the host-object
//! implementation of the data.

use std::collections::BTreeMap;

use gotemplate::{FuncMap, IntType, Value as TemplateValue};
use serde_json::Value;

use crate::owner::Owner;

/// What the templates are rendered from, for one pod.
#[derive(Debug, Clone)]
pub struct TemplateInputs<'a> {
    /// The pod, stripped of a previous injection.
    pub pod: &'a Value,
    /// The owning workload.
    pub owner: &'a Owner,
    /// The mesh config (protobuf JSON).
    pub mesh: &'a Value,
    /// The effective ProxyConfig (protobuf JSON).
    pub proxy_config: &'a Value,
    /// The values.
    pub values: &'a Value,
    /// `.Revision`.
    pub revision: &'a str,
    /// `.NativeSidecars`.
    pub native_sidecars: bool,
    /// `.CompliancePolicy`.
    pub compliance_policy: &'a str,
    /// `.ProxyUID`.
    pub proxy_uid: i64,
    /// `.ProxyGID`.
    pub proxy_gid: i64,
    /// `.ProxyImage`.
    pub proxy_image: String,
    /// `.ProxyInitImage`.
    pub proxy_init_image: String,
}

/// The function map templates are parsed and run with: sprig's.
pub fn funcs() -> FuncMap {
    gotemplate::sprig::funcs()
}

/// The template data for one pod.
pub fn template_data(inputs: &TemplateInputs<'_>) -> TemplateValue {
    let mut data = BTreeMap::new();
    let metadata = inputs.pod.get("metadata").unwrap_or(&Value::Null);
    let spec = inputs.pod.get("spec").unwrap_or(&Value::Null);
    data.insert(
        "TypeMeta".to_owned(),
        struct_of([
            ("Kind", TemplateValue::str(inputs.owner.kind.as_str())),
            (
                "APIVersion",
                TemplateValue::str(inputs.owner.api_version.as_str()),
            ),
        ]),
    );
    data.insert(
        "DeploymentMeta".to_owned(),
        struct_of([
            ("Name", TemplateValue::str(inputs.owner.name.as_str())),
            ("Namespace", TemplateValue::str(inputs.owner.namespace.as_str())),
        ]),
    );
    data.insert("ObjectMeta".to_owned(), go_names(metadata));
    data.insert("Spec".to_owned(), go_names(spec));
    data.insert("ProxyConfig".to_owned(), go_names(inputs.proxy_config));
    data.insert("MeshConfig".to_owned(), go_names(inputs.mesh));
    data.insert("Values".to_owned(), TemplateValue::from_json(inputs.values));
    data.insert("Revision".to_owned(), TemplateValue::str(inputs.revision));
    data.insert(
        "NativeSidecars".to_owned(),
        TemplateValue::Bool(inputs.native_sidecars),
    );
    data.insert(
        "ProxyImage".to_owned(),
        TemplateValue::str(inputs.proxy_image.as_str()),
    );
    data.insert(
        "ProxyInitImage".to_owned(),
        TemplateValue::str(inputs.proxy_init_image.as_str()),
    );
    data.insert(
        "ProxyUID".to_owned(),
        TemplateValue::Int(inputs.proxy_uid, IntType::Int64),
    );
    data.insert(
        "ProxyGID".to_owned(),
        TemplateValue::Int(inputs.proxy_gid, IntType::Int64),
    );
    let localhost = inputs
        .mesh
        .pointer("/inboundTrafficPolicy/mode")
        .and_then(Value::as_str)
        == Some("LOCALHOST");
    data.insert(
        "InboundTrafficPolicyMode".to_owned(),
        TemplateValue::str(if localhost { "localhost" } else { "passthrough" }),
    );
    data.insert(
        "CompliancePolicy".to_owned(),
        TemplateValue::str(inputs.compliance_policy),
    );
    TemplateValue::map(data)
}

fn struct_of<const N: usize>(fields: [(&str, TemplateValue); N]) -> TemplateValue {
    TemplateValue::map(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

/// JSON with object keys renamed to Go field names (`apiVersion` → `APIVersion`,
/// `serviceAccountName` → `ServiceAccountName`); maps of user data (labels, annotations) keep
/// their keys.
fn go_names(value: &Value) -> TemplateValue {
    convert(value, false)
}

fn convert(value: &Value, user_keys: bool) -> TemplateValue {
    match value {
        Value::Object(map) => TemplateValue::map(
            map.iter()
                .map(|(key, item)| {
                    let keep = matches!(
                        key.as_str(),
                        "labels" | "annotations" | "proxyMetadata" | "nodeSelector" | "matchLabels"
                    );
                    let name = if user_keys {
                        key.clone()
                    } else {
                        go_field_name(key)
                    };
                    (name, convert(item, keep))
                })
                .collect(),
        ),
        Value::Array(items) => TemplateValue::list(items.iter().map(|i| convert(i, false)).collect()),
        Value::Number(number) if number.is_i64() => {
            TemplateValue::Int(number.as_i64().unwrap_or(0), IntType::Int32)
        }
        other => TemplateValue::from_json(other),
    }
}

/// The Go field name for a JSON field name.
fn go_field_name(key: &str) -> String {
    if let Some(rest) = key.strip_prefix("api") {
        return format!("API{rest}");
    }
    if key == "uid" {
        return "UID".to_owned();
    }
    let mut chars = key.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
