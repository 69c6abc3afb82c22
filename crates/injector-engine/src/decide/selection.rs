//! Which templates a pod gets (Istio's template selection in `RunTemplate`).
//!
//! The annotation `inject.istio.io/templates` (comma-separated names, trimmed) chooses them;
//! without it, the configuration's `defaultTemplates` (or `sidecar`) apply. Aliases expand one
//! level. Repeating a name re-applies that template. An unknown name is an error listing the known
//! ones.

use std::collections::BTreeMap;

/// The annotation choosing templates for one pod.
pub const TEMPLATES_ANNOTATION: &str = "inject.istio.io/templates";

/// A template name the configuration does not define.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("requested template {name:?} not found; have {}", .known.join(", "))]
pub struct UnknownTemplate {
    /// The requested name.
    pub name: String,
    /// The defined names, sorted.
    pub known: Vec<String>,
}

/// The template names to apply, in order.
pub fn select_templates<T>(
    annotation: Option<&str>,
    default_templates: &[String],
    aliases: &BTreeMap<String, Vec<String>>,
    templates: &BTreeMap<String, T>,
) -> Result<Vec<String>, UnknownTemplate> {
    let requested: Vec<String> = match annotation {
        Some(text) => text.split(',').map(|name| name.trim().to_owned()).collect(),
        None if default_templates.is_empty() => vec!["sidecar".to_owned()],
        None => default_templates.to_vec(),
    };
    let expanded: Vec<String> = requested
        .into_iter()
        .flat_map(|name| aliases.get(&name).cloned().unwrap_or_else(|| vec![name]))
        .collect();
    if let Some(missing) = expanded.iter().find(|name| !templates.contains_key(*name)) {
        return Err(UnknownTemplate {
            name: missing.clone(),
            known: templates.keys().cloned().collect(),
        });
    }
    Ok(expanded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn templates() -> BTreeMap<String, ()> {
        ["sidecar", "init", "gateway"]
            .into_iter()
            .map(|n| (n.to_owned(), ()))
            .collect()
    }

    #[test]
    fn defaults_and_annotation() {
        let aliases = BTreeMap::from([("both".to_owned(), vec!["sidecar".to_owned(), "init".to_owned()])]);
        assert_eq!(
            select_templates(None, &[], &aliases, &templates()),
            Ok(vec!["sidecar".to_owned()])
        );
        assert_eq!(
            select_templates(None, &["both".to_owned()], &aliases, &templates()),
            Ok(vec!["sidecar".into(), "init".into()])
        );
        assert_eq!(
            select_templates(Some(" gateway , both"), &[], &aliases, &templates()),
            Ok(vec!["gateway".into(), "sidecar".into(), "init".into()])
        );
        assert_eq!(
            select_templates(Some("sidecar,sidecar"), &[], &aliases, &templates()),
            Ok(vec!["sidecar".into(), "sidecar".into()])
        );
    }

    #[test]
    fn unknown_names_are_errors() {
        let error = select_templates(Some("nope"), &[], &BTreeMap::new(), &templates()).expect_err("unknown");
        assert_eq!(
            error.to_string(),
            r#"requested template "nope" not found; have gateway, init, sidecar"#
        );
        let error = select_templates(Some(""), &[], &BTreeMap::new(), &templates()).expect_err("empty name");
        assert_eq!(error.name, "");
    }
}
