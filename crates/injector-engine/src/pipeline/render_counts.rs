//! Counts of where injections got their template renders, for metrics.
//!
//! A configuration reload builds a new [`super::Injector`], and with it a new render cache; the
//! counts are cumulative over the process, so one [`RenderCounts`] is handed to every injector
//! (see [`super::Injector::counting_renders_in`]).

use std::sync::atomic::{AtomicU64, Ordering};

/// Where an injection's template renders came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenderSource {
    /// The templates were rendered for this pod.
    Rendered,
    /// A kept render of an earlier pod that showed the templates exactly what this one does.
    /// An answer made from the skeleton of the pod's shape ([`super::skeleton`]) counts its
    /// render's source, this or [`Self::Shared`].
    Kept,
    /// A render shared by pods that are their own owner, with this pod's name put in
    /// ([`super::own_name`]).
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
}

/// Cumulative counts of injections by [`RenderSource`], and of render cache flushes.
#[derive(Debug, Default)]
pub struct RenderCounts {
    rendered: AtomicU64,
    kept: AtomicU64,
    shared: AtomicU64,
    flushes: AtomicU64,
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

    /// Counts one flush: the render cache was full and was emptied.
    pub fn note_flush(&self) {
        self.flushes.fetch_add(1, Ordering::Relaxed);
    }

    /// How many times a render cache was full and was emptied.
    pub fn flushes(&self) -> u64 {
        self.flushes.load(Ordering::Relaxed)
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
        counts.note_flush();
        let seen: Vec<(&str, u64)> = RenderSource::ALL
            .iter()
            .map(|source| (source.as_str(), counts.injections(*source)))
            .collect();
        assert_eq!(seen, [("rendered", 0), ("kept", 2), ("shared", 1)]);
        assert_eq!(counts.flushes(), 1);
    }
}
