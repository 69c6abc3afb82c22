//! The injection engine: turns a pod into the pod Istio's injector would produce.
//!
//! The pipeline mirrors Istio's, one module per stage, each a function over JSON values
//! (`serde_json::Value`), so that fields no typed library knows survive untouched. [`pipeline`]
//! runs them in one straight line:
//!
//! `decide → prepare → render → merge → post-process → patch`
//!
//! - `decide`: Istio's policy decision; annotation validation (`decide::validate`) and
//!   template selection (`decide::selection`);
//! - [`prepare`]: the pod decoded and checked, and the template data's inputs:
//!   [`prepare::strip`] (what the templates see of a re-injected pod), [`prepare::owner`] (the
//!   workload), [`prepare::images`], [`prepare::cluster`] (cluster and network env);
//! - [`render`]: Istio's template functions and `SidecarTemplateData` as host objects for the
//!   [`gotemplate`] engine, and the render stage itself ([`render::Render`]);
//! - `merge`: the strategic merge ([`strategic_merge`]) with the Go round trip
//!   ([`normalize`]), and the re-applied user overrides;
//! - [`post`]: [`post::prometheus`], [`post::probes`], [`post::status`], [`post::reorder`];
//! - [`patch`]: the answer, an RFC 6902 JSON Patch.
//!
//! The configuration the stages read is a [`CompiledConfig`], compiled once per configuration
//! and never changed. Beside the pipeline, not inside it: [`cache`] (the render cache, a
//! [`render::Render`] that reuses earlier renders). Around them: [`settings`] (values and mesh
//! from files or ConfigMaps), [`mesh`] (mesh config and per-pod ProxyConfig: defaults, merging,
//! validation, `protoToJSON`), [`kube_inject`]; and helpers: [`pod`] (JSON accessors),
//! `gojson` (JSON as Go writes it), `gotime` (Kubernetes times), `netip` (Go's IP prefix
//! parsing), [`quantity`] (Kubernetes quantities).

pub mod cache;
pub mod compatibility;
mod compiled;
mod deadline;
mod decide;
mod gojson;
mod gotime;
pub mod kube_inject;
mod merge;
pub mod mesh;
mod netip;
pub mod normalize;
pub mod owned_env;
pub mod patch;
pub mod pipeline;
pub mod pod;
pub mod post;
pub mod prepare;
pub mod quantity;
pub mod render;
pub mod settings;

pub use compiled::{CompiledConfig, Options, TemplateError};
pub use pipeline::{InjectError, Outcome, Request};
pub(crate) use strategic_merge::member;

/// The embedded default configuration: (injector config, values, mesh config) texts.
///
/// Written for this project (see `defaults/injector-config.yaml`): one `sidecar` template that adds
/// Istio's proxy, its init container and its volumes. Used when no configuration is given.
pub fn embedded_defaults() -> (&'static str, &'static str, &'static str) {
    (
        include_str!("../defaults/injector-config.yaml"),
        include_str!("../defaults/values.json"),
        include_str!("../defaults/mesh.yaml"),
    )
}

/// [`embedded_defaults`] parsed: (injector config, values, mesh config). The texts are compiled
/// in, so an error here is a build defect, reported rather than panicked on.
pub fn embedded_settings() -> Result<
    (
        injector_core::config::InjectorConfig,
        serde_json::Value,
        serde_json::Value,
    ),
    String,
> {
    let (config, values, mesh) = embedded_defaults();
    let config = injector_core::config::parse_injector_config(config)
        .map_err(|e| format!("the embedded configuration: {e}"))?;
    let values = settings::parse_values(values).map_err(|e| format!("the embedded values: {e}"))?;
    let mesh = settings::parse_mesh(mesh).map_err(|e| format!("the embedded mesh config: {e}"))?;
    Ok((config.config, values, mesh))
}
