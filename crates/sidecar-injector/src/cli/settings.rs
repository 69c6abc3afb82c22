//! Loading the injector's settings from the files the user names, or the embedded defaults.
//!
//! Shared by `inject` and `serve`: `--injector-config` (the ConfigMap, its raw `config`, or a
//! bare `sidecar` template), `--values` (raw JSON/YAML or the ConfigMap's `data.values`), `--mesh`
//! (raw YAML or the `istio` ConfigMap). Whatever is not given comes from the embedded defaults.
//! [`from_texts`] is the pure part, also used by `serve` on every reload.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use injector_core::config::{InjectorConfig, parse_injector_config, parse_injector_config_or_template};
use injector_engine::{
    embedded_defaults,
    settings::{parse_mesh, parse_values},
};
use serde_json::Value;

use super::input;

/// Flags naming the configuration files.
#[derive(Debug, Clone, Args)]
pub struct SettingsArgs {
    /// The injector ConfigMap (`istio-sidecar-injector`), its raw `config` YAML, or the bare text of a
    /// `sidecar` template. Default: the embedded configuration (a documented sidecar template for
    /// Istio's proxy).
    #[arg(long, value_name = "FILE")]
    pub injector_config: Option<PathBuf>,
    /// The values: raw JSON/YAML or the injector ConfigMap (its `data.values`). Default: the
    /// ConfigMap's values when --injector-config is one, else the embedded values.
    #[arg(long, value_name = "FILE")]
    pub values: Option<PathBuf>,
    /// The mesh config: raw YAML or the `istio` ConfigMap (its `data.mesh`). Default: Istio's
    /// defaults.
    #[arg(long, value_name = "FILE")]
    pub mesh: Option<PathBuf>,
}

/// The loaded settings, with notes on where each part came from.
pub struct Loaded {
    /// The injector configuration.
    pub config: InjectorConfig,
    /// The values.
    pub values: Value,
    /// The mesh config (defaults applied).
    pub mesh: Value,
    /// Warnings from reading the files.
    pub warnings: Vec<String>,
}

/// A configuration file's name (for messages) and text.
pub type Text<'a> = Option<(&'a str, &'a str)>;

/// Reads the settings named by the flags.
pub fn load(args: &SettingsArgs) -> Result<Loaded> {
    let read = |path: &Option<PathBuf>| path.as_deref().map(input::read_source).transpose();
    let (config, values, mesh) = (
        read(&args.injector_config)?,
        read(&args.values)?,
        read(&args.mesh)?,
    );
    from_texts(text_of(&config), text_of(&values), text_of(&mesh)).map_err(|e| anyhow::anyhow!(e))
}

fn text_of(source: &Option<input::Source>) -> Text<'_> {
    source.as_ref().map(|s| (s.name.as_str(), s.text.as_str()))
}

/// `inject` and `serve` render templates: a configuration without any (a file cut short before
/// `templates:`, or a configuration meant for `explain`) would fail every injection, so it is
/// refused here rather than accepted and then failing each pod.
fn require_templates(config: &InjectorConfig) -> Result<(), String> {
    if config.templates.is_empty() {
        return Err(
            "config.templates: no templates; every injection would fail (give the `templates:` map, e.g. \
             `templates: {sidecar: ...}`, or the bare text of a sidecar template)"
                .to_owned(),
        );
    }
    Ok(())
}

/// Builds the settings from file texts (`(name, text)`); errors name the file and the field.
pub fn from_texts(config: Text<'_>, values: Text<'_>, mesh: Text<'_>) -> Result<Loaded, String> {
    let (default_config, default_values, default_mesh) = embedded_defaults();
    let mut warnings = Vec::new();
    let (config_loaded, config_values) = match config {
        Some((name, text)) => {
            let loaded = parse_injector_config_or_template(text).map_err(|e| format!("{name}: {e}"))?;
            require_templates(&loaded.config).map_err(|e| format!("{name}: {e}"))?;
            warnings.extend(loaded.warnings.iter().map(|w| format!("{name}: {w}")));
            (loaded.config, loaded.values.map(|v| (name.to_owned(), v)))
        }
        None => {
            let loaded = parse_injector_config(default_config)
                .map_err(|e| format!("the embedded configuration: {e}"))?;
            (loaded.config, None)
        }
    };
    let values = match (values, config_values) {
        (Some((name, text)), _) => parse_values(text).map_err(|e| format!("{name}: {e}"))?,
        (None, Some((name, text))) => parse_values(&text).map_err(|e| format!("{name}: data.values: {e}"))?,
        (None, None) => {
            if config.is_some() {
                warnings.push("no values given: using the embedded default values".to_owned());
            }
            parse_values(default_values).map_err(|e| format!("the embedded values: {e}"))?
        }
    };
    warnings.extend(injector_engine::compatibility::release_warning(&values));
    let mesh = match mesh {
        Some((name, text)) => parse_mesh(text).map_err(|e| format!("{name}: {e}"))?,
        None => parse_mesh(default_mesh).map_err(|e| format!("the embedded mesh config: {e}"))?,
    };
    Ok(Loaded {
        config: config_loaded,
        values,
        mesh,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_of_a_release_outside_the_tested_range_are_named_in_a_warning() {
        let old = from_texts(
            None,
            Some(("--values old.json", r#"{"global": {"tag": "1.22.1"}}"#)),
            None,
        )
        .expect("loads");
        assert!(
            old.warnings
                .iter()
                .any(|w| w.contains("\"1.22.1\" is of Istio 1.22, outside the releases")),
            "{:?}",
            old.warnings
        );
        let tested = from_texts(
            None,
            Some(("--values v.json", r#"{"global": {"tag": "1.28.10"}}"#)),
            None,
        )
        .expect("loads");
        assert!(
            tested
                .warnings
                .iter()
                .all(|w| !w.contains("outside the releases")),
            "{:?}",
            tested.warnings
        );
    }
}
