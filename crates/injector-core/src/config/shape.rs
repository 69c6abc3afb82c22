//! Telling an injector configuration from the bare text of a sidecar template.
//!
//! `--injector-config` takes either (as `istioctl kube-inject --injectConfigFile` does). istioctl
//! reads any file that does not unmarshal as a configuration with templates as a template, so a
//! configuration that is broken (invalid YAML, a typo'd key, truncated) silently becomes a
//! "template" that renders into garbage and fails every injection. Here a text is a bare template
//! only when it looks like one: its top-level keys are those of the pod overlay a template renders
//! (`metadata`, `spec`, …). A text that names a configuration key is a configuration, read strictly,
//! so its YAML errors and wrong fields are reported; anything else is refused with the keys it has.

use serde_json::Value;

use super::{ConfigError, KNOWN_KEYS, error};
use crate::yaml;

/// Top-level keys of a rendered sidecar template: a `Pod` overlay (Istio merges it into the pod).
pub(super) const TEMPLATE_KEYS: [&str; 5] = ["metadata", "spec", "apiVersion", "kind", "status"];

/// What an `--injector-config` text is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Shape {
    /// An injector configuration (raw or a ConfigMap): to be read strictly.
    Config,
    /// The bare text of the `sidecar` template.
    BareTemplate,
}

/// One top-level key and the line it is on (when known).
#[derive(Debug, Clone, PartialEq, Eq)]
struct TopKey {
    name: String,
    line: Option<usize>,
    /// The scalar after the colon, for `kind: ConfigMap` when the YAML did not parse.
    value: String,
}

/// Decides what `text` is, or why it is neither.
pub(super) fn shape_of(text: &str) -> Result<Shape, ConfigError> {
    let parsed = yaml::parse_documents(text);
    let keys = match &parsed {
        Ok(documents) => match documents.as_slice() {
            [] => return Ok(Shape::Config),
            [(_, Value::Object(map))] => map
                .iter()
                .map(|(name, value)| TopKey {
                    name: name.clone(),
                    line: None,
                    value: value.as_str().unwrap_or_default().to_owned(),
                })
                .collect(),
            _ => scan_top_level_keys(text),
        },
        Err(_) => scan_top_level_keys(text),
    };
    let is_config_map = keys.iter().any(|k| k.name == "kind" && k.value == "ConfigMap");
    let names_config_key = keys.iter().any(|k| config_key(&k.name).is_some());
    if is_config_map || names_config_key {
        return Ok(Shape::Config);
    }
    // Another kind of object (a Deployment given by mistake): the configuration reader says so.
    let other_kind = keys
        .iter()
        .any(|k| k.name == "kind" && !k.value.is_empty() && k.value != "Pod");
    if other_kind {
        return Ok(Shape::Config);
    }
    let has_actions = text.contains("{{");
    if parsed.is_err() && !has_actions {
        // Not YAML and not a template either: the configuration reader reports the YAML error.
        return Ok(Shape::Config);
    }
    let unknown: Vec<&TopKey> = keys
        .iter()
        .filter(|k| !TEMPLATE_KEYS.contains(&k.name.as_str()))
        .collect();
    let has_pod_part = keys.iter().any(|k| k.name == "metadata" || k.name == "spec");
    if unknown.is_empty() && has_pod_part {
        return Ok(Shape::BareTemplate);
    }
    if matches!(&parsed, Ok(documents) if !matches!(documents.as_slice(), [(_, Value::Object(_))]))
        && keys.is_empty()
        && !has_actions
    {
        // A scalar or a list: the configuration reader says it must be a mapping.
        return Ok(Shape::Config);
    }
    Err(neither(&unknown))
}

/// The error for a text that is neither a configuration nor a template.
fn neither(unknown: &[&TopKey]) -> ConfigError {
    const EXPECTED: &str = "expected an injector configuration (policy, templates, defaultTemplates, \
         aliases, neverInjectSelector, alwaysInjectSelector, injectedAnnotations), the \
         istio-sidecar-injector ConfigMap, or the bare text of a sidecar template (top-level \
         metadata: and spec:)";
    let Some(first) = unknown.first() else {
        return error(
            "(file)",
            &format!("has no top-level `metadata:` or `spec:`; {EXPECTED}"),
        );
    };
    let location = match first.line {
        Some(line) => format!("line {line}: {}", first.name),
        None => first.name.clone(),
    };
    let hint = match suggestion(&first.name) {
        Some(close) => format!("unknown top-level key (did you mean `{close}`?)"),
        None => "unknown top-level key".to_owned(),
    };
    let others = if unknown.len() > 1 {
        let names: Vec<&str> = unknown.iter().skip(1).map(|k| k.name.as_str()).collect();
        format!(" (also unknown: {})", names.join(", "))
    } else {
        String::new()
    };
    error(&location, &format!("{hint}{others}; {EXPECTED}"))
}

