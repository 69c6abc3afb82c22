//! Loading the injector's settings: the `values` and the mesh config, each given raw or as the
//! ConfigMap that holds it (`istio-sidecar-injector` `data.values`, `istio` `data.mesh`).
//!
//! Values are JSON (Helm's `toPrettyJson`) read as YAML, so every number behaves as a Go float64 in
//! the templates. The mesh config is YAML overlaid on Istio's defaults. Errors name the source and
//! the field; nothing here reads files.

use serde_json::{Map, Value};

use crate::mesh::{apply_mesh_config, default_mesh_config, overlay_mesh_config};

/// Settings that cannot be used, with where the problem is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{location}: {message}")]
pub struct SettingsError {
    /// The field or document, e.g. `data.values`.
    pub location: String,
    /// What is wrong.
    pub message: String,
}

fn error(location: &str, message: impl Into<String>) -> SettingsError {
    SettingsError {
        location: location.to_owned(),
        message: message.into(),
    }
}

/// Reads `values`: raw JSON/YAML, or a ConfigMap's `data.values`.
pub fn parse_values(text: &str) -> Result<Value, SettingsError> {
    let document = single_document(text)?;
    let (raw, at) = match config_map_key(&document, "values")? {
        Some(raw) => (parse_text(&raw, "data.values")?, "data.values"),
        None => (document, "values"),
    };
    match raw {
        Value::Object(_) => Ok(raw),
        Value::Null => Ok(Value::Object(Default::default())),
        other => Err(error(at, format!("must be a mapping, got {}", kind(&other)))),
    }
}

/// Reads the mesh config: raw YAML or a ConfigMap's `data.mesh`, overlaid on Istio's defaults.
pub fn parse_mesh(text: &str) -> Result<Value, SettingsError> {
    let document = single_document(text)?;
    let (yaml, at) = match config_map_key(&document, "mesh")? {
        Some(raw) => (raw, "data.mesh"),
        None => (text.to_owned(), "mesh"),
    };
    apply_mesh_config(&yaml, &default_mesh_config()).map_err(|e| error(at, e.0))
}

/// What an `IstioOperator` (`install.istio.io/v1alpha1`) contributes to injection, as
/// `istioctl kube-inject --operatorFileName` uses it.
#[derive(Debug, Clone, PartialEq)]
pub struct IstioOperator {
    /// `spec.values`, with `spec.hub`/`spec.tag` as `global.hub`/`global.tag` underneath (the
    /// values' own settings win, as in Istio's install merge).
    pub values: Value,
    /// `spec.meshConfig`, to overlay on the mesh config.
    pub mesh_config: Option<Map<String, Value>>,
}

/// Reads an `IstioOperator` resource.
pub fn parse_istio_operator(text: &str) -> Result<IstioOperator, SettingsError> {
    let document = single_document(text)?;
    let Value::Object(root) = &document else {
        return Err(error("IstioOperator", "must be a mapping"));
    };
    let kind_of = root.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind_of != "IstioOperator" {
        return Err(error("kind", format!("expected IstioOperator, got {kind_of:?}")));
    }
    let spec = mapping_at(root.get("spec"), "spec")?;
    let mut values = serde_json::json!({});
    for field in ["hub", "tag"] {
        match spec.and_then(|spec| spec.get(field)) {
            None | Some(Value::Null) => {}
            Some(value @ (Value::String(_) | Value::Number(_))) => {
                let text = value.as_str().map_or_else(|| value.to_string(), str::to_owned);
                values["global"][field] = Value::String(text);
            }
            Some(other) => {
                return Err(error(
                    &format!("spec.{field}"),
                    format!("must be a string, got {}", kind(other)),
                ));
            }
        }
    }
    let field = |name: &str| spec.and_then(|spec| spec.get(name));
    if let Some(overlay) = mapping_at(field("values"), "spec.values")? {
        merge_values(&mut values, &Value::Object(overlay.clone()));
    }
    let mesh_config = mapping_at(field("meshConfig"), "spec.meshConfig")?.cloned();
    Ok(IstioOperator { values, mesh_config })
}

/// Applies an `IstioOperator` to loaded values and mesh config: its values are merged over the
/// values (maps key by key, anything else replaced: the operator wins), its `meshConfig` is
/// overlaid on the mesh config as a mesh config file would be.
pub fn apply_istio_operator(
    operator: &IstioOperator,
    values: &mut Value,
    mesh: &mut Value,
) -> Result<(), SettingsError> {
    merge_values(values, &operator.values);
    if let Some(overlay) = &operator.mesh_config {
        *mesh = overlay_mesh_config(overlay.clone(), mesh).map_err(|e| error("spec.meshConfig", e.0))?;
    }
    Ok(())
}

/// The mapping at `at`, if set (`null` counts as unset); anything else is an error naming `at`.
fn mapping_at<'v>(
    value: Option<&'v Value>,
    at: &str,
) -> Result<Option<&'v Map<String, Value>>, SettingsError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(other) => Err(error(at, format!("must be a mapping, got {}", kind(other)))),
    }
}

