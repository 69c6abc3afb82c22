//! The injection engine: turns a pod into the pod Istio's injector would produce.
//!
//! The pipeline mirrors Istio's, one module per stage, each a pure function over JSON values
//! (`serde_json::Value`), so that fields no typed library knows survive untouched:
//!
//! `decision → annotation validation → template data → render → strategic merge →
//! re-apply user overrides → post-processing → JSON patch`.
//!
//! This crate holds the stages that do not depend on template rendering yet: the owner heuristic
//! that names the workload ([`owner`]), the status annotation ([`status`]), container ordering
//! ([`reorder`]), and Go-compatible JSON for the values Istio embeds in annotations ([`gojson`]).

pub mod cluster;
pub mod gojson;
pub mod images;
pub mod mesh;
pub mod owner;
pub mod patch;
pub mod pod;
pub mod probes;
pub mod prometheus;
pub mod quantity;
pub mod reorder;
pub mod status;
pub mod validate;