/// The configuration key `name` stands for (case-insensitively, as Istio reads field names).
pub(super) fn config_key(name: &str) -> Option<&'static str> {
    KNOWN_KEYS
        .iter()
        .find(|k| **k == name)
        .or_else(|| KNOWN_KEYS.iter().find(|k| k.eq_ignore_ascii_case(name)))
        .copied()
}

/// The configuration or template key closest to `name`, when it is close enough to be a typo
/// (Jaro-Winkler similarity, which favours a shared beginning: `policies` → `policy`).
pub(super) fn suggestion(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    KNOWN_KEYS
        .iter()
        .chain(TEMPLATE_KEYS.iter())
        .map(|key| (*key, strsim::jaro_winkler(&lower, &key.to_ascii_lowercase())))
        .filter(|(_, similarity)| *similarity >= 0.85)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(key, _)| key)
}

/// The keys at the start of lines that begin at column 0 (`name:`), for text that is not YAML
/// (a template whose actions break the YAML, or a broken configuration). Lines that begin with
/// a template action, a comment, a list item, a quote-less continuation or a separator are skipped.
fn scan_top_level_keys(text: &str) -> Vec<TopKey> {
    let mut keys = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let Some(first) = line.chars().next() else {
            continue;
        };
        if first.is_whitespace() || matches!(first, '#' | '-' | '{' | '[' | '}' | ']' | '.' | '|' | '>') {
            continue;
        }
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
            continue;
        }
        let name = name.trim().trim_matches(['"', '\'']);
        if name.is_empty() || name.contains(char::is_whitespace) {
            continue;
        }
        let value = rest
            .split('#')
            .next()
            .unwrap_or_default()
            .trim()
            .trim_matches(['"', '\'']);
        keys.push(TopKey {
            name: name.to_owned(),
            line: Some(index + 1),
            value: value.to_owned(),
        });
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_shaped_texts_are_templates() {
        for text in [
            "spec:\n  containers:\n  - name: istio-proxy\n",
            "metadata:\n  labels: {a: b}\nspec: {}\n",
            // Actions that break the YAML: the keys at column 0 still say what it is.
            "{{- $x := .Values }}\nmetadata:\n  annotations: {{ toJson .A }}\nspec:\n{{ if .B }}  hostNetwork: true{{ end }}\n",
            "spec:\n  containers:\n  - image: \"{{ .Values.global.hub }}/proxyv2\"\n",
        ] {
            assert_eq!(shape_of(text), Ok(Shape::BareTemplate), "{text}");
        }
    }

    #[test]
    fn texts_naming_a_config_key_are_configs() {
        for text in [
            "policy: enabled\ntemplates: {sidecar: x}\n",
            "policy: [enabled\n  templates: {\n",
            "template:\n  sidecar: |\n    spec: {}\n",
            "Templates:\n  sidecar: x\n",
            "apiVersion: v1\nkind: ConfigMap\ndata: {config: x}\n",
            "apiVersion: v1\nkind: ConfigMap\ndata: {config: 'x\n",
            "policy: enabled\ntemplates:\n  sidecar: |\n    spec: {{ .Values",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {}\n",
            "",
            "just words\n",
        ] {
            assert_eq!(shape_of(text), Ok(Shape::Config), "{text}");
        }
    }

    #[test]
    fn anything_else_is_refused_with_its_keys() {
        let e = shape_of("polcy: enabled\ntemplates_: {}\n").expect_err("neither");
        assert_eq!(e.location, "polcy");
        assert!(e.message.contains("did you mean `policy`?"), "{e}");
        assert!(e.message.contains("also unknown: templates_"), "{e}");
        let e = shape_of("{{ if .X }}\nspek:\n  containers: []\n{{ end }}\n").expect_err("neither");
        assert_eq!(e.location, "line 2: spek");
        assert!(e.message.contains("did you mean `spec`?"), "{e}");
        let e = shape_of("{{ toYaml .Values.sidecar }}\n").expect_err("neither");
        assert_eq!(e.location, "(file)");
        assert!(e.message.contains("no top-level `metadata:` or `spec:`"), "{e}");
    }

    #[test]
    fn suggestions_are_only_for_near_misses() {
        assert_eq!(suggestion("templtes"), Some("templates"));
        assert_eq!(suggestion("defaultTemplate"), Some("defaultTemplates"));
        assert_eq!(suggestion("neverInjectSelectors"), Some("neverInjectSelector"));
        assert_eq!(suggestion("metdata"), Some("metadata"));
        assert_eq!(suggestion("replicas"), None);
    }
}
