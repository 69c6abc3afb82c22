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

#[cfg(test)]
mod tests;
