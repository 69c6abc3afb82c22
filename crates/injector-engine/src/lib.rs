//! The injection engine: turns a pod into the pod Istio's injector would produce.
//!
//! The pipeline mirrors Istio's, one module per stage, each a pure function over JSON values
//! (`serde_json::Value`), so that fields no typed library knows survive untouched:
//!
//! `decision → annotation validation → template data → render → strategic merge →
//! re-apply user overrides → post-processing → JSON patch`.
//!
//! The stages:
//!
//! - settings: [`settings`] (values and mesh from files or ConfigMaps), [`mesh`] (mesh config and
//!   per-pod ProxyConfig: defaults, merging, validation, `protoToJSON`);
//! - before rendering: [`validate`] (annotation validation), [`strip`] (what the templates see of a
//!   re-injected pod), [`selection`] (which templates), [`owner`] (the workload), [`images`],
//!   [`cluster`] (cluster and network env);
//! - after merging: [`prometheus`], [`probes`], [`status`], [`reorder`];
//! - rendering: [`render`] (Istio's template functions and `SidecarTemplateData` as host
//!   objects for the [`gotemplate`] engine);
//! - the answer: [`patch`] (RFC 6902 JSON Patch);
//! - helpers: [`pod`] (JSON accessors), [`gojson`] (JSON as Go writes it), [`gotime`]
//!   (Kubernetes times), [`netip`] (Go's IP prefix parsing), [`quantity`] (Kubernetes
//!   quantities).

pub mod cluster;
pub mod gojson;
pub mod gotime;
pub mod images;
pub mod kube_inject;
pub mod mesh;
pub mod netip;
pub mod normalize;
pub mod owner;
pub mod patch;
pub mod pipeline;
pub mod pod;
pub mod probes;
pub mod prometheus;
pub mod quantity;
pub mod render;
pub mod reorder;
pub mod selection;
pub mod settings;
pub mod status;
pub mod strip;
pub mod validate;

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
