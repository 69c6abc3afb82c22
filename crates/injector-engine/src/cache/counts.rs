//! Counts of where injections got their template renders, for metrics.
//!
//! A configuration reload starts the render cache afresh; the counts are cumulative over the
//! process, so one [`RenderCounts`] serves every configuration.

use std::sync::atomic::{AtomicU64, Ordering};

/// Where an injection's template renders came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenderSource {
    /// The templates were rendered for this pod.
    Rendered,
    /// A kept render of an earlier pod that showed the templates exactly what this one does.
    Kept,
    /// A render shared by pods that are their own owner, with this pod's name put in
    /// (see the render cache's stand-in for a pod's name).
    Shared,
}

impl RenderSource {
    /// Every source, in the order metrics list them.
    pub const ALL: [RenderSource; 3] = [RenderSource::Rendered, RenderSource::Kept, RenderSource::Shared];

    /// Its name as a metric label value.
    pub fn as_str(self) -> &'static str {
        match self {
            RenderSource::Rendered => "rendered",
            RenderSource::Kept => "kept",
            RenderSource::Shared => "shared",
        }
    }

    /// Whether the renders came from the cache.
    pub fn cached(self) -> bool {
        self != RenderSource::Rendered
    }
}

/// Cumulative counts of injections by [`RenderSource`], and of renders the cache let go.
#[derive(Debug, Default)]
pub struct RenderCounts {
    rendered: AtomicU64,
    kept: AtomicU64,
    shared: AtomicU64,
    evictions: AtomicU64,
}

impl RenderCounts {
    fn counter(&self, source: RenderSource) -> &AtomicU64 {
        match source {
            RenderSource::Rendered => &self.rendered,
            RenderSource::Kept => &self.kept,
            RenderSource::Shared => &self.shared,
        }
    }

    /// Counts one injection whose renders came from `source`.
    pub fn note(&self, source: RenderSource) {
        self.counter(source).fetch_add(1, Ordering::Relaxed);
    }

    /// The injections whose renders came from `source`.
    pub fn injections(&self, source: RenderSource) -> u64 {
        self.counter(source).load(Ordering::Relaxed)
    }

    /// Counts one render evicted to keep the cache within its budget.
    pub fn note_eviction(&self) {
        self.evictions.fetch_add(1, Ordering::Relaxed);
    }

    /// How many renders were evicted to keep the cache within its budget.
    pub fn evictions(&self) -> u64 {
        self.evictions.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_source_counts_apart() {
        let counts = RenderCounts::default();
        counts.note(RenderSource::Kept);
        counts.note(RenderSource::Kept);
        counts.note(RenderSource::Shared);
        counts.note_eviction();
        let seen: Vec<(&str, u64)> = RenderSource::ALL
            .iter()
            .map(|source| (source.as_str(), counts.injections(*source)))
            .collect();
        assert_eq!(seen, [("rendered", 0), ("kept", 2), ("shared", 1)]);
        assert_eq!(counts.evictions(), 1);
    }
}
