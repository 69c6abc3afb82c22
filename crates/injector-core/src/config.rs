//! The injector configuration: the `config` key of the `istio-sidecar-injector` ConfigMap.
//!
//! It can be given as the whole ConfigMap (as `kubectl get cm -o yaml` prints it) or as the raw
//! `config` YAML. Istio reads it leniently with `sigs.k8s.io/yaml`: unknown keys are ignored and
//! field names match case-insensitively. We are stricter where leniency hides a mistake: an
//! unknown key (a typo such as `polcy:` or `defaultTemplate:`) is an error naming it and the key it
//! is closest to, as are wrong types and invalid selectors; odd spellings of known keys (`Policy:`)
//! are accepted with a warning. Reading is pure: the caller hands us text.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

mod shape;

use crate::{
    decision::{InjectionPolicy, Policy},
    selector::{LabelSelector, describe, kind_of},
    yaml,
};

/// The template used when `defaultTemplates` is empty.
pub const DEFAULT_TEMPLATE: &str = "sidecar";

/// Keys of the configuration, as Istio spells them.
const KNOWN_KEYS: [&str; 8] = [
    "policy",
    "alwaysInjectSelector",
    "neverInjectSelector",
    "injectedAnnotations",
    "template",
    "templates",
    "defaultTemplates",
    "aliases",
];

/// The injector configuration.
#[derive(Debug, Clone, Default)]
pub struct InjectorConfig {
    /// Policy and selectors: everything the injection decision reads.
    pub injection: InjectionPolicy,
    /// Annotations written on every injected pod (deprecated in Istio, still honoured).
    pub injected_annotations: BTreeMap<String, String>,
    /// The legacy single `template` (ignored by current Istio; the chart puts a canary there).
    pub legacy_template: Option<String>,
    /// Named Go templates.
    pub templates: BTreeMap<String, String>,
    /// Templates applied to pods without `inject.istio.io/templates`; empty means `[sidecar]`.
    pub default_templates: Vec<String>,
    /// One-level expansion of template names.
    pub aliases: BTreeMap<String, Vec<String>>,
}

/// Where a configuration came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    /// A ConfigMap's `data.config` (`namespace/name`).
    ConfigMap {
        /// `metadata.namespace/metadata.name`, or just the name.
        name: String,
    },
    /// The raw configuration YAML.
    Raw,
}

/// A configuration as read, with what the reader noticed.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    /// The configuration.
    pub config: InjectorConfig,
    /// Where it came from.
    pub source: ConfigSource,
    /// The ConfigMap's `data.values` text, when present (used by the injection engine).
    pub values: Option<String>,
    /// Things that are accepted but probably not what the user meant.
    pub warnings: Vec<String>,
}

/// A configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{location}: {message}")]
pub struct ConfigError {
    /// Where: a field path such as `config.neverInjectSelector[0].matchExpressions[1].operator`.
    pub location: String,
    /// What is wrong.
    pub message: String,
}

impl InjectorConfig {
    /// The templates used when a pod names none: `defaultTemplates`, or `[sidecar]`.
    pub fn effective_default_templates(&self) -> Vec<String> {
        if self.default_templates.is_empty() {
            vec![DEFAULT_TEMPLATE.to_owned()]
        } else {
            self.default_templates.clone()
        }
    }
}

/// Reads what `istioctl kube-inject --injectConfigFile` accepts: an injection configuration (a
/// ConfigMap, or the raw `config`), or the bare text of the `sidecar` template.
///
/// Unlike istioctl, which takes any file that is not a configuration with templates as a
/// template, a text is a template only when its top-level keys are those of a pod overlay
/// (`metadata:`, `spec:`); a text that names a configuration key is read strictly as a
/// configuration (so invalid YAML and wrong fields are errors), and anything else is refused,
/// naming its unknown keys.
pub fn parse_injector_config_or_template(text: &str) -> Result<LoadedConfig, ConfigError> {
    match shape::shape_of(text)? {
        shape::Shape::Config => parse_injector_config(text),
        shape::Shape::BareTemplate => {
            let mut config = InjectorConfig::default();
            config
                .templates
                .insert(DEFAULT_TEMPLATE.to_owned(), text.to_owned());
            Ok(LoadedConfig {
                config,
                source: ConfigSource::Raw,
                values: None,
                warnings: vec![
                    "not an injection configuration (no `templates:`): read as the bare `sidecar` template"
                        .to_owned(),
                ],
            })
        }
    }
}

