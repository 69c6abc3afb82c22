//! Loading the injector's settings from the files the user names, or the embedded defaults.
//!
//! Shared by `inject` and `serve`: `--injector-config` (the ConfigMap or its raw `config`),
//! `--values` (raw JSON/YAML or the ConfigMap's `data.values`), `--mesh` (raw YAML or the `istio`
//! ConfigMap). Whatever is not given comes from the embedded default configuration.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
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

/// Reads the settings; every error names the file and field.
pub fn load(args: &SettingsArgs) -> Result<Loaded> {
    let (default_config, default_values, default_mesh) = embedded_defaults();
    let mut warnings = Vec::new();
    let (config, config_values) = match &args.injector_config {
        Some(path) => {
            let source = input::read_source(path)?;
            let loaded = parse_injector_config_or_template(&source.text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", source.name))?;
            warnings.extend(loaded.warnings.iter().map(|w| format!("{}: {w}", source.name)));
            (loaded.config, loaded.values.map(|v| (source.name.clone(), v)))
        }
        None => {
            let loaded =
                parse_injector_config(default_config).context("the embedded injector configuration")?;
            (loaded.config, None)
        }
    };
    let values = match (&args.values, config_values) {
        (Some(path), _) => read_with(path, parse_values)?,
        (None, Some((name, text))) => {
            parse_values(&text).map_err(|e| anyhow::anyhow!("{name}: data.values: {e}"))?
        }
        (None, None) => {
            if args.injector_config.is_some() {
                warnings.push("no --values given: using the embedded default values".to_owned());
            }
            parse_values(default_values).context("the embedded values")?
        }
    };
    let mesh = match &args.mesh {
        Some(path) => read_with(path, parse_mesh)?,
        None => parse_mesh(default_mesh).context("the embedded mesh config")?,
    };
    Ok(Loaded {
        config,
        values,
        mesh,
        warnings,
    })
}

fn read_with<T, E: std::fmt::Display>(path: &Path, parse: impl Fn(&str) -> Result<T, E>) -> Result<T> {
    let source = input::read_source(path)?;
    parse(&source.text).map_err(|e| anyhow::anyhow!("{}: {e}", source.name))
}
