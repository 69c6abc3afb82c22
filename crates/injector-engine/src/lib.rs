//! The injection engine: turns a pod into the pod Istio's injector would produce.
//!
//! The pipeline mirrors Istio's, one module per stage, each a pure function over JSON values
//! (`serde_json::Value`), so that fields no typed library knows survive untouched:
//!
//! `decision → annotation validation → template data → render → strategic merge →
//! re-apply user overrides → post-processing → JSON patch`.
//!
//! The stages, each a folder (or module) of its own, in the order [`pipeline`] runs them:
//!
//! - [`decide`]: annotation validation ([`decide::validate`]) and template selection
//!   ([`decide::selection`]);
//! - [`prepare`]: the template data's inputs: [`prepare::strip`] (what the templates see of a
//!   re-injected pod), [`prepare::owner`] (the workload), [`prepare::images`],
//!   [`prepare::cluster`] (cluster and network env);
//! - [`render`]: Istio's template functions and `SidecarTemplateData` as host objects for the
//!   [`gotemplate`] engine;
//! - merge: the strategic merge ([`strategic_merge`]) with the Go round trip ([`normalize`]), and
//!   the re-applied user overrides (in [`pipeline`]);
//! - [`post`]: [`post::prometheus`], [`post::probes`], [`post::status`], [`post::reorder`];
//! - the answer: [`patch`] (RFC 6902 JSON Patch).
//!
//! Around them: [`settings`] (values and mesh from files or ConfigMaps), [`mesh`] (mesh config
//! and per-pod ProxyConfig: defaults, merging, validation, `protoToJSON`), [`kube_inject`]; and
//! helpers: [`pod`] (JSON accessors), [`member`] (object lookups without hashing), [`gojson`]
//! (JSON as Go writes it), [`gotime`] (Kubernetes times), [`netip`] (Go's IP prefix parsing),
//! [`quantity`] (Kubernetes quantities).
//!
//! The stage modules are also re-exported at the crate root under their old names
//! (`injector_engine::status`, `injector_engine::cluster`, ...), which callers use.

pub mod decide;
pub mod gojson;
pub mod gotime;
pub mod kube_inject;
pub mod mesh;
pub mod netip;
pub mod normalize;
pub mod patch;
pub mod pipeline;
pub mod pod;
pub mod post;
pub mod prepare;
pub mod quantity;
pub mod render;
pub mod settings;

pub use decide::{selection, validate};
pub use post::{probes, prometheus, reorder, status};
pub use prepare::{cluster, images, owner, strip};
pub use strategic_merge::member;

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