/// Reads a configuration from YAML text: a ConfigMap (`kind: ConfigMap` with `data.config`) or
/// the raw `config` document.
pub fn parse_injector_config(text: &str) -> Result<LoadedConfig, ConfigError> {
    let documents = yaml::parse_documents(text).map_err(|error| ConfigError {
        location: format!("document {}", error.index),
        message: error.message,
    })?;
    let value = match documents.as_slice() {
        [] => {
            return Err(error(
                "(file)",
                "is empty; expected an injector ConfigMap or its `config` YAML",
            ));
        }
        [(_, value)] => value,
        [_, (index, _), ..] => {
            return Err(error(
                &format!("document {index}"),
                "more than one document; give the injector ConfigMap or its config alone",
            ));
        }
    };
    match value.get("kind") {
        Some(Value::String(kind)) if kind == "ConfigMap" => from_config_map(value),
        Some(Value::String(kind)) if value.get("apiVersion").is_some() => Err(error(
            "kind",
            &format!("expected a ConfigMap (istio-sidecar-injector) or its raw `config`, got kind {kind}"),
        )),
        _ => {
            let mut warnings = Vec::new();
            let config = config_from_value(value, "config", &mut warnings)?;
            Ok(LoadedConfig {
                config,
                source: ConfigSource::Raw,
                values: None,
                warnings,
            })
        }
    }
}

fn from_config_map(value: &Value) -> Result<LoadedConfig, ConfigError> {
    let metadata = value.get("metadata");
    let name = metadata
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("<unnamed>");
    let name = match metadata.and_then(|m| m.get("namespace")).and_then(Value::as_str) {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_owned(),
    };
    let data = match value.get("data") {
        Some(Value::Object(data)) => data,
        Some(other) => {
            return Err(error(
                "data",
                &format!("must be a map of strings, got {}", kind_of(other)),
            ));
        }
        None => {
            return Err(error(
                "data",
                &format!("ConfigMap {name} has no data; expected the key `config`"),
            ));
        }
    };
    let text = match data.get("config") {
        Some(Value::String(text)) => text,
        Some(other) => {
            return Err(error(
                "data.config",
                &format!("must be a string (the config YAML), got {}", kind_of(other)),
            ));
        }
        None => {
            let keys: Vec<&str> = data.keys().map(String::as_str).collect();
            return Err(error(
                "data.config",
                &format!(
                    "ConfigMap {name} has no `config` key (it has: {})",
                    list_or_none(&keys)
                ),
            ));
        }
    };
    let values = match data.get("values") {
        Some(Value::String(values)) => Some(values.clone()),
        Some(other) => {
            return Err(error(
                "data.values",
                &format!("must be a string (JSON), got {}", kind_of(other)),
            ));
        }
        None => None,
    };
    let inner = yaml::parse_documents(text)
        .map_err(|e| error("data.config", &format!("is not valid YAML: {}", e.message)))?;
    let config_value = match inner.as_slice() {
        [] => Value::Object(Map::new()),
        [(_, value)] => value.clone(),
        _ => return Err(error("data.config", "holds more than one YAML document")),
    };
    let mut warnings = Vec::new();
    let config = config_from_value(&config_value, "data.config", &mut warnings)?;
    Ok(LoadedConfig {
        config,
        source: ConfigSource::ConfigMap { name },
        values,
        warnings,
    })
}

