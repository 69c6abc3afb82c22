//! Stage 5, post-processing the merged pod, in Istio's `postProcessPod` order: Prometheus merge
//! and the secure-port annotation ([`prometheus`]), probe rewriting ([`probes`]), the injection
//! status annotation ([`status`]) and the container order ([`reorder`]); [`touched`] names where
//! they write, for the last round trip.

pub mod probes;
pub mod prometheus;
pub mod reorder;
pub mod status;
pub mod touched;