/// Merges `overlay` into `base`: maps key by key, everything else replaced.
fn merge_values(base: &mut Value, overlay: &Value) {
    match (base, overlay) {
        (Value::Object(base), Value::Object(overlay)) => {
            for (key, value) in overlay {
                match base.get_mut(key) {
                    Some(existing) => merge_values(existing, value),
                    None => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, overlay) => *base = overlay.clone(),
    }
}

fn single_document(text: &str) -> Result<Value, SettingsError> {
    let documents = injector_core::yaml::parse_documents(text)
        .map_err(|e| error(&format!("document {}", e.index), e.message))?;
    match documents.len() {
        0 => Ok(Value::Null),
        1 => Ok(documents
            .into_iter()
            .next()
            .map(|(_, v)| v)
            .unwrap_or(Value::Null)),
        _ => Err(error("(file)", "more than one YAML document")),
    }
}

fn parse_text(text: &str, at: &str) -> Result<Value, SettingsError> {
    single_document(text).map_err(|e| error(at, format!("is not valid JSON or YAML: {}", e.message)))
}

/// `Some(data[key])` when the document is a ConfigMap; an error when it is one without that key.
fn config_map_key(document: &Value, key: &str) -> Result<Option<String>, SettingsError> {
    if document.get("kind").and_then(Value::as_str) != Some("ConfigMap")
        || document.get("apiVersion").is_none()
    {
        return Ok(None);
    }
    let name = document
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("<unnamed>");
    match document.get("data").and_then(|d| d.get(key)) {
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(error(
            &format!("data.{key}"),
            format!("must be a string, got {}", kind(other)),
        )),
        None => Err(error(
            &format!("data.{key}"),
            format!("ConfigMap {name} has no `{key}` key"),
        )),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn values_raw_or_in_a_config_map() {
        assert_eq!(
            parse_values(r#"{"global": {"hub": "h", "tag": 1.28}}"#),
            Ok(json!({"global": {"hub": "h", "tag": 1.28}}))
        );
        let config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio-sidecar-injector}\ndata:\n  values: '{\"revision\": \"\"}'\n  config: 'policy: enabled'\n";
        assert_eq!(parse_values(config_map), Ok(json!({"revision": ""})));
        assert_eq!(parse_values(""), Ok(json!({})));
    }

    #[test]
    fn mesh_raw_or_in_a_config_map() {
        let mesh = parse_mesh("trustDomain: example.org\n").expect("valid");
        assert_eq!(mesh["trustDomain"], "example.org");
        assert_eq!(mesh["defaultConfig"]["statusPort"], 15020);
        let config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio}\ndata:\n  mesh: |-\n    defaultConfig:\n      interceptionMode: TPROXY\n";
        assert_eq!(
            parse_mesh(config_map).expect("valid")["defaultConfig"]["interceptionMode"],
            "TPROXY"
        );
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(parse_values("[1, 2]").expect_err("list").location, "values");
        let no_key = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio}\ndata: {meshNetworks: x}\n";
        assert_eq!(parse_mesh(no_key).expect_err("no mesh").location, "data.mesh");
        assert_eq!(
            parse_mesh("defaultConfig: {drainDuration: soon}")
                .expect_err("bad")
                .location,
            "mesh"
        );
        assert_eq!(parse_values("a: [").expect_err("yaml").location, "document 1");
    }

    #[test]
    fn an_istio_operator_gives_values_and_mesh_config() {
        let operator = parse_istio_operator(
            "apiVersion: install.istio.io/v1alpha1\nkind: IstioOperator\nspec:\n  tag: 1.2\n  hub: example.com/istio\n  meshConfig:\n    enableTracing: true\n    defaultConfig:\n      serviceCluster: istio-proxy\n  values:\n    global:\n      tag: testiop\n",
        )
        .expect("parses");
        assert_eq!(
            operator.values,
            serde_json::json!({"global": {"hub": "example.com/istio", "tag": "testiop"}})
        );
        let mut values = serde_json::json!({"global": {"suffix": "test", "tag": "old"}, "other": 1});
        let mut mesh = crate::mesh::default_mesh_config();
        apply_istio_operator(&operator, &mut values, &mut mesh).expect("applies");
        assert_eq!(values["global"]["tag"], "testiop");
        assert_eq!(values["global"]["suffix"], "test");
        assert_eq!(values["other"], 1);
        assert_eq!(mesh["enableTracing"], true);
        assert_eq!(mesh["defaultConfig"]["serviceCluster"], "istio-proxy");
    }

    #[test]
    fn a_wrong_istio_operator_names_the_field() {
        let error = parse_istio_operator("kind: ConfigMap\n").expect_err("not an operator");
        assert_eq!(
            error.to_string(),
            "kind: expected IstioOperator, got \"ConfigMap\""
        );
        let error =
            parse_istio_operator("kind: IstioOperator\nspec:\n  values: [1]\n").expect_err("bad values");
        assert!(
            error.to_string().starts_with("spec.values: must be a mapping"),
            "{error}"
        );
        let error = parse_istio_operator("kind: IstioOperator\nspec:\n  meshConfig:\n    defaultConfig: 3\n")
            .map(|operator| {
                apply_istio_operator(
                    &operator,
                    &mut serde_json::json!({}),
                    &mut crate::mesh::default_mesh_config(),
                )
            });
        assert!(matches!(error, Ok(Err(_))), "{error:?}");
    }
}