/// Reads the configuration mapping. `at` prefixes field paths in errors and warnings.
fn config_from_value(
    value: &Value,
    at: &str,
    warnings: &mut Vec<String>,
) -> Result<InjectorConfig, ConfigError> {
    let object = match value {
        Value::Object(object) => object,
        Value::Null => return Ok(empty_config(at, warnings)),
        other => return Err(error(at, &format!("must be a mapping, got {}", kind_of(other)))),
    };
    let fields = canonical_fields(object, at, warnings)?;
    let mut config = InjectorConfig::default();
    let path = |key: &str| format!("{at}.{key}");

    config.injection.policy = match fields.get("policy").copied() {
        None | Some(Value::Null) => {
            warnings.push(format!(
                "{}: not set; Istio treats a missing policy as invalid and injects nothing (set `policy: enabled`)",
                path("policy")
            ));
            Policy::Invalid(String::new())
        }
        Some(Value::String(text)) => Policy::parse(text),
        Some(other) => {
            return Err(error(
                &path("policy"),
                &format!(
                    "must be the string \"enabled\" or \"disabled\", got {}",
                    describe(other)
                ),
            ));
        }
    };
    if let Policy::Invalid(text) = &config.injection.policy
        && fields.contains_key("policy")
    {
        warnings.push(format!(
            "{}: {text:?} is neither \"enabled\" nor \"disabled\"; no pod will be injected, not even with \
             sidecar.istio.io/inject: \"true\"",
            path("policy")
        ));
    }
    config.injection.never_inject_selector = selectors(
        fields.get("neverInjectSelector").copied(),
        &path("neverInjectSelector"),
    )?;
    config.injection.always_inject_selector = selectors(
        fields.get("alwaysInjectSelector").copied(),
        &path("alwaysInjectSelector"),
    )?;
    config.injected_annotations = string_map(
        fields.get("injectedAnnotations").copied(),
        &path("injectedAnnotations"),
    )?;
    config.legacy_template = match fields.get("template").copied() {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.clone()),
        Some(Value::Object(_)) => {
            return Err(error(
                &path("template"),
                "must be a string (Istio's legacy single template), got a mapping; did you mean \
                 `templates:` (a map from template name to template text)?",
            ));
        }
        Some(other) => {
            return Err(error(
                &path("template"),
                &format!("must be a string, got {}", kind_of(other)),
            ));
        }
    };
    config.templates = string_map(fields.get("templates").copied(), &path("templates"))?;
    config.default_templates =
        string_list(fields.get("defaultTemplates").copied(), &path("defaultTemplates"))?;
    config.aliases = aliases(fields.get("aliases").copied(), &path("aliases"))?;

    for (list, name) in [
        (&config.injection.never_inject_selector, "neverInjectSelector"),
        (&config.injection.always_inject_selector, "alwaysInjectSelector"),
    ] {
        for (index, selector) in list.iter().enumerate() {
            if selector.is_empty() {
                warnings.push(format!(
                    "{}[{index}]: an empty selector never matches (Istio skips it)",
                    path(name)
                ));
            }
        }
    }
    check_template_names(&config, at, warnings);
    Ok(config)
}

fn empty_config(at: &str, warnings: &mut Vec<String>) -> InjectorConfig {
    warnings.push(format!(
        "{at}: empty; the policy is unset, so Istio injects nothing"
    ));
    InjectorConfig {
        injection: InjectionPolicy {
            policy: Policy::Invalid(String::new()),
            ..InjectionPolicy::default()
        },
        ..InjectorConfig::default()
    }
}

