//! Caches in front of the pipeline's render stage, kept apart from the pipeline itself: the
//! plain pipeline ([`crate::CompiledConfig::inject`]) runs without any of them.
//!
//! - [`RenderCache`]: renders reused by exactly what the templates read of the pod
//!   (`render.rs`), with one render shared by the pods that are their own owner (`own_name.rs`);
//! - [`RenderCounts`]: where injections got their renders, for metrics.
//!
//! The webhook server keeps a second cache of its own, of whole admission outcomes.

mod counts;
mod own_name;
mod render;
mod size;

pub use counts::{RenderCounts, RenderSource};
pub use render::{DEFAULT_BUDGET, MAX_SHARE, PER_FAMILY, RenderCache};

/// How ServiceAccount admission names the projected token volume it adds to every pod that
/// mounts a token: this prefix and five random characters, so every pod of a Deployment has a
/// volume (and volume mounts) of its own name.
pub const TOKEN_VOLUME_PREFIX: &str = "kube-api-access-";

#[cfg(test)]
mod tests;