/// Maps the object's keys to Istio's spelling. Go's JSON decoding matches field names
/// case-insensitively, so `Policy:` works in Istio; we accept it with a warning. Unknown keys,
/// which Istio ignores, are an error: they are typos of keys that then silently do not apply.
fn canonical_fields<'a>(
    object: &'a Map<String, Value>,
    at: &str,
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<&'static str, &'a Value>, ConfigError> {
    let mut fields = BTreeMap::new();
    for (key, value) in object {
        let Some(canonical) = shape::config_key(key) else {
            let hint = match shape::suggestion(key) {
                Some(close) if KNOWN_KEYS.contains(&close) => format!(" (did you mean `{close}`?)"),
                _ => String::new(),
            };
            return Err(error(
                &format!("{at}.{key}"),
                &format!("unknown field{hint}; known fields: {}", KNOWN_KEYS.join(", ")),
            ));
        };
        if canonical != key {
            warnings.push(format!(
                "{at}.{key}: read as `{canonical}` (Istio matches names case-insensitively)"
            ));
        }
        fields.insert(canonical, value);
    }
    Ok(fields)
}

fn selectors(value: Option<&Value>, at: &str) -> Result<Vec<LabelSelector>, ConfigError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                LabelSelector::from_value(item, &format!("{at}[{index}]")).map_err(|e| ConfigError {
                    location: e.path,
                    message: format!("invalid label selector: {}", e.message),
                })
            })
            .collect(),
        Some(other) => Err(error(
            at,
            &format!("must be a list of label selectors, got {}", kind_of(other)),
        )),
    }
}

fn string_map(value: Option<&Value>, at: &str) -> Result<BTreeMap<String, String>, ConfigError> {
    match value {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(object)) => object
            .iter()
            .map(|(key, value)| match value {
                Value::String(text) => Ok((key.clone(), text.clone())),
                other => Err(error(
                    &format!("{at}.{key}"),
                    &format!("must be a string, got {}", describe(other)),
                )),
            })
            .collect(),
        Some(other) => Err(error(
            at,
            &format!("must be a map of strings, got {}", kind_of(other)),
        )),
    }
}

fn string_list(value: Option<&Value>, at: &str) -> Result<Vec<String>, ConfigError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| match item {
                Value::String(text) => Ok(text.clone()),
                other => Err(error(
                    &format!("{at}[{index}]"),
                    &format!("must be a string, got {}", describe(other)),
                )),
            })
            .collect(),
        Some(other) => Err(error(
            at,
            &format!("must be a list of strings, got {}", kind_of(other)),
        )),
    }
}

fn aliases(value: Option<&Value>, at: &str) -> Result<BTreeMap<String, Vec<String>>, ConfigError> {
    match value {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(object)) => object
            .iter()
            .map(|(key, names)| Ok((key.clone(), string_list(Some(names), &format!("{at}.{key}"))?)))
            .collect(),
        Some(other) => Err(error(
            at,
            &format!(
                "must be a map from name to a list of template names, got {}",
                kind_of(other)
            ),
        )),
    }
}

/// Warns about template names that injection would fail on.
fn check_template_names(config: &InjectorConfig, at: &str, warnings: &mut Vec<String>) {
    if config.templates.is_empty() {
        warnings.push(format!(
            "{at}.templates: no templates; injection would add nothing"
        ));
        return;
    }
    let known = |name: &str| config.templates.contains_key(name);
    for (alias, names) in &config.aliases {
        for name in names.iter().filter(|n| !known(n)) {
            warnings.push(format!(
                "{at}.aliases.{alias}: names template {name:?}, which is not defined"
            ));
        }
    }
    for name in config.effective_default_templates() {
        let expanded = config
            .aliases
            .get(&name)
            .cloned()
            .unwrap_or_else(|| vec![name.clone()]);
        for missing in expanded.iter().filter(|n| !known(n)) {
            warnings.push(format!(
                "{at}.defaultTemplates: template {missing:?} is not defined; every injection would fail \
                 (have: {})",
                config.templates.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
}

fn list_or_none(items: &[&str]) -> String {
    if items.is_empty() {
        "nothing".to_owned()
    } else {
        items.join(", ")
    }
}

fn error(location: &str, message: &str) -> ConfigError {
    ConfigError {
        location: location.to_owned(),
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests;
